//! The invariant checker and the measures: a standalone observer of the
//! [observation stream](crate::observation).
//!
//! The checker never asks the state machines what they think; it keeps its
//! own model from what they *did* (grants, renewals, releases, writes
//! accepted, requests sent and answered, processes started, paused and
//! crashed) and compares. That pairing — the store asserts monotonicity where
//! it issues a token, the checker where the token is observed — is what lets
//! planted bugs be caught. It needs no simulation: feed it observations from
//! any source (a hand-written list, a real run's history) and ask for the
//! [`Verdict`].
//!
//! ```
//! use std::time::Duration;
//! use fenced::{FencingToken, Instant, LeaseResult, NodeId, OwnerId};
//! use fenced_sim::{Checker, CheckerSettings, Observation, Observer, ProcessId, ProcessRef, NodeRef, SimTime};
//!
//! let settings = CheckerSettings::new(true, Duration::from_secs(30), Duration::from_secs(27));
//! let mut checker = Checker::new(settings);
//! let (node, owner) = (NodeId::new("a")?, OwnerId::new("a#1")?);
//! let a = ProcessRef { id: ProcessId(0), node: NodeRef { index: 0, id: &node }, incarnation: 1, owner: &owner };
//! let token = FencingToken::new(1).expect("non-zero");
//! let granted = LeaseResult::Granted { token, expires_at: Instant::from_nanos(30_000_000_000) };
//! checker.observe(SimTime::ZERO, &Observation::ProcessStarted(a));
//! checker.observe(SimTime::from_nanos(1_000), &Observation::LeaseHandled { from: a, request: 1, result: &granted });
//! // The same token granted again is a token-monotonic violation.
//! checker.observe(SimTime::from_nanos(2_000), &Observation::LeaseHandled { from: a, request: 2, result: &granted });
//! let verdict = checker.verdict(SimTime::from_nanos(3_000));
//! assert_eq!(verdict.violations[0].invariant, "token-monotonic");
//! # Ok::<(), fenced::IdError>(())
//! ```
//!
//! Safety invariants:
//! 1. `token-monotonic`: grants carry strictly increasing tokens; a renewal
//!    never changes the token and never revives a lapsed lease.
//! 2. `lease-exclusive`: at the store's clock, at most one unexpired holder.
//! 3. `single-writer` (fenced runs only): the downstream accepts tokens in
//!    non-decreasing order, and each token from one writer only.
//! 4. `split-brain`: an accepted write from an older term after an accepted
//!    write from a newer one (checked with fencing on or off).
//! 5. `local-deadline`: a holder starts a unit of work only before its own
//!    deadline — the local send time of its last successful request (from
//!    [`Observation::RequestSent`]) plus `lease_ttl - safety_margin`, on its
//!    own clock. This is the elector's half of the protocol; fencing is the
//!    downstream's. The same deadline bounds what `Elector::token_at`
//!    answers ([`Observation::TokenAnswered`]), and, with
//!    [`CheckerSettings::renew_interval`], the fenced elector's own timing:
//!    it steps down at the deadline (not before; later only when it could
//!    not act), and renews between `renew_interval × (1 − jitter)` and
//!    `renew_interval` after its anchor, a configured jitter actually
//!    spreading the renewals ([`CheckerSettings::jitter`]).
//! 6. `liveness` (with [`CheckerSettings::heal_at`]): after every fault is
//!    healed, one leader holds and its writes are accepted by the end.
//! 7. `unique-owner`: no two live processes share one owner identity. Owner
//!    ids are what the lease store and the downstream tell holders apart by;
//!    two processes behind one id would both lead on one token and every
//!    other invariant would be blind to it.
//! 8. `membership` (with [`CheckerSettings::liveness_ttl`]): the node
//!    registry's answers ([`Observation::RegistryAnswered`]) agree with the
//!    checker's own model of heartbeats and the liveness TTL.
//!
//! Its state is bounded: one lease view, one downstream fence, a row per
//! process slot and per node, counters, and capped lists.

mod assemble;
mod fence;
mod lease;
mod lives;
mod membership;

use std::time::Duration;

