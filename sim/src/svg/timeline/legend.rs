//! The legend below the axis: a swatch and a label for the marks every
//! picture has, and for those the window shows, wrapped into rows.

use super::intervals::{no_lease, overlaps};
use super::{token_colour, Scale, NETWORK_FAULT, WIDTH};
use crate::svg::document::{num, text_width, Doc, INK, RED};
use crate::timeline::{Timeline, WriteFate};

/// The mark a legend entry shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Swatch {
    Belief,
    Truth,
    NoLease,
    TwoLeaders,
    Pause,
    Network,
    Crash,
    Down,
    Accepted,
    Rejected,
    SplitBrain,
    Grant,
    Refusal,
    Live,
}

/// The legend: the marks every picture has, and those this window shows.
pub(super) fn legend_items(timeline: &Timeline, scale: &Scale) -> Vec<(Swatch, String)> {
    let faults_in = |pause: bool| {
        timeline
            .faults
            .iter()
            .any(|f| (f.label == "pause") == pause && scale.meets(f.start_ns, f.end_ns))
    };
    let writes_in = |split: bool| {
        timeline.writes.iter().any(|w| {
            scale.contains(w.at_ns)
                && if split {
                    w.split_brain
                } else {
                    w.fate != WriteFate::Accepted
                }
        })
    };
    let crashes = timeline.crashes.iter().any(|c| scale.contains(c.at_ns));
    let present = |swatch: Swatch| match swatch {
        Swatch::NoLease => no_lease(timeline)
            .iter()
            .any(|&(_, s, e)| scale.meets(s, e)),
        Swatch::TwoLeaders => overlaps(&timeline.beliefs)
            .iter()
            .any(|&(a, b)| scale.meets(a, b)),
        Swatch::Pause => faults_in(true),
        Swatch::Network => faults_in(false),
        Swatch::Crash | Swatch::Down => crashes,
        Swatch::Rejected => writes_in(false),
        Swatch::SplitBrain => writes_in(true),
        _ => true,
    };
    [
        (Swatch::Belief, "believes it leads (colour = token)"),
        (Swatch::Truth, "the store gives it the lease"),
        (Swatch::NoLease, "believes it leads without the lease"),
        (Swatch::TwoLeaders, "two leaders at once"),
        (Swatch::Pause, "paused (GC / SIGSTOP)"),
        (Swatch::Network, "isolated / cut / partitioned"),
        (Swatch::Crash, "crash"),
        (Swatch::Down, "down"),
        (Swatch::Accepted, "write accepted"),
        (Swatch::Rejected, "write rejected (stale token)"),
        (Swatch::SplitBrain, "split-brain write (accepted late)"),
        (Swatch::Grant, "lease granted (new token)"),
        (Swatch::Refusal, "lease request refused"),
        (Swatch::Live, "live nodes"),
    ]
    .into_iter()
    .filter(|(swatch, _)| present(*swatch))
    .map(|(swatch, label)| (swatch, label.to_string()))
    .collect()
}

const LEGEND_ROW: f64 = 20.0;

fn legend_rows(items: &[(Swatch, String)]) -> Vec<Vec<(f64, usize)>> {
    let mut rows: Vec<Vec<(f64, usize)>> = vec![Vec::new()];
    let mut x = 8.0;
    for (i, (_, label)) in items.iter().enumerate() {
        let w = 26.0 + text_width(label, 11.0, false) + 18.0;
        if x + w > WIDTH - 8.0 && x > 8.0 {
            rows.push(Vec::new());
            x = 8.0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((x, i));
        }
        x += w;
    }
    rows
}

pub(super) fn legend_height(items: &[(Swatch, String)]) -> f64 {
    legend_rows(items).len() as f64 * LEGEND_ROW
}

