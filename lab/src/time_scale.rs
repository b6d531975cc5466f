//! `--time-scale`: one factor for every duration of a scenario.
//!
//! The shipped scenarios last minutes of virtual time; a real run of them at
//! `0.1` takes seconds. Every duration is multiplied (run length, fault times
//! and lengths, elector timings, heartbeats, work, latency, clock offsets);
//! a clock drift is a rate and is left alone.

use std::time::Duration;

use crate::plan::PlanError;

/// The largest time scale (a scenario slowed down a thousandfold).
pub const MAX_TIME_SCALE: f64 = 1000.0;

/// A factor every duration of the scenario is multiplied by: `0.1` runs a
/// scenario ten times faster. Within `(0, 1000]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeScale(f64);

impl TimeScale {
    /// The scale `factor`.
    ///
    /// # Errors
    /// [`PlanError::TimeScale`] unless `0 < factor <= 1000`.
    pub fn new(factor: f64) -> Result<TimeScale, PlanError> {
        if factor.is_finite() && factor > 0.0 && factor <= MAX_TIME_SCALE {
            Ok(TimeScale(factor))
        } else {
            Err(PlanError::TimeScale { given: factor })
        }
    }

    /// The factor.
    pub fn factor(self) -> f64 {
        self.0
    }

    /// `d` scaled (saturating at [`Duration::MAX`]).
    pub fn scale(self, d: Duration) -> Duration {
        Duration::try_from_secs_f64(d.as_secs_f64() * self.0).unwrap_or(Duration::MAX)
    }

    /// A signed nanosecond offset scaled.
    pub fn scale_nanos(self, nanos: i64) -> i64 {
        // Offsets are within ±1 day, far inside f64's exact integers.
        (nanos as f64 * self.0).round() as i64
    }
}

impl Default for TimeScale {
    fn default() -> Self {
        TimeScale(1.0)
    }
}