use fenced::{FencingToken, OwnerId};

use crate::observation::{HostRef, Observation, Observer, SimTime};
use crate::report::{
    Coverage, Failover, Invariant, MembershipReport, Term, Violation, Writes, MAX_VIOLATIONS_LISTED,
};
use crate::units::{ms, secs};

pub(crate) use assemble::assemble;
use fence::FenceView;
use lease::LeaseView;
use lives::{Disturbance, Lives};
use membership::MembershipModel;

/// What the checker needs to know of the run it judges.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckerSettings {
    /// Whether the downstream enforces fencing (`single-writer` is judged
    /// only then).
    pub fencing: bool,
    /// The lease TTL: a term lost within one TTL of no fault is spurious.
    pub lease_ttl: Duration,
    /// `lease_ttl - safety_margin`: how long one successful request lets a
    /// holder act, on its own clock (`local-deadline`).
    pub validity: Duration,
    /// How often a leader writes, how long a unit takes, and the longest
    /// one-way latency: "recently accepted" for a leader at the end is within
    /// two write intervals, one unit and two latencies.
    pub write_interval: Duration,
    /// See [`write_interval`](Self::write_interval).
    pub work_duration: Duration,
    /// See [`write_interval`](Self::write_interval).
    pub latency_max: Duration,
    /// When the liveness phase began, if the run has one.
    pub heal_at: Option<Duration>,
    /// When the run ends: `liveness` is judged only at the end.
    pub end: Duration,
    /// The node registry's liveness TTL: `membership` is judged when set.
    pub liveness_ttl: Option<Duration>,
    /// The fenced elector's renew interval: when set, `local-deadline` also
    /// judges that a holder renews no later than this after its anchor.
    pub renew_interval: Option<Duration>,
    /// The fenced elector's jitter fraction (0: none), with
    /// [`renew_interval`](Self::renew_interval): a renewal comes no earlier
    /// than `renew_interval × (1 − jitter)` after its anchor, and — when
    /// the jitter can shorten an interval by a millisecond or more — the
    /// first eight renewals on schedule are not all unshortened (the chance
    /// that a working jitter leaves them so is below 10⁻²⁴).
    pub jitter: f64,
}

impl CheckerSettings {
    /// Settings with the default work loop (a write every second, units of
    /// 50 ms, 5 ms latency) and no liveness phase; adjust fields as needed.
    pub fn new(fencing: bool, lease_ttl: Duration, validity: Duration) -> Self {
        CheckerSettings {
            fencing,
            lease_ttl,
            validity,
            write_interval: Duration::from_secs(1),
            work_duration: Duration::from_millis(50),
            latency_max: Duration::from_millis(5),
            heal_at: None,
            end: Duration::MAX,
            liveness_ttl: None,
            renew_interval: None,
            jitter: 0.0,
        }
    }

    /// The settings of a scenario's run.
    pub fn of(scenario: &crate::Scenario) -> Self {
        CheckerSettings {
            fencing: scenario.fencing,
            lease_ttl: scenario.election.lease_ttl,
            validity: scenario
                .election
                .lease_ttl
                .saturating_sub(scenario.election.effective_safety_margin()),
            write_interval: scenario.work.write_interval,
            work_duration: scenario.work.work_duration,
            latency_max: scenario.network.latency.1,
            heal_at: scenario.heal_at,
            end: scenario.duration,
            liveness_ttl: Some(scenario.membership.liveness_ttl),
            renew_interval: (scenario.election.protocol == crate::scenario::ProtocolSpec::Fenced)
                .then_some(scenario.election.renew_interval),
            jitter: scenario.election.jitter,
        }
    }
}

/// One leadership term as its process believed it: from the elector's
/// `StartWork` to its `StopWork`, a crash, or the run's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeliefTerm {
    /// The node.
    pub node: String,
    /// The owner identity (node and incarnation).
    pub owner: String,
    /// The term's fencing token.
    pub token: FencingToken,
    /// When the process began to believe it led (true time).
    pub start: SimTime,
    /// When it stopped believing it, or the instant the verdict was taken
    /// while it still did.
    pub end: SimTime,
    /// Why it ended: `local-deadline`, `superseded`, `new-term`, `stopped`,
    /// `abdicated`, `crash`, or `run-ended` (still open) — or another
    /// protocol's own words (`renew deadline passed`, `session expired`).
    pub end_reason: String,
}

