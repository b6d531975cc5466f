//! The public face of a run: [`Simulation`], whatever the protocol.

use std::io::Write;
use std::time::Duration;

use fenced_zoo::{client_go, connection_lock, dynamodb, etcd, redlock, zookeeper};

use super::symmetry::{Symmetry, SymmetryError};
use super::{Core, StateFingerprint};
use crate::engine::limits::Halt;
use crate::hosts::FencedHosts;
use crate::report::Report;
use crate::scenario::{FaultSpec, PlanStep, Scenario, ScenarioError, ValidScenario};
use crate::timeline::Timeline;
use crate::zoo::ZooHosts;

use super::RunOptions;

/// A deterministic simulation of one scenario and seed.
///
/// A tool that judges whole runs calls [`Simulation::run`] (or
/// [`new`](Self::new) then [`finish`](Self::finish), to record a trace, a
/// timeline or the recurring faults); one that steps a run (scripting,
/// quiescence) keeps the simulation from [`new`](Self::new) and calls the
/// `run_*` methods.
///
/// ```
/// use std::time::Duration;
/// use fenced_sim::{Anchor, AnchorEvent, FaultSpec, RunOptions, Scenario, Simulation};
///
/// let mut scenario = Scenario::new("pause-demo", Duration::from_secs(120))
///     .with_nodes(["node-a", "node-b"]);
/// // node-a asks first and leads; then it stalls for 40 s inside a unit of
/// // work: the first one it starts after 12 s (an anchored fault).
/// scenario.nodes[1].start_at = Duration::from_secs(1);
/// let pause = FaultSpec::Pause {
///     host: "node-a".into(),
///     at: Duration::from_secs(12),
///     duration: Duration::from_secs(40),
/// };
/// let scenario = scenario.with_fault(FaultSpec::Anchored {
///     when: Anchor::on(AnchorEvent::WorkStarted).of_node("node-a"),
///     fault: Box::new(pause),
/// });
/// let valid = scenario.validated()?; // every rule checked once, here
/// let report = Simulation::run(&valid, RunOptions::default())?.report;
/// assert!(report.violations.is_empty());
/// assert_eq!(report.leader_changes, 1);
/// assert_eq!(report.writes.rejected_stale, 1); // the paused leader's late write
/// # Ok::<(), fenced_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
pub struct Simulation {
    core: Cores,
}

/// A [`Core`] of whichever protocol the scenario names. An enum rather than
/// a trait object so that every method of [`Simulation`] is written (and
/// documented) once, there; the match costs one branch per call, never per
/// event (the loop runs inside `Core::run_until`, monomorphized per protocol).
#[derive(Debug)]
enum Cores {
    Fenced(Box<Core<FencedHosts>>),
    ConnectionLock(Box<Core<ZooHosts<connection_lock::ConnectionLock>>>),
    ClientGo(Box<Core<ZooHosts<client_go::ClientGo>>>),
    Etcd(Box<Core<ZooHosts<etcd::Etcd>>>),
    Redlock(Box<Core<ZooHosts<redlock::Redlock>>>),
    ZooKeeper(Box<Core<ZooHosts<zookeeper::ZooKeeper>>>),
    DynamoDb(Box<Core<ZooHosts<dynamodb::DynamoDb>>>),
}

/// `$body` with `$core` bound to the simulation's [`Core`], whatever its
/// protocol.
macro_rules! each_core {
    ($cores:expr, $core:ident => $body:expr) => {
        match $cores {
            Cores::Fenced($core) => $body,
            Cores::ConnectionLock($core) => $body,
            Cores::ClientGo($core) => $body,
            Cores::Etcd($core) => $body,
            Cores::Redlock($core) => $body,
            Cores::ZooKeeper($core) => $body,
            Cores::DynamoDb($core) => $body,
        }
    };
}

/// What a run records besides its report ([`Simulation::finish`]). All off
/// by default: the timeline and the fault log grow with the run, and the
/// text trace costs a line per event.
#[derive(Default)]
pub struct Recording {
    /// Write the text trace (one line per event) here.
    pub trace: Option<Box<dyn Write + Send>>,
    /// Record a [`Timeline`] for pictures.
    pub timeline: bool,
    /// Log every recurring fault that fires as the scheduled fault it
    /// amounts to (what shrinking needs).
    pub recurring_faults: bool,
}

