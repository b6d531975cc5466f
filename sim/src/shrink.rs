//! Shrinking a failing run to the smallest schedule that still fails.
//!
//! Starting from a failing scenario (typically a seed's generated schedule),
//! the shrinker first turns every seed-drawn recurring fault into the
//! scheduled faults it amounted to, then, keeping only changes after which
//! *the same invariant* still breaks:
//!
//! 1. removes faults by delta debugging (Zeller's ddmin: chunks, then one by
//!    one);
//! 2. turns off random loss and duplication, and resets clock offsets and
//!    drifts;
//! 3. removes nodes that no fault names;
//! 4. shortens each remaining fault (halving its duration while it fails)
//!    and moves it earlier (halving its start), except for liveness failures;
//!
//! repeating 1–4 until a round changes nothing, then
//! 5. ties each remaining fault on a node to that node's own event where the
//!    run still fails so: a pause, an isolation, a crash, a stop or a clock
//!    jump at an instant becomes one anchored on the node's next
//!    `work-started`, `write-sent` or (fenced protocol) `renewal-sent` from
//!    one period (the write or renew interval) before that instant — the
//!    instant was where one schedule put the event, the anchor is the event
//!    on every schedule, so the failure's story survives another seed's
//!    latencies and a real run (`Shrinker::anchor_faults`);
//! 6. cuts the run short after the first violation (unless the invariant is
//!    `liveness`, which needs its whole phase).
//!
//! The result is a standalone scenario: no recurring (seed-drawn) faults, so
//! `fenced-sim run` reproduces the failure from the file alone. The network's
//! latency draws still come from the scenario's seed, which the file keeps.

use std::time::Duration;

use crate::report::{Invariant, Violation};
use crate::scenario::{Anchor, AnchorEvent, FaultSpec, Scenario};
use crate::{Recording, RunOptions, Simulation};

/// What shrinking produced.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The smallest failing scenario found.
    pub scenario: Scenario,
    /// The invariant it breaks.
    pub invariant: String,
    /// Its first violation of that invariant, from a run of `scenario` as
    /// written to a file (its TOML text parsed back): what the file does.
    pub violation: Violation,
    /// The budget ran out before the passes stopped making progress: the
    /// scenario still fails, but may not be the smallest.
    pub budget_exhausted: bool,
    /// Faults before (after materializing recurring ones) and after.
    pub faults_before: usize,
    /// Faults left.
    pub faults_after: usize,
    /// Simulations run while shrinking.
    pub runs: u64,
}

/// Why a scenario could not be shrunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShrinkError {
    /// The scenario does not fail: there is nothing to shrink.
    Passes,
    /// The scenario is invalid.
    Invalid(crate::ScenarioError),
    /// The scenario's run halted on a limit (its report's
    /// [`halted`](crate::Report::halted)): its verdict covers only part of
    /// the run, so there is no failure to shrink to.
    Halted(crate::Halted),
    /// The shrunk scenario, written out and read back, no longer breaks the
    /// invariant: a bug in shrinking or in writing scenarios.
    NotReproduced {
        /// The invariant the original broke.
        invariant: String,
    },
}

impl std::fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShrinkError::Passes => f.write_str("the run has no violation: nothing to shrink"),
            ShrinkError::Invalid(e) => write!(f, "invalid scenario: {e}"),
            ShrinkError::Halted(halt) => write!(f, "the run stopped early: {halt}"),
            ShrinkError::NotReproduced { invariant } => write!(
                f,
                "the shrunk scenario, written out and read back, no longer breaks `{invariant}` \
                 (a bug in shrink or in writing scenarios; please report it)"
            ),
        }
    }
}

impl std::error::Error for ShrinkError {}

/// One simplification to try on a scenario.
type Change = Box<dyn Fn(&mut Scenario)>;

struct Shrinker<'a> {
    options: &'a RunOptions,
    invariant: String,
    runs: u64,
    budget: u64,
    /// The first violation of the target invariant by the scenario being
    /// shrunk: updated with every change kept, so it always describes the
    /// current scenario (never an earlier one).
    violation: Violation,
}

