//! The header: the title, the scenario's description, the settings, the
//! replay command and the verdict (one sentence on what the run shows).

use std::fmt::Write as _;

use super::WIDTH;
use crate::report::Report;
use crate::scenario::Scenario;
use crate::svg::document::{fit, wrap, Doc, INK, MONO, MUTED, RED};
use crate::svg::time::{span_label, time_label};
use crate::timeline::Timeline;
use crate::units::{human, secs};

/// The header's inputs: scenario, report, timeline, replay command, zoom
/// note and the number of nodes not drawn.
pub(super) type HeaderText<'a> = (
    &'a Scenario,
    &'a Report,
    &'a Timeline,
    &'a str,
    &'a str,
    usize,
);

/// Draws the title, the description (up to two lines), the settings, the
/// replay command and the verdict; returns the y below them.
pub(super) fn header(doc: &mut Doc, text: HeaderText<'_>) -> f64 {
    const X: f64 = 30.0;
    let (scenario, report, timeline, replay, zoom_note, hidden) = text;
    let room = WIDTH - X - 16.0;
    doc.open("header", "");
    doc.text(
        X,
        30.0,
        &format!("class=\"title\" font-size=\"20\" font-weight=\"bold\" fill=\"{INK}\""),
        &match report.history {
            Some(_) => format!("{} · history", report.scenario),
            None => format!("{} · seed {}", report.scenario, report.seed),
        },
    );
    let mut y = 32.0;
    if let Some(description) = &scenario.description {
        let text = crate::report::summary::first_sentence(description);
        let lines = wrap(&text, 12.0, room, false);
        for (i, line) in lines.iter().take(2).enumerate() {
            let line = if i == 1 && lines.len() > 2 {
                fit(&format!("{line} {}", lines[2..].join(" ")), 12.0, room)
            } else {
                line.clone()
            };
            y += 17.0;
            doc.text(
                X,
                y,
                &format!(
                    "class=\"description\" font-size=\"12\" font-style=\"italic\" fill=\"{INK}\""
                ),
                &line,
            );
        }
    }
    let e = &scenario.election;
    let mut sub = format!(
        "{} {} · {} node{} · fencing {} · lease_ttl {}, renew every {}, safety margin {}",
        time_label(timeline.end_ns),
        if report.history.is_some() {
            "real"
        } else {
            "virtual"
        },
        scenario.nodes.len(),
        if scenario.nodes.len() == 1 { "" } else { "s" },
        if report.fencing { "on" } else { "OFF" },
        human(e.lease_ttl),
        human(e.renew_interval),
        human(e.effective_safety_margin())
    );
    if !zoom_note.is_empty() {
        let _ = write!(sub, " · {zoom_note}");
    }
    if hidden > 0 {
        let _ = write!(sub, " · {hidden} quiet nodes not shown");
    }
    y += 19.0;
    doc.text(
        X,
        y,
        &format!("class=\"subtitle\" font-size=\"12\" fill=\"{MUTED}\""),
        &fit(&sub, 12.0, room),
    );
    y += 19.0;
    doc.text(
        X,
        y,
        &format!("class=\"replay\" font-size=\"12\" font-family=\"{MONO}\" fill=\"{INK}\""),
        &format!("$ {replay}"),
    );
    let (verdict, colour) = verdict(report, timeline);
    y += 23.0;
    doc.text(
        X,
        y,
        &format!("class=\"verdict\" font-size=\"14\" font-weight=\"bold\" fill=\"{colour}\""),
        &fit(&verdict, 14.0, room),
    );
    doc.close();
    y + 14.0
}

/// One sentence on what the picture shows, and its colour.
fn verdict(report: &Report, timeline: &Timeline) -> (String, &'static str) {
    let overlap = if timeline.overlap_ns > 0 {
        format!(
            "; two processes believed they led for {}",
            span_label(timeline.overlap_ns)
        )
    } else {
        String::new()
    };
    let others = report
        .violations
        .iter()
        .filter(|v| v.invariant != "split-brain")
        .count();
    let extra = if others > 0 {
        format!(" · {others} other invariant violations")
    } else {
        String::new()
    };
    if let Some(w) = timeline.writes.iter().find(|w| w.split_brain) {
        let n = timeline.writes.iter().filter(|w| w.split_brain).count();
        return (
            format!(
                "SPLIT-BRAIN: {} wrote with token {} at {}, after a newer term had written, and the unfenced downstream accepted it{}{}",
                w.owner,
                w.token,
                secs(w.at_ns),
                if n > 1 { format!(" ({n} such writes)") } else { String::new() },
                extra
            ),
            RED,
        );
    }
    let rejected = report.writes.rejected_stale + report.writes.rejected_wrong_writer;
    if rejected > 0 {
        return (
            format!(
                "Fenced: {rejected} stale write{} rejected by the downstream, no split-brain{overlap}{extra}",
                if rejected == 1 { "" } else { "s" }
            ),
            if others > 0 { RED } else { "#2a7a3a" },
        );
    }
    (
        format!("No stale writes, no split-brain{overlap}{extra}"),
        if others > 0 { RED } else { "#2a7a3a" },
    )
}
