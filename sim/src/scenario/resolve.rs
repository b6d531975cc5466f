//! What a scenario's faults *mean*, once: each [`FaultSpec`] resolved into
//! primitive actions at instants — pause or resume a host, isolate it, cut
//! one direction of a link, partition the hosts, kill, stop, replace or
//! restart a node's processes, restart a server with or without its state,
//! step a clock, heal.
//!
//! Two executors read these actions and decide nothing more about a fault:
//! the simulator (`sim/faults.rs`) applies them in virtual time, and
//! `fenced-lab` maps them to real signals, proxy stalls and resets. So the
//! hosts a name targets, how a partition is bridged, a restart's durability
//! default, `restart_after` and what `heal_at` ends are decided here and
//! nowhere else.
//!
//! * [`FaultSpec::resolve`] resolves one fault: a [`ResolvedFault`] (a start
//!   action, and an end or a restart some time later) or, for a recurring
//!   fault, a [`RecurringFault`] whose occurrences the simulator draws as its
//!   run goes ([`RecurringKind::occurrence`], the same resolution).
//! * [`ValidScenario::fault_plan`] lays a whole scenario out as a
//!   [`FaultPlan`]: every node start, scheduled fault action and the heal, in
//!   the order the simulator executes them (see [`FaultPlan::steps`]).

use std::time::Duration;

use super::{
    ClockOffset, DurationRange, FaultSpec, RecurringKind, ResolvedAnchor, Scenario, ValidScenario,
    DOWNSTREAM, LEASE_STORE,
};

// The hosts a fault names are the observation layer's (the engine maps them
// to endpoints without knowing of scenarios).
pub use crate::observation::{HostId, ServerId};

/// A partition, resolved: each group's hosts. A host in no group
/// *bridges* the split — it still reaches every group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    groups: Vec<Vec<HostId>>,
    text: String,
}

impl Partition {
    /// The groups, in the scenario's order, each host in the order written.
    pub fn groups(&self) -> &[Vec<HostId>] {
        &self.groups
    }

    /// The index of `host`'s group, or `None` for a host that bridges.
    pub fn group_of(&self, host: HostId) -> Option<usize> {
        // A host named twice (e.g. `lease-store` and another design's first
        // server's own name) belongs to the last group naming it.
        self.groups.iter().rposition(|group| group.contains(&host))
    }

    /// Whether the partition stops messages between `a` and `b` (both ways):
    /// they are in two different groups. A bridging host is separated from
    /// nobody.
    pub fn separates(&self, a: HostId, b: HostId) -> bool {
        matches!((self.group_of(a), self.group_of(b)), (Some(a), Some(b)) if a != b)
    }

