//! The TTL trade-off, measured: "a short TTL fails over fast but is twitchy;
//! a long TTL is stable but slow to recover".
//!
//! A sweep runs every cell of a grid of settings over the same seeds of one
//! fault mix and reports, per cell, what an operator weighs:
//!
//! * **Election grid** ([`ElectionGrid`]): `lease_ttl` × `renew_interval /
//!   lease_ttl` (× `safety_margin / lease_ttl`, optionally). Per cell: the
//!   failover gap (last accepted write of the old leader to the first of the
//!   new) at p50 and p99, leader changes and spurious failovers per hour,
//!   the leaderless fraction of time, and the writes fencing rejected.
//! * **Membership grid** ([`MembershipGrid`]): `liveness_ttl` ×
//!   `heartbeat_interval`. Per cell: false "node down" verdicts (the
//!   registry drops a node whose process is running) per node-hour.
//!
//! **The fault mix** ([`FaultMix`]) is drawn once per seed, from the seed
//! alone, and materialized as scheduled faults, so every cell of a grid sees
//! exactly the same pauses, crashes and stalls for a given seed (common
//! random numbers: differences between cells are the settings', not the
//! dice's). Per node: GC pauses as a Poisson process with a chosen length
//! distribution, and crashes with a restart delay. Per run: random message
//! loss, and **latency spikes, modelled as short stalls of the lease store**
//! (a [`FaultSpec::Pause`](crate::scenario::FaultSpec::Pause) of
//! `lease-store`: every renewal, acquisition and heartbeat in flight waits
//! for the stall to end, as behind a slow disk or a saturated database). The
//! network's own latency range is left alone.
//!
//! Runs are independent and parallel ([`run_election`], [`run_membership`]
//! with `jobs` threads); results come back in grid order whatever the
//! number of threads. A run that halts on a limit (its report's
//! [`halted`](crate::Report::halted)) is never averaged in: the sweep stops
//! with an error naming the seed and the limit, as `compare` does.
//!
//! # How the module is split
//!
//! * `mix` — the fault mix and its length distributions: what every run
//!   suffers, drawn from the seed alone.
//! * `grid` — the settings swept (the election and membership grids) and
//!   the seeds.
//! * `runs` — running every seed of every cell in parallel, streaming
//!   (through `crate::batch`'s one driver).
//! * `error` — why a sweep cannot run ([`SweepError`], and [`GridError`],
//!   [`LengthsError`], [`MixError`] for its settings).
//! * `stats` — what a run measures, the totals of a cell (its percentiles
//!   and rounding are the batch tools' shared ones, `crate::batch`), and
//!   each cell's measured row.
//! * `output` — the CSV and JSON of a sweep's results.
//! * `charts` — the SVG charts, drawn with the toolkit of [`crate::svg`].
//!
//! This file holds what ties them together: a sweep's results ([`Sweep`])
//! and the traits its outputs go through ([`Grid`], [`SweepResults`]).

mod charts;
mod error;
mod grid;
mod mix;
mod output;
mod runs;
mod stats;

use serde::{Deserialize, Serialize};

pub use self::error::{GridError, LengthsError, MixError, SweepError};
pub use self::grid::{ElectionCell, ElectionGrid, MembershipGrid};
pub use self::mix::{FaultMix, Lengths, Spread, MAX_FAULTS_PER_RUN};
pub use self::output::{ELECTION_CSV_HEADER, MEMBERSHIP_CSV_HEADER};
pub use self::runs::{run_election, run_membership};
pub use self::stats::{ElectionRow, MembershipRow};
pub use crate::batch::{Seeds, SeedsError};

/// A cell left out of a sweep, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The cell, as `lease_ttl=…, renew_ratio=…` or similar.
    pub cell: String,
    /// Why it was skipped.
    pub reason: String,
}

/// A sweep's results: the faults, the grid, one row per cell run (in grid
/// order) and the cells left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep<G: Grid> {
    /// The faults.
    pub mix: FaultMix,
    /// The grid.
    pub grid: G,
    /// The seeds every cell ran.
    pub seeds: Seeds,
    /// One row per cell run, in grid order.
    pub rows: Vec<G::Row>,
    /// Cells left out, and why.
    pub skipped: Vec<Skipped>,
}

/// The election sweep's results.
pub type ElectionSweep = Sweep<ElectionGrid>;
/// The membership sweep's results.
pub type MembershipSweep = Sweep<MembershipGrid>;

/// A grid of settings, as far as the outputs of its sweep are concerned.
pub trait Grid: Sized {
    /// One measured cell.
    type Row: Serialize + std::fmt::Debug + Clone + PartialEq;
    /// `election` or `membership`.
    const KIND: &'static str;
    /// The CSV header: field names of [`Self::Row`].
    const CSV_HEADER: &'static str;
    /// The grid, for the JSON output.
    fn to_json(&self) -> serde_json::Value;
    /// The chart of a sweep over this grid.
    fn chart(sweep: &Sweep<Self>, command: &str) -> String;
    /// A row's invariant violations.
    fn violations(row: &Self::Row) -> u64;
}

/// What every sweep's results can be turned into.
pub trait SweepResults {
    /// One header line and one line per row.
    fn to_csv(&self) -> String;
    /// One JSON object: the mix, the grid, the rows and the skipped cells.
    fn to_json(&self) -> serde_json::Value;
    /// The chart; `command` is the command line shown in its title.
    fn to_svg(&self, command: &str) -> String;
    /// Invariant violations over every run (0 unless something is broken).
    fn violations(&self) -> u64;
    /// The cells left out.
    fn skipped(&self) -> &[Skipped];
    /// Runs made (rows × seeds).
    fn runs(&self) -> u64;
}
