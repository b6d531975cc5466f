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
//! # Parts
//!
//! The checker is a thin dispatcher over small parts, each a plain struct
//! with its own state and its own tests:
//!
//! * `model`: the one model of the processes and hosts (alive, paused,
//!   disturbed, owner, node, believed term, clock steps) — updated first
//!   for each observation, read by the parts, written by none of them;
//! * `findings`: the one sink the parts write violations and coverage
//!   into, in the order found;
//! * `owners` (`unique-owner`), `lease` (`token-monotonic`,
//!   `lease-exclusive`), `fence` (`single-writer`, `split-brain`,
//!   failovers, writes), `terms` (belief terms, overlap, leaderless time,
//!   leader changes, spurious failovers), `deadline` with `renewal`
//!   (`local-deadline`), `membership` with `registry` (`membership`),
//!   and `liveness`.
//!
//! For each observation the checker updates the model, then hands the
//! observation to each part that cares, in a fixed order; a part writes a
//! violation the moment it judges one, so the violations stay in the order
//! of the observations. No part is boxed or dispatched dynamically: the one
//! `match` below is the whole dispatch, inlined into each emitter.
//!
//! Its state is bounded: one lease view, one downstream fence, a row per
//! process slot and per node in the model and in the parts that need one,
//! counters, and capped lists.

mod assemble;
mod deadline;
mod fence;
mod findings;
mod lease;
mod liveness;
mod membership;
mod model;
mod owners;
mod registry;
mod renewal;
mod settings;
mod terms;
mod verdict;

use fenced::WriteOutcome;

use crate::observation::{HostRef, Observation, Observer, SimTime};

pub(crate) use assemble::assemble;
pub use settings::CheckerSettings;
pub use verdict::{BeliefTerm, Verdict};

use deadline::Deadline;
use fence::FenceCheck;
use findings::Findings;
use lease::LeaseCheck;
use liveness::Liveness;
use membership::Membership;
use model::Model;
use owners::UniqueOwner;
use terms::{TermEnd, Terms};

/// The invariant checker. See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Checker {
    settings: CheckerSettings,
    /// What the processes and hosts are and what happened to them.
    model: Model,
    /// Violations and coverage, in the order found.
    findings: Findings,
    owners: UniqueOwner,
    lease: LeaseCheck,
    fence: FenceCheck,
    terms: Terms,
    deadline: Deadline,
    membership: Membership,
    liveness: Liveness,
}

impl Checker {
    /// A checker that has seen nothing yet.
    pub fn new(settings: CheckerSettings) -> Self {
        let s = &settings;
        Checker {
            model: Model::default(),
            findings: Findings::default(),
            owners: UniqueOwner::default(),
            lease: LeaseCheck::default(),
            fence: FenceCheck::new(s.fencing),
            terms: Terms::new(s.lease_ttl),
            deadline: Deadline::new(s.validity, s.renew_interval, s.jitter),
            membership: Membership::new(s.liveness_ttl),
            liveness: Liveness::new(s),
            settings,
        }
    }

    /// Its settings.
    pub fn settings(&self) -> &CheckerSettings {
        &self.settings
    }

    /// The highest token the lease store granted so far (0: none).
    pub fn highest_granted(&self) -> u64 {
        self.lease.highest_granted()
    }

    /// For a history, whose unanswered requests the store may have decided
    /// all the same: `owner`'s lease of `token`, lapsed at the store's time
    /// `now`, is taken as renewed by a request of its, sent at `sent` (the
    /// report's time), that went unanswered — when that request left before
    /// the lapse on the store's clock. The renewal is placed at the latest
    /// instant it can have been applied (1 ns before the lapse), for `ttl`.
    /// Returns whether the lease was extended (a renewal answered at `now`
    /// is then judged against that). Nothing is judged here: a grant to
    /// another node after the lapse has replaced the lease already, and
    /// the renewal meets it as before.
    pub(crate) fn renewed_unanswered(
        &mut self,
        now: SimTime,
        owner: &fenced::OwnerId,
        token: u64,
        sent: SimTime,
        ttl: std::time::Duration,
    ) -> bool {
        self.lease
            .renewed_unanswered(now, owner, token, sent, ttl, &self.model)
    }

    /// The highest token the downstream accepted, if any.
    pub fn highest_accepted(&self) -> Option<u64> {
        self.fence.last_accepted().map(|(token, _)| token)
    }

    /// What was found and measured, with the belief measures folded up to
    /// `now` and the terms still open ended there — on a copy, so it can be
    /// asked at any time and the stream continued. At the run's end (`now`
    /// at or past [`CheckerSettings::end`]) a run with a liveness phase that
    /// did not converge gets its `liveness` violation.
    pub fn verdict(&self, now: SimTime) -> Verdict {
        let terms = self.terms.measures(now);
        let leader_at_end = self.leader_at(now);
        let mut findings = self.findings.clone();
        let last_accepted = self.fence.last_accepted();
        let believers = self.model.alive_believers();
        let liveness = self
            .liveness
            .violation(now, leader_at_end, believers, last_accepted);
        if let Some(violation) = liveness {
            findings.record(violation);
        }
        let (violations, violations_total, split_brain_total, coverage) = findings.into_parts();
        let (failovers, max_failover, writes) = self.fence.measures();
        Verdict {
            violations,
            violations_total,
            split_brain_total,
            terms: terms.terms,
            leader_changes: terms.leader_changes,
            failovers,
            max_failover,
            writes,
            coverage,
            membership: self.membership.report().clone(),
            overlap: terms.overlap,
            leaderless: terms.leaderless,
            spurious_failovers: terms.spurious_failovers,
            leader_at_end,
        }
    }

