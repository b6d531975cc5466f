//! `fenced-lab matrix`: the lock designs compared for real.
//!
//! `fenced-sim compare` runs protocol-neutral fault scenarios against every
//! lock design in the simulator and prints, per cell (scenario × design),
//! how often the design split brain and how often it got stuck. This
//! command runs **the same cells for real**: each built-in scenario of
//! [`fenced_sim::compare::builtin`], built for each design exactly as the
//! simulated matrix builds it ([`Neutral::build`]: the design's library
//! defaults, three nodes, the fault in node-a's unit of work), is handed to
//! [`runner::run`] — the lab's real servers, node processes, proxies and
//! clocks — at `--time-scale`, and judged by the same checker beside the
//! simulation of the same scaled scenario and seed.
//!
//! # Per cell
//!
//! * **split-brain**: real runs that split brain, beside simulated ones.
//! * **stuck**: among runs in which a failover was *due* (the fault took
//!   node-a, then leading, away from the lock service for longer than the
//!   design's expiry), those in which no other process began a term before
//!   the fault ended — the simulated matrix's rule
//!   ([`fenced_sim::compare::failover_stuck`]), applied to both reports.
//! * **agreed**: real runs whose every compared figure agreed with the
//!   simulation ([`crate::compare`]; the `fenced-lab run --runs` measure).
//!
//! # The fault, anchored
//!
//! Each built-in cell's faults are anchored on node-a's unit of work
//! ([`fenced_sim::compare::fault_placement`]): they begin `50 ms + j ms`
//! into node-a's first unit at or after `12 s + k s`, in the real run and in
//! the simulation beside it alike (the same file, as `compare` builds it).
//! A fixed instant would land inside a unit only on one schedule: a real
//! run's units start a few milliseconds elsewhere (process start-up, timer
//! jitter), and a first real matrix disagreed on exactly that, when the
//! matrix still anchored the simulator's fixed instants itself. Stuck is
//! judged from the instant each run's fault really began (its report's
//! `anchors`, [`fenced_sim::compare::as_fired`]).
//!
//! A cell the lab cannot make real is **refused**, with the planner's
//! reason (client-go and DynamoDB have no server here; a fault the lab
//! cannot realise for a design), and a cell whose scaled run would last
//! longer than `--max-run` is **too long** (the connection lock's expiry is
//! PostgreSQL's keepalive verdict, 2 h 11 min by default). Both still show
//! the simulation's figures, so the table is the simulated matrix with the
//! real one beside it wherever the real one exists.
//!
//! # Bounds
//!
//! Cells run one after another, each run as `fenced-lab run` would (every
//! process, server and schema gone when it returns); memory holds one line
//! per cell. A lab failure (the database, a server that will not start)
//! stops the matrix with exit 1; Ctrl-C stops it with everything cleaned
//! up.

use std::fmt::{self, Write as _};
use std::path::Path;
use std::time::Duration;

use clap::Args;
use fenced_sim::compare::{
    as_fired, builtin, cut_off, expiry_with, failover_stuck, servers, Neutral,
};
use fenced_sim::{ProtocolSpec, Report, RunOptions, Scenario, Simulation};
use serde_json::{json, Value};

use crate::compare::Comparison;
use crate::runner::{self, RunArgs, RunError};
use crate::time_scale::TimeScale;

/// The most runs per cell.
pub const MAX_RUNS_PER_CELL: u32 = 100;

/// `fenced-lab matrix`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct MatrixArgs {
    /// The PostgreSQL every run uses (a URL or key=value string), as for
    /// `run`: the fenced protocol's lease store, the connection lock's
    /// server, and every design's downstream.
    #[arg(long)]
    pub postgres: String,
    /// Every duration of every cell is multiplied by this (as `run
    /// --time-scale`). The default, 0.2, is the smallest at which every
    /// real design runs: at 0.1 redlock-rb's 0.1 s `redis_timeout` would be
    /// under the lab's 20 ms floor (refused by name).
    #[arg(long, default_value_t = 0.2)]
    pub time_scale: f64,
    /// Real runs per cell, seeds `--seed`, `--seed`+1, ...
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_RUNS_PER_CELL)))]
    pub runs: u32,
    /// The first seed of every cell.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The rows, by name (default: every built-in scenario of `fenced-sim
    /// compare`).
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// The columns, by design name (default: every design).
    #[arg(long, value_delimiter = ',')]
    pub protocols: Vec<String>,
    /// Fence the downstream by the design's token where it has one (as
    /// `fenced-sim compare --fenced`).
    #[arg(long)]
    pub fenced: bool,
    /// The longest real run a cell may make (its scaled duration); longer
    /// cells are reported as too long, with their simulation only.
    #[arg(long, default_value = "3m", value_parser = humantime::parse_duration)]
    pub max_run: Duration,
    /// Keep every real run here, to read what differed: the cell's scenario
    /// as run (`<scenario>-<design>-<seed>.toml`, which `fenced-sim run
    /// --trace` replays) and its directory as `run --keep` keeps it
    /// (`<scenario>-<design>-<seed>/`: each process's history, the lab's,
    /// the logs).
    #[arg(long)]
    pub keep: Option<std::path::PathBuf>,
    /// Print the matrix as JSON.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the matrix as a Markdown table (the README's).
    #[arg(long)]
    pub markdown: bool,
}

