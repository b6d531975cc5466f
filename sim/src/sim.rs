//! The simulation: hosts, their clocks, the network, faults, and the loop.
//!
//! # Hosts
//!
//! * `lease-store`: a [`LeaseStore`] and a [`NodeRegistry`]; its clock reads
//!   true time and is the arbiter of expiry.
//! * `downstream`: a [`FencedStore`] (or an unfenced one).
//! * each node runs *processes*; a process is one life (incarnation) of the
//!   node, with its own owner identity `node#n`. A process runs an [`Elector`]
//!   for the role, a heartbeat loop, and the worker: while it holds token `T`
//!   it starts a unit of work every `write_interval`, checking leadership at
//!   the start; the unit takes `work_duration`, then a write stamped `T` goes
//!   to the downstream. A pause inside a unit delays that write until the
//!   process resumes — the stalled leader's late write.
//!
//! # Faults
//!
//! A paused host handles nothing: events addressed to it (messages and timers)
//! queue, and on resume they are handled in their original order at the resume
//! time. Network faults act on links; a message is dropped if its link is down
//! when it is sent or when it would arrive. A crash kills a node's processes
//! (volatile state is lost; events addressed to them are dropped); a restart
//! starts a new incarnation as a follower.

use std::io::Write;
use std::mem;
use std::time::Duration;

use fenced::{
    Elector, ElectorConfig, ElectorOutput, FencedStore, Fencing, FencingToken, LeaseResult,
    LeaseStore, LeaseStoreConfig, MembershipChange, NodeId, NodeRegistry, OwnerId, ReleaseResult,
    RequestId, ResourceId, Role, StepDownReason,
};
use rand_chacha::ChaCha8Rng;

use crate::checker::{Checker, CheckerSettings};
use crate::clock::HostClock;
use crate::expect::evaluate;
use crate::limits::{
    estimated_events, Halt, DEFAULT_MAX_EVENTS, MAX_DEFERRED_MESSAGES, MAX_EVENTS_LIMIT,
    MAX_PENDING_EVENTS,
};
use crate::network::{
    Network, Transit, BRIDGE, DOWNSTREAM_ENDPOINT, FIRST_NODE_ENDPOINT, STORE_ENDPOINT,
};
use crate::observation::{
    DropReason, HostRef, MessageKind, NodeRef, Observation, Observer, ProcessId, ProcessRef,
    SimTime, Skipped,
};
use crate::queue::EventQueue;
use crate::report::{Report, UnjudgedWrite, UnjudgedWrites, MAX_UNJUDGED_LISTED};
use crate::rng::{exponential_nanos, uniform_inclusive, SeedDeriver};
use crate::scenario::{
    DurationRange, Expectations, FaultSpec, RecurringKind, Scenario, ScenarioError, DOWNSTREAM,
    LEASE_STORE,
};
use crate::timeline::{Recorder, Timeline};
use crate::trace::Tracer;
use crate::units::{human, ms, nanos};

#[cfg(feature = "planted-bugs")]
use fenced::PlantedBug;

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    Store,
    Downstream,
    Process { pid: u32, incarnation: u32 },
}

#[derive(Clone, Debug)]
enum Message {
    LeaseRequest {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        id: RequestId,
        ttl: Duration,
    },
    LeaseResponse {
        id: RequestId,
        result: LeaseResult,
    },
    LeaseFailed {
        id: RequestId,
    },
    Release {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        token: FencingToken,
    },
    Heartbeat {
        pid: u32,
        node: u32,
    },
    Write {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        token: FencingToken,
        unit: u64,
    },
}

impl Message {
    /// The process slot that sent it, where the message says.
    fn sender(&self) -> Option<u32> {
        match *self {
            Message::LeaseRequest { pid, .. }
            | Message::Release { pid, .. }
            | Message::Heartbeat { pid, .. }
            | Message::Write { pid, .. } => Some(pid),
            _ => None,
        }
    }

    /// Whether it is the store's answer renewing a lease.
    fn is_renewal_answer(&self) -> bool {
        matches!(
            self,
            Message::LeaseResponse {
                result: LeaseResult::Renewed { .. },
                ..
            }
        )
    }

    fn kind(&self) -> MessageKind {
        match self {
            Message::LeaseRequest { .. } => MessageKind::LeaseRequest,
            Message::LeaseResponse { .. } => MessageKind::LeaseResponse,
            Message::LeaseFailed { .. } => MessageKind::LeaseFailed,
            Message::Release { .. } => MessageKind::Release,
            Message::Heartbeat { .. } => MessageKind::Heartbeat,
            Message::Write { .. } => MessageKind::Write,
        }
    }
}

#[derive(Clone, Debug)]
enum Event {
    Deliver {
        from: u16,
        to: Dest,
        msg: Message,
    },
    ElectorTimer {
        pid: u32,
        incarnation: u32,
        generation: u32,
    },
    HeartbeatTimer {
        pid: u32,
        incarnation: u32,
    },
    WorkTimer {
        pid: u32,
        incarnation: u32,
        generation: u32,
    },
    WorkDone {
        pid: u32,
        incarnation: u32,
        token: FencingToken,
        unit: u64,
    },
    RegistryTimer {
        generation: u32,
    },
    StartNode {
        node: u32,
    },
    FaultStart {
        fault: u32,
    },
    FaultEnd {
        active: u32,
    },
    Recur {
        generator: u32,
    },
    Restart {
        node: u32,
    },
    Heal,
}

/// Who an event is for, for pausing and for dropping events of dead processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Store,
    Downstream,
    Process { pid: u32, incarnation: u32 },
    Engine,
}

impl Event {
    fn target(&self) -> Target {
        match *self {
            Event::Deliver { to, .. } => match to {
                Dest::Store => Target::Store,
                Dest::Downstream => Target::Downstream,
                Dest::Process { pid, incarnation } => Target::Process { pid, incarnation },
            },
            Event::ElectorTimer {
                pid, incarnation, ..
            }
            | Event::HeartbeatTimer { pid, incarnation }
            | Event::WorkTimer {
                pid, incarnation, ..
            }
            | Event::WorkDone {
                pid, incarnation, ..
            } => Target::Process { pid, incarnation },
            Event::RegistryTimer { .. } => Target::Store,
            Event::StartNode { .. }
            | Event::FaultStart { .. }
            | Event::FaultEnd { .. }
            | Event::Recur { .. }
            | Event::Restart { .. }
            | Event::Heal => Target::Engine,
        }
    }
}

#[derive(Debug)]
struct Node {
    id: NodeId,
    endpoint: u16,
    clock: HostClock,
    /// Slots in `procs` this node has used (alive or dead, reused on restart).
    pids: Vec<u32>,
    next_incarnation: u32,
}

#[derive(Debug)]
struct Process {
    node: u32,
    incarnation: u32,
    owner: OwnerId,
    alive: bool,
    pause_depth: u32,
    deferred: Vec<Event>,
    elector: Elector,
    timer_at: Option<u64>,
    timer_generation: u32,
    work_generation: u32,
    next_unit: u64,
    /// The token of the term the process believes it holds (from StartWork
    /// to StopWork); the worker writes with it.
    believed: Option<FencingToken>,
    clock: HostClock,
}

#[derive(Debug)]
struct Server<S> {
    state: S,
    pause_depth: u32,
    deferred: Vec<Event>,
}

impl<S> Server<S> {
    fn new(state: S) -> Self {
        Server {
            state,
            pause_depth: 0,
            deferred: Vec::new(),
        }
    }
}

#[derive(Debug)]
struct StoreState {
    leases: LeaseStore,
    registry: NodeRegistry,
    registry_timer_at: Option<u64>,
    registry_generation: u32,
}

/// The nodes and processes, and how traces and the checker name them.
#[derive(Debug)]
struct Hosts {
    nodes: Vec<Node>,
    procs: Vec<Process>,
}

