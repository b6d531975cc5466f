//! After a real run: its histories judged by the simulator's checker, and
//! the simulator's prediction of the same scenario.
//!
//! 1. [`scaled_scenario`]: the scenario as the lab ran it — every duration
//!    multiplied by the time scale exactly as [`crate::plan`] scales it, and
//!    the run's seed — so the checker's expectations (`max_failover`, ...)
//!    and the simulator's prediction are those of the run that happened.
//! 2. [`judge_histories`]: the run directory's history files (`*.jsonl`)
//!    through [`fenced_sim::history::check_paths`], the library path of
//!    `fenced-sim check-history --scenario`, cut at the run's end.
//! 3. [`simulate`]: [`fenced_sim::Simulation`] on the same scaled scenario
//!    and seed.

use std::fmt;
use std::path::{Path, PathBuf};

use fenced_sim::history::{check_paths, CheckOptions, HistoryError, Judged};

use fenced_sim::Simulation;
use fenced_sim::{ClockOffset, FaultSpec, Halted, Report, RunOptions, Scenario, ScenarioError};
use fenced_sim::{DurationRange, ValidScenario};

use crate::plan::TimeScale;

/// `scenario` as the lab runs it at `scale` with `seed`.
pub fn scaled_scenario(scenario: &ValidScenario, scale: TimeScale, seed: u64) -> Scenario {
    let d = |d| scale.scale(d);
    let core = scenario.elector_timings(0);
    let mut s: Scenario = scenario.scenario().clone();
    s.seed = seed;
    s.duration = d(s.duration);
    s.election.lease_ttl = d(s.election.lease_ttl);
    s.election.renew_interval = d(s.election.renew_interval);
    s.election.retry_interval = d(s.election.retry_interval);
    // As the plan gives the nodes: the core's resolved values, scaled.
    s.election.safety_margin = core.safety_margin.map(d);
    s.election.rejoin_delay = core.rejoin_delay.map(d);
    s.membership.heartbeat_interval = d(s.membership.heartbeat_interval);
    s.membership.liveness_ttl = d(s.membership.liveness_ttl);
    s.work.write_interval = d(s.work.write_interval);
    s.work.work_duration = d(s.work.work_duration);
    s.network.latency = (d(s.network.latency.0), d(s.network.latency.1));
    s.network.retransmit_timeout = d(s.network.retransmit_timeout);
    s.client.connect_timeout = d(s.client.connect_timeout);
    s.client.query_timeout = d(s.client.query_timeout);
    s.client.query_grace = d(s.client.query_grace);
    // A design's own settings, as the plan gives its nodes
    // (`crate::design`: the connection lock's keepalives in whole seconds).
    s.election.protocol = crate::design::scale_protocol(&s.election.protocol, scale);
    for node in &mut s.nodes {
        node.protocol = node
            .protocol
            .as_ref()
            .map(|spec| crate::design::scale_protocol(spec, scale));
        node.start_at = d(node.start_at);
        node.clock_offset = ClockOffset(scale.scale_nanos(node.clock_offset.0));
    }
    for fault in &mut s.faults {
        scale_fault(fault, scale);
    }
    s.heal_at = s.heal_at.map(d);
    s.expect.max_failover = s.expect.max_failover.map(d);
    s.expect.max_overlap = s.expect.max_overlap.map(d);
    s.expect.min_overlap = s.expect.min_overlap.map(d);
    s
}

