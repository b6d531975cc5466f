//! The simulation's one time vocabulary.
//!
//! * [`SimTime`] — *true* time: nanoseconds since the run began, on the
//!   global clock that no host can read. The engine, the queue, faults and
//!   observers speak it.
//! * [`fenced::Instant`] — what one host's clock reads (`clock.rs` maps true
//!   time to it and back). Hosts speak it, as the core machines do.
//! * [`Duration`] — every span (a latency, a fault's length, a TTL).
//!
//! Nanoseconds are the unit inside; milliseconds appear only where the JSON
//! report is written, seconds only where people read text.

use std::ops::Add;
use std::time::Duration;

/// True (simulation) time: nanoseconds since the run began, on the global
/// clock no host can read. Hosts read their own clocks ([`fenced::Instant`]).
///
/// Arithmetic saturates at [`SimTime::MAX`] (≈584 years): runs are limited
/// to far less ([`crate::limits`]), so saturation only guards a hostile input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

impl SimTime {
    /// The start of every run.
    pub const ZERO: SimTime = SimTime(0);

    /// The latest representable instant.
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// `nanos` nanoseconds after the start.
    pub const fn from_nanos(nanos: u64) -> Self {
        SimTime(nanos)
    }

    /// `since_start` after the start (saturating).
    pub fn from_duration(since_start: Duration) -> Self {
        SimTime(span_nanos(since_start))
    }

    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The span since the start.
    pub const fn since_start(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `span` before `self`, or the start if that is earlier.
    pub fn saturating_sub(self, span: Duration) -> SimTime {
        SimTime(self.0.saturating_sub(span_nanos(span)))
    }

    /// `nanos` nanoseconds after `self`, saturating: the hot path of a
    /// message's arrival, without a [`Duration`] round trip (whose
    /// construction from nanoseconds divides).
    #[inline]
    pub(crate) const fn saturating_add_nanos(self, nanos: u64) -> SimTime {
        SimTime(self.0.saturating_add(nanos))
    }

    /// The span from `earlier` to `self`; zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: SimTime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// `t + span`, saturating at [`SimTime::MAX`].
impl Add<Duration> for SimTime {
    type Output = SimTime;

    #[inline]
    fn add(self, span: Duration) -> SimTime {
        SimTime(self.0.saturating_add(span_nanos(span)))
    }
}

/// Anything that is a count of nanoseconds on the true clock — an instant
/// ([`SimTime`]), a span ([`Duration`]) or the raw nanoseconds of a
/// [`Timeline`](crate::timeline::Timeline) — for the printing helpers of
/// [`crate::units`].
pub(crate) trait Nanos: Copy {
    /// The count, saturating at `u64::MAX`.
    fn nanos(self) -> u64;
}

impl Nanos for SimTime {
    #[inline]
    fn nanos(self) -> u64 {
        self.0
    }
}

impl Nanos for Duration {
    #[inline]
    fn nanos(self) -> u64 {
        span_nanos(self)
    }
}

impl Nanos for u64 {
    #[inline]
    fn nanos(self) -> u64 {
        self
    }
}

/// Whole nanoseconds of `span`, saturating at `u64::MAX`.
#[inline]
pub(crate) fn span_nanos(span: Duration) -> u64 {
    u64::try_from(span.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_a_span_saturates_instead_of_wrapping() {
        let near_end = SimTime::from_nanos(u64::MAX - 5);
        assert_eq!(
            near_end + Duration::from_nanos(3),
            SimTime::from_nanos(u64::MAX - 2)
        );
        assert_eq!(near_end + Duration::from_secs(1), SimTime::MAX);
        assert_eq!(SimTime::ZERO + Duration::MAX, SimTime::MAX);
    }

    #[test]
    fn spans_between_instants_never_go_negative() {
        let (a, b) = (SimTime::from_nanos(10), SimTime::from_nanos(25));
        assert_eq!(b.saturating_since(a), Duration::from_nanos(15));
        assert_eq!(a.saturating_since(b), Duration::ZERO);
        assert_eq!(
            SimTime::from_duration(Duration::from_millis(3)).as_nanos(),
            3_000_000
        );
        assert_eq!(
            SimTime::from_nanos(7).since_start(),
            Duration::from_nanos(7)
        );
    }
}
