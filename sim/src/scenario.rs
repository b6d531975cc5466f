//! A scenario: the cluster, its timings, its faults and what the run must show.
//!
//! This is the in-code form, for users who script simulations in Rust; the
//! TOML files of `scenarios/` are loaded into the same type (see
//! [`crate::file`]). Every field has a documented default except the name, the
//! duration and at least one node. [`Scenario::validate`] checks everything once;
//! [`Simulation::new`](crate::Simulation::new) refuses an invalid scenario, so a
//! run never starts half-way.

use crate::units::human;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use fenced::{ElectorConfig, ElectorTimings, Jitter, NodeId, OwnerId, ResourceId, Role};

use crate::clock::{MAX_CLOCK_DRIFT, MAX_CLOCK_OFFSET_NANOS};
use crate::limits::{MAX_SPAN, MAX_UNITS_IN_PROGRESS};

/// The name of the lease-store host in scenarios and traces.
pub const LEASE_STORE: &str = "lease-store";
/// The longest node id: room is left for the `#incarnation` suffix (`#` and
/// up to ten digits) of every process's owner id within
/// [`fenced::MAX_ID_LEN`].
pub const MAX_NODE_ID_LEN: usize = fenced::MAX_ID_LEN - 11;

/// The name of the downstream host in scenarios and traces.
pub const DOWNSTREAM: &str = "downstream";

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
    /// Whether the downstream store checks fencing tokens.
    pub fencing: bool,
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
        self.safety_margin.unwrap_or(self.lease_ttl / 10)
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
}

impl Default for Work {
    fn default() -> Self {
        Work {
            write_interval: Duration::from_secs(1),
            work_duration: Duration::from_millis(50),
            resource: None,
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
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency: (Duration::from_millis(1), Duration::from_millis(5)),
            loss: 0.0,
            duplicate: 0.0,
        }
    }
}

/// A signed clock offset in nanoseconds (positive: the clock is ahead).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockOffset(pub i64);

