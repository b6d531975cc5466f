//! `local-deadline`: a holder acts only before its own deadline — the local
//! send time of its last successful request (its *anchor*, from
//! [`Observation::RequestSent`](crate::observation::Observation::RequestSent))
//! plus `lease_ttl - safety_margin`, on its own clock.
//!
//! This is the elector's half of the protocol; fencing is the downstream's.
//! The part keeps, per process, the requests sent and not yet answered and
//! the anchor, and judges from that record — never from the elector's
//! state — four things: units of work start before the deadline
//! ([`Deadline::unit_started`]), `token_at` answers no token at or past it
//! ([`Deadline::token_answered`]), a step-down on the deadline comes at it
//! ([`Deadline::stepped_down`]), and renewals keep time
//! ([`renewal`](super::renewal), with the renew interval set). It also
//! counts renewals lost on the way, for coverage.

use std::collections::VecDeque;
use std::time::Duration;

use fenced::{FencingToken, Instant, ResponseDisposition};

use super::findings::Findings;
use super::model::Model;
use super::renewal::RenewalRule;
use crate::observation::{DropReason, MessageKind, ProcessId, ProcessRef, SimTime};
use crate::report::Invariant;
use crate::units::secs;

/// What one process sent and had answered, as the deadline needs it.
#[derive(Clone, Debug, Default)]
struct Requests {
    /// Requests sent and not yet answered, with their local send times,
    /// oldest first (at most [`fenced::MAX_OUTSTANDING`]: a follower's are
    /// never retired, so its ring stays full).
    sent: VecDeque<(u64, Instant)>,
    /// The local send time of the request whose grant or renewal was last
    /// applied.
    anchor: Option<Instant>,
    /// When (true time) that answer was applied, while no request has gone
    /// out since: the renewal it schedules is still to come.
    renewal_due_since: Option<SimTime>,
}

/// The deadline part.
#[derive(Clone, Debug)]
pub(super) struct Deadline {
    /// `lease_ttl - safety_margin`: how long one successful request lets a
    /// holder act.
    validity: Duration,
    /// Per process slot (created when its process starts).
    slots: Vec<Option<Requests>>,
    /// The renewal-timing rule (judged only with a renew interval).
    renewal: RenewalRule,
}

impl Deadline {
    /// A part that has seen no request; renewals are judged when
    /// `renew_interval` is set, with `jitter` (see
    /// [`CheckerSettings::jitter`](super::CheckerSettings::jitter)).
    pub(super) fn new(validity: Duration, renew_interval: Option<Duration>, jitter: f64) -> Self {
        Deadline {
            validity,
            slots: Vec::new(),
            renewal: RenewalRule::new(renew_interval, jitter),
        }
    }

    fn requests(&self, pid: ProcessId) -> Option<&Requests> {
        self.slots.get(pid.0 as usize).and_then(Option::as_ref)
    }

    /// Prefetches slot `pid`'s row (a hint).
    #[inline(always)]
    pub(super) fn prefetch(&self, pid: u32) {
        if let Some(row) = self.slots.get(pid as usize) {
            crate::engine::prefetch_lines(row, 1);
        }
    }

    /// Prefetches the place of slot `pid`'s ring its next request will take
    /// (a hint): a follower's ring is full, so the next request replaces the
    /// oldest; otherwise it goes after the newest. The ring is a buffer of
    /// its own behind the row, a second miss a request paid after the row's
    /// (cachegrind, 10 000 nodes); this reads the row, so it is asked once
    /// the row was prefetched.
    #[inline(always)]
    pub(super) fn prefetch_next_request(&self, pid: u32) {
        let Some(Some(requests)) = self.slots.get(pid as usize) else {
            return;
        };
        let sent = &requests.sent;
        let place = if sent.len() == fenced::MAX_OUTSTANDING {
            sent.front().map(std::ptr::from_ref)
        } else {
            sent.back()
                .map(|newest| std::ptr::from_ref(newest).wrapping_add(1))
        };
        if let Some(place) = place {
            crate::engine::prefetch_lines(place, 1);
        }
    }

