//! Converting and printing the simulator's spans and instants: true time is
//! `u64` nanoseconds; reports use milliseconds; people read seconds.

use std::time::Duration;

/// Whole nanoseconds of `d`, saturating at `u64::MAX`.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whole milliseconds of a nanosecond instant (rounded down).
pub(crate) fn ms(t: u64) -> u64 {
    t / 1_000_000
}

/// `d` in humantime syntax (`1m 30s`), as scenario files write it.
pub(crate) fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A nanosecond instant as seconds with milliseconds: `52.050s`.
pub(crate) fn secs(t: u64) -> String {
    secs_of_ms(ms(t))
}

/// A millisecond count as seconds with milliseconds: `52.050s`.
pub(crate) fn secs_of_ms(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}