impl Hosts {
    fn node_index(&self, name: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| n.id.as_str() == name)
            .map(|i| i as u32)
    }

    fn endpoint_of_host(&self, name: &str) -> Option<u16> {
        match name {
            LEASE_STORE => Some(STORE_ENDPOINT),
            DOWNSTREAM => Some(DOWNSTREAM_ENDPOINT),
            _ => self
                .node_index(name)
                .map(|i| self.nodes[i as usize].endpoint),
        }
    }

    fn node_ref(&self, node: u32) -> NodeRef<'_> {
        NodeRef {
            index: node,
            id: &self.nodes[node as usize].id,
        }
    }

    /// The process now in slot `pid`.
    fn process_ref(&self, pid: u32) -> ProcessRef<'_> {
        let p = &self.procs[pid as usize];
        ProcessRef {
            id: ProcessId(pid),
            node: self.node_ref(p.node),
            incarnation: p.incarnation,
            owner: &p.owner,
        }
    }

    /// The sender of a message from process slot `pid`, named by the owner
    /// and incarnation the message carries: the slot may hold a newer
    /// incarnation by the time the message lands (a slot is reused only by
    /// the same node).
    fn sender_ref<'a>(&'a self, pid: u32, incarnation: u32, owner: &'a OwnerId) -> ProcessRef<'a> {
        ProcessRef {
            id: ProcessId(pid),
            node: self.node_ref(self.procs[pid as usize].node),
            incarnation,
            owner,
        }
    }

    /// A host by endpoint: the lease store, the downstream, or a node.
    fn endpoint_ref(&self, endpoint: u16) -> HostRef<'_> {
        match endpoint {
            STORE_ENDPOINT => HostRef::LeaseStore,
            DOWNSTREAM_ENDPOINT => HostRef::Downstream,
            e => HostRef::Node(self.node_ref(u32::from(e - FIRST_NODE_ENDPOINT))),
        }
    }

    fn dest_ref(&self, to: Dest) -> HostRef<'_> {
        match to {
            Dest::Store => HostRef::LeaseStore,
            Dest::Downstream => HostRef::Downstream,
            Dest::Process { pid, .. } => HostRef::Process(self.process_ref(pid)),
        }
    }

    fn dest_endpoint(&self, to: Dest) -> u16 {
        match to {
            Dest::Store => STORE_ENDPOINT,
            Dest::Downstream => DOWNSTREAM_ENDPOINT,
            Dest::Process { pid, .. } => {
                self.nodes[self.procs[pid as usize].node as usize].endpoint
            }
        }
    }
}

/// The consumers of the observation stream: the tracer (always), the checker
/// (always) and the timeline recorder (when asked for).
#[derive(Debug)]
struct Observers {
    tracer: Tracer,
    checker: Checker,
    timeline: Option<Box<Recorder>>,
}

impl Observers {
    /// Hands `observation`, which happened at true time `now`, to every
    /// observer.
    #[inline]
    fn emit(&mut self, now: u64, observation: &Observation<'_>) {
        let at = SimTime::from_nanos(now);
        self.tracer.observe(at, observation);
        self.checker.observe(at, observation);
        if let Some(t) = self.timeline.as_mut() {
            t.observe(at, observation);
        }
    }
}

/// A fault in effect, to undo when it ends.
#[derive(Debug)]
enum ActiveFault {
    PauseProcesses(Vec<(u32, u32)>),
    PauseStore,
    PauseDownstream,
    Isolate(u16),
    Cut(u16, u16),
    Partition { text: String, members: Vec<u16> },
}

/// A recurring fault on one node, with its own RNG stream.
#[derive(Debug)]
struct Generator {
    kind: RecurringKind,
    node: u32,
    every: u64,
    duration: DurationRange,
    rng: ChaCha8Rng,
}

/// Options of one run that are not part of the scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// A deliberate bug to plant in the state machines (negative controls).
    #[cfg(feature = "planted-bugs")]
    pub planted_bug: Option<PlantedBug>,
    /// The most events the run may handle (`None`:
    /// [`DEFAULT_MAX_EVENTS`]); at most [`MAX_EVENTS_LIMIT`]. A run that
    /// reaches it stops with [`Halt::EventBudget`].
    pub max_events: Option<u64>,
}

impl RunOptions {
    /// Options that run with `seed` instead of the scenario's (or with the
    /// scenario's own, for `None`) and nothing else changed.
    pub fn with_seed(seed: Option<u64>) -> Self {
        // Written out field by field so the same code is lint-clean with and
        // without the `planted-bugs` field.
        RunOptions {
            seed,
            #[cfg(feature = "planted-bugs")]
            planted_bug: None,
            max_events: None,
        }
    }

    /// The event budget in effect.
    pub fn event_budget(&self) -> u64 {
        self.max_events.unwrap_or(DEFAULT_MAX_EVENTS)
    }
}

/// A deterministic simulation of one scenario and seed.
///
/// ```
/// use std::time::Duration;
/// use fenced_sim::{FaultSpec, RunOptions, Scenario, Simulation};
///
/// let mut scenario = Scenario::new("pause-demo", Duration::from_secs(120))
///     .with_nodes(["node-a", "node-b"]);
/// // node-a asks first and leads; then it stalls for 40 s inside a unit of work.
/// scenario.nodes[1].start_at = Duration::from_secs(1);
/// let scenario = scenario.with_fault(FaultSpec::Pause {
///         host: "node-a".into(),
///         at: Duration::from_millis(12_020),
///         duration: Duration::from_secs(40),
///     });
/// let mut sim = Simulation::new(&scenario, RunOptions::default())?;
/// sim.run_to_end();
/// let report = sim.report();
/// assert!(report.violations.is_empty());
/// assert_eq!(report.leader_changes, 1);
/// assert_eq!(report.writes.rejected_stale, 1); // the paused leader's late write
/// # Ok::<(), fenced_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
pub struct Simulation {
    name: String,
    seed: u64,
    end: u64,
    now: u64,
    events: u64,
    max_events: u64,
    /// Why the run stopped early, if it did; nothing runs after that.
    halt: Option<Halt>,
    queue: EventQueue<Event>,
    net: Network,
    role: Role,
    resource: ResourceId,
    scenario: Scenario,
    heartbeat_ns: u64,
    write_interval: Duration,
    work_duration: Duration,
    seeds: SeedDeriver,
    store: Server<StoreState>,
    downstream: Server<FencedStore<u64>>,
    hosts: Hosts,
    active: Vec<Option<ActiveFault>>,
    active_free: Vec<u32>,
    generators: Vec<Generator>,
    observers: Observers,
    expect: Expectations,
    /// Set once the liveness phase has begun (see [`Scenario::heal_at`]).
    healed: bool,
    /// Every recurring fault that fired, as a scheduled fault, when asked for.
    recurring_log: Option<Vec<FaultSpec>>,
    #[cfg(feature = "planted-bugs")]
    planted_bug: Option<PlantedBug>,
}