impl BeliefTerm {
    /// The report's form: milliseconds, the token as a number.
    pub fn to_report(&self) -> Term {
        Term {
            node: self.node.clone(),
            owner: self.owner.clone(),
            token: self.token.get(),
            start_ms: ms(self.start),
            end_ms: ms(self.end),
            end_reason: self.end_reason.clone(),
        }
    }
}

/// What the checker found and measured, up to some instant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Invariant breaches in order (at most [`MAX_VIOLATIONS_LISTED`]).
    pub violations: Vec<Violation>,
    /// All breaches, including those not listed.
    pub violations_total: u64,
    /// Split-brain writes among them.
    pub split_brain_total: u64,
    /// Leadership terms as the processes believed them.
    pub terms: Vec<BeliefTerm>,
    /// Leader changes (a term whose owner differs from the previous term's).
    pub leader_changes: u64,
    /// Hand-overs of the downstream writes.
    pub failovers: Vec<Failover>,
    /// The longest failover gap.
    pub max_failover: Duration,
    /// Downstream write counts.
    pub writes: Writes,
    /// Coverage counters.
    pub coverage: Coverage,
    /// Membership as the registry reported it (`live_at_end` is the
    /// caller's to fill).
    pub membership: MembershipReport,
    /// Time two or more processes believed they led.
    pub overlap: Duration,
    /// Time no process believed it led, from the first process start.
    pub leaderless: Duration,
    /// Terms lost while the leader was healthy.
    pub spurious_failovers: u64,
    /// Whether exactly one live process leads with recently accepted writes.
    pub leader_at_end: bool,
}

/// The invariant checker. See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Checker {
    settings: CheckerSettings,
    highest_granted: u64,
    lease: Option<LeaseView>,
    fence: Option<FenceView>,
    lives: Lives,
    believers: u32,
    last_belief_change: SimTime,
    overlap: Duration,
    leaderless: Duration,
    terms: Vec<BeliefTerm>,
    last_term_owner: Option<OwnerId>,
    leader_changes: u64,
    failovers: Vec<Failover>,
    max_failover: Duration,
    writes: Writes,
    coverage: Coverage,
    membership: MembershipReport,
    violations: Vec<Violation>,
    violations_total: u64,
    split_brain_total: u64,
    spurious_failovers: u64,
    /// The store's disturbances and pauses, for spurious failovers.
    store: Disturbance,
    store_pause_depth: u32,
    /// The lease store's clock step (a `clock-jump` on it): its expiry
    /// instants are on its own clock.
    store_offset: i64,
    /// The model of the node registry (`membership`).
    members: MembershipModel,
}

impl Checker {
    /// A checker that has seen nothing yet.
    pub fn new(settings: CheckerSettings) -> Self {
        Checker {
            settings,
            highest_granted: 0,
            lease: None,
            fence: None,
            lives: Lives::default(),
            believers: 0,
            last_belief_change: SimTime::ZERO,
            overlap: Duration::ZERO,
            leaderless: Duration::ZERO,
            terms: Vec::new(),
            last_term_owner: None,
            leader_changes: 0,
            failovers: Vec::new(),
            max_failover: Duration::ZERO,
            writes: Writes::default(),
            coverage: Coverage::default(),
            membership: MembershipReport::default(),
            violations: Vec::new(),
            violations_total: 0,
            split_brain_total: 0,
            spurious_failovers: 0,
            store: Disturbance::default(),
            store_pause_depth: 0,
            store_offset: 0,
            members: MembershipModel::default(),
        }
    }

    /// Its settings.
    pub fn settings(&self) -> &CheckerSettings {
        &self.settings
    }

    /// The highest token the lease store granted so far (0: none).
    pub fn highest_granted(&self) -> u64 {
        self.highest_granted
    }

