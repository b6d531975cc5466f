//! Host clocks: each host has two, derived from true (simulation) time.
//!
//! A **wall** clock (`CLOCK_REALTIME`, Go's wall reading, Java's
//! `System.currentTimeMillis`) runs at the host's rate, starts at its offset,
//! and moves by every `clock-jump` (an NTP step). A **monotonic** clock
//! (`CLOCK_MONOTONIC`, Go's monotonic reading that `time.Since`/`Until` use,
//! Java's `System.nanoTime`, tokio's `Instant`) runs at the same rate — drift
//! is the oscillator's and moves both — and is never stepped. Each host times
//! its decisions by the one its upstream reads ([`ClockKind`], declared per
//! host); the two agree until the first step.
//!
//! `local = true × (1 + drift) + offset (+ steps, wall only) + EPOCH`, in
//! integer nanoseconds with the drift held as parts per billion, so
//! conversions are exact and identical on every machine. `EPOCH` (ten days)
//! keeps local instants non-negative for negative offsets.

use fenced::Instant;

use super::slew::{first_reaching, Slew};
use crate::time::SimTime;

/// Added to every local clock so that offsets down to minus ten days stay
/// representable as unsigned instants.
pub(crate) const EPOCH_NANOS: i128 = 10 * 24 * 3_600 * 1_000_000_000;
const BILLION: i128 = 1_000_000_000;

/// The largest clock offset magnitude accepted, in nanoseconds (one day).
pub const MAX_CLOCK_OFFSET_NANOS: i64 = 24 * 3_600 * 1_000_000_000;
/// The largest drift magnitude accepted (a clock 50% fast or slow).
pub const MAX_CLOCK_DRIFT: f64 = 0.5;

/// What a server host's clock reads at true time `t`: true time's
/// nanoseconds (no epoch: servers run no offset of their own), stepped by
/// `offset` once a `clock-jump` fault moved it.
#[inline]
pub(crate) fn server_local(t: SimTime, offset: i64) -> Instant {
    if offset == 0 {
        return Instant::from_nanos(t.as_nanos());
    }
    let local = i128::from(t.as_nanos()) + i128::from(offset);
    Instant::from_nanos(u64::try_from(local.max(0)).unwrap_or(u64::MAX))
}

/// The earliest true time, not before `not_before`, at which a server's
/// clock (stepped by `offset`) reads `local`: the inverse of
/// [`server_local`].
#[inline]
pub(crate) fn server_true_time(local: Instant, offset: i64, not_before: SimTime) -> SimTime {
    let t = i128::from(local.as_nanos()) - i128::from(offset);
    let t = SimTime::from_nanos(u64::try_from(t.max(0)).unwrap_or(u64::MAX));
    if offset == 0 {
        t
    } else {
        t.max(not_before)
    }
}

/// The offset a server's clock record ([`Lives`](super::Lives)) holds while
/// the server's clock slews: readings through [`server_local_or`] and
/// [`server_true_time_or`] then go to the caller's slewing path (which reads
/// the clock itself, and so is right even for a clock stepped to exactly
/// this offset). Tested only off the fast path (offset 0).
pub(crate) const SLEWED_SERVER_OFFSET: i64 = i64::MIN;

/// [`server_local`], or `slewed()` for [`SLEWED_SERVER_OFFSET`].
#[inline]
pub(crate) fn server_local_or(
    t: SimTime,
    offset: i64,
    slewed: impl FnOnce() -> Instant,
) -> Instant {
    if offset == 0 {
        return Instant::from_nanos(t.as_nanos());
    }
    if offset == SLEWED_SERVER_OFFSET {
        return slewed();
    }
    server_local(t, offset)
}

/// [`server_true_time`], or `slewed()` for [`SLEWED_SERVER_OFFSET`].
#[inline]
pub(crate) fn server_true_time_or(
    local: Instant,
    offset: i64,
    not_before: SimTime,
    slewed: impl FnOnce() -> SimTime,
) -> SimTime {
    if offset == 0 {
        // `server_true_time` of an unstepped clock.
        return SimTime::from_nanos(local.as_nanos());
    }
    if offset == SLEWED_SERVER_OFFSET {
        return slewed();
    }
    server_true_time(local, offset, not_before)
}