    /// The groups as the scenario names them, for traces:
    /// `[node-a] | [lease-store]`.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// One primitive action of a fault. Each is an instruction to an executor,
/// which applies it to whatever the hosts are at that instant (the live
/// processes of a node, say); none decides anything the executor must
/// second-guess.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// A node's first process starts (its `start_at`), unless one is running
    /// already (a `replace` came first).
    StartNode {
        /// The node.
        node: u32,
    },
    /// The host handles nothing from now on: a node's live processes freeze
    /// (what reaches them queues, their timers fire late, on resume, in
    /// order), or a server does. Pauses nest.
    Pause {
        /// The host.
        host: HostId,
    },
    /// This fault's [`FaultAction::Pause`] ends: the processes (or the
    /// server) it paused resume, unless another pause holds them.
    Resume {
        /// The host.
        host: HostId,
    },
    /// Every link of the host goes down, both ways. Isolations nest.
    Isolate {
        /// The host.
        host: HostId,
    },
    /// This fault's [`FaultAction::Isolate`] ends.
    Reconnect {
        /// The host.
        host: HostId,
    },
    /// Messages from `from` stop reaching `to` (one direction of one link).
    Cut {
        /// The sender.
        from: HostId,
        /// The receiver.
        to: HostId,
    },
    /// This fault's [`FaultAction::Cut`] ends.
    Uncut {
        /// The sender.
        from: HostId,
        /// The receiver.
        to: HostId,
    },
    /// Hosts in different groups stop reaching each other (see
    /// [`Partition::separates`]). At most one partition is in effect at a
    /// time (validation refuses overlapping ones).
    Partition(Partition),
    /// The partition ends.
    EndPartition(Partition),
    /// Every live process of the node dies (its volatile state is lost).
    Crash {
        /// The node.
        node: u32,
    },
    /// Every live process of the node is told to stop gracefully (end the
    /// work, release the lease, exit); a paused process handles it on resume.
    Stop {
        /// The node.
        node: u32,
    },
    /// Every live process of the node is told that its work failed: a
    /// leader abdicates; a paused process handles it on resume.
    Abdicate {
        /// The node.
        node: u32,
    },
    /// A new process of the node starts beside any live one (a zombie's
    /// replacement: two lives of one node id).
    Replace {
        /// The node.
        node: u32,
    },
    /// A new process of the node starts — only if the fault's
    /// [`FaultAction::Crash`] or [`FaultAction::Stop`] found a live process,
    /// and only if the node has none now.
    Restart {
        /// The node.
        node: u32,
    },
    /// The server goes down for a restart: nothing reaches it or leaves it.
    ServerDown {
        /// The server.
        server: ServerId,
        /// Whether it will come back with its state.
        durable: bool,
    },
    /// The server is back: with its state (`durable`) or empty.
    ServerUp {
        /// The server.
        server: ServerId,
        /// Whether its state survived.
        durable: bool,
    },
    /// The host's clock steps by `by` (every process of a node shares it).
    ClockJump {
        /// The host.
        host: HostId,
        /// The step.
        by: ClockOffset,
    },
    /// Both of the host's clocks begin to slew by `by` over `over` of true
    /// time (a `clock-slew`).
    ClockSlew {
        /// The host.
        host: HostId,
        /// The correction.
        by: ClockOffset,
        /// How long it takes.
        over: Duration,
    },
    /// The host's wall clock strobes (a `clock-strobe`): it steps by `by`
    /// now, back after `period`, and so on — `flips` steps in all, an even
    /// number, so it ends where it began. The heal ends a strobe in
    /// progress (its clock steps back if it stands `by` off).
    ClockStrobe {
        /// The host.
        host: HostId,
        /// The flip's size.
        by: ClockOffset,
        /// The time between flips.
        period: Duration,
        /// How many steps.
        flips: u32,
    },
    /// The liveness phase begins (`heal_at`): every fault in effect ends,
    /// random loss and duplication stop, every node without a live process
    /// gets one, and no fault starts any more.
    Heal,
}

impl FaultAction {
    /// The action's name in [`std::fmt::Display`] and the docs' tables.
    pub fn kind_name(&self) -> &'static str {
        match self {
            FaultAction::StartNode { .. } => "start-node",
            FaultAction::Pause { .. } => "pause",
            FaultAction::Resume { .. } => "resume",
            FaultAction::Isolate { .. } => "isolate",
            FaultAction::Reconnect { .. } => "reconnect",
            FaultAction::Cut { .. } => "cut",
            FaultAction::Uncut { .. } => "uncut",
            FaultAction::Partition(_) => "partition",
            FaultAction::EndPartition(_) => "end-partition",
            FaultAction::Crash { .. } => "crash",
            FaultAction::Stop { .. } => "stop",
            FaultAction::Abdicate { .. } => "abdicate",
            FaultAction::Replace { .. } => "replace",
            FaultAction::Restart { .. } => "restart",
            FaultAction::ServerDown { .. } => "server-down",
            FaultAction::ServerUp { .. } => "server-up",
            FaultAction::ClockJump { .. } => "clock-jump",
            FaultAction::ClockSlew { .. } => "clock-slew",
            FaultAction::ClockStrobe { .. } => "clock-strobe",
            FaultAction::Heal => "heal",
        }
    }
}

