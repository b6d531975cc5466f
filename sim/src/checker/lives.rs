//! Processes and what they believe: lives (`unique-owner`), pauses and
//! network disturbances (for spurious failovers), terms (belief overlap,
//! leaderless time, leader changes), each process's requests and anchor
//! (`local-deadline`), and membership.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use fenced::{FencingToken, Instant, OwnerId, ResponseDisposition, StepDownReason};

use super::BeliefTerm;
use super::Checker;
use crate::observation::{HostRef, ProcessId, ProcessRef, SimTime};
use crate::report::{Invariant, MAX_TERMS_LISTED, RUN_ENDED};
use crate::units::secs;

/// Why a process stopped believing it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TermEnd<'a> {
    /// Its elector stepped down.
    StepDown(&'a StepDownReason),
    /// The process crashed.
    Crash,
}

impl TermEnd<'_> {
    /// The reason as reports spell it.
    fn name(self) -> &'static str {
        match self {
            TermEnd::StepDown(StepDownReason::LocalDeadline) => "local-deadline",
            TermEnd::StepDown(StepDownReason::Superseded { .. }) => "superseded",
            TermEnd::StepDown(StepDownReason::NewTerm { .. }) => "new-term",
            TermEnd::StepDown(StepDownReason::Stopped) => "stopped",
            TermEnd::StepDown(StepDownReason::Abdicated) => "abdicated",
            TermEnd::Crash => "crash",
        }
    }
}

/// Record of network disturbances of one endpoint, for spurious failovers.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Disturbance {
    active: u32,
    last: Option<SimTime>,
}

impl Disturbance {
    fn change(&mut self, now: SimTime, start: bool) {
        if start {
            self.active += 1;
        } else {
            self.active = self.active.saturating_sub(1);
        }
        self.last = Some(now);
    }

    fn quiet_since(&self, since: SimTime) -> bool {
        self.active == 0 && self.last.is_none_or(|t| t < since)
    }
}

/// A term in progress.
#[derive(Clone, Copy, Debug)]
struct OpenTerm {
    index: Option<usize>,
    token: FencingToken,
}

/// One process slot, as the checker knows it.
#[derive(Clone, Debug)]
struct Life {
    owner: OwnerId,
    node: u32,
    incarnation: u32,
    alive: bool,
    pause_depth: u32,
    last_paused_at: Option<SimTime>,
    /// The last instant it could act again after it could not (resumed
    /// from a pause, or its clock stepped): a step-down due while it could
    /// not act happens then.
    recovered_at: Option<SimTime>,
    term: Option<OpenTerm>,
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

/// How a renewal's send time compared with its anchor
/// ([`Checker::on_request_sent`]).
enum RenewalTiming {
    Late { anchor: Instant, renew: Duration },
    Early { anchor: Instant, renew: Duration },
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

/// Renewals judged on schedule so far, and how many of them jitter
/// shortened.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Renewals {
    on_schedule: u64,
    shortened: u64,
}

/// Every process slot and node the stream has named.
#[derive(Clone, Debug, Default)]
pub(super) struct Lives {
    /// Renewal timing counts, for `local-deadline`'s jitter rule.
    renewals: Renewals,
    slots: Vec<Option<Life>>,
    /// Per node: its slots, and its endpoint's disturbances.
    nodes: Vec<(Vec<ProcessId>, Disturbance)>,
    /// Every live process by owner id, for `unique-owner`.
    live_owners: BTreeMap<OwnerId, ProcessId>,
    /// Whether any process has started: leaderless time counts from then.
    started: bool,
    /// Nodes that left the live set and have not come back.
    left: std::collections::BTreeSet<u32>,
}

impl Lives {
    fn life(&self, pid: ProcessId) -> Option<&Life> {
        self.slots.get(pid.0 as usize).and_then(Option::as_ref)
    }

    fn life_mut(&mut self, pid: ProcessId) -> Option<&mut Life> {
        self.slots.get_mut(pid.0 as usize).and_then(Option::as_mut)
    }