/// The drift of [`HostClock::SLEWED`], which no clock has: a validated
/// drift is at most half a billion parts per billion.
const SLEWED_DRIFT_PPB: i64 = i64::MIN;

/// Which of its two clocks a host times its decisions by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// Never stepped: a `clock-jump` leaves the host's timing alone.
    Monotonic,
    /// Stepped by every `clock-jump` of the host.
    Wall,
}

/// One host's clock: the reading of the kind it times by (see
/// [`for_reading`](Self::for_reading)), or the pair before a kind is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostClock {
    offset_nanos: i64,
    drift_ppb: i64,
    /// The sum of the `clock-jump` steps: the wall clock's, not the
    /// monotonic clock's.
    stepped_nanos: i64,
}

impl HostClock {
    /// A clock that reads true time (plus the epoch).
    #[cfg(test)]
    pub(crate) const TRUE: HostClock = HostClock {
        offset_nanos: 0,
        drift_ppb: 0,
        stepped_nanos: 0,
    };

    /// What a node's clock record ([`Lives`](super::Lives)) holds while its
    /// clocks slew: its real clock and slew are in a side table, out of the
    /// clock every event copies. A drift no clock has keeps it off the
    /// steady fast path; [`local_or`](Self::local_or) and
    /// [`true_time_at_or`](Self::true_time_at_or) test for it there and
    /// hand over to the caller's slewing path. Never read otherwise.
    pub(crate) const SLEWED: HostClock = HostClock {
        offset_nanos: 0,
        drift_ppb: SLEWED_DRIFT_PPB,
        stepped_nanos: 0,
    };

    /// Whether this is [`SLEWED`](Self::SLEWED) (or one of its readings,
    /// [`for_reading`](Self::for_reading)).
    #[inline(always)]
    pub(crate) fn is_slewed(self) -> bool {
        self.drift_ppb == SLEWED_DRIFT_PPB
    }

    /// `drift` is a fraction (0.01 = 1% fast); the caller has validated both
    /// against [`MAX_CLOCK_OFFSET_NANOS`] and [`MAX_CLOCK_DRIFT`].
    pub(crate) fn new(offset_nanos: i64, drift: f64) -> HostClock {
        debug_assert!(offset_nanos.abs() <= 2 * MAX_CLOCK_OFFSET_NANOS);
        debug_assert!(drift.abs() <= MAX_CLOCK_DRIFT);
        HostClock {
            offset_nanos,
            drift_ppb: (drift * 1e9).round() as i64,
            stepped_nanos: 0,
        }
    }

    /// Both clocks slew by `by` nanoseconds over `over` of true time from
    /// `now` (see [`super::slew`]); the slew is kept in `current`, outside
    /// the clock (the engine's side table, so that the clock every event
    /// copies stays small). One still in progress stops where it stands:
    /// its progress is folded into the offset.
    pub(crate) fn slew(&mut self, current: &mut Option<Slew>, now: SimTime, by: i64, over: u64) {
        super::slew::begin(&mut self.offset_nanos, current, now, by, over);
    }

    /// This clock (one from [`for_reading`](Self::for_reading)) moved by
    /// `slew`: what a slewing host reads. The slow path: a host without a
    /// slew reads the clock itself.
    #[inline]
    pub(crate) fn slewing(self, slew: Slew) -> SlewingClock {
        SlewingClock { clock: self, slew }
    }

    /// The wall clock stepped by `by` nanoseconds (a `clock-jump` fault),
    /// the wall's total offset kept within twice the validated limit. The
    /// monotonic clock does not move.
    pub(crate) fn jump(&mut self, by: i64) {
        let limit = 2 * MAX_CLOCK_OFFSET_NANOS;
        let wall = self
            .offset_nanos
            .saturating_add(self.stepped_nanos)
            .saturating_add(by)
            .clamp(-limit, limit);
        self.stepped_nanos = wall - self.offset_nanos;
    }