/// One step of a host's wall clock that a clock fault makes: `by` ns at `at`
/// (from the start of the run). See [`FaultAction::wall_steps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallStep {
    /// When.
    pub at: Duration,
    /// By how much (positive: forward).
    pub by: i64,
    /// Whether the heal makes it: a strobe that stood off steps back then.
    pub by_heal: bool,
}

impl FaultAction {
    /// Whether the heal supersedes this follow-up when it falls due at or
    /// after `heal_at`: a fault's end (resume, reconnect, uncut, the end of
    /// a partition, a server back up) is the heal's then, and left out; a
    /// node's restart is not (it starts a process only for a node that has
    /// none then). The rule of [`ValidScenario::fault_plan`], and of the
    /// lab's anchored faults, whose follow-ups are placed as the run goes.
    pub fn ended_by_heal(&self) -> bool {
        !matches!(self, FaultAction::Restart { .. })
    }

    /// The wall-clock steps this action makes when it starts at `at`, in a
    /// run healed at `heal_at`: a `clock-jump` its one step; a
    /// `clock-strobe` its flips — `+by` at `at`, `-by` a `period` later,
    /// and so on, `flips` in all — up to the heal, which takes every flip
    /// due at or after it (the heal is scheduled before the run and a flip
    /// when its strobe runs, so at one instant the heal goes first) and
    /// steps the clock back if an odd number were made; no steps for any
    /// other action (a `clock-slew` is not a step). The simulator makes the same steps event by event
    /// (`Simulation::strobe_flip`, `heal_all`; `sim/tests/clock_faults.rs`
    /// checks the two agree); the lab makes these for real.
    pub fn wall_steps(&self, at: Duration, heal_at: Option<Duration>) -> Vec<WallStep> {
        let heal_at = heal_at.unwrap_or(Duration::MAX);
        let step = |at, by| WallStep {
            at,
            by,
            by_heal: false,
        };
        match *self {
            FaultAction::ClockJump { by, .. } => vec![step(at, by.0)],
            FaultAction::ClockStrobe {
                by, period, flips, ..
            } => {
                let mut steps = Vec::new();
                let mut when = at;
                for made in 0..flips {
                    if made > 0 && when >= heal_at {
                        if made % 2 == 1 {
                            steps.push(WallStep {
                                at: heal_at,
                                by: -by.0,
                                by_heal: true,
                            });
                        }
                        break;
                    }
                    steps.push(step(when, if made % 2 == 0 { by.0 } else { -by.0 }));
                    when = when.saturating_add(period);
                }
                steps
            }
            _ => Vec::new(),
        }
    }
}

/// What follows a fault's start, some time later.
#[derive(Clone, Debug, PartialEq)]
pub struct FollowUp {
    /// How long after the start.
    pub after: Duration,
    /// What: the fault's end ([`FaultAction::Resume`],
    /// [`FaultAction::Reconnect`], [`FaultAction::Uncut`],
    /// [`FaultAction::EndPartition`], [`FaultAction::ServerUp`]) or a node's
    /// [`FaultAction::Restart`].
    pub action: FaultAction,
}

/// One occurrence of a fault, resolved: a start action at `at` and
/// optionally what follows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedFault {
    /// When it starts, from the start of the run.
    pub at: Duration,
    /// What happens then.
    pub start: FaultAction,
    /// Its end or a restart, if it has one.
    pub follow_up: Option<FollowUp>,
}

impl ResolvedFault {
    fn new(at: Duration, start: FaultAction, follow_up: Option<(Duration, FaultAction)>) -> Self {
        ResolvedFault {
            at,
            start,
            follow_up: follow_up.map(|(after, action)| FollowUp { after, action }),
        }
    }

