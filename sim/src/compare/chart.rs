//! The comparison as an SVG heat map: a row per scenario, a column per
//! design, each cell coloured by its split-brain rate and labelled with it
//! and the failover (median gap, or stuck — then outlined), under a header
//! that says what ran and above a legend. Drawn with the SVG toolkit
//! ([`crate::svg::document`]); deterministic like every picture.

use super::output::{failover_text, percent, span, SETUP};
use super::stats::Cell;
use super::Matrix;
use crate::svg::document::{esc, ramp, wrap, Doc, Rgb, INK, MONO, MUTED};
use crate::svg::time::time_label;

const CHART_W: f64 = 1200.0;
const LEFT: f64 = 30.0;
const LABEL_W: f64 = 250.0;
const CELL_H: f64 = 46.0;
const HEAD_H: f64 = 58.0;
const LEGEND_H: f64 = 140.0;

/// Pale yellow → orange → red → dark red, as the sweep's heat maps: light
/// is better. A rate of exactly 0 is drawn [`ZERO`] instead.
const HEAT: [Rgb; 5] = [
    (255.0, 255.0, 204.0),
    (254.0, 217.0, 118.0),
    (253.0, 141.0, 60.0),
    (227.0, 26.0, 28.0),
    (128.0, 0.0, 38.0),
];
/// The fill of a cell without any split-brain write: pale green.
const ZERO: &str = "#e5f3e5";

/// A cell's fill and whether its text must be light.
fn fill(rate: f64) -> (String, bool) {
    if rate == 0.0 {
        (ZERO.to_string(), false)
    } else {
        // Any split-brain is bad: start the ramp a quarter of the way in.
        let t = 0.25 + 0.75 * rate.clamp(0.0, 1.0);
        (ramp(&HEAT, t), t > 0.62)
    }
}

/// Whether a cell counts as stuck: a failover was due in at least half of
/// its seeds' runs that needed one, and none began.
fn stuck(c: &Cell) -> bool {
    c.stuck_rate.is_some_and(|r| r >= 0.5)
}

/// The hover text of a cell: every measure.
fn tooltip(c: &Cell) -> String {
    let opt = |v: Option<f64>| v.map_or("–".to_string(), span);
    format!(
        "{} × {} ({}; E = {}{}): split-brain {} of {} seeds; overlap mean {}, p99 {}; \
         failed over in {}; gap p50 {}, p99 {}; failover due in {} seeds, stuck {}; \
         leaderless {}; other violations {}",
        c.scenario,
        c.protocol,
        c.fault,
        time_label((c.expiry_s * 1e9).round() as u64),
        if c.fenced { ", fenced" } else { "" },
        percent(c.split_brain_rate),
        c.seeds,
        span(c.overlap_mean_s),
        span(c.overlap_p99_s),
        percent(c.failover_rate),
        opt(c.gap_p50_s),
        opt(c.gap_p99_s),
        c.failover_due,
        c.stuck_rate.map_or("–".to_string(), percent),
        percent(c.leaderless_fraction),
        c.other_violations
    )
}

impl Matrix {
    /// The header's lines: (text, monospace).
    fn chart_lines(&self, command: &str) -> Vec<(String, bool)> {
        let mut lines = vec![
            (format!("{}.", self.heading()), false),
            (self.fencing_line(), false),
            (self.expiry_line(), false),
        ];
        if self.rows.iter().any(|r| !r.length.is_empty()) {
            lines.push((SETUP.to_string(), false));
        }
        lines.push((format!("$ {command}"), true));
        lines
    }

    /// The heat map; `command` is the command line shown in its header.
    pub fn to_svg(&self, command: &str) -> String {
        let lines = self.chart_lines(command);
        let wrapped: Vec<(String, bool)> = lines
            .iter()
            .flat_map(|(line, mono)| {
                wrap(line, 12.0, CHART_W - 2.0 * LEFT, *mono)
                    .into_iter()
                    .map(move |l| (l, *mono))
            })
            .collect();
        let top = 34.0 + 18.0 * wrapped.len() as f64 + 20.0;
        let body = HEAD_H + CELL_H * self.rows.len() as f64;
        let height = top + body + LEGEND_H;
        let mut doc = Doc::new(CHART_W, height, "Lock designs compared");
        doc.text(
            LEFT,
            32.0,
            &format!("class=\"title\" font-size=\"20\" font-weight=\"bold\" fill=\"{INK}\""),
            "Lock designs compared: split-brain rate and failover per scenario",
        );
        let mut y = 34.0;
        for (line, mono) in &wrapped {
            y += 18.0;
            let attrs = if *mono {
                format!("font-size=\"12\" font-family=\"{MONO}\" fill=\"{INK}\"")
            } else {
                format!("font-size=\"12\" fill=\"{MUTED}\"")
            };
            doc.text(LEFT, y, &attrs, line);
        }
        self.draw_grid(&mut doc, top);
        draw_legend(&mut doc, top + body + 18.0);
        doc.finish()
    }

