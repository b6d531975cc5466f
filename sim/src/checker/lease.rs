//! `token-monotonic` and `lease-exclusive`: the checker's own view of the
//! role's lease, from the store's answers.
//!
//! The store asserts monotonicity where it issues a token; this part
//! asserts it where the token is observed, so a planted bug in the store is
//! caught. Expiry instants are on the store's own clock (the model keeps its
//! steps), so a clock jump on the store moves them with it.

use fenced::{FencingToken, LeaseResult, OwnerId};

use super::findings::Findings;
use super::model::Model;
use crate::observation::{ProcessId, ProcessRef, SimTime};
use crate::report::Invariant;
use crate::units::secs;

/// The checker's picture of the role's lease.
#[derive(Clone, Debug)]
struct LeaseView {
    owner: OwnerId,
    pid: ProcessId,
    token: u64,
    /// On the store's own clock: a jump of that clock moves expiry with it.
    expires_at: fenced::Instant,
    granted_at: SimTime,
}

impl LeaseView {
    /// The lease as `who` holds it with `token` until `expires_at` (store
    /// clock), in a term granted at `granted_at` (a renewal keeps its term's).
    fn held_by(
        who: ProcessRef<'_>,
        token: u64,
        expires_at: fenced::Instant,
        granted_at: SimTime,
    ) -> Self {
        LeaseView {
            owner: who.owner.clone(),
            pid: who.id,
            token,
            expires_at,
            granted_at,
        }
    }
}

/// The lease part: the highest token granted and the lease as last granted
/// or renewed.
#[derive(Clone, Debug, Default)]
pub(super) struct LeaseCheck {
    highest_granted: u64,
    lease: Option<LeaseView>,
    /// The store's time as the store keeps it: the latest reading of its
    /// clock at a grant, renewal or release it handled (`LeaseStore` guards its
    /// clock with the same [`fenced::LatestNow`]).
    store_time: fenced::LatestNow,
}

impl LeaseCheck {
    /// The store's time when it answered at true time `now`, as the store
    /// reckons it: its clock's reading, or the latest reading it has seen if
    /// the clock stepped back since (`src/lease.rs`: "a `now` earlier than
    /// one already seen is treated as the latest seen, so a confused caller
    /// cannot resurrect an expired lease"). Judged on the raw reading, a
    /// lease that had expired before a backward step of the store's clock
    /// came back to life in the checker's view only, and the store's correct
    /// grant to another node after it was flagged `lease-exclusive` (explore
    /// seed 1 037 446: the store's clock stepped back 38.8 s after node-1's
    /// lease expired).
    fn store_now(&mut self, model: &Model, now: SimTime) -> fenced::Instant {
        self.store_time.observe(model.store_clock().local(now))
    }
}

/// When the store's clock reads `local`, in true time (for messages).
fn true_time(model: &Model, local: fenced::Instant) -> SimTime {
    model.store_clock().true_time_at(local, SimTime::ZERO)
}

impl LeaseCheck {
    /// The highest token the lease store granted so far (0: none).
    pub(super) fn highest_granted(&self) -> u64 {
        self.highest_granted
    }

    /// The evidence of the lease (its grant and expiry), for this and other
    /// invariants' reports.
    pub(super) fn evidence(&self, model: &Model) -> Vec<String> {
        self.lease
            .iter()
            .map(|l| {
                format!(
                    "{} lease-store granted token {} to {}, expiring {}",
                    secs(l.granted_at),
                    l.token,
                    l.owner,
                    secs(true_time(model, l.expires_at))
                )
            })
            .collect()
    }

