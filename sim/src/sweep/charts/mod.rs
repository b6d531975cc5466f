//! The sweep's SVG charts: heat-map panels of one metric over the grid
//! (this file: the panels, their layout, the chart header and the number
//! formats), the election chart with its trade-off scatter (`election`,
//! `scatter`) and the membership chart (`membership`).
//!
//! Drawn with the SVG toolkit ([`crate::svg::document`],
//! [`crate::svg::time`]): its document, text wrapping, palette and colour
//! ramp. What stays here is particular to these charts.

mod election;
mod membership;
mod scatter;

use std::time::Duration;

use super::mix::FaultMix;
use super::Seeds;
use crate::batch::round_to;
use crate::svg::document::{esc, ramp, wrap, Doc, Rgb, INK, MONO, MUTED};
use crate::svg::time::time_label;
use crate::units::human;

const CHART_W: f64 = 1200.0;
const CELL_W: f64 = 56.0;
const CELL_H: f64 = 28.0;
const ROW_LABEL_W: f64 = 64.0;
/// Between two rows of panels.
const PANEL_GAP_Y: f64 = 14.0;

/// Yellow → orange → red → dark red: light is better for every metric here.
const HEAT: [Rgb; 5] = [
    (255.0, 255.0, 204.0),
    (254.0, 217.0, 118.0),
    (253.0, 141.0, 60.0),
    (227.0, 26.0, 28.0),
    (128.0, 0.0, 38.0),
];

fn heat(t: f64) -> String {
    ramp(&HEAT, t)
}

/// Maps values onto `[0, 1]`: logarithmically when they span more than a
/// factor of ten (and are positive), linearly otherwise.
fn normaliser(values: &[f64]) -> impl Fn(f64) -> f64 {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let positive_lo = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = positive_lo.is_finite() && hi / positive_lo > 10.0;
    move |v: f64| {
        if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
            return 0.0;
        }
        if log {
            let v = v.max(positive_lo);
            libm::log(v / positive_lo) / libm::log(hi / positive_lo)
        } else {
            (v - lo) / (hi - lo)
        }
    }
}

/// Where a row of a sweep goes in a panel: `(row, column)`, `None` where
/// it is on no row or column of the grid.
type CellIndex = (Option<usize>, Option<usize>);

/// A panel's cells: `values[row][col]`; `None`: no data; the outer `None`:
/// a skipped cell.
type Values = Vec<Vec<Option<Option<f64>>>>;

/// The labels and titles of a chart's columns and rows (the same in every
/// panel of the chart).
struct Axes<'a> {
    /// Column labels, left to right.
    cols: Vec<String>,
    /// Row labels, top to bottom.
    rows: Vec<String>,
    col_title: &'a str,
    row_title: &'a str,
}

/// One metric of a chart, shown as a heat-map panel over the grid: its
/// class, title and hint, its value in a row `R` of the sweep, and how a
/// value is written in a cell.
struct Metric<'m, R> {
    class: &'m str,
    title: &'m str,
    hint: &'m str,
    value: &'m dyn Fn(&R) -> Option<f64>,
    format: &'m dyn Fn(f64) -> String,
}

/// A heat-map panel: one metric over the grid.
struct Panel<'a> {
    title: &'a str,
    hint: &'a str,
    axes: &'a Axes<'a>,
    values: Values,
    format: &'a dyn Fn(f64) -> String,
}

/// A panel's title (bold) and the hint under it, at `(x, y)`.
fn panel_heading(doc: &mut Doc, x: f64, y: f64, title: &str, hint: &str) {
    doc.text(
        x,
        y + 14.0,
        &format!("class=\"panel-title\" font-size=\"13\" font-weight=\"bold\" fill=\"{INK}\""),
        title,
    );
    doc.text(
        x,
        y + 29.0,
        &format!("font-size=\"10.5\" fill=\"{MUTED}\""),
        hint,
    );
}

