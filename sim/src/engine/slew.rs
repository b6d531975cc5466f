//! Clock slews, and the servers' clocks that carry them.
//!
//! A **slew** is how NTP corrects a clock without a step: the kernel runs
//! the clock a little fast or slow until the correction is made (`adjtime`,
//! ntpd's 500 ppm bound, chrony's `maxslewrate`). Unlike a step it moves
//! **both** of a host's clocks: Linux applies the adjustment to the clock
//! source behind `CLOCK_REALTIME` and `CLOCK_MONOTONIC` alike —
//! `clock_gettime(2)`: `CLOCK_MONOTONIC` "is affected by the incremental
//! adjustments performed by adjtime(3) and NTP"; only `CLOCK_MONOTONIC_RAW`
//! is not, and none of the modelled libraries reads it (Go's runtime reads
//! `CLOCK_MONOTONIC`, Java's `System.nanoTime` too). So a slew reaches the
//! timing of every host, whichever clock it times by.
//!
//! The correction `by` is made linearly over `over` of true time from
//! `since`: at `since + x` the clock reads `by × x / over` more than it
//! would have, truncated toward zero, and exactly `by` more from
//! `since + over` on. A negative correction never runs a clock backward: its
//! rate is validated below one (see [`MAX_SLEW_RATE`]), so each nanosecond
//! of true time advances the clock by at least zero. A new slew on a host
//! whose previous one is unfinished stops the previous one where it stands,
//! as `adjtime(3)` says of a call made while an adjustment is in progress
//! ("the earlier adjustment is stopped, but any already completed part of
//! that adjustment is not undone").

use fenced::Instant;

use super::clock::{server_local, server_true_time, SLEWED_SERVER_OFFSET};
use crate::time::SimTime;

/// The largest slew rate accepted: 50 % (a clock slewed faster is a clock
/// being stepped). ntpd slews at 500 ppm at most, chrony by default at
/// 83 333 ppm (8.3 %).
pub const MAX_SLEW_RATE: f64 = 0.5;

/// The default slew rate: ntpd's and the Linux kernel's bound, 500 ppm
/// (`MAXFREQ` in `kernel/time/ntp.c`, 500 µs per second).
pub const DEFAULT_SLEW_RATE: f64 = 0.000_5;

/// One correction in progress, or made: `by` ns over `over` ns of true time
/// from `since`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slew {
    since: u64,
    over: u64,
    by: i64,
}

impl Slew {
    /// A correction of `by` ns from true time `since` over `over` ns
    /// (at least 1).
    pub(crate) fn new(since: SimTime, by: i64, over: u64) -> Slew {
        debug_assert!(over > 0, "a slew takes time");
        debug_assert!(
            by.unsigned_abs() as f64 <= over as f64 * MAX_SLEW_RATE + 1.0,
            "a slew faster than MAX_SLEW_RATE could run a clock backward"
        );
        Slew {
            since: since.as_nanos(),
            over: over.max(1),
            by,
        }
    }

    /// How much of the correction is made at true time `t`.
    #[inline]
    pub(crate) fn progress(self, t: u64) -> i64 {
        if t <= self.since {
            0
        } else if t - self.since >= self.over {
            self.by
        } else {
            (i128::from(self.by) * i128::from(t - self.since) / i128::from(self.over)) as i64
        }
    }

    /// Whether the correction is complete at true time `t`.
    pub(crate) fn done_by(self, t: u64) -> bool {
        t.saturating_sub(self.since) >= self.over
    }
}

/// Begins a slew of `by` ns over `over` ns of true time at `now` on a clock
/// whose steps and earlier slews add up to `offset` and whose latest slew is
/// `current`: one still in progress stops where it stands (its progress so
/// far is folded into `offset`).
pub(crate) fn begin(
    offset: &mut i64,
    current: &mut Option<Slew>,
    now: SimTime,
    by: i64,
    over: u64,
) {
    if let Some(previous) = current.take() {
        *offset = offset.saturating_add(previous.progress(now.as_nanos()));
    }
    *current = Some(Slew::new(now, by, over));
}

