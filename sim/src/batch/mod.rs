//! What the batch tools (`sweep`, `compare`) share: many runs of many cells
//! summed up per cell.
//!
//! * `stats` — the [`Histogram`] of a cell's values with nearest-rank
//!   percentiles, and the one rounding of the figures they print.

mod stats;

pub(crate) use stats::{round_to, three_significant_digits, Histogram};
