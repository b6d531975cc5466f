//! What one run contributes to its cell ([`SeedStats`]), a cell's totals
//! over its seeds in bounded memory ([`CellTotals`], with a [`Histogram`]
//! of three significant digits for percentiles), and the measured cell
//! ([`Cell`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::scenarios::CutOff;
use crate::batch::{round_to, three_significant_digits, Histogram};
use crate::report::{Invariant, CRASHED, STOPPED};
use crate::Report;

/// Whether run `r` was stuck: `None` when no failover was due (no `cut`,
/// or its node held no term when the fault began), else `Some(stuck)`.
///
/// A failover is **due** when `cut` is given and its node held a term when
/// the fault began; the run is **stuck** when one was due and no other
/// process (another node, or another incarnation of the node) began a term
/// between the fault's start and its end. `fenced-lab matrix` judges a real
/// run's report by the same rule.
///
/// A term that the fault itself ended — a crash or a stop at the fault's
/// instant, which the simulator records as ending at that very millisecond
/// — was held when the fault began. (Before, such a term counted as over,
/// so a crashed leader's failover was never due in a simulation, while a
/// real run, whose killed process cannot say when its term ended, ends it
/// at its last history line and counted it: `fenced-lab matrix` found the
/// disagreement on *leader-crash*.)
pub fn failover_stuck(r: &Report, cut: Option<&CutOff>) -> Option<bool> {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let c = cut?;
    let at = ms(c.at);
    let end = ms(c.end);
    let ended_by_the_fault = |t: &crate::report::Term| {
        t.end_ms == at && [CRASHED, STOPPED].contains(&t.end_reason.as_str())
    };
    let holder = r.terms.iter().find(|t| {
        t.node == c.node && t.start_ms <= at && (at < t.end_ms || ended_by_the_fault(t))
    })?;
    let owner = holder.owner.as_str();
    Some(
        !r.terms
            .iter()
            .any(|t| t.owner != owner && at <= t.start_ms && t.start_ms <= end),
    )
}

/// What one run of a cell measured.
#[derive(Clone, Debug, Default)]
pub(super) struct SeedStats {
    split_brain: bool,
    overlap_ms: u64,
    gaps_ms: Vec<u64>,
    leader_changed: bool,
    due: bool,
    stuck: bool,
    other_violations: u64,
    other_invariants: BTreeSet<String>,
    leaderless_ms: u64,
    virtual_ms: u64,
    events: u64,
}

/// Violations of `r` other than split-brain writes. The report lists at
/// most 100; when it lists them all they are counted, otherwise the count
/// of split-brain writes comes from the expectation the compare leaves at
/// its default ("none"), whose unmet line states it.
fn other_violations(r: &Report) -> u64 {
    let split = Invariant::SplitBrain.name();
    let listed_split = r.violations.iter().filter(|v| v.invariant == split).count() as u64;
    if r.violations.len() as u64 >= r.violations_total {
        return r.violations_total.saturating_sub(listed_split);
    }
    let stated = r.expect.unmet.iter().find_map(|line| {
        let rest = line.strip_prefix("split_brain: expected none, but ")?;
        rest.split(' ').next()?.parse::<u64>().ok()
    });
    r.violations_total
        .saturating_sub(stated.unwrap_or(listed_split))
}

impl SeedStats {
    /// The measures of `r`, a run whose fault `cut` (if any) should have
    /// made the design fail over.
    ///
    /// A failover is **due** when `cut` is given and its node held a term
    /// when the fault began; the run is **stuck** when one was due and no
    /// other process (another node, or another incarnation of the node)
    /// began a term between the fault's start and its end.
    pub(super) fn of(r: &Report, cut: Option<&CutOff>) -> Self {
        let stuck = failover_stuck(r, cut);
        SeedStats {
            split_brain: r.split_brain,
            overlap_ms: r.overlap_ms,
            gaps_ms: r.failovers.iter().map(|f| f.gap_ms).collect(),
            leader_changed: r.leader_changes > 0,
            due: stuck.is_some(),
            stuck: stuck.unwrap_or(false),
            other_violations: other_violations(r),
            other_invariants: r
                .violations
                .iter()
                .filter(|v| v.invariant != Invariant::SplitBrain.name())
                .map(|v| v.invariant.clone())
                .collect(),
            leaderless_ms: r.leaderless_ms,
            virtual_ms: r.virtual_ms,
            events: r.events,
        }
    }
}

/// Every run of one cell, folded in as it finishes and forgotten.
#[derive(Clone, Debug, Default)]
pub(super) struct CellTotals {
    seeds: u64,
    split_brain: u64,
    overlap_ms: u64,
    /// Each seed's overlap, ms, to three significant digits: memory bounded
    /// by the range of the values, not by the number of seeds.
    overlap: Histogram,
    /// Each failover's gap, ms, to three significant digits.
    gaps: Histogram,
    leader_changed: u64,
    due: u64,
    stuck: u64,
    other_violations: u64,
    with_other_violations: u64,
    /// The invariants of those violations (at most the seven there are).
    other_invariants: BTreeSet<String>,
    leaderless_ms: u64,
    virtual_ms: u64,
    pub(super) events: u64,
}

