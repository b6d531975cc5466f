//! The observation stream: each thing that happens in a run, as one typed
//! value.
//!
//! Hosts and the engine *emit* observations; the tracer (text and hash), the
//! [`Checker`](crate::Checker) and the timeline recorder *consume* the same
//! stream and nothing else (`Observers`, in `observers.rs`, hands each
//! observation to them in that order). Identities keep their types ([`OwnerId`],
//! [`NodeId`], [`FencingToken`]); observations borrow them, so emitting one
//! allocates nothing.
//!
//! Some observations are *trace-silent*: they carry what an observer needs
//! (a request's local send time for the `local-deadline` invariant, a node
//! joining the live set) without being a line of the trace, so that the trace
//! and its hash stay what they were before the stream existed.

mod abstract_states;
mod observers;
mod session;

pub use crate::time::SimTime;
pub use abstract_states::{describe as describe_abstract_state, AbstractStates, EXACT_NODES};
use fenced::{
    FencingToken, Instant, LeaseResult, NodeId, OwnerId, ResponseDisposition, StepDownReason,
    WriteOutcome,
};
pub(crate) use observers::Observers;
pub use session::{CallFailure, FailedCall, SessionEnd, SessionKind};

/// A process slot of the engine: one node's lives reuse the node's slots.
/// With its incarnation it names one life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcessId(pub u32);

/// A node: its index in the scenario and its id.
#[derive(Clone, Copy, Debug)]
pub struct NodeRef<'a> {
    /// Its position among the scenario's nodes.
    pub index: u32,
    /// Its id.
    pub id: &'a NodeId,
}

/// One life of a node.
#[derive(Clone, Copy, Debug)]
pub struct ProcessRef<'a> {
    /// The engine slot it runs in.
    pub id: ProcessId,
    /// Its node.
    pub node: NodeRef<'a>,
    /// Its incarnation (1 for the node's first process).
    pub incarnation: u32,
    /// Its owner identity (`node#incarnation`), what the store and the
    /// downstream tell holders apart by.
    pub owner: &'a OwnerId,
}

/// The name of the lease-store host in scenarios and traces.
pub const LEASE_STORE: &str = "lease-store";
/// The name of the downstream host in scenarios and traces.
pub const DOWNSTREAM: &str = "downstream";

/// A server a fault can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerId {
    /// The protocol's lock server number `index`: `0` is the fenced
    /// protocol's lease store, or another design's first server (which
    /// `lease-store` also names); `1..` are a multi-server design's others
    /// (`redis-2`, ...).
    Lock(u16),
    /// The downstream the work writes to.
    Downstream,
}

/// A host a fault acts on, resolved from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostId {
    /// A server.
    Server(ServerId),
    /// The node at this index of `Scenario::nodes` (every process it runs).
    Node(u32),
}

/// A host, as observations name them.
#[derive(Clone, Copy, Debug)]
pub enum HostRef<'a> {
    /// The lease store (with the node registry).
    LeaseStore,
    /// The fenced downstream.
    Downstream,
    /// A node as a network endpoint (its links, not one of its lives).
    Node(NodeRef<'a>),
    /// One life of a node.
    Process(ProcessRef<'a>),
    /// A server of another lock protocol (an etcd cluster, the Kubernetes
    /// API server, one Redis instance): its network endpoint and its name.
    /// Endpoint 0 is the protocol's first server, the one a scenario's
    /// `lease-store` names.
    Server {
        /// Its network endpoint.
        endpoint: u16,
        /// Its name in scenarios and traces (`etcd`, `redis-3`, ...).
        name: &'a str,
    },
}

/// The kind of a message, for drop observations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// A node asks for (or renews) the lease.
    LeaseRequest = 0,
    /// The store answers.
    LeaseResponse = 1,
    /// The store could not answer (bad input).
    LeaseFailed = 2,
    /// A node releases its term.
    Release = 3,
    /// A node heartbeats.
    Heartbeat = 4,
    /// A unit of work's write.
    Write = 5,
    /// Another protocol's client asks one of its servers.
    ProtocolRequest = 6,
    /// Another protocol's server answers (or pushes to) a client.
    ProtocolResponse = 7,
    /// A step of opening a session (`[client] transport = "sessions"`).
    SessionOpen = 8,
    /// A server's answer to a step of opening a session.
    SessionOpened = 9,
    /// A server's answer to a release, a heartbeat or a write on a session.
    CallAnswer = 10,
}