    /// A pause of `host` for `duration`.
    fn pause(host: HostId, at: Duration, duration: Duration) -> Self {
        let end = (duration, FaultAction::Resume { host });
        ResolvedFault::new(at, FaultAction::Pause { host }, Some(end))
    }

    /// An isolation of `host` for `duration`.
    fn isolate(host: HostId, at: Duration, duration: Duration) -> Self {
        let end = (duration, FaultAction::Reconnect { host });
        ResolvedFault::new(at, FaultAction::Isolate { host }, Some(end))
    }

    /// `start` (a crash or a stop of `node`), then a restart `restart_after`.
    fn down(node: u32, at: Duration, start: FaultAction, restart_after: Option<Duration>) -> Self {
        let restart = restart_after.map(|after| (after, FaultAction::Restart { node }));
        ResolvedFault::new(at, start, restart)
    }
}

/// A recurring fault, resolved: what each occurrence does, to which nodes,
/// how often. The simulator draws the occurrences (a Poisson process per
/// node, from the run's seed) and resolves each with
/// [`RecurringKind::occurrence`].
#[derive(Clone, Debug, PartialEq)]
pub struct RecurringFault {
    /// What each occurrence does.
    pub kind: RecurringKind,
    /// The nodes it recurs on, each independently, in scenario order.
    pub nodes: Vec<u32>,
    /// The mean interval between occurrences on one node.
    pub every: Duration,
    /// How long each occurrence lasts (for a crash: the restart delay).
    pub duration: DurationRange,
}

impl RecurringKind {
    /// The occurrence drawn at `at` on `node`, lasting `length`: resolved as
    /// the scheduled fault [`scheduled`](Self::scheduled) writes for it.
    pub fn occurrence(self, node: u32, at: Duration, length: Duration) -> ResolvedFault {
        let host = HostId::Node(node);
        match self {
            RecurringKind::Pause => ResolvedFault::pause(host, at, length),
            RecurringKind::Isolate => ResolvedFault::isolate(host, at, length),
            RecurringKind::Crash => {
                ResolvedFault::down(node, at, FaultAction::Crash { node }, Some(length))
            }
        }
    }

    /// The scheduled fault one occurrence on node `node` amounts to (what
    /// shrinking writes down, and what [`occurrence`](Self::occurrence)
    /// resolves like).
    pub fn scheduled(self, node: String, at: Duration, length: Duration) -> FaultSpec {
        match self {
            RecurringKind::Pause => FaultSpec::Pause {
                host: node,
                at,
                duration: length,
            },
            RecurringKind::Isolate => FaultSpec::Isolate {
                host: node,
                at,
                duration: length,
            },
            RecurringKind::Crash => FaultSpec::Crash {
                node,
                at,
                restart_after: Some(length),
            },
        }
    }
}

/// A fault, resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// A fault at a scheduled time.
    Scheduled(ResolvedFault),
    /// A fault the simulator draws as its run goes.
    Recurring(RecurringFault),
    /// A fault that begins when its anchor's event happens: `fault`'s
    /// actions, its start `anchor.delay` after the event (its `at` is the
    /// earliest instant the event counts, not when it begins).
    Anchored {
        /// What it waits for.
        anchor: ResolvedAnchor,
        /// What it does, once it begins.
        fault: ResolvedFault,
    },
}

/// The names a scenario's faults may use, and the hosts they name.
#[derive(Clone, Debug, PartialEq)]
pub struct HostNames {
    /// Another design's server names, by [`ServerId::Lock`] index (empty for
    /// the fenced protocol, whose servers have fixed names).
    servers: Vec<String>,
    nodes: Vec<String>,
}

impl HostNames {
    /// The hosts of `scenario`: its nodes and its protocol's servers.
    pub fn of(scenario: &Scenario) -> Self {
        HostNames {
            servers: scenario.election.protocol.server_names(),
            nodes: scenario.nodes.iter().map(|n| n.id.clone()).collect(),
        }
    }

