//! The lock designs compared: a set of protocol-neutral fault scenarios run
//! against every design over many seeds, and per cell (scenario × design)
//! the split-brain rate, the belief overlap, the failover gap, and how
//! often the design got stuck — the matrix `fenced-sim compare` prints.
//!
//! # The scenarios
//!
//! [`builtin`] lists them (see `scenarios.rs` for the cluster and when the
//! faults start). Fault lengths are either relative to the design's own
//! timescale, its **expiry** E ([`expiry`]: how long a stalled or cut-off
//! holder keeps the lock — 10 s for Redlock, 60 s for an etcd or ZooKeeper
//! session, 2 h 11 min for PostgreSQL's keepalive verdict), so that "a
//! stall of 2 × E" means the same thing to every design, or fixed (a 40 s
//! pause), so that designs meet the very same fault. A run lasts from the
//! start through the fault, one expiry and a minute (at most
//! [`MAX_RUN`], 8 h of virtual time). Scenario files may replace the set:
//! each then runs as written, its `[election] protocol` replaced per
//! column.
//!
//! # Each design
//!
//! Every design runs with its library's defaults; client-go's application
//! runs the elector again after losing (`run_again`), as a Deployment's
//! restart would. The downstream is unfenced — the matrix shows what each
//! design lets happen — unless [`Plan::fenced`] is set, which fences the
//! designs that have a token (fenced, client-go, etcd, zookeeper) by it;
//! designs without one stay unfenced.
//!
//! # The measures (per cell, over its seeds)
//!
//! * **split-brain rate**: the fraction of seeds in which an older term's
//!   write was accepted after a newer term's (`Report::split_brain`).
//! * **belief overlap**: mean and p99 over seeds of the time two processes
//!   both believed they led (`Report::overlap_ms`).
//! * **failover gap** p50 and p99: over every failover of every seed, from
//!   the old leader's last accepted write to the new leader's first
//!   (`Report::failovers[].gap_ms`).
//! * **stuck rate**: a failover is *due* in a seed when a fault took the
//!   node leading at its start away from the lock service for longer than
//!   E — a pause or isolation, a crash, a partition from every server, or
//!   one-way cuts to or from every server ([`cut_off`], read from the run:
//!   an anchored fault starts where the report says it began,
//!   [`as_fired`]); the seed is
//!   *stuck* when no other process (another node, or a new incarnation)
//!   began a term between the fault's start and its end. The rate is stuck
//!   seeds over due seeds, and is absent where none was due.
//! * **other violations**: breaches of any invariant other than
//!   split-brain, counted apart.
//!
//! Percentiles keep each value to three significant digits in a bounded
//! table per cell, so memory does not grow with the seed count.
//!
//! # How the module is split
//!
//! * `scenarios` — the built-in set, [`expiry`], building a run.
//! * `runs` — the plan ([`Plan`]) and running it in parallel.
//! * `stats` — per-run measures, cell totals, the measured [`Cell`].
//! * `output` — text, JSON and CSV.
//! * `chart` — the SVG heat map.

mod chart;
mod error;
mod output;
mod runs;
mod scenarios;
mod stats;

use serde::Serialize;

pub use self::error::{CellProblem, CompareError};
pub use self::output::CSV_HEADER;
pub use self::runs::{Plan, Subject};
pub use self::scenarios::{
    adapt, as_fired, builtin, cut_off, expiry, expiry_source, expiry_with, fault_placement,
    fault_start, servers, CutOff, FaultPlacement, Length, Neutral, Shape, MAX_RUN,
};
pub use self::stats::{failover_stuck, Cell};

use crate::batch::Seeds;
use crate::scenario::ProtocolSpec;

/// A column of the matrix: a design.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Column {
    /// The design's name (`[election] protocol`).
    pub protocol: String,
    /// Whether it hands out a token a downstream could fence with.
    pub has_token: bool,
    /// Whether the downstream checked that token in this comparison.
    pub fenced: bool,
    /// Its expiry E with its default settings, s.
    pub expiry_s: f64,
    /// The setting E is.
    pub expiry_source: String,
}

impl Column {
    fn of(p: &ProtocolSpec, fenced: bool) -> Self {
        Column {
            protocol: p.name().to_string(),
            has_token: p.has_token(),
            fenced: fenced && p.has_token(),
            expiry_s: expiry(p).as_secs_f64(),
            expiry_source: expiry_source(p).to_string(),
        }
    }
}

/// A row of the matrix: a scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Its name.
    pub name: String,
    /// What happens.
    pub summary: String,
    /// How long its fault lasts: `2 × E`, `40s`; for a file, empty.
    pub length: String,
    /// Whether the length is relative to the design's expiry.
    pub relative: bool,
}

impl Row {
    fn of(s: &Subject) -> Self {
        match s {
            Subject::Builtin(n) => Row {
                name: n.name.to_string(),
                summary: n.summary.to_string(),
                length: match n.shape {
                    Shape::Crash => "no restart".to_string(),
                    _ => n.length.describe(),
                },
                relative: matches!(n.length, Length::Expiry(..)) && n.shape != Shape::Crash,
            },
            Subject::File { label, scenario } => Row {
                name: label.clone(),
                summary: scenario.description.clone().unwrap_or_default(),
                length: String::new(),
                relative: false,
            },
        }
    }
}

/// A comparison's results: its columns, rows and seeds, and one cell per
/// row and column, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// The designs.
    pub columns: Vec<Column>,
    /// The scenarios.
    pub rows: Vec<Row>,
    /// The seeds every cell ran.
    pub seeds: Seeds,
    /// Whether designs with a token were fenced by it.
    pub fenced: bool,
    /// `rows.len() × columns.len()` cells, row-major.
    pub cells: Vec<Cell>,
    /// Events simulated in all (for the rate on standard error; not part of
    /// any output).
    pub events: u64,
}

impl Matrix {
    /// The cell of row `r` and column `c`.
    pub fn cell(&self, r: usize, c: usize) -> Option<&Cell> {
        self.cells.get(r * self.columns.len() + c)
    }

    /// The cell of scenario `scenario` and design `protocol`.
    pub fn find(&self, scenario: &str, protocol: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.scenario == scenario && c.protocol == protocol)
    }

    /// Violations other than split-brain writes, over every cell.
    pub fn other_violations(&self) -> u64 {
        self.cells.iter().map(|c| c.other_violations).sum()
    }
}
