//! A scenario: the cluster, its timings, its faults and what the run must show.
//!
//! This is the in-code form, for users who script simulations in Rust; the
//! TOML files of `scenarios/` are loaded into the same type (see
//! [`crate::file`]). Every field has a documented default except the name, the
//! duration and at least one node. [`Scenario::validated`] checks everything
//! once and returns a [`ValidScenario`], the only thing
//! [`Simulation::new`](crate::Simulation::new) takes, so a run never starts
//! half-way.
//!
//! This module holds the model's types; `validate.rs` the rules
//! ([`Scenario::validate`]) and the warnings ([`Scenario::warnings`]);
//! `resolve.rs` what each fault means in primitive actions
//! ([`FaultSpec::resolve`], [`ValidScenario::fault_plan`]), for the
//! simulator and the lab alike.

mod anchor;
mod budget;
mod client;
mod protocol;
mod resolve;
mod script;
mod servers;
mod valid;
mod validate;

pub use anchor::{Anchor, AnchorEvent, ResolvedAnchor};
pub use budget::{check_budget, estimated_events};
pub use client::{Client, Transport};
pub use protocol::ProtocolSpec;
pub use resolve::{
    FaultAction, FaultPlan, FollowUp, HostId, HostNames, Partition, PlanStep, RecurringFault,
    Resolution, ResolveError, ResolvedFault, ServerId, StepCause, WallStep,
};
pub use script::{LatencyChoice, LatencyScript};
pub use servers::{ClockOffset, Durability, StoreClock};

pub(crate) use valid::with_jitter_seed;
pub use valid::ValidScenario;

use std::fmt;
use std::time::Duration;

use fenced::{ElectorTimings, Jitter, ResourceId, Role};

pub use crate::observation::{DOWNSTREAM, LEASE_STORE};

/// The longest node id: room is left for the `#incarnation` suffix (`#` and
/// up to ten digits) of every process's owner id within
/// [`fenced::MAX_ID_LEN`].
pub const MAX_NODE_ID_LEN: usize = fenced::MAX_ID_LEN - 11;

/// A whole simulation setup. Build with [`Scenario::new`] and adjust fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// A short identifier, shown in reports and replay commands.
    pub name: String,
    /// What failure the scenario shows and where it is known from.
    pub description: Option<String>,
    /// The root seed of every random draw (overridable per run).
    pub seed: u64,
    /// How much virtual time to simulate.
    pub duration: Duration,
    /// Every node's elector.
    pub election: Election,
    /// Heartbeats and the registry.
    pub membership: Membership,
    /// The leader's singleton work.
    pub work: Work,
    /// Latency, loss and duplication of every message.
    pub network: Network,
    /// `[client]`: how nodes reach the servers (sessions, by default, as
    /// `fenced::postgres` keeps them; or datagrams) and the client's bounds.
    pub client: Client,
    /// Whether the downstream store checks fencing tokens.
    pub fencing: bool,
    /// Whether the lease store and the downstream keep their state across
    /// a `restart` (`[store] durable`, `[downstream] durable`).
    pub durability: Durability,
    /// `[store] clock`: the clock the fenced protocol's lease store (and its
    /// registry) expires by.
    pub store_clock: StoreClock,
    /// The nodes (at least one).
    pub nodes: Vec<NodeSpec>,
    /// Scheduled and recurring faults.
    pub faults: Vec<FaultSpec>,
    /// What the run must show; unmet expectations fail the run.
    pub expect: Expectations,
    /// When set, the liveness phase starts here: every fault ends, paused
    /// hosts resume, crashed nodes restart, recurring faults stop; by the end
    /// of the run one process must lead with its writes accepted, or the run
    /// has a `liveness` violation. Exploration sets it; files may too.
    pub heal_at: Option<Duration>,
}

