//! Small helpers shared by the models.

use std::time::Duration;

use crate::{Instant, SettingsError};

/// The earlier of two optional instants.
#[inline]
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The earliest of any number of optional instants.
pub(crate) fn earliest_of<const N: usize>(all: [Option<Instant>; N]) -> Option<Instant> {
    all.into_iter().fold(None, earliest)
}

/// `Err(Zero)` if `value` is zero.
pub(crate) fn nonzero(setting: &'static str, value: Duration) -> Result<(), SettingsError> {
    if value.is_zero() {
        Err(SettingsError::Zero { setting })
    } else {
        Ok(())
    }
}

/// The latest `now` a machine has been told, so its time never runs
/// backwards even if the driver's clock jumps back: an earlier `now` counts as
/// the latest seen. (Real libraries read a monotonic clock; a jump back of the
/// wall clock does not move it.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LatestNow(Instant);

impl LatestNow {
    /// Records `now` and returns the machine's time.
    #[inline]
    pub(crate) fn observe(&mut self, now: Instant) -> Instant {
        self.0 = self.0.max(now);
        self.0
    }

    /// The machine's time at `now`, without recording it.
    #[inline]
    pub(crate) fn at(self, now: Instant) -> Instant {
        self.0.max(now)
    }
}

/// A uniformly random fraction in `[0, 1)` from 53 random bits: exact, with no
/// platform maths.
pub(crate) fn unit_fraction(rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    use rand_core::Rng;
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniformly random integer in `[0, bound)` (`0` when `bound` is zero).
pub(crate) fn below(rng: &mut rand_chacha::ChaCha8Rng, bound: u64) -> u64 {
    use rand_core::Rng;
    if bound == 0 {
        0
    } else {
        rng.next_u64() % bound
    }
}