/// A run taken to its end (or to a halt) by [`Simulation::run`] or
/// [`Simulation::finish`].
#[derive(Debug)]
pub struct Finished {
    /// The report as of the run's last event.
    pub report: Report,
    /// The timeline, if [`Recording::timeline`] asked for one.
    pub timeline: Option<Timeline>,
    /// The recurring faults that fired, if [`Recording::recurring_faults`]
    /// asked for them (empty otherwise), in order.
    pub recurring_faults: Vec<FaultSpec>,
}

/// The protocol's boundary instants a scripted run noted
/// ([`Simulation::record_instants`]): where `fenced-sim verify` starts
/// faults besides its grid. True time in nanoseconds, increasing, each
/// instant once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotedInstants {
    /// When a timer fired: every deadline of every host.
    pub timers_ns: Vec<u64>,
    /// When a message reached a server (the store judged a request: a
    /// lease's expiry is one TTL later).
    pub server_inputs_ns: Vec<u64>,
}

impl Simulation {
    /// Sets up a run of a valid scenario at time zero, with the lock design
    /// its `[election] protocol` names (the fenced protocol by default). Nothing
    /// happens until one of the `run_*` methods is called. The scenario's
    /// rules were checked when it was [validated](Scenario::validated); only
    /// the run options can still be refused.
    ///
    /// # Errors
    /// An event budget above [`MAX_EVENTS_LIMIT`](crate::limits::MAX_EVENTS_LIMIT) or zero (key `--max-events`); or a
    /// scenario whose [`estimated_events`](crate::limits::estimated_events)
    /// already exceed the budget (named by the key most responsible): see
    /// [`check_budget`](crate::limits::check_budget).
    pub fn new(valid: &ValidScenario, options: RunOptions) -> Result<Self, ScenarioError> {
        use crate::scenario::ProtocolSpec as P;
        let o = &options;
        let core = match &valid.election.protocol {
            P::Fenced => Cores::Fenced(Box::new(Core::fenced(valid, o)?)),
            P::ConnectionLock(s) => Cores::ConnectionLock(Box::new(Core::zoo(valid, o, s)?)),
            P::ClientGo(s) => Cores::ClientGo(Box::new(Core::zoo(valid, o, s)?)),
            P::Etcd(s) => Cores::Etcd(Box::new(Core::zoo(valid, o, s)?)),
            P::Redlock(s) => Cores::Redlock(Box::new(Core::zoo(valid, o, s)?)),
            P::ZooKeeper(s) => Cores::ZooKeeper(Box::new(Core::zoo(valid, o, s)?)),
            P::DynamoDb(s) => Cores::DynamoDb(Box::new(Core::zoo(valid, o, s)?)),
        };
        Ok(Simulation { core })
    }

    /// Validates `scenario` and sets up a run of it: [`Scenario::validated`]
    /// then [`new`](Self::new).
    ///
    /// # Errors
    /// The first rule the scenario breaks, or what [`new`](Self::new) refuses.
    pub fn from_scenario(scenario: &Scenario, options: RunOptions) -> Result<Self, ScenarioError> {
        Self::new(&scenario.validated()?, options)
    }

    /// Runs a valid scenario to its end and reports: the one run path of
    /// every tool that judges a whole run ([`new`](Self::new), then
    /// [`finish`](Self::finish) recording nothing). A run that halts on a
    /// limit still returns, its report's
    /// [`halted`](Report::halted) saying when and why.
    ///
    /// # Errors
    /// What [`new`](Self::new) refuses.
    pub fn run(valid: &ValidScenario, options: RunOptions) -> Result<Finished, ScenarioError> {
        let finished = Self::new(valid, options)?.finish(Recording::default());
        Ok(finished.expect("a run without a trace writer has nothing to fail to write"))
    }

    /// Validates `scenario` and runs it: [`Scenario::validated`] then
    /// [`run`](Self::run).
    ///
    /// # Errors
    /// The first rule the scenario breaks, or what [`new`](Self::new) refuses.
    pub fn run_scenario(
        scenario: &Scenario,
        options: RunOptions,
    ) -> Result<Finished, ScenarioError> {
        Self::run(&scenario.validated()?, options)
    }

    /// Runs to the scenario's end (or a halt), recording what `recording`
    /// asks for from now on (so from the start, on a simulation fresh from
    /// [`new`](Self::new)), and reports. [`run`](Self::run) is this with
    /// nothing recorded.
    ///
    /// # Errors
    /// The first I/O error writing the trace; the run itself always ends.
    pub fn finish(mut self, recording: Recording) -> std::io::Result<Finished> {
        let Recording {
            trace,
            timeline,
            recurring_faults,
        } = recording;
        if timeline {
            self.record_timeline();
        }
        if recurring_faults {
            self.record_recurring_faults();
        }
        if let Some(out) = trace {
            self.set_trace_writer(out);
        }
        self.run_to_end();
        self.finish_trace()?;
        Ok(Finished {
            report: self.report(),
            timeline: self.timeline(),
            recurring_faults: self.recurring_faults().to_vec(),
        })
    }