    /// The host `name` names: one of the protocol's servers by its own name,
    /// `lease-store` (the first lock server), `downstream`, or a node.
    pub fn host(&self, name: &str) -> Option<HostId> {
        if let Some(index) = self.servers.iter().position(|s| s == name) {
            return Some(HostId::Server(ServerId::Lock(index as u16)));
        }
        match name {
            LEASE_STORE => Some(HostId::Server(ServerId::Lock(0))),
            DOWNSTREAM => Some(HostId::Server(ServerId::Downstream)),
            _ => self
                .nodes
                .iter()
                .position(|n| n == name)
                .map(|i| HostId::Node(i as u32)),
        }
    }

    /// The name of `host`, as traces write it.
    pub fn name(&self, host: HostId) -> &str {
        match host {
            HostId::Node(node) => &self.nodes[node as usize],
            HostId::Server(ServerId::Downstream) => DOWNSTREAM,
            HostId::Server(ServerId::Lock(index)) => self
                .servers
                .get(usize::from(index))
                .map_or(LEASE_STORE, String::as_str),
        }
    }

    fn known(&self, name: &str) -> Result<HostId, ResolveError> {
        self.host(name).ok_or_else(|| ResolveError::UnknownHost {
            name: name.to_string(),
        })
    }

    fn node(&self, name: &str) -> Result<u32, ResolveError> {
        match self.known(name)? {
            HostId::Node(node) => Ok(node),
            HostId::Server(_) => Err(ResolveError::NotANode {
                name: name.to_string(),
            }),
        }
    }

    fn server(&self, name: &str) -> Result<ServerId, ResolveError> {
        match self.known(name)? {
            HostId::Server(server) => Ok(server),
            HostId::Node(_) => Err(ResolveError::NotAServer {
                name: name.to_string(),
            }),
        }
    }
}