    /// The column heads and the cells, from `top` down.
    fn draw_grid(&self, doc: &mut Doc, top: f64) {
        let cols = self.columns.len().max(1) as f64;
        let cell_w = ((CHART_W - 2.0 * LEFT - LABEL_W) / cols).min(160.0);
        let gx = LEFT + LABEL_W;
        doc.open("columns", "");
        for (c, col) in self.columns.iter().enumerate() {
            let cx = gx + c as f64 * cell_w + (cell_w - 4.0) / 2.0;
            doc.text(
                cx,
                top + 16.0,
                &format!(
                    "font-size=\"13\" font-weight=\"bold\" text-anchor=\"middle\" fill=\"{INK}\""
                ),
                &col.protocol,
            );
            let token = match (col.has_token, col.fenced) {
                (true, true) => "token, fenced",
                (true, false) => "token, unfenced",
                (false, _) => "no token",
            };
            let muted = format!("font-size=\"10.5\" text-anchor=\"middle\" fill=\"{MUTED}\"");
            doc.text(cx, top + 31.0, &muted, token);
            let e = time_label((col.expiry_s * 1e9).round() as u64);
            doc.text(cx, top + 45.0, &muted, &format!("E = {e}"));
        }
        doc.close();
        let gy = top + HEAD_H;
        for (r, row) in self.rows.iter().enumerate() {
            let ry = gy + r as f64 * CELL_H;
            doc.open("row", &format!(" data-scenario=\"{}\"", esc(&row.name)));
            doc.text(
                LEFT,
                ry + 19.0,
                &format!("font-size=\"12.5\" font-weight=\"bold\" fill=\"{INK}\""),
                &row.name,
            );
            if !row.length.is_empty() {
                doc.text(
                    LEFT,
                    ry + 35.0,
                    &format!("font-size=\"10.5\" fill=\"{MUTED}\""),
                    &format!("fault: {}", row.length),
                );
            }
            for c in 0..self.columns.len() {
                if let Some(cell) = self.cell(r, c) {
                    draw_cell(doc, gx + c as f64 * cell_w, ry, cell_w - 4.0, cell);
                }
            }
            doc.close();
        }
    }
}

/// One cell at `(x, y)`, `w` wide.
fn draw_cell(doc: &mut Doc, x: f64, y: f64, w: f64, c: &Cell) {
    let (colour, light) = fill(c.split_brain_rate);
    let is_stuck = stuck(c);
    let outline = if is_stuck {
        format!(" stroke=\"{INK}\" stroke-width=\"2.5\" stroke-dasharray=\"6 3\"")
    } else {
        String::new()
    };
    doc.rect(
        x,
        y,
        w,
        CELL_H - 4.0,
        &format!(
            "class=\"cell{}\" data-protocol=\"{}\" data-split-brain=\"{}\" fill=\"{colour}\"{outline}",
            if is_stuck { " stuck" } else { "" },
            esc(&c.protocol),
            c.split_brain_rate
        ),
        Some(&tooltip(c)),
    );
    let text_fill = if light { "#ffffff" } else { INK };
    let cx = x + w / 2.0;
    doc.text(
        cx,
        y + 18.0,
        &format!(
            "font-size=\"13\" font-weight=\"bold\" font-family=\"{MONO}\" text-anchor=\"middle\" fill=\"{text_fill}\""
        ),
        &format!("SB {}", percent(c.split_brain_rate)),
    );
    let failover = failover_text(c);
    let second = if failover == "–" {
        "no failover".to_string()
    } else if failover.starts_with("stuck") {
        failover.to_uppercase()
    } else {
        format!("gap {failover}")
    };
    doc.text(
        cx,
        y + 34.0,
        &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{text_fill}\""),
        &second,
    );
}

/// The legend at `y`: the colour ramp and the stuck outline.
fn draw_legend(doc: &mut Doc, y: f64) {
    doc.open("legend", "");
    doc.text(
        LEFT,
        y + 12.0,
        &format!("font-size=\"12\" font-weight=\"bold\" fill=\"{INK}\""),
        "Split-brain rate (SB): seeds in which an older term's write landed after a newer one's",
    );
    let stops = [0.0, 0.1, 0.25, 0.5, 0.75, 1.0];
    for (i, rate) in stops.iter().enumerate() {
        let x = LEFT + i as f64 * 74.0;
        let (colour, light) = fill(*rate);
        doc.rect(x, y + 22.0, 70.0, 24.0, &format!("fill=\"{colour}\""), None);
        doc.text(
            x + 35.0,
            y + 38.0,
            &format!(
                "font-size=\"11\" text-anchor=\"middle\" fill=\"{}\"",
                if light { "#ffffff" } else { INK }
            ),
            &percent(*rate),
        );
    }
    let sx = LEFT + stops.len() as f64 * 74.0 + 30.0;
    doc.rect(
        sx,
        y + 22.0,
        70.0,
        24.0,
        &format!("fill=\"{ZERO}\" stroke=\"{INK}\" stroke-width=\"2.5\" stroke-dasharray=\"6 3\""),
        None,
    );
    doc.text(
        sx + 35.0,
        y + 38.0,
        &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\""),
        "STUCK",
    );
    let notes = [
        "Outlined: stuck — in at least half of the seeds that needed a failover (the leader stalled, cut off or down for longer than E), nobody else began to lead while the fault lasted.",
        "Second line: the median failover gap (last accepted write of the old leader to the first of the new), or no failover. Hover a cell for every measure.",
    ];
    let mut ny = y + 50.0;
    for note in notes {
        for line in wrap(note, 10.5, CHART_W - 2.0 * LEFT, false) {
            ny += 15.0;
            doc.text(
                LEFT,
                ny,
                &format!("font-size=\"10.5\" fill=\"{MUTED}\""),
                &line,
            );
        }
    }
    doc.close();
}