    /// Adds a fault to a simulation in progress (scripting). Its times are
    /// absolute; a start already in the past happens at the current time.
    ///
    /// # Errors
    /// A [`ScenarioError`] if the fault names unknown hosts or is malformed.
    pub fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError> {
        each_core!(&mut self.core, c => c.add_fault(fault))
    }

    /// Records every recurring fault that fires from now on as the scheduled
    /// fault it amounts to (see [`recurring_faults`](Self::recurring_faults)):
    /// what shrinking needs to turn seed-drawn faults into a fixed schedule.
    /// Off by default, because the log grows with the run.
    pub fn record_recurring_faults(&mut self) {
        each_core!(&mut self.core, c => c.record_recurring_faults())
    }

    /// The recurring faults that fired since
    /// [`record_recurring_faults`](Self::record_recurring_faults), in order.
    pub fn recurring_faults(&self) -> &[FaultSpec] {
        each_core!(&self.core, c => c.recurring_faults())
    }

    /// Records every fault action executed from now on — node starts, each
    /// start and end of a fault, restarts, the heal — as the
    /// [`PlanStep`] of the scenario's [`FaultPlan`](crate::FaultPlan) it
    /// executes, drawn (recurring) faults included (see
    /// [`fault_actions`](Self::fault_actions)). Off by default: the log grows
    /// with the run. What lets a test check that the simulator executes the
    /// plan the lab executes for real.
    pub fn record_fault_actions(&mut self) {
        each_core!(&mut self.core, c => c.record_fault_actions())
    }

    /// The fault actions executed since
    /// [`record_fault_actions`](Self::record_fault_actions), in order. A
    /// step is logged when its instant comes, whatever it then finds (a
    /// start of a running node, a crash of a dead one); steps never reached
    /// are not: a restart whose crash or stop found no live process, the
    /// end of a drawn pause that paused nothing, a fault after the heal.
    pub fn fault_actions(&self) -> &[PlanStep] {
        each_core!(&self.core, c => c.fault_actions())
    }

    /// Records a [`Timeline`] (truth of the lease, faults per host, writes,
    /// grants, membership) from now on, for pictures. Off by default: it
    /// grows with the run.
    pub fn record_timeline(&mut self) {
        each_core!(&mut self.core, c => c.record_timeline())
    }

    /// The timeline recorded since [`record_timeline`](Self::record_timeline),
    /// closed at the current time, or `None` if none was recorded.
    pub fn timeline(&self) -> Option<Timeline> {
        each_core!(&self.core, c => c.timeline())
    }

    /// Writes the text trace (one line per event) to `out` from now on.
    pub fn set_trace_writer(&mut self, out: Box<dyn Write + Send>) {
        each_core!(&mut self.core, c => c.set_trace_writer(out))
    }

    /// Flushes the trace writer and reports the first error writing it.
    ///
    /// # Errors
    /// The first I/O error of the trace writer.
    pub fn finish_trace(&mut self) -> std::io::Result<()> {
        each_core!(&mut self.core, c => c.finish_trace())
    }

    /// The current true time.
    pub fn now(&self) -> Duration {
        each_core!(&self.core, c => c.now())
    }

    /// The run's end (the scenario's duration).
    pub fn end(&self) -> Duration {
        each_core!(&self.core, c => c.end())
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        each_core!(&self.core, c => c.events())
    }

    /// Events scheduled and not yet processed (messages in flight, timers,
    /// faults): with the hosts, what the simulation's memory is made of.
    pub fn pending_events(&self) -> usize {
        each_core!(&self.core, c => c.pending_events())
    }

    /// The trace hash so far.
    pub fn trace_hash(&self) -> u64 {
        each_core!(&self.core, c => c.trace_hash())
    }

    /// How many messages the network has timed so far under the scenario's
    /// `[network.script]` (each one a choice point of `fenced-sim verify`);
    /// `None` when the scenario has no script (latencies are drawn).
    pub fn scripted_draws(&self) -> Option<u64> {
        each_core!(&self.core, c => c.scripted_draws())
    }

    /// The order points met so far under a `[network.script]` (`None`:
    /// no script): instants at which two events for one host were due
    /// together, each a choice `reorder` can name.
    pub fn scripted_order_points(&self) -> Option<u64> {
        each_core!(&self.core, c => c.scripted_order_points())
    }