    /// The lease store answered `who`'s request at store time `now`.
    pub(super) fn handled(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        result: &LeaseResult,
        model: &Model,
        sink: &mut Findings,
    ) {
        match result {
            LeaseResult::Granted { token, expires_at } => {
                self.granted(now, who, token.get(), *expires_at, model, sink)
            }
            LeaseResult::Renewed { token, expires_at } => {
                let token = token.get();
                let store_now = self.store_now(model, now);
                // The common case: the live holder renews its own term.
                if let Some(view) = self.lease.as_mut().filter(|v| {
                    v.owner == *who.owner && store_now < v.expires_at && v.token == token
                }) {
                    view.expires_at = *expires_at;
                    return;
                }
                self.renewed_otherwise(now, who, token, *expires_at, model, sink);
            }
            // Not read for the store's time: the store answers "held" only
            // below the live lease's expiry, which no later expiry is
            // below, so it never moves a verdict — and it is the commonest
            // answer of a large fleet, where a clock reading each is work
            // for nothing.
            LeaseResult::Held { .. } => sink.coverage.refused += 1,
        }
    }

    fn granted(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: u64,
        expires_at: fenced::Instant,
        model: &Model,
        sink: &mut Findings,
    ) {
        // Coverage: a new term while the previous holder is frozen.
        if let Some(prev) = self.lease.as_ref().map(|l| l.pid) {
            if prev != who.id && model.paused_alive(prev) {
                sink.coverage.takeover_during_pause += 1;
            }
        }
        if token <= self.highest_granted {
            let events = self.evidence(model);
            sink.violate(
                Invariant::TokenMonotonic,
                now,
                format!(
                    "lease-store granted token {token} to {}, but token {} was already granted",
                    who.owner, self.highest_granted
                ),
                events,
            );
        }
        let store_now = self.store_now(model, now);
        if let Some(prev) = self.lease.as_ref().filter(|l| store_now < l.expires_at) {
            if prev.owner != *who.owner {
                let events = self.evidence(model);
                let detail = format!(
                    "lease-store granted token {token} to {} while {} held token {} live until {}",
                    who.owner,
                    prev.owner,
                    prev.token,
                    secs(true_time(model, prev.expires_at))
                );
                sink.violate(Invariant::LeaseExclusive, now, detail, events);
            }
        }
        self.highest_granted = self.highest_granted.max(token);
        self.lease = Some(LeaseView::held_by(who, token, expires_at, now));
    }

    /// A renewal that is not the live holder renewing its own term: always
    /// a violation, of which invariant depends on the lease it met.
    fn renewed_otherwise(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: u64,
        expires_at: fenced::Instant,
        model: &Model,
        sink: &mut Findings,
    ) {
        let store_now = self.store_now(model, now);
        match self.lease.as_ref() {
            Some(view) if view.owner == *who.owner && store_now < view.expires_at => {
                let detail = format!(
                    "a renewal by {} changed token {} to {token}",
                    who.owner, view.token
                );
                let events = self.evidence(model);
                sink.violate(Invariant::TokenMonotonic, now, detail, events);
                self.highest_granted = self.highest_granted.max(token);
            }
            Some(view) if store_now < view.expires_at => {
                let detail = format!(
                    "lease-store renewed token {token} for {} while {} held token {} live until {}",
                    who.owner,
                    view.owner,
                    view.token,
                    secs(true_time(model, view.expires_at))
                );
                let events = self.evidence(model);
                sink.violate(Invariant::LeaseExclusive, now, detail, events);
            }
            _ => {
                let detail = format!(
                    "lease-store renewed token {token} for {}, whose lease was not live: a lapsed lease must be re-granted with a new token",
                    who.owner
                );
                let events = self.evidence(model);
                sink.violate(Invariant::TokenMonotonic, now, detail, events);
            }
        }
        let granted_at = self.lease.as_ref().map_or(now, |l| l.granted_at);
        self.lease = Some(LeaseView::held_by(who, token, expires_at, granted_at));
    }

    /// See [`Checker::renewed_unanswered`](super::Checker::renewed_unanswered).
    pub(super) fn renewed_unanswered(
        &mut self,
        now: SimTime,
        owner: &OwnerId,
        token: u64,
        sent: SimTime,
        ttl: std::time::Duration,
        model: &Model,
    ) -> bool {
        let store_now = self.store_now(model, now);
        let sent = model.store_clock().local(sent);
        let Some(view) = self.lease.as_mut().filter(|v| {
            v.owner == *owner
                && v.token == token
                && v.expires_at <= store_now
                && sent < v.expires_at
        }) else {
            return false;
        };
        let applied = view
            .expires_at
            .saturating_sub(std::time::Duration::from_nanos(1));
        view.expires_at = applied + ttl;
        true
    }

