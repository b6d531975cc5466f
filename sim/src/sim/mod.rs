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

mod faults;
mod messages;
mod process;
mod report;
mod store;

use faults::{ActiveFault, Generator};
use messages::{Dest, Event, Message, Target};

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
}