/// Elector settings shared by every node.
#[derive(Clone, Debug, PartialEq)]
pub struct Election {
    /// The role contended for. Default `"leader"`.
    pub role: String,
    /// Default 30 s.
    pub lease_ttl: Duration,
    /// Default 10 s.
    pub renew_interval: Duration,
    /// Default 2 s.
    pub retry_interval: Duration,
    /// Default `lease_ttl / 10`.
    pub safety_margin: Option<Duration>,
    /// Quiet period after a deadline step-down (or a whole validity without
    /// any answer). Default `lease_ttl + 2 × retry_interval`.
    pub rejoin_delay: Option<Duration>,
    /// Whether a deadline step-down releases the lease. Default true.
    pub release_on_deadline: bool,
    /// Jitter fraction in `[0, 1)`; each process's RNG is seeded from the run
    /// seed. Default 0 (none).
    pub jitter: f64,
    /// The lock design every node runs. Default: the fenced protocol (which
    /// the keys above configure); another design has its own settings.
    pub protocol: ProtocolSpec,
}

impl Default for Election {
    fn default() -> Self {
        let t = ElectorTimings::default();
        Election {
            role: "leader".to_string(),
            lease_ttl: t.lease_ttl,
            renew_interval: t.renew_interval,
            retry_interval: t.retry_interval,
            safety_margin: None,
            rejoin_delay: None,
            release_on_deadline: true,
            jitter: 0.0,
            protocol: ProtocolSpec::Fenced,
        }
    }
}

impl Election {
    /// The elector timings these settings describe, for a process whose
    /// jitter RNG gets `jitter_seed`.
    pub fn timings(&self, jitter_seed: u64) -> ElectorTimings {
        ElectorTimings {
            lease_ttl: self.lease_ttl,
            renew_interval: self.renew_interval,
            retry_interval: self.retry_interval,
            safety_margin: self.safety_margin,
            rejoin_delay: self.rejoin_delay,
            release_on_deadline: self.release_on_deadline,
            jitter: (self.jitter > 0.0 || self.jitter.is_nan()).then_some(Jitter {
                fraction: self.jitter,
                seed: jitter_seed,
            }),
        }
    }

    /// The safety margin in effect (given or defaulted).
    pub fn effective_safety_margin(&self) -> Duration {
        self.timings(0).effective_safety_margin()
    }

    /// The rejoin delay in effect (given or defaulted).
    pub fn effective_rejoin_delay(&self) -> Duration {
        self.timings(0).effective_rejoin_delay()
    }
}

/// Heartbeat settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Membership {
    /// How often each node heartbeats. Default 5 s.
    pub heartbeat_interval: Duration,
    /// How long the registry keeps a silent node. Default 30 s.
    pub liveness_ttl: Duration,
}

impl Default for Membership {
    fn default() -> Self {
        Membership {
            heartbeat_interval: Duration::from_secs(5),
            liveness_ttl: Duration::from_secs(30),
        }
    }
}

/// The leader's work loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Work {
    /// How often the leader starts a unit of work. Default 1 s.
    pub write_interval: Duration,
    /// How long a unit takes between its leadership check and its write.
    /// Default 50 ms.
    pub work_duration: Duration,
    /// The downstream resource written. Default: the role's name.
    pub resource: Option<String>,
    /// How many times a unit's write is sent again when it failed without
    /// reaching the downstream — its session was reset or could not open
    /// (never after a timeout: that write may have landed). Default 1, as
    /// an application retries a write its connection lost. Sessions only
    /// (`[client] transport`): a datagram's write is never answered, so it
    /// never fails.
    pub write_retries: u32,
}

impl Default for Work {
    fn default() -> Self {
        Work {
            write_interval: Duration::from_secs(1),
            work_duration: Duration::from_millis(50),
            resource: None,
            write_retries: 1,
        }
    }
}

/// The network model.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    /// One-way latency, uniform in `[min, max]`. Default 1–5 ms.
    pub latency: (Duration, Duration),
    /// Probability that a message is dropped. Default 0.
    pub loss: f64,
    /// Probability that a message is delivered twice. Default 0.
    pub duplicate: f64,
    /// A session's first TCP retransmission timeout: a message on a
    /// session (`[client] transport = "sessions"`) is never lost nor
    /// duplicated; each loss delays it by one more timeout, doubled each
    /// time (`engine::network::retransmission_penalty`). Default 200 ms,
    /// Linux's `TCP_RTO_MIN`.
    pub retransmit_timeout: Duration,
    /// `[network.script]`: when set, every message's latency is the
    /// script's instead of a draw from `latency`, and nothing is lost or
    /// duplicated at random. `fenced-sim verify` writes it into the
    /// counterexamples it finds, so that `run` replays the exact schedule.
    /// Default: none.
    pub script: Option<LatencyScript>,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency: (Duration::from_millis(1), Duration::from_millis(5)),
            loss: 0.0,
            duplicate: 0.0,
            retransmit_timeout: Duration::from_millis(200),
            script: None,
        }
    }
}

