//! The election chart's trade-off scatter: median failover gap against
//! leader changes per hour on log scales, a dot per setting coloured by its
//! TTL, a line per renew ratio (and margin) through its TTLs.

use super::{fmt_rate, fmt_secs, index_of, panel_heading, ttl_label};
use crate::svg::document::{num, ramp, text_width, Doc, Rgb, INK, MUTED};
use crate::svg::time::ONE_TWO_FIVE;
use crate::sweep::ElectionSweep;

/// The scatter's grid lines: a shade lighter than the toolkit's `GRID`
/// (kept as it was drawn before the toolkit existed).
const GRID_LINE: &str = "stroke=\"#e6e6e6\"";

/// Line shades for renew ratios (dark to mid grey-blue; alternate lines are
/// dashed).
const RATIO_SHADES: [&str; 4] = ["#444444", "#7a4f9a", "#b35806", "#1b7837"];

/// Short TTLs light blue, long TTLs dark blue.
const TTL_RAMP: [Rgb; 2] = [(120.0, 190.0, 230.0), (8.0, 48.0, 107.0)];

/// The colour of the `i`-th of `n` TTLs, shortest to longest (one TTL: the
/// middle of the ramp).
fn ttl_colour(i: usize, n: usize) -> String {
    ramp(
        &TTL_RAMP,
        if n > 1 {
            i as f64 / (n - 1) as f64
        } else {
            0.5
        },
    )
}

