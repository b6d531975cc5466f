//! The invariant checker and the measures, fed online as events happen.
//!
//! The checker never asks the state machines what they think; it keeps its own
//! model from what they *did* (grants, renewals, releases, writes accepted) and
//! compares. That pairing — the store asserts monotonicity where it issues a
//! token, the checker where the token is observed — is what lets the planted
//! bugs be caught.
//!
//! Safety invariants:
//! 1. `token-monotonic`: grants carry strictly increasing tokens; a renewal
//!    never changes the token and never revives a lapsed lease.
//! 2. `lease-exclusive`: at the store's clock, at most one unexpired holder.
//! 3. `single-writer` (fenced runs only): the downstream accepts tokens in
//!    non-decreasing order, and each token from one writer only.
//! 4. `split-brain`: an accepted write from an older term after an accepted
//!    write from a newer one (checked with fencing on or off).
//! 5. `local-deadline` (checked by the simulator, which knows host clocks): a
//!    holder starts a unit of work only before its own deadline — the send
//!    time of its last successful request plus `lease_ttl - safety_margin`, on
//!    its own clock. This is the elector's half of the protocol; fencing is
//!    the downstream's.
//! 6. `liveness` (runs with a liveness phase): after every fault is healed,
//!    one leader holds and its writes are accepted within the bound.
//! 7. `unique-owner`: no two live processes share one owner identity. Owner
//!    ids are what the lease store and the downstream tell holders apart by;
//!    two processes behind one id would both lead on one token and every
//!    other invariant would be blind to it. Only a simulator bug can break
//!    it, and it must never be invisible.
//!
//! Its state is bounded: one lease view, one downstream fence, counters, and
//! capped lists.

use std::collections::{BTreeMap, BTreeSet};

use fenced::{FencingToken, LeaseResult, OwnerId, ReleaseResult, StepDownReason, WriteOutcome};

use crate::report::{
    Coverage, Failover, Invariant, MembershipReport, Term, Violation, Writes, MAX_TERMS_LISTED,
    MAX_VIOLATIONS_LISTED, RUN_ENDED,
};
use crate::units::{ms, secs};

/// Which process did something.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Who<'a> {
    pub(crate) owner: &'a OwnerId,
    pub(crate) node_name: &'a str,
    pub(crate) pid: u32,
}

/// The checker's own picture of the role's lease.
#[derive(Clone, Debug)]
struct LeaseView {
    owner: OwnerId,
    pid: u32,
    token: u64,
    expires_at: u64,
    granted_at: u64,
}

/// The checker's picture of the downstream fence.
#[derive(Clone, Debug)]
struct FenceView {
    token: u64,
    owner: OwnerId,
    node_name: String,
    first_accept_at: u64,
    last_accept_at: u64,
}

