//! From a scenario to what the lab will do, in real time: a [`LabPlan`].
//!
//! The simulator can do anything to a virtual host; a real run can only do
//! what an operating system, a TCP proxy and libfaketime can do to a process
//! and a connection. So a scenario is planned *before* anything starts, and
//! everything the lab cannot apply for real is **refused up front** (the
//! command's exit code 2, one line per refusal naming the fault, node or key
//! and why) — never skipped quietly, so a real run never claims to have
//! tested a fault it did not inject.
//!
//! # What a fault means, and how it is made real
//!
//! The plan decides nothing about what a fault means. The simulator's
//! resolution ([`fenced_sim::ValidScenario::fault_plan`]) turns the
//! scenario's node starts, faults and heal into primitive actions at
//! instants — the hosts each names, a partition's bridges, a restart's
//! durability, `restart_after`, what `heal_at` ends, the order of one
//! instant's steps — and the simulator executes the same plan in virtual
//! time. [`crate::realise`] maps each action to the lab's [`Action`]s (each
//! [`Step`] names the plan step it realises), and refuses the faults whose
//! actions the lab cannot make real; `lab/tests/plans_agree.rs` checks, for
//! every shipped scenario, that both execute the same steps.
//!
//! The table of how each fault is made real, and the list of what is
//! refused and why, are in the crate's README (`lab/README.md`, sections
//! "How faults are made real" and "What is refused"): they are written
//! there only.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use fenced::{ElectorTimings, NodeId, ResourceId, Role};
use fenced_sim::file::LoadError;
use fenced_sim::{FaultPlan, ProtocolSpec, Resolution, Scenario, ScenarioError, ValidScenario};
use fenced_sim::{DOWNSTREAM, LEASE_STORE};

use crate::design::{self, Design};
use crate::faketime::{ClockSetting, FaketimeSupport};
use crate::realise::{self, Realised};
pub use crate::time_scale::{TimeScale, MAX_TIME_SCALE};

/// The most nodes a lab run starts: each is an OS process with two
/// PostgreSQL connections, on a machine that also runs the database.
pub const MAX_NODES: usize = 32;
/// The shortest scaled `retry_interval` (and heartbeat interval): a
/// PostgreSQL round trip through the proxy plus process scheduling on a
/// loaded machine take milliseconds, not microseconds.
pub const MIN_RETRY_INTERVAL: Duration = Duration::from_millis(20);
/// The shortest scaled lease TTL, for the same reason.
pub const MIN_LEASE_TTL: Duration = Duration::from_millis(200);
/// The logical servers a node links to, one proxy each. The fenced
/// protocol's two (and a single-server design's): one PostgreSQL serves
/// both, through separate proxies, so faults can tell them apart. Redlock's
/// are its instances and the downstream ([`crate::design_redlock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Server {
    /// Leases and the node registry.
    LeaseStore,
    /// The fenced (or plain) table the work writes to.
    Downstream,
    /// Redlock's instance `i` (0-based: the scenario's `redis-(i+1)`), a
    /// `redis-server` of its own.
    Redis(u16),
}

impl Server {
    /// The fenced protocol's two, in a fixed order.
    pub const ALL: [Server; 2] = [Server::LeaseStore, Server::Downstream];

    /// The scenario's name of the host.
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            Server::LeaseStore => LEASE_STORE.into(),
            Server::Downstream => DOWNSTREAM.into(),
            Server::Redis(index) => format!("redis-{}", u32::from(index) + 1).into(),
        }
    }
}

/// One direction of a (node, server) link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// Requests: node → server.
    ToServer,
    /// Answers: server → node.
    ToNode,
}

impl Direction {
    /// Both, in a fixed order.
    pub const BOTH: [Direction; 2] = [Direction::ToServer, Direction::ToNode];
}

/// The link between node `node` (its index in [`LabPlan::nodes`]) and a
/// server: one proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Link {
    /// The node's index.
    pub node: usize,
    /// The logical server.
    pub server: Server,
}