fn scale_fault(fault: &mut FaultSpec, scale: TimeScale) {
    let d = |d: &mut std::time::Duration| *d = scale.scale(*d);
    match fault {
        FaultSpec::Pause { at, duration, .. }
        | FaultSpec::Isolate { at, duration, .. }
        | FaultSpec::Cut { at, duration, .. }
        | FaultSpec::Partition { at, duration, .. }
        | FaultSpec::Restart { at, duration, .. } => {
            d(at);
            d(duration);
        }
        FaultSpec::Crash {
            at, restart_after, ..
        }
        | FaultSpec::Stop {
            at, restart_after, ..
        } => {
            d(at);
            if let Some(after) = restart_after {
                d(after);
            }
        }
        FaultSpec::Replace { at, .. } | FaultSpec::Abdicate { at, .. } => d(at),
        FaultSpec::ClockJump { at, by, .. } | FaultSpec::ClockSlew { at, by, .. } => {
            // A slew's rate is a rate: its length scales with its step.
            d(at);
            *by = ClockOffset(scale.scale_nanos(by.0));
        }
        FaultSpec::ClockStrobe {
            at,
            by,
            period,
            duration,
            ..
        } => {
            d(at);
            d(period);
            d(duration);
            *by = ClockOffset(scale.scale_nanos(by.0));
        }
        FaultSpec::Anchored { when, fault } => {
            // The anchor's delay is a time like any other; its event is not.
            d(&mut when.delay);
            scale_fault(fault, scale);
        }
        FaultSpec::Recurring {
            every, duration, ..
        } => {
            d(every);
            let DurationRange { low, high } = *duration;
            *duration = DurationRange {
                low: scale.scale(low),
                high: scale.scale(high),
            };
        }
    }
}

/// The history files of a run directory (`*.jsonl`), sorted by name.
///
/// # Errors
/// The directory cannot be read.
pub fn history_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Judges the histories in `dir` against `scenario` (scaled), cut at the
/// history clock `until_ns` (the run's end), as `check-history` would.
///
/// # Errors
/// Why there is no verdict (bad input to the checker): a [`JudgeError`].
pub fn judge_histories(
    dir: &Path,
    scenario: &Scenario,
    until_ns: Option<u64>,
    timeline: bool,
) -> Result<Judged, JudgeError> {
    let files = history_files(dir).map_err(|source| JudgeError::List {
        dir: dir.to_path_buf(),
        source,
    })?;
    let options = CheckOptions {
        scenario: Some(scenario),
        timeline,
        until_ns,
    };
    check_paths(&files, options).map_err(JudgeError::Histories)
}

/// Why the run's histories have no verdict.
#[derive(Debug)]
pub enum JudgeError {
    /// The run directory cannot be listed.
    List {
        /// The run directory.
        dir: PathBuf,
        /// What listing it said.
        source: std::io::Error,
    },
    /// The checker refuses the histories.
    Histories(HistoryError),
}

impl fmt::Display for JudgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JudgeError::List { dir, source } => write!(
                f,
                "cannot list the histories in {}: {source}",
                dir.display()
            ),
            JudgeError::Histories(e) => write!(f, "the run's histories: {e}"),
        }
    }
}

impl std::error::Error for JudgeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JudgeError::List { source, .. } => Some(source),
            JudgeError::Histories(e) => Some(e),
        }
    }
}

/// The simulator's run of `scenario` (scaled, with the run's seed).
///
/// # Errors
/// The simulator refuses the scenario or halts: a [`SimulateError`].
pub fn simulate(scenario: &Scenario) -> Result<Report, SimulateError> {
    let options = RunOptions::with_seed(Some(scenario.seed));
    let finished = Simulation::run_scenario(scenario, options).map_err(SimulateError::Refused)?;
    if let Some(halt) = finished.report.halted {
        return Err(SimulateError::Halted(halt));
    }
    Ok(finished.report)
}

/// Why there is no simulation of a run (the lab still judges the run).
#[derive(Debug)]
pub enum SimulateError {
    /// The simulator refuses the scaled scenario.
    Refused(ScenarioError),
    /// The simulation halted.
    Halted(Halted),
}

impl fmt::Display for SimulateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimulateError::Refused(e) => {
                write!(f, "the simulator refuses the scaled scenario: {e}")
            }
            SimulateError::Halted(halt) => write!(f, "the simulation halted: {halt}"),
        }
    }
}

impl std::error::Error for SimulateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimulateError::Refused(e) => Some(e),
            SimulateError::Halted(_) => None,
        }
    }
}