    /// The verdict at the end of the stream.
    pub fn finish(self, now: SimTime) -> Verdict {
        self.verdict(now)
    }

    /// Whether exactly one live process leads at `now` and the downstream
    /// accepted its token recently (two write intervals, one unit and two
    /// latencies): `leader_at_end`, the liveness check and quiescence.
    pub fn leader_at(&self, now: SimTime) -> bool {
        let believers = self.model.believers();
        self.liveness
            .leader_at(now, believers, self.fence.last_accepted())
    }
}

impl Observer for Checker {
    /// The process's request row (the deadline part's).
    #[inline(always)]
    fn prefetch(&self, pid: u32) {
        self.deadline.prefetch(pid);
    }

    /// Where the process's next request will be recorded (the deadline
    /// part's ring, behind its row).
    #[inline(always)]
    fn prefetch_near(&self, pid: u32) {
        self.deadline.prefetch_next_request(pid);
    }

    /// Updates the model, then hands the observation to the parts that
    /// judge or measure it. Inlined into every emitter: a call site pays
    /// only for the arms its variant reaches.
    #[inline(always)]
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        let now = at;
        let ended = self.model.observe(now, observation);
        let (model, sink) = (&self.model, &mut self.findings);
        match *observation {
            Observation::ProcessStarted(p) => {
                self.terms.process_started(now, p.id);
                self.deadline.process_started(p.id);
                self.owners.started(now, p, sink);
            }
            // A stopped process ended its term (reason `stopped`) before it
            // exited; its life ends like a crashed one's.
            Observation::ProcessCrashed(p) | Observation::ProcessStopped(p) => {
                self.terms.ended(now, p.id, TermEnd::Crash, ended, model, sink);
                self.owners.ended(p);
            }
            // A renewal (or its answer) lost on the way.
            Observation::Dropped {
                kind,
                sender,
                renewal_answer,
                reason,
                ..
            } => Deadline::dropped(kind, sender, renewal_answer, reason, model, sink),
            Observation::RequestSent {
                process,
                local,
                request,
            } => self
                .deadline
                .request_sent(now, process, request, local, model, sink),
            Observation::LeaseHandled { from, result, .. } => {
                self.lease.handled(now, from, result, model, sink)
            }
            Observation::ReleaseHandled {
                from,
                token,
                released,
            } => self.lease.released(now, from.owner, token, released, model),
            Observation::MemberJoined(node) => self.membership.joined(node.index),
            Observation::MemberLeft(node) => self.membership.left(node.index, model),
            Observation::ResponseHandled {
                process,
                request,
                disposition,
                acquired,
                renewal,
            } => self.deadline.response(
                now,
                process,
                request,
                disposition,
                acquired,
                renewal,
                model,
                sink,
            ),
            Observation::TermStarted { process, token } => {
                self.terms.started(now, process, token, model)
            }
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
                    self.deadline
                        .stepped_down(now, process, token, local, model, sink);
                }
                let end = TermEnd::StepDown(reason, why);
                self.terms.ended(now, process.id, end, ended, model, sink)
            }
            Observation::WorkStarted {
                process,
                token,
                local,
                ..
            } => self.deadline.unit_started(now, process, token, local, sink),
            Observation::WorkCancelled { .. } => self.fence.cancelled(),
            Observation::WriteHandled {
                from,
                token,
                unit,
                outcome,
            } => match outcome {
                WriteOutcome::Accepted => self.fence.accepted(now, from, token, unit, sink),
                WriteOutcome::RejectedStale { .. } => self.fence.rejected_stale(from, model, sink),
                WriteOutcome::RejectedWrongWriter { bound_to, .. } => {
                    let evidence = self.lease.evidence(model);
                    self.fence
                        .rejected_wrong_writer(now, from, token, bound_to, evidence, sink)
                }
            },
            Observation::TokenAnswered {
                process,
                local,
                token: Some(token),
            } => self.deadline.token_answered(now, process, token, local, sink),
            Observation::RegistryAnswered { local, answer } => {
                self.membership.answered(now, local, answer, model, sink)
            }
            // A restart of a server or the downstream shows in what the
            // restarted host does next (a store that lost its tokens grants
            // token 1 again, a downstream that lost its fence accepts an old
            // token). Any other is the lease store's: its registry forgets
            // its members unless durable.
            Observation::Restarted {
                host: HostRef::Server { .. } | HostRef::Downstream,
                ..
            } => {}
            Observation::Restarted { durable, .. } => self.membership.restarted(durable),
            // The model's alone: pauses, network faults and clock steps
            // matter to the parts through it.
            Observation::Paused { .. }
            | Observation::Resumed { .. }
            | Observation::Isolated { .. }
            | Observation::Cut { .. }
            | Observation::Partitioned { .. }
            | Observation::ClockJumped { .. }
            | Observation::ClockSlewed { .. } => {}
            Observation::TokenAnswered { token: None, .. }
            | Observation::WorkFailed { .. }
            | Observation::Skipped { .. }
            | Observation::Healed
            | Observation::LeaseRejected { .. }
            | Observation::HeartbeatHandled { .. }
            | Observation::LiveMembers(_)
            | Observation::RequestFailed { .. }
            // The client's sessions: what they cause (a request failed, a
            // write never reaching the downstream) is judged where it shows.
            | Observation::SessionOpened { .. }
            | Observation::SessionClosed { .. }
            | Observation::CallFailed { .. }
            | Observation::WriteSent { .. }
            | Observation::FaultBegan { .. }
            | Observation::FaultEnded { .. }
            // Another protocol's view of its lock: its servers' truth is
            // drawn, not judged (the belief overlap and the downstream's
            // writes are what every protocol is judged by).
            | Observation::Holder { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
