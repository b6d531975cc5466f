//! A seeded random stream whose `Debug` says where it stands.
//!
//! The machines that draw randomness (the elector's jitter, the lock zoo's
//! retry delays) are deterministic in their state, and a simulator compares
//! states by their `Debug` text (`fenced-sim verify` deduplicates runs by
//! it). `rand_chacha`'s generator deliberately prints nothing of its state
//! (`ChaChaXCore {}`), so two generators at different positions would look
//! the same; this wrapper prints the seed, the stream and the word
//! position, which are the whole of it.

use std::fmt;
use std::ops::{Deref, DerefMut};

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// A ChaCha8 stream (what every seeded draw of this workspace uses) with a
/// complete `Debug`. Dereferences to the generator.
#[derive(Clone, PartialEq, Eq)]
pub struct SeededRng(ChaCha8Rng);

impl SeededRng {
    /// The stream seeded from `seed` (`ChaCha8Rng::seed_from_u64`).
    pub fn seed_from_u64(seed: u64) -> Self {
        SeededRng(ChaCha8Rng::seed_from_u64(seed))
    }
}

impl Deref for SeededRng {
    type Target = ChaCha8Rng;

    fn deref(&self) -> &ChaCha8Rng {
        &self.0
    }
}

impl DerefMut for SeededRng {
    fn deref_mut(&mut self) -> &mut ChaCha8Rng {
        &mut self.0
    }
}

impl fmt::Debug for SeededRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeededRng")
            .field("seed", &self.0.get_seed())
            .field("stream", &self.0.get_stream())
            .field("word_pos", &self.0.get_word_pos())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    #[test]
    fn debug_tells_positions_apart_and_equal_states_alike() {
        let (mut a, b) = (SeededRng::seed_from_u64(7), SeededRng::seed_from_u64(7));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        a.next_u64();
        assert_ne!(format!("{a:?}"), format!("{b:?}"));
        assert_ne!(
            format!("{:?}", SeededRng::seed_from_u64(8)),
            format!("{b:?}")
        );
    }
}
