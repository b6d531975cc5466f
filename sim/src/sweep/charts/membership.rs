//! The membership sweep's chart: false and all "node down" verdicts per
//! node-hour, and the detection bound each liveness TTL implies, over
//! liveness TTL × heartbeat interval.

use super::{
    duration_labels, fmt_rate, fmt_secs, header_lines, index_of, start_chart, Axes, Layout, Metric,
};
use crate::sweep::{MembershipRow, MembershipSweep};

impl MembershipSweep {
    /// The chart: false "node down" per node-hour and all leaves per
    /// node-hour over liveness TTL × heartbeat interval, with the detection
    /// bound each TTL implies. `command` is shown in the title.
    pub(in crate::sweep) fn chart(&self, command: &str) -> String {
        let axes = Axes {
            cols: duration_labels(&self.grid.liveness_ttls),
            rows: duration_labels(&self.grid.heartbeats),
            col_title: "liveness_ttl →",
            row_title: "heartbeat",
        };
        let place = |r: &MembershipRow| {
            (
                index_of(&self.grid.heartbeats, r.heartbeat_interval_s),
                index_of(&self.grid.liveness_ttls, r.liveness_ttl_s),
            )
        };
        let metrics: [Metric<'_, MembershipRow>; 3] = [
            Metric {
                class: "false-leaves",
                title: "False \u{201c}node down\u{201d} per node-hour",
                hint: "dropped while its process was running",
                value: &|r| Some(r.false_leaves_per_node_hour),
                format: &fmt_rate,
            },
            Metric {
                class: "leaves",
                title: "All \u{201c}node down\u{201d} per node-hour",
                hint: "true (crashed, paused) and false",
                value: &|r| Some(r.leaves_per_node_hour),
                format: &fmt_rate,
            },
            Metric {
                class: "detection",
                title: "Time to notice a crash",
                hint: "at most liveness_ttl (+ a heartbeat's latency)",
                value: &|r| Some(r.liveness_ttl_s),
                format: &fmt_secs,
            },
        ];
        let layout = Layout::new(&axes, 3);
        let mut lines = header_lines(
            self.seeds,
            &self.mix,
            "election: lease_ttl 30s, renew every 10s · n/a: heartbeat not below the TTL",
            command,
        );
        lines.push((
            "A short liveness TTL notices a crash fast but declares healthy nodes down whenever heartbeats stall (lease-store stalls, lost messages).".to_string(),
            false,
        ));
        let (mut doc, y) = start_chart(
            "Membership trade-off",
            "Membership: fast detection vs. false \u{201c}node down\u{201d}",
            &lines,
            layout.rows_height(metrics.len()) + 10.0,
        );
        let rows: Vec<&MembershipRow> = self.rows.iter().collect();
        layout.draw(&mut doc, y, &axes, &metrics, &rows, &place);
        doc.finish()
    }
}