fn draw_panel(doc: &mut Doc, x: f64, y: f64, p: &Panel<'_>, class: &str) {
    let axes = p.axes;
    doc.open(
        &format!("panel {class}"),
        &format!(" data-metric=\"{}\"", esc(class)),
    );
    panel_heading(doc, x, y, p.title, p.hint);
    let gx = x + ROW_LABEL_W;
    let gy = y + 44.0;
    let known: Vec<f64> = p
        .values
        .iter()
        .flatten()
        .filter_map(|v| v.flatten())
        .collect();
    let norm = normaliser(&known);
    for (r, row) in p.values.iter().enumerate() {
        let cy = gy + r as f64 * CELL_H;
        doc.text(
            gx - 6.0,
            cy + CELL_H / 2.0 + 4.0,
            &format!("font-size=\"11\" text-anchor=\"end\" fill=\"{INK}\""),
            &axes.rows[r],
        );
        for (c, value) in row.iter().enumerate() {
            let cx = gx + c as f64 * CELL_W;
            let (fill, text, text_fill) = match value {
                None => ("#eeeeee".to_string(), "n/a".to_string(), MUTED),
                Some(None) => ("#f4f4f4".to_string(), "–".to_string(), MUTED),
                Some(Some(v)) => {
                    let t = norm(*v);
                    (
                        heat(t),
                        (p.format)(*v),
                        if t > 0.62 { "#ffffff" } else { INK },
                    )
                }
            };
            doc.rect(
                cx,
                cy,
                CELL_W - 2.0,
                CELL_H - 2.0,
                &format!(
                    "class=\"cell\" data-row=\"{}\" data-col=\"{}\" fill=\"{fill}\"",
                    esc(&axes.rows[r]),
                    esc(&axes.cols[c])
                ),
                Some(&format!(
                    "{}: {} at {} = {}, {} = {}",
                    p.title, text, axes.col_title, axes.cols[c], axes.row_title, axes.rows[r]
                )),
            );
            doc.text(
                cx + (CELL_W - 2.0) / 2.0,
                cy + CELL_H / 2.0 + 3.0,
                &format!(
                    "font-size=\"11\" font-family=\"{MONO}\" text-anchor=\"middle\" fill=\"{text_fill}\""
                ),
                &text,
            );
        }
    }
    let by = gy + CELL_H * axes.rows.len() as f64;
    for (c, label) in axes.cols.iter().enumerate() {
        doc.text(
            gx + c as f64 * CELL_W + (CELL_W - 2.0) / 2.0,
            by + 12.0,
            &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\""),
            label,
        );
    }
    doc.text(
        gx + CELL_W * axes.cols.len() as f64 / 2.0,
        by + 27.0,
        &format!("font-size=\"10.5\" text-anchor=\"middle\" fill=\"{MUTED}\""),
        axes.col_title,
    );
    doc.text(
        gx - 6.0,
        gy + CELL_H * axes.rows.len() as f64 + 12.0,
        &format!("font-size=\"10.5\" text-anchor=\"end\" fill=\"{MUTED}\""),
        &format!("{} ↑", axes.row_title),
    );
    doc.close();
}

/// How the panels of a chart sit: each `width` × `height` px, `per_row`
/// to a row of panels, `gap_x` px apart.
struct Layout {
    width: f64,
    height: f64,
    per_row: usize,
    gap_x: f64,
}

impl Layout {
    /// As many panels over `axes` to a row as fit the chart's width, at
    /// most `max_per_row`.
    fn new(axes: &Axes<'_>, max_per_row: usize) -> Self {
        let width = ROW_LABEL_W + CELL_W * axes.cols.len() as f64;
        let height = 44.0 + CELL_H * axes.rows.len() as f64 + 34.0;
        let per_row =
            (((CHART_W - 60.0 + 36.0) / (width + 36.0)).floor() as usize).clamp(1, max_per_row);
        let gap_x = if per_row > 1 {
            ((CHART_W - 60.0 - width * per_row as f64) / (per_row as f64 - 1.0)).min(60.0)
        } else {
            0.0
        };
        Layout {
            width,
            height,
            per_row,
            gap_x,
        }
    }