/// One node of the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Its name, unique, not `lease-store` or `downstream`.
    pub id: String,
    /// Its clock's offset from true time. Default 0.
    pub clock_offset: ClockOffset,
    /// Its clock's drift: 0.01 runs 1% fast. Default 0.
    pub clock_drift: f64,
    /// When its first process starts. Default 0.
    pub start_at: Duration,
    /// This node's own settings of the scenario's design (the same design,
    /// other settings: a candidate configured differently from the others,
    /// as in kubernetes PR #114872). Default `None`: the `[election]` ones.
    pub protocol: Option<ProtocolSpec>,
}

impl NodeSpec {
    /// A node with a true clock that starts at once.
    pub fn new(id: impl Into<String>) -> Self {
        NodeSpec {
            id: id.into(),
            clock_offset: ClockOffset(0),
            clock_drift: 0.0,
            start_at: Duration::ZERO,
            protocol: None,
        }
    }
}

/// A span drawn uniformly from `[low, high]` (or fixed when equal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationRange {
    /// The shortest.
    pub low: Duration,
    /// The longest.
    pub high: Duration,
}

impl DurationRange {
    /// Always `d`.
    pub fn fixed(d: Duration) -> Self {
        DurationRange { low: d, high: d }
    }
}

/// What a recurring fault does each time it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecurringKind {
    /// The node's processes freeze for the drawn duration.
    Pause,
    /// The node is cut off from every host for the drawn duration.
    Isolate,
    /// The node's processes die and restart after the drawn duration.
    Crash,
}

impl RecurringKind {
    /// The scenario-file spelling.
    pub fn name(self) -> &'static str {
        match self {
            RecurringKind::Pause => "pause",
            RecurringKind::Isolate => "isolate",
            RecurringKind::Crash => "crash",
        }
    }
}