impl ElectionSweep {
    /// Draws the scatter in the `w` × `h` px box at `(x, y)`.
    pub(super) fn scatter(&self, doc: &mut Doc, x: f64, y: f64, w: f64, h: f64) {
        let points: Vec<(usize, f64, f64)> = self
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.gap_p50_s
                    .map(|g| (i, g.max(0.001), r.leader_changes_per_hour.max(0.01)))
            })
            .collect();
        doc.open("scatter", "");
        panel_heading(
            doc,
            x,
            y,
            "The trade-off: median failover gap against leader changes per hour",
            "one dot per setting, colour = lease_ttl; one line per renew ratio (and margin), TTL growing left to right · log scales",
        );
        if points.is_empty() {
            doc.text(
                x,
                y + 60.0,
                &format!("font-size=\"12\" fill=\"{MUTED}\""),
                "no failovers: nothing to plot",
            );
            doc.close();
            return;
        }
        let (px, py, pw, ph) = (x + 56.0, y + 42.0, w - 170.0, h - 82.0);
        let range = |v: &mut dyn Iterator<Item = f64>| {
            let all: Vec<f64> = v.collect();
            let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            nice_log_range(lo, hi)
        };
        let (x0, x1) = range(&mut points.iter().map(|p| p.1));
        let (y0, y1) = range(&mut points.iter().map(|p| p.2));
        let sx = |v: f64| px + libm::log(v / x0) / libm::log(x1 / x0) * pw;
        let sy = |v: f64| py + ph - libm::log(v / y0) / libm::log(y1 / y0) * ph;
        doc.rect(px, py, pw, ph, "fill=\"#fafafa\" stroke=\"#cccccc\"", None);
        for t in log_ticks(x0, x1) {
            let gx = sx(t);
            doc.line(gx, py, gx, py + ph, GRID_LINE, None);
            doc.text(
                gx,
                py + ph + 14.0,
                &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{MUTED}\""),
                &fmt_secs(t),
            );
        }
        for t in log_ticks(y0, y1) {
            let gy = sy(t);
            doc.line(px, gy, px + pw, gy, GRID_LINE, None);
            doc.text(
                px - 6.0,
                gy + 4.0,
                &format!("font-size=\"11\" text-anchor=\"end\" fill=\"{MUTED}\""),
                &fmt_rate(t),
            );
        }
        doc.text(
            px + pw / 2.0,
            py + ph + 30.0,
            &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\""),
            "median failover gap — slower to recover →",
        );
        doc.raw(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\" transform=\"rotate(-90 {} {})\">leader changes per hour — twitchier →</text>",
            num(x + 12.0),
            num(py + ph / 2.0),
            num(x + 12.0),
            num(py + ph / 2.0)
        ));
        doc.text(
            px + 8.0,
            py + ph - 8.0,
            "font-size=\"11\" font-style=\"italic\" fill=\"#2a7a3a\"",
            "↙ better: fast and calm",
        );
        let lines: Vec<(usize, f64, f64)> =
            points.iter().map(|&(i, g, c)| (i, sx(g), sy(c))).collect();
        self.ratio_lines(doc, &lines, (px + pw, py, ph));
        let ttls = &self.grid.ttls;
        for &(i, g, c) in &points {
            let r = &self.rows[i];
            let colour = ttl_colour(index_of(ttls, r.lease_ttl_s).unwrap_or(0), ttls.len());
            doc.raw(&format!(
                "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"5.5\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"1.2\"><title>TTL {} · renew {} × TTL · margin {} × TTL: median gap {}, {} leader changes/h</title></circle>",
                num(sx(g)),
                num(sy(c)),
                ttl_label(r.lease_ttl_s),
                r.renew_ratio,
                r.margin_ratio,
                fmt_secs(g),
                fmt_rate(c)
            ));
        }
        // TTL colour key, top right inside the plot.
        let mut kx = px + pw - 8.0;
        for (i, d) in ttls.iter().enumerate().rev() {
            let label = format!("TTL {}", ttl_label(d.as_secs_f64()));
            kx -= text_width(&label, 10.5, false) + 24.0;
            doc.raw(&format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"5.5\" fill=\"{}\"/>",
                num(kx + 6.0),
                num(py + 13.0),
                ttl_colour(i, ttls.len())
            ));
            doc.text(
                kx + 15.0,
                py + 17.0,
                &format!("font-size=\"10.5\" fill=\"{INK}\""),
                &label,
            );
        }
        doc.close();
    }

    /// One line per (renew ratio, margin) through the `points` (row index,
    /// x, y) of its TTLs in order; labels right of the plot (whose right
    /// edge, top and height `plot` gives), spread apart, with a leader line.
    fn ratio_lines(&self, doc: &mut Doc, points: &[(usize, f64, f64)], plot: (f64, f64, f64)) {
        let (right, py, ph) = plot;
        let many_margins = self.grid.margin_ratios.len() > 1;
        let mut labels: Vec<(f64, f64, String, &str)> = Vec::new();
        for &margin in &self.grid.margin_ratios {
            for (k, &ratio) in self.grid.renew_ratios.iter().enumerate() {
                let line: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|(i, _, _)| {
                        let r = &self.rows[*i];
                        r.renew_ratio == ratio && r.margin_ratio == margin
                    })
                    .map(|&(_, x, y)| (x, y))
                    .collect();
                let Some(&(lx, ly)) = line.last() else {
                    continue;
                };
                let shade = RATIO_SHADES[k % RATIO_SHADES.len()];
                let d: Vec<String> = line
                    .iter()
                    .enumerate()
                    .map(|(j, &(a, b))| {
                        format!("{}{} {}", if j == 0 { "M" } else { "L" }, num(a), num(b))
                    })
                    .collect();
                doc.raw(&format!(
                    "<path class=\"ratio-line\" data-renew-ratio=\"{ratio}\" d=\"{}\" fill=\"none\" stroke=\"{shade}\" stroke-width=\"1.6\"{}/>",
                    d.join(" "),
                    if k % 2 == 1 { " stroke-dasharray=\"5 3\"" } else { "" }
                ));
                let label = if many_margins {
                    format!("renew {ratio} × TTL, margin {margin}")
                } else {
                    format!("renew {ratio} × TTL")
                };
                labels.push((lx, ly, label, shade));
            }
        }
        labels.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut ys: Vec<f64> = Vec::with_capacity(labels.len());
        for (_, ly, _, _) in &labels {
            let min = ys.last().map_or(py + 30.0, |y| y + 14.0);
            ys.push(ly.max(min));
        }
        let overflow = ys.last().map_or(0.0, |y| (y - (py + ph)).max(0.0));
        for ((lx, ly, label, shade), ty) in labels.iter().zip(ys) {
            let ty = ty - overflow;
            doc.raw(&format!(
                "<path d=\"M{} {} L{} {} L{} {}\" fill=\"none\" stroke=\"{shade}\" stroke-width=\"0.8\" stroke-dasharray=\"1 2\"/>",
                num(lx + 6.0),
                num(*ly),
                num(right + 4.0),
                num(ty),
                num(right + 10.0),
                num(ty)
            ));
            doc.text(
                right + 13.0,
                ty + 4.0,
                &format!("class=\"ratio-label\" font-size=\"11\" fill=\"{shade}\""),
                label,
            );
        }
    }
}

/// A log range covering `[lo, hi]` with a little room, at 1-2-5 steps.
fn nice_log_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-3);
    let hi = hi.max(lo * 1.5);
    let decade = |v: f64| libm::pow(10.0, libm::floor(libm::log10(v)));
    let down = |v: f64| {
        let e = decade(v);
        ONE_TWO_FIVE
            .iter()
            .rev()
            .map(|&m| m as f64 * e)
            .find(|c| *c <= v / 1.15)
            .unwrap_or(e / 2.0)
    };
    let up = |v: f64| {
        let e = decade(v);
        ONE_TWO_FIVE
            .iter()
            .chain(&[10])
            .map(|&m| m as f64 * e)
            .find(|c| *c >= v * 1.15)
            .unwrap_or(e * 20.0)
    };
    (down(lo), up(hi))
}

/// 1-2-5 ticks inside `[lo, hi]`.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut e = libm::pow(10.0, libm::floor(libm::log10(lo)));
    while e <= hi * 1.0001 {
        for m in ONE_TWO_FIVE {
            let t = m as f64 * e;
            if t >= lo * 0.9999 && t <= hi * 1.0001 {
                out.push(t);
            }
        }
        e *= 10.0;
    }
    out
}
