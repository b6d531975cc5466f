//! `single-writer` and `split-brain`: the checker's own view of the
//! downstream fence, from the writes it handled; failovers are measured here.

use fenced::{FencingToken, OwnerId, WriteOutcome};

use super::Checker;
use crate::observation::{ProcessRef, SimTime};
use crate::report::{Failover, Invariant, MAX_TERMS_LISTED};
use crate::units::{ms, secs};

/// The checker's picture of the downstream fence.
#[derive(Clone, Debug)]
pub(super) struct FenceView {
    pub(super) token: u64,
    owner: OwnerId,
    node_name: String,
    first_accept_at: SimTime,
    pub(super) last_accept_at: SimTime,
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

impl Checker {
    /// The downstream handled a write.
    pub(super) fn on_write(
        &mut self,
        now: SimTime,
        who: ProcessRef<'_>,
        token: FencingToken,
        unit: u64,
        outcome: &WriteOutcome,
    ) {
        let token = token.get();
        match outcome {
            WriteOutcome::Accepted => self.on_accepted(now, who, token, unit),
            WriteOutcome::RejectedStale { .. } => {
                self.writes.rejected_stale += 1;
                self.coverage.stale_write_rejected += 1;
                // A zombie: its node already runs a newer incarnation.
                if self.lives.replaced(who.node.index, who.incarnation) {
                    self.coverage.zombie_fenced += 1;
                }
            }
            WriteOutcome::RejectedWrongWriter { bound_to, .. } => {
                self.writes.rejected_wrong_writer += 1;
                let detail = format!(
                    "token {token} was presented by {} but is bound to {bound_to}: two owners hold one token",
                    who.owner
                );
                let events = self.lease_events();
                self.violate(Invariant::SingleWriter, now, detail, events);
            }
        }
    }

    fn on_accepted(&mut self, now: SimTime, who: ProcessRef<'_>, token: u64, unit: u64) {
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
            if fence.owner != *who.owner && self.settings.fencing {
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
        if self.settings.fencing {
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
}