/// What the matrix could not start with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatrixError {
    /// A `--scenarios` name that is no built-in scenario.
    UnknownScenario(String),
    /// A `--protocols` name that is no design.
    UnknownProtocol(String),
    /// A bad `--time-scale`.
    BadScale(String),
    /// A cell's scenario does not validate (a bug: built-in scenarios do).
    Invalid(String),
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatrixError::UnknownScenario(name) => write!(
                f,
                "--scenarios: unknown scenario `{name}`; the built-in ones are {}",
                builtin()
                    .iter()
                    .map(|n| n.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            MatrixError::UnknownProtocol(name) => write!(
                f,
                "--protocols: unknown protocol `{name}`; the known ones are {}",
                ProtocolSpec::NAMES.join(", ")
            ),
            MatrixError::BadScale(what) => write!(f, "--time-scale: {what}"),
            MatrixError::Invalid(what) => write!(f, "a cell's scenario is invalid: {what}"),
        }
    }
}

impl std::error::Error for MatrixError {}

/// Whether a cell ran for real.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every run was made.
    Ran,
    /// The lab cannot make it real: the planner's reason.
    Refused(String),
    /// Its scaled run would outlast `--max-run`.
    TooLong(Duration),
}

/// Counts over a cell's runs, real or simulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runs counted.
    pub runs: u32,
    /// Runs that split brain.
    pub split_brain: u32,
    /// Runs in which a failover was due.
    pub due: u32,
    /// Runs stuck (of those due).
    pub stuck: u32,
}

impl Counts {
    fn add(&mut self, report: &Report, stuck: Option<bool>) {
        self.runs += 1;
        self.split_brain += u32::from(report.split_brain);
        self.due += u32::from(stuck.is_some());
        self.stuck += u32::from(stuck == Some(true));
    }

    fn to_json(self) -> Value {
        json!({
            "runs": self.runs,
            "split_brain": self.split_brain,
            "failover_due": self.due,
            "stuck": self.stuck,
        })
    }
}

/// One cell: a scenario run by a design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The row.
    pub scenario: &'static str,
    /// The column.
    pub protocol: &'static str,
    /// Whether it ran for real.
    pub status: Status,
    /// The real runs (none unless it ran).
    pub real: Counts,
    /// The simulations of the same scenarios and seeds (scaled when the cell
    /// ran, as written otherwise).
    pub simulated: Counts,
    /// Real runs that agreed with their simulation on every compared figure.
    pub agreed: u32,
    /// For each real run that did not, every figure that differed: `seed S:
    /// FIGURE real R, simulated X`, those that may differ marked (the
    /// matrix's tables show only split-brain and stuck; this says what else
    /// differed, and why).
    pub disagreements: Vec<String>,
}

impl Cell {
    /// Whether real and simulated agree on split-brain and on stuck.
    pub fn outcomes_agree(&self) -> bool {
        self.real.split_brain == self.simulated.split_brain
            && self.real.due == self.simulated.due
            && self.real.stuck == self.simulated.stuck
    }

    fn to_json(&self) -> Value {
        let (status, reason) = match &self.status {
            Status::Ran => ("ran", None),
            Status::Refused(why) => ("refused", Some(why.clone())),
            Status::TooLong(d) => (
                "too-long",
                Some(format!(
                    "a real run would last {}",
                    humantime::format_duration(*d)
                )),
            ),
        };
        json!({
            "scenario": self.scenario,
            "protocol": self.protocol,
            "status": status,
            "reason": reason,
            "real": (self.status == Status::Ran).then(|| self.real.to_json()),
            "simulated": self.simulated.to_json(),
            "agreed": (self.status == Status::Ran).then_some(self.agreed),
            "disagreements": self.disagreements,
        })
    }
}

