//! The election sweep's chart: one heat map per metric (TTL across, renew
//! ratio down; a block per safety margin), then the trade-off scatter
//! (`scatter`), under a header that says in a sentence or two what the
//! sweep shows ([`ElectionSweep::summary`]).

use std::fmt::Write as _;

use super::{
    duration_labels, fmt_percent, fmt_rate, fmt_secs, header_lines, index_of, start_chart,
    ttl_label, Axes, Layout, Metric, CHART_W,
};
use crate::svg::document::INK;
use crate::sweep::{ElectionRow, ElectionSweep};

/// The scatter's height, with the room above it.
const SCATTER_H: f64 = 340.0;

impl ElectionSweep {
    /// The chart: one heat map per metric (TTL across, renew ratio down; a
    /// block per safety margin) and a scatter of median failover gap against
    /// leader changes per hour, one line per renew ratio. `command` is the
    /// command line shown in the title.
    pub(in crate::sweep) fn chart(&self, command: &str) -> String {
        let axes = Axes {
            cols: duration_labels(&self.grid.ttls),
            rows: self
                .grid
                .renew_ratios
                .iter()
                .map(|r| format!("{r}"))
                .collect(),
            col_title: "lease_ttl →",
            row_title: "renew ÷ ttl",
        };
        let place = |r: &ElectionRow| {
            (
                self.grid
                    .renew_ratios
                    .iter()
                    .position(|x| *x == r.renew_ratio),
                index_of(&self.grid.ttls, r.lease_ttl_s),
            )
        };
        let metrics: [Metric<'_, ElectionRow>; 6] = [
            Metric {
                class: "gap-p50",
                title: "Median failover gap",
                hint: "last write of the old leader → first of the new",
                value: &|r| r.gap_p50_s,
                format: &fmt_secs,
            },
            Metric {
                class: "gap-p99",
                title: "p99 failover gap",
                hint: "the slow tail of recovery",
                value: &|r| r.gap_p99_s,
                format: &fmt_secs,
            },
            Metric {
                class: "leader-changes",
                title: "Leader changes per hour",
                hint: "twitchiness: every change is a failover",
                value: &|r| Some(r.leader_changes_per_hour),
                format: &fmt_rate,
            },
            Metric {
                class: "spurious",
                title: "Spurious failovers per hour",
                hint: "leader lost with no fault near it (message loss)",
                value: &|r| Some(r.spurious_per_hour),
                format: &fmt_rate,
            },
            Metric {
                class: "leaderless",
                title: "Leaderless time",
                hint: "share of time nobody believes it leads",
                value: &|r| Some(r.leaderless_fraction),
                format: &fmt_percent,
            },
            Metric {
                class: "rejected",
                title: "Stale writes fenced per hour",
                hint: "each a split-brain write without fencing",
                value: &|r| Some(r.rejected_per_hour),
                format: &fmt_rate,
            },
        ];
        let layout = Layout::new(&axes, 6);
        let block_h = 30.0 + layout.rows_height(metrics.len());
        let mut lines = header_lines(
            self.seeds,
            &self.mix,
            &format!(
                "retry every {} × TTL · fencing on · light is better in every panel",
                self.grid.retry_ratio
            ),
            command,
        );
        lines.extend(self.summary().into_iter().map(|s| (s, false)));
        let body_h = self.grid.margin_ratios.len() as f64 * block_h + SCATTER_H + 16.0;
        let (mut doc, mut y) = start_chart(
            "Lease TTL trade-off",
            "Lease TTL: fast failover vs. twitchiness",
            &lines,
            body_h,
        );
        for &margin in &self.grid.margin_ratios {
            y += 8.0;
            doc.text(
                30.0,
                y + 4.0,
                &format!(
                    "class=\"block-title\" font-size=\"13\" font-weight=\"bold\" fill=\"{INK}\""
                ),
                &format!("safety margin = {margin} × TTL"),
            );
            y += 18.0;
            let block: Vec<&ElectionRow> = self
                .rows
                .iter()
                .filter(|r| r.margin_ratio == margin)
                .collect();
            layout.draw(&mut doc, y, &axes, &metrics, &block, &place);
            y += layout.rows_height(metrics.len()) + 4.0;
        }
        self.scatter(&mut doc, 30.0, y, CHART_W - 60.0, SCATTER_H - 10.0);
        doc.finish()
    }

    /// What the sweep shows, in a sentence or two: the shortest against the
    /// longest TTL at the lowest renew ratio, and the spurious failovers of
    /// the highest renew ratio.
    pub fn summary(&self) -> Option<String> {
        let ratio = self
            .grid
            .renew_ratios
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let top = self
            .grid
            .renew_ratios
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let margin = *self.grid.margin_ratios.first()?;
        let at = |ratio: f64| -> Vec<&ElectionRow> {
            self.rows
                .iter()
                .filter(|r| r.renew_ratio == ratio && r.margin_ratio == margin)
                .collect()
        };
        let low = at(ratio);
        let (short, long) = (low.first()?, low.last()?);
        if short.lease_ttl_s == long.lease_ttl_s {
            return None;
        }
        let mut text = format!(
            "At renew = {ratio} × TTL, TTL {} fails over in {} (median) but changes leader {} times an hour; TTL {} takes {} with {}/h and is leaderless {} of the time (vs {}).",
            ttl_label(short.lease_ttl_s),
            fmt_secs(short.gap_p50_s?),
            fmt_rate(short.leader_changes_per_hour),
            ttl_label(long.lease_ttl_s),
            fmt_secs(long.gap_p50_s?),
            fmt_rate(long.leader_changes_per_hour),
            fmt_percent(long.leaderless_fraction),
            fmt_percent(short.leaderless_fraction),
        );
        if let Some(worst) = at(top)
            .into_iter()
            .filter(|r| r.spurious_per_hour > 0.0)
            .max_by(|a, b| a.spurious_per_hour.total_cmp(&b.spurious_per_hour))
        {
            if top > ratio {
                let _ = write!(
                    text,
                    " Renewing at {top} × TTL leaves no room for one lost renewal: {} spurious failovers/h at TTL {}.",
                    fmt_rate(worst.spurious_per_hour),
                    ttl_label(worst.lease_ttl_s)
                );
            }
        }
        Some(text)
    }
}
