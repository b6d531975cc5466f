//! `token-monotonic` and `lease-exclusive`: the checker's own view of the
//! role's lease, from the store's answers.

use fenced::{FencingToken, LeaseResult, OwnerId};

use super::Checker;
use crate::engine::clock::{server_local, server_true_time};
use crate::observation::{ProcessId, ProcessRef, SimTime};
use crate::report::Invariant;
use crate::units::secs;

/// The checker's picture of the role's lease.
#[derive(Clone, Debug)]
pub(super) struct LeaseView {
    owner: OwnerId,
    pid: ProcessId,
    token: u64,
    /// On the store's own clock: a jump of that clock moves expiry with it.
    expires_at: fenced::Instant,
    granted_at: SimTime,
}

impl Checker {
    /// What the lease store's clock reads at true time `now`.
    fn store_now(&self, now: SimTime) -> fenced::Instant {
        server_local(now, self.store_offset)
    }

    /// When the store's clock reads `local`, in true time (for messages).
    fn true_time(&self, local: fenced::Instant) -> SimTime {
        server_true_time(local, self.store_offset, SimTime::ZERO)
    }

    fn lease_evidence(&self) -> Vec<String> {
        self.lease
            .iter()
            .map(|l| {
                format!(
                    "{} lease-store granted token {} to {}, expiring {}",
                    secs(l.granted_at),
                    l.token,
                    l.owner,
                    secs(self.true_time(l.expires_at))
                )
            })
            .collect()
    }

    /// The lease store answered `who`'s request at store time `now`.
    pub(super) fn on_lease_result(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        result: &LeaseResult,
    ) {
        match result {
            LeaseResult::Granted { token, expires_at } => {
                // Coverage: a new term while the previous holder is frozen.
                if let Some(prev) = self.lease.as_ref().map(|l| l.pid) {
                    if prev != who.id && self.lives.paused_alive(prev) {
                        self.coverage.takeover_during_pause += 1;
                    }
                }
                let token = token.get();
                if token <= self.highest_granted {
                    let events = self.lease_evidence();
                    self.violate(
                        Invariant::TokenMonotonic,
                        now,
                        format!(
                            "lease-store granted token {token} to {}, but token {} was already granted",
                            who.owner, self.highest_granted
                        ),
                        events,
                    );
                }
                let store_now = self.store_now(now);
                if let Some(prev) = self.lease.as_ref().filter(|l| store_now < l.expires_at) {
                    if prev.owner != *who.owner {
                        let events = self.lease_evidence();
                        let detail = format!(
                            "lease-store granted token {token} to {} while {} held token {} live until {}",
                            who.owner,
                            prev.owner,
                            prev.token,
                            secs(self.true_time(prev.expires_at))
                        );
                        self.violate(Invariant::LeaseExclusive, now, detail, events);
                    }
                }
                self.highest_granted = self.highest_granted.max(token);
                self.lease = Some(LeaseView {
                    owner: who.owner.clone(),
                    pid: who.id,
                    token,
                    expires_at: *expires_at,
                    granted_at: now,
                });
            }
            LeaseResult::Renewed { token, expires_at } => {
                let token = token.get();
                let store_now = self.store_now(now);
                // The common case: the live holder renews its own term.
                if let Some(view) = self.lease.as_mut().filter(|v| {
                    v.owner == *who.owner && store_now < v.expires_at && v.token == token
                }) {
                    view.expires_at = *expires_at;
                    return;
                }
                match self.lease.as_ref() {
                    Some(view) if view.owner == *who.owner && store_now < view.expires_at => {
                        let detail = format!(
                            "a renewal by {} changed token {} to {token}",
                            who.owner, view.token
                        );
                        let events = self.lease_evidence();
                        self.violate(Invariant::TokenMonotonic, now, detail, events);
                        self.highest_granted = self.highest_granted.max(token);
                    }
                    Some(view) if store_now < view.expires_at => {
                        let detail = format!(
                            "lease-store renewed token {token} for {} while {} held token {} live until {}",
                            who.owner,
                            view.owner,
                            view.token,
                            secs(self.true_time(view.expires_at))
                        );
                        let events = self.lease_evidence();
                        self.violate(Invariant::LeaseExclusive, now, detail, events);
                    }
                    _ => {
                        let detail = format!(
                            "lease-store renewed token {token} for {}, whose lease was not live: a lapsed lease must be re-granted with a new token",
                            who.owner
                        );
                        let events = self.lease_evidence();
                        self.violate(Invariant::TokenMonotonic, now, detail, events);
                    }
                }
                let granted_at = self.lease.as_ref().map_or(now, |l| l.granted_at);
                self.lease = Some(LeaseView {
                    owner: who.owner.clone(),
                    pid: who.id,
                    token,
                    expires_at: *expires_at,
                    granted_at,
                });
            }
            LeaseResult::Held { .. } => self.coverage.refused += 1,
        }
    }

    /// The lease store handled a release; `released` if it freed the lease.
    pub(super) fn on_release(&mut self, owner: &OwnerId, token: FencingToken, released: bool) {
        if released
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.owner == *owner && l.token == token.get())
        {
            self.lease = None;
        }
    }

    /// The evidence of the lease, for other invariants' reports.
    pub(super) fn lease_events(&self) -> Vec<String> {
        self.lease_evidence()
    }
}
