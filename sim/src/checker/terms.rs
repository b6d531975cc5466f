//! Terms as the processes believed them, and the measures taken from them:
//! belief overlap (two or more believers), leaderless time (none, from the
//! first process start), leader changes, and spurious failovers (a term
//! lost while its leader was healthy).
//!
//! Which process believes which term is the model's fact (other parts ask
//! it); this part keeps the record of the terms — where each open one sits
//! in the list — and the measures, which judge no invariant.

use std::time::Duration;

use fenced::{FencingToken, OwnerId, StepDownReason};

use super::findings::Findings;
use super::model::Model;
use super::BeliefTerm;
use crate::observation::{ProcessId, ProcessRef, SimTime};
use crate::report::{CRASHED, MAX_TERMS_LISTED, RUN_ENDED, STOPPED};

/// Why a process stopped believing it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TermEnd<'a> {
    /// Its elector stepped down — with, from another protocol, its own
    /// words, reported instead of the reason's name.
    StepDown(&'a StepDownReason, Option<&'a str>),
    /// The process crashed.
    Crash,
}

impl<'a> TermEnd<'a> {
    /// The reason as reports spell it.
    fn name(self) -> &'a str {
        match self {
            TermEnd::StepDown(_, Some(why)) => why,
            TermEnd::StepDown(StepDownReason::LocalDeadline, None) => "local-deadline",
            TermEnd::StepDown(StepDownReason::Superseded { .. }, None) => "superseded",
            TermEnd::StepDown(StepDownReason::NewTerm { .. }, None) => "new-term",
            TermEnd::StepDown(StepDownReason::Stopped, None) => STOPPED,
            TermEnd::StepDown(StepDownReason::Abdicated, None) => "abdicated",
            TermEnd::Crash => CRASHED,
        }
    }
}

/// No listed term (the list was full when it started): see [`Terms::open`].
const UNLISTED: u32 = u32::MAX;

/// The terms part.
#[derive(Clone, Debug)]
pub(super) struct Terms {
    /// The lease TTL: a term lost within one TTL of no fault is spurious.
    lease_ttl: Duration,
    /// Whether any process has started: leaderless time counts from then.
    started: bool,
    /// How many terms are open (one per believer; a term started by a slot
    /// no process ran in stays open to the end).
    believers: u32,
    last_belief_change: SimTime,
    overlap: Duration,
    leaderless: Duration,
    terms: Vec<BeliefTerm>,
    /// Per process slot, the index in `terms` of its open term
    /// ([`UNLISTED`] if it is not listed), while the model says it has one.
    open: Vec<Option<u32>>,
    last_term_owner: Option<OwnerId>,
    leader_changes: u64,
    spurious_failovers: u64,
}

/// The terms part's measures, for the verdict.
pub(super) struct TermMeasures {
    pub(super) terms: Vec<BeliefTerm>,
    pub(super) leader_changes: u64,
    pub(super) overlap: Duration,
    pub(super) leaderless: Duration,
    pub(super) spurious_failovers: u64,
}

impl Terms {
    /// No term yet.
    pub(super) fn new(lease_ttl: Duration) -> Self {
        Terms {
            lease_ttl,
            started: false,
            believers: 0,
            last_belief_change: SimTime::ZERO,
            overlap: Duration::ZERO,
            leaderless: Duration::ZERO,
            terms: Vec::new(),
            open: Vec::new(),
            last_term_owner: None,
            leader_changes: 0,
            spurious_failovers: 0,
        }
    }

    /// A process started in slot `pid` (a new life: no term open there).
    pub(super) fn process_started(&mut self, now: SimTime, pid: ProcessId) {
        if !self.started {
            self.started = true;
            self.last_belief_change = now;
        }
        if let Some(open) = self.open.get_mut(pid.0 as usize) {
            *open = None;
        }
    }

    fn belief_change(&mut self, now: SimTime) {
        let elapsed = now.saturating_since(self.last_belief_change);
        if self.believers >= 2 {
            self.overlap += elapsed;
        } else if self.believers == 0 && self.started {
            // Leaderless counts from the first process start: the initial
            // election is leaderless time, and so is a run nobody ever led.
            self.leaderless += elapsed;
        }
        self.last_belief_change = now;
    }