impl FaultSpec {
    /// What this fault does, in primitive actions, to the hosts of
    /// `scenario` (`hosts` are its [`HostNames`]). A restart's durability
    /// not given is the scenario's declaration (see
    /// [`Durability::of`](super::Durability::of)).
    ///
    /// # Errors
    /// A [`ResolveError`] if it names a host the scenario lacks, or a server
    /// where a node is needed (or the reverse); never for a fault of a
    /// [`ValidScenario`].
    pub fn resolve(
        &self,
        scenario: &Scenario,
        hosts: &HostNames,
    ) -> Result<Resolution, ResolveError> {
        let scheduled = match self {
            FaultSpec::Pause { host, at, duration } => {
                ResolvedFault::pause(hosts.known(host)?, *at, *duration)
            }
            FaultSpec::Isolate { host, at, duration } => {
                ResolvedFault::isolate(hosts.known(host)?, *at, *duration)
            }
            FaultSpec::Cut {
                from,
                to,
                at,
                duration,
            } => {
                let (from, to) = (hosts.known(from)?, hosts.known(to)?);
                let end = (*duration, FaultAction::Uncut { from, to });
                ResolvedFault::new(*at, FaultAction::Cut { from, to }, Some(end))
            }
            FaultSpec::Partition {
                groups,
                at,
                duration,
            } => {
                let partition = Partition {
                    groups: groups
                        .iter()
                        .map(|group| group.iter().map(|h| hosts.known(h)).collect())
                        .collect::<Result<_, _>>()?,
                    text: groups
                        .iter()
                        .map(|g| format!("[{}]", g.join(", ")))
                        .collect::<Vec<_>>()
                        .join(" | "),
                };
                let end = (*duration, FaultAction::EndPartition(partition.clone()));
                ResolvedFault::new(*at, FaultAction::Partition(partition), Some(end))
            }
            FaultSpec::Crash {
                node,
                at,
                restart_after,
            } => {
                let node = hosts.node(node)?;
                ResolvedFault::down(node, *at, FaultAction::Crash { node }, *restart_after)
            }
            FaultSpec::Stop {
                node,
                at,
                restart_after,
            } => {
                let node = hosts.node(node)?;
                ResolvedFault::down(node, *at, FaultAction::Stop { node }, *restart_after)
            }
            FaultSpec::Replace { node, at } => {
                let node = hosts.node(node)?;
                ResolvedFault::new(*at, FaultAction::Replace { node }, None)
            }
            FaultSpec::Abdicate { node, at } => {
                let node = hosts.node(node)?;
                ResolvedFault::new(*at, FaultAction::Abdicate { node }, None)
            }
            FaultSpec::Restart {
                host,
                at,
                duration,
                durable,
            } => {
                let server = hosts.server(host)?;
                let durable = durable.unwrap_or_else(|| scenario.durability.of(host));
                let end = (*duration, FaultAction::ServerUp { server, durable });
                ResolvedFault::new(*at, FaultAction::ServerDown { server, durable }, Some(end))
            }
            FaultSpec::ClockJump { host, at, by } => {
                let host = hosts.known(host)?;
                ResolvedFault::new(*at, FaultAction::ClockJump { host, by: *by }, None)
            }
            FaultSpec::ClockSlew { host, at, by, rate } => {
                let host = hosts.known(host)?;
                let over = super::slew_duration(*by, *rate);
                ResolvedFault::new(
                    *at,
                    FaultAction::ClockSlew {
                        host,
                        by: *by,
                        over,
                    },
                    None,
                )
            }
            FaultSpec::ClockStrobe {
                host,
                at,
                by,
                period,
                duration,
            } => {
                let host = hosts.known(host)?;
                let flips = super::strobe_flips(*period, *duration);
                let strobe = FaultAction::ClockStrobe {
                    host,
                    by: *by,
                    period: *period,
                    flips,
                };
                ResolvedFault::new(*at, strobe, None)
            }
            FaultSpec::Anchored { when, fault } => {
                let Resolution::Scheduled(fault) = fault.resolve(scenario, hosts)? else {
                    return Err(ResolveError::AnchoredRecurring);
                };
                let node = when.node.as_deref().map(|n| hosts.node(n)).transpose()?;
                let anchor = ResolvedAnchor {
                    event: when.event,
                    node,
                    token: when.token,
                    not_before: fault.at,
                    delay: when.delay,
                };
                return Ok(Resolution::Anchored { anchor, fault });
            }
            FaultSpec::Recurring {
                kind,
                node,
                every,
                duration,
            } => {
                let nodes = match node {
                    Some(name) => vec![hosts.node(name)?],
                    None => (0..scenario.nodes.len() as u32).collect(),
                };
                return Ok(Resolution::Recurring(RecurringFault {
                    kind: *kind,
                    nodes,
                    every: *every,
                    duration: *duration,
                }));
            }
        };
        Ok(Resolution::Scheduled(scheduled))
    }
}

/// Why a [`PlanStep`] is in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepCause {
    /// A node's `start_at`.
    Start,
    /// The scenario's `[[fault]]` number `index` (0-based).
    Fault(usize),
    /// `heal_at`.
    Heal,
}

/// One action at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanStep {
    /// When, from the start of the run.
    pub at: Duration,
    /// Why.
    pub cause: StepCause,
    /// What.
    pub action: FaultAction,
}

/// A scenario's node starts, faults and heal as primitive actions at
/// instants: what the simulator executes in virtual time and the lab for
/// real. Made by [`ValidScenario::fault_plan`].
#[derive(Clone, Debug, PartialEq)]
pub struct FaultPlan {
    hosts: HostNames,
    faults: Vec<Resolution>,
    steps: Vec<PlanStep>,
}

impl FaultPlan {
    /// Every step before the run's end, in the order the simulator executes
    /// them (see [`ValidScenario::fault_plan`] for the rules).
    pub fn steps(&self) -> &[PlanStep] {
        &self.steps
    }