/// The earliest true time, not before `not_before`, at which `read` (a
/// non-decreasing clock) reads at least `local`: a search, for clocks with
/// no closed-form inverse (those slewing).
pub(crate) fn first_reaching(read: impl Fn(u64) -> u64, local: u64, not_before: u64) -> u64 {
    if read(not_before) >= local {
        return not_before;
    }
    // Grow a bound that reaches, then bisect: `lo` never reaches, `hi` does.
    let (mut lo, mut step) = (not_before, 1u64);
    let mut hi = loop {
        let probe = lo.saturating_add(step);
        if read(probe) >= local {
            break probe;
        }
        if probe == u64::MAX {
            return u64::MAX;
        }
        lo = probe;
        step = step.saturating_mul(2);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if read(mid) >= local {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// A server's clock: true time (servers run no offset of their own), moved
/// by the steps of the clock it times by and by every slew.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ServerClock {
    /// Steps, and the slews made before the current one.
    offset: i64,
    slew: Option<Slew>,
}

impl ServerClock {
    /// A clock `offset` ns from true time (steps only).
    #[cfg(test)]
    pub(crate) fn stepped(offset: i64) -> ServerClock {
        ServerClock { offset, slew: None }
    }

    /// What the engine's clock record of the server holds
    /// ([`Lives`](super::Lives)): the offset while the clock has no slew,
    /// [`SLEWED_SERVER_OFFSET`] from its first slew on.
    pub(crate) fn record(&self) -> i64 {
        match self.slew {
            None => self.offset,
            Some(_) => SLEWED_SERVER_OFFSET,
        }
    }

    /// Steps the clock by `by` ns.
    pub(crate) fn step(&mut self, by: i64) {
        self.offset = self.offset.saturating_add(by);
    }

    /// Begins a slew of `by` ns over `over` ns of true time at `now`; one in
    /// progress stops where it stands.
    pub(crate) fn slew(&mut self, now: SimTime, by: i64, over: u64) {
        begin(&mut self.offset, &mut self.slew, now, by, over);
    }

    /// The clock's steps and finished slews, when no slew is in progress at
    /// `now` (a finished one is folded in).
    #[inline]
    fn settled_offset(&self, now: u64) -> Option<i64> {
        match self.slew {
            None => Some(self.offset),
            Some(slew) if slew.done_by(now) => Some(self.offset.saturating_add(slew.by)),
            Some(_) => None,
        }
    }

    /// What the clock reads at true time `t`.
    #[inline]
    pub(crate) fn local(&self, t: SimTime) -> Instant {
        match self.slew {
            None => server_local(t, self.offset),
            Some(slew) => {
                let offset = self.offset.saturating_add(slew.progress(t.as_nanos()));
                server_local(t, offset)
            }
        }
    }

    /// The earliest true time, not before `not_before`, at which the clock
    /// reads `local`.
    #[inline]
    pub(crate) fn true_time_at(&self, local: Instant, not_before: SimTime) -> SimTime {
        if let Some(offset) = self.settled_offset(not_before.as_nanos()) {
            return server_true_time(local, offset, not_before);
        }
        let read = |t: u64| self.local(SimTime::from_nanos(t)).as_nanos();
        SimTime::from_nanos(first_reaching(
            read,
            local.as_nanos(),
            not_before.as_nanos(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: u64) -> SimTime {
        SimTime::from_nanos(secs * 1_000_000_000)
    }

    #[test]
    fn a_slew_is_linear_and_complete_at_its_end() {
        let s = Slew::new(t(10), 2_000_000_000, 4_000_000_000_000);
        assert_eq!(s.progress(t(5).as_nanos()), 0);
        assert_eq!(s.progress(t(10).as_nanos()), 0);
        assert_eq!(s.progress(t(2_010).as_nanos()), 1_000_000_000);
        assert_eq!(s.progress(t(4_010).as_nanos()), 2_000_000_000);
        assert_eq!(s.progress(t(9_999).as_nanos()), 2_000_000_000);
        let back = Slew::new(t(0), -3, 10);
        assert_eq!(back.progress(5), -1);
        assert_eq!(back.progress(10), -3);
    }

    #[test]
    fn a_backward_slew_never_runs_the_clock_backward() {
        let mut c = ServerClock::default();
        c.slew(t(1), -1_000_000_000, 2_000_000_000);
        let mut last = 0;
        for n in (0..5_000_000_000u64).step_by(7_919_993) {
            let now = c.local(SimTime::from_nanos(n)).as_nanos();
            assert!(now >= last, "at {n}");
            last = now;
        }
        assert_eq!(c.local(t(10)).as_nanos(), 9_000_000_000);
    }

    #[test]
    fn the_inverse_is_the_earliest_reaching_instant() {
        let mut c = ServerClock::stepped(500);
        c.slew(t(1), 700_000_000, 1_400_000_000);
        for n in [
            0u64,
            999_999_999,
            1_000_000_000,
            1_300_000_001,
            2_399_999_999,
            9_000_000_000,
        ] {
            let local = c.local(SimTime::from_nanos(n));
            let back = c.true_time_at(local, SimTime::ZERO).as_nanos();
            assert!(c.local(SimTime::from_nanos(back)) >= local);
            assert!(
                back == 0 || c.local(SimTime::from_nanos(back - 1)) < local,
                "{n}"
            );
        }
    }

    #[test]
    fn a_new_slew_stops_the_previous_where_it_stands() {
        let mut c = ServerClock::default();
        c.slew(t(0), 1_000_000_000, 10_000_000_000);
        c.slew(t(5), 0, 1);
        assert_eq!(c.local(t(100)).as_nanos(), 100_500_000_000);
    }
}