/// A fault: scheduled at a time, or recurring as a Poisson process.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultSpec {
    /// A GC pause / SIGSTOP: the host handles nothing; its messages queue and
    /// its timers fire late, in order, on resume. Any host.
    Pause {
        /// A node, `lease-store` or `downstream`.
        host: String,
        /// When it starts.
        at: Duration,
        /// How long it lasts.
        duration: Duration,
    },
    /// Every link of the host is down, both ways. Any host.
    Isolate {
        /// A node, `lease-store` or `downstream`.
        host: String,
        /// When it starts.
        at: Duration,
        /// How long it lasts.
        duration: Duration,
    },
    /// One direction of one link is down (asymmetric partition).
    Cut {
        /// The sender whose messages are dropped.
        from: String,
        /// The receiver that no longer hears `from`.
        to: String,
        /// When it starts.
        at: Duration,
        /// How long it lasts.
        duration: Duration,
    },
    /// Hosts in different groups cannot talk. A host named in no group
    /// bridges the split: it still reaches every group (so `[["node-a"],
    /// ["lease-store"]]` cuts node-a off from the store while both still reach
    /// the downstream and the other nodes).
    Partition {
        /// At least two groups, each host in at most one.
        groups: Vec<Vec<String>>,
        /// When it starts.
        at: Duration,
        /// How long it lasts.
        duration: Duration,
    },
    /// Every process of the node dies (volatile state lost); optionally a new
    /// incarnation starts `restart_after` later, as a follower.
    Crash {
        /// The node.
        node: String,
        /// When it crashes.
        at: Duration,
        /// When (after the crash) a new process starts, if ever.
        restart_after: Option<Duration>,
    },
    /// A new incarnation of the node starts while the old processes keep
    /// running (or stay paused): the zombie case, two lives of one node id.
    Replace {
        /// The node.
        node: String,
        /// When the replacement starts.
        at: Duration,
    },
    /// A graceful stop (a deploy, a SIGTERM handler): each live process of
    /// the node stops its elector — which ends the work and releases the
    /// lease — and exits; optionally a new incarnation starts
    /// `restart_after` later. A successor takes over within about one
    /// `retry_interval`, not one TTL. A grant answering a request still in
    /// flight is lost with the process (its lease lapses at its TTL).
    Stop {
        /// The node.
        node: String,
        /// When it stops.
        at: Duration,
        /// When (after the stop) a new process starts, if ever.
        restart_after: Option<Duration>,
    },
    /// The leader's work fails: the elector abdicates — ends the work,
    /// releases the lease and stays quiet for `rejoin_delay` — so a node that
    /// is alive but not working gives the role up. A node that does not lead
    /// then has no work to fail: nothing happens.
    Abdicate {
        /// The node.
        node: String,
        /// When its work fails.
        at: Duration,
    },
    /// A server restarts: it is down (no message reaches it or leaves it)
    /// for `duration`, then comes back — with its state when `durable`,
    /// empty otherwise (a Redis instance without persistence, a lease store
    /// that loses its tokens).
    Restart {
        /// The server (`lease-store`, `downstream`, or another design's
        /// server: `etcd`, `redis-3`, ...).
        host: String,
        /// When it goes down.
        at: Duration,
        /// How long it stays down.
        duration: Duration,
        /// Whether its state survives; `None`: as the scenario declares
        /// (`[store]`/`[downstream] durable`), durable otherwise.
        durable: Option<bool>,
    },
    /// A host's clock jumps by `by` (an NTP step, a VM migration): it reads
    /// `by` more (or less, when negative) from then on. Timers the host set
    /// on its clock fire when its clock reaches them.
    ClockJump {
        /// The host: a node (every process on it) or a server.
        host: String,
        /// When.
        at: Duration,
        /// The step.
        by: ClockOffset,
    },
    /// An NTP correction at a bounded rate (`adjtime`): both of the host's
    /// clocks — the wall and the monotonic one, which Linux slews alike —
    /// run `rate` fast (or slow, when `by` is negative) until they read
    /// `by` more, over `|by| / rate`. Unlike a step it reaches hosts that
    /// time by their monotonic clock, and it never moves a clock backward.
    ClockSlew {
        /// The host: a node (every process on it) or a server.
        host: String,
        /// When the correction begins.
        at: Duration,
        /// The correction.
        by: ClockOffset,
        /// The slew rate, a fraction (0.0005 = 500 ppm, ntpd's bound).
        rate: f64,
    },
    /// Jepsen's clock strobe: the host's wall clock flips between its
    /// reading and `by` ahead (behind, when negative) every `period`, for
    /// `duration` — steps, so only what times by the wall clock moves. It
    /// ends where it began: an even number of flips, the last one back.
    ClockStrobe {
        /// The host: a node (every process on it) or a server.
        host: String,
        /// When the first flip happens.
        at: Duration,
        /// The flip's size.
        by: ClockOffset,
        /// The time between flips.
        period: Duration,
        /// How long the strobe lasts.
        duration: Duration,
    },
    /// A fault that recurs as a Poisson process with mean interval `every`,
    /// on one node or independently on each (`node = "*"`).
    Recurring {
        /// What happens each time.
        kind: RecurringKind,
        /// A node name, or `None` for every node.
        node: Option<String>,
        /// The mean interval between occurrences.
        every: Duration,
        /// How long each occurrence lasts (for `crash`: the restart delay).
        duration: DurationRange,
    },
    /// A scheduled fault that begins `when.delay` after the first event
    /// `when` names at or after the wrapped fault's `at` (see
    /// [`Anchor`]), instead of at `at`. Never recurring, never nested.
    Anchored {
        /// What it waits for.
        when: Anchor,
        /// The fault, its `at` the earliest instant the event counts.
        fault: Box<FaultSpec>,
    },
}