    fn node(&mut self, index: u32) -> &mut (Vec<ProcessId>, Disturbance) {
        let i = index as usize;
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, Default::default);
        }
        &mut self.nodes[i]
    }

    /// The token process `pid` believes it leads with, if alive and leading.
    pub(super) fn believes(&self, pid: ProcessId) -> Option<FencingToken> {
        self.life(pid)
            .filter(|l| l.alive)
            .and_then(|l| l.term.map(|t| t.token))
    }

    /// The tokens of every live process that believes it leads.
    pub(super) fn believers(&self) -> impl Iterator<Item = FencingToken> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(|l| l.alive)
            .filter_map(|l| l.term.map(|t| t.token))
    }

    /// Owner and token of every live believer, in slot order.
    pub(super) fn alive_believers(&self) -> impl Iterator<Item = (&OwnerId, FencingToken)> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(|l| l.alive)
            .filter_map(|l| l.term.map(|t| (&l.owner, t.token)))
    }

    /// Whether `pid` is alive and paused.
    pub(super) fn paused_alive(&self, pid: ProcessId) -> bool {
        self.life(pid).is_some_and(|l| l.alive && l.pause_depth > 0)
    }

    /// Whether node `node` runs a process newer than `incarnation`.
    pub(super) fn replaced(&self, node: u32, incarnation: u32) -> bool {
        self.nodes.get(node as usize).is_some_and(|(pids, _)| {
            pids.iter()
                .filter_map(|&p| self.life(p))
                .any(|l| l.alive && l.incarnation > incarnation)
        })
    }

    /// Whether node `node` runs a process that is alive and not paused.
    fn running(&self, node: u32) -> bool {
        self.nodes.get(node as usize).is_some_and(|(pids, _)| {
            pids.iter()
                .filter_map(|&p| self.life(p))
                .any(|l| l.alive && l.pause_depth == 0)
        })
    }

    /// Node `node`'s clock stepped at `now`: its processes' step-downs due
    /// meanwhile happen now.
    pub(super) fn clock_jumped(&mut self, now: SimTime, node: u32) {
        let pids = self.node(node).0.clone();
        for pid in pids {
            if let Some(life) = self.life_mut(pid) {
                life.recovered_at = Some(now);
            }
        }
    }
}

impl Checker {
    /// Process `p` sent request `request` at `local` on its clock — and,
    /// invariant `local-deadline`'s renewal half: the first request after a
    /// grant or renewal (its anchor) goes out no later than
    /// `renew_interval` after the anchor, on the holder's clock (jitter only
    /// shortens it), unless the answer itself came later (then at once) or
    /// the process could not act (paused, or its clock stepped: then the
    /// instant it could again). A renewal scheduled late leaves less of the
    /// lease to renew in — or none. Nor does it go out earlier than
    /// `renew_interval × (1 − jitter)` (the elector's timer fires when its
    /// clock reaches the instant, never before), and a configured jitter
    /// must actually spread renewals ([`CheckerSettings::jitter`]): a
    /// thundering herd of renewals is what jitter is for. The fenced
    /// elector only ([`CheckerSettings::renew_interval`]).
    #[inline]
    pub(super) fn on_request_sent(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        request: u64,
        local: Instant,
    ) {
        let renew = self.settings.renew_interval;
        let jitter = self.settings.jitter;
        let Some(life) = self.lives.life_mut(p.id) else {
            return;
        };
        let mut timing = None;
        if let (Some(renew), Some(anchor), Some(applied)) =
            (renew, life.anchor, life.renewal_due_since.take())
        {
            if life.term.is_some() {
                let elapsed = local.saturating_duration_since(anchor);
                let exempt = applied == now || life.recovered_at == Some(now);
                // Late but exempt (the answer came late, or the process
                // could not act): neither judged nor counted.
                timing = if elapsed > renew + ROUNDING && !exempt {
                    Some(RenewalTiming::Late { anchor, renew })
                } else if elapsed + ROUNDING < renew.mul_f64(1.0 - jitter.clamp(0.0, 1.0)) {
                    Some(RenewalTiming::Early { anchor, renew })
                } else if !exempt {
                    Some(RenewalTiming::OnSchedule {
                        shortened: elapsed + ROUNDING < renew,
                    })
                } else {
                    None
                };
            }
        }
        if life.sent.len() == fenced::MAX_OUTSTANDING {
            life.sent.pop_front();
        }
        life.sent.push_back((request, local));
        match timing {
            None => {}
            Some(RenewalTiming::OnSchedule { shortened }) => {
                let r = &mut self.lives.renewals;
                r.on_schedule += 1;
                r.shortened += u64::from(shortened);
                if r.on_schedule == UNSPREAD_LIMIT && r.shortened == 0 {
                    self.renewals_unspread(now, p);
                }
            }
            Some(RenewalTiming::Late { anchor, renew }) => {
                self.renewal_mistimed(now, p, local, anchor, renew, true)
            }
            Some(RenewalTiming::Early { anchor, renew }) => {
                self.renewal_mistimed(now, p, local, anchor, renew, false)
            }
        }
    }

