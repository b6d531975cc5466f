//! `local-deadline`'s renewal half, for the fenced elector
//! ([`CheckerSettings::renew_interval`](super::CheckerSettings::renew_interval)):
//! the first request after a grant or renewal (its anchor) goes out no
//! later than `renew_interval` after the anchor, on the holder's clock
//! (jitter only shortens it), unless it is exempt (see
//! [`Deadline::request_sent`](super::deadline::Deadline::request_sent)). A
//! renewal scheduled late leaves less of the lease to renew in — or none.
//! Nor does it go out earlier than `renew_interval × (1 − jitter)` (the
//! elector's timer fires when its clock reaches the instant, never before),
//! and a configured jitter must actually spread renewals
//! ([`CheckerSettings::jitter`](super::CheckerSettings::jitter)): a
//! thundering herd of renewals is what jitter is for.
//!
//! The rule is owned by the [deadline part](super::deadline), which keeps
//! the anchors; it holds only the settings and the counts of renewals on
//! schedule.

use std::time::Duration;

use fenced::Instant;

use super::findings::Findings;
use crate::observation::{ProcessRef, SimTime};
use crate::report::Invariant;
use crate::units::secs;

/// How a renewal's send time compared with its anchor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RenewalTiming {
    Late { anchor: Instant },
    Early { anchor: Instant },
    OnSchedule { shortened: bool },
}

/// Clock conversions round to the nanosecond: renewal times are judged
/// to within this.
const ROUNDING: Duration = Duration::from_micros(1);

/// A jitter that can shorten an interval by less than this is not judged
/// for spreading renewals: one that can shorten it by 1 ms leaves a renewal
/// within the 1 µs rounding with a chance of at most 10⁻³.
const SPREAD_MIN: Duration = Duration::from_millis(1);

/// Renewals on schedule after which a configured jitter must have
/// shortened one: (10⁻³)⁸ = 10⁻²⁴.
const UNSPREAD_LIMIT: u64 = 8;

/// The renewal-timing rule and what it counted.
#[derive(Clone, Copy, Debug)]
pub(super) struct RenewalRule {
    /// The renew interval; `None`: renewals are not judged (another
    /// protocol, a real run's history).
    renew_interval: Option<Duration>,
    /// The jitter fraction (0: none).
    jitter: f64,
    /// Renewals judged on schedule so far, and how many of them jitter
    /// shortened.
    on_schedule: u64,
    shortened: u64,
}

impl RenewalRule {
    /// The rule for `renew_interval` and `jitter`, nothing counted yet.
    pub(super) fn new(renew_interval: Option<Duration>, jitter: f64) -> Self {
        RenewalRule {
            renew_interval,
            jitter,
            on_schedule: 0,
            shortened: 0,
        }
    }

    /// Whether renewals are judged at all.
    #[inline]
    pub(super) fn judged(&self) -> bool {
        self.renew_interval.is_some()
    }

    /// How a renewal sent at `local` after its anchor compares (`None`: not
    /// judged — no renew interval, or late but `exempt`, which is neither
    /// judged nor counted).
    #[inline]
    pub(super) fn timing(
        &self,
        local: Instant,
        anchor: Instant,
        exempt: bool,
    ) -> Option<RenewalTiming> {
        let renew = self.renew_interval?;
        let elapsed = local.saturating_duration_since(anchor);
        if elapsed > renew + ROUNDING && !exempt {
            Some(RenewalTiming::Late { anchor })
        } else if elapsed + ROUNDING < renew.mul_f64(1.0 - self.jitter.clamp(0.0, 1.0)) {
            Some(RenewalTiming::Early { anchor })
        } else if !exempt {
            Some(RenewalTiming::OnSchedule {
                shortened: elapsed + ROUNDING < renew,
            })
        } else {
            None
        }
    }

    /// Judges `p`'s renewal sent at `local` with `timing`: a violation if
    /// late or early, and — counted on schedule — if the first
    /// [`UNSPREAD_LIMIT`] all came unshortened by a jitter that could
    /// shorten them.
    #[inline]
    pub(super) fn judge(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        local: Instant,
        timing: RenewalTiming,
        sink: &mut Findings,
    ) {
        match timing {
            RenewalTiming::OnSchedule { shortened } => {
                self.on_schedule += 1;
                self.shortened += u64::from(shortened);
                if self.on_schedule == UNSPREAD_LIMIT && self.shortened == 0 {
                    self.unspread(now, p, sink);
                }
            }
            RenewalTiming::Late { anchor } => self.mistimed(now, p, local, anchor, true, sink),
            RenewalTiming::Early { anchor } => self.mistimed(now, p, local, anchor, false, sink),
        }
    }

