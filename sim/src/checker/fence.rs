//! `single-writer` and `split-brain`: the checker's own view of the
//! downstream fence, from the writes it handled; failovers and the write
//! counts are measured here.
//!
//! `split-brain` (an older term's write accepted after a newer term's) is
//! judged with fencing on or off — it is what unfenced runs exist to show;
//! `single-writer` only when the downstream fences.

use std::time::Duration;

use fenced::{FencingToken, OwnerId};

use super::findings::Findings;
use super::model::Model;
use crate::observation::{ProcessRef, SimTime};
use crate::report::{Failover, Invariant, Writes, MAX_TERMS_LISTED};
use crate::units::{ms, secs};

/// The checker's picture of the downstream fence.
#[derive(Clone, Debug)]
struct FenceView {
    token: u64,
    owner: OwnerId,
    node_name: String,
    first_accept_at: SimTime,
    last_accept_at: SimTime,
}

impl FenceView {
    /// The fence after the first accepted write of term `token` by `who`.
    fn first_write(now: SimTime, who: ProcessRef<'_>, token: u64) -> Self {
        FenceView {
            token,
            owner: who.owner.clone(),
            node_name: who.node.id.to_string(),
            first_accept_at: now,
            last_accept_at: now,
        }
    }
}

/// The fence part: the fence as the accepted writes left it, the hand-overs
/// between writers, and the write counts.
#[derive(Clone, Debug)]
pub(super) struct FenceCheck {
    /// Whether the downstream enforces fencing (`single-writer` is judged
    /// only then).
    fencing: bool,
    fence: Option<FenceView>,
    failovers: Vec<Failover>,
    max_failover: Duration,
    writes: Writes,
}

impl FenceCheck {
    /// A fence that has accepted nothing yet.
    pub(super) fn new(fencing: bool) -> Self {
        FenceCheck {
            fencing,
            fence: None,
            failovers: Vec::new(),
            max_failover: Duration::ZERO,
            writes: Writes::default(),
        }
    }

    /// The highest token accepted and when it was last accepted, if any.
    pub(super) fn last_accepted(&self) -> Option<(u64, SimTime)> {
        self.fence.as_ref().map(|f| (f.token, f.last_accept_at))
    }

    /// The failovers, the longest gap and the write counts, for the verdict.
    pub(super) fn measures(&self) -> (Vec<Failover>, Duration, Writes) {
        (
            self.failovers.clone(),
            self.max_failover,
            self.writes.clone(),
        )
    }

    /// A unit of work was cancelled before its write.
    pub(super) fn cancelled(&mut self) {
        self.writes.cancelled += 1;
    }

    /// The downstream refused `who`'s write as stale.
    pub(super) fn rejected_stale(
        &mut self,
        who: ProcessRef<'_>,
        model: &Model,
        sink: &mut Findings,
    ) {
        self.writes.rejected_stale += 1;
        sink.coverage.stale_write_rejected += 1;
        // A zombie: its node already runs a newer incarnation.
        if model.replaced(who.node.index, who.incarnation) {
            sink.coverage.zombie_fenced += 1;
        }
    }

    /// The downstream refused `who`'s write because `token` is bound to
    /// `bound_to`: two owners hold one token. `lease_evidence` is the lease
    /// as the checker last saw it granted.
    pub(super) fn rejected_wrong_writer(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: FencingToken,
        bound_to: &OwnerId,
        lease_evidence: Vec<String>,
        sink: &mut Findings,
    ) {
        self.writes.rejected_wrong_writer += 1;
        let detail = format!(
            "token {token} was presented by {} but is bound to {bound_to}: two owners hold one token",
            who.owner
        );
        sink.violate(Invariant::SingleWriter, now, detail, lease_evidence);
    }