/// Whose clock a clock fault moves: a node's wall clock (libfaketime), or
/// the clock the lease store's SQL reads (see [`crate::store_clock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClockTarget {
    /// Node `index`'s wall clock, shared by all its processes.
    Node(usize),
    /// The lease store's `clock_timestamp()`.
    LeaseStore,
    /// Redlock's instance `i`'s wall clock (its `redis-server`'s, through
    /// the wall-clock shim, [`crate::servers::wall_clock`]).
    Redis(u16),
}

/// One thing the runner does at a planned time.
///
/// Fields: `node` is an index into [`LabPlan::nodes`]; `after` the index of
/// the scenario fault whose kill or stop the restart follows; `link`,
/// `direction` and `server` name a proxy and what to do to it.
#[allow(missing_docs)] // The fields are named once, above, for every variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start the node's first process.
    Spawn { node: usize },
    /// SIGSTOP every live process of the node.
    Pause { node: usize },
    /// Undo the matching [`Action::Pause`] (SIGCONT when no pause is left).
    Resume { node: usize },
    /// SIGKILL every live process of the node.
    Kill { node: usize },
    /// SIGTERM every live process of the node (a graceful stop).
    Terminate { node: usize },
    /// A new incarnation of the node, if fault `after` found a live process
    /// to kill or stop and none is live now.
    Restart { node: usize, after: usize },
    /// A new incarnation of the node next to any live one.
    Replace { node: usize },
    /// SIGUSR1 to every live process: the leader's work fails.
    Abdicate { node: usize },
    /// Stall one direction of a link.
    Block { link: Link, direction: Direction },
    /// Undo the matching [`Action::Block`].
    Unblock { link: Link, direction: Direction },
    /// The server restarts: its connections are reset and refused.
    ServerDown { server: Server },
    /// The server is back.
    ServerUp { server: Server },
    /// SIGSTOP the server's own process (a Redlock instance, the run's etcd).
    ServerPause { server: Server },
    /// SIGCONT it.
    ServerResume { server: Server },
    /// SIGKILL the server's own process (a Redlock instance's restart).
    ServerKill { server: Server },
    /// Start it again on its port: from its data (`durable`: AOF, fsynced
    /// on every write) or empty.
    ServerRestart { server: Server, durable: bool },
    /// Step `target`'s clock by `by_nanos` (a `clock-jump`, or one flip of
    /// a `clock-strobe`).
    ClockStep { target: ClockTarget, by_nanos: i64 },
    /// Begin to slew `target`'s clock by `by_nanos` over `over` (the lease
    /// store only: a node's slew is refused).
    ClockSlew {
        target: ClockTarget,
        by_nanos: i64,
        over: Duration,
    },
    /// The liveness phase: every fault ends, loss stops, nodes without a live
    /// process restart.
    Heal,
}

/// Why a step is in the plan: a node's `start_at`, the scenario's fault
/// number `index`, or `heal_at` — the cause of the simulator's plan step it
/// realises.
pub use fenced_sim::StepCause as Cause;

/// One timed action.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// When, from the start of the run (scaled).
    pub at: Duration,
    /// Why.
    pub cause: Cause,
    /// What.
    pub action: Action,
    /// The index of the step of the scenario's [`FaultPlan`] this realises
    /// (one plan step may take several actions: a stall of each link
    /// concerned).
    pub planned: usize,
    /// Which of a `clock-strobe`'s flips this is (0: the plan step itself,
    /// at its instant; `n`: the `n`-th flip after it, or the heal's step
    /// back, at their own instants — [`fenced_sim::FaultAction::wall_steps`]).
    pub flip: u32,
}