/// What the observation of a message that never arrived says of the message
/// itself, as the hosts that sent it describe it: its kind and whether it
/// answered a renewal. The engine passes it on unread.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MessageFacts {
    /// What it was.
    pub(crate) kind: MessageKind,
    /// Whether it was the store's answer renewing a lease.
    pub(crate) renewal_answer: bool,
}

impl MessageFacts {
    /// The observation of this message, sent by `from` (by process `sender`,
    /// if a process sent it) to `to`, dropped for `reason`.
    #[inline]
    pub(crate) fn dropped<'a>(
        self,
        from: HostRef<'a>,
        to: HostRef<'a>,
        reason: DropReason,
        sender: Option<ProcessRef<'a>>,
    ) -> Observation<'a> {
        Observation::Dropped {
            from,
            to,
            kind: self.kind,
            reason,
            sender,
            renewal_answer: self.renewal_answer,
        }
    }
}

/// Why a message never arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Random loss.
    Lost = 0,
    /// A cut, an isolation or a partition (at send or delivery time).
    LinkDown = 1,
    /// The receiving process had died.
    ProcessGone = 2,
    /// The receiver was paused and its queue of pending messages was full.
    QueueFull = 3,
    /// Sent on a session the server's restart reset: the server never
    /// reads it (the connection is gone).
    ConnectionReset = 4,
    /// A connection's first segment reached a server that is down: its
    /// machine's kernel refused it, and the sender was told.
    ConnectionRefused = 5,
}

/// A node fault that found nothing to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// A crash of a node with no live process (down, or not started yet).
    CrashOfDownNode = 0,
    /// A restart (or the first start) of a node that already runs a process.
    StartOfRunningNode = 1,
    /// A graceful stop of a node with no live process.
    StopOfDownNode = 2,
}

/// The node registry's answer to its host's questions (see
/// [`Observation::RegistryAnswered`]).
#[derive(Clone, Copy, Debug)]
pub enum RegistryAnswer<'a> {
    /// After a heartbeat of `node`: whether the registry said it joined with
    /// it, and whether it now calls the node live.
    Heartbeat {
        /// The node.
        node: NodeRef<'a>,
        /// `Heartbeat::Joined`.
        joined: bool,
        /// `is_live(node, local)`, asked when the node joined (`true`
        /// unasked after a refresh).
        live: bool,
    },
    /// After `node` left: whether the registry still calls it live.
    Left {
        /// The node.
        node: NodeRef<'a>,
        /// `is_live(node, local)` — `false` when the node rejoined in the
        /// same call (a heartbeat that found it expired), whose own answer
        /// follows.
        live: bool,
    },
    /// After a change: its counts.
    Counts {
        /// `live_count(local)`.
        live: u64,
        /// `live_nodes(local).count()`, when counted: the host counts the
        /// O(nodes) listing after a change only once every `entries / 16`
        /// changes (after every change in a fleet of up to 16 nodes).
        listed: Option<u64>,
        /// `len()`: entries held (live, or expired and not yet pruned).
        entries: u64,
        /// `is_empty()`.
        empty: bool,
    },
}