    /// The highest token the downstream accepted, if any.
    pub fn highest_accepted(&self) -> Option<u64> {
        self.fence.as_ref().map(|f| f.token)
    }

    /// What was found and measured, with the belief measures folded up to
    /// `now` and the terms still open ended there — on a copy, so it can be
    /// asked at any time and the stream continued. At the run's end (`now`
    /// at or past [`CheckerSettings::end`]) a run with a liveness phase that
    /// did not converge gets its `liveness` violation.
    pub fn verdict(&self, now: SimTime) -> Verdict {
        let mut view = self.clone();
        view.close(now);
        let leader_at_end = self.leader_at(now);
        if let Some(violation) = self.liveness_violation(now, leader_at_end) {
            view.violations_total += 1;
            if view.violations.len() < MAX_VIOLATIONS_LISTED {
                view.violations.push(violation);
            }
        }
        Verdict {
            violations: view.violations,
            violations_total: view.violations_total,
            split_brain_total: view.split_brain_total,
            terms: view.terms,
            leader_changes: view.leader_changes,
            failovers: view.failovers,
            max_failover: view.max_failover,
            writes: view.writes,
            coverage: view.coverage,
            membership: view.membership,
            overlap: view.overlap,
            leaderless: view.leaderless,
            spurious_failovers: view.spurious_failovers,
            leader_at_end,
        }
    }

    /// The verdict at the end of the stream.
    pub fn finish(self, now: SimTime) -> Verdict {
        self.verdict(now)
    }

    fn violate(&mut self, invariant: Invariant, at: SimTime, detail: String, events: Vec<String>) {
        self.violations_total += 1;
        if invariant == Invariant::SplitBrain {
            self.split_brain_total += 1;
        }
        if self.violations.len() < MAX_VIOLATIONS_LISTED {
            self.violations.push(Violation {
                invariant: invariant.name().to_string(),
                at_ms: ms(at),
                detail,
                events,
            });
        }
    }

    /// Whether exactly one live process leads at `now` and the downstream
    /// accepted its token recently (two write intervals, one unit and two
    /// latencies): `leader_at_end`, the liveness check and quiescence.
    pub fn leader_at(&self, now: SimTime) -> bool {
        let mut leaders = self.lives.believers();
        let (Some(leader), None) = (leaders.next(), leaders.next()) else {
            return false;
        };
        let s = &self.settings;
        let recent =
            s.write_interval.saturating_mul(2) + s.latency_max.saturating_mul(2) + s.work_duration;
        self.fence.as_ref().is_some_and(|f| {
            f.token == leader.get() && now.saturating_since(f.last_accept_at) <= recent
        })
    }