    /// Under a `[network.script]`, note from now on the instants timers
    /// fire and messages reach a server (at most 2^20 of each), for
    /// [`noted_instants`](Self::noted_instants). Nothing without a script.
    pub fn record_instants(&mut self) {
        each_core!(&mut self.core, c => c.record_instants())
    }

    /// Note from now on the protocol's abstract states the run visits
    /// (`observation::AbstractStates`: a projection with every time
    /// dropped, the measure of `fenced-sim verify --swarm`). Off by default:
    /// it costs a little on every observation.
    pub fn record_abstract_states(&mut self) {
        each_core!(&mut self.core, c => c.record_abstract_states())
    }

    /// The abstract states visited since
    /// [`record_abstract_states`](Self::record_abstract_states), taken out
    /// (`None`: not asked for).
    pub fn take_abstract_states(&mut self) -> Option<std::collections::BTreeSet<u64>> {
        each_core!(&mut self.core, c => c.take_abstract_states())
    }

    /// The instants noted since [`record_instants`](Self::record_instants)
    /// (`None`: no script, or not asked for).
    pub fn noted_instants(&self) -> Option<NotedInstants> {
        each_core!(&self.core, c => c.noted_instants())
    }

    /// From now on, take the whole state's fingerprint right after the
    /// scenario's scheduled fault `fault` (an index in its `faults`)
    /// begins: see [`StateFingerprint`]. What `fenced-sim verify` compares
    /// runs by; a fault that never begins (after the heal) takes none.
    pub fn fingerprint_after_fault(&mut self, fault: u32, symmetry: Option<Symmetry>) {
        each_core!(&mut self.core, c => c.fingerprint_after_fault(fault, symmetry))
    }

    /// The fingerprint asked for by
    /// [`fingerprint_after_fault`](Self::fingerprint_after_fault), once
    /// taken.
    pub fn taken_fingerprint(&self) -> Option<Result<&StateFingerprint, &SymmetryError>> {
        each_core!(&self.core, c => c.taken_fingerprint())
    }

    /// The whole state's 128-bit hash now (see [`StateFingerprint`]): two
    /// simulations of one scenario with equal hashes at the same instant
    /// run the same from there on.
    pub fn state_fingerprint(&self) -> u128 {
        each_core!(&self.core, c => c.state_fingerprint())
    }

    /// The whole state now as the text [`state_fingerprint`](Self::state_fingerprint)
    /// hashes (`Debug` representations, one part a line): what a
    /// [`Symmetry`] renames.
    pub fn state_text(&self) -> String {
        let mut text = String::new();
        each_core!(&self.core, c => c.write_state(&mut text))
            .expect("writing a state's text cannot fail");
        text
    }

    /// Runs every event before `until` (capped at the run's end); the clock
    /// then reads `until` — unless the run halts on a limit first (see
    /// [`halted`](Self::halted)), after which nothing runs and the clock stays
    /// where the halt found it.
    pub fn run_until(&mut self, until: Duration) {
        each_core!(&mut self.core, c => c.run_until(until))
    }

    /// Why the run stopped before its end, if it did: a limit of
    /// [`crate::limits`] was reached. The report then covers only the time
    /// simulated, and tools treat the run as bad input.
    pub fn halted(&self) -> Option<&Halt> {
        each_core!(&self.core, c => c.halted())
    }

    /// Runs to the scenario's duration.
    pub fn run_to_end(&mut self) {
        let end = each_core!(&self.core, c => c.end());
        each_core!(&mut self.core, c => c.run_until(end))
    }

    /// Runs until the cluster is quiescent — no fault active right now (one
    /// scheduled for later may still start), one process leads, and the
    /// downstream accepted its token recently — or until `limit`.
    /// Returns whether it converged.
    pub fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        each_core!(&mut self.core, c => c.run_until_quiescent(limit))
    }

    /// Begins the liveness phase: ends every active fault (paused hosts
    /// resume and handle what queued), stops random loss and duplication,
    /// restarts every node that has no live process, and stops scheduled and
    /// recurring faults from starting. Clock offsets and drifts stay: they are
    /// properties of the hosts, not faults. Idempotent.
    pub fn heal_all(&mut self) {
        each_core!(&mut self.core, c => c.heal_all())
    }

    /// The report as of now (normally called after [`run_to_end`](Self::run_to_end)).
    pub fn report(&self) -> Report {
        each_core!(&self.core, c => c.report())
    }
}
