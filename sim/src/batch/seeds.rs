//! The seeds every cell of a batch runs ([`Seeds`]): `--start` and
//! `--seeds`, shared by sweep and compare.

/// Which seeds every cell runs: `count` of them from `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// The first seed.
    pub start: u64,
    /// How many.
    pub count: u64,
}

impl Seeds {
    /// The seeds, in order (a vector: for small counts).
    pub fn list(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The seeds, in order, drawn lazily.
    pub fn iter(&self) -> impl Iterator<Item = u64> + Clone + Send + 'static {
        let start = self.start;
        (0..self.count).map(move |i| start.wrapping_add(i))
    }

    /// Checks that there is a seed and that the last one (`start + count -
    /// 1`) is no larger than `u64::MAX`.
    ///
    /// # Errors
    /// One sentence naming `--seeds` or `--start`.
    pub fn check(&self) -> Result<(), SeedsError> {
        if self.count == 0 {
            return Err(SeedsError::NoSeed);
        }
        if self.start.checked_add(self.count - 1).is_none() {
            return Err(SeedsError::PastTheLargest {
                start: self.start,
                count: self.count,
            });
        }
        Ok(())
    }
}

/// Why [`Seeds`] name no run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedsError {
    /// `--seeds 0`.
    NoSeed,
    /// The last seed, `start + count - 1`, would pass `u64::MAX`.
    PastTheLargest {
        /// `--start`.
        start: u64,
        /// `--seeds`.
        count: u64,
    },
}

impl std::fmt::Display for SeedsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            SeedsError::NoSeed => f.write_str("--seeds must be at least 1"),
            SeedsError::PastTheLargest { start, count } => write!(
                f,
                "--start {start} with --seeds {count} goes past the largest seed, {}: use at \
                 most --seeds {}",
                u64::MAX,
                u64::MAX - start + 1
            ),
        }
    }
}

impl std::error::Error for SeedsError {}