    /// The clock of `kind`, as a clock with no steps of its own: what a host
    /// that times by `kind` reads ([`local`](Self::local)) and arms timers
    /// on ([`true_time_at`](Self::true_time_at)).
    #[inline]
    pub(crate) fn for_reading(self, kind: ClockKind) -> HostClock {
        match kind {
            ClockKind::Monotonic => HostClock {
                stepped_nanos: 0,
                ..self
            },
            ClockKind::Wall => HostClock {
                offset_nanos: self.offset_nanos + self.stepped_nanos,
                stepped_nanos: 0,
                ..self
            },
        }
    }

    /// The host's reading at true time `t` (of a clock from
    /// [`for_reading`](Self::for_reading): steps are not counted here). The
    /// engine reads through [`local_or`](Self::local_or), which also tells
    /// the stand-in [`SLEWED`](Self::SLEWED) apart.
    #[cfg(test)]
    pub(crate) fn local(self, t: SimTime) -> Instant {
        debug_assert_eq!(self.stepped_nanos, 0, "read through for_reading");
        self.local_nanos(t.as_nanos())
    }

    /// [`local`](Self::local), or `slewed()` for [`SLEWED`](Self::SLEWED):
    /// the test lies off the steady fast path.
    #[inline]
    pub(crate) fn local_or(self, t: SimTime, slewed: impl FnOnce() -> Instant) -> Instant {
        debug_assert_eq!(self.stepped_nanos, 0, "read through for_reading");
        let t = t.as_nanos();
        if let Some(base) = self.steady_base() {
            return Instant::from_nanos(t.saturating_add(base));
        }
        if self.is_slewed() {
            return slewed();
        }
        self.unsteady_local_nanos(t)
    }

    #[inline]
    fn local_nanos(self, t: u64) -> Instant {
        if let Some(base) = self.steady_base() {
            // The common case: `t + base`, which is never negative.
            return Instant::from_nanos(t.saturating_add(base));
        }
        self.unsteady_local_nanos(t)
    }

    /// [`local_nanos`](Self::local_nanos) off the steady fast path.
    #[inline]
    fn unsteady_local_nanos(self, t: u64) -> Instant {
        if self.drift_ppb == 0 {
            // Without 128-bit division.
            let local = i128::from(t) + i128::from(self.offset_nanos) + EPOCH_NANOS;
            return Instant::from_nanos(u64::try_from(local.max(0)).unwrap_or(u64::MAX));
        }
        self.drifting_local_nanos(t)
    }

    /// For a clock without drift whose offset does not reach below the
    /// epoch (every validated offset: the epoch is ten days, offsets at
    /// most two), `offset + EPOCH`: the clock reads `t + base`, saturating.
    /// The 64-bit fast path of [`local_nanos`](Self::local_nanos) and
    /// [`true_nanos_at`](Self::true_nanos_at).
    #[inline(always)]
    fn steady_base(self) -> Option<u64> {
        const EPOCH: i64 = EPOCH_NANOS as i64;
        if self.drift_ppb != 0 {
            return None;
        }
        match self.offset_nanos.checked_add(EPOCH) {
            Some(base) if base >= 0 => Some(base as u64),
            _ => None,
        }
    }

    /// [`local_nanos`](Self::local_nanos) of a drifting clock. Out of line:
    /// inlined, its (speculatable) 128-bit division was hoisted by the
    /// optimiser above the drift test into every caller's hot path.
    #[inline(never)]
    fn drifting_local_nanos(self, t: u64) -> Instant {
        let local = i128::from(t)
            + drift_part(t, self.drift_ppb)
            + i128::from(self.offset_nanos)
            + EPOCH_NANOS;
        Instant::from_nanos(u64::try_from(local.max(0)).unwrap_or(u64::MAX))
    }

    /// The earliest true time at which the host's clock reads at least
    /// `local`, and never earlier than `not_before`. The engine asks
    /// through [`true_time_at_or`](Self::true_time_at_or).
    #[cfg(test)]
    pub(crate) fn true_time_at(self, local: Instant, not_before: SimTime) -> SimTime {
        SimTime::from_nanos(self.true_nanos_at(local, not_before.as_nanos()))
    }