    /// The lease store handled a release at `now`; `released` if it freed
    /// the lease. The store's time reached `now` then, whatever it decided.
    pub(super) fn released(
        &mut self,
        now: SimTime,
        owner: &OwnerId,
        token: FencingToken,
        released: bool,
        model: &Model,
    ) {
        self.store_now(model, now);
        if released
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.owner == *owner && l.token == token.get())
        {
            self.lease = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, granted, invariants_of, renewed, token, Cast};
    use crate::observation::Observation;

    /// The lease part alone over a hand-written list: the model sees every
    /// observation first, the part the store's answers.
    fn judge(list: &[(f64, Observation<'_>)]) -> (LeaseCheck, Findings) {
        let (mut model, mut part, mut sink) =
            (Model::default(), LeaseCheck::default(), Findings::default());
        for (seconds, o) in list {
            model.observe(at(*seconds), o);
            match *o {
                Observation::LeaseHandled { from, result, .. } => {
                    part.handled(at(*seconds), from, result, &model, &mut sink)
                }
                Observation::ReleaseHandled {
                    from,
                    token,
                    released,
                } => part.released(at(*seconds), from.owner, token, released, &model),
                _ => {}
            }
        }
        (part, sink)
    }

    /// The store's answer `result` to `from` at `seconds`.
    fn lease<'a>(
        seconds: f64,
        from: ProcessRef<'a>,
        result: &'a LeaseResult,
    ) -> (f64, Observation<'a>) {
        let o = Observation::LeaseHandled {
            from,
            request: 1,
            result,
        };
        (seconds, o)
    }

    /// Proves the part alone flags a grant of a token already granted, and
    /// not a higher one to another owner after the lease lapsed or was
    /// released.
    #[test]
    fn a_repeated_token_breaks_token_monotonic_a_release_then_a_higher_one_does_not() {
        let cast = Cast::new();
        let (g1, g2, g2_again) = (granted(1, 31), granted(2, 70), granted(2, 110));
        let release = Observation::ReleaseHandled {
            from: cast.a(),
            token: token(1),
            released: true,
        };
        // Almost: a released, then b granted a higher token before a's expiry.
        let almost = [
            (0.0, Observation::ProcessStarted(cast.a())),
            lease(1.0, cast.a(), &g1),
            (2.0, release),
            lease(3.0, cast.b(), &g2),
        ];
        let (part, sink) = judge(&almost);
        assert!(invariants_of(&sink).is_empty());
        assert_eq!(part.highest_granted(), 2);
        // Broken: the same token granted again once b's lease lapsed.
        let mut broken = almost.to_vec();
        broken.push(lease(80.0, cast.a(), &g2_again));
        let (_, sink) = judge(&broken);
        assert_eq!(invariants_of(&sink), ["token-monotonic"]);
        assert!(sink.violations()[0].events[0].contains("granted token 2 to b#1"));
    }

    /// Proves the part alone flags a renewal for another owner over a live
    /// lease (`lease-exclusive`), and a renewal that changes the token
    /// (`token-monotonic`) — and not the holder renewing its own.
    #[test]
    fn a_renewal_for_another_owner_breaks_lease_exclusive_the_holders_own_does_not() {
        let cast = Cast::new();
        let (g1, r1, r2) = (granted(1, 31), renewed(1, 60), renewed(2, 60));
        let (_, sink) = judge(&[lease(1.0, cast.a(), &g1), lease(30.9, cast.a(), &r1)]);
        assert!(invariants_of(&sink).is_empty());
        let (_, sink) = judge(&[lease(1.0, cast.a(), &g1), lease(30.9, cast.b(), &r1)]);
        assert_eq!(invariants_of(&sink), ["lease-exclusive"]);
        let (part, sink) = judge(&[lease(1.0, cast.a(), &g1), lease(30.9, cast.a(), &r2)]);
        assert_eq!(invariants_of(&sink), ["token-monotonic"]);
        assert_eq!(part.highest_granted(), 2);
    }
}