impl FaultSpec {
    /// The scenario-file `kind`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            FaultSpec::Pause { .. } => "pause",
            FaultSpec::Isolate { .. } => "isolate",
            FaultSpec::Cut { .. } => "cut",
            FaultSpec::Partition { .. } => "partition",
            FaultSpec::Crash { .. } => "crash",
            FaultSpec::Replace { .. } => "replace",
            FaultSpec::Stop { .. } => "stop",
            FaultSpec::Abdicate { .. } => "abdicate",
            FaultSpec::Restart { .. } => "restart",
            FaultSpec::ClockJump { .. } => "clock-jump",
            FaultSpec::ClockSlew { .. } => "clock-slew",
            FaultSpec::ClockStrobe { .. } => "clock-strobe",
            FaultSpec::Recurring { kind, .. } => kind.name(),
            FaultSpec::Anchored { fault, .. } => fault.kind_name(),
        }
    }

    /// Where a scheduled fault begins, to move it (`None` for a recurring
    /// fault, which has no one start; an anchored fault's is its earliest
    /// instant). `fenced-lab matrix` puts an anchored fault where a run
    /// says it began.
    pub fn at_mut(&mut self) -> Option<&mut Duration> {
        match self {
            FaultSpec::Pause { at, .. }
            | FaultSpec::Isolate { at, .. }
            | FaultSpec::Cut { at, .. }
            | FaultSpec::Partition { at, .. }
            | FaultSpec::Crash { at, .. }
            | FaultSpec::Replace { at, .. }
            | FaultSpec::Stop { at, .. }
            | FaultSpec::Abdicate { at, .. }
            | FaultSpec::Restart { at, .. }
            | FaultSpec::ClockJump { at, .. }
            | FaultSpec::ClockSlew { at, .. }
            | FaultSpec::ClockStrobe { at, .. } => Some(at),
            FaultSpec::Recurring { .. } => None,
            FaultSpec::Anchored { fault, .. } => fault.at_mut(),
        }
    }

    /// The span `[at, at + duration)` of a scheduled fault that has one;
    /// for an anchored fault, from its earliest instant on (when it begins
    /// is known only as the run goes).
    pub fn window(&self) -> Option<(Duration, Duration)> {
        match self {
            FaultSpec::Anchored { fault, .. } => fault.window().map(|(at, _)| (at, Duration::MAX)),
            FaultSpec::Pause { at, duration, .. }
            | FaultSpec::Isolate { at, duration, .. }
            | FaultSpec::Cut { at, duration, .. }
            | FaultSpec::Partition { at, duration, .. }
            | FaultSpec::Restart { at, duration, .. } => Some((*at, at.saturating_add(*duration))),
            FaultSpec::ClockJump { at, .. } => Some((*at, *at)),
            FaultSpec::ClockSlew { at, by, rate, .. } => {
                Some((*at, at.saturating_add(slew_duration(*by, *rate))))
            }
            FaultSpec::ClockStrobe {
                at,
                period,
                duration,
                ..
            } => Some((
                *at,
                at.saturating_add(period.saturating_mul(strobe_flips(*period, *duration))),
            )),
            FaultSpec::Crash {
                at, restart_after, ..
            } => Some((
                *at,
                restart_after.map_or(Duration::MAX, |r| at.saturating_add(r)),
            )),
            FaultSpec::Stop {
                at, restart_after, ..
            } => Some((
                *at,
                restart_after.map_or(Duration::MAX, |r| at.saturating_add(r)),
            )),
            FaultSpec::Replace { at, .. } | FaultSpec::Abdicate { at, .. } => Some((*at, *at)),
            FaultSpec::Recurring { .. } => None,
        }
    }
}

/// How long a slew of `by` at `rate` takes: `|by| / rate`, at least one
/// nanosecond (a validated rate is positive and at most
/// `MAX_SLEW_RATE`, 0.5).
pub fn slew_duration(by: ClockOffset, rate: f64) -> Duration {
    if rate.is_nan() || rate <= 0.0 {
        return Duration::MAX;
    }
    let nanos = (by.0.unsigned_abs() as f64 / rate).ceil();
    if nanos >= u64::MAX as f64 {
        Duration::MAX
    } else {
        Duration::from_nanos((nanos as u64).max(1))
    }
}

/// How many flips a strobe of `duration` at `period` makes: one per
/// period, rounded up to an even number so that it ends where it began (at
/// least two; saturating at `u32::MAX - 1`, which validation refuses).
pub fn strobe_flips(period: Duration, duration: Duration) -> u32 {
    if period.is_zero() {
        return u32::MAX - 1;
    }
    let flips = (duration.as_nanos() / period.as_nanos()).max(1);
    let even = flips + flips % 2;
    u32::try_from(even)
        .unwrap_or(u32::MAX - 1)
        .min(u32::MAX - 1)
}