    /// [`true_time_at`](Self::true_time_at), or `slewed()` for
    /// [`SLEWED`](Self::SLEWED): the test lies off the steady fast path.
    #[inline]
    pub(crate) fn true_time_at_or(
        self,
        local: Instant,
        not_before: SimTime,
        slewed: impl FnOnce() -> SimTime,
    ) -> SimTime {
        let not_before = not_before.as_nanos();
        if let Some(base) = self.steady_base() {
            return SimTime::from_nanos(steady_true_nanos_at(base, local, not_before));
        }
        if self.is_slewed() {
            return slewed();
        }
        SimTime::from_nanos(self.moving_true_nanos_at(local, not_before))
    }

    #[cfg(test)]
    fn true_nanos_at(self, local: Instant, not_before: u64) -> u64 {
        if let Some(base) = self.steady_base() {
            return steady_true_nanos_at(base, local, not_before);
        }
        self.moving_true_nanos_at(local, not_before)
    }

    /// [`true_nanos_at`](Self::true_nanos_at) of any clock: the general
    /// case, out of line.
    #[inline(never)]
    fn moving_true_nanos_at(self, local: Instant, not_before: u64) -> u64 {
        if self.local_nanos(not_before) >= local {
            return not_before;
        }
        let target = i128::from(local.as_nanos()) - i128::from(self.offset_nanos) - EPOCH_NANOS;
        if self.drift_ppb == 0 {
            return u64::try_from(target.max(i128::from(not_before))).unwrap_or(u64::MAX);
        }
        let rate = BILLION + i128::from(self.drift_ppb);
        // ceil(target * 1e9 / rate), then correct for the rounding of `local`.
        let mut t = ceil_scaled(target, rate);
        t = t.max(i128::from(not_before));
        let mut t = u64::try_from(t).unwrap_or(u64::MAX);
        let mut raised = false;
        while t < u64::MAX && self.local_nanos(t) < local {
            t += 1;
            raised = true;
        }
        // Once raised, the clock read less than `local` at `t - 1`: only an
        // estimate that was not raised can be too late.
        while !raised && t > not_before && self.local_nanos(t - 1) >= local {
            t -= 1;
        }
        t
    }
}

/// [`HostClock::true_nanos_at`] of a clock that reads `t + base`: if it
/// reads less than `local` at `not_before` (so `local > not_before + base ≥
/// base`, without saturation), it first reads `local` at `local - base`,
/// which lies after `not_before`.
#[inline(always)]
fn steady_true_nanos_at(base: u64, local: Instant, not_before: u64) -> u64 {
    let local = local.as_nanos();
    if not_before.saturating_add(base) >= local {
        not_before
    } else {
        local - base
    }
}

/// A host's reading clock (from [`HostClock::for_reading`]) and the slew
/// in progress on it, or made: the clock without the slew, plus the slew's
/// progress. Built only for a host with a slew, out of the hot path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlewingClock {
    clock: HostClock,
    slew: Slew,
}

impl SlewingClock {
    /// The host's reading at true time `t`.
    #[inline(never)]
    pub(crate) fn local(self, t: SimTime) -> Instant {
        debug_assert_eq!(self.clock.stepped_nanos, 0, "read through for_reading");
        self.local_nanos(t.as_nanos())
    }

    fn local_nanos(self, t: u64) -> Instant {
        let unslewed = self.clock.local_nanos(t).as_nanos();
        let local = i128::from(unslewed) + i128::from(self.slew.progress(t));
        Instant::from_nanos(u64::try_from(local.max(0)).unwrap_or(u64::MAX))
    }

    /// The earliest true time at which the host's clock reads at least
    /// `local`, and never earlier than `not_before`: a search (no closed
    /// form: the slew's progress truncates).
    #[inline(never)]
    pub(crate) fn true_time_at(self, local: Instant, not_before: SimTime) -> SimTime {
        let read = |t: u64| self.local_nanos(t).as_nanos();
        SimTime::from_nanos(first_reaching(
            read,
            local.as_nanos(),
            not_before.as_nanos(),
        ))
    }
}