    /// The downstream accepted `who`'s unit `unit` with `token`.
    pub(super) fn accepted(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: FencingToken,
        unit: u64,
        sink: &mut Findings,
    ) {
        let token = token.get();
        self.writes.accepted += 1;
        let Some(fence) = self.fence.as_mut() else {
            self.fence = Some(FenceView::first_write(now, who, token));
            return;
        };
        if token > fence.token {
            if fence.owner != *who.owner {
                let gap = now.saturating_since(fence.last_accept_at);
                self.max_failover = self.max_failover.max(gap);
                if self.failovers.len() < MAX_TERMS_LISTED {
                    self.failovers.push(Failover {
                        from: fence.node_name.clone(),
                        to: who.node.id.to_string(),
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
                sink.violate(Invariant::SingleWriter, now, detail, Vec::new());
            }
            return;
        }
        debug_assert!(token < fence.token);
        // An older term's write landed after a newer one's.
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
            sink.violate(
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
        sink.violate(Invariant::SplitBrain, now, detail, vec![newer, late]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, token, Cast};
    use crate::observation::Observation;
    use fenced::WriteOutcome;

    /// The fence part alone over a hand-written list of writes.
    fn judge(fencing: bool, list: &[(f64, Observation<'_>)]) -> (FenceCheck, Findings) {
        let (mut model, mut part, mut sink) = (
            Model::default(),
            FenceCheck::new(fencing),
            Findings::default(),
        );
        for (seconds, o) in list {
            let now = at(*seconds);
            model.observe(now, o);
            if let Observation::WriteHandled {
                from,
                token,
                unit,
                outcome,
            } = *o
            {
                match outcome {
                    WriteOutcome::Accepted => part.accepted(now, from, token, unit, &mut sink),
                    WriteOutcome::RejectedStale { .. } => {
                        part.rejected_stale(from, &model, &mut sink)
                    }
                    WriteOutcome::RejectedWrongWriter { bound_to, .. } => part
                        .rejected_wrong_writer(now, from, token, bound_to, Vec::new(), &mut sink),
                }
            }
        }
        (part, sink)
    }

    fn write<'a>(
        seconds: f64,
        from: ProcessRef<'a>,
        n: u64,
        outcome: &'a WriteOutcome,
    ) -> (f64, Observation<'a>) {
        let o = Observation::WriteHandled {
            from,
            token: token(n),
            unit: 1,
            outcome,
        };
        (seconds, o)
    }

    /// Proves the part alone: an older token accepted after a newer one is
    /// split-brain (and, fenced, a single-writer breach, listed first); the
    /// same writes with the old one rejected measure one failover and no
    /// breach.
    #[test]
    fn an_older_token_accepted_breaks_it_rejected_is_a_failover_only() {
        let cast = Cast::new();
        let accepted = WriteOutcome::Accepted;
        let stale = WriteOutcome::RejectedStale {
            stale: token(1),
            highest: token(2),
        };
        let almost = [
            write(1.0, cast.a(), 1, &accepted),
            write(2.5, cast.b(), 2, &accepted),
            write(3.0, cast.a(), 1, &stale),
        ];
        let (part, sink) = judge(true, &almost);
        assert!(invariants_of(&sink).is_empty());
        let (failovers, max_failover, writes) = part.measures();
        assert_eq!(
            (failovers.len(), max_failover),
            (1, Duration::from_millis(1500))
        );
        assert_eq!((writes.accepted, writes.rejected_stale), (2, 1));
        assert_eq!(part.last_accepted(), Some((2, at(2.5))));
        let mut broken = almost.to_vec();
        broken.push(write(4.0, cast.a(), 1, &accepted));
        let (_, sink) = judge(true, &broken);
        assert_eq!(invariants_of(&sink), ["single-writer", "split-brain"]);
        let (_, sink) = judge(false, &broken);
        assert_eq!(invariants_of(&sink), ["split-brain"]);
    }

    /// Proves a stale write from a node that already runs a newer life is
    /// counted as a fenced zombie — read from the model, not the part.
    #[test]
    fn a_stale_write_of_a_replaced_life_is_a_fenced_zombie() {
        let cast = Cast::new();
        let stale = WriteOutcome::RejectedStale {
            stale: token(1),
            highest: token(2),
        };
        let list = [
            (0.0, Observation::ProcessStarted(cast.a())),
            (1.0, Observation::ProcessCrashed(cast.a())),
            write(1.5, cast.a(), 1, &stale),
            (2.0, Observation::ProcessStarted(cast.a2())),
            write(3.0, cast.a(), 1, &stale),
        ];
        let (_, sink) = judge(true, &list);
        assert_eq!(sink.coverage.stale_write_rejected, 2);
        assert_eq!(sink.coverage.zombie_fenced, 1);
    }
}
