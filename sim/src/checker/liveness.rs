//! `liveness` (with [`CheckerSettings::heal_at`](super::CheckerSettings::heal_at)):
//! after every fault is healed, one leader holds and its writes are
//! accepted by the end.
//!
//! The part has no state of its own: it is asked, at an instant, about the
//! model's believers and the fence's last accepted write. The same question
//! ([`Liveness::leader_at`]) gives the verdict's `leader_at_end` and lets
//! the engine decide quiescence.

use std::time::Duration;

use fenced::OwnerId;

use super::CheckerSettings;
use crate::observation::SimTime;
use crate::report::{Invariant, Violation};
use crate::units::{ms, secs};

/// The liveness part: its settings.
#[derive(Clone, Copy, Debug)]
pub(super) struct Liveness {
    /// How long after a write the downstream's acceptance still counts as
    /// recent: two write intervals, one unit and two latencies.
    recent: Duration,
    /// When the liveness phase began, if the run has one.
    heal_at: Option<SimTime>,
    /// When the run ends: `liveness` is judged only then.
    end: SimTime,
}

impl Liveness {
    /// The part for a run with `settings`.
    pub(super) fn new(settings: &CheckerSettings) -> Self {
        let s = settings;
        Liveness {
            recent: s.write_interval.saturating_mul(2)
                + s.latency_max.saturating_mul(2)
                + s.work_duration,
            heal_at: s.heal_at.map(SimTime::from_duration),
            end: SimTime::from_duration(s.end),
        }
    }

    /// Whether exactly one token is believed among `believers` (the live
    /// processes' tokens) and the downstream accepted it recently at `now`
    /// (`last_accepted`: the highest accepted token and when).
    pub(super) fn leader_at(
        &self,
        now: SimTime,
        mut believers: impl Iterator<Item = fenced::FencingToken>,
        last_accepted: Option<(u64, SimTime)>,
    ) -> bool {
        let (Some(leader), None) = (believers.next(), believers.next()) else {
            return false;
        };
        last_accepted.is_some_and(|(token, at)| {
            token == leader.get() && now.saturating_since(at) <= self.recent
        })
    }

    /// The `liveness` violation at `now` of a finished run with a liveness
    /// phase that did not converge (`leader_at_end` false): names the live
    /// believers (`(owner, token)`, in slot order) and the last accepted
    /// write.
    pub(super) fn violation<'a>(
        &self,
        now: SimTime,
        leader_at_end: bool,
        believers: impl Iterator<Item = (&'a OwnerId, fenced::FencingToken)>,
        last_accepted: Option<(u64, SimTime)>,
    ) -> Option<Violation> {
        let heal_at = self.heal_at?;
        if leader_at_end || now < self.end || now <= heal_at {
            return None;
        }
        let mut events: Vec<String> = believers
            .map(|(owner, t)| format!("{owner} believes it leads with token {t}"))
            .collect();
        if let Some((token, at)) = last_accepted {
            events.push(format!(
                "the downstream last accepted token {token} at {}",
                secs(at)
            ));
        }
        Some(Violation {
            invariant: Invariant::Liveness.name().to_string(),
            at_ms: ms(now),
            detail: format!(
                "{} after every fault was healed at {}, there was no single leader whose writes the downstream accepted",
                secs(now.saturating_since(heal_at)),
                secs(heal_at)
            ),
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, settings, token, Cast};

    /// Proves the part alone: one believer whose token was accepted within
    /// the recent window leads; past the window, or with two believers, no
    /// one does — and only then, at the run's end after the heal, is it a
    /// violation naming the believers.
    #[test]
    fn no_leader_with_recent_writes_at_the_end_breaks_it_one_does_not() {
        let cast = Cast::new();
        let mut s = settings();
        s.heal_at = Some(Duration::from_secs(10));
        s.end = Duration::from_secs(60);
        let part = Liveness::new(&s);
        // Two write intervals, two latencies and a unit: 2.06 s.
        let accepted = Some((2, at(57.94)));
        let one = || [token(2)].into_iter();
        assert!(part.leader_at(at(60.0), one(), accepted));
        assert!(!part.leader_at(at(60.001), one(), accepted));
        assert!(!part.leader_at(at(60.0), [token(2), token(3)].into_iter(), accepted));
        assert!(!part.leader_at(at(60.0), one(), Some((1, at(59.0)))));
        let believers = || [(cast.a().owner, token(2))].into_iter();
        assert!(part
            .violation(at(60.0), true, believers(), accepted)
            .is_none());
        // Before the run's end nothing is judged yet.
        assert!(part
            .violation(at(59.0), false, believers(), accepted)
            .is_none());
        let violation = part.violation(at(60.0), false, believers(), accepted);
        let violation = violation.expect("no leader at the end");
        assert_eq!(violation.invariant, "liveness");
        assert_eq!(
            violation.events,
            [
                "a#1 believes it leads with token 2",
                "the downstream last accepted token 2 at 57.940s"
            ]
        );
        // Without a liveness phase, never.
        let part = Liveness::new(&settings());
        assert!(part.violation(at(1e6), false, believers(), None).is_none());
    }
}