pub(super) fn legend(doc: &mut Doc, items: &[(Swatch, String)], y0: f64) {
    doc.open("legend", "");
    for (r, row) in legend_rows(items).iter().enumerate() {
        let y = y0 + r as f64 * LEGEND_ROW;
        for &(x, i) in row {
            let (swatch, label) = &items[i];
            let (sx, sy) = (x, y - 10.0);
            match swatch {
                Swatch::Belief => {
                    doc.rect(sx, sy, 10.0, 12.0, &format!("fill=\"{}\"", token_colour(1)), None);
                    doc.rect(sx + 10.0, sy, 10.0, 12.0, &format!("fill=\"{}\"", token_colour(2)), None);
                }
                Swatch::Truth => doc.rect(sx, sy + 4.0, 20.0, 5.0, &format!("fill=\"{}\"", token_colour(1)), None),
                Swatch::NoLease => doc.rect(
                    sx,
                    sy,
                    20.0,
                    12.0,
                    &format!("fill=\"url(#hatch-nolease)\" stroke=\"{RED}\" stroke-width=\"1.5\""),
                    None,
                ),
                Swatch::TwoLeaders => doc.rect(
                    sx,
                    sy,
                    20.0,
                    12.0,
                    &format!("fill=\"{RED}\" fill-opacity=\"0.12\" stroke=\"{RED}\" stroke-opacity=\"0.5\" stroke-dasharray=\"3 3\""),
                    None,
                ),
                Swatch::Pause => doc.rect(sx, sy, 20.0, 12.0, "fill=\"url(#hatch-pause)\" stroke=\"#333333\"", None),
                Swatch::Network => doc.rect(
                    sx,
                    sy,
                    20.0,
                    12.0,
                    &format!("fill=\"{NETWORK_FAULT}\" fill-opacity=\"0.35\" stroke=\"{NETWORK_FAULT}\" stroke-dasharray=\"4 2\""),
                    None,
                ),
                Swatch::Crash => {
                    doc.line(sx + 4.0, sy, sx + 16.0, sy + 12.0, &format!("stroke=\"{INK}\" stroke-width=\"3\""), None);
                    doc.line(sx + 4.0, sy + 12.0, sx + 16.0, sy, &format!("stroke=\"{INK}\" stroke-width=\"3\""), None);
                }
                Swatch::Down => doc.rect(sx, sy, 20.0, 12.0, "fill=\"#d9d9d9\"", None),
                Swatch::Accepted => {
                    for k in 0..4 {
                        let xx = sx + 3.0 + k as f64 * 5.0;
                        doc.line(xx, sy, xx, sy + 12.0, &format!("stroke=\"{}\" stroke-width=\"1.5\"", token_colour(1 + k / 2)), None);
                    }
                }
                Swatch::Rejected => doc.line(sx + 10.0, sy - 2.0, sx + 10.0, sy + 14.0, &format!("stroke=\"{RED}\" stroke-width=\"2.5\""), None),
                Swatch::SplitBrain => {
                    doc.line(sx + 10.0, sy + 2.0, sx + 10.0, sy + 14.0, &format!("stroke=\"{RED}\" stroke-width=\"3\""), None);
                    doc.raw(&format!(
                        "<path d=\"M{} {} L{} {} L{} {} Z\" fill=\"{RED}\"/>",
                        num(sx + 4.0),
                        num(sy - 4.0),
                        num(sx + 16.0),
                        num(sy - 4.0),
                        num(sx + 10.0),
                        num(sy + 4.0)
                    ));
                }
                Swatch::Grant => doc.raw(&format!(
                    "<path d=\"M{} {} L{} {} L{} {} Z\" fill=\"{}\"/>",
                    num(sx + 5.0),
                    num(sy + 1.0),
                    num(sx + 15.0),
                    num(sy + 1.0),
                    num(sx + 10.0),
                    num(sy + 10.0),
                    token_colour(1)
                )),
                Swatch::Refusal => {
                    for k in 0..3 {
                        let xx = sx + 5.0 + k as f64 * 5.0;
                        doc.line(xx, sy + 3.0, xx, sy + 11.0, "stroke=\"#8a8a8a\"", None);
                    }
                }
                Swatch::Live => doc.raw(&format!(
                    "<path d=\"M{} {} L{} {} L{} {} L{} {}\" fill=\"none\" stroke=\"#2f4f6f\" stroke-width=\"2\"/>",
                    num(sx),
                    num(sy + 2.0),
                    num(sx + 10.0),
                    num(sy + 2.0),
                    num(sx + 10.0),
                    num(sy + 10.0),
                    num(sx + 20.0),
                    num(sy + 10.0)
                )),
            }
            doc.text(
                sx + 26.0,
                y,
                &format!("font-size=\"11\" fill=\"{INK}\""),
                label,
            );
        }
    }
    doc.close();
}