    /// `who` began to believe it leads with `token` (the model already
    /// records it, when the slot is known).
    pub(super) fn started(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: FencingToken,
        model: &Model,
    ) {
        self.belief_change(now);
        self.believers += 1;
        let index = if self.terms.len() < MAX_TERMS_LISTED {
            self.terms.push(BeliefTerm {
                node: who.node.id.to_string(),
                owner: who.owner.to_string(),
                token,
                start: now,
                end: now,
                end_reason: RUN_ENDED.to_string(),
            });
            self.terms.len() as u32 - 1
        } else {
            UNLISTED
        };
        if model.known(who.id) {
            debug_assert_eq!(model.term(who.id), Some(token));
            let i = who.id.0 as usize;
            if self.open.len() <= i {
                self.open.resize(i + 1, None);
            }
            self.open[i] = Some(index);
        }
        if self.last_term_owner.as_ref() != Some(who.owner) {
            if self.last_term_owner.is_some() {
                self.leader_changes += 1;
            }
            self.last_term_owner = Some(who.owner.clone());
        }
    }

    /// Process `pid` stopped believing it leads, for `reason`; `ended` is
    /// the term the model closed (none: it believed nothing, and nothing
    /// changes — a dead process's late term stays open, as in the model).
    pub(super) fn ended(
        &mut self,
        now: SimTime,
        pid: ProcessId,
        reason: TermEnd<'_>,
        ended: Option<FencingToken>,
        model: &Model,
        sink: &mut Findings,
    ) {
        let Some(token) = ended else {
            return;
        };
        let open = self.open.get_mut(pid.0 as usize).and_then(Option::take);
        debug_assert!(open.is_some(), "a term the model closed was opened here");
        // A term given up on purpose (stopped, abdicated) is no failover of
        // a healthy leader; nor is one lost to a crash.
        let spurious = match reason {
            TermEnd::StepDown(StepDownReason::Stopped | StepDownReason::Abdicated, _)
            | TermEnd::Crash => false,
            TermEnd::StepDown(..) => model.healthy(now, pid, self.lease_ttl),
        };
        self.belief_change(now);
        self.believers -= 1;
        if spurious {
            self.spurious_failovers += 1;
        }
        match reason {
            TermEnd::StepDown(StepDownReason::LocalDeadline, _) => {
                sink.coverage.step_down_on_deadline += 1
            }
            TermEnd::StepDown(StepDownReason::Stopped, _) => sink.coverage.leader_stopped += 1,
            TermEnd::StepDown(StepDownReason::Abdicated, _) => sink.coverage.leader_abdicated += 1,
            _ => {}
        }
        if let Some(term) = open.and_then(|i| self.terms.get_mut(i as usize)) {
            debug_assert_eq!(term.token, token);
            term.end = now;
            term.end_reason = reason.name().to_string();
        }
    }