    /// Each `[[fault]]` of the scenario resolved, by index — also those
    /// whose steps the heal or the run's end leave out.
    pub fn faults(&self) -> &[Resolution] {
        &self.faults
    }

    /// The names of the scenario's hosts.
    pub fn hosts(&self) -> &HostNames {
        &self.hosts
    }
}

/// Where a step falls among those at its instant: the simulator's event
/// queue orders one instant's events by when they were scheduled. Node
/// starts, fault starts and the heal are scheduled before the run, in that
/// order (file order within each); an end or a restart is scheduled when
/// its fault starts, so it comes after every step scheduled before the run,
/// ordered by its fault's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// Scheduled before the run: its place in that order.
    Initial(usize),
    /// Scheduled when the fault of rank `.1` started at `.0`.
    FollowUp(Duration, usize),
}

impl ValidScenario {
    /// The scenario's node starts, faults and heal as one [`FaultPlan`].
    ///
    /// The steps are those the simulator executes, in its order:
    ///
    /// 1. by instant; steps at or after the run's end are left out;
    /// 2. at one instant, node starts (scenario order), then fault starts
    ///    (file order), then the heal, then ends and restarts (by their
    ///    fault's start, then file order);
    /// 3. after `heal_at` no fault starts (one at exactly `heal_at` starts
    ///    just before the heal); an end at or after `heal_at` is the heal's
    ///    (left out); a restart stays (it starts a process only for a node
    ///    that has none then).
    ///
    /// Recurring and anchored faults have no steps here: when they begin
    /// is known only as the run goes (see [`FaultPlan::faults`]).
    pub fn fault_plan(&self) -> FaultPlan {
        let scenario = self.scenario();
        let hosts = HostNames::of(scenario);
        let faults: Vec<Resolution> = scenario
            .faults
            .iter()
            .map(|fault| {
                fault
                    .resolve(scenario, &hosts)
                    .expect("validation checks every host a fault names")
            })
            .collect();
        let mut steps: Vec<(Duration, Rank, PlanStep)> = Vec::new();
        let mut push = |at: Duration, rank: Rank, cause: StepCause, action: FaultAction| {
            steps.push((at, rank, PlanStep { at, cause, action }));
        };
        let nodes = scenario.nodes.len();
        for (node, spec) in scenario.nodes.iter().enumerate() {
            let action = FaultAction::StartNode { node: node as u32 };
            push(spec.start_at, Rank::Initial(node), StepCause::Start, action);
        }
        let heal_at = scenario.heal_at.unwrap_or(Duration::MAX);
        for (index, fault) in faults.iter().enumerate() {
            let Resolution::Scheduled(fault) = fault else {
                continue;
            };
            if fault.at > heal_at {
                continue;
            }
            let (cause, rank) = (StepCause::Fault(index), nodes + index);
            push(fault.at, Rank::Initial(rank), cause, fault.start.clone());
            if let Some(follow) = &fault.follow_up {
                let at = fault.at.saturating_add(follow.after);
                if !(follow.action.ended_by_heal() && at >= heal_at) {
                    let rank = Rank::FollowUp(fault.at, rank);
                    push(at, rank, cause, follow.action.clone());
                }
            }
        }
        if let Some(heal_at) = scenario.heal_at {
            let rank = Rank::Initial(nodes + faults.len());
            push(heal_at, rank, StepCause::Heal, FaultAction::Heal);
        }
        steps.retain(|(at, _, _)| *at < scenario.duration);
        steps.sort_by_key(|(at, rank, _)| (*at, *rank));
        FaultPlan {
            hosts,
            faults,
            steps: steps.into_iter().map(|(_, _, step)| step).collect(),
        }
    }
}

#[path = "resolve_error.rs"]
mod error;
pub use error::ResolveError;

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