impl ClockOffset {
    /// A clock `d` ahead of true time.
    pub fn ahead(d: Duration) -> Self {
        ClockOffset(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
    /// A clock `d` behind true time.
    pub fn behind(d: Duration) -> Self {
        ClockOffset(-i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    }
}

impl fmt::Display for ClockOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Duration::from_nanos(self.0.unsigned_abs());
        if self.0 < 0 {
            write!(f, "-{}", humantime::format_duration(d))
        } else {
            write!(f, "{}", humantime::format_duration(d))
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
}

impl NodeSpec {
    /// A node with a true clock that starts at once.
    pub fn new(id: impl Into<String>) -> Self {
        NodeSpec {
            id: id.into(),
            clock_offset: ClockOffset(0),
            clock_drift: 0.0,
            start_at: Duration::ZERO,
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
            FaultSpec::Recurring { kind, .. } => kind.name(),
        }
    }

    /// The span `[at, at + duration)` of a scheduled fault that has one.
    pub fn window(&self) -> Option<(Duration, Duration)> {
        match self {
            FaultSpec::Pause { at, duration, .. }
            | FaultSpec::Isolate { at, duration, .. }
            | FaultSpec::Cut { at, duration, .. }
            | FaultSpec::Partition { at, duration, .. } => {
                Some((*at, at.saturating_add(*duration)))
            }
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
}

/// Refuses a duration longer than [`MAX_SPAN`] (one year), naming `key`.
fn at_most_a_year(key: &str, d: Duration) -> Result<(), ScenarioError> {
    if d > MAX_SPAN {
        return Err(ScenarioError::new(
            key,
            format!("{} is longer than the limit of one year", human(d)),
        ));
    }
    Ok(())
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
            fencing: true,
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

    /// Checks every rule; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.name.trim().is_empty() {
            return Err(ScenarioError::new("name", "must not be empty"));
        }
        if self.duration.is_zero() {
            return Err(ScenarioError::new("duration", "must be greater than zero"));
        }
        if self.duration > Duration::from_secs(365 * 24 * 3600) {
            return Err(ScenarioError::new("duration", "must be at most one year"));
        }
        if let Some(heal_at) = self.heal_at {
            if heal_at >= self.duration {
                return Err(ScenarioError::new(
                    "heal_at",
                    format!(
                        "{} is not inside the run's duration of {}; the liveness phase needs time after it",
                        human(heal_at),
                        human(self.duration)
                    ),
                ));
            }
        }
        self.validate_election()?;
        self.validate_membership_and_work()?;
        self.validate_network()?;
        let hosts = self.validate_nodes()?;
        self.validate_faults(&hosts)?;
        Ok(())
    }

    /// What is legal but probably not what was meant, one sentence each with
    /// its key: shown by `run` and `check`, never an error.
    pub fn warnings(&self) -> Vec<ScenarioError> {
        let mut warnings = Vec::new();
        let validity = self
            .election
            .lease_ttl
            .saturating_sub(self.election.effective_safety_margin());
        let round_trip = self.network.latency.1.saturating_mul(2);
        if round_trip >= validity {
            warnings.push(ScenarioError::new(
                "network.latency",
                format!(
                    "the longest round trip (2 × {}) is not shorter than lease_ttl - safety_margin \
                     ({}): answers that slow arrive after the validity they give and are not acted \
                     on, so elections stall while the network is that slow",
                    human(self.network.latency.1),
                    human(validity)
                ),
            ));
        }
        if self.network.loss >= 1.0 {
            warnings.push(ScenarioError::new(
                "network.loss",
                "every message is lost: no node can ever lead",
            ));
        }
        warnings
    }

    fn validate_election(&self) -> Result<(), ScenarioError> {
        let e = &self.election;
        at_most_a_year("election.renew_interval", e.renew_interval)?;
        at_most_a_year("election.retry_interval", e.retry_interval)?;
        if let Some(rejoin) = e.rejoin_delay {
            at_most_a_year("election.rejoin_delay", rejoin)?;
        }
        let role = self.role()?;
        if e.lease_ttl.is_zero() {
            return Err(ScenarioError::new(
                "election.lease_ttl",
                "must be greater than zero",
            ));
        }
        if e.lease_ttl > fenced::LeaseStoreConfig::DEFAULT_MAX_TTL {
            return Err(ScenarioError::new(
                "election.lease_ttl",
                format!(
                    "{} is above the lease store's maximum of {}",
                    human(e.lease_ttl),
                    human(fenced::LeaseStoreConfig::DEFAULT_MAX_TTL)
                ),
            ));
        }
        if !(0.0..1.0).contains(&e.jitter) {
            return Err(ScenarioError::new(
                "election.jitter",
                format!("{} is outside [0, 1)", e.jitter),
            ));
        }
        // The elector's own validation is the single source of truth.
        let owner =
            OwnerId::new("validation").map_err(|e| ScenarioError::new("node", e.to_string()))?;
        ElectorConfig::new(owner, role, e.timings(0)).map_err(|err| {
            let key = match err {
                fenced::ConfigError::ZeroLeaseTtl => "election.lease_ttl",
                fenced::ConfigError::ZeroRenewInterval
                | fenced::ConfigError::RenewIntervalTooLong { .. } => "election.renew_interval",
                fenced::ConfigError::ZeroRetryInterval => "election.retry_interval",
                fenced::ConfigError::SafetyMarginTooLarge { .. } => "election.safety_margin",
                fenced::ConfigError::JitterOutOfRange { .. } => "election.jitter",
            };
            ScenarioError::new(key, err.to_string())
        })?;
        Ok(())
    }

    fn validate_membership_and_work(&self) -> Result<(), ScenarioError> {
        let m = &self.membership;
        at_most_a_year("membership.heartbeat_interval", m.heartbeat_interval)?;
        at_most_a_year("membership.liveness_ttl", m.liveness_ttl)?;
        at_most_a_year("work.write_interval", self.work.write_interval)?;
        at_most_a_year("work.work_duration", self.work.work_duration)?;
        if m.heartbeat_interval.is_zero() {
            return Err(ScenarioError::new(
                "membership.heartbeat_interval",
                "must be greater than zero",
            ));
        }
        if m.liveness_ttl.is_zero() {
            return Err(ScenarioError::new(
                "membership.liveness_ttl",
                "must be greater than zero",
            ));
        }
        if self.work.write_interval.is_zero() {
            return Err(ScenarioError::new(
                "work.write_interval",
                "must be greater than zero",
            ));
        }
        // A leader starts a unit every write_interval, each lasting
        // work_duration: that many are in progress at once.
        let in_progress = self.work.work_duration.as_nanos() / self.work.write_interval.as_nanos();
        if in_progress > MAX_UNITS_IN_PROGRESS {
            return Err(ScenarioError::new(
                "work.work_duration",
                format!(
                    "{} with a unit starting every {} (work.write_interval) keeps {in_progress} \
                     units in progress at once; at most {MAX_UNITS_IN_PROGRESS} are supported",
                    human(self.work.work_duration),
                    human(self.work.write_interval)
                ),
            ));
        }
        self.resource()?;
        Ok(())
    }

    fn validate_network(&self) -> Result<(), ScenarioError> {
        let n = &self.network;
        if n.latency.0 > n.latency.1 {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the range is inverted: minimum {} is above maximum {}; write [min, max]",
                    human(n.latency.0),
                    human(n.latency.1)
                ),
            ));
        }
        if n.latency.1 > Duration::from_secs(3600) {
            return Err(ScenarioError::new(
                "network.latency",
                "must be at most one hour",
            ));
        }
        // An answer is usable only while the validity its request gives
        // (send + lease_ttl - safety_margin) lies ahead, and only among the
        // last MAX_OUTSTANDING requests: a network slower than that can never
        // elect anyone.
        let validity = self
            .election
            .lease_ttl
            .saturating_sub(self.election.effective_safety_margin());
        let round_trip = n.latency.0.saturating_mul(2);
        if round_trip >= validity {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the shortest round trip (2 × {}) is not shorter than lease_ttl - safety_margin \
                     ({}): every answer would arrive after the validity it gives, so no node could \
                     ever lead; lower the latency or lengthen election.lease_ttl",
                    human(n.latency.0),
                    human(validity)
                ),
            ));
        }
        let remembered = self
            .election
            .retry_interval
            .saturating_mul(fenced::MAX_OUTSTANDING as u32);
        if round_trip >= remembered {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the shortest round trip (2 × {}) is longer than the {} requests an elector \
                     remembers ({} apart, election.retry_interval): every answer would be stale, so \
                     no node could ever lead; lower the latency or lengthen election.retry_interval",
                    human(n.latency.0),
                    fenced::MAX_OUTSTANDING,
                    human(self.election.retry_interval)
                ),
            ));
        }
        for (key, p) in [("network.loss", n.loss), ("network.duplicate", n.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ScenarioError::new(
                    key,
                    format!("{p} is not a probability; it must be in [0, 1]"),
                ));
            }
        }
        Ok(())
    }

    /// Returns every valid host name (nodes, lease-store, downstream).
    fn validate_nodes(&self) -> Result<BTreeSet<&str>, ScenarioError> {
        if self.nodes.is_empty() {
            return Err(ScenarioError::new(
                "node",
                "at least one [[node]] is required",
            ));
        }
        let mut hosts: BTreeSet<&str> = [LEASE_STORE, DOWNSTREAM].into_iter().collect();
        for (i, node) in self.nodes.iter().enumerate() {
            let key = format!("node[{i}]");
            NodeId::new(&node.id)
                .map_err(|e| ScenarioError::new(format!("{key}.id"), e.to_string()))?;
            if node.id.len() > MAX_NODE_ID_LEN {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!(
                        "is {} bytes long; node ids may be at most {MAX_NODE_ID_LEN} bytes, so that \
                         each process's owner id `{{id}}#{{incarnation}}` fits the {} byte limit",
                        node.id.len(),
                        fenced::MAX_ID_LEN
                    ),
                ));
            }
            if node.id == LEASE_STORE || node.id == DOWNSTREAM {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!("`{}` is the name of a built-in host; pick another", node.id),
                ));
            }
            if node.id == "*" || node.id.contains('#') {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    "node ids may not be `*` or contain `#` (used for incarnations)",
                ));
            }
            if !hosts.insert(&node.id) {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!(
                        "duplicate node id `{}` (also node[{}]); node ids must be unique",
                        node.id,
                        self.nodes.iter().position(|n| n.id == node.id).unwrap_or(i)
                    ),
                ));
            }
            if node.clock_offset.0.unsigned_abs() > MAX_CLOCK_OFFSET_NANOS.unsigned_abs() {
                return Err(ScenarioError::new(
                    format!("{key}.clock_offset"),
                    "must be within one day of true time",
                ));
            }
            if !node.clock_drift.is_finite() || node.clock_drift.abs() > MAX_CLOCK_DRIFT {
                return Err(ScenarioError::new(
                    format!("{key}.clock_drift"),
                    format!(
                        "{} is outside [-{MAX_CLOCK_DRIFT}, {MAX_CLOCK_DRIFT}]",
                        node.clock_drift
                    ),
                ));
            }
            if node.start_at >= self.duration {
                return Err(ScenarioError::new(
                    format!("{key}.start_at"),
                    format!(
                        "{} is not inside the run's duration of {}",
                        human(node.start_at),
                        human(self.duration)
                    ),
                ));
            }
        }
        Ok(hosts)
    }

    fn validate_faults(&self, hosts: &BTreeSet<&str>) -> Result<(), ScenarioError> {
        let is_node =
            |name: &str| name != LEASE_STORE && name != DOWNSTREAM && hosts.contains(name);
        let unknown = |key: String, name: &str| {
            let known: Vec<&str> = hosts.iter().copied().collect();
            ScenarioError::new(
                key,
                format!("unknown host `{name}`; known hosts: {}", known.join(", ")),
            )
        };
        let mut partitions: Vec<(usize, Duration, Duration)> = Vec::new();
        for (i, fault) in self.faults.iter().enumerate() {
            let key = format!("fault[{i}]");
            if let Some((at, _)) = fault.window() {
                if at >= self.duration {
                    return Err(ScenarioError::new(
                        format!("{key}.at"),
                        format!(
                            "{} is not inside the run's duration of {}",
                            human(at),
                            human(self.duration)
                        ),
                    ));
                }
            }
            match fault {
                FaultSpec::Pause { duration, .. }
                | FaultSpec::Isolate { duration, .. }
                | FaultSpec::Cut { duration, .. }
                | FaultSpec::Partition { duration, .. } => {
                    at_most_a_year(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::Crash {
                    restart_after: Some(after),
                    ..
                } => at_most_a_year(&format!("{key}.restart_after"), *after)?,
                FaultSpec::Recurring {
                    every, duration, ..
                } => {
                    at_most_a_year(&format!("{key}.every"), *every)?;
                    at_most_a_year(&format!("{key}.duration"), duration.high)?;
                }
                FaultSpec::Stop {
                    restart_after: Some(after),
                    ..
                } => at_most_a_year(&format!("{key}.restart_after"), *after)?,
                FaultSpec::Crash { .. }
                | FaultSpec::Stop { .. }
                | FaultSpec::Replace { .. }
                | FaultSpec::Abdicate { .. } => {}
            }
            match fault {
                FaultSpec::Pause { host, duration, .. }
                | FaultSpec::Isolate { host, duration, .. } => {
                    if !hosts.contains(host.as_str()) {
                        return Err(unknown(format!("{key}.node"), host));
                    }
                    if duration.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            "must be greater than zero",
                        ));
                    }
                }
                FaultSpec::Cut {
                    from, to, duration, ..
                } => {
                    for (k, h) in [("from", from), ("to", to)] {
                        if !hosts.contains(h.as_str()) {
                            return Err(unknown(format!("{key}.{k}"), h));
                        }
                    }
                    if from == to {
                        return Err(ScenarioError::new(
                            format!("{key}.to"),
                            "a cut needs two different hosts",
                        ));
                    }
                    if duration.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            "must be greater than zero",
                        ));
                    }
                }
                FaultSpec::Partition {
                    groups,
                    at,
                    duration,
                } => {
                    if groups.len() < 2 {
                        return Err(ScenarioError::new(
                            format!("{key}.groups"),
                            "a partition needs at least two groups, e.g. [[\"node-a\"], [\"lease-store\"]]: \
                             a host named in no group reaches every group, so one group cuts nothing",
                        ));
                    }
                    let mut seen = BTreeSet::new();
                    for (g, group) in groups.iter().enumerate() {
                        if group.is_empty() {
                            return Err(ScenarioError::new(
                                format!("{key}.groups[{g}]"),
                                "a group must name at least one host",
                            ));
                        }
                        for h in group {
                            if !hosts.contains(h.as_str()) {
                                return Err(unknown(format!("{key}.groups[{g}]"), h));
                            }
                            if !seen.insert(h.as_str()) {
                                return Err(ScenarioError::new(
                                    format!("{key}.groups[{g}]"),
                                    format!("host `{h}` is in more than one group"),
                                ));
                            }
                        }
                    }
                    if duration.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            "must be greater than zero",
                        ));
                    }
                    let end = at.saturating_add(*duration);
                    if let Some((j, _, _)) =
                        partitions.iter().find(|(_, s, e)| *at < *e && *s < end)
                    {
                        return Err(ScenarioError::new(
                            format!("{key}.at"),
                            format!(
                                "overlaps the partition of fault[{j}]; partitions replace each \
                                 other's groups, so at most one may be active at a time"
                            ),
                        ));
                    }
                    partitions.push((i, *at, end));
                }
                FaultSpec::Crash {
                    node,
                    restart_after,
                    ..
                } => {
                    if !is_node(node) {
                        return Err(if hosts.contains(node.as_str()) {
                            ScenarioError::new(
                                format!("{key}.node"),
                                format!("only nodes can crash, not `{node}`"),
                            )
                        } else {
                            unknown(format!("{key}.node"), node)
                        });
                    }
                    if restart_after.is_some_and(|r| r.is_zero()) {
                        return Err(ScenarioError::new(
                            format!("{key}.restart_after"),
                            "must be greater than zero",
                        ));
                    }
                }
                FaultSpec::Replace { node, .. }
                | FaultSpec::Stop { node, .. }
                | FaultSpec::Abdicate { node, .. } => {
                    if !is_node(node) {
                        let verb = match fault {
                            FaultSpec::Replace { .. } => "be replaced",
                            FaultSpec::Stop { .. } => "stop",
                            _ => "abdicate",
                        };
                        return Err(if hosts.contains(node.as_str()) {
                            ScenarioError::new(
                                format!("{key}.node"),
                                format!("only nodes can {verb}, not `{node}`"),
                            )
                        } else {
                            unknown(format!("{key}.node"), node)
                        });
                    }
                    if let FaultSpec::Stop {
                        restart_after: Some(r),
                        ..
                    } = fault
                    {
                        if r.is_zero() {
                            return Err(ScenarioError::new(
                                format!("{key}.restart_after"),
                                "must be greater than zero",
                            ));
                        }
                    }
                }
                FaultSpec::Recurring {
                    node,
                    every,
                    duration,
                    kind,
                } => {
                    if let Some(node) = node {
                        if !is_node(node) {
                            return Err(if hosts.contains(node.as_str()) {
                                ScenarioError::new(
                                    format!("{key}.node"),
                                    "recurring faults apply to nodes (or `*`)",
                                )
                            } else {
                                unknown(format!("{key}.node"), node)
                            });
                        }
                    }
                    if every.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.every"),
                            "must be greater than zero",
                        ));
                    }
                    if *every < Duration::from_millis(1) {
                        return Err(ScenarioError::new(
                            format!("{key}.every"),
                            "must be at least 1ms",
                        ));
                    }
                    if duration.low > duration.high {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            format!(
                                "the range is inverted: minimum {} is above maximum {}; write [min, max]",
                                human(duration.low),
                                human(duration.high)
                            ),
                        ));
                    }
                    if *kind == RecurringKind::Crash && duration.low.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            "a recurring crash's restart delay must be greater than zero",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