    /// The violation of a renewal sent late or early.
    #[cold]
    #[inline(never)]
    fn mistimed(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        local: Instant,
        anchor: Instant,
        late: bool,
        sink: &mut Findings,
    ) {
        let renew = self.renew_interval.unwrap_or_default();
        let bound = if late {
            format!("later than renew_interval {}", secs(renew))
        } else {
            format!(
                "earlier than renew_interval {} shortened by jitter {} allows",
                secs(renew),
                self.jitter
            )
        };
        let detail = format!(
            "{} renewed its lease {} after its anchor, {bound} (its last successful request was sent at {anchor} by its clock)",
            p.owner,
            secs(local.saturating_duration_since(anchor)),
        );
        sink.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }

    /// The violation of a configured jitter that left the first
    /// [`UNSPREAD_LIMIT`] renewals on schedule all unshortened — when it
    /// could shorten an interval by [`SPREAD_MIN`] or more.
    #[cold]
    #[inline(never)]
    fn unspread(&self, now: SimTime, p: ProcessRef<'_>, sink: &mut Findings) {
        let jitter = self.jitter.clamp(0.0, 1.0);
        let Some(renew) = self.renew_interval else {
            return;
        };
        if renew.mul_f64(jitter) < SPREAD_MIN {
            return;
        }
        let detail = format!(
            "the first {UNSPREAD_LIMIT} renewals on schedule all came exactly renew_interval {} after their anchors although jitter {jitter} is configured: the jitter is not applied (the eighth by {})",
            secs(renew),
            p.owner,
        );
        sink.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, Cast};

    const S: u64 = 1_000_000_000;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    /// The rule alone: renewals sent `gaps_ms` after their anchors (each
    /// anchored on the previous), none exempt.
    fn judge(rule: &mut RenewalRule, gaps_ms: &[u64], sink: &mut Findings) {
        let cast = Cast::new();
        let mut anchor = 10_000;
        for gap in gaps_ms {
            if let Some(timing) = rule.timing(ms(anchor + gap), ms(anchor), false) {
                rule.judge(at(1.0), cast.a(), ms(anchor + gap), timing, sink);
            }
            anchor += gap;
        }
    }

    /// Proves the rule alone bounds a renewal by the interval and by the
    /// jitter's shortest, to within the rounding, and exempts a late one
    /// (neither judged nor counted).
    #[test]
    fn late_and_early_renewals_break_it_the_bounds_themselves_do_not() {
        let rule = RenewalRule::new(Some(Duration::from_secs(10)), 0.2);
        let anchor = Instant::from_nanos(10 * S);
        let after = |d: Duration| anchor + d;
        let on_time = rule.timing(after(Duration::from_secs(10)), anchor, false);
        assert_eq!(
            on_time,
            Some(RenewalTiming::OnSchedule { shortened: false })
        );
        let shortest = rule.timing(after(Duration::from_secs(8)), anchor, false);
        assert_eq!(
            shortest,
            Some(RenewalTiming::OnSchedule { shortened: true })
        );
        let late = after(Duration::from_secs(10) + Duration::from_micros(2));
        assert_eq!(
            rule.timing(late, anchor, false),
            Some(RenewalTiming::Late { anchor })
        );
        assert_eq!(rule.timing(late, anchor, true), None);
        let early = after(Duration::from_millis(7_999));
        assert_eq!(
            rule.timing(early, anchor, false),
            Some(RenewalTiming::Early { anchor })
        );
        let unjudged = RenewalRule::new(None, 0.2);
        assert!(!unjudged.judged());
        assert_eq!(unjudged.timing(late, anchor, false), None);
    }

    /// Proves the rule alone flags eight unshortened renewals under a
    /// configured jitter, and not eight of which one is shortened.
    #[test]
    fn eight_unshortened_renewals_break_it_one_shortened_among_them_does_not() {
        let mut sink = Findings::default();
        let mut rule = RenewalRule::new(Some(Duration::from_secs(10)), 0.1);
        judge(&mut rule, &[10_000; 8], &mut sink);
        assert_eq!(invariants_of(&sink), ["local-deadline"]);
        assert!(sink.violations()[0].detail.contains("the eighth by a#1"));
        let mut sink = Findings::default();
        let mut rule = RenewalRule::new(Some(Duration::from_secs(10)), 0.1);
        let mut gaps = [10_000; 8];
        gaps[5] = 9_999;
        judge(&mut rule, &gaps, &mut sink);
        assert!(invariants_of(&sink).is_empty());
    }
}