    /// A process started in slot `pid`: a new life, nothing sent yet.
    pub(super) fn process_started(&mut self, pid: ProcessId) {
        let i = pid.0 as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Requests::default());
    }

    /// Process `p` sent request `request` at `local` on its clock; the first
    /// request after a grant or renewal is judged by the renewal rule.
    /// Inlined: every request of every process passes here.
    #[inline]
    pub(super) fn request_sent(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        request: u64,
        local: Instant,
        model: &Model,
        sink: &mut Findings,
    ) {
        let Some(requests) = self.slots.get_mut(p.id.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        let mut timing = None;
        if let (Some(anchor), Some(applied)) = (requests.anchor, requests.renewal_due_since.take())
        {
            if self.renewal.judged() && model.term(p.id).is_some() {
                // Late but exempt when the answer itself came late (then
                // the renewal goes out at once) or the process could not
                // act (paused, or its clock stepped: then at the instant it
                // could again).
                let exempt = applied == now || model.recovered_at(p.id) == Some(now);
                timing = self.renewal.timing(local, anchor, exempt);
            }
        }
        if requests.sent.len() == fenced::MAX_OUTSTANDING {
            requests.sent.pop_front();
        }
        requests.sent.push_back((request, local));
        if let Some(timing) = timing {
            self.renewal.judge(now, p, local, timing, sink);
        }
    }

    /// Process `p`'s elector handled the answer to `request`: a grant or
    /// renewal applied moves its anchor to that request's send time. A
    /// renewal's answer not applied while it leads is a renewal lost.
    #[allow(clippy::too_many_arguments)] // One per field of the observation.
    pub(super) fn response(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        request: u64,
        disposition: ResponseDisposition,
        acquired: Option<FencingToken>,
        renewal: bool,
        model: &Model,
        sink: &mut Findings,
    ) {
        // The process's row is read only when the answer needs it: most
        // answers (a follower's `held`) change nothing here, and in a fleet
        // of thousands the row is a cold cache line.
        if disposition == ResponseDisposition::Applied && acquired.is_some() {
            let Some(requests) = self.slots.get_mut(p.id.0 as usize).and_then(Option::as_mut)
            else {
                return;
            };
            if let Some(at) = requests.sent.iter().position(|(sent, _)| *sent == request) {
                requests.anchor = Some(requests.sent[at].1);
                requests.renewal_due_since = Some(now);
                // Retired one by one: cheaper than a `drain` of a prefix.
                for _ in 0..=at {
                    requests.sent.pop_front();
                }
            }
        } else if disposition != ResponseDisposition::Applied
            && renewal
            && model.believes(p.id).is_some()
            && self.requests(p.id).is_some()
        {
            sink.coverage.renewal_lost += 1;
        }
    }

    /// A message was dropped: a leader's lease request, or a renewal's
    /// answer, is a renewal lost — unless its addressee died since.
    pub(super) fn dropped(
        kind: MessageKind,
        sender: Option<ProcessRef<'_>>,
        renewal_answer: bool,
        reason: DropReason,
        model: &Model,
        sink: &mut Findings,
    ) {
        if reason == DropReason::ProcessGone {
            return;
        }
        let request_of_leader = kind == MessageKind::LeaseRequest
            && sender.is_some_and(|p| model.believes(p.id).is_some());
        if request_of_leader {
            sink.coverage.renewal_lost += 1;
        }
        if renewal_answer {
            sink.coverage.renewal_lost += 1;
        }
    }

    /// `p`'s elector stepped down from `token` on its deadline at `local`:
    /// it does so at that deadline — not before, and not later unless it
    /// could not act then (paused, or its clock stepped: then at the instant
    /// it could act again). A step-down that waits for the next renewal or
    /// retry instead leaves the holder believing past its deadline. The
    /// fenced elector only: other protocols end terms on their own rules.
    pub(super) fn stepped_down(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        model: &Model,
        sink: &mut Findings,
    ) {
        /// A true-time instant mapped onto a drifting clock and back may
        /// round by a nanosecond or so.
        const ROUNDING: Duration = Duration::from_micros(1);
        let validity = self.validity;
        let Some(requests) = self.requests(p.id) else {
            return;
        };
        let Some(deadline) = requests.anchor.map(|a| a + validity) else {
            return;
        };
        let early = local + ROUNDING < deadline;
        let late = local > deadline + ROUNDING && model.recovered_at(p.id) != Some(now);
        if early || late {
            let (by, when) = if early {
                (deadline - local, "before")
            } else {
                (local - deadline, "after")
            };
            let detail = format!(
                "{} stepped down from token {token} on its local deadline {} {when} it (its last successful request was sent {} before the deadline by its clock)",
                p.owner,
                secs(by),
                secs(validity)
            );
            sink.violate(Invariant::LocalDeadline, now, detail, Vec::new());
        }
    }

    /// `p` started a unit of work with `token` at `local`: only before its
    /// deadline.
    #[inline]
    pub(super) fn unit_started(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        sink: &mut Findings,
    ) {
        self.judge(now, p, token, local, "started a unit of work with", sink);
    }

    /// `p`'s elector answered `token_at` with `token` at `local`: no token
    /// at or past the deadline, whether or not the elector has handled its
    /// timer yet — work checks it right before acting.
    #[inline]
    pub(super) fn token_answered(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        sink: &mut Findings,
    ) {
        let what = "was told by its elector it may act with";
        self.judge(now, p, token, local, what, sink);
    }

    /// `p` did `what` token `token` at `local`: a violation at or past its
    /// deadline (its anchor + validity). Inlined: asked at every unit and
    /// every work tick, and the answer is almost always no.
    #[inline]
    fn judge(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        what: &str,
        sink: &mut Findings,
    ) {
        let Some(anchor) = self.requests(p.id).and_then(|r| r.anchor) else {
            return;
        };
        if local >= anchor + self.validity {
            self.past_deadline(now, p, (token, local, anchor), what, sink);
        }
    }

    /// The `local-deadline` violation of [`judge`](Self::judge): `p` did
    /// `what` a token at a local instant past its anchor's deadline.
    #[cold]
    #[inline(never)]
    fn past_deadline(
        &self,
        now: SimTime,
        p: ProcessRef<'_>,
        (token, local, anchor): (FencingToken, Instant, Instant),
        what: &str,
        sink: &mut Findings,
    ) {
        let over = local - (anchor + self.validity);
        let detail = format!(
            "{} {what} token {token} {} past its local deadline \
             (its last successful request was sent {} earlier by its clock)",
            p.owner,
            secs(over),
            secs(local - anchor)
        );
        sink.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, token, Cast, S};
    use crate::observation::{HostRef, Observation};

    /// The deadline part alone over a hand-written list (the model first, as
    /// the checker does), validity 27 s, renewals not judged.
    fn judge(list: &[(f64, Observation<'_>)]) -> Findings {
        let (mut model, mut sink) = (Model::default(), Findings::default());
        let mut part = Deadline::new(Duration::from_secs(27), None, 0.0);
        for (seconds, o) in list {
            let now = at(*seconds);
            model.observe(now, o);
            match *o {
                Observation::ProcessStarted(p) => part.process_started(p.id),
                Observation::RequestSent {
                    process,
                    request,
                    local,
                } => part.request_sent(now, process, request, local, &model, &mut sink),
                Observation::ResponseHandled {
                    process,
                    request,
                    disposition,
                    acquired,
                    renewal,
                } => part.response(
                    now,
                    process,
                    request,
                    disposition,
                    acquired,
                    renewal,
                    &model,
                    &mut sink,
                ),
                Observation::WorkStarted {
                    process,
                    token,
                    local,
                    ..
                } => part.unit_started(now, process, token, local, &mut sink),
                Observation::TokenAnswered {
                    process,
                    local,
                    token: Some(token),
                } => part.token_answered(now, process, token, local, &mut sink),
                Observation::TermEnded {
                    process,
                    token,
                    local: Some(local),
                    ..
                } => part.stepped_down(now, process, token, local, &model, &mut sink),
                _ => {}
            }
        }
        sink
    }

    fn local(seconds: f64) -> Instant {
        Instant::from_nanos((seconds * S as f64) as u64)
    }

    /// `a` starts, sends request 1 at 10 s on its clock (true time 0) and
    /// has it granted: anchored at 10 s, its deadline is 37 s.
    fn anchored(cast: &Cast) -> Vec<(f64, Observation<'_>)> {
        vec![
            (0.0, Observation::ProcessStarted(cast.a())),
            (
                0.0,
                Observation::RequestSent {
                    process: cast.a(),
                    request: 1,
                    local: local(10.0),
                },
            ),
            (
                0.1,
                Observation::ResponseHandled {
                    process: cast.a(),
                    request: 1,
                    disposition: ResponseDisposition::Applied,
                    acquired: Some(token(1)),
                    renewal: false,
                },
            ),
        ]
    }

    /// Proves the part alone: a unit or a `token_at` answer at the deadline
    /// breaks it, one a nanosecond before does not; and a request answered
    /// but not applied moves no anchor.
    #[test]
    fn acting_at_the_deadline_breaks_it_a_nanosecond_before_does_not() {
        let cast = Cast::new();
        let unit = |l: Instant| Observation::WorkStarted {
            process: cast.a(),
            token: token(1),
            unit: 1,
            local: l,
        };
        let answer = |l: Instant| Observation::TokenAnswered {
            process: cast.a(),
            local: l,
            token: Some(token(1)),
        };
        let just_before = local(37.0) - Duration::from_nanos(1);
        let mut almost = anchored(&cast);
        almost.push((1.0, unit(just_before)));
        almost.push((1.0, answer(just_before)));
        // A later request whose answer is not applied: still anchored at 10 s.
        almost.push((
            2.0,
            Observation::RequestSent {
                process: cast.a(),
                request: 2,
                local: local(20.0),
            },
        ));
        almost.push((
            2.1,
            Observation::ResponseHandled {
                process: cast.a(),
                request: 2,
                disposition: ResponseDisposition::Stale,
                acquired: None,
                renewal: true,
            },
        ));
        assert!(invariants_of(&judge(&almost)).is_empty());
        let mut broken = almost.clone();
        broken.push((3.0, unit(local(37.0))));
        broken.push((3.0, answer(local(37.0))));
        assert_eq!(
            invariants_of(&judge(&broken)),
            ["local-deadline", "local-deadline"]
        );
    }

    /// Proves the part alone: a step-down on the deadline a second late
    /// breaks it, unless it comes at the instant the process resumed (it
    /// could not act before).
    #[test]
    fn a_late_step_down_breaks_it_unless_at_a_resume() {
        let cast = Cast::new();
        let host = HostRef::Process(cast.a());
        let step_down = |l: f64| Observation::TermEnded {
            process: cast.a(),
            token: token(1),
            reason: &fenced::StepDownReason::LocalDeadline,
            why: None,
            local: Some(local(l)),
        };
        let resumed = Observation::Resumed {
            host,
            depth: 0,
            deferred: 1,
        };
        let mut at_resume = anchored(&cast);
        at_resume.push((20.0, Observation::Paused { host, depth: 1 }));
        at_resume.push((40.0, resumed));
        at_resume.push((40.0, step_down(50.0)));
        assert!(invariants_of(&judge(&at_resume)).is_empty());
        let mut after = at_resume[..4].to_vec();
        after.push((40.0, resumed));
        after.push((41.0, step_down(51.0)));
        assert_eq!(invariants_of(&judge(&after)), ["local-deadline"]);
    }
}