impl FenceView {
    /// The fence after the first accepted write of term `token` by `who`.
    fn first_write(now: u64, who: Who<'_>, token: u64) -> Self {
        FenceView {
            token,
            owner: who.owner.clone(),
            node_name: who.node_name.to_string(),
            first_accept_at: now,
            last_accept_at: now,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct OpenTerm {
    index: Option<usize>,
    token: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Checker {
    fencing: bool,
    highest_granted: u64,
    lease: Option<LeaseView>,
    fence: Option<FenceView>,
    believers: u32,
    last_belief_change: u64,
    pub(crate) overlap_ns: u64,
    pub(crate) leaderless_ns: u64,
    open_terms: Vec<Option<OpenTerm>>,
    pub(crate) terms: Vec<Term>,
    last_term_owner: Option<OwnerId>,
    pub(crate) leader_changes: u64,
    pub(crate) failovers: Vec<Failover>,
    pub(crate) max_failover_ns: u64,
    pub(crate) writes: Writes,
    pub(crate) coverage: Coverage,
    pub(crate) membership: MembershipReport,
    left_nodes: BTreeSet<u32>,
    /// Every live process by owner id, for `unique-owner`.
    live_owners: BTreeMap<OwnerId, u32>,
    /// Whether any process has started: leaderless time counts from then.
    cluster_started: bool,
    pub(crate) violations: Vec<Violation>,
    pub(crate) violations_total: u64,
    pub(crate) split_brain_total: u64,
    pub(crate) spurious_failovers: u64,
}

impl Checker {
    pub(crate) fn new(fencing: bool) -> Self {
        Checker {
            fencing,
            highest_granted: 0,
            lease: None,
            fence: None,
            believers: 0,
            last_belief_change: 0,
            overlap_ns: 0,
            leaderless_ns: 0,
            open_terms: Vec::new(),
            terms: Vec::new(),
            last_term_owner: None,
            leader_changes: 0,
            failovers: Vec::new(),
            max_failover_ns: 0,
            writes: Writes::default(),
            coverage: Coverage::default(),
            membership: MembershipReport::default(),
            left_nodes: BTreeSet::new(),
            live_owners: BTreeMap::new(),
            cluster_started: false,
            violations: Vec::new(),
            violations_total: 0,
            split_brain_total: 0,
            spurious_failovers: 0,
        }
    }

    /// The highest token the lease store granted so far (0: none).
    pub(crate) fn highest_granted(&self) -> u64 {
        self.highest_granted
    }

    /// The process that last held the lease (live, expired, not released).
    pub(crate) fn last_holder_pid(&self) -> Option<u32> {
        self.lease.as_ref().map(|l| l.pid)
    }

    /// The highest token the downstream accepted, and when its last write was.
    pub(crate) fn fence(&self) -> Option<(u64, u64)> {
        self.fence.as_ref().map(|f| (f.token, f.last_accept_at))
    }

    fn violate(&mut self, invariant: Invariant, at: u64, detail: String, events: Vec<String>) {
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

    fn lease_evidence(&self) -> Vec<String> {
        self.lease
            .iter()
            .map(|l| {
                format!(
                    "{} lease-store granted token {} to {}, expiring {}",
                    secs(l.granted_at),
                    l.token,
                    l.owner,
                    secs(l.expires_at)
                )
            })
            .collect()
    }

    /// Records a violation found by the simulator itself (invariants that
    /// need a host's clock, like `local-deadline`).
    pub(crate) fn violation(
        &mut self,
        invariant: Invariant,
        at: u64,
        detail: String,
        events: Vec<String>,
    ) {
        self.violate(invariant, at, detail, events);
    }

    /// The lease store answered `who`'s request at store time `now`.
    pub(crate) fn on_lease_result(&mut self, now: u64, who: Who<'_>, result: &LeaseResult) {
        match result {
            LeaseResult::Granted { token, expires_at } => {
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
                if let Some(prev) = self.lease.as_ref().filter(|l| now < l.expires_at) {
                    if prev.owner != *who.owner {
                        let events = self.lease_evidence();
                        let detail = format!(
                            "lease-store granted token {token} to {} while {} held token {} live until {}",
                            who.owner,
                            prev.owner,
                            prev.token,
                            secs(prev.expires_at)
                        );
                        self.violate(Invariant::LeaseExclusive, now, detail, events);
                    }
                }
                self.highest_granted = self.highest_granted.max(token);
                self.lease = Some(LeaseView {
                    owner: who.owner.clone(),
                    pid: who.pid,
                    token,
                    expires_at: expires_at.as_nanos(),
                    granted_at: now,
                });
            }
            LeaseResult::Renewed { token, expires_at } => {
                let token = token.get();
                // The common case: the live holder renews its own term.
                if let Some(view) = self
                    .lease
                    .as_mut()
                    .filter(|v| v.owner == *who.owner && now < v.expires_at && v.token == token)
                {
                    view.expires_at = expires_at.as_nanos();
                    return;
                }
                match self.lease.as_ref() {
                    Some(view) if view.owner == *who.owner && now < view.expires_at => {
                        let detail = format!(
                            "a renewal by {} changed token {} to {token}",
                            who.owner, view.token
                        );
                        let events = self.lease_evidence();
                        self.violate(Invariant::TokenMonotonic, now, detail, events);
                        self.highest_granted = self.highest_granted.max(token);
                    }
                    Some(view) if now < view.expires_at => {
                        let detail = format!(
                            "lease-store renewed token {token} for {} while {} held token {} live until {}",
                            who.owner,
                            view.owner,
                            view.token,
                            secs(view.expires_at)
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
                    pid: who.pid,
                    token,
                    expires_at: expires_at.as_nanos(),
                    granted_at,
                });
            }
            LeaseResult::Held { .. } => self.coverage.refused += 1,
        }
    }

    /// The lease store handled a release.
    pub(crate) fn on_release(
        &mut self,
        owner: &OwnerId,
        token: FencingToken,
        result: ReleaseResult,
    ) {
        if result == ReleaseResult::Released
            && self
                .lease
                .as_ref()
                .is_some_and(|l| l.owner == *owner && l.token == token.get())
        {
            self.lease = None;
        }
    }

    fn belief_change(&mut self, now: u64) {
        let elapsed = now.saturating_sub(self.last_belief_change);
        if self.believers >= 2 {
            self.overlap_ns += elapsed;
        } else if self.believers == 0 && self.cluster_started {
            // Leaderless counts from the first process start: the initial
            // election is leaderless time, and so is a run nobody ever led.
            self.leaderless_ns += elapsed;
        }
        self.last_belief_change = now;
    }

    /// A process of `who.node_name` started with owner id `who.owner`.
    pub(crate) fn on_process_started(&mut self, now: u64, who: Who<'_>) {
        if !self.cluster_started {
            self.cluster_started = true;
            self.last_belief_change = now;
        }
        if let Some(other) = self.live_owners.insert(who.owner.clone(), who.pid) {
            let detail = format!(
                "process {} started as owner {} while process {other} still runs as {}: two live processes share one owner id",
                who.pid, who.owner, who.owner
            );
            self.violate(Invariant::UniqueOwner, now, detail, Vec::new());
        }
    }

    /// The process `pid` running as `owner` died.
    pub(crate) fn on_process_ended(&mut self, owner: &OwnerId, pid: u32) {
        if self.live_owners.get(owner) == Some(&pid) {
            self.live_owners.remove(owner);
        }
    }

    /// `who` began to believe it leads with `token`.
    pub(crate) fn on_term_start(&mut self, now: u64, who: Who<'_>, token: FencingToken) {
        self.belief_change(now);
        self.believers += 1;
        let index = (self.terms.len() < MAX_TERMS_LISTED).then(|| {
            self.terms.push(Term {
                node: who.node_name.to_string(),
                owner: who.owner.to_string(),
                token: token.get(),
                start_ms: ms(now),
                end_ms: 0,
                end_reason: RUN_ENDED.to_string(),
            });
            self.terms.len() - 1
        });
        let pid = who.pid as usize;
        if self.open_terms.len() <= pid {
            self.open_terms.resize(pid + 1, None);
        }
        debug_assert!(
            self.open_terms[pid].is_none(),
            "a process has one term at a time"
        );
        self.open_terms[pid] = Some(OpenTerm {
            index,
            token: token.get(),
        });
        if self.last_term_owner.as_ref() != Some(who.owner) {
            if self.last_term_owner.is_some() {
                self.leader_changes += 1;
            }
            self.last_term_owner = Some(who.owner.clone());
        }
    }

    /// Process `pid` stopped believing it leads, for `reason`.
    pub(crate) fn on_term_end(&mut self, now: u64, pid: u32, reason: TermEnd<'_>, spurious: bool) {
        let Some(open) = self.open_terms.get_mut(pid as usize).and_then(Option::take) else {
            return;
        };
        self.belief_change(now);
        self.believers -= 1;
        if spurious {
            self.spurious_failovers += 1;
        }
        if reason == TermEnd::StepDown(&StepDownReason::LocalDeadline) {
            self.coverage.step_down_on_deadline += 1;
        }
        if let Some(term) = open.index.and_then(|i| self.terms.get_mut(i)) {
            debug_assert_eq!(term.token, open.token);
            term.end_ms = ms(now);
            term.end_reason = reason.name().to_string();
        }
    }

    /// The downstream handled a write.
    pub(crate) fn on_write(
        &mut self,
        now: u64,
        who: Who<'_>,
        token: FencingToken,
        unit: u64,
        outcome: &WriteOutcome,
        replaced: bool,
    ) {
        let token = token.get();
        match outcome {
            WriteOutcome::Accepted => self.on_accepted(now, who, token, unit),
            WriteOutcome::RejectedStale { .. } => {
                self.writes.rejected_stale += 1;
                self.coverage.stale_write_rejected += 1;
                // A zombie: its node already runs a newer incarnation.
                if replaced {
                    self.coverage.zombie_fenced += 1;
                }
            }
            WriteOutcome::RejectedWrongWriter { bound_to, .. } => {
                self.writes.rejected_wrong_writer += 1;
                let detail = format!(
                    "token {token} was presented by {} but is bound to {bound_to}: two owners hold one token",
                    who.owner
                );
                self.violate(Invariant::SingleWriter, now, detail, self.lease_evidence());
            }
        }
    }

    fn on_accepted(&mut self, now: u64, who: Who<'_>, token: u64, unit: u64) {
        self.writes.accepted += 1;
        let Some(fence) = self.fence.as_mut() else {
            self.fence = Some(FenceView::first_write(now, who, token));
            return;
        };
        if token > fence.token {
            if fence.owner != *who.owner {
                let gap = now.saturating_sub(fence.last_accept_at);
                self.max_failover_ns = self.max_failover_ns.max(gap);
                if self.failovers.len() < MAX_TERMS_LISTED {
                    self.failovers.push(Failover {
                        from: fence.node_name.clone(),
                        to: who.node_name.to_string(),
                        gap_ms: ms(gap),
                        from_token: fence.token,
                        to_token: token,
                        at_ms: ms(now),
                        from_owner: fence.owner.to_string(),
                        to_owner: who.owner.to_string(),
                    });
                }
            }
            *fence = FenceView::first_write(now, who, token);
            return;
        }
        if token == fence.token {
            fence.last_accept_at = now;
            if fence.owner != *who.owner && self.fencing {
                let detail = format!(
                    "downstream accepted token {token} from {} after accepting it from {}",
                    who.owner, fence.owner
                );
                self.violate(Invariant::SingleWriter, now, detail, Vec::new());
            }
            return;
        }
        // token < fence.token: an older term's write landed after a newer one's.
        let newer = format!(
            "{} downstream accepted the first write of token {} from {}",
            secs(fence.first_accept_at),
            fence.token,
            fence.owner
        );
        let late = format!(
            "{} downstream accepted unit {unit} with token {token} from {}",
            secs(now),
            who.owner
        );
        let (newer_token, newer_owner) = (fence.token, fence.owner.clone());
        if self.fencing {
            let detail = format!(
                "downstream accepted token {token} from {} below the highest accepted token {newer_token}",
                who.owner
            );
            self.violate(
                Invariant::SingleWriter,
                now,
                detail,
                vec![newer.clone(), late.clone()],
            );
        }
        let detail = format!(
            "{} wrote with token {token} after {newer_owner}'s term {newer_token} had written: split-brain",
            who.owner
        );
        self.violate(Invariant::SplitBrain, now, detail, vec![newer, late]);
    }

    /// A unit of work was cancelled because its term ended first.
    pub(crate) fn on_cancelled(&mut self) {
        self.writes.cancelled += 1;
    }

    pub(crate) fn on_joined(&mut self, node: u32) {
        self.membership.joins += 1;
        if self.left_nodes.remove(&node) {
            self.membership.flaps += 1;
        }
    }

    pub(crate) fn on_left(&mut self, node: u32, running: bool) {
        self.membership.leaves += 1;
        if running {
            self.membership.false_leaves += 1;
        }
        self.left_nodes.insert(node);
    }

    /// Folds the belief measures up to `now` (the end of the run) and ends
    /// the terms still open there.
    pub(crate) fn close(&mut self, now: u64) {
        self.belief_change(now);
        for open in self.open_terms.iter().flatten() {
            if let Some(term) = open.index.and_then(|i| self.terms.get_mut(i)) {
                term.end_ms = ms(now);
            }
        }
    }
}

/// Why a process stopped believing it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TermEnd<'a> {
    /// Its elector stepped down.
    StepDown(&'a StepDownReason),
    /// The process crashed.
    Crash,
}

impl TermEnd<'_> {
    /// The reason as reports spell it.
    pub(crate) fn name(self) -> &'static str {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn who<'a>(owner: &'a OwnerId, pid: u32) -> Who<'a> {
        Who {
            owner,
            node_name: "n0",
            pid,
        }
    }

    #[test]
    fn two_live_processes_with_one_owner_id_are_a_violation() {
        // Proves the `unique-owner` invariant: a second live process with a live process's owner id
        // is reported; one that starts after the first died is not.
        let owner = OwnerId::new("n0#1").expect("valid");
        let mut checker = Checker::new(true);
        checker.on_process_started(0, who(&owner, 0));
        checker.on_process_ended(&owner, 0);
        checker.on_process_started(5, who(&owner, 1));
        assert_eq!(checker.violations_total, 0);
        checker.on_process_started(7, who(&owner, 2));
        assert_eq!(checker.violations_total, 1);
        assert_eq!(checker.violations[0].invariant, "unique-owner");
        assert_eq!(checker.violations[0].at_ms, 0);
    }

    #[test]
    fn leaderless_time_counts_from_the_first_process_start() {
        // Proves that leaderless time starts with the cluster, so a run nobody led is all leaderless.
        let owner = OwnerId::new("n0#1").expect("valid");
        let mut checker = Checker::new(true);
        checker.on_process_started(1_000_000_000, who(&owner, 0));
        checker.close(11_000_000_000);
        assert_eq!(checker.leaderless_ns, 10_000_000_000);
    }
}