/// One thing that happened, at a true time the observer is given alongside.
#[derive(Clone, Copy, Debug)]
pub enum Observation<'a> {
    /// A process started (as a follower).
    ProcessStarted(ProcessRef<'a>),
    /// A process died.
    ProcessCrashed(ProcessRef<'a>),
    /// A process exited after a graceful stop (its elector stopped and
    /// released first).
    ProcessStopped(ProcessRef<'a>),
    /// A process's work failed; if it `led`, its elector abdicated.
    WorkFailed {
        /// The process.
        process: ProcessRef<'a>,
        /// Whether it led (and so gave the role up).
        led: bool,
    },
    /// A crash or start of `node` found nothing to do.
    Skipped {
        /// The node.
        node: NodeRef<'a>,
        /// What was skipped.
        what: Skipped,
    },
    /// The liveness phase began: every fault ended.
    Healed,
    /// A pause of `host` began; `depth` pauses are now in effect on it.
    Paused {
        /// The lease store, the downstream, or a process.
        host: HostRef<'a>,
        /// Nested pauses in effect, this one included.
        depth: u32,
    },
    /// A pause of `host` ended; `depth` remain. At depth 0 the host handles
    /// the `deferred` events that queued.
    Resumed {
        /// The lease store, the downstream, or a process.
        host: HostRef<'a>,
        /// Pauses still in effect.
        depth: u32,
        /// Events that queued while it was paused (0 unless `depth` is 0).
        deferred: u64,
    },
    /// Every link of `host` went down (`start`) or came back.
    Isolated {
        /// The endpoint.
        host: HostRef<'a>,
        /// Began or ended.
        start: bool,
    },
    /// `from`'s messages stopped (`start`) or started again reaching `to`.
    Cut {
        /// The sender.
        from: HostRef<'a>,
        /// The receiver.
        to: HostRef<'a>,
        /// Began or ended.
        start: bool,
    },
    /// A partition began or ended.
    Partitioned {
        /// Began or ended.
        start: bool,
        /// The groups, as text (`[node-a] | [lease-store]`).
        groups: &'a str,
        /// The hosts named in a group (the bridges are not).
        members: &'a [HostRef<'a>],
        /// When it begins: each endpoint's group (`u16::MAX`: a bridge,
        /// which reaches every group); `None` when it ends.
        group_of: Option<&'a [u16]>,
    },
    /// A message was lost.
    Dropped {
        /// The sender.
        from: HostRef<'a>,
        /// The addressee.
        to: HostRef<'a>,
        /// What it was.
        kind: MessageKind,
        /// Why.
        reason: DropReason,
        /// The process that sent it, for messages from processes.
        sender: Option<ProcessRef<'a>>,
        /// Whether it was the store's answer renewing a lease.
        renewal_answer: bool,
    },
    /// Trace-silent: a process sent lease request `request` at `local` on
    /// its own clock.
    RequestSent {
        /// The sender.
        process: ProcessRef<'a>,
        /// The elector's request id.
        request: u64,
        /// The send time on the sender's clock.
        local: Instant,
    },
    /// The lease store answered `from`'s request.
    LeaseHandled {
        /// The requester.
        from: ProcessRef<'a>,
        /// Its request id.
        request: u64,
        /// The answer.
        result: &'a LeaseResult,
    },
    /// The lease store refused a request as bad input.
    LeaseRejected {
        /// The requester.
        from: ProcessRef<'a>,
        /// Its request id.
        request: u64,
        /// The store's error.
        error: &'a str,
    },
    /// The lease store handled a release.
    ReleaseHandled {
        /// The releaser.
        from: ProcessRef<'a>,
        /// The token released.
        token: FencingToken,
        /// Whether the lease was freed (the releaser held it live with it).
        released: bool,
    },
    /// The registry handled a heartbeat.
    HeartbeatHandled {
        /// The sender.
        from: ProcessRef<'a>,
        /// Whether its node joined the live set with it.
        joined: bool,
    },
    /// Trace-silent: `node` joined the live set.
    MemberJoined(NodeRef<'a>),
    /// `node` left the live set (its liveness TTL ran out).
    MemberLeft(NodeRef<'a>),
    /// Trace-silent: the registry's live count after a change.
    LiveMembers(u64),
    /// Trace-silent: what the node registry answered when its host asked,
    /// after each thing it did — for the `membership` invariant, which
    /// compares those answers with the checker's own model of heartbeats and
    /// the liveness TTL.
    RegistryAnswered {
        /// The registry's clock when asked.
        local: Instant,
        /// The question and its answer.
        answer: RegistryAnswer<'a>,
    },
    /// Trace-silent: a process's worker asked its elector for the token it
    /// may act with (`Elector::token_at`) at `local` on its clock, right
    /// before deciding whether to start a unit — before the elector has
    /// handled any timer due at that instant, as a real driver asks between
    /// inputs. For `local-deadline`: no token at or past the deadline.
    TokenAnswered {
        /// The process.
        process: ProcessRef<'a>,
        /// Its clock when it asked.
        local: Instant,
        /// The answer.
        token: Option<FencingToken>,
    },
    /// A process's elector handled an answer.
    ResponseHandled {
        /// The process.
        process: ProcessRef<'a>,
        /// The request answered.
        request: u64,
        /// What the elector made of it.
        disposition: ResponseDisposition,
        /// The token the answer granted or renewed, if any.
        acquired: Option<FencingToken>,
        /// Whether the answer was a renewal.
        renewal: bool,
    },
    /// A request failed without an answer.
    RequestFailed {
        /// The process.
        process: ProcessRef<'a>,
        /// The request.
        request: u64,
    },
    /// A process began to believe it leads.
    TermStarted {
        /// The process.
        process: ProcessRef<'a>,
        /// The term's token.
        token: FencingToken,
    },
    /// A process stopped believing it leads.
    TermEnded {
        /// The process.
        process: ProcessRef<'a>,
        /// The term's token.
        token: FencingToken,
        /// Why, as the fenced elector classifies it (another protocol maps
        /// its own reason: `stopped` to `Stopped`, anything else to
        /// `LocalDeadline`, its own words in `why`).
        reason: &'a StepDownReason,
        /// Another protocol's own words for why (`renew deadline passed`,
        /// `session expired`, ...); `None` for the fenced elector.
        why: Option<&'a str>,
        /// The process's clock when it stepped down: `local-deadline`
        /// judges the fenced elector's step-down time with it. `None` where
        /// the source cannot say it exactly (a real run's history: a real
        /// timer fires late by the scheduler's whim, so a real step-down's
        /// time is measured, not judged).
        local: Option<Instant>,
    },
    /// `host`'s wall clock stepped by `by_nanos` (a `clock-jump` fault):
    /// from now on it reads that much more (less, when negative).
    ClockJumped {
        /// The host whose clock moved (a server, or a node: all its lives).
        host: HostRef<'a>,
        /// The step, in nanoseconds.
        by_nanos: i64,
        /// Whether the host's timing moved with it: it times by its wall
        /// clock. `false` for a host that times by its monotonic clock,
        /// which no step moves.
        moved: bool,
    },
    /// Both of `host`'s clocks begin to slew by `by_nanos` over
    /// `over_nanos` of true time (a `clock-slew` fault: an NTP correction at
    /// a bounded rate), which moves the timing of every host on it.
    ClockSlewed {
        /// The host whose clocks slew (a server, or a node: all its lives).
        host: HostRef<'a>,
        /// The correction, in nanoseconds.
        by_nanos: i64,
        /// How long it takes, in nanoseconds of true time.
        over_nanos: u64,
    },
    /// A server came back from a `restart` fault, with its state (`durable`)
    /// or empty.
    Restarted {
        /// The server.
        host: HostRef<'a>,
        /// Whether its state survived.
        durable: bool,
    },
    /// Who holds the lock, as another protocol's server sees it (`server:
    /// Some`) or as the protocol's truth (`server: None`: the single server's
    /// view, or the client holding a majority of Redlock's instances).
    Holder {
        /// The server whose view changed, or `None` for the truth.
        server: Option<HostRef<'a>>,
        /// The holder, if any.
        holder: Option<ProcessRef<'a>>,
        /// The holder's token in the protocol, where it has one.
        token: Option<u64>,
    },
    /// A unit of work started at `local` on the worker's clock.
    WorkStarted {
        /// The worker.
        process: ProcessRef<'a>,
        /// The token it will write with.
        token: FencingToken,
        /// The unit's number.
        unit: u64,
        /// The worker's clock at the leadership check.
        local: Instant,
    },
    /// A unit finished and its write went out.
    WriteSent {
        /// The worker.
        process: ProcessRef<'a>,
        /// The token.
        token: FencingToken,
        /// The unit.
        unit: u64,
    },
    /// A unit was cancelled: its term ended before it wrote.
    WorkCancelled {
        /// The worker.
        process: ProcessRef<'a>,
        /// The token.
        token: FencingToken,
        /// The unit.
        unit: u64,
    },
    /// The downstream handled a write.
    WriteHandled {
        /// The writer.
        from: ProcessRef<'a>,
        /// The token.
        token: FencingToken,
        /// The unit.
        unit: u64,
        /// Accepted or rejected.
        outcome: &'a WriteOutcome,
    },
    /// A process's session to a server opened (`[client] transport =
    /// "sessions"`): its five round trips were answered.
    SessionOpened {
        /// The process.
        process: ProcessRef<'a>,
        /// Which session.
        session: SessionKind,
    },
    /// A process's session ended (or its open failed).
    SessionClosed {
        /// The process.
        process: ProcessRef<'a>,
        /// Which session.
        session: SessionKind,
        /// Why.
        why: SessionEnd,
    },
    /// A call of a process's session ended without an answer for its
    /// caller.
    CallFailed {
        /// The process.
        process: ProcessRef<'a>,
        /// The call.
        call: FailedCall,
        /// Why.
        why: CallFailure,
    },
    /// Trace-silent: fault `slot` began, touching `spans` (host, label) —
    /// for pictures.
    FaultBegan {
        /// The engine's slot for the fault (reused once it ends).
        slot: u32,
        /// Each affected host with a short label (`pause`, `cut to …`).
        spans: &'a [(HostRef<'a>, String)],
    },
    /// Trace-silent: fault `slot` ended.
    FaultEnded {
        /// The slot.
        slot: u32,
    },
}

impl<'a> HostRef<'a> {
    /// The host's name in traces: `lease-store`, `downstream`, a node id, or
    /// a process's owner id.
    pub fn name(&self) -> &'a str {
        match *self {
            HostRef::LeaseStore => LEASE_STORE,
            HostRef::Downstream => DOWNSTREAM,
            HostRef::Node(node) => node.id.as_str(),
            HostRef::Process(process) => process.owner.as_str(),
            HostRef::Server { name, .. } => name,
        }
    }
}

/// What consumes the stream.
pub trait Observer {
    /// `observation` happened at true time `at`.
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>);

    /// The next events include one for process slot `pid`: prefetch the
    /// rows of it that observing them will read. A hint for the cache:
    /// nothing by default, and never an outcome changed.
    #[inline(always)]
    fn prefetch(&self, pid: u32) {
        let _ = pid;
    }

    /// The next event is for process slot `pid`, whose rows
    /// [`prefetch`](Self::prefetch) was asked for an event or two ago:
    /// prefetch what those rows point to (reading them, now likely in the
    /// cache, for the address). Nothing by default, and never an outcome
    /// changed.
    #[inline(always)]
    fn prefetch_near(&self, pid: u32) {
        let _ = pid;
    }

    /// Whether this observer wants the observations that only pictures
    /// need and that cost something to make ([`Observation::LiveMembers`]
    /// counts the live set; [`Observation::FaultBegan`] allocates): emitters
    /// skip them when no observer does. Default: no.
    fn wants_pictures(&self) -> bool {
        false
    }

    /// Whether this observer needs the run's driver now, before the next
    /// event: an anchored fault's event happened. The engine asks after
    /// every event and hands control back when one does. Default: never.
    fn wants_attention(&self) -> bool {
        false
    }
}
