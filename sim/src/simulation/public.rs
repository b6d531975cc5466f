//! The public face of a run: [`Simulation`], whatever the protocol.

use std::io::Write;
use std::time::Duration;

use super::{Core, SimHosts};
use crate::engine::limits::Halt;
use crate::report::Report;
use crate::scenario::{FaultSpec, PlanStep, Scenario, ScenarioError, ValidScenario};
use crate::timeline::Timeline;
use crate::zoo::ZooHosts;

use super::RunOptions;

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
/// let valid = scenario.validated()?; // every rule checked once, here
/// let mut sim = Simulation::new(&valid, RunOptions::default())?;
/// sim.run_to_end();
/// let report = sim.report();
/// assert!(report.violations.is_empty());
/// assert_eq!(report.leader_changes, 1);
/// assert_eq!(report.writes.rejected_stale, 1); // the paused leader's late write
/// # Ok::<(), fenced_sim::ScenarioError>(())
/// ```
#[derive(Debug)]
pub struct Simulation {
    core: Box<dyn Run>,
}

/// A [`Core`] of any protocol, as a [`Simulation`] drives it.
trait Run: std::fmt::Debug + Send {
    fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError>;
    fn record_recurring_faults(&mut self);
    fn recurring_faults(&self) -> &[FaultSpec];
    fn record_fault_actions(&mut self);
    fn fault_actions(&self) -> &[PlanStep];
    fn record_timeline(&mut self);
    fn timeline(&self) -> Option<Timeline>;
    fn set_trace_writer(&mut self, out: Box<dyn Write + Send>);
    fn finish_trace(&mut self) -> std::io::Result<()>;
    fn now(&self) -> Duration;
    fn end(&self) -> Duration;
    fn events(&self) -> u64;
    fn pending_events(&self) -> usize;
    fn trace_hash(&self) -> u64;
    fn run_until(&mut self, until: Duration);
    fn halted(&self) -> Option<&Halt>;
    fn run_until_quiescent(&mut self, limit: Duration) -> bool;
    fn heal_all(&mut self);
    fn report(&self) -> Report;
}