impl crate::batch::Totals<SeedStats> for CellTotals {
    /// Folds one run in.
    fn add(&mut self, s: SeedStats) {
        self.seeds += 1;
        self.split_brain += u64::from(s.split_brain);
        self.overlap_ms = self.overlap_ms.saturating_add(s.overlap_ms);
        self.overlap.add(three_significant_digits(s.overlap_ms));
        for gap in s.gaps_ms {
            self.gaps.add(three_significant_digits(gap));
        }
        self.leader_changed += u64::from(s.leader_changed);
        self.due += u64::from(s.due);
        self.stuck += u64::from(s.stuck);
        self.other_violations = self.other_violations.saturating_add(s.other_violations);
        self.with_other_violations += u64::from(s.other_violations > 0);
        self.other_invariants.extend(s.other_invariants);
        self.leaderless_ms = self.leaderless_ms.saturating_add(s.leaderless_ms);
        self.virtual_ms = self.virtual_ms.saturating_add(s.virtual_ms);
        self.events = self.events.saturating_add(s.events);
    }
}

/// One cell of the matrix: one scenario run by one design over every seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The scenario (the matrix's row).
    pub scenario: String,
    /// The design (the matrix's column).
    pub protocol: String,
    /// The fault as this design's runs had it (lengths resolved).
    pub fault: String,
    /// The design's expiry E, s.
    pub expiry_s: f64,
    /// Whether the downstream checked the design's token.
    pub fenced: bool,
    /// Seeds run.
    pub seeds: u64,
    /// Fraction of seeds with a split-brain write (an older term's write
    /// accepted after a newer term's).
    pub split_brain_rate: f64,
    /// Mean belief overlap per seed (time two processes both believed they
    /// led), s.
    pub overlap_mean_s: f64,
    /// 99th-percentile belief overlap per seed, s.
    pub overlap_p99_s: f64,
    /// Fraction of seeds in which the leader changed at least once.
    pub failover_rate: f64,
    /// Failovers over every seed (hand-overs of the writes).
    pub failovers: u64,
    /// Median failover gap (last accepted write of the old leader to the
    /// first of the new) over every failover of every seed, s; `None`
    /// without failovers.
    pub gap_p50_s: Option<f64>,
    /// 99th-percentile failover gap, s.
    pub gap_p99_s: Option<f64>,
    /// Seeds whose fault should have made the design fail over: the leader
    /// was stalled, cut off or down for longer than E.
    pub failover_due: u64,
    /// Of those, the fraction in which no other process began a term while
    /// the fault lasted; `None` when no seed had a failover due.
    pub stuck_rate: Option<f64>,
    /// Fraction of the simulated time nobody believed it led.
    pub leaderless_fraction: f64,
    /// Violations other than split-brain writes, over every seed.
    pub other_violations: u64,
    /// Seeds with such a violation.
    pub seeds_with_other_violations: u64,
    /// Which invariants those were, space-separated (of the violations each
    /// report lists: its first 100).
    pub other_invariants: String,
}

/// What a cell is, besides its measures.
pub(super) struct CellLabel<'a> {
    pub(super) scenario: &'a str,
    pub(super) protocol: &'a str,
    pub(super) fault: String,
    pub(super) expiry_s: f64,
    pub(super) fenced: bool,
}

/// The cell `label` measured over its totals `t`.
pub(super) fn cell(label: CellLabel<'_>, t: &CellTotals) -> Cell {
    let n = t.seeds.max(1) as f64;
    let s = |ms: u64| round_to(ms as f64 / 1000.0, 3);
    Cell {
        scenario: label.scenario.to_string(),
        protocol: label.protocol.to_string(),
        fault: label.fault,
        expiry_s: round_to(label.expiry_s, 3),
        fenced: label.fenced,
        seeds: t.seeds,
        split_brain_rate: round_to(t.split_brain as f64 / n, 4),
        overlap_mean_s: round_to(t.overlap_ms as f64 / n / 1000.0, 3),
        overlap_p99_s: t.overlap.percentile(99.0).map_or(0.0, s),
        failover_rate: round_to(t.leader_changed as f64 / n, 4),
        failovers: t.gaps.len(),
        gap_p50_s: t.gaps.percentile(50.0).map(s),
        gap_p99_s: t.gaps.percentile(99.0).map(s),
        failover_due: t.due,
        stuck_rate: (t.due > 0).then(|| round_to(t.stuck as f64 / t.due as f64, 4)),
        leaderless_fraction: if t.virtual_ms > 0 {
            round_to(t.leaderless_ms as f64 / t.virtual_ms as f64, 4)
        } else {
            0.0
        },
        other_violations: t.other_violations,
        seeds_with_other_violations: t.with_other_violations,
        other_invariants: t
            .other_invariants
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" "),
    }
}