    /// The `local-deadline` violation of a renewal sent late or early.
    #[cold]
    #[inline(never)]
    fn renewal_mistimed(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        local: Instant,
        anchor: Instant,
        renew: Duration,
        late: bool,
    ) {
        let bound = if late {
            format!("later than renew_interval {}", secs(renew))
        } else {
            format!(
                "earlier than renew_interval {} shortened by jitter {} allows",
                secs(renew),
                self.settings.jitter
            )
        };
        let detail = format!(
            "{} renewed its lease {} after its anchor, {bound} (its last successful request was sent at {anchor} by its clock)",
            p.owner,
            secs(local.saturating_duration_since(anchor)),
        );
        self.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }

    /// The `local-deadline` violation of a configured jitter that left the
    /// first [`UNSPREAD_LIMIT`] renewals on schedule all unshortened — when
    /// it could shorten an interval by [`SPREAD_MIN`] or more.
    #[cold]
    #[inline(never)]
    fn renewals_unspread(&mut self, now: SimTime, p: ProcessRef<'_>) {
        let jitter = self.settings.jitter.clamp(0.0, 1.0);
        let Some(renew) = self.settings.renew_interval else {
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
        self.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }

    /// A process of `p.node` started with owner id `p.owner`.
    pub(super) fn on_process_started(&mut self, now: SimTime, p: ProcessRef<'_>) {
        if !self.lives.started {
            self.lives.started = true;
            self.last_belief_change = now;
        }
        let i = p.id.0 as usize;
        if self.lives.slots.len() <= i {
            self.lives.slots.resize_with(i + 1, || None);
        }
        self.lives.slots[i] = Some(Life {
            owner: p.owner.clone(),
            node: p.node.index,
            incarnation: p.incarnation,
            alive: true,
            pause_depth: 0,
            last_paused_at: None,
            recovered_at: None,
            term: None,
            sent: VecDeque::new(),
            anchor: None,
            renewal_due_since: None,
        });
        let slots = &mut self.lives.node(p.node.index).0;
        if !slots.contains(&p.id) {
            slots.push(p.id);
        }
        if let Some(other) = self.lives.live_owners.insert(p.owner.clone(), p.id) {
            let detail = format!(
                "process {} started as owner {} while process {} still runs as {}: two live processes share one owner id",
                p.id.0, p.owner, other.0, p.owner
            );
            self.violate(Invariant::UniqueOwner, now, detail, Vec::new());
        }
    }

    /// A process died: its term (if any) ends with it.
    pub(super) fn on_process_crashed(&mut self, now: SimTime, p: ProcessRef<'_>) {
        if self.lives.believes(p.id).is_some() {
            self.on_term_end(now, p.id, TermEnd::Crash, None);
        }
        if let Some(life) = self.lives.life_mut(p.id) {
            life.alive = false;
            life.pause_depth = 0;
        }
        if self.lives.live_owners.get(p.owner) == Some(&p.id) {
            self.lives.live_owners.remove(p.owner);
        }
    }

    /// A pause of `host` began (`start`) or ended, `depth` now in effect.
    pub(super) fn on_paused(&mut self, now: SimTime, host: HostRef<'_>, depth: u32, start: bool) {
        match host {
            HostRef::LeaseStore | HostRef::Server { endpoint: 0, .. } => {
                self.store_pause_depth = depth;
                self.store.change(now, start);
            }
            // Another server of a multi-server protocol: a disturbance of
            // the store side, not the pause the depth tracks.
            HostRef::Server { .. } => self.store.change(now, start),
            HostRef::Process(p) => {
                if let Some(life) = self.lives.life_mut(p.id) {
                    life.pause_depth = depth;
                    life.last_paused_at = Some(now);
                    if !start && depth == 0 {
                        life.recovered_at = Some(now);
                    }
                }
            }
            HostRef::Downstream | HostRef::Node(_) => {}
        }
    }

    /// A network fault touching `host` began or ended.
    pub(super) fn disturb(&mut self, now: SimTime, host: HostRef<'_>, start: bool) {
        match host {
            HostRef::LeaseStore | HostRef::Server { .. } => self.store.change(now, start),
            HostRef::Node(node) => self.lives.node(node.index).1.change(now, start),
            HostRef::Process(p) => self.lives.node(p.node.index).1.change(now, start),
            HostRef::Downstream => {}
        }
    }

    /// Whether no fault touched the process, its node's links, or the lease
    /// store within one lease TTL: a term lost then is a spurious failover.
    fn healthy(&self, now: SimTime, pid: ProcessId) -> bool {
        let since = now.saturating_sub(self.settings.lease_ttl);
        let Some(life) = self.lives.life(pid) else {
            return false;
        };
        let node_quiet = self
            .lives
            .nodes
            .get(life.node as usize)
            .is_none_or(|(_, d)| d.quiet_since(since));
        life.pause_depth == 0
            && life.last_paused_at.is_none_or(|t| t < since)
            && node_quiet
            && self.store.quiet_since(since)
            && self.store_pause_depth == 0
    }

    fn belief_change(&mut self, now: SimTime) {
        let elapsed = now.saturating_since(self.last_belief_change);
        if self.believers >= 2 {
            self.overlap += elapsed;
        } else if self.believers == 0 && self.lives.started {
            // Leaderless counts from the first process start: the initial
            // election is leaderless time, and so is a run nobody ever led.
            self.leaderless += elapsed;
        }
        self.last_belief_change = now;
    }

    /// `who` began to believe it leads with `token`.
    pub(super) fn on_term_start(&mut self, now: SimTime, who: ProcessRef<'_>, token: FencingToken) {
        self.belief_change(now);
        self.believers += 1;
        let index = (self.terms.len() < MAX_TERMS_LISTED).then(|| {
            self.terms.push(BeliefTerm {
                node: who.node.id.to_string(),
                owner: who.owner.to_string(),
                token,
                start: now,
                end: now,
                end_reason: RUN_ENDED.to_string(),
            });
            self.terms.len() - 1
        });
        if let Some(life) = self.lives.life_mut(who.id) {
            debug_assert!(life.term.is_none(), "a process has one term at a time");
            life.term = Some(OpenTerm { index, token });
        }
        if self.last_term_owner.as_ref() != Some(who.owner) {
            if self.last_term_owner.is_some() {
                self.leader_changes += 1;
            }
            self.last_term_owner = Some(who.owner.clone());
        }
    }

    /// Process `pid` stopped believing it leads, for `reason`.
    /// `why`: another protocol's own words, reported instead of the reason's
    /// name.
    pub(super) fn on_term_end(
        &mut self,
        now: SimTime,
        pid: ProcessId,
        reason: TermEnd<'_>,
        why: Option<&str>,
    ) {
        // A term given up on purpose (stopped, abdicated) is no failover of
        // a healthy leader; nor is one lost to a crash.
        let spurious = match reason {
            TermEnd::StepDown(StepDownReason::Stopped | StepDownReason::Abdicated)
            | TermEnd::Crash => false,
            TermEnd::StepDown(_) => self.healthy(now, pid),
        };
        let Some(open) = self.lives.life_mut(pid).and_then(|l| l.term.take()) else {
            return;
        };
        self.belief_change(now);
        self.believers -= 1;
        if spurious {
            self.spurious_failovers += 1;
        }
        match reason {
            TermEnd::StepDown(StepDownReason::LocalDeadline) => {
                self.coverage.step_down_on_deadline += 1
            }
            TermEnd::StepDown(StepDownReason::Stopped) => self.coverage.leader_stopped += 1,
            TermEnd::StepDown(StepDownReason::Abdicated) => self.coverage.leader_abdicated += 1,
            _ => {}
        }
        if let Some(term) = open.index.and_then(|i| self.terms.get_mut(i)) {
            debug_assert_eq!(term.token, open.token);
            term.end = now;
            term.end_reason = why.unwrap_or(reason.name()).to_string();
        }
    }

    /// A process's elector handled the answer to `request`.
    pub(super) fn on_response(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        request: u64,
        disposition: ResponseDisposition,
        acquired: Option<FencingToken>,
        renewal: bool,
    ) {
        let believes = self.lives.believes(p.id).is_some();
        let Some(life) = self.lives.life_mut(p.id) else {
            return;
        };
        if disposition == ResponseDisposition::Applied && acquired.is_some() {
            if let Some(at) = life.sent.iter().position(|(sent, _)| *sent == request) {
                life.anchor = Some(life.sent[at].1);
                life.renewal_due_since = Some(now);
                // Retired one by one: cheaper than a `drain` of a prefix.
                for _ in 0..=at {
                    life.sent.pop_front();
                }
            }
        }
        if disposition != ResponseDisposition::Applied && renewal && believes {
            self.coverage.renewal_lost += 1;
        }
    }

    /// Invariant `local-deadline`, the elector's step-down: a holder that
    /// steps down on its deadline does so at that deadline (its own clock,
    /// from the request that last succeeded) — not before, and not later
    /// unless it could not act then (paused, or its clock stepped: then at
    /// the instant it could act again). A step-down that waits for the next
    /// renewal or retry instead leaves the holder believing past its
    /// deadline. The fenced elector only: other protocols end terms on
    /// their own rules.
    pub(super) fn check_deadline_step_down(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
    ) {
        /// A true-time instant mapped onto a drifting clock and back may
        /// round by a nanosecond or so.
        const ROUNDING: std::time::Duration = std::time::Duration::from_micros(1);
        let validity = self.settings.validity;
        let Some(life) = self.lives.life(p.id) else {
            return;
        };
        let Some(deadline) = life.anchor.map(|a| a + validity) else {
            return;
        };
        let early = local + ROUNDING < deadline;
        let late = local > deadline + ROUNDING && life.recovered_at != Some(now);
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
            self.violate(Invariant::LocalDeadline, now, detail, Vec::new());
        }
    }

