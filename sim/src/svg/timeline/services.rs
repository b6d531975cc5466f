//! The marks in the service lanes below the nodes: the lease store (the
//! holder, grants with their tokens, refusals), the downstream (accepted,
//! rejected and split-brain writes) and the membership's live count.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{token_colour, Picture, Strip, LEFT, MEMBERSHIP_LANE, PLOT_W, TRUTH_H, TRUTH_Y};
use crate::scenario::{DOWNSTREAM, LEASE_STORE};
use crate::svg::document::{esc, num, text_width, GRID, INK, MUTED, RED};
use crate::timeline::WriteFate;
use crate::units::secs;

impl Picture<'_> {
    pub(super) fn lease_store(&mut self) {
        let si = self.lanes.by_key[LEASE_STORE];
        let y = self.lanes.lanes[si].y;
        self.doc.open("lease-store", "");
        for h in &self.timeline.truth {
            if !self.scale.meets(h.start_ns, h.end_ns) {
                continue;
            }
            let (x0, x1) = (self.scale.x(h.start_ns), self.scale.x(h.end_ns));
            self.doc.rect(
                x0,
                y + 20.0,
                (x1 - x0).max(1.0),
                13.0,
                &format!(
                    "class=\"holding\" data-token=\"{}\" fill=\"{}\" fill-opacity=\"0.85\"",
                    h.token,
                    token_colour(h.token)
                ),
                Some(&format!(
                    "{} holds token {}: {} → {}",
                    h.owner,
                    h.token,
                    secs(h.start_ns),
                    secs(h.end_ns)
                )),
            );
            if x1 - x0 > text_width(&h.owner, 10.0, false) + 6.0 {
                self.doc.text(
                    x0 + 4.0,
                    y + 30.5,
                    "font-size=\"10\" fill=\"#ffffff\"",
                    &h.owner,
                );
            }
        }
        for g in &self.timeline.grants {
            if !self.scale.contains(g.at_ns) {
                continue;
            }
            let x = self.scale.x(g.at_ns);
            self.doc.raw(&format!(
                "<path class=\"grant\" data-token=\"{}\" d=\"M{} {} L{} {} L{} {} Z\" fill=\"{}\"><title>granted token {} to {} at {}</title></path>",
                g.token,
                num(x - 5.0),
                num(y + 9.0),
                num(x + 5.0),
                num(y + 9.0),
                num(x),
                num(y + 18.0),
                token_colour(g.token),
                g.token,
                esc(&g.owner),
                secs(g.at_ns)
            ));
            let label = format!("token {}", g.token);
            let w = text_width(&label, 10.0, false);
            if self.strips[si].take(x + 7.0, w) {
                self.doc.text(
                    x + 7.0,
                    y + 16.0,
                    &format!("class=\"grant-label\" font-size=\"10\" font-weight=\"bold\" fill=\"{INK}\""),
                    &label,
                );
            }
        }
        let mut last_x = f64::NEG_INFINITY;
        for r in &self.timeline.refusals {
            if !self.scale.contains(r.at_ns) {
                continue;
            }
            let x = self.scale.x(r.at_ns);
            if x - last_x < 1.0 {
                continue;
            }
            last_x = x;
            self.doc.line(
                x,
                y + 37.0,
                x,
                y + 45.0,
                "class=\"refusal\" stroke=\"#8a8a8a\"",
                Some(&format!("refused {} at {}", r.owner, secs(r.at_ns))),
            );
        }
        self.doc.close();
    }

    pub(super) fn downstream(&mut self) {
        let di = self.lanes.by_key[DOWNSTREAM];
        let y = self.lanes.lanes[di].y;
        self.doc.open("downstream", "");
        let mut seen: BTreeMap<(i64, u64), ()> = BTreeMap::new();
        let mut bad = Vec::new();
        for w in &self.timeline.writes {
            if !self.scale.contains(w.at_ns) {
                continue;
            }
            if w.fate != WriteFate::Accepted || w.split_brain {
                bad.push(w);
                continue;
            }
            let x = self.scale.x(w.at_ns);
            // One tick per half pixel and token is all the eye can see.
            if seen
                .insert(((x * 2.0).round() as i64, w.token), ())
                .is_some()
            {
                continue;
            }
            self.doc.line(
                x,
                y + 24.0,
                x,
                y + 44.0,
                &format!(
                    "class=\"write accepted\" data-token=\"{}\" stroke=\"{}\" stroke-width=\"1.5\"",
                    w.token,
                    token_colour(w.token)
                ),
                None,
            );
        }
        self.doc.close();
        // Rejected and split-brain writes on top, with a dashed line from
        // the writer's lane.
        let mut highest = 0;
        let mut accepted = self
            .timeline
            .writes
            .iter()
            .filter(|w| w.fate == WriteFate::Accepted)
            .peekable();
        self.doc.open("bad-writes", "");
        for w in bad.into_iter().take(500) {
            while let Some(a) = accepted.next_if(|a| a.at_ns < w.at_ns) {
                highest = highest.max(a.token);
            }
            let x = self.scale.x(w.at_ns);
            if let Some(li) = self.lanes.of_owner(&w.owner, &w.node) {
                let from_y = self.lanes.lanes[li].y + TRUTH_Y + TRUTH_H;
                self.doc.line(
                    x,
                    from_y,
                    x,
                    y + 18.0,
                    &format!("class=\"write-path\" stroke=\"{RED}\" stroke-dasharray=\"3 3\""),
                    None,
                );
            }
            let (class, width, label, tip) = if w.split_brain {
                (
                    "write split-brain",
                    3.0,
                    format!("split-brain write: token {} accepted after token {highest}", w.token),
                    format!(
                        "SPLIT-BRAIN: {} wrote with token {} at {} after token {highest} had written, and it was accepted",
                        w.owner,
                        w.token,
                        secs(w.at_ns)
                    ),
                )
            } else {
                let why = if w.fate == WriteFate::RejectedWrongWriter {
                    "token of another writer"
                } else {
                    "stale token"
                };
                (
                    "write rejected",
                    2.5,
                    format!("rejected: token {} < {highest}", w.token),
                    format!(
                        "rejected ({why}): {} wrote with token {} at {}; the downstream had accepted token {highest}",
                        w.owner,
                        w.token,
                        secs(w.at_ns)
                    ),
                )
            };
            self.doc.line(
                x,
                y + 16.0,
                x,
                y + 50.0,
                &format!(
                    "class=\"{class}\" data-token=\"{}\" stroke=\"{RED}\" stroke-width=\"{}\"",
                    w.token,
                    num(width)
                ),
                Some(&tip),
            );
            if w.split_brain {
                self.doc.raw(&format!(
                    "<path class=\"split-brain-marker\" d=\"M{} {} L{} {} L{} {} Z\" fill=\"{RED}\"/>",
                    num(x - 7.0),
                    num(y + 3.0),
                    num(x + 7.0),
                    num(y + 3.0),
                    num(x),
                    num(y + 14.0)
                ));
            }
            let tw = text_width(&label, 11.0, false);
            let lx = if x + 10.0 + tw <= LEFT + PLOT_W {
                x + 10.0
            } else {
                x - 10.0 - tw
            };
            if self.strips[di].take(lx, tw) {
                self.doc.text(
                    lx,
                    y + 13.0,
                    &format!(
                        "class=\"{}-label\" font-size=\"11\" font-weight=\"bold\" fill=\"{RED}\"",
                        if w.split_brain {
                            "split-brain"
                        } else {
                            "rejected"
                        }
                    ),
                    &label,
                );
            }
        }
        self.doc.close();
    }

    pub(super) fn membership(&mut self) {
        let lane_y = self.lanes.get("membership").y;
        let (from, to) = (self.scale.from, self.scale.to);
        let live = &self.timeline.live;
        let max_live = live
            .iter()
            .map(|(_, c)| *c)
            .max()
            .unwrap_or(0)
            .max(self.timeline.nodes.len() as u64)
            .max(1);
        let (top, bottom) = (lane_y + 12.0, lane_y + MEMBERSHIP_LANE - 8.0);
        let yv = |c: u64| bottom - (c as f64 / max_live as f64) * (bottom - top);
        let doc = &mut self.doc;
        doc.open("membership", "");
        doc.line(
            LEFT,
            yv(max_live),
            LEFT + PLOT_W,
            yv(max_live),
            &format!("stroke=\"{GRID}\" stroke-dasharray=\"2 3\""),
            None,
        );
        doc.line(
            LEFT,
            yv(0),
            LEFT + PLOT_W,
            yv(0),
            &format!("stroke=\"{GRID}\""),
            None,
        );
        let at_from = live
            .iter()
            .take_while(|(t, _)| *t <= from)
            .last()
            .map_or(0, |(_, c)| *c);
        // Each level is labelled where it begins, when there is room.
        let mut steps: Vec<(f64, u64)> = vec![(self.scale.x(from), at_from)];
        let mut d = format!("M{} {}", num(self.scale.x(from)), num(yv(at_from)));
        let mut current = at_from;
        for &(t, c) in live.iter().filter(|(t, _)| *t > from && *t <= to) {
            let x = self.scale.x(t);
            let _ = write!(
                d,
                " L{} {} L{} {}",
                num(x),
                num(yv(current)),
                num(x),
                num(yv(c))
            );
            steps.push((x, c));
            current = c;
        }
        let _ = write!(d, " L{} {}", num(self.scale.x(to)), num(yv(current)));
        doc.raw(&format!(
            "<path class=\"live\" d=\"{d}\" fill=\"none\" stroke=\"#2f4f6f\" stroke-width=\"2\"/>"
        ));
        let mut strip = Strip::default();
        for (i, &(x, c)) in steps.iter().enumerate() {
            let next = steps.get(i + 1).map_or(LEFT + PLOT_W, |s| s.0);
            let label = c.to_string();
            let w = text_width(&label, 10.0, false);
            if next - x >= w + 6.0 && strip.take(x + 3.0, w) {
                doc.text(
                    x + 3.0,
                    yv(c) - 3.0,
                    &format!("class=\"live-label\" font-size=\"10\" fill=\"{MUTED}\""),
                    &label,
                );
            }
        }
        doc.close();
    }
}
