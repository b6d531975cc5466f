//! The marks in the node lanes: down time after a crash, fault spans,
//! belief bars (striped where the lease is gone) over the truth bands, their
//! labels, and crash and restart markers.

use super::intervals::no_lease;
use super::lanes::Lane;
use super::{
    token_colour, Picture, BELIEF_H, BELIEF_Y, LEFT, NETWORK_FAULT, PLOT_W, TRUTH_H, TRUTH_Y,
};
use crate::svg::document::{esc, num, text_width, INK, RED};
use crate::svg::time::span_label;
use crate::units::secs;

impl Picture<'_> {
    /// The region of a node lane covered by faults: the belief bar and the
    /// truth band.
    fn bar_region(lane: &Lane) -> (f64, f64) {
        (lane.y + BELIEF_Y - 2.0, TRUTH_Y + TRUTH_H - BELIEF_Y + 4.0)
    }

    fn fault_region(lane: &Lane) -> (f64, f64) {
        if lane.kind == "node" {
            Self::bar_region(lane)
        } else {
            (lane.y + 16.0, lane.h - 20.0)
        }
    }

    /// Crashed nodes' down time, under the bars.
    pub(super) fn down_time(&mut self) {
        let end = self.timeline.end_ns;
        self.doc.open("down", "");
        for c in &self.timeline.crashes {
            let Some(li) = self.lanes.of_owner(&c.owner, &c.node) else {
                continue;
            };
            let back = self
                .timeline
                .starts
                .iter()
                .filter(|s| s.node == c.node && s.at_ns > c.at_ns)
                .map(|s| s.at_ns)
                .min()
                .unwrap_or(end);
            if !self.scale.meets(c.at_ns, back) {
                continue;
            }
            let (x0, x1) = (self.scale.x(c.at_ns), self.scale.x(back));
            let (top, h) = Self::bar_region(&self.lanes.lanes[li]);
            self.doc.rect(
                x0,
                top,
                x1 - x0,
                h,
                "class=\"down\" fill=\"#d4d4d4\"",
                Some(&format!(
                    "{} down: {} → {}",
                    c.node,
                    secs(c.at_ns),
                    if back == end {
                        "end of run".to_string()
                    } else {
                        secs(back)
                    }
                )),
            );
        }
        self.doc.close();
    }

    /// Fault spans: network faults (amber, under the bars) or pauses
    /// (hatched, over them: the process is frozen with whatever it believed).
    pub(super) fn fault_spans(&mut self, pauses: bool) {
        self.doc
            .open(if pauses { "pauses" } else { "network-faults" }, "");
        for f in &self.timeline.faults {
            if (f.label == "pause") != pauses || !self.scale.meets(f.start_ns, f.end_ns) {
                continue;
            }
            let style = if pauses {
                "fill=\"url(#hatch-pause)\" stroke=\"#333333\" stroke-width=\"1\"".to_string()
            } else {
                format!("fill=\"{NETWORK_FAULT}\" fill-opacity=\"0.3\"")
            };
            let (x0, x1) = (self.scale.x(f.start_ns), self.scale.x(f.end_ns));
            for li in self.lanes.of_host(&f.host) {
                let (top, h) = Self::fault_region(&self.lanes.lanes[li]);
                self.doc.rect(
                    x0,
                    top,
                    (x1 - x0).max(1.5),
                    h,
                    &format!(
                        "class=\"fault {}\" data-host=\"{}\" {style}",
                        fault_kind(&f.label),
                        esc(&f.host)
                    ),
                    Some(&fault_tip(f)),
                );
            }
        }
        self.doc.close();
    }

    pub(super) fn beliefs(&mut self) {
        let no_lease = no_lease(self.timeline);
        let mut labels: Vec<(f64, f64, f64, u64)> = Vec::new();
        self.doc.open("beliefs", "");
        for (index, term) in self.timeline.beliefs.iter().enumerate() {
            let Some(li) = self.lanes.of_owner(&term.owner, &term.node) else {
                continue;
            };
            let lane_y = self.lanes.lanes[li].y;
            let (a, b) = (term.start_ns, term.end_ns);
            if !self.scale.meets(a, b) {
                continue;
            }
            let (x0, x1) = (self.scale.x(a), self.scale.x(b));
            let end_text = if term.end_reason == "run-ended" {
                "end of run".to_string()
            } else {
                format!("{} ({})", secs(b), term.end_reason)
            };
            self.doc.rect(
                x0,
                lane_y + BELIEF_Y,
                (x1 - x0).max(1.5),
                BELIEF_H,
                &format!(
                    "class=\"belief\" data-node=\"{}\" data-owner=\"{}\" data-token=\"{}\" fill=\"{}\" rx=\"2\"",
                    esc(&term.node),
                    esc(&term.owner),
                    term.token,
                    token_colour(term.token)
                ),
                Some(&format!(
                    "{} believes it leads with token {}: {} → {}",
                    term.owner,
                    term.token,
                    secs(a),
                    end_text
                )),
            );
            // Belief without the lease: striped red.
            for &(_, s, e) in no_lease.iter().filter(|(t, _, _)| *t == index) {
                if !self.scale.meets(s, e) {
                    continue;
                }
                let (sx, ex) = (self.scale.x(s), self.scale.x(e));
                self.doc.rect(
                    sx,
                    lane_y + BELIEF_Y,
                    (ex - sx).max(1.0),
                    BELIEF_H,
                    &format!(
                        "class=\"no-lease\" data-node=\"{}\" fill=\"url(#hatch-nolease)\" stroke=\"{RED}\" stroke-width=\"1.5\"",
                        esc(&term.node)
                    ),
                    Some(&format!(
                        "{} believes it leads but the store no longer gives it the lease: {} → {} ({})",
                        term.owner,
                        secs(s),
                        secs(e),
                        span_label(e - s)
                    )),
                );
            }
            labels.push((x0, x1, lane_y, term.token));
        }
        for h in &self.timeline.truth {
            let Some(li) = self.lanes.of_owner(&h.owner, &h.node) else {
                continue;
            };
            if !self.scale.meets(h.start_ns, h.end_ns) {
                continue;
            }
            let lane_y = self.lanes.lanes[li].y;
            let (x0, x1) = (self.scale.x(h.start_ns), self.scale.x(h.end_ns));
            self.doc.rect(
                x0,
                lane_y + TRUTH_Y,
                (x1 - x0).max(1.0),
                TRUTH_H,
                &format!(
                    "class=\"truth\" data-node=\"{}\" data-token=\"{}\" fill=\"{}\"",
                    esc(&h.node),
                    h.token,
                    token_colour(h.token)
                ),
                Some(&format!(
                    "the lease store gives {} the lease with token {}: {} → {}",
                    h.owner,
                    h.token,
                    secs(h.start_ns),
                    secs(h.end_ns)
                )),
            );
        }
        self.doc.close();
        self.belief_labels = labels;
    }

    /// Token labels inside the belief bars, and fault labels (with an amber
    /// rule for network faults) in each lane's top strip.
    pub(super) fn fault_labels(&mut self) {
        self.doc.open("labels", "");
        for &(x0, x1, y, token) in &self.belief_labels {
            let long = format!("token {token}");
            let short = token.to_string();
            let inside = x1 - x0;
            let text = if inside >= text_width(&long, 11.0, false) + 8.0 {
                long
            } else if inside >= text_width(&short, 11.0, false) + 6.0 {
                short
            } else {
                continue;
            };
            self.doc.text(
                x0 + 4.0,
                y + BELIEF_Y + 14.5,
                &format!(
                    "class=\"belief-label\" font-size=\"11\" font-weight=\"bold\" fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"3\" paint-order=\"stroke\"",
                    token_colour(token)
                ),
                &text,
            );
        }
        for (term, s, e) in no_lease(self.timeline) {
            let term = &self.timeline.beliefs[term];
            let Some(li) = self.lanes.of_owner(&term.owner, &term.node) else {
                continue;
            };
            if !self.scale.meets(s, e) {
                continue;
            }
            let label = format!("no lease · {}", span_label(e - s));
            let w = text_width(&label, 10.0, false) * 1.08;
            let x = self.scale.x(s).min(LEFT + PLOT_W - w);
            if self.strips[li].take(x, w) {
                self.doc.text(
                    x + 1.0,
                    self.lanes.lanes[li].y + 10.0,
                    &format!("class=\"no-lease-label\" font-size=\"10\" font-weight=\"bold\" fill=\"{RED}\""),
                    &label,
                );
            }
        }
        for f in &self.timeline.faults {
            if !self.scale.meets(f.start_ns, f.end_ns) {
                continue;
            }
            let (x0, x1) = (self.scale.x(f.start_ns), self.scale.x(f.end_ns));
            let label = format!("{} {}", f.label, span_label(f.end_ns - f.start_ns));
            let w = text_width(&label, 10.0, false);
            for li in self.lanes.of_host(&f.host) {
                let lane_y = self.lanes.lanes[li].y;
                if f.label != "pause" {
                    self.doc.rect(
                        x0,
                        lane_y + 12.5,
                        (x1 - x0).max(1.5),
                        2.5,
                        &format!("fill=\"{NETWORK_FAULT}\""),
                        None,
                    );
                }
                let x = x0.min(LEFT + PLOT_W - w);
                if self.strips[li].take(x, w) {
                    self.doc.text(
                        x + 1.0,
                        lane_y + 10.0,
                        &format!("class=\"fault-label\" font-size=\"10\" fill=\"{INK}\""),
                        &label,
                    );
                }
            }
        }
        self.doc.close();
    }

    pub(super) fn crashes_and_restarts(&mut self) {
        self.doc.open("crashes", "");
        for c in &self.timeline.crashes {
            let Some(li) = self.lanes.of_owner(&c.owner, &c.node) else {
                continue;
            };
            if !self.scale.contains(c.at_ns) {
                continue;
            }
            let lane_y = self.lanes.lanes[li].y;
            let x = self.scale.x(c.at_ns);
            let cy = lane_y + BELIEF_Y + BELIEF_H / 2.0 + 2.0;
            self.doc.raw(&format!(
                "<g class=\"crash\" data-node=\"{}\"><title>{} crashed at {}</title>\
                 <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{INK}\" stroke-width=\"3\"/>\
                 <line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{INK}\" stroke-width=\"3\"/></g>",
                esc(&c.node),
                esc(&c.owner),
                secs(c.at_ns),
                num(x - 7.0),
                num(cy - 7.0),
                num(x + 7.0),
                num(cy + 7.0),
                num(x - 7.0),
                num(cy + 7.0),
                num(x + 7.0),
                num(cy - 7.0),
            ));
            let label = format!("{} crashes", c.owner);
            let w = text_width(&label, 10.0, false);
            let lx = (x - w / 2.0).max(LEFT);
            if self.strips[li].take(lx, w) {
                self.doc.text(
                    lx,
                    lane_y + 10.0,
                    &format!("font-size=\"10\" font-weight=\"bold\" fill=\"{INK}\""),
                    &label,
                );
            }
        }
        for s in &self.timeline.starts {
            let first = !self
                .timeline
                .starts
                .iter()
                .any(|o| o.node == s.node && o.at_ns < s.at_ns);
            if first || !self.scale.contains(s.at_ns) {
                continue;
            }
            let Some(li) = self.lanes.of_owner(&s.owner, &s.node) else {
                continue;
            };
            let lane_y = self.lanes.lanes[li].y;
            let x = self.scale.x(s.at_ns);
            let cy = lane_y + BELIEF_Y + BELIEF_H / 2.0 + 2.0;
            self.doc.raw(&format!(
                "<path class=\"restart\" d=\"M{} {} L{} {} L{} {} Z\" fill=\"{INK}\"><title>{} started at {}</title></path>",
                num(x),
                num(cy - 6.0),
                num(x + 9.0),
                num(cy),
                num(x),
                num(cy + 6.0),
                esc(&s.owner),
                secs(s.at_ns)
            ));
            let label = format!("{} starts", s.owner);
            let w = text_width(&label, 10.0, false);
            if self.strips[li].take(x, w) {
                self.doc.text(
                    x,
                    lane_y + 10.0,
                    &format!("font-size=\"10\" fill=\"{INK}\""),
                    &label,
                );
            }
        }
        self.doc.close();
    }
}

fn fault_kind(label: &str) -> &'static str {
    if label == "pause" {
        "pause"
    } else if label == "isolated" {
        "isolate"
    } else if label.starts_with("cut") {
        "cut"
    } else {
        "partition"
    }
}

fn fault_tip(f: &crate::timeline::Span) -> String {
    format!(
        "{} {}: {} → {} ({})",
        f.host,
        f.label,
        secs(f.start_ns),
        secs(f.end_ns),
        span_label(f.end_ns - f.start_ns)
    )
}
