//! What a real history cannot show and the store must have done: a request
//! the client gave up on (a timeout, a lost connection) that the store
//! decided all the same. Judged where it is revealed, at the latest instant
//! it can have happened, with a warning.

use std::time::Duration;

use fenced::{FencingToken, Instant, LeaseResult};

use super::{Feed, Origin, MAX_OUTSTANDING};
use crate::observation::{HostRef, Observation, Observer, SimTime};

impl Feed<'_> {
    /// Process `pid` sent lease request `request` at `at`.
    pub(super) fn sent(&mut self, pid: usize, request: u64, at: SimTime) {
        let outstanding = &mut self.states[pid].outstanding;
        if outstanding.len() >= MAX_OUTSTANDING {
            outstanding.pop_first();
        }
        outstanding.insert(request, at);
    }

    /// A request of `pid` failed unanswered; it left at `sent`, if known.
    pub(super) fn unanswered(&mut self, pid: usize, sent: Option<SimTime>) {
        let state = &mut self.states[pid];
        state.unanswered = state.unanswered.saturating_add(1);
        if let Some(sent) = sent {
            let first = state.first_unanswered_sent.get_or_insert(sent);
            *first = (*first).min(sent);
        }
    }

    /// The checker learns the lease store's clock from an answer that
    /// carries it (its offset from the report's time, as a `ClockJumped` of
    /// the lease store), so leases are judged on the store's own clock.
    pub(super) fn learn_store_clock(&mut self, at: SimTime, store_now_ns: Option<u64>) {
        let Some(store_now) = store_now_ns else {
            return;
        };
        let offset = i128::from(store_now) - i128::from(at.as_nanos());
        let offset = i64::try_from(offset).unwrap_or(if offset < 0 { i64::MIN } else { i64::MAX });
        if offset != self.store_offset {
            // The PostgreSQL store expires leases by its server's
            // `clock_timestamp()`: a wall clock, whose step moves them.
            let jump = Observation::ClockJumped {
                host: HostRef::LeaseStore,
                by_nanos: offset.saturating_sub(self.store_offset),
                moved: true,
            };
            self.checker.observe(at, &jump);
            self.store_offset = offset;
        }
    }

    /// A renewal of `token` answered to process `pid`, which was never
    /// answered a grant of it: when one of its requests went unanswered
    /// since its last answer, the store granted `token` on that request and
    /// only the answer was lost (the statement ran; the client gave up
    /// waiting). A real history cannot show that grant, so it is judged
    /// here, just before the renewal that reveals it — the latest instant it
    /// can have happened, so that a grant the store was free to make is not
    /// taken for a violation (a grant while another lease was still live,
    /// or of a token not above every earlier one, still is). Noted as a
    /// warning. Without an unanswered request there is nothing to infer:
    /// the renewal is judged as it is (a lapsed lease renewed).
    pub(super) fn infer_unanswered_grant(
        &mut self,
        at: SimTime,
        pid: usize,
        token: FencingToken,
        expires_at_ns: u64,
        origin: &Origin<'_>,
    ) {
        let state = &self.states[pid];
        if state.unanswered == 0 || state.known_token == Some(token) {
            return;
        }
        let unanswered = state.unanswered;
        let p = self.process(pid);
        let granted = LeaseResult::Granted {
            token,
            expires_at: Instant::from_nanos(expires_at_ns),
        };
        // Request 0: no request of the process is answered by it.
        let o = Observation::LeaseHandled {
            from: p,
            request: 0,
            result: &granted,
        };
        self.checker.observe(at, &o);
        let detail = format!(
            "{} was answered a renewal of token {token} it was never answered the grant of; \
             {unanswered} of its requests went unanswered before it, so the store granted the \
             token on one of them: judged as granted just before this renewal",
            p.owner
        );
        self.problem(origin, false, detail);
    }

    /// A renewal of `token` answered to process `pid` (`answer`: its new
    /// expiry and the store's time, store clock) after the process's lease
    /// of it lapsed in the checker's view: when one of the process's
    /// requests went unanswered since its last answer, and the earliest of
    /// them left before the lapse on the store's clock, the store may have
    /// renewed on it and only the answer was lost — so the lease is taken as
    /// renewed just before the lapse (the latest instant it can have been),
    /// for the TTL the store grants, and this renewal is judged against
    /// that (one past even that extension is still a lapsed lease renewed).
    /// Found for real: two cuts from the lease store to node-a, whose
    /// renewals PostgreSQL applied while their answers were lost. Noted as
    /// a warning. A grant to another node after the lapse has replaced the
    /// lease in the checker's view, and the renewal meets it as before.
    pub(super) fn infer_unanswered_renewal(
        &mut self,
        at: SimTime,
        pid: usize,
        token: FencingToken,
        (expires_at_ns, store_now_ns): (u64, Option<u64>),
        origin: &Origin<'_>,
    ) {
        let state = &self.states[pid];
        // Set only with `unanswered` above zero.
        let Some(sent) = state.first_unanswered_sent else {
            return;
        };
        if state.known_token != Some(token) {
            return;
        }
        let unanswered = state.unanswered;
        let ttl = match store_now_ns {
            Some(now) => expires_at_ns.saturating_sub(now),
            None => self.lease_ttl_ns,
        };
        let p = self.process(pid);
        let ttl = Duration::from_nanos(ttl);
        if !self
            .checker
            .renewed_unanswered(at, p.owner, token.get(), sent, ttl)
        {
            return;
        }
        let detail = format!(
            "{} was answered a renewal of token {token} after its lease had lapsed on the \
             store's clock; {unanswered} of its requests went unanswered before it, the first \
             sent before the lapse, so the store renewed on one of them: judged as renewed just \
             before the lapse",
            p.owner
        );
        self.problem(origin, false, detail);
    }
}
