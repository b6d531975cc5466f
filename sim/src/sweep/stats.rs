//! What the runs measure: each run's statistics ([`RunStats`]), their
//! totals per cell ([`CellTotals`], with exact percentiles of the failover
//! gaps in bounded memory), and the measured row of each cell
//! ([`ElectionRow`], [`MembershipRow`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::grid::ElectionCell;
use super::mix::FaultMix;
use crate::batch::{round_to, Histogram};
use crate::scenario::Scenario;
use crate::Report;

/// The counts a run adds to its cell: each is summed (saturating) over the
/// cell's runs.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    leader_changes: u64,
    spurious: u64,
    leaderless_ms: u64,
    overlap_ms: u64,
    rejected: u64,
    accepted: u64,
    violations: u64,
    leaves: u64,
    false_leaves: u64,
    flaps: u64,
}

impl Counts {
    /// Adds `other`'s counts to these.
    fn add(&mut self, other: &Counts) {
        let sums = [
            (&mut self.leader_changes, other.leader_changes),
            (&mut self.spurious, other.spurious),
            (&mut self.leaderless_ms, other.leaderless_ms),
            (&mut self.overlap_ms, other.overlap_ms),
            (&mut self.rejected, other.rejected),
            (&mut self.accepted, other.accepted),
            (&mut self.violations, other.violations),
            (&mut self.leaves, other.leaves),
            (&mut self.false_leaves, other.false_leaves),
            (&mut self.flaps, other.flaps),
        ];
        for (total, value) in sums {
            *total = total.saturating_add(value);
        }
    }
}

/// What one run contributes to its cell.
#[derive(Clone, Debug, Default)]
pub(super) struct RunStats {
    virtual_ms: u64,
    gaps_ms: Vec<u64>,
    counts: Counts,
}

impl RunStats {
    /// The statistics of a finished run's report.
    pub(super) fn of(r: &Report) -> Self {
        RunStats {
            virtual_ms: r.virtual_ms,
            gaps_ms: r.failovers.iter().map(|f| f.gap_ms).collect(),
            counts: Counts {
                leader_changes: r.leader_changes,
                spurious: r.spurious_failovers,
                leaderless_ms: r.leaderless_ms,
                overlap_ms: r.overlap_ms,
                rejected: r.writes.rejected_stale + r.writes.rejected_wrong_writer,
                accepted: r.writes.accepted,
                violations: r.violations_total,
                leaves: r.membership.leaves,
                false_leaves: r.membership.false_leaves,
                flaps: r.membership.flaps,
            },
        }
    }
}

/// What every run of one cell adds up to. Sweeps stream: each run's
/// statistics are folded in here as it finishes, in seed order, and
/// forgotten — the failover gaps as a count per distinct millisecond value,
/// which gives the exact percentiles of the full list in bounded memory.
#[derive(Clone, Debug, Default)]
pub(super) struct CellTotals {
    runs: u64,
    virtual_ms: u64,
    /// Failover gaps, ms: one per failover, exact.
    gaps_ms: Histogram,
    counts: Counts,
}

impl crate::batch::Totals<RunStats> for CellTotals {
    /// Folds one run's statistics in.
    fn add(&mut self, r: RunStats) {
        self.runs += 1;
        self.virtual_ms = self.virtual_ms.saturating_add(r.virtual_ms);
        for gap in r.gaps_ms {
            self.gaps_ms.add(gap);
        }
        self.counts.add(&r.counts);
    }
}

/// One cell of the election grid, measured over every seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElectionRow {
    /// The lease TTL, s.
    pub lease_ttl_s: f64,
    /// `renew_interval / lease_ttl`.
    pub renew_ratio: f64,
    /// `safety_margin / lease_ttl`.
    pub margin_ratio: f64,
    /// The renew interval, s.
    pub renew_interval_s: f64,
    /// The safety margin, s.
    pub safety_margin_s: f64,
    /// The retry interval, s.
    pub retry_interval_s: f64,
    /// Seeds run.
    pub seeds: u64,
    /// Virtual hours simulated in all.
    pub hours: f64,
    /// Hand-overs of the writes from one process to another.
    pub failovers: u64,
    /// Median failover gap (last accepted write of the old leader to the
    /// first of the new), s; `None` without failovers.
    pub gap_p50_s: Option<f64>,
    /// 99th-percentile failover gap, s.
    pub gap_p99_s: Option<f64>,
    /// Leader changes per hour: how twitchy the setting is.
    pub leader_changes_per_hour: f64,
    /// Terms lost while the leader and the store were healthy (no fault
    /// within one TTL; loss only), per hour.
    pub spurious_per_hour: f64,
    /// Fraction of the time no process believed it led.
    pub leaderless_fraction: f64,
    /// Fraction of the time two processes believed they led.
    pub overlap_fraction: f64,
    /// Writes the downstream rejected (stale tokens fencing caught: each
    /// would have been a split-brain write without fencing).
    pub rejected_writes: u64,
    /// The same, per hour.
    pub rejected_per_hour: f64,
    /// Accepted writes over the writes a never-failing leader would make.
    pub write_availability: f64,
    /// Invariant violations (must be 0).
    pub violations: u64,
}

