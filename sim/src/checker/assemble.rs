//! From a checker's verdict to the run's [`Report`]: the checker judges, the
//! report layer below it only holds the result.

use super::{BeliefTerm, Verdict};
use crate::report::{ExpectOutcome, Figures, MembershipReport, Report};

/// The report of `verdict` with `figures`, judged against `expect`: the one
/// path from a checker's verdict to a [`Report`], for `run` and
/// `check-history` alike.
pub(crate) fn assemble(
    figures: Figures,
    verdict: Verdict,
    expect: &crate::scenario::Expectations,
) -> Report {
    let mut report = Report {
        scenario: figures.scenario,
        seed: figures.seed,
        virtual_ms: figures.virtual_ms,
        events: figures.events,
        trace_hash: figures.trace_hash,
        split_brain: verdict.split_brain_total > 0,
        violations: verdict.violations,
        terms: verdict.terms.iter().map(BeliefTerm::to_report).collect(),
        leader_changes: verdict.leader_changes,
        failovers: verdict.failovers,
        writes: verdict.writes,
        expect: ExpectOutcome::default(),
        violations_total: verdict.violations_total,
        fencing: figures.fencing,
        overlap_ms: crate::units::ms(verdict.overlap),
        leaderless_ms: crate::units::ms(verdict.leaderless),
        spurious_failovers: verdict.spurious_failovers,
        max_token: figures.max_token,
        max_token_race: None,
        membership: MembershipReport {
            live_at_end: figures.live_at_end,
            ..verdict.membership
        },
        coverage: verdict.coverage,
        unjudged_writes: figures.unjudged_writes,
        halted: None,
        anchors: Vec::new(),
        planted_bug: figures.planted_bug,
        history: figures.history,
    };
    report.expect = crate::report::expect::evaluate(
        expect,
        &report,
        verdict.split_brain_total,
        verdict.max_failover,
        verdict.overlap,
        verdict.leader_at_end,
    );
    report
}