impl<H: SimHosts> Run for Core<H> {
    fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError> {
        Core::add_fault(self, fault)
    }
    fn record_recurring_faults(&mut self) {
        Core::record_recurring_faults(self)
    }
    fn recurring_faults(&self) -> &[FaultSpec] {
        Core::recurring_faults(self)
    }
    fn record_fault_actions(&mut self) {
        Core::record_fault_actions(self)
    }
    fn fault_actions(&self) -> &[PlanStep] {
        Core::fault_actions(self)
    }
    fn record_timeline(&mut self) {
        Core::record_timeline(self)
    }
    fn timeline(&self) -> Option<Timeline> {
        Core::timeline(self)
    }
    fn set_trace_writer(&mut self, out: Box<dyn Write + Send>) {
        Core::set_trace_writer(self, out)
    }
    fn finish_trace(&mut self) -> std::io::Result<()> {
        Core::finish_trace(self)
    }
    fn now(&self) -> Duration {
        Core::now(self)
    }
    fn end(&self) -> Duration {
        Core::end(self)
    }
    fn events(&self) -> u64 {
        Core::events(self)
    }
    fn pending_events(&self) -> usize {
        Core::pending_events(self)
    }
    fn trace_hash(&self) -> u64 {
        Core::trace_hash(self)
    }
    fn run_until(&mut self, until: Duration) {
        Core::run_until(self, until)
    }
    fn halted(&self) -> Option<&Halt> {
        Core::halted(self)
    }
    fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        Core::run_until_quiescent(self, limit)
    }
    fn heal_all(&mut self) {
        Core::heal_all(self)
    }
    fn report(&self) -> Report {
        Core::report(self)
    }
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
        use fenced_zoo::{client_go, connection_lock, dynamodb, etcd, redlock, zookeeper};
        let o = &options;
        let core: Box<dyn Run> = match &valid.election.protocol {
            P::Fenced => Box::new(Core::fenced(valid, o)?),
            P::ConnectionLock(s) => Box::new(
                Core::<ZooHosts<connection_lock::ConnectionLock>>::zoo(valid, o, s)?,
            ),
            P::ClientGo(s) => Box::new(Core::<ZooHosts<client_go::ClientGo>>::zoo(valid, o, s)?),
            P::Etcd(s) => Box::new(Core::<ZooHosts<etcd::Etcd>>::zoo(valid, o, s)?),
            P::Redlock(s) => Box::new(Core::<ZooHosts<redlock::Redlock>>::zoo(valid, o, s)?),
            P::ZooKeeper(s) => Box::new(Core::<ZooHosts<zookeeper::ZooKeeper>>::zoo(valid, o, s)?),
            P::DynamoDb(s) => Box::new(Core::<ZooHosts<dynamodb::DynamoDb>>::zoo(valid, o, s)?),
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

    /// Adds a fault to a simulation in progress (scripting). Its times are
    /// absolute; a start already in the past happens at the current time.
    ///
    /// # Errors
    /// A [`ScenarioError`] if the fault names unknown hosts or is malformed.
    pub fn add_fault(&mut self, fault: FaultSpec) -> Result<(), ScenarioError> {
        self.core.add_fault(fault)
    }

    /// Records every recurring fault that fires from now on as the scheduled
    /// fault it amounts to (see [`recurring_faults`](Self::recurring_faults)):
    /// what shrinking needs to turn seed-drawn faults into a fixed schedule.
    /// Off by default, because the log grows with the run.
    pub fn record_recurring_faults(&mut self) {
        self.core.record_recurring_faults()
    }

    /// The recurring faults that fired since
    /// [`record_recurring_faults`](Self::record_recurring_faults), in order.
    pub fn recurring_faults(&self) -> &[FaultSpec] {
        self.core.recurring_faults()
    }

    /// Records every fault action executed from now on — node starts, each
    /// start and end of a fault, restarts, the heal — as the
    /// [`PlanStep`] of the scenario's [`FaultPlan`](crate::FaultPlan) it
    /// executes, drawn (recurring) faults included (see
    /// [`fault_actions`](Self::fault_actions)). Off by default: the log grows
    /// with the run. What lets a test check that the simulator executes the
    /// plan the lab executes for real.
    pub fn record_fault_actions(&mut self) {
        self.core.record_fault_actions()
    }

    /// The fault actions executed since
    /// [`record_fault_actions`](Self::record_fault_actions), in order. A
    /// step is logged when its instant comes, whatever it then finds (a
    /// start of a running node, a crash of a dead one); steps never reached
    /// are not: a restart whose crash or stop found no live process, the
    /// end of a drawn pause that paused nothing, a fault after the heal.
    pub fn fault_actions(&self) -> &[PlanStep] {
        self.core.fault_actions()
    }

    /// Records a [`Timeline`] (truth of the lease, faults per host, writes,
    /// grants, membership) from now on, for pictures. Off by default: it
    /// grows with the run.
    pub fn record_timeline(&mut self) {
        self.core.record_timeline()
    }

    /// The timeline recorded since [`record_timeline`](Self::record_timeline),
    /// closed at the current time, or `None` if none was recorded.
    pub fn timeline(&self) -> Option<Timeline> {
        self.core.timeline()
    }

    /// Writes the text trace (one line per event) to `out` from now on.
    pub fn set_trace_writer(&mut self, out: Box<dyn Write + Send>) {
        self.core.set_trace_writer(out)
    }

    /// Flushes the trace writer and reports the first error writing it.
    ///
    /// # Errors
    /// The first I/O error of the trace writer.
    pub fn finish_trace(&mut self) -> std::io::Result<()> {
        self.core.finish_trace()
    }

    /// The current true time.
    pub fn now(&self) -> Duration {
        self.core.now()
    }

    /// The run's end (the scenario's duration).
    pub fn end(&self) -> Duration {
        self.core.end()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.core.events()
    }

    /// Events scheduled and not yet processed (messages in flight, timers,
    /// faults): with the hosts, what the simulation's memory is made of.
    pub fn pending_events(&self) -> usize {
        self.core.pending_events()
    }

    /// The trace hash so far.
    pub fn trace_hash(&self) -> u64 {
        self.core.trace_hash()
    }

    /// Runs every event before `until` (capped at the run's end); the clock
    /// then reads `until` — unless the run halts on a limit first (see
    /// [`halted`](Self::halted)), after which nothing runs and the clock stays
    /// where the halt found it.
    pub fn run_until(&mut self, until: Duration) {
        self.core.run_until(until)
    }

    /// Why the run stopped before its end, if it did: a limit of
    /// [`crate::limits`] was reached. The report then covers only the time
    /// simulated, and tools treat the run as bad input.
    pub fn halted(&self) -> Option<&Halt> {
        self.core.halted()
    }

    /// Runs to the scenario's duration.
    pub fn run_to_end(&mut self) {
        let end = self.core.end();
        self.core.run_until(end)
    }

    /// Runs until the cluster is quiescent — no fault active right now (one
    /// scheduled for later may still start), one process leads, and the
    /// downstream accepted its token recently — or until `limit`.
    /// Returns whether it converged.
    pub fn run_until_quiescent(&mut self, limit: Duration) -> bool {
        self.core.run_until_quiescent(limit)
    }

    /// Begins the liveness phase: ends every active fault (paused hosts
    /// resume and handle what queued), stops random loss and duplication,
    /// restarts every node that has no live process, and stops scheduled and
    /// recurring faults from starting. Clock offsets and drifts stay: they are
    /// properties of the hosts, not faults. Idempotent.
    pub fn heal_all(&mut self) {
        self.core.heal_all()
    }

    /// The report as of now (normally called after [`run_to_end`](Self::run_to_end)).
    pub fn report(&self) -> Report {
        self.core.report()
    }
}
