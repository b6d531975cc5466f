//! The lock zoo: faithful sans-IO models of the lock and leader-election
//! designs people actually run, so that the `fenced` simulator can run them as
//! hosts next to `fenced`'s own elector and show where each one breaks.
//!
//! Each model mirrors one upstream library, function by function; its module
//! docs cite the files it follows, give the library's own defaults (its
//! [`Protocol::Settings`] `Default`) and say what it leaves out.
//!
//! | module | mirrors | token |
//! |---|---|---|
//! | [`connection_lock`] | PostgreSQL `pg_try_advisory_lock`, held for a session's life | none |
//! | [`client_go`] | Kubernetes client-go `tools/leaderelection` on a `Lease` | `leaseTransitions` |
//! | [`etcd`] | etcd `client/v3/concurrency` `Session` + `Election` | leader key's create revision |
//! | [`redlock`] | Redlock as redlock-rb implements it, N Redis instances | none |
//! | [`dynamodb`] | awslabs amazon-dynamodb-lock-client on one lock item | none |
//! | [`zookeeper`] | Apache Curator `LeaderLatch` on a ZooKeeper session | leader node's `czxid` |
//!
//! # The drive loop
//!
//! Servers and clients are plain structs. Nothing reads a clock, a socket or
//! a thread; every `now` is the **calling host's local clock**, and instants of
//! two hosts are never compared by a model.
//!
//! 1. Call an input with the host's local `now`: [`LockClient::start`],
//!    [`LockClient::handle_response`], [`LockClient::handle_timeout`],
//!    [`LockClient::stop`], [`LockServer::handle_request`],
//!    [`LockServer::handle_timeout`], [`LockServer::restart`].
//! 2. Drain `poll_output` until `None`, delivering each
//!    [`ClientOutput::Send`] / [`ServerOutput::Reply`] to its peer (the
//!    network may delay, drop, duplicate or reorder them).
//! 3. Wake the host at `next_timeout()` (a late or spurious
//!    `handle_timeout` is harmless) or when a message arrives, and go to 1.
//!
//! ```
//! use fenced_zoo::{ClientId, ClientOutput, LockClient, LockServer, Protocol, ServerOutput};
//! use fenced_zoo::redlock::Redlock;
//! use fenced_zoo::Instant;
//!
//! let settings = <Redlock as Protocol>::Settings::default();
//! let mut servers: Vec<_> = (0..Redlock::servers(&settings))
//!     .map(|index| Redlock::new_server(&settings, index))
//!     .collect();
//! let mut client = Redlock::new_client(&settings, ClientId(1), "a", 7);
//! let now = Instant::from_secs(1);
//! client.start(now);
//! // A zero-latency network: deliver every message at once, in order.
//! let mut leader = false;
//! for _ in 0..100 {
//!     let Some(output) = client.poll_output() else { break };
//!     match output {
//!         ClientOutput::Send { to, request } => {
//!             let server = &mut servers[usize::from(to)];
//!             server.handle_request(ClientId(1), request, now);
//!             while let Some(out) = server.poll_output() {
//!                 if let ServerOutput::Reply { response, .. } = out {
//!                     client.handle_response(to, response, now);
//!                 }
//!             }
//!         }
//!         ClientOutput::BecameLeader { .. } => leader = true,
//!         ClientOutput::LostLeadership { .. } => leader = false,
//!     }
//! }
//! assert!(leader && client.leadership(now).is_some());
//! ```
#![warn(missing_docs)]

use std::fmt;
use std::time::Duration;

pub mod client_go;
pub mod connection_lock;
pub mod dynamodb;
pub mod etcd;
pub mod redlock;
pub mod zookeeper;

mod outbox;
mod util;

pub use fenced::Instant;

/// Which server of the protocol a message is for or from (Redlock: `0..N`;
/// the single-server protocols use `0`).
pub type ServerIndex = u16;

/// The simulator's process identity: unique per process life, so a restarted
/// client process is a new `ClientId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u32);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "c{}", self.0)
    }
}

/// Which of its host's two clocks a machine times its decisions by. A
/// driver (the simulator, a real runtime) passes that clock's reading as
/// every `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// Never stepped (`CLOCK_MONOTONIC`, Go's monotonic reading behind
    /// `time.Since`/`Until`, Java's `System.nanoTime`): an NTP step of the
    /// host changes nothing the machine decides.
    Monotonic,
    /// Stepped with the host (`CLOCK_REALTIME`, `gettimeofday`, Java's
    /// `System.currentTimeMillis`): a step moves every deadline on it.
    Wall,
}