/// One node of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct LabNode {
    /// Its id (every incarnation's owner id is `id#incarnation`).
    pub id: NodeId,
    /// Its clock (libfaketime settings), if it is not the machine's.
    pub clock: Option<ClockSetting>,
    /// Whether a fault steps its wall clock while it runs: its processes
    /// then read their wall clock's offset (the node's `clock_offset`, then
    /// every step) from a file, and their monotonic clock is the machine's.
    pub wall_steps: bool,
    /// The lock design its processes follow, with its settings scaled.
    pub design: Design,
}

/// The network model every proxy applies (scaled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetworkModel {
    /// One-way latency, uniform in `[min, max]`.
    pub latency: (Duration, Duration),
    /// Probability that a forwarded chunk is "lost" (held back for
    /// `retransmit_timeout`).
    pub loss: f64,
    /// What a loss costs (the scenario's `[network] retransmit_timeout`,
    /// scaled).
    pub retransmit_timeout: Duration,
}

/// What every node process is told (scaled).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSettings {
    /// The role contended for.
    pub role: Role,
    /// The downstream resource written.
    pub resource: ResourceId,
    /// The elector's timings (jitter fraction kept; each process gets its own
    /// jitter seed).
    pub timings: ElectorTimings,
    /// How often a node heartbeats.
    pub heartbeat_interval: Duration,
    /// How long the registry keeps a silent node.
    pub liveness_ttl: Duration,
    /// How often the leader starts a unit of work.
    pub write_interval: Duration,
    /// How long a unit takes from its leadership check to its write.
    pub work_duration: Duration,
    /// Whether the downstream checks tokens.
    pub fencing: bool,
    /// `[client]`, scaled: the nodes' connect and query bounds (their
    /// `transport` is always sessions: real clients keep connections).
    pub client: fenced_sim::Client,
    /// `[work] write_retries`.
    pub write_retries: u32,
}

/// A scenario made into what a real run does.
#[derive(Clone, Debug, PartialEq)]
pub struct LabPlan {
    /// The scenario's name.
    pub scenario: String,
    /// The run's seed (the scenario's, or `--seed`).
    pub seed: u64,
    /// The time scale applied.
    pub time_scale: TimeScale,
    /// The nodes, in scenario order.
    pub nodes: Vec<LabNode>,
    /// The node processes' settings.
    pub settings: NodeSettings,
    /// The logical servers every node links to (one proxy each).
    pub servers: Vec<Server>,
    /// Redlock's instances the run starts, if the design is Redlock.
    pub redis: Option<crate::design_redlock::Instances>,
    /// The proxies' model.
    pub network: NetworkModel,
    /// The actions, in time order.
    pub steps: Vec<Step>,
    /// The anchored faults: each applied when its event appears in a node's
    /// history ([`crate::anchor_watch`]).
    pub anchored: Vec<LabAnchored>,
    /// Whether a fault moves the lease store's clock (the run then installs
    /// its clock function, [`crate::store_clock`]).
    pub store_clock: bool,
    /// Faults that act on links nothing travels over (node to node, server
    /// to server): applied by nobody, in the simulator as here.
    pub notes: Vec<String>,
    /// When the run ends (scaled `duration`).
    pub end: Duration,
    /// When the liveness phase begins (scaled `heal_at`): no fault begins
    /// after it.
    pub heal_at: Option<Duration>,
}

/// What the lab cannot do for real, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What: `fault[2] (clock-jump)`, `node[0] node-a`, `election.protocol`.
    pub what: String,
    /// Why the lab cannot apply it.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.why)
    }
}