    /// The measures with the belief time folded up to `now` and the open
    /// terms ended there (on a copy: the stream may continue).
    pub(super) fn measures(&self, now: SimTime) -> TermMeasures {
        let mut view = self.clone();
        view.belief_change(now);
        for &index in view.open.iter().flatten() {
            if let Some(term) = view.terms.get_mut(index as usize) {
                term.end = now;
            }
        }
        TermMeasures {
            terms: view.terms,
            leader_changes: view.leader_changes,
            overlap: view.overlap,
            leaderless: view.leaderless,
            spurious_failovers: view.spurious_failovers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, token, Cast};
    use crate::observation::{HostRef, Observation};

    /// The terms part alone over a hand-written list (the model first, as
    /// the checker does), measured at `end_s`.
    fn measure(list: &[(f64, Observation<'_>)], end_s: f64) -> (TermMeasures, Findings) {
        let (mut model, mut part, mut sink) = (
            Model::default(),
            Terms::new(Duration::from_secs(30)),
            Findings::default(),
        );
        for (seconds, o) in list {
            let now = at(*seconds);
            let ended = model.observe(now, o);
            match *o {
                Observation::ProcessStarted(p) => part.process_started(now, p.id),
                Observation::ProcessCrashed(p) | Observation::ProcessStopped(p) => {
                    part.ended(now, p.id, TermEnd::Crash, ended, &model, &mut sink)
                }
                Observation::TermStarted { process, token } => {
                    part.started(now, process, token, &model)
                }
                Observation::TermEnded {
                    process,
                    reason,
                    why,
                    ..
                } => {
                    let end = TermEnd::StepDown(reason, why);
                    part.ended(now, process.id, end, ended, &model, &mut sink)
                }
                _ => {}
            }
        }
        (part.measures(at(end_s)), sink)
    }

    /// Proves the part alone: a leader losing its term (a new term at the
    /// store) with no fault within a lease TTL is a spurious failover, and
    /// overlap, leaderless time and leader changes are measured; one paused
    /// within the TTL before (the near miss) is not spurious.
    #[test]
    fn a_healthy_leader_losing_its_term_is_spurious_one_paused_within_a_ttl_is_not() {
        let cast = Cast::new();
        let new_term = StepDownReason::NewTerm { token: token(2) };
        let host = HostRef::Process(cast.a());
        let list = |paused_at: f64| {
            [
                (0.0, Observation::ProcessStarted(cast.a())),
                (0.0, Observation::ProcessStarted(cast.b())),
                (paused_at, Observation::Paused { host, depth: 1 }),
                (
                    paused_at,
                    Observation::Resumed {
                        host,
                        depth: 0,
                        deferred: 0,
                    },
                ),
                (
                    41.0,
                    Observation::TermStarted {
                        process: cast.a(),
                        token: token(1),
                    },
                ),
                (
                    50.0,
                    Observation::TermStarted {
                        process: cast.b(),
                        token: token(2),
                    },
                ),
                (
                    52.0,
                    Observation::TermEnded {
                        process: cast.a(),
                        token: token(1),
                        reason: &new_term,
                        why: None,
                        local: None,
                    },
                ),
            ]
        };
        let (healthy, sink) = measure(&list(5.0), 60.0);
        assert!(invariants_of(&sink).is_empty());
        assert_eq!(healthy.spurious_failovers, 1);
        assert_eq!(healthy.overlap, Duration::from_secs(2));
        assert_eq!(healthy.leaderless, Duration::from_secs(41));
        assert_eq!(healthy.leader_changes, 1);
        let ends: Vec<_> = healthy
            .terms
            .iter()
            .map(|t| t.end_reason.as_str())
            .collect();
        assert_eq!(ends, ["new-term", RUN_ENDED]);
        assert_eq!(healthy.terms[1].end, at(60.0));
        let (paused, _) = measure(&list(30.0), 60.0);
        assert_eq!(paused.spurious_failovers, 0);
    }

    /// Proves a crash ends a live believer's term (`crash`, never spurious),
    /// while a term a dead process starts stays open to the end, as in the
    /// model.
    #[test]
    fn a_crash_ends_a_live_term_a_dead_processs_term_stays_open() {
        let cast = Cast::new();
        let term = |s, process, n| {
            let o = Observation::TermStarted {
                process,
                token: token(n),
            };
            (s, o)
        };
        let list = [
            (0.0, Observation::ProcessStarted(cast.a())),
            term(1.0, cast.a(), 1),
            (2.0, Observation::ProcessCrashed(cast.a())),
            term(3.0, cast.a(), 2),
            (4.0, Observation::ProcessCrashed(cast.a())),
        ];
        let (measures, sink) = measure(&list, 10.0);
        assert_eq!(sink.coverage, Default::default());
        assert_eq!(measures.spurious_failovers, 0);
        let terms: Vec<_> = measures
            .terms
            .iter()
            .map(|t| (t.end_reason.as_str(), t.end))
            .collect();
        assert_eq!(terms, [("crash", at(2.0)), (RUN_ENDED, at(10.0))]);
        // Leaderless before the first term and between the crash and the
        // dead process's term, which counts as a believer to the end.
        assert_eq!(measures.leaderless, Duration::from_secs(2));
    }
}