/// The matrix as run.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// The rows, in order.
    pub scenarios: Vec<&'static str>,
    /// The columns, in order.
    pub protocols: Vec<&'static str>,
    /// Row-major cells.
    pub cells: Vec<Cell>,
    /// The time scale.
    pub time_scale: f64,
    /// Runs per cell.
    pub runs: u32,
    /// The first seed.
    pub seed: u64,
    /// Whether designs with a token were fenced by it.
    pub fenced: bool,
    /// The longest real run a cell could make.
    pub max_run: Duration,
}

/// The rows and columns `args` names, checked before anything runs.
///
/// # Errors
/// [`MatrixError`] naming the unknown name or the bad scale.
pub fn resolve(args: &MatrixArgs) -> Result<(Vec<Neutral>, Vec<ProtocolSpec>), MatrixError> {
    TimeScale::new(args.time_scale).map_err(|e| MatrixError::BadScale(e.to_string()))?;
    let all = builtin();
    let rows = if args.scenarios.is_empty() {
        all
    } else {
        args.scenarios
            .iter()
            .map(|name| {
                all.iter()
                    .find(|n| n.name == name)
                    .cloned()
                    .ok_or_else(|| MatrixError::UnknownScenario(name.clone()))
            })
            .collect::<Result<_, _>>()?
    };
    let names: Vec<&str> = if args.protocols.is_empty() {
        ProtocolSpec::NAMES.to_vec()
    } else {
        args.protocols.iter().map(String::as_str).collect()
    };
    let columns = names
        .into_iter()
        .map(|name| {
            ProtocolSpec::by_name(name).ok_or_else(|| MatrixError::UnknownProtocol(name.into()))
        })
        .collect::<Result<_, _>>()?;
    Ok((rows, columns))
}

/// Runs the matrix `args` asks for, printing a line per run to stderr.
///
/// # Errors
/// Bad input ([`RunError::BadInput`]) before the first run; a lab failure
/// or an interrupt stops it there (everything started is gone).
pub async fn run(args: &MatrixArgs) -> Result<Matrix, RunError> {
    let (rows, columns) = resolve(args).map_err(|e| RunError::BadInput(e.to_string()))?;
    for row in &rows {
        for protocol in &columns {
            row.build(protocol, args.fenced, args.seed)
                .validate()
                .map_err(|e| RunError::BadInput(MatrixError::Invalid(e.to_string()).to_string()))?;
        }
    }
    let dir = tempfile::Builder::new()
        .prefix("fenced-lab-matrix-")
        .tempdir()
        .map_err(|e| RunError::Infrastructure(format!("cannot create a directory: {e}")))?;
    if let Some(keep) = &args.keep {
        std::fs::create_dir_all(keep).map_err(|e| {
            RunError::BadInput(format!("--keep: cannot create {}: {e}", keep.display()))
        })?;
    }
    let mut cells = Vec::with_capacity(rows.len() * columns.len());
    for row in &rows {
        for protocol in &columns {
            cells.push(cell(args, row, protocol, dir.path()).await?);
        }
    }
    Ok(Matrix {
        scenarios: rows.iter().map(|r| r.name).collect(),
        protocols: columns.iter().map(ProtocolSpec::name).collect(),
        cells,
        time_scale: args.time_scale,
        runs: args.runs,
        seed: args.seed,
        fenced: args.fenced,
        max_run: args.max_run,
    })
}

/// Whether `s`'s run was stuck, by the simulated matrix's rule.
fn stuck_in(s: &Scenario, report: &Report) -> Option<bool> {
    let s = &as_fired(s, report);
    let protocol = &s.election.protocol;
    let cut = cut_off(
        s,
        &servers(protocol),
        expiry_with(protocol, s.election.lease_ttl),
    );
    failover_stuck(report, cut.as_ref())
}

/// The simulation of `s` (as written: a cell that did not run for real).
fn simulate(s: &Scenario, seed: u64) -> Result<Report, RunError> {
    let finished = Simulation::run_scenario(s, RunOptions::with_seed(Some(seed)))
        .map_err(|e| RunError::BadInput(MatrixError::Invalid(e.to_string()).to_string()))?;
    Ok(finished.report)
}

