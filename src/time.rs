//! The one time type of the crate: an [`Instant`] on *some* clock, in nanoseconds.
//!
//! The state machines never read a clock. Every method whose behaviour depends on
//! time takes `now: Instant`, and the driver decides which clock that is: the
//! simulator passes each host's virtual clock, a tokio driver maps
//! `tokio::time::Instant` onto it, a database-backed store uses the database's
//! clock. Instants from different clocks must never be compared; the types cannot
//! stop that, so each API says whose clock its instants are on.
//!
//! Spans are plain [`std::time::Duration`]s.
//!
//! Arithmetic saturates instead of overflowing or panicking: `u64` nanoseconds
//! last 584 years, so saturation is only ever reached by absurd input, and then
//! the result is "the end of time" rather than a wrap-around into the past.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time on some clock, as nanoseconds since that clock's origin.
///
/// Totally ordered, `Copy`, 8 bytes. [`Instant::ZERO`] is the clock's origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct Instant(u64);

/// Converts a duration to whole nanoseconds, saturating at `u64::MAX`.
pub(crate) fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(0);
    /// The last representable instant; saturating arithmetic stops here.
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// The instant `millis` milliseconds after the origin (saturating).
    pub const fn from_millis(millis: u64) -> Instant {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// The instant `secs` seconds after the origin (saturating).
    pub const fn from_secs(secs: u64) -> Instant {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole milliseconds since the origin (rounded down).
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }

    /// `self + duration`, or `None` if that is past [`Instant::MAX`].
    pub fn checked_add(self, duration: Duration) -> Option<Instant> {
        let nanos = u64::try_from(duration.as_nanos()).ok()?;
        self.0.checked_add(nanos).map(Instant)
    }

    /// `self + duration`, stopping at [`Instant::MAX`].
    pub fn saturating_add(self, duration: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(duration)))
    }

    /// `self - duration`, stopping at [`Instant::ZERO`].
    pub fn saturating_sub(self, duration: Duration) -> Instant {
        Instant(self.0.saturating_sub(duration_nanos(duration)))
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The span from `earlier` to `self`, or `None` if `earlier` is later.
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// Saturating: see [`Instant::saturating_add`].
    fn add(self, rhs: Duration) -> Instant {
        self.saturating_add(rhs)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// Saturating: see [`Instant::saturating_sub`].
    fn sub(self, rhs: Duration) -> Instant {
        self.saturating_sub(rhs)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturating: see [`Instant::saturating_duration_since`].
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl fmt::Display for Instant {
    /// Seconds with nanosecond precision, trailing zeros trimmed to
    /// milliseconds: `12.000s`, `0.003500s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0 / 1_000_000_000;
        let nanos = self.0 % 1_000_000_000;
        if nanos % 1_000_000 == 0 {
            write!(f, "{secs}.{:03}s", nanos / 1_000_000)
        } else if nanos % 1_000 == 0 {
            write!(f, "{secs}.{:06}s", nanos / 1_000)
        } else {
            write!(f, "{secs}.{nanos:09}s")
        }
    }
}

/// The latest instant a state machine has been told, so that its time never
/// runs backwards: an earlier `now` counts as the latest seen.
///
/// Every machine of this crate keeps one, and so do the models of the
/// `fenced-zoo` crate; it is public so that a machine written outside the
/// crate guards its clock the same way. Call [`observe`](LatestNow::observe)
/// first in every input that takes `now`, and [`at`](LatestNow::at) in
/// getters that take `now` but must not change state. It starts at
/// [`Instant::ZERO`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatestNow(Instant);

impl LatestNow {
    /// Records `now` and returns the machine's time: `now` or, if `now` is
    /// earlier, the latest seen.
    #[inline]
    pub fn observe(&mut self, now: Instant) -> Instant {
        self.0 = self.0.max(now);
        self.0
    }

    /// The machine's time at `now` without recording it.
    #[inline]
    pub fn at(self, now: Instant) -> Instant {
        self.0.max(now)
    }

    /// The latest instant seen ([`Instant::ZERO`] before the first
    /// [`observe`](LatestNow::observe)).
    #[inline]
    pub fn get(self) -> Instant {
        self.0
    }
}

/// The earlier of two optional instants, `None` only if both are: how a
/// machine's `next_timeout` combines its timers (`None` = that timer is not
/// armed).
#[inline]
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(Instant::ZERO - Instant::from_secs(3), Duration::ZERO);
        assert_eq!(Instant::MAX.checked_add(Duration::from_nanos(1)), None);
        assert_eq!(
            Instant::from_secs(1).checked_duration_since(Instant::from_secs(2)),
            None
        );
        assert_eq!(
            Instant::from_secs(5) - Instant::from_secs(2),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn conversions_and_differences_are_exact_away_from_the_bounds() {
        let t = Instant::from_nanos(7_345_678_901);
        assert_eq!(t.as_nanos(), 7_345_678_901);
        assert_eq!(t.as_millis(), 7_345);
        assert_eq!(Instant::from_millis(2_999).as_millis(), 2_999);
        assert_eq!(
            t.saturating_sub(Duration::from_nanos(345_678_901)),
            Instant::from_secs(7)
        );
        assert_eq!(
            t - Duration::from_secs(2),
            Instant::from_nanos(5_345_678_901)
        );
        assert_eq!(
            t + Duration::from_nanos(99),
            Instant::from_nanos(7_345_679_000)
        );
        assert_eq!(
            t.saturating_duration_since(Instant::from_secs(7)),
            Duration::from_nanos(345_678_901)
        );
        assert_eq!(
            t.checked_duration_since(Instant::from_secs(1)),
            Some(Duration::from_nanos(6_345_678_901))
        );
        assert_eq!(t - Instant::from_secs(7), Duration::from_nanos(345_678_901));
        assert_eq!(
            t.checked_add(Duration::from_secs(1)),
            Some(Instant::from_nanos(8_345_678_901))
        );
    }

    #[test]
    fn display_is_seconds_with_the_precision_needed() {
        assert_eq!(
            Instant::from_nanos(7_345_678_901).to_string(),
            "7.345678901s"
        );
        assert_eq!(Instant::from_nanos(7_345_678_000).to_string(), "7.345678s");
        assert_eq!(Instant::from_nanos(7_345_000_000).to_string(), "7.345s");
        assert_eq!(Instant::from_nanos(2_000_001_000).to_string(), "2.000001s");
        assert_eq!(Instant::from_secs(12).to_string(), "12.000s");
        assert_eq!(Instant::from_nanos(3_500_000).to_string(), "0.003500s");
        assert_eq!(Instant::from_nanos(1).to_string(), "0.000000001s");
        assert_eq!(Instant::from_millis(61_250).to_string(), "61.250s");
    }
}