/// What the run must show. `None` fields are not checked, except that a run
/// with no `split_brain` and no `violations` expectation must have no
/// violation at all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Expectations {
    /// Whether a split-brain write must (true) or must not (false) happen.
    /// Default false.
    pub split_brain: Option<bool>,
    /// Exactly how many violations other than split-brain writes. Default 0.
    pub violations: Option<u64>,
    /// At least this many leader changes.
    pub min_leader_changes: Option<u64>,
    /// At most this many leader changes.
    pub max_leader_changes: Option<u64>,
    /// Every failover gap at most this long.
    pub max_failover: Option<Duration>,
    /// At most this many spurious failovers.
    pub max_spurious_failovers: Option<u64>,
    /// At least this many spurious failovers (to show a twitchy setting).
    pub min_spurious_failovers: Option<u64>,
    /// At least this many writes rejected by fencing.
    pub min_rejected_writes: Option<u64>,
    /// Belief overlap (two nodes both believing they lead) at most this long.
    pub max_overlap: Option<Duration>,
    /// Belief overlap at least this long.
    pub min_overlap: Option<Duration>,
    /// The highest fencing token granted is at most this.
    pub max_token: Option<u64>,
    /// At least this many membership flaps.
    pub min_membership_flaps: Option<u64>,
    /// The run must end with a leader whose writes are accepted.
    pub leader_at_end: Option<bool>,
    /// Whether every anchored fault must begin (default true: one that
    /// never begins leaves the expectations unmet). `explore` writes
    /// `false` for its drawn anchors, which fire only when the node they
    /// wait for makes its event.
    pub anchors_begin: Option<bool>,
}

impl Expectations {
    /// The keys a run is judged on, in the order their sentences appear in
    /// [`ExpectOutcome::unmet`](crate::report::ExpectOutcome::unmet):
    /// `split_brain` and `violations` always (absent, they mean "none"),
    /// every other key when it is set.
    pub fn checked_keys(&self) -> Vec<&'static str> {
        let mut keys = vec!["split_brain", "violations"];
        let optional = [
            ("min_leader_changes", self.min_leader_changes.is_some()),
            ("max_leader_changes", self.max_leader_changes.is_some()),
            ("max_failover", self.max_failover.is_some()),
            (
                "max_spurious_failovers",
                self.max_spurious_failovers.is_some(),
            ),
            (
                "min_spurious_failovers",
                self.min_spurious_failovers.is_some(),
            ),
            ("min_rejected_writes", self.min_rejected_writes.is_some()),
            ("max_overlap", self.max_overlap.is_some()),
            ("min_overlap", self.min_overlap.is_some()),
            ("max_token", self.max_token.is_some()),
            ("min_membership_flaps", self.min_membership_flaps.is_some()),
            ("leader_at_end", self.leader_at_end.is_some()),
        ];
        keys.extend(optional.iter().filter(|(_, set)| *set).map(|(key, _)| *key));
        keys
    }
}

/// A problem with a scenario: the key it is at and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// Where: `election.lease_ttl`, `fault[2].node`, `node[1].id`, ...
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// A scenario with every default and no nodes yet.
    pub fn new(name: impl Into<String>, duration: Duration) -> Self {
        Scenario {
            name: name.into(),
            description: None,
            seed: 0,
            duration,
            election: Election::default(),
            membership: Membership::default(),
            work: Work::default(),
            network: Network::default(),
            client: Client::default(),
            fencing: true,
            durability: Durability::default(),
            store_clock: StoreClock::default(),
            nodes: Vec::new(),
            faults: Vec::new(),
            expect: Expectations::default(),
            heal_at: None,
        }
    }

    /// Adds nodes with true clocks that start at once.
    pub fn with_nodes<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nodes.extend(ids.into_iter().map(NodeSpec::new));
        self
    }

    /// Adds a fault.
    pub fn with_fault(mut self, fault: FaultSpec) -> Self {
        self.faults.push(fault);
        self
    }

    /// The role's validated name.
    pub fn role(&self) -> Result<Role, ScenarioError> {
        Role::new(&self.election.role)
            .map_err(|e| ScenarioError::new("election.role", e.to_string()))
    }

    /// The downstream resource's validated name.
    pub fn resource(&self) -> Result<ResourceId, ScenarioError> {
        let name = self.work.resource.as_deref().unwrap_or(&self.election.role);
        ResourceId::new(name).map_err(|e| ScenarioError::new("work.resource", e.to_string()))
    }
}