/// Why no plan was made. Every variant is bad input (exit code 2).
#[derive(Debug)]
pub enum PlanError {
    /// The scenario file could not be loaded.
    Load(LoadError),
    /// The scenario breaks a rule.
    Invalid(ScenarioError),
    /// The time scale is outside `(0, 1000]`.
    TimeScale {
        /// The factor given.
        given: f64,
    },
    /// The scenario asks for what the lab cannot do for real.
    Refused(Vec<Refusal>),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Load(error) => write!(f, "{error}"),
            PlanError::Invalid(error) => write!(f, "invalid scenario: {error}"),
            PlanError::TimeScale { given } => write!(
                f,
                "--time-scale {given}: must be above 0 and at most {MAX_TIME_SCALE}"
            ),
            PlanError::Refused(refusals) => {
                f.write_str("the lab cannot run this scenario for real:")?;
                for refusal in refusals {
                    write!(f, "\n  {refusal}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for PlanError {}

/// How to plan: the flags of `fenced-lab run` that shape the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOptions {
    /// Every duration is multiplied by this.
    pub time_scale: TimeScale,
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// What libfaketime can do on this machine.
    pub faketime: FaketimeSupport,
}

/// Loads and validates the scenario file at `path`.
///
/// # Errors
/// [`PlanError::Load`] or [`PlanError::Invalid`].
pub fn load(path: &Path) -> Result<ValidScenario, PlanError> {
    let scenario: Scenario = fenced_sim::file::load(path).map_err(PlanError::Load)?;
    scenario.validated().map_err(PlanError::Invalid)
}

impl LabPlan {
    /// Plans `scenario` with `options`.
    ///
    /// # Errors
    /// [`PlanError::Refused`] with every refusal at once.
    pub fn new(scenario: &ValidScenario, options: &PlanOptions) -> Result<LabPlan, PlanError> {
        Planner::new(scenario, options).plan()
    }

    /// The index of the node named `id`.
    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|node| node.id.as_str() == id)
    }
}

struct Planner<'a> {
    scenario: &'a ValidScenario,
    scale: TimeScale,
    options: &'a PlanOptions,
    refusals: Vec<Refusal>,
    /// The logical servers of the design ([`design::servers`]).
    servers: Vec<Server>,
}

impl<'a> Planner<'a> {
    fn new(scenario: &'a ValidScenario, options: &'a PlanOptions) -> Self {
        Planner {
            scenario,
            scale: options.time_scale,
            options,
            refusals: Vec::new(),
            servers: design::servers(&scenario.election.protocol),
        }
    }

    /// How refusals and notes name the scenario's fault `index`:
    /// `fault[2] (clock-jump)`.
    fn fault_label(&self, index: usize) -> String {
        format!(
            "fault[{index}] ({})",
            self.scenario.faults[index].kind_name()
        )
    }

    fn refuse(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.refusals.push(Refusal {
            what: what.into(),
            why: why.into(),
        });
    }