impl Simulation {
    /// Validates `scenario` and sets up a run at time zero. Nothing happens
    /// until one of the `run_*` methods is called.
    ///
    /// # Errors
    /// The first [`ScenarioError`] found by [`Scenario::validate`]; an event
    /// budget above [`MAX_EVENTS_LIMIT`] or zero (key `--max-events`); or a
    /// scenario whose [`estimated_events`] already exceed the budget (named
    /// by the key most responsible).
    pub fn new(scenario: &Scenario, options: RunOptions) -> Result<Self, ScenarioError> {
        scenario.validate()?;
        let max_events = options.event_budget();
        if max_events == 0 || max_events > MAX_EVENTS_LIMIT {
            return Err(ScenarioError::new(
                "--max-events",
                format!("{max_events} is outside 1..={MAX_EVENTS_LIMIT}"),
            ));
        }
        let (estimate, key) = estimated_events(scenario);
        if estimate > u128::from(max_events) {
            return Err(ScenarioError::new(
                key.clone(),
                format!(
                    "this run would handle at least about {estimate} events ({} nodes over {}), \
                     more than the budget of {max_events}; lengthen {key}, shorten `duration`, \
                     or raise the budget with --max-events (at most {MAX_EVENTS_LIMIT})",
                    scenario.nodes.len(),
                    human(scenario.duration)
                ),
            ));
        }
        let seed = options.seed.unwrap_or(scenario.seed);
        let seeds = SeedDeriver::new(seed, "fenced-sim");
        let role = scenario.role()?;
        let resource = scenario.resource()?;
        let registry = NodeRegistry::new(scenario.membership.liveness_ttl)
            .map_err(|e| ScenarioError::new("membership.liveness_ttl", e.to_string()))?;
        let store_config = LeaseStoreConfig::new(LeaseStoreConfig::DEFAULT_MAX_TTL)
            .map_err(|e| ScenarioError::new("election.lease_ttl", e.to_string()))?;
        let endpoints = usize::from(FIRST_NODE_ENDPOINT) + scenario.nodes.len();
        if endpoints > usize::from(u16::MAX) {
            return Err(ScenarioError::new(
                "node",
                "at most 65 000 nodes are supported",
            ));
        }
        let net = Network::new(
            endpoints,
            (
                nanos(scenario.network.latency.0),
                nanos(scenario.network.latency.1),
            ),
            scenario.network.loss,
            scenario.network.duplicate,
            seeds.str("network").rng(),
        );
        let mut nodes = Vec::with_capacity(scenario.nodes.len());
        for (i, spec) in scenario.nodes.iter().enumerate() {
            let id = NodeId::new(&spec.id)
                .map_err(|e| ScenarioError::new(format!("node[{i}].id"), e.to_string()))?;
            nodes.push(Node {
                id,
                endpoint: FIRST_NODE_ENDPOINT + i as u16,
                clock: HostClock::new(spec.clock_offset.0, spec.clock_drift),
                pids: Vec::new(),
                next_incarnation: 1,
            });
        }
        let fencing = if scenario.fencing {
            Fencing::Enforced
        } else {
            Fencing::Disabled
        };
        let mut sim = Simulation {
            name: scenario.name.clone(),
            seed,
            end: nanos(scenario.duration),
            now: 0,
            events: 0,
            max_events,
            halt: None,
            queue: EventQueue::new(),
            net,
            role,
            resource,
            scenario: scenario.clone(),
            heartbeat_ns: nanos(scenario.membership.heartbeat_interval),
            write_interval: scenario.work.write_interval,
            work_duration: scenario.work.work_duration,
            seeds,
            store: Server::new(StoreState {
                leases: LeaseStore::new(store_config),
                registry,
                registry_timer_at: None,
                registry_generation: 0,
            }),
            downstream: Server::new(FencedStore::new(fencing)),
            hosts: Hosts {
                nodes,
                procs: Vec::new(),
            },
            active: Vec::new(),
            active_free: Vec::new(),
            generators: Vec::new(),
            observers: Observers {
                tracer: Tracer::new(),
                checker: Checker::new(CheckerSettings::of(scenario)),
                timeline: None,
            },
            expect: scenario.expect.clone(),
            healed: false,
            recurring_log: None,
            #[cfg(feature = "planted-bugs")]
            planted_bug: options.planted_bug,
        };
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = options.planted_bug {
            sim.store.state.leases.plant(bug);
            sim.downstream.state.plant(bug);
        }
        for (i, spec) in scenario.nodes.iter().enumerate() {
            sim.queue
                .push(nanos(spec.start_at), Event::StartNode { node: i as u32 });
        }
        for i in 0..scenario.faults.len() {
            sim.schedule_fault(i)?;
        }
        if let Some(heal_at) = scenario.heal_at {
            sim.queue.push(nanos(heal_at), Event::Heal);
        }
        Ok(sim)
    }

    fn schedule_fault(&mut self, index: usize) -> Result<(), ScenarioError> {
        let fault = &self.scenario.faults[index];
        if let FaultSpec::Recurring {
            kind,
            node,
            every,
            duration,
        } = fault
        {
            let targets: Vec<u32> = match node {
                Some(name) => vec![self.hosts.node_index(name).ok_or_else(|| {
                    ScenarioError::new(
                        format!("fault[{index}].node"),
                        format!("unknown node `{name}`"),
                    )
                })?],
                None => (0..self.hosts.nodes.len() as u32).collect(),
            };
            for node in targets {
                let rng = self
                    .seeds
                    .str("recurring-fault")
                    .num(index as u64)
                    .str(self.hosts.nodes[node as usize].id.as_str())
                    .rng();
                let generator = Generator {
                    kind: *kind,
                    node,
                    every: nanos(*every),
                    duration: *duration,
                    rng,
                };
                let id = self.generators.len() as u32;
                self.generators.push(generator);
                let g = &mut self.generators[id as usize];
                let first = exponential_nanos(&mut g.rng, g.every);
                self.queue.push(
                    self.now.saturating_add(first),
                    Event::Recur { generator: id },
                );
            }
        } else if let Some((at, _)) = fault.window() {
            self.queue.push(
                nanos(at).max(self.now),
                Event::FaultStart {
                    fault: index as u32,
                },
            );
        }
        Ok(())
    }

    /// Adds a fault to a simulation in progress (scripting). Its times are
    /// absolute; a start already in the past happens at the current time.
    ///
    /// # Errors
    /// A [`ScenarioError`] if the fault names unknown hosts or is malformed.
    pub fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError> {
        let mut candidate = self.scenario.clone();
        candidate.faults.push(fault);
        candidate.validate()?;
        self.scenario = candidate;
        self.schedule_fault(self.scenario.faults.len() - 1)
    }

    /// Records every recurring fault that fires from now on as the scheduled
    /// fault it amounts to (see [`recurring_faults`](Self::recurring_faults)):
    /// what shrinking needs to turn seed-drawn faults into a fixed schedule.
    /// Off by default, because the log grows with the run.
    pub fn record_recurring_faults(&mut self) {
        self.recurring_log.get_or_insert_with(Vec::new);
    }

    /// The recurring faults that fired since
    /// [`record_recurring_faults`](Self::record_recurring_faults), in order.
    pub fn recurring_faults(&self) -> &[FaultSpec] {
        self.recurring_log.as_deref().unwrap_or(&[])
    }

    /// Records a [`Timeline`] (truth of the lease, faults per host, writes,
    /// grants, membership) from now on, for pictures. Off by default: it
    /// grows with the run.
    pub fn record_timeline(&mut self) {
        if self.observers.timeline.is_none() {
            let nodes = self.hosts.nodes.iter().map(|n| n.id.to_string()).collect();
            self.observers.timeline = Some(Box::new(Recorder::new(nodes)));
        }
    }

    /// The timeline recorded since [`record_timeline`](Self::record_timeline),
    /// closed at the current time, or `None` if none was recorded.
    pub fn timeline(&self) -> Option<Timeline> {
        self.observers
            .timeline
            .as_ref()
            .map(|r| r.snapshot(self.now))
    }

    /// Writes the text trace (one line per event) to `out` from now on.
    pub fn set_trace_writer(&mut self, out: Box<dyn Write + Send>) {
        self.observers.tracer.set_writer(out);
    }

    /// Flushes the trace writer and reports the first error writing it.
    ///
    /// # Errors
    /// The first I/O error of the trace writer.
    pub fn finish_trace(&mut self) -> std::io::Result<()> {
        self.observers.tracer.finish()
    }

