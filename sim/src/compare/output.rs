//! A comparison's results as text (the matrices and a line per cell), one
//! JSON object, and CSV (one line per cell, [`CSV_HEADER`]).

use std::fmt::Write as _;

use super::stats::Cell;
use super::{Matrix, MAX_RUN};
use crate::svg::time::time_label;
use crate::units::human;

/// The CSV header: the fields of [`Cell`], in order.
pub const CSV_HEADER: &str = "scenario,protocol,fault,expiry_s,fenced,seeds,split_brain_rate,overlap_mean_s,overlap_p99_s,failover_rate,failovers,gap_p50_s,gap_p99_s,failover_due,stuck_rate,leaderless_fraction,other_violations,seeds_with_other_violations,other_invariants";

/// How a matrix writes a cell.
type CellText = dyn Fn(&Cell) -> String;

/// How the built-in scenarios' runs are set up, in one paragraph.
pub(super) const SETUP: &str =
    "Three nodes: node-a starts first and leads, node-b and node-c start \
at 1 s. The leader starts a unit of work every second and sends its write 200 ms later. Each fault \
begins 50–149 ms into node-a's first unit of work at or after 12–31 s (anchored on the unit, so a \
write is in flight whatever the design's first lock costs; the second and the delay are drawn from \
the seed, the same for every design). A run lasts through its fault, one expiry and a minute, at \
most 8h. \
client-go runs with run_again = true (the application loops, as a Deployment restarts it).";

/// `rate` as a percentage: `0`, `<1%`, `20%`, `100%`.
pub(super) fn percent(rate: f64) -> String {
    if rate == 0.0 {
        "0".to_string()
    } else if rate < 0.01 {
        "<1%".to_string()
    } else {
        format!("{:.0}%", rate * 100.0)
    }
}

/// Seconds as a short span to about three significant digits: `0`,
/// `850ms`, `2.08s`, `23.3s`, `1m11s`, `2h11m`.
pub(super) fn span(s: f64) -> String {
    let trim = |t: String| t.trim_end_matches('0').trim_end_matches('.').to_string();
    if s <= 0.0 {
        "0".to_string()
    } else if s < 1.0 {
        format!("{}ms", (s * 1000.0).round())
    } else if s < 10.0 {
        format!("{}s", trim(format!("{s:.2}")))
    } else if s < 59.95 {
        format!("{}s", trim(format!("{s:.1}")))
    } else if s < 3599.5 {
        let whole = s.round() as u64;
        match whole % 60 {
            0 => format!("{}m", whole / 60),
            sec => format!("{}m{sec}s", whole / 60),
        }
    } else {
        let minutes = (s / 60.0).round() as u64;
        match minutes % 60 {
            0 => format!("{}h", minutes / 60),
            m => format!("{}h{m}m", minutes / 60),
        }
    }
}

/// The failover cell of the text matrix and the chart: the median gap, or
/// `stuck` (with its rate when not every due seed was), or `–` when the
/// leader never changed.
pub(super) fn failover_text(c: &Cell) -> String {
    let gap = c.gap_p50_s.map(span);
    match (c.stuck_rate, gap) {
        (Some(r), _) if r >= 1.0 => "stuck".to_string(),
        (Some(r), Some(g)) if r > 0.0 => format!("{g}, stuck {}", percent(r)),
        (Some(r), None) if r > 0.0 => format!("stuck {}", percent(r)),
        (_, Some(g)) => g,
        (_, None) => "–".to_string(),
    }
}

impl Matrix {
    /// Who was fenced, in a sentence.
    pub(super) fn fencing_line(&self) -> String {
        if !self.fenced {
            return "Downstream unfenced for every design: the matrix shows what each design \
                    lets happen (--fenced fences the designs with a token by it)."
                .to_string();
        }
        let names = |fenced: bool| {
            self.columns
                .iter()
                .filter(|c| c.fenced == fenced)
                .map(|c| c.protocol.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (with, without) = (names(true), names(false));
        let mut line = format!("Downstream fenced by the design's own token: {with}.");
        if !without.is_empty() {
            let _ = write!(line, " No token, so unfenced: {without}.");
        }
        line
    }

    /// Each design's expiry, in a sentence.
    pub(super) fn expiry_line(&self) -> String {
        let parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                format!(
                    "{} {} ({})",
                    c.protocol,
                    time_label((c.expiry_s * 1e9).round() as u64),
                    c.expiry_source
                )
            })
            .collect();
        format!("E, each design's expiry: {}.", parts.join("; "))
    }