    /// The `liveness` violation of a finished run with a liveness phase that
    /// did not converge to one leader with accepted writes.
    fn liveness_violation(&self, now: SimTime, leader_at_end: bool) -> Option<Violation> {
        let heal_at = SimTime::from_duration(self.settings.heal_at?);
        if leader_at_end || now < SimTime::from_duration(self.settings.end) || now <= heal_at {
            return None;
        }
        let mut events: Vec<String> = self
            .lives
            .alive_believers()
            .map(|(owner, t)| format!("{owner} believes it leads with token {t}"))
            .collect();
        if let Some(fence) = &self.fence {
            events.push(format!(
                "the downstream last accepted token {} at {}",
                fence.token,
                secs(fence.last_accept_at)
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

impl Observer for Checker {
    #[inline(always)]
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        let now = at;
        match *observation {
            Observation::ProcessStarted(p) => self.on_process_started(now, p),
            // A stopped process ended its term (reason `stopped`) before it
            // exited; its life ends like a crashed one's.
            Observation::ProcessCrashed(p) | Observation::ProcessStopped(p) => {
                self.on_process_crashed(now, p)
            }
            Observation::Paused { host, depth } => self.on_paused(now, host, depth, true),
            Observation::Resumed { host, depth, .. } => {
                if depth == 0 && matches!(host, HostRef::LeaseStore) {
                    self.members.recovered(now);
                }
                self.on_paused(now, host, depth, false)
            }
            Observation::Isolated { host, start } => self.disturb(now, host, start),
            Observation::Cut { from, to, start } => {
                self.disturb(now, from, start);
                self.disturb(now, to, start);
            }
            Observation::Partitioned { start, members, .. } => {
                for &host in members {
                    self.disturb(now, host, start);
                }
            }
            // A renewal (or its answer) lost on the way; a message to a
            // process that died since is not a renewal lost.
            Observation::Dropped {
                kind,
                sender,
                renewal_answer,
                reason,
                ..
            } if reason != crate::observation::DropReason::ProcessGone => {
                let request_of_leader = kind == crate::observation::MessageKind::LeaseRequest
                    && sender.is_some_and(|p| self.lives.believes(p.id).is_some());
                if request_of_leader {
                    self.coverage.renewal_lost += 1;
                }
                if renewal_answer {
                    self.coverage.renewal_lost += 1;
                }
            }
            Observation::RequestSent {
                process,
                local,
                request,
            } => self.on_request_sent(now, process, request, local),
            Observation::LeaseHandled { from, result, .. } => {
                self.on_lease_result(now, from, result)
            }
            Observation::ReleaseHandled {
                from,
                token,
                released,
            } => self.on_release(from.owner, token, released),
            Observation::MemberJoined(node) => self.on_joined(node.index),
            Observation::MemberLeft(node) => self.on_left(node.index),
            Observation::ResponseHandled {
                process,
                request,
                disposition,
                acquired,
                renewal,
            } => self.on_response(now, process, request, disposition, acquired, renewal),
            Observation::TermStarted { process, token } => self.on_term_start(now, process, token),
            Observation::TermEnded {
                process,
                token,
                reason,
                why,
                local,
            } => {
                if let (None, Some(local), fenced::StepDownReason::LocalDeadline) =
                    (why, local, reason)
                {
                    self.check_deadline_step_down(now, process, token, local);
                }
                self.on_term_end(now, process.id, lives::TermEnd::StepDown(reason), why)
            }
            Observation::WorkStarted {
                process,
                token,
                local,
                ..
            } => self.check_local_deadline(now, process, token, local),
            Observation::WorkCancelled { .. } => self.writes.cancelled += 1,
            Observation::WriteHandled {
                from,
                token,
                unit,
                outcome,
            } => self.on_write(now, from, token, unit, outcome),
            Observation::Dropped { .. }
            | Observation::WorkFailed { .. }
            | Observation::Skipped { .. }
            | Observation::Healed
            | Observation::LeaseRejected { .. }
            | Observation::HeartbeatHandled { .. }
            | Observation::LiveMembers(_)
            | Observation::RequestFailed { .. }
            | Observation::WriteSent { .. }
            | Observation::FaultBegan { .. }
            | Observation::FaultEnded { .. }
            // Another protocol's view of its lock: its servers' truth is
            // drawn, not judged (the belief overlap and the downstream's
            // writes are what every protocol is judged by).
            | Observation::Holder { .. }
            // A restart shows in what the restarted host does next (a store
            // that lost its tokens grants token 1 again, a downstream that
            // lost its fence accepts an old token).
            | Observation::Restarted {
                host: HostRef::Server { .. } | HostRef::Downstream,
                ..
            } => {}
            // The lease store's: its registry forgets its members unless
            // durable.
            Observation::Restarted { durable, .. } => {
                if durable {
                    self.members.recovered(now);
                } else {
                    self.members.forget(now);
                }
            }
            Observation::TokenAnswered {
                process,
                local,
                token: Some(token),
            } => self.check_token_answer(now, process, token, local),
            Observation::TokenAnswered { token: None, .. } => {}
            Observation::RegistryAnswered { local, answer } => {
                self.on_registry_answer(now, local, answer)
            }
            Observation::ClockJumped {
                host: HostRef::LeaseStore,
                by_nanos,
            } => {
                self.store_offset = self.store_offset.saturating_add(by_nanos);
                self.members.recovered(now);
            }
            Observation::ClockJumped {
                host: HostRef::Node(node),
                ..
            } => self.lives.clock_jumped(now, node.index),
            Observation::ClockJumped { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