impl Shrinker<'_> {
    /// The first violation of the target invariant, if `candidate` has one;
    /// `None` also when the budget is spent.
    fn fails(&mut self, candidate: &Scenario) -> Option<Violation> {
        if self.runs >= self.budget {
            return None;
        }
        self.run(candidate)
    }

    /// Runs `candidate` whatever the budget (counted all the same) and
    /// returns its first violation of the target invariant.
    fn run(&mut self, candidate: &Scenario) -> Option<Violation> {
        let valid = candidate.validated().ok()?;
        self.runs += 1;
        let report = Simulation::run(&valid, self.options.clone()).ok()?.report;
        // A halted run never "still fails": its verdict covers only part of
        // the run.
        if report.halted.is_some() {
            return None;
        }
        report
            .violations
            .into_iter()
            .find(|v| v.invariant == self.invariant)
    }

    /// Makes `candidate` the current scenario if it still breaks the target
    /// invariant; says whether it did.
    fn keep_if_fails(&mut self, scenario: &mut Scenario, candidate: Scenario) -> bool {
        match self.fails(&candidate) {
            Some(violation) => {
                *scenario = candidate;
                self.violation = violation;
                true
            }
            None => false,
        }
    }

    fn spent(&self) -> bool {
        self.runs >= self.budget
    }

    fn ddmin(&mut self, scenario: &mut Scenario) {
        let mut chunks = 2usize;
        while scenario.faults.len() >= 2 {
            let len = scenario.faults.len();
            let size = len.div_ceil(chunks);
            let mut reduced = false;
            for start in (0..len).step_by(size) {
                let mut candidate = scenario.clone();
                candidate.faults.drain(start..(start + size).min(len));
                if self.keep_if_fails(scenario, candidate) {
                    chunks = (chunks - 1).max(2);
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                if chunks >= len {
                    break;
                }
                chunks = (chunks * 2).min(len);
            }
        }
        // A last pass, one fault at a time (covers a single remaining fault).
        let mut i = 0;
        while i < scenario.faults.len() {
            let mut candidate = scenario.clone();
            candidate.faults.remove(i);
            if !self.keep_if_fails(scenario, candidate) {
                i += 1;
            }
        }
    }

    fn shorten_faults(&mut self, scenario: &mut Scenario) {
        for i in 0..scenario.faults.len() {
            for _ in 0..12 {
                let mut candidate = scenario.clone();
                let shorter = match candidate.faults[i].unanchored_mut() {
                    FaultSpec::Pause { duration, .. }
                    | FaultSpec::Isolate { duration, .. }
                    | FaultSpec::Cut { duration, .. }
                    | FaultSpec::Partition { duration, .. }
                    | FaultSpec::Restart { duration, .. } => halve(duration),
                    FaultSpec::Crash {
                        restart_after: Some(after),
                        ..
                    } => halve(after),
                    _ => false,
                };
                if !shorter || !self.keep_if_fails(scenario, candidate) {
                    break;
                }
            }
        }
    }

    /// Moves each fault earlier (halving its start) while it still fails,
    /// so the run can be cut short sooner.
    fn move_faults_earlier(&mut self, scenario: &mut Scenario) {
        for i in 0..scenario.faults.len() {
            for _ in 0..8 {
                let mut candidate = scenario.clone();
                // An anchored fault's `at` is the earliest its anchor
                // counts: moving it earlier keeps the anchor.
                let earlier = candidate.faults[i].at_mut().is_some_and(halve);
                if !earlier || !self.keep_if_fails(scenario, candidate) {
                    break;
                }
            }
        }
    }

    fn simplify_environment(&mut self, scenario: &mut Scenario) {
        let mut tries: Vec<Change> = vec![
            Box::new(|s| s.network.loss = 0.0),
            Box::new(|s| s.network.duplicate = 0.0),
        ];
        for i in 0..scenario.nodes.len() {
            tries.push(Box::new(move |s| s.nodes[i].clock_drift = 0.0));
            tries.push(Box::new(move |s| s.nodes[i].clock_offset.0 = 0));
        }
        for change in tries {
            let mut candidate = scenario.clone();
            change(&mut candidate);
            if candidate != *scenario {
                self.keep_if_fails(scenario, candidate);
            }
        }
    }

    fn drop_nodes(&mut self, scenario: &mut Scenario) {
        let mut i = scenario.nodes.len();
        while i > 0 && scenario.nodes.len() > 1 {
            i -= 1;
            let id = scenario.nodes[i].id.clone();
            if scenario.faults.iter().any(|f| names(f, &id)) {
                continue;
            }
            let mut candidate = scenario.clone();
            candidate.nodes.remove(i);
            self.keep_if_fails(scenario, candidate);
        }
    }

    /// Step 5 of the module's list: each fault of a node at an instant,
    /// tried anchored on the node's own events in turn; the first that
    /// still fails is kept. An anchor the fault's kind or the protocol does
    /// not allow is invalid, so never kept.
    fn anchor_faults(&mut self, scenario: &mut Scenario) {
        let candidates = [
            (AnchorEvent::WorkStarted, scenario.work.write_interval),
            (AnchorEvent::WriteSent, scenario.work.write_interval),
            (AnchorEvent::RenewalSent, scenario.election.renew_interval),
        ];
        for i in 0..scenario.faults.len() {
            for (event, period) in candidates {
                let mut fault = scenario.faults[i].clone();
                let Some((node, at)) = node_instant(&mut fault) else {
                    break;
                };
                if !scenario.nodes.iter().any(|n| n.id == node) {
                    break;
                }
                let anchor = Anchor::on(event).of_node(node);
                *at = at.saturating_sub(period);
                let mut candidate = scenario.clone();
                candidate.faults[i] = fault.anchored(anchor);
                if self.keep_if_fails(scenario, candidate) {
                    break;
                }
            }
        }
    }

    fn cut_short(&mut self, scenario: &mut Scenario) {
        if self.invariant == Invariant::Liveness.name() {
            return;
        }
        let end = Duration::from_millis(self.violation.at_ms) + Duration::from_secs(1);
        if end >= scenario.duration {
            return;
        }
        let mut candidate = scenario.clone();
        candidate.duration = end;
        candidate.heal_at = None;
        candidate
            .faults
            .retain(|f| f.window().is_none_or(|(at, _)| at < end));
        self.keep_if_fails(scenario, candidate);
    }
}

