//! Running a sweep: every seed of every cell, on `jobs` threads, each run
//! folded into its cell's totals as it finishes ([`run_election`],
//! [`run_membership`]).

use super::grid::{ElectionGrid, MembershipGrid};
use super::mix::FaultMix;
use super::stats::{election_row, membership_row, CellTotals, RunStats};
use super::Seeds;
use super::{ElectionSweep, Grid, MembershipSweep, Skipped, Sweep, SweepError};
use crate::scenario::Scenario;
use crate::units::human;
use crate::{RunOptions, Simulation};

/// Runs `scenario` once with `options` and measures it. A run that halted
/// on a limit is refused, not measured: its figures cover only part of the
/// run, and averaging them in would bias the cell without a word.
fn run_one(scenario: &Scenario, options: RunOptions) -> Result<RunStats, SweepError> {
    let finished = Simulation::run_scenario(scenario, options).map_err(SweepError::Scenario)?;
    if let Some(halt) = finished.report.halted {
        return Err(SweepError::Halted {
            seed: finished.report.seed,
            halt,
        });
    }
    Ok(RunStats::of(&finished.report))
}

/// How a sweep runs: the faults, the seeds, the threads.
struct Run<'a> {
    mix: &'a FaultMix,
    seeds: Seeds,
    jobs: usize,
    progress: &'a (dyn Fn() + Sync),
}

impl<'a> Run<'a> {
    /// A sweep of `seeds` of `mix` on `jobs` threads, calling `progress`
    /// after each run.
    fn new(mix: &'a FaultMix, seeds: Seeds, jobs: usize, progress: &'a (dyn Fn() + Sync)) -> Self {
        Run {
            mix,
            seeds,
            jobs,
            progress,
        }
    }

    /// Runs every seed of every cell (`configure` sets a cell's settings on
    /// the mix's scenario) with `jobs` threads ([`crate::batch::cells::run`]:
    /// memory does not grow with the number of seeds), and measures each
    /// cell over its seeds with `row`.
    fn sweep<G: Grid + Clone, C: Sync>(
        &self,
        grid: &G,
        cells: &[C],
        skipped: Vec<Skipped>,
        configure: &(dyn Fn(&C, &mut Scenario) + Sync),
        row: &dyn Fn(&C, &CellTotals) -> G::Row,
    ) -> Result<Sweep<G>, SweepError> {
        self.seeds.check()?;
        let totals: Vec<CellTotals> = crate::batch::cells::run(
            cells,
            self.seeds,
            self.jobs,
            &|cell, seed| {
                let mut scenario = self.mix.scenario(seed);
                configure(cell, &mut scenario);
                run_one(&scenario, RunOptions::default())
            },
            self.progress,
        )?;
        Ok(Sweep {
            mix: self.mix.clone(),
            grid: grid.clone(),
            seeds: self.seeds,
            rows: cells.iter().zip(&totals).map(|(c, t)| row(c, t)).collect(),
            skipped,
        })
    }
}

/// Runs every valid cell of `grid` over `seeds` of `mix` with `jobs`
/// threads, calling `progress` after each run. Cells whose settings the
/// elector refuses are skipped.
///
/// # Errors
/// The mix or grid is invalid.
pub fn run_election(
    mix: &FaultMix,
    grid: &ElectionGrid,
    seeds: Seeds,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ElectionSweep, SweepError> {
    mix.validate()?;
    grid.validate()?;
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    for cell in grid.cells() {
        // The cell's settings are checked without the faults: they do not
        // depend on them, and a long schedule is costly to draw per cell.
        let mut probe = mix.scenario_without_faults(seeds.start);
        cell.apply(&mut probe);
        match probe.validate() {
            Ok(()) => cells.push(cell),
            Err(e) => skipped.push(Skipped {
                cell: format!(
                    "lease_ttl={}, renew_ratio={}, margin_ratio={}",
                    human(cell.lease_ttl),
                    cell.renew_ratio,
                    cell.margin_ratio
                ),
                reason: e.to_string(),
            }),
        }
    }
    if cells.is_empty() {
        return Err(every_cell_skipped(&skipped));
    }
    Run::new(mix, seeds, jobs, progress).sweep(
        grid,
        &cells,
        skipped,
        &|cell, scenario| cell.apply(scenario),
        &|cell, runs| election_row(cell, mix, runs),
    )
}

/// The error of a sweep that has no cell left to run: every reason, once.
fn every_cell_skipped(skipped: &[Skipped]) -> SweepError {
    let mut reasons: Vec<String> = skipped.iter().map(|s| s.reason.clone()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    SweepError::EveryCellSkipped {
        cells: skipped.len(),
        reasons,
    }
}

/// Runs every cell of `grid` over `seeds` of `mix` (with the default
/// election settings) with `jobs` threads. Cells whose heartbeat is not
/// below the liveness TTL are skipped.
///
/// # Errors
/// The mix or grid is invalid.
pub fn run_membership(
    mix: &FaultMix,
    grid: &MembershipGrid,
    seeds: Seeds,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<MembershipSweep, SweepError> {
    mix.validate()?;
    grid.validate()?;
    let cells = grid.cells();
    let mut skipped = Vec::new();
    for &ttl in &grid.liveness_ttls {
        for &hb in &grid.heartbeats {
            if hb >= ttl {
                skipped.push(Skipped {
                    cell: format!("liveness_ttl={}, heartbeat={}", human(ttl), human(hb)),
                    reason: "the heartbeat interval is not below the liveness TTL: every node would flap".into(),
                });
            }
        }
    }
    Run::new(mix, seeds, jobs, progress).sweep(
        grid,
        &cells,
        skipped,
        &|&(ttl, hb), scenario| {
            scenario.membership.liveness_ttl = ttl;
            scenario.membership.heartbeat_interval = hb;
        },
        &|&(ttl, hb), runs| membership_row(ttl, hb, mix.nodes, runs),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_halted_run_is_refused_not_averaged() {
        // Proves that a sweep's run that stops at its event budget is an error naming the seed
        // and the limit, never a measurement folded into its cell.
        let scenario = Scenario::new("halts", Duration::from_secs(120)).with_nodes(["a", "b"]);
        let whole = Simulation::run_scenario(&scenario, RunOptions::default()).expect("valid");
        assert!(run_one(&scenario, RunOptions::default()).is_ok());
        let budget = whole.report.events - 1;
        let options = RunOptions {
            max_events: Some(budget),
            ..RunOptions::default()
        };
        let err = run_one(&scenario, options)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("stopped early"), "{err}");
        assert!(err.contains(&format!("{budget} events")), "{err}");
    }
}
