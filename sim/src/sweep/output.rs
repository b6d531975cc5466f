//! A sweep's results as text: one CSV line per cell ([`ELECTION_CSV_HEADER`],
//! [`MEMBERSHIP_CSV_HEADER`]) and one JSON object, through [`SweepResults`];
//! what each grid adds to them, through [`Grid`].

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use super::grid::{ElectionGrid, MembershipGrid};
use super::stats::{ElectionRow, MembershipRow};
use super::{Grid, Skipped, Sweep, SweepResults};

/// The CSV header of the election sweep (the fields of [`ElectionRow`]).
pub const ELECTION_CSV_HEADER: &str = "lease_ttl_s,renew_ratio,margin_ratio,renew_interval_s,safety_margin_s,retry_interval_s,seeds,hours,failovers,gap_p50_s,gap_p99_s,leader_changes_per_hour,spurious_per_hour,leaderless_fraction,overlap_fraction,rejected_writes,rejected_per_hour,write_availability,violations";

/// The CSV header of the membership sweep (the fields of
/// [`MembershipRow`]).
pub const MEMBERSHIP_CSV_HEADER: &str = "liveness_ttl_s,heartbeat_interval_s,misses_tolerated,seeds,node_hours,leaves,false_leaves,false_leaves_per_node_hour,leaves_per_node_hour,flaps_per_node_hour,violations";

/// `header`, then one line per row with the row's fields of those names
/// (empty for `None`).
fn csv<R: Serialize>(header: &str, rows: &[R]) -> String {
    let mut out = format!("{header}\n");
    for row in rows {
        let value = serde_json::to_value(row).unwrap_or_default();
        let cells: Vec<String> = header
            .split(',')
            .map(|key| match &value[key] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

fn seconds(list: &[Duration]) -> Vec<f64> {
    list.iter().map(Duration::as_secs_f64).collect()
}

impl<G: Grid> SweepResults for Sweep<G> {
    fn to_csv(&self) -> String {
        csv(G::CSV_HEADER, &self.rows)
    }

    fn to_json(&self) -> serde_json::Value {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let every = |d: Option<Duration>| d.map(ms);
        let mix = &self.mix;
        serde_json::json!({
            "sweep": G::KIND,
            "mix": {
                "description": mix.describe(),
                "nodes": mix.nodes,
                "duration_ms": ms(mix.duration),
                "pause_every_ms": every(mix.pause_every),
                "pause_length": mix.pause_length.to_string(),
                "crash_every_ms": every(mix.crash_every),
                "restart_after": mix.restart_after.to_string(),
                "spike_every_ms": every(mix.spike_every),
                "spike_length": mix.spike_length.to_string(),
                "loss": mix.loss,
            },
            "seeds": {"start": self.seeds.start, "count": self.seeds.count},
            "grid": self.grid.to_json(),
            "rows": self.rows,
            "skipped": self.skipped,
        })
    }

    fn to_svg(&self, command: &str) -> String {
        G::chart(self, command)
    }

    fn violations(&self) -> u64 {
        self.rows.iter().map(G::violations).sum()
    }

    fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    fn runs(&self) -> u64 {
        (self.rows.len() as u64).saturating_mul(self.seeds.count)
    }
}

impl Grid for ElectionGrid {
    type Row = ElectionRow;
    const KIND: &'static str = "election";
    const CSV_HEADER: &'static str = ELECTION_CSV_HEADER;

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "lease_ttls_s": seconds(&self.ttls),
            "renew_ratios": self.renew_ratios,
            "margin_ratios": self.margin_ratios,
            "retry_ratio": self.retry_ratio,
        })
    }

    fn chart(sweep: &Sweep<Self>, command: &str) -> String {
        sweep.chart(command)
    }

    fn violations(row: &ElectionRow) -> u64 {
        row.violations
    }
}

impl Grid for MembershipGrid {
    type Row = MembershipRow;
    const KIND: &'static str = "membership";
    const CSV_HEADER: &'static str = MEMBERSHIP_CSV_HEADER;

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "liveness_ttls_s": seconds(&self.liveness_ttls),
            "heartbeat_intervals_s": seconds(&self.heartbeats),
        })
    }

    fn chart(sweep: &Sweep<Self>, command: &str) -> String {
        sweep.chart(command)
    }

    fn violations(row: &MembershipRow) -> u64 {
        row.violations
    }
}
