//! The simulation of one scenario and seed: the [engine](crate::engine)
//! driving the fenced protocol's [hosts](crate::hosts), the scenario's
//! [faults](faults), and the observers of the run (the tracer, the checker,
//! the timeline recorder).
//!
//! A paused host handles nothing: events addressed to it (messages and timers)
//! queue, and on resume they are handled in their original order at the resume
//! time; if its clock stepped or slewed meanwhile, it then re-arms its timers
//! by the new reading (a stopped process reads the clock again when it runs). Network faults act on links; a message is dropped if its link is down
//! when it is sent or when it would arrive. A crash kills a node's processes
//! (volatile state is lost; events addressed to them are dropped); a restart
//! starts a new incarnation as a follower.

mod anchors;
mod faults;
mod fingerprint;
mod public;
mod report;
pub mod symmetry;

pub use fingerprint::StateFingerprint;
pub use public::{Finished, NotedInstants, Recording, Simulation};

use std::io::Write;
use std::time::Duration;

use fenced::{FencedStore, Fencing, FleetRegistry, LeaseStore, LeaseStoreConfig};

use crate::checker::{Checker, CheckerSettings};
use crate::engine::clock::{ClockKind, HostClock};
use crate::engine::limits::{Halt, DEFAULT_MAX_EVENTS};
use crate::engine::network::Network;
use crate::engine::{Control, Engine, HostClocks, Lives};
use crate::hosts::session::ClientSettings;
use crate::hosts::workers::ProcessTable;
use crate::hosts::{
    DownstreamHost, FencedHosts, LeaseStoreHost, ProcessSettings, SimHosts, WorkTimings,
};
use crate::observation::{Observer, Observers, SimTime, Skipped};
use crate::rng::SeedDeriver;
use crate::scenario::{
    Expectations, FaultAction, FaultSpec, PlanStep, Scenario, ScenarioError, StepCause, StoreClock,
    ValidScenario,
};
use crate::time::span_nanos;
use crate::timeline::{Belief, Recorder, Timeline};
use crate::trace::Tracer;
use crate::zoo::{ZooHosts, ZooProtocol};

use anchors::AnchorWatch;
use faults::Faults;

#[cfg(feature = "planted-bugs")]
use fenced::PlantedBug;

/// The observers of a run: the tracer, the checker and, when asked for, the
/// timeline recorder.
pub(crate) type RunObservers = Observers<Tracer, Checker, Recorder, AnchorWatch>;

/// Options of one run that are not part of the scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Overrides the scenario's seed.
    pub seed: Option<u64>,
    /// A deliberate bug to plant in the state machines (negative controls).
    #[cfg(feature = "planted-bugs")]
    pub planted_bug: Option<PlantedBug>,
    /// The most events the run may handle (`None`:
    /// [`DEFAULT_MAX_EVENTS`]); at most [`MAX_EVENTS_LIMIT`](crate::limits::MAX_EVENTS_LIMIT). A run that
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

/// What the engine's script does with a `[network.script]` choice's draw.
fn script_fate(c: &crate::scenario::LatencyChoice) -> (u64, crate::engine::network::Fate) {
    use crate::engine::network::Fate;
    let latency = span_nanos(c.latency);
    let fate = match (c.lost, c.duplicate) {
        (true, _) => Fate::Lost(latency),
        (false, Some(copy)) => Fate::Twice(latency, span_nanos(copy)),
        (false, None) => Fate::Latency(latency),
    };
    (c.draw, fate)
}

/// One run of a protocol's hosts `H`: the engine, the faults, and the
/// scenario they came from. [`Simulation`] is its public face, whatever the
/// protocol.
#[derive(Debug)]
pub(crate) struct Core<H: SimHosts> {
    name: String,
    seed: u64,
    scenario: Scenario,
    expect: Expectations,
    engine: Engine<H, RunObservers>,
    faults: Faults,
    /// When asked for: the state's fingerprint right after this scheduled
    /// fault began, and what it was (see `fingerprint`).
    fingerprint: Option<fingerprint::Watch>,
    #[cfg(feature = "planted-bugs")]
    planted_bug: Option<PlantedBug>,
}