/// `t × drift_ppb / 1e9`, truncated toward zero: exactly the 128-bit
/// quotient, computed as `(t / 1e9) × drift + (t % 1e9) × drift / 1e9` in
/// 64 bits (no 128-bit division on the hot path) when that cannot overflow.
#[inline]
fn drift_part(t: u64, drift_ppb: i64) -> i128 {
    const B: u64 = BILLION as u64;
    let (whole, rest) = ((t / B) as i64, (t % B) as i64);
    // |rest × drift| < 1e9 × |drift|: fits for any validated drift (≤ 0.5e9).
    match (whole.checked_mul(drift_ppb), rest.checked_mul(drift_ppb)) {
        (Some(whole), Some(rest)) => i128::from(whole) + i128::from(rest / BILLION as i64),
        _ => i128::from(t) * i128::from(drift_ppb) / BILLION,
    }
}

/// `ceil(target × 1e9 / rate)` (`div_euclid`, as the 128-bit expression
/// `(target × 1e9 + rate − 1).div_euclid(rate)` computes it): for a
/// non-negative `target` and a positive 64-bit `rate`, as
/// `(target / rate) × 1e9 + ceil((target % rate) × 1e9 / rate)` in 64 bits
/// when that cannot overflow; otherwise in 128 bits.
#[inline]
fn ceil_scaled(target: i128, rate: i128) -> i128 {
    if let (Ok(target), Ok(rate)) = (i64::try_from(target), i64::try_from(rate)) {
        if target >= 0 && rate > 0 && rate <= BILLION as i64 * 2 {
            let (q, r) = (target / rate, target % rate);
            // r < rate ≤ 2e9, so r × 1e9 + rate − 1 < 2.1e18 fits.
            let tail = (r * BILLION as i64 + rate - 1) / rate;
            if let Some(head) = q.checked_mul(BILLION as i64) {
                return i128::from(head) + i128::from(tail);
            }
        }
    }
    (target * BILLION + rate - 1).div_euclid(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_clock_is_the_epoch_plus_true_time() {
        let c = HostClock::TRUE;
        let t = 5_000_000_000;
        assert_eq!(
            c.local_nanos(t).as_nanos() as i128,
            EPOCH_NANOS + 5_000_000_000
        );
        assert_eq!(c.true_nanos_at(c.local_nanos(t), 0), t);
    }

    #[test]
    fn drifting_clock_round_trips_to_the_earliest_true_instant() {
        for (offset, drift) in [(0, 0.01), (-3_000_000_000, -0.2), (7, 0.333_333), (1, -0.5)] {
            let c = HostClock::new(offset, drift);
            for t in [0u64, 1, 999, 1_234_567_891, 3_600_000_000_000] {
                let local = c.local_nanos(t);
                let back = c.true_nanos_at(local, 0);
                assert!(c.local_nanos(back) >= local);
                assert!(
                    back == 0 || c.local_nanos(back - 1) < local,
                    "{offset} {drift} {t}"
                );
                assert!(back <= t);
            }
        }
    }

    #[test]
    fn the_typed_api_agrees_with_nanoseconds() {
        let c = HostClock::new(-2_000, 0.25);
        let t = SimTime::from_nanos(8_000_000_000);
        assert_eq!(c.local(t), c.local_nanos(t.as_nanos()));
        let back = c.true_time_at(c.local(t), SimTime::ZERO);
        assert_eq!(back.as_nanos(), c.true_nanos_at(c.local(t), 0));
        assert_eq!(c.true_time_at(c.local(t), SimTime::MAX), SimTime::MAX);
    }

    #[test]
    fn the_steady_fast_path_equals_the_general_one() {
        use crate::rng::{uniform_inclusive, SeedDeriver};
        let mut rng = SeedDeriver::new(11, "steady").rng();
        let limit = 2 * MAX_CLOCK_OFFSET_NANOS as u64;
        let edges = [0u64, 1, EPOCH_NANOS as u64, u64::MAX - 1, u64::MAX];
        for _ in 0..20_000 {
            let offset = uniform_inclusive(&mut rng, 0, 2 * limit) as i64 - limit as i64;
            let c = HostClock {
                offset_nanos: offset,
                drift_ppb: 0,
                stepped_nanos: 0,
            };
            let mut draw = || {
                if uniform_inclusive(&mut rng, 0, 3) == 0 {
                    edges[uniform_inclusive(&mut rng, 0, edges.len() as u64 - 1) as usize]
                } else {
                    let bits = uniform_inclusive(&mut rng, 1, 63);
                    uniform_inclusive(&mut rng, 0, 1 << bits)
                }
            };
            let (t, local) = (draw(), Instant::from_nanos(draw()));
            let wide = i128::from(t) + i128::from(offset) + EPOCH_NANOS;
            let wide = u64::try_from(wide.max(0)).unwrap_or(u64::MAX);
            assert_eq!(c.local_nanos(t).as_nanos(), wide, "{offset} {t}");
            assert_eq!(
                c.true_nanos_at(local, t),
                c.moving_true_nanos_at(local, t),
                "{offset} {t} {local}"
            );
        }
    }

    #[test]
    fn a_fast_clock_reaches_a_reading_sooner() {
        let fast = HostClock::new(0, 0.1);
        let target = HostClock::TRUE.local_nanos(11_000_000_000);
        assert_eq!(fast.true_nanos_at(target, 0), 10_000_000_000);
    }

    #[test]
    fn the_64_bit_paths_equal_the_128_bit_expressions() {
        use crate::rng::{uniform_inclusive, SeedDeriver};
        let mut rng = SeedDeriver::new(7, "clock").rng();
        let edges = [
            0u64,
            1,
            999_999_999,
            1_000_000_000,
            3_600_000_000_000,
            u64::MAX / 3,
            u64::MAX,
        ];
        let drifts = [
            0i64,
            1,
            -1,
            499_999_999,
            -500_000_000,
            500_000_000,
            12_345,
            -987_654,
        ];
        for _ in 0..20_000 {
            let t = if uniform_inclusive(&mut rng, 0, 3) == 0 {
                edges[uniform_inclusive(&mut rng, 0, edges.len() as u64 - 1) as usize]
            } else {
                let bits = uniform_inclusive(&mut rng, 1, 63);
                uniform_inclusive(&mut rng, 0, 1 << bits)
            };
            let d = if uniform_inclusive(&mut rng, 0, 1) == 0 {
                drifts[uniform_inclusive(&mut rng, 0, drifts.len() as u64 - 1) as usize]
            } else {
                uniform_inclusive(&mut rng, 0, 1_000_000_000) as i64 - 500_000_000
            };
            let wide = i128::from(t) * i128::from(d) / BILLION;
            assert_eq!(drift_part(t, d), wide, "{t} {d}");
            let target = i128::from(t) - EPOCH_NANOS;
            let rate = BILLION + i128::from(d);
            let wide = (target * BILLION + rate - 1).div_euclid(rate);
            assert_eq!(ceil_scaled(target, rate), wide, "{target} {rate}");
        }
    }

    /// A step moves the wall clock and never the monotonic one; drift and
    /// the offset move both, so the two agree until the first step.
    #[test]
    fn a_step_moves_the_wall_clock_only() {
        let t = SimTime::from_nanos(5_000_000_000);
        let mut c = HostClock::new(2_000_000_000, 0.01);
        let (wall, mono) = (ClockKind::Wall, ClockKind::Monotonic);
        assert_eq!(c.for_reading(wall).local(t), c.for_reading(mono).local(t));
        c.jump(-30_000_000_000);
        c.jump(7_000_000_000);
        let before = c.for_reading(mono).local(t);
        assert_eq!(
            before,
            HostClock::new(2_000_000_000, 0.01)
                .for_reading(mono)
                .local(t)
        );
        let stepped = c.for_reading(wall).local(t).as_nanos() as i128;
        assert_eq!(stepped - before.as_nanos() as i128, -23_000_000_000);
        // Timers armed on the monotonic clock fire when they would have.
        let deadline = before + std::time::Duration::from_secs(10);
        let unstepped = HostClock::new(2_000_000_000, 0.01).for_reading(mono);
        assert_eq!(
            c.for_reading(mono).true_time_at(deadline, t),
            unstepped.true_time_at(deadline, t)
        );
    }

    /// A slew moves both clocks, linearly, and a timer armed on a slewing
    /// clock fires when that clock reaches its deadline.
    #[test]
    fn a_slew_moves_both_clocks() {
        let (wall, mono) = (ClockKind::Wall, ClockKind::Monotonic);
        let s = |n: u64| SimTime::from_nanos(n * 1_000_000_000);
        let mut c = HostClock::new(1_000_000_000, 0.001);
        let plain = c;
        c.jump(5_000_000_000);
        let mut slew = None;
        c.slew(&mut slew, s(10), 2_000_000_000, 20_000_000_000);
        let slew = slew.expect("the slew is kept in the side slot");
        for kind in [wall, mono] {
            let slewed = c.for_reading(kind).slewing(slew);
            let unslewed = plain.for_reading(kind);
            let step = if kind == wall { 5_000_000_000 } else { 0 };
            let gap =
                |at| slewed.local(at).as_nanos() as i128 - unslewed.local(at).as_nanos() as i128;
            assert_eq!(gap(s(10)), step);
            assert_eq!(gap(s(20)), step + 1_000_000_000);
            assert_eq!(gap(s(30)), step + 2_000_000_000);
            assert_eq!(gap(s(99)), step + 2_000_000_000);
            for n in [3u64, 15, 29, 31, 60] {
                let local = slewed.local(s(n));
                let back = slewed.true_time_at(local, SimTime::ZERO);
                assert!(slewed.local(back) >= local);
                assert!(slewed.local(SimTime::from_nanos(back.as_nanos() - 1)) < local);
            }
        }
    }
    /// The engine's readings (`local_or`, `true_time_at_or`,
    /// `server_local_or`, `server_true_time_or`) are the plain ones for every
    /// clock but the stand-ins, which they hand over.
    #[test]
    fn readings_through_the_stand_in_test_are_the_plain_ones() {
        let slewed_local = || Instant::from_nanos(7);
        let slewed_true = || SimTime::from_nanos(7);
        let clocks = [
            HostClock::TRUE,
            HostClock::new(-3_000_000_000, 0.0),
            HostClock::new(2_000, 0.25),
            HostClock::new(1, -0.5),
        ];
        for c in clocks {
            assert!(!c.is_slewed());
            for n in [0u64, 1, 999_999_999, 3_600_000_000_000] {
                let t = SimTime::from_nanos(n);
                let local = c.local(t);
                assert_eq!(c.local_or(t, || unreachable!()), local);
                let back = c.true_time_at_or(local, SimTime::ZERO, || unreachable!());
                assert_eq!(back, c.true_time_at(local, SimTime::ZERO));
            }
        }
        for kind in [ClockKind::Wall, ClockKind::Monotonic] {
            let stand_in = HostClock::SLEWED.for_reading(kind);
            assert!(stand_in.is_slewed());
            let t = SimTime::from_nanos(5);
            assert_eq!(stand_in.local_or(t, slewed_local), slewed_local());
            let at = stand_in.true_time_at_or(Instant::from_nanos(9), t, slewed_true);
            assert_eq!(at, slewed_true());
        }
        for offset in [0i64, 1, -1, 5_000_000_000, -5_000_000_000, i64::MAX] {
            for n in [0u64, 1, 4_999_999_999, 5_000_000_000, u64::MAX] {
                let (t, local) = (SimTime::from_nanos(n), Instant::from_nanos(n));
                assert_eq!(
                    server_local_or(t, offset, || unreachable!()),
                    server_local(t, offset)
                );
                for not_before in [SimTime::ZERO, SimTime::from_nanos(3), t] {
                    assert_eq!(
                        server_true_time_or(local, offset, not_before, || unreachable!()),
                        server_true_time(local, offset, not_before)
                    );
                }
            }
        }
        let t = SimTime::from_nanos(5);
        let offset = SLEWED_SERVER_OFFSET;
        assert_eq!(server_local_or(t, offset, slewed_local), slewed_local());
        let at = server_true_time_or(Instant::from_nanos(9), offset, t, slewed_true);
        assert_eq!(at, slewed_true());
    }
}
