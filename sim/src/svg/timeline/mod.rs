//! The run-timeline picture (see the [`svg`](crate::svg) module docs for what
//! it shows). [`render_timeline`] measures the header, lays the lanes out
//! below it and draws, bottom layer first: the lane backgrounds and the time
//! axis, crashed nodes' down time, network faults, the two-leader bands, the
//! beliefs over the truth, pauses, the labels, crashes and restarts, the
//! lease store, the downstream, the membership, the heal line and the legend.
//! The draw order is the SVG's layer order: moving a call changes the picture.
//!
//! The files, by concern:
//!
//! * this one: the layout constants, the [`Scale`] from time to x, the label
//!   [`Strip`]s, the token colours and the drawing order;
//! * `lanes`: which lanes there are and in which lane a host's, owner's or
//!   node's marks go;
//! * `intervals`: the spans computed from the report and the timeline (two
//!   leaders at once, belief without the lease);
//! * the marks, one `Picture` method per kind: `frame` (lane backgrounds, the
//!   axis, the two-leader bands, the heal line), `nodes` (everything in a node
//!   lane) and `services` (the lease store, downstream and membership lanes);
//! * `header` (title, settings, replay command, verdict) and `legend`.
//!
//! It draws with the toolkit (`svg::document`, `svg::time`); with
//! `svg::window` it is the only part of `svg` that reads runs.

mod frame;
mod header;
mod intervals;
mod lanes;
mod legend;
mod nodes;
mod services;

pub use self::lanes::MAX_NODE_LANES;

use super::document::Doc;
use super::window::Window;
use crate::report::Report;
use crate::scenario::Scenario;
use crate::timeline::Timeline;

use self::header::header;
use self::lanes::Lanes;
use self::legend::{legend, legend_height, legend_items};

/// Fencing-token colours: distinct, colour-blind friendly, never red (red
/// means rejected or split-brain) nor amber (network faults).
const TOKEN_COLOURS: [&str; 8] = [
    "#3b75af", // blue
    "#4a9a4a", // green
    "#8e63b5", // purple
    "#1f9e9a", // teal
    "#9c6b4e", // brown
    "#c45c9a", // pink
    "#55657a", // slate
    "#7d8f2b", // olive
];

/// The colour of fencing token `token`.
pub fn token_colour(token: u64) -> &'static str {
    TOKEN_COLOURS[(token.saturating_sub(1) % TOKEN_COLOURS.len() as u64) as usize]
}

/// Amber: network faults (isolation, cuts, partitions).
const NETWORK_FAULT: &str = "#f2a93b";

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 132.0;
const RIGHT: f64 = 28.0;
const PLOT_W: f64 = WIDTH - LEFT - RIGHT;
const NODE_LANE: f64 = 56.0;
const STORE_LANE: f64 = 56.0;
const DOWNSTREAM_LANE: f64 = 62.0;
const MEMBERSHIP_LANE: f64 = 48.0;
/// Inside a node lane: the label strip, the belief bar and the truth band.
const BELIEF_Y: f64 = 16.0;
const BELIEF_H: f64 = 20.0;
const TRUTH_Y: f64 = 39.0;
const TRUTH_H: f64 = 7.0;

/// Maps true time (ns since the start of the run) to x in the plot, for
/// the span `[from, to]` drawn.
struct Scale {
    from: u64,
    to: u64,
}

impl Scale {
    fn x(&self, ns: u64) -> f64 {
        let ns = ns.clamp(self.from, self.to);
        LEFT + (ns - self.from) as f64 / (self.to - self.from).max(1) as f64 * PLOT_W
    }
    /// Whether `[a, b]` meets the window.
    fn meets(&self, a: u64, b: u64) -> bool {
        b >= self.from && a <= self.to
    }
    fn contains(&self, t: u64) -> bool {
        t >= self.from && t <= self.to
    }
}

/// Labels placed in one strip without overlapping each other.
#[derive(Default)]
struct Strip {
    taken: Vec<(f64, f64)>,
}

impl Strip {
    /// Reserves `[x, x + w]` (plus a gap) if it overlaps nothing reserved.
    fn take(&mut self, x: f64, w: f64) -> bool {
        let (a, b) = (x - 3.0, x + w + 3.0);
        if self.taken.iter().any(|&(s, e)| a < e && s < b) {
            return false;
        }
        self.taken.push((a, b));
        true
    }
}

/// The hatch patterns of pauses and of belief without the lease.
fn defs(doc: &mut Doc) {
    doc.raw(
        "<defs>\n\
         <pattern id=\"hatch-pause\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(45)\">\
         <rect width=\"6\" height=\"6\" fill=\"#ffffff\" fill-opacity=\"0.3\"/>\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#222222\" stroke-width=\"1.6\"/></pattern>\n\
         <pattern id=\"hatch-nolease\" patternUnits=\"userSpaceOnUse\" width=\"7\" height=\"7\" patternTransform=\"rotate(-45)\">\
         <line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"7\" stroke=\"#d62728\" stroke-width=\"3\"/></pattern>\n\
         </defs>",
    );
}

/// Everything needed while drawing.
struct Picture<'a> {
    timeline: &'a Timeline,
    scale: Scale,
    lanes: Lanes,
    /// Per lane, the label strip at its top.
    strips: Vec<Strip>,
    /// Belief bars' extents and tokens, labelled after the pauses are drawn.
    belief_labels: Vec<(f64, f64, f64, u64)>,
    doc: Doc,
}

/// Renders the run as an SVG document (see the [`svg`](crate::svg) module
/// docs). `replay_command` is printed in the title; `window` picks the span
/// shown (an invalid window is clamped to the run; check it first with
/// [`Window::check`]).
pub fn render_timeline(
    scenario: &Scenario,
    report: &Report,
    timeline: &Timeline,
    replay_command: &str,
    window: Window,
) -> String {
    let (from, to, zoom_note) = window.shown(scenario, timeline);
    let scale = Scale { from, to };
    // The header's height depends on its text; measure it on a scratch
    // document, then lay the lanes out below it.
    let hidden = Lanes::build(timeline, &scale, 0.0).hidden;
    let header_text = (
        scenario,
        report,
        timeline,
        replay_command,
        zoom_note.as_str(),
        hidden,
    );
    let header_h = header(&mut Doc::new(1.0, 1.0, ""), header_text);
    let lanes = Lanes::build(timeline, &scale, header_h + 22.0);
    let legend_list = legend_items(timeline, &scale);
    let legend_y = lanes.bottom + 56.0;
    let height = legend_y + legend_height(&legend_list) + 8.0;
    let mut doc = Doc::new(
        WIDTH,
        height,
        &format!("{} · seed {}: timeline", report.scenario, report.seed),
    );
    defs(&mut doc);
    header(&mut doc, header_text);
    let mut p = Picture {
        timeline,
        strips: lanes.lanes.iter().map(|_| Strip::default()).collect(),
        belief_labels: Vec::new(),
        scale,
        lanes,
        doc,
    };
    p.lane_backgrounds();
    p.time_axis();
    p.down_time();
    p.fault_spans(false);
    p.two_leaders();
    p.beliefs();
    p.fault_spans(true);
    p.fault_labels();
    p.crashes_and_restarts();
    p.lease_store();
    p.downstream();
    p.membership();
    p.heal();
    legend(&mut p.doc, &legend_list, legend_y);
    p.doc.finish()
}