impl Core<FencedHosts> {
    /// A run of the fenced protocol (see [`Simulation::new`]).
    pub(crate) fn fenced(
        valid: &ValidScenario,
        options: &RunOptions,
    ) -> Result<Self, ScenarioError> {
        let scenario = valid.scenario();
        let fencing = if scenario.fencing {
            Fencing::Enforced
        } else {
            Fencing::Disabled
        };
        let make_hosts = |seeds: SeedDeriver| {
            let nodes = valid.node_ids().iter().cloned();
            let registry = FleetRegistry::new(nodes, scenario.membership.liveness_ttl)
                .expect("validation refuses a zero liveness_ttl and duplicate node ids");
            let store_config = LeaseStoreConfig::new(LeaseStoreConfig::DEFAULT_MAX_TTL)
                .expect("the default maximum TTL is valid");
            let role = valid.role().clone();
            #[allow(unused_mut)]
            let mut hosts = FencedHosts {
                store: LeaseStoreHost::new(role.clone(), LeaseStore::new(store_config), registry),
                downstream: DownstreamHost::new(
                    valid.resource().clone(),
                    FencedStore::new(fencing),
                ),
                procs: ProcessTable::new(WorkTimings::of(scenario), ClientSettings::of(scenario)),
                settings: ProcessSettings {
                    role,
                    elector: valid.elector_timings(0),
                    timings: WorkTimings::of(scenario),
                    seeds,
                    #[cfg(feature = "planted-bugs")]
                    planted_bug: options.planted_bug,
                },
            };
            #[cfg(feature = "planted-bugs")]
            if let Some(bug) = options.planted_bug {
                hosts.store.leases.plant(bug);
                hosts.downstream.store.plant(bug);
            }
            hosts
        };
        // The nodes' electors time by their monotonic clock (the tokio
        // driver reads `tokio::time::Instant`); the store by the clock its
        // backend expires by (`[store] clock`); the downstream keeps no time.
        let store = match scenario.store_clock {
            StoreClock::Wall => ClockKind::Wall,
            StoreClock::Monotonic => ClockKind::Monotonic,
        };
        let clocks = HostClocks {
            nodes: ClockKind::Monotonic,
            servers: vec![store, ClockKind::Wall],
        };
        Self::assemble(valid, options, Vec::new(), clocks, make_hosts)
    }
}

impl<P: ZooProtocol> Core<ZooHosts<P>> {
    /// A run of the zoo's protocol `P` with `settings` (validated with the
    /// scenario).
    ///
    /// # Errors
    /// The event budget, as for the fenced protocol.
    pub(crate) fn zoo(
        valid: &ValidScenario,
        options: &RunOptions,
        settings: &P::Settings,
    ) -> Result<Self, ScenarioError> {
        let scenario = valid.scenario();
        let make_hosts = |seeds: SeedDeriver| ZooHosts::new(valid, settings, seeds);
        // Each design's clients and servers time by the clock their upstream
        // reads (the design's docs cite where); the downstream keeps no time.
        let servers = scenario.election.protocol.server_names();
        let mut kinds = vec![ClockKind::from(P::SERVER_CLOCK); servers.len().max(1) + 1];
        kinds[1] = ClockKind::Wall;
        let clocks = HostClocks {
            nodes: ClockKind::from(P::CLIENT_CLOCK),
            servers: kinds,
        };
        Self::assemble(valid, options, servers, clocks, make_hosts)
    }
}