    /// The current true time.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.now)
    }

    /// The run's end (the scenario's duration).
    pub fn end(&self) -> Duration {
        Duration::from_nanos(self.end)
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events scheduled and not yet processed (messages in flight, timers,
    /// faults): with the hosts, what the simulation's memory is made of.
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }

    /// The trace hash so far.
    pub fn trace_hash(&self) -> u64 {
        self.observers.tracer.hash()
    }

    /// Runs every event before `until` (capped at the run's end); the clock
    /// then reads `until` — unless the run halts on a limit first (see
    /// [`halted`](Self::halted)), after which nothing runs and the clock stays
    /// where the halt found it.
    pub fn run_until(&mut self, until: Duration) {
        if self.halt.is_some() {
            return;
        }
        let until = nanos(until).min(self.end);
        while let Some(time) = self.queue.peek_time() {
            if time >= until {
                break;
            }
            if self.events >= self.max_events {
                self.halt = Some(Halt::EventBudget {
                    max_events: self.max_events,
                    at: Duration::from_nanos(self.now),
                    duration: Duration::from_nanos(self.end),
                });
                return;
            }
            let Some((time, event)) = self.queue.pop() else {
                break;
            };
            debug_assert!(time >= self.now, "time never runs backwards");
            self.now = time;
            self.dispatch(event);
            if self.queue.len() > MAX_PENDING_EVENTS {
                self.halt = Some(Halt::TooManyPending {
                    pending: self.queue.len(),
                    at: Duration::from_nanos(self.now),
                });
                return;
            }
        }
        self.now = self.now.max(until);
    }

    /// Why the run stopped before its end, if it did: a limit of
    /// [`crate::limits`] was reached. The report then covers only the time
    /// simulated, and tools treat the run as bad input.
    pub fn halted(&self) -> Option<&Halt> {
        self.halt.as_ref()
    }

    /// Runs to the scenario's duration.
    pub fn run_to_end(&mut self) {
        self.run_until(Duration::from_nanos(self.end));
    }

    /// Runs until the cluster is quiescent — no fault active right now (one
    /// scheduled for later may still start), one process leads, and the
    /// downstream accepted its token recently — or until `limit`.
    /// Returns whether it converged.
    pub fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        let limit = nanos(limit).min(self.end);
        let step = nanos(self.scenario.work.write_interval).max(1_000_000);
        while self.now < limit && self.halt.is_none() {
            let next = self.now.saturating_add(step).min(limit);
            self.run_until(Duration::from_nanos(next));
            if self.is_quiescent() {
                return true;
            }
        }
        self.is_quiescent()
    }

    fn is_quiescent(&self) -> bool {
        self.active.iter().all(Option::is_none) && self.leader_at_end()
    }

    // ----- the loop -----

    fn is_stale(&self, event: &Event) -> bool {
        match *event {
            Event::ElectorTimer {
                pid, generation, ..
            } => self.hosts.procs[pid as usize].timer_generation != generation,
            Event::WorkTimer {
                pid, generation, ..
            } => self.hosts.procs[pid as usize].work_generation != generation,
            Event::RegistryTimer { generation } => {
                self.store.state.registry_generation != generation
            }
            _ => false,
        }
    }

    fn dispatch(&mut self, event: Event) {
        // A superseded timer is dropped silently: it is not an event.
        if self.is_stale(&event) {
            return;
        }
        // A message whose link went down while it was in flight is lost.
        if let Event::Deliver { from, to, ref msg } = event {
            let to_endpoint = self.hosts.dest_endpoint(to);
            if !self.net.link_up(from, to_endpoint) {
                self.dropped(from, to, msg, DropReason::LinkDown);
                return;
            }
        }
        match event.target() {
            Target::Store if self.store.pause_depth > 0 => {
                let deferred = &mut self.store.deferred;
                if let Some(event) = Self::defer(deferred, event) {
                    self.drop_deferred(event);
                }
            }
            Target::Downstream if self.downstream.pause_depth > 0 => {
                let deferred = &mut self.downstream.deferred;
                if let Some(event) = Self::defer(deferred, event) {
                    self.drop_deferred(event);
                }
            }
            Target::Process { pid, incarnation } => {
                let p = &mut self.hosts.procs[pid as usize];
                if !p.alive || p.incarnation != incarnation {
                    if let Event::Deliver { from, to, ref msg } = event {
                        self.dropped(from, to, msg, DropReason::ProcessGone);
                    }
                } else if p.pause_depth > 0 {
                    if let Some(event) = Self::defer(&mut p.deferred, event) {
                        self.drop_deferred(event);
                    }
                } else {
                    self.handle(event);
                }
            }
            _ => self.handle(event),
        }
    }

    /// Queues `event` at a paused host; hands a message back when the host
    /// already holds [`MAX_DEFERRED_MESSAGES`] (timers always queue: a
    /// paused host has only a few).
    fn defer(deferred: &mut Vec<Event>, event: Event) -> Option<Event> {
        if matches!(event, Event::Deliver { .. }) && deferred.len() >= MAX_DEFERRED_MESSAGES {
            return Some(event);
        }
        deferred.push(event);
        None
    }

    /// Drops a message that a paused host had no room to queue.
    fn drop_deferred(&mut self, event: Event) {
        if let Event::Deliver { from, to, ref msg } = event {
            self.dropped(from, to, msg, DropReason::QueueFull);
        }
    }

    fn handle(&mut self, event: Event) {
        self.events += 1;
        match event {
            Event::Deliver { to, msg, .. } => match to {
                Dest::Store => self.store_receive(msg),
                Dest::Downstream => self.downstream_receive(msg),
                Dest::Process { pid, .. } => self.process_receive(pid, msg),
            },
            Event::ElectorTimer { pid, .. } => {
                self.hosts.procs[pid as usize].timer_at = None;
                let local = self.local(pid);
                self.hosts.procs[pid as usize].elector.handle_timeout(local);
                self.drain_elector(pid);
            }
            Event::HeartbeatTimer { pid, .. } => self.heartbeat(pid),
            Event::WorkTimer { pid, .. } => self.work_tick(pid),
            Event::WorkDone {
                pid, token, unit, ..
            } => self.work_done(pid, token, unit),
            Event::RegistryTimer { .. } => {
                self.store.state.registry_timer_at = None;
                self.store
                    .state
                    .registry
                    .handle_timeout(fenced::Instant::from_nanos(self.now));
                self.drain_membership();
            }
            Event::StartNode { node } | Event::Restart { node } => {
                // A node runs at most one process unless a `replace` fault
                // starts another: a start or restart finding one running
                // (a `replace` came first) does nothing.
                // After healing that is expected (healing restarts every
                // node at once) and not traced.
                if self.node_alive(node) {
                    if !self.healed {
                        self.skipped(node, Skipped::StartOfRunningNode);
                    }
                } else {
                    self.spawn_process(node, false);
                }
            }
            Event::FaultStart { fault } => {
                if !self.healed {
                    self.start_fault(fault as usize);
                }
            }
            Event::FaultEnd { active } => self.end_fault(active),
            Event::Recur { generator } => {
                if !self.healed {
                    self.recur(generator);
                }
            }
            Event::Heal => self.heal_all(),
        }
    }

    #[inline]
    fn local(&self, pid: u32) -> fenced::Instant {
        self.hosts.procs[pid as usize].clock.local(self.now)
    }

    /// The true time at which process `pid`'s clock reads `local`.
    #[inline]
    fn true_time(&self, pid: u32, local: fenced::Instant) -> u64 {
        self.hosts.procs[pid as usize]
            .clock
            .true_time_at(local, self.now)
    }

    fn send(&mut self, from: u16, to: Dest, msg: Message) {
        let to_endpoint = self.hosts.dest_endpoint(to);
        if !self.net.link_up(from, to_endpoint) {
            self.dropped(from, to, &msg, DropReason::LinkDown);
            return;
        }
        match self.net.transit() {
            Transit::Lost => self.dropped(from, to, &msg, DropReason::Lost),
            Transit::Once(latency) => {
                self.queue
                    .push(self.now + latency, Event::Deliver { from, to, msg });
            }
            Transit::Twice(first, second) => {
                self.queue.push(
                    self.now + first,
                    Event::Deliver {
                        from,
                        to,
                        msg: msg.clone(),
                    },
                );
                self.queue
                    .push(self.now + second, Event::Deliver { from, to, msg });
            }
        }
    }

    /// Observes a message that never arrived.
    fn dropped(&mut self, from: u16, to: Dest, msg: &Message, reason: DropReason) {
        let h = &self.hosts;
        self.observers.emit(
            self.now,
            &Observation::Dropped {
                from: h.endpoint_ref(from),
                to: h.dest_ref(to),
                kind: msg.kind(),
                reason,
                sender: msg.sender().map(|pid| h.process_ref(pid)),
                renewal_answer: msg.is_renewal_answer(),
            },
        );
    }

    // ----- the lease store -----

    fn store_receive(&mut self, msg: Message) {
        let now = fenced::Instant::from_nanos(self.now);
        match msg {
            Message::LeaseRequest {
                pid,
                incarnation,
                owner,
                id,
                ttl,
            } => {
                let answer = self
                    .store
                    .state
                    .leases
                    .try_acquire_or_renew(&self.role, &owner, ttl, now);
                let to = Dest::Process { pid, incarnation };
                let from = self.hosts.sender_ref(pid, incarnation, &owner);
                match answer {
                    Ok(result) => {
                        self.observers.emit(
                            self.now,
                            &Observation::LeaseHandled {
                                from,
                                request: id.0,
                                result: &result,
                            },
                        );
                        self.send(STORE_ENDPOINT, to, Message::LeaseResponse { id, result });
                    }
                    Err(error) => {
                        let text = error.to_string();
                        self.observers.emit(
                            self.now,
                            &Observation::LeaseRejected {
                                from,
                                request: id.0,
                                error: &text,
                            },
                        );
                        self.send(STORE_ENDPOINT, to, Message::LeaseFailed { id });
                    }
                }
            }
            Message::Release {
                pid,
                incarnation,
                owner,
                token,
            } => {
                let result = self
                    .store
                    .state
                    .leases
                    .release(&self.role, &owner, token, now);
                let from = self.hosts.sender_ref(pid, incarnation, &owner);
                self.observers.emit(
                    self.now,
                    &Observation::ReleaseHandled {
                        from,
                        token,
                        released: result == ReleaseResult::Released,
                    },
                );
            }
            Message::Heartbeat { pid, node } => {
                let joined = self
                    .store
                    .state
                    .registry
                    .heartbeat(&self.hosts.nodes[node as usize].id, now)
                    == fenced::Heartbeat::Joined;
                self.observers.emit(
                    self.now,
                    &Observation::HeartbeatHandled {
                        from: self.hosts.process_ref(pid),
                        joined,
                    },
                );
                self.drain_membership();
            }
            Message::LeaseResponse { .. } | Message::LeaseFailed { .. } | Message::Write { .. } => {
                debug_assert!(false, "the lease store only receives requests");
            }
        }
    }

    fn drain_membership(&mut self) {
        while let Some(change) = self.store.state.registry.poll_change() {
            match change {
                MembershipChange::Joined { node, .. } => {
                    if let Some(i) = self.hosts.node_index(node.as_str()) {
                        let node = self.hosts.node_ref(i);
                        self.observers
                            .emit(self.now, &Observation::MemberJoined(node));
                    }
                }
                MembershipChange::Left { node, .. } => {
                    if let Some(i) = self.hosts.node_index(node.as_str()) {
                        let node = self.hosts.node_ref(i);
                        self.observers
                            .emit(self.now, &Observation::MemberLeft(node));
                    }
                }
            }
        }
        // Counting the live set costs O(nodes): only for pictures.
        if self.observers.timeline.is_some() {
            let live = self
                .store
                .state
                .registry
                .live_count(fenced::Instant::from_nanos(self.now));
            self.observers
                .emit(self.now, &Observation::LiveMembers(live as u64));
        }
        let next = self
            .store
            .state
            .registry
            .next_timeout()
            .map(|t| t.as_nanos());
        // Arm only when nothing earlier is armed: a timer that fires before
        // the (since refreshed) earliest expiry just re-arms. Re-arming on
        // every heartbeat instead would leave one stale timer per heartbeat
        // in the queue — thousands in a large fleet.
        let armed = self.store.state.registry_timer_at;
        if next.is_some() && (armed.is_none() || next < armed) {
            if let Some(at) = next {
                self.store.state.registry_generation += 1;
                self.store.state.registry_timer_at = Some(at);
                self.queue.push(
                    at.max(self.now),
                    Event::RegistryTimer {
                        generation: self.store.state.registry_generation,
                    },
                );
            }
        }
    }

    // ----- the downstream -----

    fn downstream_receive(&mut self, msg: Message) {
        let Message::Write {
            pid,
            incarnation,
            owner,
            token,
            unit,
        } = msg
        else {
            debug_assert!(false, "the downstream only receives writes");
            return;
        };
        let outcome = self.downstream.state.write(
            &self.resource,
            token,
            &owner,
            unit,
            fenced::Instant::from_nanos(self.now),
        );
        let from = self.hosts.sender_ref(pid, incarnation, &owner);
        self.observers.emit(
            self.now,
            &Observation::WriteHandled {
                from,
                token,
                unit,
                outcome: &outcome,
            },
        );
    }

    // ----- nodes and their processes -----

    /// Starts a new process (incarnation) of `node`. Only a `replace` fault
    /// may start one while another runs: a node has one life at a time.
    fn spawn_process(&mut self, node: u32, replacing: bool) -> u32 {
        assert!(
            replacing || !self.node_alive(node),
            "a node runs at most one process unless a `replace` fault starts another"
        );
        let n = &mut self.hosts.nodes[node as usize];
        let incarnation = n.next_incarnation;
        // Every start is an event, and runs are capped below 2^32 events.
        n.next_incarnation = incarnation
            .checked_add(1)
            .expect("fewer than 2^32 processes per run");
        let clock = n.clock;
        // Never renamed: two processes behind one owner id would both lead on
        // one token. Validation keeps node ids short enough for the suffix.
        let owner = OwnerId::new(format!("{}#{incarnation}", n.id))
            .expect("node ids are validated to leave room for `#incarnation`");
        let jitter_seed = self
            .seeds
            .str("elector")
            .str(n.id.as_str())
            .num(u64::from(incarnation))
            .seed();
        let config = ElectorConfig::new(
            owner.clone(),
            self.role.clone(),
            self.scenario.election.timings(jitter_seed),
        )
        .expect("election settings were validated in Simulation::new");
        #[allow(unused_mut)]
        let mut elector = Elector::new(config);
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = self.planted_bug {
            elector.plant(bug);
        }
        let process = Process {
            node,
            incarnation,
            owner,
            alive: true,
            pause_depth: 0,
            deferred: Vec::new(),
            elector,
            timer_at: None,
            timer_generation: 0,
            work_generation: 0,
            next_unit: 1,
            believed: None,
            clock,
        };
        let reusable = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .find(|&pid| !self.hosts.procs[pid as usize].alive);
        let pid = match reusable {
            Some(pid) => {
                self.hosts.procs[pid as usize] = process;
                pid
            }
            None => {
                self.hosts.procs.push(process);
                let pid = (self.hosts.procs.len() - 1) as u32;
                self.hosts.nodes[node as usize].pids.push(pid);
                pid
            }
        };
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::ProcessStarted(process));
        let local = self.local(pid);
        self.hosts.procs[pid as usize].elector.start(local);
        self.drain_elector(pid);
        self.heartbeat(pid);
        pid
    }

    fn heartbeat(&mut self, pid: u32) {
        let p = &self.hosts.procs[pid as usize];
        let (node, incarnation) = (p.node, p.incarnation);
        let endpoint = self.hosts.nodes[node as usize].endpoint;
        self.send(endpoint, Dest::Store, Message::Heartbeat { pid, node });
        let next = self.local(pid) + Duration::from_nanos(self.heartbeat_ns);
        let at = self.true_time(pid, next);
        self.queue
            .push(at, Event::HeartbeatTimer { pid, incarnation });
    }

    fn process_receive(&mut self, pid: u32, msg: Message) {
        let local = self.local(pid);
        match msg {
            Message::LeaseResponse { id, result } => {
                // What the trace and the checker need, read before the answer
                // moves into the elector.
                let acquired = result.acquired_token();
                let renewal = matches!(result, LeaseResult::Renewed { .. });
                let p = &mut self.hosts.procs[pid as usize];
                let disposition = p.elector.handle_response(id, result, local);
                self.observers.emit(
                    self.now,
                    &Observation::ResponseHandled {
                        process: self.hosts.process_ref(pid),
                        request: id.0,
                        disposition,
                        acquired,
                        renewal,
                    },
                );
            }
            Message::LeaseFailed { id } => {
                self.hosts.procs[pid as usize]
                    .elector
                    .handle_request_failed(id, local);
                self.observers.emit(
                    self.now,
                    &Observation::RequestFailed {
                        process: self.hosts.process_ref(pid),
                        request: id.0,
                    },
                );
            }
            _ => debug_assert!(false, "processes only receive lease answers"),
        }
        self.drain_elector(pid);
    }

    /// Acts on everything the elector asked for, then re-arms its timer.
    fn drain_elector(&mut self, pid: u32) {
        while let Some(output) = self.hosts.procs[pid as usize].elector.poll_output() {
            let p = &self.hosts.procs[pid as usize];
            let endpoint = self.hosts.nodes[p.node as usize].endpoint;
            match output {
                ElectorOutput::SendLeaseRequest { id, ttl } => {
                    let local = p.clock.local(self.now);
                    self.observers.emit(
                        self.now,
                        &Observation::RequestSent {
                            process: self.hosts.process_ref(pid),
                            request: id.0,
                            local,
                        },
                    );
                    let p = &self.hosts.procs[pid as usize];
                    let msg = Message::LeaseRequest {
                        pid,
                        incarnation: p.incarnation,
                        owner: p.owner.clone(),
                        id,
                        ttl,
                    };
                    self.send(endpoint, Dest::Store, msg);
                }
                ElectorOutput::StartWork { token } => self.start_term(pid, token),
                ElectorOutput::StopWork { token, reason } => self.end_term(pid, token, &reason),
                ElectorOutput::Release { token } => {
                    let msg = Message::Release {
                        pid,
                        incarnation: p.incarnation,
                        owner: p.owner.clone(),
                        token,
                    };
                    self.send(endpoint, Dest::Store, msg);
                }
                ElectorOutput::LeaderObserved { .. } => {}
            }
        }
        self.arm_elector_timer(pid);
    }

    fn arm_elector_timer(&mut self, pid: u32) {
        let Some(local) = self.hosts.procs[pid as usize].elector.next_timeout() else {
            return;
        };
        let at = self.true_time(pid, local);
        let p = &mut self.hosts.procs[pid as usize];
        if p.timer_at == Some(at) {
            return;
        }
        p.timer_generation = p.timer_generation.wrapping_add(1);
        p.timer_at = Some(at);
        let event = Event::ElectorTimer {
            pid,
            incarnation: p.incarnation,
            generation: p.timer_generation,
        };
        self.queue.push(at, event);
    }

    fn start_term(&mut self, pid: u32, token: FencingToken) {
        let p = &mut self.hosts.procs[pid as usize];
        debug_assert!(
            p.believed.is_none(),
            "StopWork comes before the next StartWork"
        );
        p.believed = Some(token);
        p.work_generation = p.work_generation.wrapping_add(1);
        let event = Event::WorkTimer {
            pid,
            incarnation: p.incarnation,
            generation: p.work_generation,
        };
        self.queue.push(self.now, event);
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::TermStarted { process, token });
    }

    fn end_term(&mut self, pid: u32, token: FencingToken, reason: &StepDownReason) {
        let p = &mut self.hosts.procs[pid as usize];
        debug_assert_eq!(p.believed, Some(token), "StopWork ends the term in hand");
        p.believed = None;
        p.work_generation = p.work_generation.wrapping_add(1);
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::TermEnded {
                process,
                token,
                reason,
            },
        );
    }

    fn work_tick(&mut self, pid: u32) {
        // The unit checks leadership at its start: bring the elector up to
        // date first, so a deadline due now is honoured.
        let local = self.local(pid);
        self.hosts.procs[pid as usize].elector.handle_timeout(local);
        self.drain_elector(pid);
        let p = &mut self.hosts.procs[pid as usize];
        let Some(token) = p.believed else {
            return;
        };
        if p.elector.token_at(local) != Some(token) {
            return;
        }
        let unit = p.next_unit;
        p.next_unit += 1;
        let (incarnation, generation) = (p.incarnation, p.work_generation);
        let done_at = self.true_time(pid, local + self.work_duration);
        self.queue.push(
            done_at,
            Event::WorkDone {
                pid,
                incarnation,
                token,
                unit,
            },
        );
        let next_at = self.true_time(pid, local + self.write_interval);
        self.queue.push(
            next_at,
            Event::WorkTimer {
                pid,
                incarnation,
                generation,
            },
        );
        // The checker judges `local-deadline` from this and its own record
        // of the requests sent and answered.
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::WorkStarted {
                process,
                token,
                unit,
                local,
            },
        );
    }

    fn work_done(&mut self, pid: u32, token: FencingToken, unit: u64) {
        let p = &self.hosts.procs[pid as usize];
        if p.believed != Some(token) {
            // The term ended while the unit ran; the worker noticed its
            // cancellation before writing.
            let process = self.hosts.process_ref(pid);
            self.observers.emit(
                self.now,
                &Observation::WorkCancelled {
                    process,
                    token,
                    unit,
                },
            );
            return;
        }
        // No second leadership check here: that is the check-then-act gap a
        // pause falls into, and what fencing exists to close.
        let endpoint = self.hosts.nodes[p.node as usize].endpoint;
        let msg = Message::Write {
            pid,
            incarnation: p.incarnation,
            owner: p.owner.clone(),
            token,
            unit,
        };
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::WriteSent {
                process,
                token,
                unit,
            },
        );
        self.send(endpoint, Dest::Downstream, msg);
    }

    fn crash_process(&mut self, pid: u32) {
        let p = &mut self.hosts.procs[pid as usize];
        p.believed = None;
        p.alive = false;
        p.pause_depth = 0;
        p.deferred = Vec::new();
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::ProcessCrashed(process));
    }

    // ----- faults -----

    fn add_active(&mut self, fault: ActiveFault) -> u32 {
        match self.active_free.pop() {
            Some(slot) => {
                self.active[slot as usize] = Some(fault);
                slot
            }
            None => {
                self.active.push(Some(fault));
                (self.active.len() - 1) as u32
            }
        }
    }

    fn schedule_end(&mut self, fault: ActiveFault, duration: u64) {
        // Which hosts a fault touches, labelled: only for pictures (it
        // allocates), so only while a timeline is recorded.
        if self.observers.timeline.is_some() {
            let slot = self
                .active_free
                .last()
                .copied()
                .unwrap_or(self.active.len() as u32);
            let h = &self.hosts;
            let label = |text: &str| text.to_string();
            let spans: Vec<(HostRef<'_>, String)> = match &fault {
                ActiveFault::PauseProcesses(pids) => pids
                    .iter()
                    .map(|(pid, _)| (HostRef::Process(h.process_ref(*pid)), label("pause")))
                    .collect(),
                ActiveFault::PauseStore => vec![(HostRef::LeaseStore, label("pause"))],
                ActiveFault::PauseDownstream => vec![(HostRef::Downstream, label("pause"))],
                ActiveFault::Isolate(e) => vec![(h.endpoint_ref(*e), label("isolated"))],
                ActiveFault::Cut(a, b) => {
                    let (a, b) = (h.endpoint_ref(*a), h.endpoint_ref(*b));
                    vec![
                        (a, format!("cut to {}", b.name())),
                        (b, format!("cut from {}", a.name())),
                    ]
                }
                ActiveFault::Partition { members, .. } => members
                    .iter()
                    .map(|e| (h.endpoint_ref(*e), label("partition")))
                    .collect(),
            };
            self.observers.emit(
                self.now,
                &Observation::FaultBegan {
                    slot,
                    spans: &spans,
                },
            );
        }
        let slot = self.add_active(fault);
        self.queue.push(
            self.now.saturating_add(duration),
            Event::FaultEnd { active: slot },
        );
    }

    fn start_fault(&mut self, index: usize) {
        let fault = self.scenario.faults[index].clone();
        match fault {
            FaultSpec::Pause { host, duration, .. } => {
                if let Some(active) = self.pause_host(&host) {
                    self.schedule_end(active, nanos(duration));
                }
            }
            FaultSpec::Isolate { host, duration, .. } => {
                if let Some(endpoint) = self.hosts.endpoint_of_host(&host) {
                    let active = self.isolate(endpoint);
                    self.schedule_end(active, nanos(duration));
                }
            }
            FaultSpec::Cut {
                from, to, duration, ..
            } => {
                if let (Some(a), Some(b)) = (
                    self.hosts.endpoint_of_host(&from),
                    self.hosts.endpoint_of_host(&to),
                ) {
                    self.net.cut(a, b, true);
                    self.observe_cut(a, b, true);
                    self.schedule_end(ActiveFault::Cut(a, b), nanos(duration));
                }
            }
            FaultSpec::Partition {
                groups, duration, ..
            } => {
                let endpoints = usize::from(FIRST_NODE_ENDPOINT) + self.hosts.nodes.len();
                // Hosts named in no group bridge the split: they reach everyone.
                let mut group_of = vec![BRIDGE; endpoints];
                for (g, group) in groups.iter().enumerate() {
                    for host in group {
                        if let Some(e) = self.hosts.endpoint_of_host(host) {
                            group_of[usize::from(e)] = g as u16;
                        }
                    }
                }
                let text = groups
                    .iter()
                    .map(|g| format!("[{}]", g.join(", ")))
                    .collect::<Vec<_>>()
                    .join(" | ");
                let members: Vec<u16> = (0..endpoints as u16)
                    .filter(|&e| group_of[usize::from(e)] != BRIDGE)
                    .collect();
                self.net.partition(Some(group_of));
                self.observe_partition(&text, &members, true);
                self.schedule_end(ActiveFault::Partition { text, members }, nanos(duration));
            }
            FaultSpec::Crash {
                node,
                restart_after,
                ..
            } => {
                if let Some(n) = self.hosts.node_index(&node) {
                    self.crash_node(n, restart_after.map(nanos));
                }
            }
            FaultSpec::Replace { node, .. } => {
                if let Some(n) = self.hosts.node_index(&node) {
                    self.spawn_process(n, true);
                }
            }
            FaultSpec::Recurring { .. } => {}
        }
    }

    fn observe_cut(&mut self, from: u16, to: u16, start: bool) {
        let h = &self.hosts;
        let (from, to) = (h.endpoint_ref(from), h.endpoint_ref(to));
        self.observers
            .emit(self.now, &Observation::Cut { from, to, start });
    }

    fn observe_partition(&mut self, groups: &str, members: &[u16], start: bool) {
        let h = &self.hosts;
        let members: Vec<HostRef<'_>> = members.iter().map(|&e| h.endpoint_ref(e)).collect();
        self.observers.emit(
            self.now,
            &Observation::Partitioned {
                start,
                groups,
                members: &members,
            },
        );
    }

    fn node_alive(&self, node: u32) -> bool {
        self.hosts.nodes[node as usize]
            .pids
            .iter()
            .any(|&pid| self.hosts.procs[pid as usize].alive)
    }

    /// Begins the liveness phase: ends every active fault (paused hosts
    /// resume and handle what queued), stops random loss and duplication,
    /// restarts every node that has no live process, and stops scheduled and
    /// recurring faults from starting. Clock offsets and drifts stay: they are
    /// properties of the hosts, not faults.
    /// Idempotent.
    pub fn heal_all(&mut self) {
        if self.healed {
            return;
        }
        self.healed = true;
        self.observers.emit(self.now, &Observation::Healed);
        for slot in 0..self.active.len() as u32 {
            self.end_fault(slot);
        }
        self.net.stop_loss_and_duplication();
        for node in 0..self.hosts.nodes.len() as u32 {
            if !self.node_alive(node) {
                self.spawn_process(node, false);
            }
        }
    }

    /// Kills every live process of `node` and, when `restart_after` is
    /// given, schedules one new process that much later. A crash that finds
    /// no live process (the node is down already, or has not started) does
    /// nothing and schedules nothing: a restart belongs to the crash that
    /// took the node down.
    fn crash_node(&mut self, node: u32, restart_after: Option<u64>) {
        let pids: Vec<u32> = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .filter(|&pid| self.hosts.procs[pid as usize].alive)
            .collect();
        if pids.is_empty() {
            self.skipped(node, Skipped::CrashOfDownNode);
            return;
        }
        for pid in pids {
            self.crash_process(pid);
        }
        if let Some(after) = restart_after {
            self.queue
                .push(self.now.saturating_add(after), Event::Restart { node });
        }
    }

    /// Traces a node fault that found nothing to act on.
    fn skipped(&mut self, node: u32, what: Skipped) {
        let node = self.hosts.node_ref(node);
        self.observers
            .emit(self.now, &Observation::Skipped { node, what });
    }

    fn observe_isolation(&mut self, endpoint: u16, start: bool) {
        let host = self.hosts.endpoint_ref(endpoint);
        self.observers
            .emit(self.now, &Observation::Isolated { host, start });
    }

    fn isolate(&mut self, endpoint: u16) -> ActiveFault {
        self.net.isolate(endpoint, true);
        self.observe_isolation(endpoint, true);
        ActiveFault::Isolate(endpoint)
    }

    fn pause_host(&mut self, host: &str) -> Option<ActiveFault> {
        match host {
            LEASE_STORE => {
                self.store.pause_depth += 1;
                let depth = self.store.pause_depth;
                self.observers.emit(
                    self.now,
                    &Observation::Paused {
                        host: HostRef::LeaseStore,
                        depth,
                    },
                );
                Some(ActiveFault::PauseStore)
            }
            DOWNSTREAM => {
                self.downstream.pause_depth += 1;
                let depth = self.downstream.pause_depth;
                self.observers.emit(
                    self.now,
                    &Observation::Paused {
                        host: HostRef::Downstream,
                        depth,
                    },
                );
                Some(ActiveFault::PauseDownstream)
            }
            name => {
                let node = self.hosts.node_index(name)?;
                Some(self.pause_node(node))
            }
        }
    }

    fn pause_node(&mut self, node: u32) -> ActiveFault {
        let pids: Vec<u32> = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .filter(|&pid| self.hosts.procs[pid as usize].alive)
            .collect();
        let mut paused = Vec::with_capacity(pids.len());
        for pid in pids {
            let p = &mut self.hosts.procs[pid as usize];
            p.pause_depth += 1;
            let depth = p.pause_depth;
            paused.push((pid, p.incarnation));
            let host = HostRef::Process(self.hosts.process_ref(pid));
            self.observers
                .emit(self.now, &Observation::Paused { host, depth });
        }
        ActiveFault::PauseProcesses(paused)
    }

    fn end_fault(&mut self, slot: u32) {
        let Some(fault) = self.active.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        self.active_free.push(slot);
        self.observers
            .emit(self.now, &Observation::FaultEnded { slot });
        match fault {
            ActiveFault::PauseProcesses(pids) => {
                for (pid, incarnation) in pids {
                    let p = &mut self.hosts.procs[pid as usize];
                    if !p.alive || p.incarnation != incarnation || p.pause_depth == 0 {
                        continue;
                    }
                    p.pause_depth -= 1;
                    let depth = p.pause_depth;
                    let deferred = if depth == 0 {
                        mem::take(&mut p.deferred)
                    } else {
                        Vec::new()
                    };
                    self.resumed(Target::Process { pid, incarnation }, depth, deferred);
                }
            }
            ActiveFault::PauseStore => {
                self.store.pause_depth -= 1;
                let depth = self.store.pause_depth;
                let deferred = if depth == 0 {
                    mem::take(&mut self.store.deferred)
                } else {
                    Vec::new()
                };
                self.resumed(Target::Store, depth, deferred);
            }
            ActiveFault::PauseDownstream => {
                self.downstream.pause_depth -= 1;
                let depth = self.downstream.pause_depth;
                let deferred = if depth == 0 {
                    mem::take(&mut self.downstream.deferred)
                } else {
                    Vec::new()
                };
                self.resumed(Target::Downstream, depth, deferred);
            }
            ActiveFault::Isolate(endpoint) => {
                self.net.isolate(endpoint, false);
                self.observe_isolation(endpoint, false);
            }
            ActiveFault::Cut(a, b) => {
                self.net.cut(a, b, false);
                self.observe_cut(a, b, false);
            }
            ActiveFault::Partition { text, members } => {
                self.net.partition(None);
                self.observe_partition(&text, &members, false);
            }
        }
    }

    /// Observes a pause of `host` ending, `depth` pauses still in effect; at
    /// depth 0 the host handles what queued while it was paused.
    fn resumed(&mut self, host: Target, depth: u32, deferred: Vec<Event>) {
        let host = match host {
            Target::Store => HostRef::LeaseStore,
            Target::Downstream => HostRef::Downstream,
            Target::Process { pid, .. } => HostRef::Process(self.hosts.process_ref(pid)),
            Target::Engine => unreachable!("only hosts pause"),
        };
        self.observers.emit(
            self.now,
            &Observation::Resumed {
                host,
                depth,
                deferred: deferred.len() as u64,
            },
        );
        self.replay(deferred);
    }

    /// Handles events that queued while their host was paused, in order, now.
    fn replay(&mut self, deferred: Vec<Event>) {
        for event in deferred {
            // A process may have crashed, or a timer been superseded, since.
            if let Target::Process { pid, incarnation } = event.target() {
                let p = &self.hosts.procs[pid as usize];
                if !p.alive || p.incarnation != incarnation {
                    continue;
                }
            }
            if self.is_stale(&event) {
                continue;
            }
            self.handle(event);
        }
    }

    fn recur(&mut self, id: u32) {
        let g = &mut self.generators[id as usize];
        let (low, high) = (nanos(g.duration.low), nanos(g.duration.high));
        let duration = uniform_inclusive(&mut g.rng, low, high);
        let gap = exponential_nanos(&mut g.rng, g.every);
        let (kind, node) = (g.kind, g.node);
        self.queue
            .push(self.now.saturating_add(gap), Event::Recur { generator: id });
        if let Some(log) = self.recurring_log.as_mut() {
            let host = self.hosts.nodes[node as usize].id.to_string();
            let (at, length) = (
                Duration::from_nanos(self.now),
                Duration::from_nanos(duration),
            );
            log.push(match kind {
                RecurringKind::Pause => FaultSpec::Pause {
                    host,
                    at,
                    duration: length,
                },
                RecurringKind::Isolate => FaultSpec::Isolate {
                    host,
                    at,
                    duration: length,
                },
                RecurringKind::Crash => FaultSpec::Crash {
                    node: host,
                    at,
                    restart_after: Some(length),
                },
            });
        }
        match kind {
            RecurringKind::Pause => {
                let active = self.pause_node(node);
                if matches!(&active, ActiveFault::PauseProcesses(p) if !p.is_empty()) {
                    self.schedule_end(active, duration);
                }
            }
            RecurringKind::Isolate => {
                let endpoint = self.hosts.nodes[node as usize].endpoint;
                let active = self.isolate(endpoint);
                self.schedule_end(active, duration);
            }
            RecurringKind::Crash => self.crash_node(node, Some(duration)),
        }
    }

    // ----- the report -----

    /// The report as of now (normally called after [`run_to_end`](Self::run_to_end)).
    pub fn report(&self) -> Report {
        // The verdict closes the belief measures at `now` on a copy, so that
        // a report can be taken at any time and the run continued.
        let verdict = self
            .observers
            .checker
            .verdict(SimTime::from_nanos(self.now));
        let max_token = self
            .store
            .state
            .leases
            .highest_token(&self.role)
            .map_or(0, FencingToken::get);
        let live_at_end = self
            .store
            .state
            .registry
            .live_count(fenced::Instant::from_nanos(self.now)) as u64;
        let mut report = Report {
            scenario: self.name.clone(),
            seed: self.seed,
            virtual_ms: ms(self.now),
            events: self.events,
            trace_hash: format!("{:016x}", self.observers.tracer.hash()),
            split_brain: verdict.split_brain_total > 0,
            violations: verdict.violations,
            terms: verdict.terms,
            leader_changes: verdict.leader_changes,
            failovers: verdict.failovers,
            writes: verdict.writes,
            expect: Default::default(),
            violations_total: verdict.violations_total,
            fencing: self.scenario.fencing,
            overlap_ms: ms(nanos(verdict.overlap)),
            leaderless_ms: ms(nanos(verdict.leaderless)),
            spurious_failovers: verdict.spurious_failovers,
            max_token,
            membership: crate::report::MembershipReport {
                live_at_end,
                ..verdict.membership
            },
            coverage: verdict.coverage,
            unjudged_writes: self.unjudged_writes(),
            planted_bug: self.planted_bug_name(),
        };
        report.expect = evaluate(
            &self.expect,
            &report,
            verdict.split_brain_total,
            nanos(verdict.max_failover),
            nanos(verdict.overlap),
            verdict.leader_at_end,
        );
        report
    }

    /// The writes on their way when the report is taken: units whose term is
    /// still believed, writes in flight to the downstream, and writes queued
    /// at a paused downstream.
    fn unjudged_writes(&self) -> UnjudgedWrites {
        let mut writes = Vec::new();
        let mut note = |event: &Event, queued: bool| match event {
            Event::WorkDone {
                pid,
                incarnation,
                token,
                unit,
            } => {
                let p = &self.hosts.procs[*pid as usize];
                if p.alive && p.incarnation == *incarnation && p.believed == Some(*token) {
                    let state = if p.pause_depth > 0 {
                        "in-progress (paused)"
                    } else {
                        "in-progress"
                    };
                    writes.push(UnjudgedWrite {
                        owner: p.owner.to_string(),
                        token: token.get(),
                        unit: *unit,
                        state: state.to_string(),
                    });
                }
            }
            Event::Deliver {
                to: Dest::Downstream,
                msg: Message::Write {
                    owner, token, unit, ..
                },
                ..
            } => writes.push(UnjudgedWrite {
                owner: owner.to_string(),
                token: token.get(),
                unit: *unit,
                state: if queued { "queued" } else { "in-flight" }.to_string(),
            }),
            _ => {}
        };
        for event in self.queue.pending() {
            note(event, false);
        }
        for event in &self.downstream.deferred {
            note(event, true);
        }
        for p in self.hosts.procs.iter().filter(|p| p.alive) {
            for event in &p.deferred {
                note(event, false);
            }
        }
        writes.sort();
        let total = writes.len() as u64;
        let newest = self.observers.checker.highest_granted();
        let older_term = writes.iter().filter(|w| w.token < newest).count() as u64;
        writes.truncate(MAX_UNJUDGED_LISTED);
        UnjudgedWrites {
            total,
            older_term,
            writes,
        }
    }

    fn planted_bug_name(&self) -> Option<String> {
        #[cfg(feature = "planted-bugs")]
        {
            self.planted_bug.map(|b| b.name().to_string())
        }
        #[cfg(not(feature = "planted-bugs"))]
        {
            None
        }
    }

    fn leader_at_end(&self) -> bool {
        self.observers
            .checker
            .leader_at(SimTime::from_nanos(self.now))
    }
}
