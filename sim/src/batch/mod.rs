//! What the batch tools (`sweep`, `compare`) share: many runs of many cells
//! summed up per cell.
//!
//! * `cells` — the one driver of "cells × seeds" ([`cells::run`]): every
//!   seed of every cell on worker threads, each run folded into its cell's
//!   [`Totals`] in seed order as it finishes.
//! * `seeds` — the [`Seeds`] every cell runs.
//! * `stats` — the [`Histogram`] of a cell's values with nearest-rank
//!   percentiles, and the one rounding of the figures they print.

pub(crate) mod cells;
mod seeds;
mod stats;

pub(crate) use cells::Totals;
pub use seeds::{Seeds, SeedsError};

pub(crate) use stats::{round_to, three_significant_digits, Histogram};