/// A design's timing boundaries: the instants and lengths at which a fault
/// can change its outcome, for a bounded search (`fenced-sim verify` starts
/// faults there, and at 1 ns either side, besides its grid). Each design
/// derives them from its settings, the way its model times its decisions
/// (each implementation cites the model line it mirrors), so a search of a
/// design strikes at *its* expiries, not the fenced protocol's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Boundaries {
    /// How long after a request reaches a server something the request set
    /// or renewed lapses there unless renewed again (a key's TTL, a lease's,
    /// a session's), each as the server times it. Empty where no server
    /// expires anything (the client judges, and its timers are the
    /// boundaries).
    pub expiries: Vec<Duration>,
    /// The server rounds each expiry up to the next multiple of this
    /// (ZooKeeper's `ExpiryQueue.roundToNextInterval`), or `None`.
    pub expiry_tick: Option<Duration>,
    /// The fault lengths at which the outcome can change: the design's
    /// TTLs, timeouts and periods. A search adds 1 ns either side.
    pub lengths: Vec<Duration>,
}

impl Boundaries {
    /// The instant at which a request reaching a server at `input` (ns)
    /// lets something lapse after `expiry`, rounded up as the server rounds.
    pub fn expiry_at(&self, input_ns: u64, expiry: Duration) -> u64 {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let at = input_ns.saturating_add(ns(expiry));
        match self.expiry_tick {
            Some(tick) => util::round_to_next_interval(at, ns(tick)),
            None => at,
        }
    }
}

/// One lock or leader-election design: its settings, its messages, and how to
/// build its servers and clients.
pub trait Protocol {
    /// Short name: "connection-lock", "client-go", "etcd", "redlock".
    const NAME: &'static str;
    /// The settings; `Default` is the upstream library's defaults (each
    /// model's docs say where a default is the model's own choice, and why).
    type Settings: Clone + fmt::Debug + Default + PartialEq;
    /// A message from a client to a server.
    type Request: Clone + fmt::Debug;
    /// A message from a server to a client: answers and pushes (watch events,
    /// keepalive probes).
    type Response: Clone + fmt::Debug;
    /// The client machine.
    type Client: LockClient<Self>;
    /// The server machine.
    type Server: LockServer<Self>;
    /// Whether the protocol's leadership carries a token a downstream can
    /// fence with.
    const HAS_TOKEN: bool;
    /// The clock the client times its decisions by, as its upstream library
    /// reads it (each design's docs cite the upstream code).
    const CLIENT_CLOCK: ClockKind;
    /// The clock the servers time their decisions by (expiry of keys,
    /// leases, sessions), as the upstream server reads it.
    const SERVER_CLOCK: ClockKind;
    /// Checks settings the way the upstream library does (and rejects what
    /// would make the model meaningless, such as zero durations).
    fn validate(settings: &Self::Settings) -> Result<(), SettingsError>;
    /// How many servers the protocol runs.
    fn servers(settings: &Self::Settings) -> u16;
    /// The design's timing boundaries under `settings` (valid ones), for a
    /// bounded search: see [`Boundaries`].
    fn boundaries(settings: &Self::Settings) -> Boundaries;
    /// A fresh server with index `index` (below [`servers`](Protocol::servers)).
    fn new_server(settings: &Self::Settings, index: ServerIndex) -> Self::Server;
    /// A fresh, idle client. `name` is its identity (owner id, unique per
    /// process life); `seed` seeds its own ChaCha8 RNG for jitter and random
    /// values. Settings must have passed [`validate`](Protocol::validate).
    fn new_client(settings: &Self::Settings, id: ClientId, name: &str, seed: u64) -> Self::Client;
    /// Whether `response` is answered by the client machine's kernel, not its
    /// process (a TCP keepalive probe): a driver delivers it even while the
    /// client process is paused. Default: no.
    fn answered_by_kernel(response: &Self::Response) -> bool {
        let _ = response;
        false
    }
    /// The TCP connection `request` travels on, where the model numbers its
    /// client's sockets (ZooKeeper's): a driver that models TCP keeps one
    /// connection's packets in order, holds them while their link is down
    /// instead of losing them, and lets a new connection's first packet
    /// (see [`opens_connection`](Protocol::opens_connection)) go only after
    /// a handshake round trip. `None` (the default): the model's messages
    /// stand alone, and its client copes with their loss and reordering.
    fn request_connection(request: &Self::Request) -> Option<u64> {
        let _ = request;
        None
    }
    /// Whether `request` is the first packet of a new connection (it
    /// follows the TCP handshake). Default: no.
    fn opens_connection(request: &Self::Request) -> bool {
        let _ = request;
        false
    }
    /// The TCP connection `response` travels on (see
    /// [`request_connection`](Protocol::request_connection)). Default: none.
    fn response_connection(response: &Self::Response) -> Option<u64> {
        let _ = response;
        None
    }
    /// What the client hears when the first packet of its connection
    /// `connection` (see [`opens_connection`](Protocol::opens_connection))
    /// is refused: its server's process is down, and the machine's kernel
    /// answers the SYN with a reset. Default: nothing (the model numbers
    /// no connections, and its messages stand alone).
    fn refused(connection: u64) -> Option<Self::Response> {
        let _ = connection;
        None
    }
}

