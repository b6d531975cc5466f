//! The marks that span the plot rather than one lane's events: the lane
//! backgrounds and labels, the time axis, the red bands where two processes
//! believe they lead, and the line where every fault healed.

use super::intervals::overlaps;
use super::{Picture, Strip, BELIEF_Y, DOWNSTREAM_LANE, LEFT, PLOT_W, TRUTH_H, TRUTH_Y, WIDTH};
use crate::scenario::DOWNSTREAM;
use crate::svg::document::{esc, text_width, GRID, INK, MUTED, RED};
use crate::svg::time::{span_label, tick_step, time_label};
use crate::units::secs;

impl Picture<'_> {
    pub(super) fn lane_backgrounds(&mut self) {
        let doc = &mut self.doc;
        doc.open("lanes", "");
        for (i, lane) in self.lanes.lanes.iter().enumerate() {
            let fill = if i % 2 == 0 { "#f6f7f9" } else { "#ffffff" };
            doc.rect(
                LEFT,
                lane.y,
                PLOT_W,
                lane.h,
                &format!("class=\"lane-bg\" fill=\"{fill}\""),
                None,
            );
            doc.line(
                8.0,
                lane.y + lane.h,
                WIDTH - 8.0,
                lane.y + lane.h,
                &format!("stroke=\"{GRID}\""),
                None,
            );
            let (title, sub, title_y) = match lane.kind {
                "node" => (lane.key.as_str(), "lease held", BELIEF_Y + 14.0),
                "lease-store" => ("lease store", "holder · grants", 26.0),
                "downstream" => ("downstream", "writes", 34.0),
                _ => ("membership", "live nodes", 24.0),
            };
            doc.text(
                LEFT - 10.0,
                lane.y + title_y,
                &format!(
                    "class=\"lane-label\" data-lane=\"{}\" data-kind=\"{}\" data-node=\"{}\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"end\" fill=\"{INK}\"",
                    esc(&lane.key),
                    lane.kind,
                    esc(&lane.node)
                ),
                title,
            );
            let sub_y = if lane.kind == "node" {
                TRUTH_Y + TRUTH_H
            } else {
                title_y + 13.0
            };
            doc.text(
                LEFT - 10.0,
                lane.y + sub_y,
                &format!("font-size=\"10\" text-anchor=\"end\" fill=\"{MUTED}\""),
                sub,
            );
        }
        doc.close();
    }

    pub(super) fn time_axis(&mut self) {
        let (from, to) = (self.scale.from, self.scale.to);
        let top = self.lanes.top;
        let axis_y = self.lanes.bottom;
        let step = tick_step(to - from, 12).max(1);
        let doc = &mut self.doc;
        doc.open("axis", "");
        let mut t = from.div_ceil(step) * step;
        while t <= to {
            let x = self.scale.x(t);
            doc.line(x, top, x, axis_y, &format!("stroke=\"{GRID}\""), None);
            doc.line(
                x,
                axis_y,
                x,
                axis_y + 5.0,
                &format!("stroke=\"{MUTED}\""),
                None,
            );
            doc.text(
                x,
                axis_y + 18.0,
                &format!("class=\"tick\" font-size=\"11\" text-anchor=\"middle\" fill=\"{MUTED}\""),
                &time_label(t),
            );
            t = t.saturating_add(step);
        }
        doc.line(
            LEFT,
            axis_y,
            LEFT + PLOT_W,
            axis_y,
            &format!("stroke=\"{MUTED}\""),
            None,
        );
        doc.text(
            LEFT + PLOT_W,
            axis_y + 32.0,
            &format!("font-size=\"10\" text-anchor=\"end\" fill=\"{MUTED}\""),
            "true (simulation) time since the start of the run",
        );
        doc.close();
    }

    /// A red band across the lanes wherever two processes believe they lead.
    pub(super) fn two_leaders(&mut self) {
        let top = self.lanes.top - 2.0;
        let bottom = self.lanes.get(DOWNSTREAM).y + DOWNSTREAM_LANE;
        let mut strip = Strip::default();
        self.doc.open("overlaps", "");
        for (a, b) in overlaps(&self.timeline.beliefs) {
            if !self.scale.meets(a, b) {
                continue;
            }
            let (x0, x1) = (self.scale.x(a), self.scale.x(b));
            self.doc.rect(
                x0,
                top,
                (x1 - x0).max(1.0),
                bottom - top,
                &format!("class=\"overlap\" fill=\"{RED}\" fill-opacity=\"0.08\" stroke=\"{RED}\" stroke-opacity=\"0.6\" stroke-dasharray=\"3 3\""),
                Some(&format!(
                    "two processes believe they lead: {} → {} ({})",
                    secs(a),
                    secs(b),
                    span_label(b - a)
                )),
            );
            let label = format!("two leaders · {}", span_label(b - a));
            let w = text_width(&label, 11.0, false);
            let x = (x0 + 3.0).min(LEFT + PLOT_W - w);
            if strip.take(x, w) {
                self.doc.text(
                    x,
                    top - 5.0,
                    &format!("class=\"overlap-label\" font-size=\"11\" font-weight=\"bold\" fill=\"{RED}\""),
                    &label,
                );
            }
        }
        self.doc.close();
    }

    pub(super) fn heal(&mut self) {
        let Some(h) = self.timeline.heal_ns.filter(|&h| self.scale.contains(h)) else {
            return;
        };
        let x = self.scale.x(h);
        let bottom = self.lanes.bottom;
        self.doc.line(
            x,
            self.lanes.top - 2.0,
            x,
            bottom,
            "class=\"heal\" stroke=\"#2a8f3a\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"",
            Some(&format!("every fault healed at {}", secs(h))),
        );
        self.doc.text(
            x + 3.0,
            self.lanes.top - 7.0,
            "font-size=\"10\" font-weight=\"bold\" fill=\"#2a8f3a\"",
            "healed",
        );
    }
}
