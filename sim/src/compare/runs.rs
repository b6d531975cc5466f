//! Running a comparison: every seed of every cell (scenario × design) on
//! `jobs` threads, each run folded into its cell's totals as it finishes,
//! so memory does not grow with the number of seeds.

use std::time::Duration;

use super::scenarios::{adapt, as_fired, cut_off, expiry_with, servers, CutOff, Neutral};
use super::stats::{cell, CellLabel, CellTotals, SeedStats};
use super::{CellProblem, Column, CompareError, Matrix, Row};
use crate::batch::Seeds;
use crate::scenario::{ProtocolSpec, Scenario};
use crate::{RunOptions, Simulation};

/// A row of the matrix: a built-in scenario, or a scenario file.
#[derive(Clone, Debug)]
pub enum Subject {
    /// One of [`builtin`](super::builtin).
    Builtin(Neutral),
    /// A loaded scenario file, shown as `label`.
    File {
        /// The row's name (the file's scenario name, or its path).
        label: String,
        /// The scenario as loaded.
        scenario: Box<Scenario>,
    },
}

impl Subject {
    /// The row's name.
    pub fn name(&self) -> &str {
        match self {
            Subject::Builtin(n) => n.name,
            Subject::File { label, .. } => label,
        }
    }

    /// The run of this row by `protocol` with `seed`.
    fn scenario(&self, protocol: &ProtocolSpec, fenced: bool, seed: u64) -> Scenario {
        match self {
            Subject::Builtin(n) => n.build(protocol, fenced, seed),
            Subject::File { scenario, .. } => {
                let mut s = adapt(scenario, protocol, fenced);
                s.seed = seed;
                s
            }
        }
    }

    /// The design's expiry in this row's runs (a file may set the fenced
    /// protocol's `lease_ttl`, or its own design's settings).
    fn expiry(&self, protocol: &ProtocolSpec, fenced: bool, seeds: Seeds) -> Duration {
        let s = self.scenario(protocol, fenced, seeds.start);
        expiry_with(&s.election.protocol, s.election.lease_ttl)
    }
}

/// What a comparison runs: the rows, the designs, the seeds, and whether
/// designs with a token are fenced by it.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The matrix's rows.
    pub rows: Vec<Subject>,
    /// The matrix's columns.
    pub protocols: Vec<ProtocolSpec>,
    /// Every cell runs these seeds.
    pub seeds: Seeds,
    /// Fence the downstream by the design's token, where it has one.
    pub fenced: bool,
}

/// One cell, ready to run: its row and column, and its design's expiry.
struct Job<'a> {
    row: &'a Subject,
    protocol: &'a ProtocolSpec,
    expiry: Duration,
}

impl Job<'_> {
    /// Runs seed `seed` of this cell and measures it.
    fn run(&self, fenced: bool, seed: u64) -> Result<SeedStats, CompareError> {
        let scenario = self.row.scenario(self.protocol, fenced, seed);
        let finished = Simulation::run_scenario(&scenario, RunOptions::with_seed(Some(seed)))
            .map_err(|e| cell_error(self.row, self.protocol, CellProblem::Invalid(e)))?;
        // Anchored faults (the built-in rows') begin where the run says.
        let fired = as_fired(&scenario, &finished.report);
        let cut: Option<CutOff> = cut_off(&fired, &servers(self.protocol), self.expiry);
        if let Some(halt) = finished.report.halted {
            return Err(cell_error(
                self.row,
                self.protocol,
                CellProblem::Halted { seed, halt },
            ));
        }
        Ok(SeedStats::of(&finished.report, cut.as_ref()))
    }
}

/// The error of the cell of `row` run by `protocol`.
fn cell_error(row: &Subject, protocol: &ProtocolSpec, problem: CellProblem) -> CompareError {
    CompareError::Cell {
        row: row.name().to_string(),
        protocol: protocol.to_string(),
        problem,
    }
}

impl Plan {
    /// Checks the seeds and every cell's scenario (for the first seed), so
    /// a comparison never stops half-way on bad input.
    ///
    /// # Errors
    /// The first problem: no seed, no row or column, or the scenario a
    /// cell would run broken (named by row, protocol and key).
    pub fn validate(&self) -> Result<(), CompareError> {
        self.seeds.check()?;
        if self.rows.is_empty() {
            return Err(CompareError::NoScenario);
        }
        if self.protocols.is_empty() {
            return Err(CompareError::NoProtocol);
        }
        for row in &self.rows {
            for protocol in &self.protocols {
                let s = row.scenario(protocol, self.fenced, self.seeds.start);
                s.validate()
                    .map_err(|e| cell_error(row, protocol, CellProblem::Invalid(e)))?;
            }
        }
        Ok(())
    }

    /// Runs every cell over every seed with `jobs` threads, calling
    /// `progress` after each run; the result does not depend on `jobs`.
    ///
    /// # Errors
    /// What [`validate`](Self::validate) finds, a run that cannot start or
    /// stops on a limit, or a worker thread that cannot be started.
    pub fn run(&self, jobs: usize, progress: &(dyn Fn() + Sync)) -> Result<Matrix, CompareError> {
        self.validate()?;
        let mut cells = Vec::new();
        for row in &self.rows {
            for protocol in &self.protocols {
                cells.push(Job {
                    row,
                    protocol,
                    expiry: row.expiry(protocol, self.fenced, self.seeds),
                });
            }
        }
        let fenced = self.fenced;
        let totals: Vec<CellTotals> = crate::batch::cells::run(
            &cells,
            self.seeds,
            jobs,
            &|job, seed| job.run(fenced, seed),
            progress,
        )?;
        Ok(self.matrix(&cells, &totals))
    }

    /// The matrix of `cells` measured over their `totals`.
    fn matrix(&self, cells: &[Job<'_>], totals: &[CellTotals]) -> Matrix {
        let columns = self
            .protocols
            .iter()
            .map(|p| Column::of(p, self.fenced))
            .collect();
        let rows = self.rows.iter().map(Row::of).collect();
        let measured = cells
            .iter()
            .zip(totals)
            .map(|(job, t)| {
                let fault = match job.row {
                    Subject::Builtin(n) => n.describe_fault(job.expiry),
                    Subject::File { .. } => "as in the file".to_string(),
                };
                let label = CellLabel {
                    scenario: job.row.name(),
                    protocol: job.protocol.name(),
                    fault,
                    expiry_s: job.expiry.as_secs_f64(),
                    fenced: super::scenarios::fenced_by_token(job.protocol, self.fenced),
                };
                cell(label, t)
            })
            .collect();
        Matrix {
            columns,
            rows,
            seeds: self.seeds,
            fenced: self.fenced,
            cells: measured,
            events: totals.iter().map(|t| t.events).sum(),
        }
    }
}