    /// The height of `panels` panels: their rows, each with the gap below
    /// it.
    fn rows_height(&self, panels: usize) -> f64 {
        panels.div_ceil(self.per_row) as f64 * (self.height + PANEL_GAP_Y)
    }

    /// Draws one panel per metric, in rows from `y` down; the metric's
    /// value in each row of `sweep_rows` fills the cell `place` finds for it
    /// (`(row, column)`; a row placed nowhere is left out).
    fn draw<R>(
        &self,
        doc: &mut Doc,
        y: f64,
        axes: &Axes<'_>,
        metrics: &[Metric<'_, R>],
        sweep_rows: &[&R],
        place: &dyn Fn(&R) -> CellIndex,
    ) {
        for (m, metric) in metrics.iter().enumerate() {
            let mut values = vec![vec![None; axes.cols.len()]; axes.rows.len()];
            for r in sweep_rows {
                if let (Some(ri), Some(ci)) = place(r) {
                    values[ri][ci] = Some((metric.value)(r));
                }
            }
            let panel = Panel {
                title: metric.title,
                hint: metric.hint,
                axes,
                values,
                format: metric.format,
            };
            let px = 30.0 + (m % self.per_row) as f64 * (self.width + self.gap_x);
            let py = y + (m / self.per_row) as f64 * (self.height + PANEL_GAP_Y);
            draw_panel(doc, px, py, &panel, metric.class);
        }
    }
}

fn fmt_secs(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}s")
    } else {
        format!("{v:.1}s")
    }
}

fn fmt_rate(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn fmt_percent(v: f64) -> String {
    format!("{}%", fmt_rate(v * 100.0))
}

fn ttl_label(s: f64) -> String {
    time_label((s * 1e9).round() as u64)
}

/// The labels of `list`, as [`ttl_label`] writes them.
fn duration_labels(list: &[Duration]) -> Vec<String> {
    list.iter().map(|d| ttl_label(d.as_secs_f64())).collect()
}

/// Where in `list` the duration a row gives as `seconds` (rounded like
/// the rows, to three decimals) stands.
fn index_of(list: &[Duration], seconds: f64) -> Option<usize> {
    list.iter()
        .position(|d| round_to(d.as_secs_f64(), 3) == seconds)
}

/// The first header lines of every sweep chart: what each cell ran (then
/// `details`), the faults, and the command.
fn header_lines(seeds: Seeds, mix: &FaultMix, details: &str, command: &str) -> Vec<(String, bool)> {
    vec![
        (
            format!(
                "{} seeds × {} × {} nodes per cell, the same faults in every cell · {details}",
                seeds.count,
                human(mix.duration),
                mix.nodes,
            ),
            false,
        ),
        (format!("Faults: {}.", mix.describe()), false),
        (format!("$ {command}"), true),
    ]
}

/// Header lines of a sweep chart (long lines wrap); returns the y below
/// them.
fn chart_header(doc: &mut Doc, title: &str, lines: &[(String, bool)]) -> f64 {
    doc.text(
        30.0,
        32.0,
        &format!("class=\"title\" font-size=\"20\" font-weight=\"bold\" fill=\"{INK}\""),
        title,
    );
    let mut y = 34.0;
    for (line, mono) in lines {
        let attrs = if *mono {
            format!("font-size=\"12\" font-family=\"{MONO}\" fill=\"{INK}\"")
        } else {
            format!("font-size=\"12\" fill=\"{MUTED}\"")
        };
        for part in wrap(line, 12.0, CHART_W - 50.0, *mono) {
            y += 18.0;
            doc.text(30.0, y, &attrs, &part);
        }
    }
    y + 16.0
}

/// A chart `body_height` px tall below its header of `lines`: the header
/// is measured (drawn into a scratch document), then drawn under `title`.
/// Returns the document and the y below the header.
fn start_chart(name: &str, title: &str, lines: &[(String, bool)], body_height: f64) -> (Doc, f64) {
    let header_height = chart_header(&mut Doc::new(1.0, 1.0, ""), "", lines);
    let mut doc = Doc::new(CHART_W, header_height + body_height, name);
    let y = chart_header(&mut doc, title, lines);
    (doc, y)
}
