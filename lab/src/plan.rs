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
//! # How each fault is made real
//!
//! | scenario | for real |
//! |---|---|
//! | node `pause` | SIGSTOP of each live process of the node, SIGCONT at the end |
//! | `crash` (+ `restart_after`) | SIGKILL; later a new process, a new incarnation |
//! | `replace` | a second process with the same node id, a new incarnation |
//! | `stop` (+ `restart_after`) | SIGTERM (the node stops its elector, releasing the lease) |
//! | `abdicate` | SIGUSR1 (the node's work fails: its work returns, the elector abdicates) |
//! | `isolate`, `partition`, `cut` | the proxies of the links concerned stall that direction |
//! | `pause`/`isolate` of `lease-store`/`downstream` | every link of that logical host stalls both ways |
//! | durable `restart` of `lease-store`/`downstream` | its proxies reset every connection and refuse new ones |
//! | latency, `loss` | every proxy delays, and on a loss holds back, what it forwards |
//! | node `clock_offset`, `clock_drift` | libfaketime on the node's processes (see [`crate::faketime`]) |
//!
//! Signals are held by the kernel for a stopped process (except SIGKILL), so
//! a `stop` or `abdicate` of a paused node takes effect when it resumes —
//! exactly as the simulator delivers them.
//!
//! A paused *server* is a stall of its links, not a frozen PostgreSQL (one
//! server serves both logical hosts and every test on the machine): what was
//! sent to it waits and is handled on resume, at the resume time of the
//! database clock, as in the simulator. The difference: a statement that
//! reached the database before the pause still executes during it (only its
//! answer waits).
//!
//! # What is refused, and why
//!
//! * another lock design (`[election] protocol`): only the fenced protocol
//!   has a real implementation here;
//! * recurring faults (`every`): the simulator draws them as its run goes, so
//!   the lab could not apply the schedule the prediction saw;
//! * a `restart` that loses state (`durable = false`): PostgreSQL is durable,
//!   and the lab will not erase token counters the schema protects;
//! * `clock-jump`: the tokio driver's timers read `CLOCK_MONOTONIC`, which no
//!   real clock step moves, and the database's clock is the machine's;
//! * `duplicate` > 0: TCP discards duplicate segments, so no duplicated
//!   request can reach PostgreSQL through a connection;
//! * a node clock offset or drift when libfaketime is missing or does not
//!   fake what the node's clocks read;
//! * more than [`MAX_NODES`] nodes, or a time scale that makes an interval
//!   shorter than the lab's floors ([`MIN_RETRY_INTERVAL`], ...).

use std::fmt;
use std::path::Path;
use std::time::Duration;

use fenced::{ElectorTimings, NodeId, ResourceId, Role};
use fenced_sim::file::LoadError;
use fenced_sim::{FaultSpec, ProtocolSpec, Scenario, ScenarioError, ValidScenario};
use fenced_sim::{DOWNSTREAM, LEASE_STORE};

use crate::faketime::{ClockSetting, FaketimeSupport};
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
/// The retransmission timeout a lost segment costs, before scaling: Linux's
/// minimum RTO (see [`crate::proxy`] on what loss means over TCP).
pub const RETRANSMIT_TIMEOUT: Duration = Duration::from_millis(200);
/// The two logical servers of the fenced protocol. One PostgreSQL serves
/// both, through separate proxies, so faults can tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Server {
    /// Leases and the node registry.
    LeaseStore,
    /// The fenced (or plain) table the work writes to.
    Downstream,
}

impl Server {
    /// Both, in a fixed order.
    pub const ALL: [Server; 2] = [Server::LeaseStore, Server::Downstream];

    /// The scenario's name of the host.
    pub fn name(self) -> &'static str {
        match self {
            Server::LeaseStore => LEASE_STORE,
            Server::Downstream => DOWNSTREAM,
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
    /// The liveness phase: every fault ends, loss stops, nodes without a live
    /// process restart.
    Heal,
}

/// Why a step is in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A node's `start_at`.
    Start,
    /// Scenario fault `[[fault]]` number `index` (0-based).
    Fault(usize),
    /// `heal_at`.
    Heal,
}

/// One timed action.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// When, from the start of the run (scaled).
    pub at: Duration,
    /// Why.
    pub cause: Cause,
    /// What.
    pub action: Action,
}

