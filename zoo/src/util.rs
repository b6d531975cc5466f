//! Small helpers shared by the models.

use std::time::Duration;

use fenced::earliest;

use crate::{Instant, SettingsError};

/// The earliest of any number of optional instants ([`earliest`] folded).
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

/// `ExpiryQueue.roundToNextInterval`: the first multiple of `tick_ns`
/// strictly after `at_ns` (saturating; `at_ns` itself when `tick_ns` is 0).
pub(crate) fn round_to_next_interval(at_ns: u64, tick_ns: u64) -> u64 {
    if tick_ns == 0 {
        return at_ns;
    }
    (at_ns / tick_ns).saturating_add(1).saturating_mul(tick_ns)
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
