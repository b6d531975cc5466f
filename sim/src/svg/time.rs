//! Time on a picture: nanosecond instants and spans as short labels
//! ([`time_label`], [`span_label`]) and axis tick steps that read well
//! ([`tick_step`], from the [`ONE_TWO_FIVE`] series).
//!
//! Part of the toolkit (see [`super::document`]): it knows nothing of runs
//! and imports nothing from the rest of the crate, so the sweep's charts use
//! it as well as the run timeline.

use std::fmt::Write as _;

/// Nanoseconds in a millisecond.
pub(crate) const NS_PER_MS: u64 = 1_000_000;

/// The multiples of a power of ten that make steps and ticks read well:
/// 1, 2 and 5 × 10^k (here for time steps; the sweep's log axes use them
/// too).
pub(crate) const ONE_TWO_FIVE: [u64; 3] = [1, 2, 5];

/// A "nice" tick step giving at most `max_ticks` ticks: 1, 2 or 5 × 10^k
/// ms below 10 s, then steps that read well as minutes and hours.
pub(crate) fn tick_step(span_ns: u64, max_ticks: u64) -> u64 {
    const S: u64 = 1_000_000_000;
    let mut candidates: Vec<u64> = Vec::new();
    let mut decade = NS_PER_MS;
    while decade < 10 * S {
        candidates.extend(ONE_TWO_FIVE.map(|m| m * decade));
        decade *= 10;
    }
    candidates.extend(
        [
            10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
        ]
        .map(|s| s * S),
    );
    let max_ticks = max_ticks.max(1);
    candidates
        .into_iter()
        .find(|&step| span_ns / step <= max_ticks)
        .unwrap_or_else(|| (span_ns / max_ticks).div_ceil(86_400 * S).max(1) * 86_400 * S)
}

/// A time label: `850ms`, `12.5s`, `40s`, `1m30s`, `2h5m`.
pub(crate) fn time_label(ns: u64) -> String {
    let ms = ns / NS_PER_MS;
    if ms < 1000 && ms > 0 && ns % 1_000_000_000 != 0 {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let frac = ms % 1000;
    if s < 60 {
        return if frac == 0 {
            format!("{s}s")
        } else {
            let t = format!("{s}.{frac:03}");
            format!("{}s", t.trim_end_matches('0'))
        };
    }
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 || (h > 0 && sec > 0) {
        let _ = write!(out, "{m}m");
    }
    if sec > 0 || frac > 0 {
        if frac > 0 {
            let t = format!("{sec}.{frac:03}");
            let _ = write!(out, "{}s", t.trim_end_matches('0'));
        } else {
            let _ = write!(out, "{sec}s");
        }
    }
    out
}

/// A span's length for labels: `40s`, `11.04s`, `350ms`, `2m5s`.
pub(crate) fn span_label(ns: u64) -> String {
    let ms = ns / NS_PER_MS;
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let s = format!("{:.2}", ms as f64 / 1000.0);
        return format!("{}s", s.trim_end_matches('0').trim_end_matches('.'));
    }
    time_label(ms * NS_PER_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_labels_read_well() {
        assert_eq!(time_label(0), "0s");
        assert_eq!(time_label(500 * NS_PER_MS), "500ms");
        assert_eq!(time_label(12_500 * NS_PER_MS), "12.5s");
        assert_eq!(time_label(40_000 * NS_PER_MS), "40s");
        assert_eq!(time_label(90_000 * NS_PER_MS), "1m30s");
        assert_eq!(time_label(120_000 * NS_PER_MS), "2m");
        assert_eq!(time_label(3_600_000 * NS_PER_MS), "1h");
    }

    #[test]
    fn tick_steps_are_nice() {
        assert_eq!(tick_step(120_000 * NS_PER_MS, 12), 10_000 * NS_PER_MS);
        assert_eq!(tick_step(3_600_000 * NS_PER_MS, 12), 300_000 * NS_PER_MS);
        assert_eq!(tick_step(2_000 * NS_PER_MS, 12), 200 * NS_PER_MS);
        assert_eq!(tick_step(637_000 * NS_PER_MS, 12), 60_000 * NS_PER_MS);
        assert_eq!(tick_step(200_000 * NS_PER_MS, 12), 30_000 * NS_PER_MS);
    }
}