async fn cell(
    args: &MatrixArgs,
    row: &Neutral,
    protocol: &ProtocolSpec,
    dir: &Path,
) -> Result<Cell, RunError> {
    let mut cell = Cell {
        scenario: row.name,
        protocol: protocol.name(),
        status: Status::Ran,
        real: Counts::default(),
        simulated: Counts::default(),
        agreed: 0,
        disagreements: Vec::new(),
    };
    let first = row.build(protocol, args.fenced, args.seed);
    let real_length = first.duration.mul_f64(args.time_scale);
    if real_length > args.max_run {
        cell.status = Status::TooLong(real_length);
    }
    for i in 0..args.runs {
        let seed = args.seed.wrapping_add(u64::from(i));
        let scenario = row.build(protocol, args.fenced, seed);
        if cell.status != Status::Ran {
            let report = simulate(&scenario, seed)?;
            cell.simulated.add(&report, stuck_in(&scenario, &report));
            continue;
        }
        let name = format!("{}-{}-{seed}", row.name, protocol.name());
        let path = args
            .keep
            .as_deref()
            .unwrap_or(dir)
            .join(format!("{name}.toml"));
        std::fs::write(&path, fenced_sim::to_toml::to_toml(&scenario)).map_err(|e| {
            RunError::Infrastructure(format!("cannot write {}: {e}", path.display()))
        })?;
        let one = RunArgs {
            scenario: path.clone(),
            postgres: args.postgres.clone(),
            time_scale: args.time_scale,
            seed: Some(seed),
            json: true,
            keep: args.keep.as_ref().map(|keep| keep.join(&name)),
            svg: None,
            runs: None,
            #[cfg(feature = "planted-bugs")]
            plant: None,
        };
        let outcome = match runner::run(&one).await {
            Ok(outcome) => outcome,
            Err(RunError::BadInput(why)) => {
                // Refused by the planner: nothing was started. The cell
                // keeps the simulation of every seed.
                cell.status = Status::Refused(why);
                let report = simulate(&scenario, seed)?;
                cell.simulated.add(&report, stuck_in(&scenario, &report));
                eprintln!("{} × {}: refused", row.name, protocol.name());
                continue;
            }
            Err(other) => return Err(other),
        };
        if args.keep.is_none() {
            let _ = std::fs::remove_file(&path);
        }
        let real = &outcome.judged.report;
        cell.real.add(real, stuck_in(&outcome.scenario, real));
        match &outcome.simulated {
            Ok(simulated) => {
                cell.simulated
                    .add(simulated, stuck_in(&outcome.scenario, simulated));
            }
            Err(why) => {
                return Err(RunError::Infrastructure(format!(
                    "{} × {} seed {seed}: no simulation: {why}",
                    row.name,
                    protocol.name()
                )))
            }
        }
        let agrees = outcome.comparison.as_ref().is_some_and(|c| c.agrees());
        cell.agreed += u32::from(agrees);
        let figures: Vec<String> = match outcome.comparison.as_ref().filter(|_| !agrees) {
            Some(comparison) => disagreeing_figures(comparison).collect(),
            None => Vec::new(),
        };
        eprintln!(
            "{} × {} run {}/{} seed {seed}: split-brain real {} sim {}, {}",
            row.name,
            protocol.name(),
            i + 1,
            args.runs,
            real.split_brain,
            outcome.simulated.as_ref().is_ok_and(|r| r.split_brain),
            if agrees { "agrees" } else { "DISAGREES" }
        );
        for figure in figures {
            eprintln!("  {figure}");
            cell.disagreements.push(format!("seed {seed}: {figure}"));
        }
    }
    Ok(cell)
}

/// Every figure on which a disagreeing run differs from its simulation, as
/// `FIGURE real R, simulated X`: first those that must agree (the
/// disagreement, an expectation met in one run only among them), then,
/// marked `(may differ)`, the rest — which follower won, the write counts —
/// that explain it (a failover count that differs because another node won
/// the race for the lease, say).
fn disagreeing_figures(comparison: &Comparison) -> impl Iterator<Item = String> + '_ {
    comparison.differences.iter().map(|d| {
        let may = if d.disagreement { "" } else { " (may differ)" };
        format!("{} real {}, simulated {}{may}", d.what, d.real, d.simulated)
    })
}