impl<H: SimHosts> Core<H> {
    /// Sets up a run at time zero of `valid` with the hosts `make_hosts`
    /// builds from the run's seed deriver, and `servers` named (none: the
    /// fenced protocol's lease store and downstream).
    ///
    /// # Errors
    /// The event budget: see [`Simulation::new`].
    pub(crate) fn assemble(
        valid: &ValidScenario,
        options: &RunOptions,
        servers: Vec<String>,
        clocks: HostClocks,
        make_hosts: impl FnOnce(SeedDeriver) -> H,
    ) -> Result<Self, ScenarioError> {
        let scenario = valid.scenario();
        let max_events = options.event_budget();
        crate::scenario::check_budget(scenario, max_events)?;
        let seed = options.seed.unwrap_or(scenario.seed);
        let seeds = SeedDeriver::new(seed, "fenced-sim");
        let nodes = valid
            .node_ids()
            .iter()
            .zip(&scenario.nodes)
            .map(|(id, spec)| {
                (
                    id.clone(),
                    HostClock::new(spec.clock_offset.0, spec.clock_drift),
                )
            });
        let lives = Lives::with_servers(servers, nodes, clocks);
        let mut net = Network::new(
            lives.endpoint_count(),
            scenario.network.latency,
            scenario.network.loss,
            scenario.network.duplicate,
            scenario.network.retransmit_timeout,
            seeds.str("network").rng(),
        );
        if let Some(script) = &scenario.network.script {
            net.follow(
                crate::engine::network::Script::new(
                    span_nanos(script.latency),
                    script.choices.iter().map(script_fate).collect(),
                )
                .with_reorders(script.reorders.clone()),
            );
        }
        let observers = Observers {
            tracer: Tracer::new(),
            checker: Checker::new(CheckerSettings::of(scenario)),
            timeline: None,
            anchors: None,
            abstract_states: None,
        };
        let engine = Engine::new(
            SimTime::from_duration(scenario.duration),
            max_events,
            net,
            lives,
            make_hosts(seeds),
            observers,
        );
        let mut core = Core {
            name: scenario.name.clone(),
            seed,
            scenario: scenario.clone(),
            expect: scenario.expect.clone(),
            engine,
            faults: Faults::new(seeds),
            fingerprint: None,
            #[cfg(feature = "planted-bugs")]
            planted_bug: options.planted_bug,
        };
        for (i, spec) in scenario.nodes.iter().enumerate() {
            core.engine.schedule(
                SimTime::from_duration(spec.start_at),
                Control::StartNode(i as u32),
            );
        }
        for i in 0..scenario.faults.len() {
            core.schedule_fault(i)?;
        }
        if let Some(heal_at) = scenario.heal_at {
            core.engine
                .schedule(SimTime::from_duration(heal_at), Control::Heal);
        }
        Ok(core)
    }

    /// See [`Simulation::add_fault`].
    pub fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError> {
        let mut candidate = self.scenario.clone();
        candidate.faults.push(fault);
        candidate.validate()?;
        self.scenario = candidate;
        self.schedule_fault(self.scenario.faults.len() - 1)
    }

    /// See [`Simulation::record_recurring_faults`].
    pub fn record_recurring_faults(&mut self) {
        self.faults.recurring_log.get_or_insert_with(Vec::new);
    }

    /// See [`Simulation::recurring_faults`].
    pub fn recurring_faults(&self) -> &[FaultSpec] {
        self.faults.recurring_log.as_deref().unwrap_or(&[])
    }

    /// See [`Simulation::record_fault_actions`].
    pub fn record_fault_actions(&mut self) {
        self.faults.action_log.get_or_insert_with(Vec::new);
    }

    /// See [`Simulation::fault_actions`].
    pub fn fault_actions(&self) -> &[PlanStep] {
        self.faults.action_log.as_deref().unwrap_or(&[])
    }

    /// See [`Simulation::record_timeline`].
    pub fn record_timeline(&mut self) {
        if self.engine.observers.timeline.is_none() {
            let lives = &self.engine.lives;
            let nodes = (0..lives.node_count() as u32)
                .map(|n| lives.node_id(n).to_string())
                .collect();
            self.engine.observers.timeline = Some(Box::new(Recorder::new(nodes)));
        }
    }

    /// See [`Simulation::timeline`].
    pub fn timeline(&self) -> Option<Timeline> {
        let observers = &self.engine.observers;
        let recorder = observers.timeline.as_ref()?;
        let now = self.engine.now;
        let mut timeline = recorder.snapshot(now.as_nanos());
        let verdict = observers.checker.verdict(now);
        timeline.beliefs = verdict.terms.iter().map(Belief::from).collect();
        timeline.overlap_ns = span_nanos(verdict.overlap);
        Some(timeline)
    }

    /// See [`Simulation::set_trace_writer`].
    pub fn set_trace_writer(&mut self, out: Box<dyn Write + Send>) {
        self.engine.observers.tracer.set_writer(out);
    }

    /// See [`Simulation::finish_trace`].
    pub fn finish_trace(&mut self) -> std::io::Result<()> {
        self.engine.observers.tracer.finish()
    }

    /// See [`Simulation::now`].
    pub fn now(&self) -> Duration {
        self.engine.now.since_start()
    }

    /// See [`Simulation::end`].
    pub fn end(&self) -> Duration {
        self.engine.end().since_start()
    }

    /// See [`Simulation::events`].
    pub fn events(&self) -> u64 {
        self.engine.events
    }

    /// See [`Simulation::pending_events`].
    pub fn pending_events(&self) -> usize {
        self.engine.pending_len()
    }

    /// See [`Simulation::trace_hash`].
    pub fn trace_hash(&self) -> u64 {
        self.engine.observers.tracer.hash()
    }

