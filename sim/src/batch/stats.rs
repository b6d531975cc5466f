//! The statistics both batch tools report: a [`Histogram`] with
//! nearest-rank percentiles, and one rounding of the figures they print
//! ([`round_to`]).

use std::collections::BTreeMap;

/// Values counted per distinct value, for exact nearest-rank percentiles in
/// memory bounded by how many *distinct* values there are, not by how many
/// were counted. A tool that wants a bound on the distinct values too counts
/// them rounded ([`three_significant_digits`]: at most about 16 000 for any
/// `u64`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Histogram {
    /// Value → how many times it was counted.
    counts: BTreeMap<u64, u64>,
    /// How many values were counted.
    n: u64,
}

impl Histogram {
    /// Counts `value` once.
    pub(crate) fn add(&mut self, value: u64) {
        *self.counts.entry(value).or_insert(0) += 1;
        self.n += 1;
    }

    /// How many values were counted.
    pub(crate) fn len(&self) -> u64 {
        self.n
    }

    /// The nearest-rank percentile `p` (0–100) of the values counted: the
    /// value at rank `ceil(p / 100 × n)` (at least 1) of their sorted list;
    /// `None` without values.
    pub(crate) fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = (((p / 100.0) * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        self.counts.iter().find_map(|(&value, &count)| {
            seen += count;
            (seen >= rank).then_some(value)
        })
    }
}

/// `value` rounded to three significant digits (half up, saturating): exact
/// below 1000, within 0.05% above.
pub(crate) fn three_significant_digits(value: u64) -> u64 {
    let mut magnitude = 1u64;
    while value / magnitude >= 1000 {
        magnitude *= 10;
    }
    (value.saturating_add(magnitude / 2) / magnitude).saturating_mul(magnitude)
}

/// `10^decimals` for each number of decimals [`round_to`] supports, written
/// out so that each is the exact literal (`1e3`, not a computed power).
const POWERS_OF_TEN: [f64; 7] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6];

/// `x` rounded to `decimals` decimals (0–6), half away from zero: how the
/// tools' rows and cells print seconds, rates and fractions.
pub(crate) fn round_to(x: f64, decimals: usize) -> f64 {
    assert!(
        decimals < POWERS_OF_TEN.len(),
        "round_to supports at most 6 decimals, not {decimals}"
    );
    let scale = POWERS_OF_TEN[decimals];
    (x * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_over_every_value_counted() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50.0), None);
        for v in (1..=100).rev() {
            h.add(v);
        }
        h.add(100);
        assert_eq!(h.len(), 101);
        assert_eq!(h.percentile(0.0), Some(1));
        assert_eq!(h.percentile(50.0), Some(51));
        assert_eq!(h.percentile(99.0), Some(100));
        assert_eq!(h.percentile(100.0), Some(100));
    }

    #[test]
    fn three_significant_digits_rounds_half_up_and_saturates() {
        assert_eq!(three_significant_digits(0), 0);
        assert_eq!(three_significant_digits(999), 999);
        assert_eq!(three_significant_digits(1234), 1230);
        assert_eq!(three_significant_digits(1235), 1240);
        assert_eq!(three_significant_digits(7_875_004), 7_880_000);
        assert_eq!(
            three_significant_digits(u64::MAX),
            18_400_000_000_000_000_000
        );
    }

    #[test]
    fn rounding_matches_the_literal_scales() {
        for x in [0.0, 1.0005, 2.49999, -3.0625049, 1234.5678901, 0.1234565] {
            assert_eq!(round_to(x, 3), (x * 1e3).round() / 1e3);
            assert_eq!(round_to(x, 4), (x * 1e4).round() / 1e4);
            assert_eq!(round_to(x, 6), (x * 1e6).round() / 1e6);
        }
    }
}
