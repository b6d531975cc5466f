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
    pub fn check(&self) -> Result<(), String> {
        if self.count == 0 {
            return Err("--seeds must be at least 1".to_string());
        }
        if self.start.checked_add(self.count - 1).is_none() {
            return Err(format!(
                "--start {} with --seeds {} goes past the largest seed, {}: use at most --seeds {}",
                self.start,
                self.count,
                u64::MAX,
                u64::MAX - self.start + 1
            ));
        }
        Ok(())
    }
}