/// One cell of the membership grid, measured over every seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MembershipRow {
    /// How long the registry keeps a silent node, s.
    pub liveness_ttl_s: f64,
    /// How often each node heartbeats, s.
    pub heartbeat_interval_s: f64,
    /// Heartbeats a node may miss before it is dropped
    /// (`liveness_ttl / heartbeat_interval`).
    pub misses_tolerated: f64,
    /// Seeds run.
    pub seeds: u64,
    /// Node-hours simulated in all.
    pub node_hours: f64,
    /// Nodes dropped from the live set (true and false).
    pub leaves: u64,
    /// Nodes dropped while a process of theirs was running (not paused, not
    /// crashed): a false "node down".
    pub false_leaves: u64,
    /// False "node down" verdicts per node-hour.
    pub false_leaves_per_node_hour: f64,
    /// All leaves per node-hour.
    pub leaves_per_node_hour: f64,
    /// Nodes that left and came back, per node-hour.
    pub flaps_per_node_hour: f64,
    /// Invariant violations (must be 0).
    pub violations: u64,
}

/// The row of election `cell`, measured over its runs' totals `t`.
pub(super) fn election_row(cell: &ElectionCell, mix: &FaultMix, t: &CellTotals) -> ElectionRow {
    let mut scenario = Scenario::new("row", mix.duration);
    cell.apply(&mut scenario);
    let e = &scenario.election;
    let total_ms = t.virtual_ms;
    let hours = total_ms as f64 / 3_600_000.0;
    let per_hour = |n: u64| if hours > 0.0 { n as f64 / hours } else { 0.0 };
    let fraction = |ms: u64| {
        if total_ms > 0 {
            ms as f64 / total_ms as f64
        } else {
            0.0
        }
    };
    let expected_writes = total_ms as f64 / scenario.work.write_interval.as_millis().max(1) as f64;
    ElectionRow {
        lease_ttl_s: round_to(cell.lease_ttl.as_secs_f64(), 3),
        renew_ratio: cell.renew_ratio,
        margin_ratio: cell.margin_ratio,
        renew_interval_s: round_to(e.renew_interval.as_secs_f64(), 3),
        safety_margin_s: round_to(e.effective_safety_margin().as_secs_f64(), 3),
        retry_interval_s: round_to(e.retry_interval.as_secs_f64(), 3),
        seeds: t.runs,
        hours: round_to(hours, 3),
        failovers: t.gaps_ms.len(),
        gap_p50_s: t.gaps_ms.percentile(50.0).map(|ms| ms as f64 / 1000.0),
        gap_p99_s: t.gaps_ms.percentile(99.0).map(|ms| ms as f64 / 1000.0),
        leader_changes_per_hour: round_to(per_hour(t.counts.leader_changes), 3),
        spurious_per_hour: round_to(per_hour(t.counts.spurious), 3),
        leaderless_fraction: round_to(fraction(t.counts.leaderless_ms), 6),
        overlap_fraction: round_to(fraction(t.counts.overlap_ms), 6),
        rejected_writes: t.counts.rejected,
        rejected_per_hour: round_to(per_hour(t.counts.rejected), 3),
        write_availability: if expected_writes > 0.0 {
            round_to(t.counts.accepted as f64 / expected_writes, 6)
        } else {
            0.0
        },
        violations: t.counts.violations,
    }
}

/// The row of the membership cell `(ttl, hb)` of a cluster of `nodes`,
/// measured over its runs' totals `t`.
pub(super) fn membership_row(
    ttl: Duration,
    hb: Duration,
    nodes: usize,
    t: &CellTotals,
) -> MembershipRow {
    let node_hours = t.virtual_ms as f64 / 3_600_000.0 * nodes as f64;
    let per = |n: u64| {
        if node_hours > 0.0 {
            round_to(n as f64 / node_hours, 3)
        } else {
            0.0
        }
    };
    MembershipRow {
        liveness_ttl_s: round_to(ttl.as_secs_f64(), 3),
        heartbeat_interval_s: round_to(hb.as_secs_f64(), 3),
        misses_tolerated: round_to(ttl.as_secs_f64() / hb.as_secs_f64(), 3),
        seeds: t.runs,
        node_hours: round_to(node_hours, 3),
        leaves: t.counts.leaves,
        false_leaves: t.counts.false_leaves,
        false_leaves_per_node_hour: per(t.counts.false_leaves),
        leaves_per_node_hour: per(t.counts.leaves),
        flaps_per_node_hour: per(t.counts.flaps),
        violations: t.counts.violations,
    }
}