    fn plan(mut self) -> Result<LabPlan, PlanError> {
        let s = self.scenario;
        if let Some(why) = design::unplanned(&s.election.protocol) {
            self.refuse("election.protocol", why);
            // Its faults name that design's servers: nothing more to say.
            return Err(PlanError::Refused(self.refusals));
        }
        if !s.client.sessions() {
            self.refuse(
                "client.transport",
                "`datagrams` has no real counterpart here: the nodes reach PostgreSQL through \
                 connections (`fenced::postgres`), which the default `sessions` models",
            );
        }
        if s.network.duplicate > 0.0 {
            self.refuse(
                "network.duplicate",
                "TCP discards duplicate segments, so no duplicated request can reach PostgreSQL \
                 through a connection",
            );
        }
        if s.nodes.len() > MAX_NODES {
            self.refuse(
                "node",
                format!(
                    "{} nodes: a lab run starts at most {MAX_NODES} node processes",
                    s.nodes.len()
                ),
            );
        }
        let settings = self.settings();
        let nodes = self.nodes();
        let mut nodes = nodes;
        let fault_plan = s.fault_plan();
        for (index, fault) in fault_plan.faults().iter().enumerate() {
            let refusal = realise::refusal(fault_plan.hosts(), &self.servers, fault)
                .or_else(|| self.design_refusal(fault))
                .or_else(|| self.clock_refusal(fault));
            if let Some(why) = refusal {
                self.refuse(self.fault_label(index), why);
            }
            if let Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. } = fault {
                if let Some(ClockTarget::Node(node)) =
                    realise::clock_target(&fault.start, &self.servers)
                {
                    nodes[node].wall_steps = true;
                }
            }
        }
        if !self.refusals.is_empty() {
            return Err(PlanError::Refused(self.refusals));
        }
        let (steps, mut notes) = self.steps(&fault_plan);
        let anchored = self.anchored(&fault_plan, &mut notes);
        let store_clock = steps.iter().any(|step| {
            matches!(
                step.action,
                Action::ClockStep {
                    target: ClockTarget::LeaseStore,
                    ..
                } | Action::ClockSlew { .. }
            )
        });
        let end = self.scale.scale(s.duration);
        Ok(LabPlan {
            scenario: s.name.clone(),
            seed: self.options.seed.unwrap_or(s.seed),
            time_scale: self.scale,
            nodes,
            settings,
            redis: crate::design_redlock::instances(s, &fault_plan),
            servers: self.servers.clone(),
            network: NetworkModel {
                latency: (
                    self.scale.scale(s.network.latency.0),
                    self.scale.scale(s.network.latency.1),
                ),
                loss: s.network.loss,
                retransmit_timeout: self.scale.scale(s.network.retransmit_timeout),
            },
            steps,
            anchored,
            store_clock,
            notes,
            end,
            heal_at: s.heal_at.map(|h| self.scale.scale(h)),
        })
    }

    /// Why the lab cannot make `fault` real for the scenario's design, if
    /// the design says so ([`design::connection_lock_refusal`]).
    fn design_refusal(&self, fault: &Resolution) -> Option<String> {
        match self.scenario.election.protocol {
            ProtocolSpec::ConnectionLock(_) => {
                design::connection_lock_refusal(fault, self.scenario.nodes.len())
            }
            ProtocolSpec::Redlock(_) => crate::design_redlock::refusal(fault),
            ProtocolSpec::Etcd(_) => crate::design_etcd::refusal(fault),
            ProtocolSpec::ZooKeeper(_) => crate::design_zookeeper::refusal(fault),
            _ => None,
        }
    }

    /// Plan action `action` (of fault `fault`, if a fault's) made real: as
    /// the scenario's design makes it where it differs from every design's
    /// (etcd's and ZooKeeper's server pause is a SIGSTOP of their own
    /// process), else as [`realise::realise`] makes it. The one way for the
    /// timed steps and the anchored faults alike: the anchored ones once
    /// skipped the designs' own, so an anchored pause of ZooKeeper was a
    /// stall of its links, whose server went on expiring sessions.
    pub(super) fn realise(
        &self,
        fault_plan: &FaultPlan,
        fault: Option<(usize, &str)>,
        action: &fenced_sim::FaultAction,
    ) -> Realised {
        let protocol = &self.scenario.election.protocol;
        let own = crate::design_etcd::realise(protocol, action)
            .or_else(|| crate::design_zookeeper::realise(protocol, action));
        match own {
            Some(action) => Realised::Actions(vec![action]),
            None => realise::realise(
                fault_plan.hosts(),
                &self.servers,
                self.scenario.nodes.len(),
                fault,
                action,
            ),
        }
    }

    /// The fault plan's steps made real, at scaled times, and the notes of
    /// steps nothing real does (see [`realise::realise`]).
    fn steps(&self, fault_plan: &FaultPlan) -> (Vec<Step>, Vec<String>) {
        let s = self.scenario;
        let (mut steps, mut notes) = (Vec::new(), Vec::new());
        for (planned, step) in fault_plan.steps().iter().enumerate() {
            let what = match step.cause {
                Cause::Fault(index) => Some((index, self.fault_label(index))),
                Cause::Start | Cause::Heal => None,
            };
            let fault = what.as_ref().map(|(index, what)| (*index, what.as_str()));
            let at = self.scale.scale(step.at);
            let wall_steps = step.action.wall_steps(step.at, s.heal_at);
            if wall_steps.len() > 1 {
                // A strobe: each flip at its own instant, as the simulator
                // makes them.
                let Some(target) = realise::clock_target(&step.action, &self.servers) else {
                    unreachable!("only a clock fault steps a wall clock: {:?}", step.action);
                };
                for (flip, wall) in wall_steps.iter().enumerate() {
                    steps.push(Step {
                        at: self.scale.scale(wall.at),
                        cause: step.cause,
                        action: Action::ClockStep {
                            target,
                            by_nanos: self.scale.scale_nanos(wall.by),
                        },
                        planned,
                        flip: flip as u32,
                    });
                }
                continue;
            }
            match self.realise(fault_plan, fault, &step.action) {
                Realised::Actions(actions) => {
                    steps.extend(actions.into_iter().map(|action| Step {
                        at,
                        cause: step.cause,
                        action: self.scaled(action),
                        planned,
                        flip: 0,
                    }))
                }
                Realised::Nothing(note) => notes.extend(note),
            }
        }
        // Strobe flips interleave with later plan steps; one instant's
        // steps keep the plan's order (a stable sort).
        steps.sort_by_key(|step| step.at);
        (steps, notes)
    }

    /// `action` with its clock amounts scaled as the scenario's times are.
    fn scaled(&self, action: Action) -> Action {
        match action {
            Action::ClockStep { target, by_nanos } => Action::ClockStep {
                target,
                by_nanos: self.scale.scale_nanos(by_nanos),
            },
            Action::ClockSlew {
                target,
                by_nanos,
                over,
            } => Action::ClockSlew {
                target,
                by_nanos: self.scale.scale_nanos(by_nanos),
                over: self.scale.scale(over),
            },
            other => other,
        }
    }

    fn settings(&mut self) -> NodeSettings {
        let s = self.scenario;
        let scale = |d| self.scale.scale(d);
        let core = s.elector_timings(0);
        let timings = ElectorTimings {
            lease_ttl: scale(core.lease_ttl),
            renew_interval: scale(core.renew_interval),
            retry_interval: scale(core.retry_interval),
            safety_margin: core.safety_margin.map(scale),
            rejoin_delay: core.rejoin_delay.map(scale),
            release_on_deadline: core.release_on_deadline,
            jitter: core.jitter,
        };
        let settings = NodeSettings {
            role: s.role().clone(),
            resource: s.resource().clone(),
            timings,
            heartbeat_interval: scale(s.membership.heartbeat_interval),
            liveness_ttl: scale(s.membership.liveness_ttl),
            write_interval: scale(s.work.write_interval),
            work_duration: scale(s.work.work_duration),
            fencing: s.fencing,
            client: fenced_sim::Client {
                connect_timeout: scale(s.client.connect_timeout),
                query_timeout: scale(s.client.query_timeout),
                query_grace: scale(s.client.query_grace),
                ..s.client
            },
            write_retries: s.work.write_retries,
        };
        // The elector's and the heartbeat's floors bind only the fenced
        // protocol's nodes; another design's are its own (`lock_floors`).
        let fenced = s.election.protocol == ProtocolSpec::Fenced;
        let elector_floors = [
            (
                "election.lease_ttl",
                settings.timings.lease_ttl,
                MIN_LEASE_TTL,
            ),
            (
                "election.retry_interval",
                settings.timings.retry_interval,
                MIN_RETRY_INTERVAL,
            ),
            (
                "membership.heartbeat_interval",
                settings.heartbeat_interval,
                MIN_RETRY_INTERVAL,
            ),
        ];
        let floors = [
            (
                "work.write_interval",
                settings.write_interval,
                MIN_RETRY_INTERVAL,
            ),
            (
                "client.query_timeout",
                settings.client.query_timeout,
                MIN_RETRY_INTERVAL,
            ),
            (
                "client.connect_timeout",
                settings.client.connect_timeout,
                MIN_RETRY_INTERVAL,
            ),
        ];
        let elector_floors = elector_floors.iter().filter(|_| fenced);
        for &(key, scaled, floor) in elector_floors.chain(&floors) {
            self.floor(key, scaled, floor);
        }
        settings
    }

    /// Refuses `key` if its `scaled` value is below `floor` (once: every
    /// node of a design checks its table's keys).
    fn floor(&mut self, key: &str, scaled: Duration, floor: Duration) {
        if scaled < floor && !self.refusals.iter().any(|r| r.what == key) {
            self.refuse(
                key,
                format!(
                    "{scaled:?} after --time-scale {}: below the lab's floor of {floor:?} \
                     (a real PostgreSQL round trip and process scheduling take milliseconds); \
                     use a larger time scale",
                    self.scale.factor()
                ),
            );
        }
    }

    /// The floors of node `node`'s own design timings (scaled): `design`'s
    /// table, the node's own or the election's.
    fn design_floors(&mut self, node: usize, design: &str, timings: &[(&str, Duration)]) {
        let table = match self.scenario.nodes[node].protocol {
            Some(_) => format!("node[{node}].{design}"),
            None => format!("election.{design}"),
        };
        for &(key, scaled) in timings {
            self.floor(&format!("{table}.{key}"), scaled, MIN_RETRY_INTERVAL);
        }
    }

    fn nodes(&mut self) -> Vec<LabNode> {
        let s = self.scenario;
        let mut nodes = Vec::with_capacity(s.nodes.len());
        for (index, (spec, id)) in s.nodes.iter().zip(s.node_ids()).enumerate() {
            let offset_nanos = self.scale.scale_nanos(spec.clock_offset.0);
            let clock = match ClockSetting::new(offset_nanos, spec.clock_drift) {
                None => None,
                Some(setting) => match self.options.faketime.refusal(&setting) {
                    None => Some(setting),
                    Some(why) => {
                        self.refuse(format!("node[{index}] {}", spec.id), why);
                        None
                    }
                },
            };
            let design = match design::of_node(s.scenario(), index) {
                Some(Design::ConnectionLock(settings)) => {
                    let settings = design::scale_connection_lock(&settings, self.scale);
                    let timings = design::connection_lock_timings(&settings);
                    self.design_floors(index, "connection-lock", &timings);
                    Design::ConnectionLock(settings)
                }
                Some(Design::Redlock(settings)) => {
                    let settings = crate::design_redlock::scale(&settings, self.scale);
                    let timings = crate::design_redlock::floored(&settings);
                    self.design_floors(index, "redlock", &timings);
                    Design::Redlock(settings)
                }
                Some(Design::Etcd(settings)) => {
                    let settings = crate::design_etcd::scale_settings(&settings, self.scale);
                    let timings = crate::design_etcd::client_timings(&settings);
                    self.design_floors(index, "etcd", &timings);
                    Design::Etcd(settings)
                }
                Some(Design::ZooKeeper(settings)) => {
                    let settings = crate::design_zookeeper::scale_settings(&settings, self.scale);
                    let timings = crate::design_zookeeper::client_timings(&settings);
                    self.design_floors(index, "zookeeper", &timings);
                    Design::ZooKeeper(settings)
                }
                Some(Design::Fenced) => Design::Fenced,
                None => {
                    // Validation refuses a node of another design than the
                    // election's, and the election's was planned above.
                    self.refuse(
                        format!("node[{index}] {}", spec.id),
                        "its design has no real implementation here",
                    );
                    Design::Fenced
                }
            };
            nodes.push(LabNode {
                id: id.clone(),
                clock,
                wall_steps: false,
                design,
            });
        }
        nodes
    }
}

#[path = "plan_display.rs"]
mod display;

#[path = "plan_clocks.rs"]
mod clocks;

#[path = "plan_anchored.rs"]
mod anchored;
pub use anchored::{AnchoredStep, LabAnchored};

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