    /// The heading line: what ran.
    pub(super) fn heading(&self) -> String {
        let last = self.seeds.start.saturating_add(self.seeds.count - 1);
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "{} × {} × {} (seeds {}–{})",
            plural(self.rows.len(), "scenario", "scenarios"),
            plural(self.columns.len(), "design", "designs"),
            plural(
                usize::try_from(self.seeds.count).unwrap_or(usize::MAX),
                "seed",
                "seeds"
            ),
            self.seeds.start,
            last
        )
    }

    /// The text report: what ran, three matrices (split-brain rate,
    /// failover, belief overlap) and a line per cell.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Lock designs compared: {}.", self.heading());
        let _ = writeln!(out, "{}", self.fencing_line());
        let _ = writeln!(out, "{}", self.expiry_line());
        if self.rows.iter().any(|r| !r.length.is_empty()) {
            let _ = writeln!(out, "{SETUP}");
        }
        let _ = writeln!(out);
        let tables: [(&str, &CellText); 3] = [
            (
                "Split-brain rate: seeds in which an older term's write landed after a newer one's",
                &|c| percent(c.split_brain_rate),
            ),
            (
                "Failover: median gap (last write of the old leader to the first of the new); \
                 stuck: a failover was due and none began while the fault lasted",
                &failover_text,
            ),
            (
                "Belief overlap, mean per seed: two processes both believing they lead",
                &|c| span(c.overlap_mean_s),
            ),
        ];
        for (title, value) in tables {
            let _ = writeln!(out, "{title}");
            self.matrix_text(&mut out, value);
            let _ = writeln!(out);
        }
        self.rows_text(&mut out);
        out
    }

    /// One matrix: a row per scenario (with its fault's length), a column
    /// per design.
    fn matrix_text(&self, out: &mut String, value: &CellText) {
        let names: Vec<&str> = self.columns.iter().map(|c| c.protocol.as_str()).collect();
        let mut grid: Vec<Vec<String>> = Vec::new();
        let mut header = vec!["scenario".to_string(), "fault".to_string()];
        header.extend(names.iter().map(|n| n.to_string()));
        grid.push(header);
        for (r, row) in self.rows.iter().enumerate() {
            let mut line = vec![row.name.clone(), row.length.clone()];
            for c in 0..self.columns.len() {
                line.push(self.cell(r, c).map_or(String::new(), value));
            }
            grid.push(line);
        }
        write_aligned(out, &grid, 2);
    }

    /// Every measure of every cell, a line each.
    fn rows_text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "Every cell (E: the design's expiry; due: seeds in which a failover was due)"
        );
        let mut grid = vec![[
            "scenario",
            "protocol",
            "fault",
            "E",
            "split-brain",
            "overlap mean",
            "overlap p99",
            "failed over",
            "gap p50",
            "gap p99",
            "due",
            "stuck",
            "leaderless",
            "other violations",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()];
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("–".to_string(), f);
        for c in &self.cells {
            grid.push(vec![
                c.scenario.clone(),
                c.protocol.clone(),
                c.fault.clone(),
                time_label((c.expiry_s * 1e9).round() as u64),
                percent(c.split_brain_rate),
                span(c.overlap_mean_s),
                span(c.overlap_p99_s),
                percent(c.failover_rate),
                opt(c.gap_p50_s, &span),
                opt(c.gap_p99_s, &span),
                c.failover_due.to_string(),
                opt(c.stuck_rate, &percent),
                percent(c.leaderless_fraction),
                if c.other_violations == 0 {
                    "0".to_string()
                } else {
                    format!("{} ({})", c.other_violations, c.other_invariants)
                },
            ]);
        }
        write_aligned(out, &grid, 2);
    }

    /// One JSON object: how it ran, the designs, the scenarios, the cells.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "compare": {
                "seeds": {"start": self.seeds.start, "count": self.seeds.count},
                "fenced": self.fenced,
                "setup": SETUP,
                "max_run_s": MAX_RUN.as_secs(),
                "max_run": human(MAX_RUN),
            },
            "protocols": self.columns,
            "scenarios": self.rows,
            "cells": self.cells,
        })
    }

    /// The header and one line per cell.
    pub fn to_csv(&self) -> String {
        let mut out = format!("{CSV_HEADER}\n");
        for cell in &self.cells {
            let value = serde_json::to_value(cell).unwrap_or_default();
            let fields: Vec<String> = CSV_HEADER
                .split(',')
                .map(|key| match &value[key] {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => csv_field(s),
                    other => other.to_string(),
                })
                .collect();
            let _ = writeln!(out, "{}", fields.join(","));
        }
        out
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `grid` as left-aligned columns `gap` spaces apart, without trailing
/// spaces.
fn write_aligned(out: &mut String, grid: &[Vec<String>], gap: usize) {
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            grid.iter()
                .filter_map(|row| row.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in grid {
        let mut line = String::new();
        for (c, field) in row.iter().enumerate() {
            line.push_str(field);
            if c + 1 < row.len() {
                let pad = widths[c].saturating_sub(field.chars().count()) + gap;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_keep_about_three_digits() {
        assert_eq!(span(0.0), "0");
        assert_eq!(span(0.094), "94ms");
        assert_eq!(span(2.08), "2.08s");
        assert_eq!(span(23.29), "23.3s");
        assert_eq!(span(71.083), "1m11s");
        assert_eq!(span(120.0), "2m");
        assert_eq!(span(7875.0), "2h11m");
        assert_eq!(span(14_400.0), "4h");
    }

    #[test]
    fn percentages_never_round_a_rate_to_zero() {
        assert_eq!(percent(0.0), "0");
        assert_eq!(percent(0.004), "<1%");
        assert_eq!(percent(0.2), "20%");
        assert_eq!(percent(1.0), "100%");
    }

    #[test]
    fn csv_fields_with_commas_are_quoted() {
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