    /// See [`Simulation::scripted_order_points`].
    pub fn scripted_order_points(&self) -> Option<u64> {
        self.engine.net.scripted_order_points()
    }

    /// See [`Simulation::scripted_draws`].
    pub fn scripted_draws(&self) -> Option<u64> {
        self.engine.net.scripted_draws()
    }

    /// See [`Simulation::record_instants`].
    pub fn record_instants(&mut self) {
        self.engine.net.record_instants();
    }

    /// See [`Simulation::record_abstract_states`].
    pub fn record_abstract_states(&mut self) {
        if self.engine.observers.abstract_states.is_none() {
            let lives = &self.engine.lives;
            let (nodes, first) = (lives.node_count(), lives.first_node_endpoint());
            self.engine.observers.abstract_states = Some(Box::new(
                crate::observation::AbstractStates::new(nodes, first),
            ));
        }
    }

    /// See [`Simulation::take_abstract_states`].
    pub fn take_abstract_states(&mut self) -> Option<std::collections::BTreeSet<u64>> {
        let states = self.engine.observers.abstract_states.as_mut()?;
        Some(states.take_visited())
    }

    /// See [`Simulation::noted_instants`].
    pub fn noted_instants(&self) -> Option<NotedInstants> {
        self.engine.net.noted_instants().map(|n| NotedInstants {
            timers_ns: n.timers.clone(),
            server_inputs_ns: n.server_inputs.clone(),
        })
    }

    /// See [`Simulation::run_until`].
    pub fn run_until(&mut self, until: Duration) {
        while let Some(control) = self.engine.next_control(SimTime::from_duration(until)) {
            let began = match control {
                Control::FaultStart(fault) => Some(fault),
                _ => None,
            };
            self.control(control);
            // What an event or a fault's action emitted may have fired an
            // anchor (`Control::Attention`, or an anchor of a fault that a
            // control began): act on it before the next event.
            while self.engine.observers.wants_attention() {
                self.anchors_fired();
            }
            if began.is_some() && self.fingerprint.is_some() {
                self.fingerprint_if_due(began);
            }
        }
    }

    /// See [`Simulation::halted`].
    pub fn halted(&self) -> Option<&Halt> {
        self.engine.halted()
    }

    /// See [`Simulation::run_until_quiescent`].
    pub fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        let limit = SimTime::from_duration(limit).min(self.engine.end());
        let step = self
            .scenario
            .work
            .write_interval
            .max(Duration::from_millis(1));
        while self.engine.now < limit && self.engine.halted().is_none() {
            let next = (self.engine.now + step).min(limit);
            self.run_until(next.since_start());
            if self.is_quiescent() {
                return true;
            }
        }
        self.is_quiescent()
    }

    fn is_quiescent(&self) -> bool {
        self.faults.none_active() && self.leader_at_end()
    }

    /// A start or restart of `node` is due. A node runs at most one process
    /// unless a `replace` fault starts another: a start or restart finding
    /// one running (a `replace` came first) does nothing. After healing that
    /// is expected (healing restarts every node at once) and not traced.
    fn start_node(&mut self, node: u32, healed: bool) {
        if self.engine.lives.node_alive(node) {
            if !healed {
                self.engine.skipped(node, Skipped::StartOfRunningNode);
            }
        } else {
            self.engine.spawn(node, false);
        }
    }

    /// Acts on an event the engine handed back.
    fn control(&mut self, control: Control) {
        let healed = self.faults.healed;
        match control {
            Control::StartNode(node) => {
                let action = FaultAction::StartNode { node };
                self.faults.log(self.engine.now, StepCause::Start, &action);
                self.start_node(node, healed);
            }
            Control::Restart { node, fault } => {
                let action = FaultAction::Restart { node };
                let cause = StepCause::Fault(fault as usize);
                self.faults.log(self.engine.now, cause, &action);
                self.start_node(node, healed);
            }
            Control::FaultStart(fault) => {
                if !healed {
                    self.start_fault(fault as usize);
                }
            }
            Control::FaultEnd(slot) => self.fault_end_due(slot),
            Control::Recur(generator) => {
                if !healed {
                    self.recur(generator);
                }
            }
            Control::StrobeFlip(strobe) => self.strobe_flip(strobe),
            Control::Heal => self.heal_all(),
            // Handled after every control (see `run_until`).
            Control::Attention => {}
        }
    }
}