/// The node and instant of a fault that [`Shrinker::anchor_faults`] may
/// tie to the node's events (not anchored yet, of one host), the instant
/// mutable. Whether the host is a node is the caller's question.
fn node_instant(fault: &mut FaultSpec) -> Option<(&str, &mut Duration)> {
    match fault {
        FaultSpec::Pause { host, at, .. }
        | FaultSpec::Isolate { host, at, .. }
        | FaultSpec::ClockJump { host, at, .. }
        | FaultSpec::Crash { node: host, at, .. }
        | FaultSpec::Stop { node: host, at, .. } => Some((host, at)),
        _ => None,
    }
}

fn halve(d: &mut Duration) -> bool {
    if *d <= Duration::from_millis(2) {
        return false;
    }
    *d /= 2;
    true
}

/// Whether `fault` names host `id`.
fn names(fault: &FaultSpec, id: &str) -> bool {
    match fault {
        FaultSpec::Pause { host, .. }
        | FaultSpec::Isolate { host, .. }
        | FaultSpec::Restart { host, .. }
        | FaultSpec::ClockJump { host, .. }
        | FaultSpec::ClockSlew { host, .. }
        | FaultSpec::ClockStrobe { host, .. } => host == id,
        FaultSpec::Cut { from, to, .. } => from == id || to == id,
        FaultSpec::Partition { groups, .. } => groups.iter().flatten().any(|h| h == id),
        FaultSpec::Crash { node, .. }
        | FaultSpec::Replace { node, .. }
        | FaultSpec::Stop { node, .. }
        | FaultSpec::Abdicate { node, .. } => node == id,
        FaultSpec::Recurring { node, .. } => node.as_deref().is_none_or(|n| n == id),
        FaultSpec::Anchored { when, fault } => {
            when.node.as_deref().is_none_or(|n| n == id) || names(fault, id)
        }
    }
}