    /// Invariant `local-deadline`: a unit starts only before the holder's own
    /// deadline, measured from the send time of the request that last
    /// succeeded, on its own clock — from the record of what was sent and
    /// answered, not from the elector's state.
    #[inline]
    pub(super) fn check_local_deadline(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
    ) {
        self.judge_deadline(now, p, token, local, "started a unit of work with");
    }

    /// Invariant `local-deadline`, the elector's query: `token_at` answers
    /// no token at or past the deadline, whether or not the elector has
    /// handled its timer yet — work checks it right before acting.
    #[inline]
    pub(super) fn check_token_answer(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
    ) {
        self.judge_deadline(
            now,
            p,
            token,
            local,
            "was told by its elector it may act with",
        );
    }

    /// `p` did `what` token `token` at `local`: a violation at or past its
    /// deadline (its anchor + validity). Inlined: asked at every unit and
    /// every work tick, and the answer is almost always no.
    #[inline]
    fn judge_deadline(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        what: &str,
    ) {
        let validity = self.settings.validity;
        let Some(anchor) = self.lives.life(p.id).and_then(|l| l.anchor) else {
            return;
        };
        if local >= anchor + validity {
            self.past_deadline(now, p, token, local, anchor, what);
        }
    }

    /// The `local-deadline` violation of [`judge_deadline`](Self::judge_deadline).
    #[cold]
    #[inline(never)]
    fn past_deadline(
        &mut self,
        now: SimTime,
        p: ProcessRef<'_>,
        token: FencingToken,
        local: Instant,
        anchor: Instant,
        what: &str,
    ) {
        let over = local - (anchor + self.settings.validity);
        let detail = format!(
            "{} {what} token {token} {} past its local deadline \
             (its last successful request was sent {} earlier by its clock)",
            p.owner,
            secs(over),
            secs(local - anchor)
        );
        self.violate(Invariant::LocalDeadline, now, detail, Vec::new());
    }

    pub(super) fn on_joined(&mut self, node: u32) {
        self.membership.joins += 1;
        if self.lives.left.remove(&node) {
            self.membership.flaps += 1;
        }
    }

    pub(super) fn on_left(&mut self, node: u32) {
        self.membership.leaves += 1;
        if self.lives.running(node) {
            self.membership.false_leaves += 1;
        }
        self.lives.left.insert(node);
    }

    /// Folds the belief measures up to `now` and ends the open terms there.
    pub(super) fn close(&mut self, now: SimTime) {
        self.belief_change(now);
        for life in self.lives.slots.iter().flatten() {
            if let Some(term) = life
                .term
                .and_then(|t| t.index)
                .and_then(|i| self.terms.get_mut(i))
            {
                term.end = now;
            }
        }
    }
}
