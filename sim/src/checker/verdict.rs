//! What the checker gives back: the [`Verdict`] and its [`BeliefTerm`]s.

use std::time::Duration;

use fenced::FencingToken;

use crate::observation::SimTime;
use crate::report::{Coverage, Failover, MembershipReport, Term, Violation, Writes};
use crate::units::ms;

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
    /// Invariant breaches in order (at most
    /// [`MAX_VIOLATIONS_LISTED`](crate::report::MAX_VIOLATIONS_LISTED)).
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