/// One node of the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct LabNode {
    /// Its id (every incarnation's owner id is `id#incarnation`).
    pub id: NodeId,
    /// Its clock (libfaketime settings), if it is not the machine's.
    pub clock: Option<ClockSetting>,
}

/// The network model every proxy applies (scaled).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetworkModel {
    /// One-way latency, uniform in `[min, max]`.
    pub latency: (Duration, Duration),
    /// Probability that a forwarded chunk is "lost" (held back for
    /// `retransmit_timeout`).
    pub loss: f64,
    /// What a loss costs (scaled [`RETRANSMIT_TIMEOUT`]).
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
    /// The proxies' model.
    pub network: NetworkModel,
    /// The actions, in time order.
    pub steps: Vec<Step>,
    /// Faults that act on links nothing travels over (node to node, server
    /// to server): applied by nobody, in the simulator as here.
    pub notes: Vec<String>,
    /// When the run ends (scaled `duration`).
    pub end: Duration,
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

/// A host named in a fault.
enum Host {
    Node(usize),
    Server(Server),
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
    steps: Vec<(Duration, Order, Step)>,
    notes: Vec<String>,
}

/// Step ordering at one instant, as the simulator's queue orders it: what
/// it schedules before the run (node starts, fault starts in file order,
/// the heal) first, then what a fault's start schedules (its end or
/// restart), by that start.
const PHASE_START: u8 = 0;
const PHASE_FOLLOW_UP: u8 = 1;

/// A step's place at its instant: phase, its fault's start (follow-ups),
/// rank (node, then fault, then the heal).
type Order = (u8, Duration, usize);