/// Shrinks `scenario`, which must fail, within `budget` simulation runs
/// (at least 3): the first run finds the invariant, the last reruns the
/// result as it reads back from its TOML text, so that what is reported —
/// the invariant, when and how it breaks — is what the written file does,
/// even when the budget ran out mid-pass.
///
/// # Errors
/// [`ShrinkError::Passes`] if the scenario has no violation;
/// [`ShrinkError::Invalid`] if it is not a valid scenario;
/// [`ShrinkError::Halted`] if its run stops on a limit before its end;
/// [`ShrinkError::NotReproduced`] if the result, read back, does not fail
/// (a bug).
pub fn shrink(
    scenario: &Scenario,
    options: &RunOptions,
    budget: u64,
) -> Result<Shrunk, ShrinkError> {
    let sim = Simulation::from_scenario(scenario, options.clone()).map_err(ShrinkError::Invalid)?;
    let finished = sim
        .finish(Recording {
            recurring_faults: true,
            ..Recording::default()
        })
        .expect("a run without a trace writer has nothing to fail to write");
    let report = finished.report;
    if let Some(halt) = report.halted {
        return Err(ShrinkError::Halted(halt));
    }
    let first = report
        .violations
        .first()
        .cloned()
        .ok_or(ShrinkError::Passes)?;
    let mut shrinker = Shrinker {
        options,
        invariant: first.invariant.clone(),
        runs: 1,
        // One run is kept back for the final check of the written scenario.
        budget: budget.max(3) - 1,
        violation: first,
    };
    // Seed-drawn faults become scheduled ones, if the run still fails so.
    let mut current = scenario.clone();
    if current
        .faults
        .iter()
        .any(|f| matches!(f, FaultSpec::Recurring { .. }))
    {
        let mut fixed = current.clone();
        fixed
            .faults
            .retain(|f| !matches!(f, FaultSpec::Recurring { .. }));
        fixed.faults.extend(finished.recurring_faults);
        shrinker.keep_if_fails(&mut current, fixed);
    }
    let faults_before = current.faults.len();
    // Repeat the passes until none makes progress: a simpler environment can
    // make a fault removable, and fewer faults can make a node removable.
    loop {
        let before = current.clone();
        shrinker.ddmin(&mut current);
        shrinker.simplify_environment(&mut current);
        shrinker.drop_nodes(&mut current);
        shrinker.shorten_faults(&mut current);
        if shrinker.invariant != Invariant::Liveness.name() {
            shrinker.move_faults_earlier(&mut current);
        }
        if current == before || shrinker.spent() {
            break;
        }
    }
    shrinker.anchor_faults(&mut current);
    shrinker.cut_short(&mut current);
    let budget_exhausted = shrinker.spent();
    current.name = format!("{}-shrunk", scenario.name);
    current.description = None;
    current.expect = Default::default();
    // What the file will do: its text, read back and run.
    let written = crate::file::parse(
        &crate::to_toml::to_toml(&current),
        std::path::Path::new("shrunk.toml"),
    )
    .map_err(|_| ShrinkError::NotReproduced {
        invariant: shrinker.invariant.clone(),
    })?;
    let violation = shrinker
        .run(&written)
        .ok_or_else(|| ShrinkError::NotReproduced {
            invariant: shrinker.invariant.clone(),
        })?;
    current.description = Some(format!(
        "Shrunk from {} (seed {}): breaks `{}` at {:.3}s — {}",
        scenario.name,
        scenario.seed,
        violation.invariant,
        violation.at_ms as f64 / 1000.0,
        violation.detail
    ));
    Ok(Shrunk {
        faults_after: current.faults.len(),
        scenario: current,
        invariant: shrinker.invariant,
        violation,
        budget_exhausted,
        faults_before,
        runs: shrinker.runs,
    })
}