/// The server side of a protocol: one database, API server, etcd cluster or
/// Redis instance.
pub trait LockServer<P: Protocol + ?Sized> {
    /// A request from `from` arrives at `now` (server's clock).
    fn handle_request(&mut self, from: ClientId, request: P::Request, now: Instant);
    /// A timer may be due at `now`; spurious calls are no-ops.
    fn handle_timeout(&mut self, now: Instant);
    /// When the server next needs [`handle_timeout`](LockServer::handle_timeout).
    fn next_timeout(&self) -> Option<Instant>;
    /// The next output, or `None` when drained.
    fn poll_output(&mut self) -> Option<ServerOutput<P>>;
    /// The server process restarts at `now`: `durable` = its state survives
    /// (etcd/k8s are durable; Redis without persistence is not; a PostgreSQL
    /// restart kills all sessions and advisory locks either way).
    fn restart(&mut self, now: Instant, durable: bool);
    /// The server process dies — a crash, or the start of a restart — and
    /// its machine's kernel closes every connection the process had open.
    /// A model whose clients hold connections
    /// ([`Protocol::request_connection`]) replies to each, now, with what
    /// its client hears of that (ZooKeeper: `Closed`); a driver delivers
    /// those replies at once, as the kernel's reset, not as the dead
    /// process's messages. Its [`restart`](LockServer::restart) then finds
    /// none open. Nothing timed is decided, so there is no `now`. Default:
    /// nothing (a model whose messages stand alone).
    fn went_down(&mut self) {}
    /// How many transactions the server has numbered so far, in the units
    /// of its tokens, where every write of every client takes the next
    /// number (ZooKeeper's zxid, etcd's revision): a token taken from such
    /// a count depends on the order in which the server took concurrent
    /// clients' writes, which a simulation draws and a real server's
    /// scheduler decides. A driver compares it before and after each input
    /// to see the writes that input made. Default `None`: the protocol's
    /// token counts only the lock's own changes (or it has none).
    fn transactions(&self) -> Option<u64> {
        None
    }
}

/// What a server asks its driver to do.
#[derive(Clone, Debug)]
pub enum ServerOutput<P: Protocol + ?Sized> {
    /// Send `response` to client `to`.
    Reply {
        /// The addressee.
        to: ClientId,
        /// The message.
        response: P::Response,
    },
    /// Ground truth for the checker and the timeline's truth lane: this
    /// server now considers `holder` the owner (with the protocol's token if
    /// any), or no one. Emitted on every change.
    Holder {
        /// The owner, as this server sees it.
        holder: Option<ClientId>,
        /// The owner's token, if the protocol has one.
        token: Option<u64>,
    },
}

/// The client side of a protocol: the library plus the small application loop
/// that uses it for leader election (documented per model).
pub trait LockClient<P: Protocol + ?Sized> {
    /// Begins contending at `now` (client's clock). No-op unless idle.
    fn start(&mut self, now: Instant);
    /// A response (or push) from server `from` arrives.
    fn handle_response(&mut self, from: ServerIndex, response: P::Response, now: Instant);
    /// A timer may be due at `now`; spurious or late calls are harmless.
    fn handle_timeout(&mut self, now: Instant);
    /// When the client next needs [`handle_timeout`](LockClient::handle_timeout).
    fn next_timeout(&self) -> Option<Instant>;
    /// The next output, or `None` when drained.
    fn poll_output(&mut self) -> Option<ClientOutput<P>>;
    /// Graceful stop (context cancelled): release if the library does
    /// (ReleaseOnCancel, unlock, session close). Leadership ends at once
    /// unless the model says otherwise.
    fn stop(&mut self, now: Instant);
    /// What the client believes at `now`: `Some` while it would let its
    /// application act as leader.
    fn leadership(&self, now: Instant) -> Option<Leadership>;
    /// The machine's wall clock stepped by `by_nanos` (an NTP step) while
    /// the client times by its monotonic clock ([`Protocol::CLIENT_CLOCK`]),
    /// which `now` reads and which did not move: a client that still reads
    /// the wall clock for some decision keeps `wall = monotonic + steps`
    /// (Curator's simulated session expiry). Slews and drift move both
    /// clocks alike, so steps are the whole difference. Nothing by default.
    fn wall_clock_stepped(&mut self, by_nanos: i64, now: Instant) {
        let _ = (by_nanos, now);
    }
    /// The client's process was killed while its machine lives on (`kill
    /// -9`, an OOM kill, a crash of the process): the kernel closes the
    /// process's sockets, and whatever that tells a server is polled as
    /// [`ClientOutput::Send`]s; the client is never used again. Nothing by
    /// default: an etcd lease, a ZooKeeper session, a Redis key, a
    /// Kubernetes `Lease` and a DynamoDB item all outlive their client's
    /// connection. (A machine that vanishes closes nothing: a partition, or
    /// an isolation before the crash.)
    fn kernel_closed(&mut self, now: Instant) {
        let _ = now;
    }
}