impl<'a> Planner<'a> {
    fn new(scenario: &'a ValidScenario, options: &'a PlanOptions) -> Self {
        Planner {
            scenario,
            scale: options.time_scale,
            options,
            refusals: Vec::new(),
            steps: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn refuse(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.refusals.push(Refusal {
            what: what.into(),
            why: why.into(),
        });
    }

    fn push(&mut self, at: Duration, phase: u8, cause: Cause, action: Action) {
        let s = self.scenario;
        let nodes = s.nodes.len();
        let (fault_at, rank) = match (cause, &action) {
            (Cause::Start, Action::Spawn { node }) => (Duration::ZERO, *node),
            (Cause::Fault(index), _) => {
                let start = s.faults[index].window().map_or(Duration::ZERO, |(at, _)| at);
                (start, nodes + index)
            }
            _ => (Duration::ZERO, nodes + s.faults.len()),
        };
        let fault_at = if phase == PHASE_START {
            Duration::ZERO
        } else {
            fault_at
        };
        let at = self.scale.scale(at);
        let order = (phase, fault_at, rank);
        self.steps.push((at, order, Step { at, cause, action }));
    }

    fn plan(mut self) -> Result<LabPlan, PlanError> {
        let s = self.scenario;
        if s.election.protocol != ProtocolSpec::Fenced {
            self.refuse(
                "election.protocol",
                format!(
                    "`{}` has no real implementation here; the lab runs only the fenced protocol \
                     (this crate's tokio elector over the PostgreSQL lease store)",
                    s.election.protocol.name()
                ),
            );
            // Its faults name that design's servers: nothing more to say.
            return Err(PlanError::Refused(self.refusals));
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
        for (index, fault) in s.faults.iter().enumerate() {
            self.fault(index, fault);
        }
        if let Some(heal_at) = s.heal_at {
            self.heal(heal_at);
        }
        for (index, spec) in s.nodes.iter().enumerate() {
            self.push(
                spec.start_at,
                PHASE_START,
                Cause::Start,
                Action::Spawn { node: index },
            );
        }
        if !self.refusals.is_empty() {
            return Err(PlanError::Refused(self.refusals));
        }
        let end = self.scale.scale(s.duration);
        let mut steps = self.steps;
        steps.sort_by_key(|(at, order, _)| (*at, *order));
        let steps = steps
            .into_iter()
            .map(|(_, _, step)| step)
            .filter(|step| step.at < end)
            .collect();
        Ok(LabPlan {
            scenario: s.name.clone(),
            seed: self.options.seed.unwrap_or(s.seed),
            time_scale: self.scale,
            nodes,
            settings,
            network: NetworkModel {
                latency: (
                    self.scale.scale(s.network.latency.0),
                    self.scale.scale(s.network.latency.1),
                ),
                loss: s.network.loss,
                retransmit_timeout: self.scale.scale(RETRANSMIT_TIMEOUT),
            },
            steps,
            notes: self.notes,
            end,
        })
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
        };
        let floors = [
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
            (
                "work.write_interval",
                settings.write_interval,
                MIN_RETRY_INTERVAL,
            ),
        ];
        for (key, scaled, floor) in floors {
            if scaled < floor {
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
        settings
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
            nodes.push(LabNode {
                id: id.clone(),
                clock,
            });
        }
        nodes
    }

    fn host(&self, name: &str) -> Option<Host> {
        match name {
            LEASE_STORE => Some(Host::Server(Server::LeaseStore)),
            DOWNSTREAM => Some(Host::Server(Server::Downstream)),
            _ => self
                .scenario
                .nodes
                .iter()
                .position(|n| n.id == name)
                .map(Host::Node),
        }
    }

    fn node(&self, name: &str) -> Option<usize> {
        match self.host(name) {
            Some(Host::Node(index)) => Some(index),
            _ => None,
        }
    }

    /// Blocks (and later unblocks) `links` in `directions` for fault `index`.
    fn block(
        &mut self,
        index: usize,
        at: Duration,
        duration: Duration,
        links: &[(Link, Direction)],
    ) {
        let cause = Cause::Fault(index);
        for &(link, direction) in links {
            self.push(at, PHASE_START, cause, Action::Block { link, direction });
            self.push(
                at.saturating_add(duration),
                PHASE_FOLLOW_UP,
                cause,
                Action::Unblock { link, direction },
            );
        }
    }

    /// Every link of `host`, both ways.
    fn links_of(&self, host: &Host) -> Vec<(Link, Direction)> {
        let nodes = 0..self.scenario.nodes.len();
        let mut links = Vec::new();
        for node in nodes {
            for server in Server::ALL {
                let touches = match host {
                    Host::Node(n) => *n == node,
                    Host::Server(s) => *s == server,
                };
                if touches {
                    for direction in Direction::BOTH {
                        links.push((Link { node, server }, direction));
                    }
                }
            }
        }
        links
    }

    fn fault(&mut self, index: usize, fault: &FaultSpec) {
        let what = format!("fault[{index}] ({})", fault.kind_name());
        let cause = Cause::Fault(index);
        match fault {
            FaultSpec::Pause { host, at, duration } => match self.host(host) {
                Some(Host::Node(node)) => {
                    self.push(*at, PHASE_START, cause, Action::Pause { node });
                    let end = at.saturating_add(*duration);
                    self.push(end, PHASE_FOLLOW_UP, cause, Action::Resume { node });
                }
                Some(server @ Host::Server(_)) => {
                    let links = self.links_of(&server);
                    self.block(index, *at, *duration, &links);
                }
                None => self.refuse(what, format!("unknown host {host:?}")),
            },
            FaultSpec::Isolate { host, at, duration } => match self.host(host) {
                Some(host) => {
                    let links = self.links_of(&host);
                    self.block(index, *at, *duration, &links);
                }
                None => self.refuse(what, format!("unknown host {host:?}")),
            },
            FaultSpec::Cut {
                from,
                to,
                at,
                duration,
            } => match (self.host(from), self.host(to)) {
                (Some(Host::Node(node)), Some(Host::Server(server))) => {
                    let link = (Link { node, server }, Direction::ToServer);
                    self.block(index, *at, *duration, &[link]);
                }
                (Some(Host::Server(server)), Some(Host::Node(node))) => {
                    let link = (Link { node, server }, Direction::ToNode);
                    self.block(index, *at, *duration, &[link]);
                }
                (Some(_), Some(_)) => self.notes.push(format!(
                    "{what} {from} -> {to}: nothing travels over this link in the fenced \
                     protocol, so the cut changes nothing (in the simulator as here)"
                )),
                _ => self.refuse(what, format!("unknown host in {from:?} -> {to:?}")),
            },
            FaultSpec::Partition {
                groups,
                at,
                duration,
            } => {
                let group_of = |name: &str| groups.iter().position(|g| g.iter().any(|h| h == name));
                let mut links = Vec::new();
                for (node, spec) in self.scenario.nodes.iter().enumerate() {
                    for server in Server::ALL {
                        let (a, b) = (group_of(&spec.id), group_of(server.name()));
                        if matches!((a, b), (Some(a), Some(b)) if a != b) {
                            for direction in Direction::BOTH {
                                links.push((Link { node, server }, direction));
                            }
                        }
                    }
                }
                self.block(index, *at, *duration, &links);
            }
            FaultSpec::Crash {
                node,
                at,
                restart_after,
            }
            | FaultSpec::Stop {
                node,
                at,
                restart_after,
            } => {
                let Some(node) = self.node(node) else {
                    return self.refuse(what, format!("{node:?} is not a node"));
                };
                let action = if matches!(fault, FaultSpec::Crash { .. }) {
                    Action::Kill { node }
                } else {
                    Action::Terminate { node }
                };
                self.push(*at, PHASE_START, cause, action);
                if let Some(after) = restart_after {
                    let restart = Action::Restart { node, after: index };
                    let at = at.saturating_add(*after);
                    self.push(at, PHASE_FOLLOW_UP, cause, restart);
                }
            }
            FaultSpec::Replace { node, at } | FaultSpec::Abdicate { node, at } => {
                let Some(node) = self.node(node) else {
                    return self.refuse(what, format!("{node:?} is not a node"));
                };
                let action = if matches!(fault, FaultSpec::Replace { .. }) {
                    Action::Replace { node }
                } else {
                    Action::Abdicate { node }
                };
                self.push(*at, PHASE_START, cause, action);
            }
            FaultSpec::Restart {
                host,
                at,
                duration,
                durable,
            } => {
                let durable = durable.unwrap_or_else(|| self.scenario.durability.of(host));
                match self.host(host) {
                    Some(Host::Server(server)) if durable => {
                        self.push(*at, PHASE_START, cause, Action::ServerDown { server });
                        let end = at.saturating_add(*duration);
                        self.push(end, PHASE_FOLLOW_UP, cause, Action::ServerUp { server });
                    }
                    Some(Host::Server(_)) => self.refuse(
                        what,
                        format!(
                            "{host} restarts without its state (durable = false): PostgreSQL is \
                             durable, and the lab will not erase the token counters its schema \
                             protects"
                        ),
                    ),
                    _ => self.refuse(what, format!("{host:?} is not a server of this protocol")),
                }
            }
            FaultSpec::ClockJump { host, .. } => self.refuse(
                what,
                format!(
                    "{host}: a clock step cannot be made real here — the tokio driver's timers \
                     read CLOCK_MONOTONIC, which no NTP step moves, and the database's clock is \
                     the machine's"
                ),
            ),
            FaultSpec::Recurring { .. } => self.refuse(
                what,
                "a recurring fault (`every`) is drawn by the simulator as its run goes; the lab \
                 could not apply the schedule the prediction saw",
            ),
        }
    }

    /// At `heal_at`: no fault starts any more (one at exactly `heal_at`
    /// starts just before the heal), every fault ends; a restart stays (it
    /// starts a process only for a node without one).
    fn heal(&mut self, heal_at: Duration) {
        let heal = self.scale.scale(heal_at);
        self.steps.retain(|(at, (phase, fault_at, _), step)| {
            if !matches!(step.cause, Cause::Fault(_)) {
                return true;
            }
            if *phase == PHASE_START {
                return *at <= heal;
            }
            let restart = matches!(step.action, Action::Restart { .. });
            *fault_at <= heal_at && (restart || *at < heal)
        });
        self.push(heal_at, PHASE_START, Cause::Heal, Action::Heal);
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Spawn { node } => write!(f, "spawn node {node}"),
            Action::Pause { node } => write!(f, "SIGSTOP node {node}"),
            Action::Resume { node } => write!(f, "SIGCONT node {node}"),
            Action::Kill { node } => write!(f, "SIGKILL node {node}"),
            Action::Terminate { node } => write!(f, "SIGTERM node {node}"),
            Action::Restart { node, after } => {
                write!(f, "restart node {node} (after fault[{after}])")
            }
            Action::Replace { node } => write!(f, "replace node {node}"),
            Action::Abdicate { node } => write!(f, "SIGUSR1 (abdicate) node {node}"),
            Action::Block { link, direction } => {
                write!(
                    f,
                    "stall {direction:?} on node {} <-> {}",
                    link.node,
                    link.server.name()
                )
            }
            Action::Unblock { link, direction } => {
                write!(
                    f,
                    "heal {direction:?} on node {} <-> {}",
                    link.node,
                    link.server.name()
                )
            }
            Action::ServerDown { server } => write!(f, "{} down (reset)", server.name()),
            Action::ServerUp { server } => write!(f, "{} up", server.name()),
            Action::Heal => f.write_str("heal everything"),
        }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
