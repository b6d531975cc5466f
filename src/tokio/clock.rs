//! The mapping of tokio's clock onto the crate's [`Instant`].

use std::time::Duration;

use ::tokio::time::Instant as TokioInstant;

use crate::time::{duration_nanos, Instant};

/// Maps `tokio::time::Instant` onto the crate's [`Instant`]: nanoseconds since
/// a base instant captured when the clock is made.
///
/// Copy one clock into everything of one process that must agree on time (the
/// electors, the in-process lease store, the registry, the fenced store) so
/// their instants are comparable and a timeline reads in one frame. Instants
/// of two different `Clock`s must not be compared.
///
/// It follows tokio's clock, so a test on a paused runtime
/// (`#[tokio::test(start_paused = true)]`) sees exact virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    base: TokioInstant,
    /// The planted bug [`DriverReadsWallClock`](crate::PlantedBug::DriverReadsWallClock):
    /// the wall-clock reading at `base`, when `now` is read off the wall
    /// clock.
    #[cfg(feature = "planted-bugs")]
    wall_base: Option<std::time::SystemTime>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose origin ([`Instant::ZERO`]) is tokio's now. Inside a
    /// runtime with a paused clock that is the virtual now; outside any runtime
    /// it is the real one.
    pub fn new() -> Clock {
        Clock::starting_at(TokioInstant::now())
    }

    /// A clock whose origin is `base`.
    pub fn starting_at(base: TokioInstant) -> Clock {
        Clock {
            base,
            #[cfg(feature = "planted-bugs")]
            wall_base: None,
        }
    }

    /// This clock with the planted bug `DriverReadsWallClock`: [`now`](Self::now)
    /// counts from the wall clock (`SystemTime`), which an NTP step moves,
    /// instead of tokio's monotonic clock. Timers still sleep on tokio's.
    #[cfg(feature = "planted-bugs")]
    #[allow(clippy::disallowed_methods)] // Reading the wall clock is the bug.
    pub(crate) fn reading_wall_clock(self) -> Clock {
        let since_base = TokioInstant::now().saturating_duration_since(self.base);
        let wall_now = std::time::SystemTime::now();
        Clock {
            wall_base: Some(wall_now.checked_sub(since_base).unwrap_or(wall_now)),
            ..self
        }
    }

    /// The tokio instant this clock calls [`Instant::ZERO`].
    pub fn base(&self) -> TokioInstant {
        self.base
    }

    /// The current time on this clock.
    pub fn now(&self) -> Instant {
        #[cfg(feature = "planted-bugs")]
        if let Some(wall_base) = self.wall_base {
            #[allow(clippy::disallowed_methods)] // Reading the wall clock is the bug.
            let elapsed = std::time::SystemTime::now()
                .duration_since(wall_base)
                .unwrap_or(Duration::ZERO);
            return Instant::from_nanos(duration_nanos(elapsed));
        }
        self.at(TokioInstant::now())
    }

    /// `instant` on this clock. Instants before the origin map to
    /// [`Instant::ZERO`]; beyond 584 years, to [`Instant::MAX`].
    pub fn at(&self, instant: TokioInstant) -> Instant {
        Instant::from_nanos(duration_nanos(instant.saturating_duration_since(self.base)))
    }

    /// The tokio instant of `instant`, to sleep until it; `None` when it lies
    /// beyond what the platform's instants can represent (treat it as
    /// "never").
    pub fn to_tokio(&self, instant: Instant) -> Option<TokioInstant> {
        self.base
            .checked_add(Duration::from_nanos(instant.as_nanos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_mapping_counts_nanoseconds_from_the_base_and_round_trips() {
        let clock = Clock::new();
        assert_eq!(clock.now(), Instant::ZERO);
        ::tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert_eq!(clock.now(), Instant::from_millis(1_500));
        let later = Instant::from_nanos(2_000_000_123);
        let tokio_later = clock.to_tokio(later);
        assert_eq!(tokio_later.map(|t| clock.at(t)), Some(later));
        // Before the origin saturates at zero.
        let earlier = Clock::starting_at(clock.base() + Duration::from_secs(5));
        assert_eq!(earlier.now(), Instant::ZERO);
    }
}