impl Matrix {
    /// The matrix as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "time_scale": self.time_scale,
            "runs": self.runs,
            "seed": self.seed,
            "fenced": self.fenced,
            "scenarios": self.scenarios,
            "protocols": self.protocols,
            "cells": self.cells.iter().map(Cell::to_json).collect::<Vec<_>>(),
        })
    }

    /// Cells that ran and whose real split-brain or stuck differs from the
    /// simulation's.
    pub fn disagreements(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.status == Status::Ran && !c.outcomes_agree())
            .count()
    }

    /// One cell as the tables show it: `SB 1/1 = 1/1 · stuck 0/1 = 0/1`
    /// (real, then simulated; `≠` where they differ), or the simulation
    /// alone with a note mark for a cell that did not run.
    fn cell_text(&self, c: &Cell, note: Option<usize>) -> String {
        let pair = |real: u32, sim: u32, of_real: u32, of_sim: u32| {
            let sign = if real == sim && of_real == of_sim {
                "="
            } else {
                "≠"
            };
            format!("{real}/{of_real} {sign} {sim}/{of_sim}")
        };
        match (&c.status, note) {
            (Status::Ran, _) => {
                let mut text = format!(
                    "SB {}",
                    pair(
                        c.real.split_brain,
                        c.simulated.split_brain,
                        c.real.runs,
                        c.simulated.runs
                    )
                );
                if c.real.due > 0 || c.simulated.due > 0 {
                    let _ = write!(
                        text,
                        " · stuck {}",
                        pair(c.real.stuck, c.simulated.stuck, c.real.due, c.simulated.due)
                    );
                }
                text
            }
            (_, note) => {
                let mut text = format!("sim SB {}/{}", c.simulated.split_brain, c.simulated.runs);
                if c.simulated.due > 0 {
                    let _ = write!(text, " · stuck {}/{}", c.simulated.stuck, c.simulated.due);
                }
                if let Some(n) = note {
                    let _ = write!(text, " ({n})");
                }
                text
            }
        }
    }

    /// The distinct reasons cells did not run, numbered from 1, and each
    /// cell's number.
    fn notes(&self) -> (Vec<String>, Vec<Option<usize>>) {
        let mut reasons: Vec<String> = Vec::new();
        let marks = self
            .cells
            .iter()
            .map(|c| {
                let why = match &c.status {
                    Status::Ran => return None,
                    Status::Refused(why) => format!("refused: {why}"),
                    Status::TooLong(_) => format!(
                        "not run for real: its run at this time scale would outlast --max-run {}",
                        humantime::format_duration(self.max_run)
                    ),
                };
                let at = reasons.iter().position(|r| *r == why).unwrap_or_else(|| {
                    reasons.push(why);
                    reasons.len() - 1
                });
                Some(at + 1)
            })
            .collect();
        (reasons, marks)
    }

    /// The matrix as a Markdown table, with its notes.
    pub fn to_markdown(&self) -> String {
        let (reasons, marks) = self.notes();
        let mut out = format!("| scenario | {} |\n|---|", self.protocols.join(" | "));
        out.push_str(&"---|".repeat(self.protocols.len()));
        out.push('\n');
        for (r, name) in self.scenarios.iter().enumerate() {
            let _ = write!(out, "| {name} |");
            for c in 0..self.protocols.len() {
                let i = r * self.protocols.len() + c;
                let _ = write!(out, " {} |", self.cell_text(&self.cells[i], marks[i]));
            }
            out.push('\n');
        }
        for (n, why) in reasons.iter().enumerate() {
            let _ = writeln!(out, "\n({}) {why}", n + 1);
        }
        out
    }

    /// The matrix as text: one block per scenario.
    pub fn to_text(&self) -> String {
        let (reasons, marks) = self.notes();
        let mut out = format!(
            "fenced-lab matrix: {} scenarios × {} designs, {} run(s) per cell at --time-scale {} \
             (seeds from {}{}); real = simulated per cell: SB split-brain runs, stuck of runs \
             with a failover due\n",
            self.scenarios.len(),
            self.protocols.len(),
            self.runs,
            self.time_scale,
            self.seed,
            if self.fenced { ", fenced" } else { "" }
        );
        let width = self.protocols.iter().map(|p| p.len()).max().unwrap_or(0);
        for (r, name) in self.scenarios.iter().enumerate() {
            let _ = writeln!(out, "\n{name}");
            for (c, protocol) in self.protocols.iter().enumerate() {
                let i = r * self.protocols.len() + c;
                let cell = &self.cells[i];
                let mut line = self.cell_text(cell, marks[i]);
                if cell.status == Status::Ran {
                    let _ = write!(line, " · agreed {}/{}", cell.agreed, cell.real.runs);
                }
                let _ = writeln!(out, "  {protocol:<width$}  {line}");
            }
        }
        if !reasons.is_empty() {
            out.push('\n');
        }
        for (n, why) in reasons.iter().enumerate() {
            let _ = writeln!(out, "({}) {why}", n + 1);
        }
        let ran = self
            .cells
            .iter()
            .filter(|c| c.status == Status::Ran)
            .count();
        let _ = writeln!(
            out,
            "\n{ran} of {} cells ran for real; {} disagree with the simulation on split-brain or stuck",
            self.cells.len(),
            self.disagreements()
        );
        out
    }
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