/// The application-facing notion of leading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leadership {
    /// The protocol's token, if [`Protocol::HAS_TOKEN`].
    pub token: Option<u64>,
}

/// What a client asks its driver to do, or tells its application.
#[derive(Clone, Debug)]
pub enum ClientOutput<P: Protocol + ?Sized> {
    /// Send `request` to server `to`.
    Send {
        /// The server.
        to: ServerIndex,
        /// The message.
        request: P::Request,
    },
    /// The application may now act as leader.
    BecameLeader {
        /// The protocol's token, if any.
        token: Option<u64>,
    },
    /// The application must stop acting as leader.
    LostLeadership {
        /// Why: "renew deadline passed", "session expired", "validity
        /// elapsed", "connection broken", "stopped", ...
        reason: &'static str,
    },
}

/// Settings a model (or its upstream library) rejects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    /// A duration or count that must be positive is zero.
    Zero {
        /// The setting.
        setting: &'static str,
    },
    /// `setting` must be greater than `than` (upstream's own check).
    NotGreater {
        /// The setting that is too small.
        setting: &'static str,
        /// What it must exceed.
        than: &'static str,
        /// Its value.
        value: Duration,
        /// The value it must exceed.
        bound: Duration,
    },
    /// Any other rule, with the reason.
    Invalid {
        /// The setting.
        setting: &'static str,
        /// Why it is rejected.
        reason: &'static str,
    },
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::Zero { setting } => write!(f, "{setting} must be greater than zero"),
            SettingsError::NotGreater {
                setting,
                than,
                value,
                bound,
            } => write!(
                f,
                "{setting} ({value:?}) must be greater than {than} ({bound:?})"
            ),
            SettingsError::Invalid { setting, reason } => write!(f, "{setting}: {reason}"),
        }
    }
}

impl std::error::Error for SettingsError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zookeeper::{ZooKeeper, ZooKeeperSettings};

    #[test]
    fn an_expiry_is_rounded_up_to_the_next_tick_as_zookeeper_rounds_it() {
        let plain = Boundaries {
            expiries: vec![Duration::from_secs(10)],
            expiry_tick: None,
            lengths: Vec::new(),
        };
        assert_eq!(plain.expiry_at(1_500, Duration::from_nanos(10)), 1_510);
        let ticked = Boundaries {
            expiry_tick: Some(Duration::from_nanos(100)),
            ..plain
        };
        // roundToNextInterval: the next multiple, even from one exactly on it.
        assert_eq!(ticked.expiry_at(1_500, Duration::from_nanos(10)), 1_600);
        assert_eq!(ticked.expiry_at(1_490, Duration::from_nanos(10)), 1_600);
        assert_eq!(ticked.expiry_at(u64::MAX, Duration::MAX), u64::MAX);
    }

    #[test]
    fn zookeepers_boundaries_use_the_negotiated_timeout() {
        // A 1 s session on a 3 s tick is negotiated up to 2 ticks, 6 s: the
        // server expires it 6 s after a packet, the client reads for 4 s
        // and, with ZOOKEEPER-4508, expires it itself at 8 s.
        let settings = ZooKeeperSettings {
            session_timeout: Duration::from_secs(1),
            ..ZooKeeperSettings::default()
        };
        let b = ZooKeeper::boundaries(&settings);
        let s = Duration::from_secs;
        assert_eq!(b.expiries, vec![s(6)]);
        assert_eq!(b.expiry_tick, Some(s(3)));
        assert_eq!(b.lengths, vec![s(6), s(4), s(8)]);
    }
}
