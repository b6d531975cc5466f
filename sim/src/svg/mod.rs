//! Pictures of a run: a self-contained SVG timeline.
//!
//! Time runs left to right. Each node has a lane with its **belief** (it
//! thinks it leads; a bar coloured by the term's fencing token, from the
//! report's terms) above a thin band of **truth** (the lease store says it
//! holds the lease; from the [`Timeline`]). Where a node believes without the
//! lease the bar is striped red, and wherever two nodes believe at once a red
//! band crosses every lane: the split-brain window. Pauses are hatched,
//! crashes are a cross (with the node's down time greyed), isolation, cuts
//! and partitions are shaded on the lanes of the hosts they affect. Below the
//! nodes: the lease store (the holder, grants with their token numbers,
//! refusals as ticks), the downstream (accepted writes in their token's
//! colour, rejected writes in red, split-brain writes flagged), and the
//! membership's live count as a step line. A title names the scenario, the
//! seed and the command that replays the run; a legend explains the marks.
//!
//! The output is deterministic (no hash-map order, no clock, no randomness):
//! the same run renders to the same bytes, so pictures can be snapshotted.
//! It uses no scripts, no external resources and only generic font families.
//!
//! **Zoom.** A [`Window`] with `from`/`to` shows that span. Without one, a
//! run of at most [`AUTO_ZOOM_AFTER`] is shown whole; a longer run is shown
//! around its interesting events (see [`auto_window`]).

use crate::units::{human, nanos, secs};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::report::{Report, Term};
use crate::scenario::{Scenario, DOWNSTREAM, LEASE_STORE};
use crate::timeline::{Timeline, WriteFate};

/// Runs longer than this are zoomed automatically (when no window is given)
/// to the span of their interesting events.
pub const AUTO_ZOOM_AFTER: Duration = Duration::from_secs(300);

/// The most node lanes drawn; further nodes are counted in a note. Nodes
/// that led, were faulted or wrote in the window come first.
pub const MAX_NODE_LANES: usize = 16;

/// The span of the run to draw. Both ends unset: automatic (see
/// [`auto_window`]); one end set: from it to the other end of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The first instant shown (true time since the start of the run).
    pub from: Option<Duration>,
    /// The last instant shown.
    pub to: Option<Duration>,
}

impl Window {
    /// The whole run, or the automatic zoom for long runs.
    pub fn auto() -> Self {
        Window::default()
    }

    /// Checks the window against a run of length `run`: `from` must be
    /// before `to` and before the end of the run. (`to` past the end is
    /// clamped.)
    ///
    /// # Errors
    /// One sentence naming the flag and the problem.
    pub fn check(&self, run: Duration) -> Result<(), String> {
        if let (Some(from), Some(to)) = (self.from, self.to) {
            if from >= to {
                return Err(format!(
                    "--from {} must be before --to {}",
                    human(from),
                    human(to)
                ));
            }
        }
        if let Some(from) = self.from {
            if from >= run {
                return Err(format!(
                    "--from {} is not inside the run, which lasts {}",
                    human(from),
                    human(run)
                ));
            }
        }
        if self.to.is_some_and(|to| to.is_zero()) {
            return Err("--to must be after the start of the run".to_string());
        }
        Ok(())
    }
}

const NS: u64 = 1_000_000;

fn ms_to_ns(ms: u64) -> u64 {
    ms.saturating_mul(NS)
}

/// The automatic zoom of a run longer than [`AUTO_ZOOM_AFTER`]: the span from
/// the first to the last *interesting* event — a fault starting or ending, a
/// crash, a process (re)start after time zero, a grant of a token above 1, a
/// term ending before the run did, a rejected or split-brain write, the heal —
/// widened on each side by a margin of one lease TTL or 5% of the span,
/// whichever is longer, and clamped to the run. `None` (draw the whole run)
/// when the run is short or nothing interesting happened.
pub fn auto_window(
    scenario: &Scenario,
    report: &Report,
    timeline: &Timeline,
) -> Option<(u64, u64)> {
    let end = timeline.end_ns;
    if end <= nanos(AUTO_ZOOM_AFTER) {
        return None;
    }
    let mut events: Vec<u64> = Vec::new();
    for f in &timeline.faults {
        events.push(f.start_ns);
        if f.end_ns < end {
            events.push(f.end_ns);
        }
    }
    events.extend(timeline.crashes.iter().map(|m| m.at_ns));
    // Restarts and replacements (not a node's first process).
    for s in &timeline.starts {
        if timeline
            .starts
            .iter()
            .any(|o| o.node == s.node && o.at_ns < s.at_ns)
        {
            events.push(s.at_ns);
        }
    }
    events.extend(
        timeline
            .grants
            .iter()
            .filter(|m| m.token > 1)
            .map(|m| m.at_ns),
    );
    events.extend(
        report
            .terms
            .iter()
            .filter(|t| t.end_reason != "run-ended")
            .map(|t| ms_to_ns(t.end_ms)),
    );
    events.extend(
        timeline
            .writes
            .iter()
            .filter(|w| w.fate != WriteFate::Accepted || w.split_brain)
            .map(|w| w.at_ns),
    );
    events.extend(timeline.heal_ns);
    events.retain(|&t| t <= end);
    let (lo, hi) = (*events.iter().min()?, *events.iter().max()?);
    let margin = nanos(scenario.election.lease_ttl).max((hi - lo) / 20);
    // Whole seconds read better in the title.
    const S: u64 = 1_000_000_000;
    let from = lo.saturating_sub(margin) / S * S;
    let to = hi
        .saturating_add(margin)
        .div_ceil(S)
        .saturating_mul(S)
        .min(end);
    (to > from && (from > 0 || to < end)).then_some((from, to))
}

// ----- SVG primitives (shared with the sweep chart) -----

/// Escapes text for XML content and attribute values.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with at most two decimals and no trailing zeros.
pub(crate) fn num(x: f64) -> String {
    let x = if x.is_finite() { x } else { 0.0 };
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The approximate width of `text` at `size` px: generic fonts have no
/// metrics we can read, so labels are placed with a conservative estimate.
pub(crate) fn text_width(text: &str, size: f64, mono: bool) -> f64 {
    let per = if mono { 0.61 } else { 0.6 };
    text.chars().count() as f64 * size * per
}

/// The sans-serif family used for labels.
pub(crate) const SANS: &str = "Helvetica, Arial, sans-serif";
/// The monospace family used for commands and numbers.
pub(crate) const MONO: &str = "Menlo, Consolas, 'DejaVu Sans Mono', monospace";

/// A growing SVG document.
pub(crate) struct Doc {
    pub(crate) out: String,
}

impl Doc {
    pub(crate) fn new(width: f64, height: f64, title: &str) -> Self {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"{SANS}\" role=\"img\">",
            w = num(width),
            h = num(height)
        );
        let _ = writeln!(out, "<title>{}</title>", esc(title));
        let _ = writeln!(
            out,
            "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>",
            num(width),
            num(height)
        );
        Doc { out }
    }

    pub(crate) fn raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    pub(crate) fn open(&mut self, class: &str, extra: &str) {
        let _ = writeln!(self.out, "<g class=\"{}\"{extra}>", esc(class));
    }

    pub(crate) fn close(&mut self) {
        self.out.push_str("</g>\n");
    }

    /// A rectangle; `attrs` is appended verbatim (fill, class, ...); `tip`
    /// becomes a hover tooltip.
    pub(crate) fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, attrs: &str, tip: Option<&str>) {
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {attrs}",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0))
        );
        self.tip_close(tip, "rect");
    }

    pub(crate) fn line(
        &mut self,
        x1: f64,
        y1: f64,
        x2: f64,
        y2: f64,
        attrs: &str,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {attrs}",
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
        self.tip_close(tip, "line");
    }

    fn tip_close(&mut self, tip: Option<&str>, tag: &str) {
        match tip {
            Some(tip) => {
                let _ = writeln!(self.out, "><title>{}</title></{tag}>", esc(tip));
            }
            None => self.out.push_str("/>\n"),
        }
    }

    /// Text at `(x, y)` (baseline); `attrs` sets size, anchor, fill, class.
    pub(crate) fn text(&mut self, x: f64, y: f64, attrs: &str, text: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" {attrs}>{}</text>",
            num(x),
            num(y),
            esc(text)
        );
    }

    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

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

/// Red: rejected writes, split-brain, belief without the lease.
pub(crate) const RED: &str = "#d62728";
const INK: &str = "#222222";
const MUTED: &str = "#666666";
const GRID: &str = "#e4e4e4";
const NETWORK_FAULT: &str = "#f2a93b";

/// A "nice" tick step giving at most `max_ticks` ticks: 1, 2 or 5 × 10^k
/// ms below 10 s, then steps that read well as minutes and hours.
pub(crate) fn tick_step(span_ns: u64, max_ticks: u64) -> u64 {
    const S: u64 = 1_000_000_000;
    let mut candidates: Vec<u64> = Vec::new();
    let mut decade = NS;
    while decade < 10 * S {
        candidates.extend([decade, 2 * decade, 5 * decade]);
        decade *= 10;
    }
    candidates.extend(
        [
            10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
        ]
        .map(|s| s * S),
    );
    let max_ticks = max_ticks.max(1);
    candidates
        .into_iter()
        .find(|&step| span_ns / step <= max_ticks)
        .unwrap_or_else(|| (span_ns / max_ticks).div_ceil(86_400 * S).max(1) * 86_400 * S)
}

/// A time label: `850ms`, `12.5s`, `40s`, `1m30s`, `2h5m`.
pub(crate) fn time_label(ns: u64) -> String {
    let ms = ns / NS;
    if ms < 1000 && ms > 0 && ns % 1_000_000_000 != 0 {
        return format!("{ms}ms");
    }
    let s = ms / 1000;
    let frac = ms % 1000;
    if s < 60 {
        return if frac == 0 {
            format!("{s}s")
        } else {
            let t = format!("{s}.{frac:03}");
            format!("{}s", t.trim_end_matches('0'))
        };
    }
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 || (h > 0 && sec > 0) {
        let _ = write!(out, "{m}m");
    }
    if sec > 0 || frac > 0 {
        if frac > 0 {
            let t = format!("{sec}.{frac:03}");
            let _ = write!(out, "{}s", t.trim_end_matches('0'));
        } else {
            let _ = write!(out, "{sec}s");
        }
    }
    out
}

/// A span's length for labels: `40s`, `11.04s`, `350ms`, `2m5s`.
fn span_label(ns: u64) -> String {
    let ms = ns / NS;
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if ms < 60_000 {
        let s = format!("{:.2}", ms as f64 / 1000.0);
        return format!("{}s", s.trim_end_matches('0').trim_end_matches('.'));
    }
    time_label(ms * NS)
}

// ----- the timeline picture -----

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

/// Whose lane a fault host is: a node id (owners lose their `#n`), or the
/// lease store or downstream.
fn host_node(host: &str) -> &str {
    host.split_once('#').map_or(host, |(node, _)| node)
}

/// Intervals (start, end) where at least two terms overlap.
fn overlaps(terms: &[Term]) -> Vec<(u64, u64)> {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for t in terms {
        if t.end_ms > t.start_ms {
            edges.push((ms_to_ns(t.start_ms), 1));
            edges.push((ms_to_ns(t.end_ms), -1));
        }
    }
    // Ends before starts at the same instant: touching terms do not overlap.
    edges.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut depth = 0;
    let mut since = 0;
    for (t, d) in edges {
        let before = depth;
        depth += d;
        if before < 2 && depth >= 2 {
            since = t;
        } else if before >= 2 && depth < 2 && t > since {
            out.push((since, t));
        }
    }
    out
}

/// `[a, b)` minus a sorted list of intervals.
fn subtract(a: u64, b: u64, holes: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = a;
    for &(s, e) in holes {
        if e <= at || s >= b {
            continue;
        }
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    if at < b {
        out.push((at, b));
    }
    out
}

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

/// One horizontal lane of the picture.
struct Lane {
    /// `node`, `lease-store`, `downstream` or `membership`.
    kind: &'static str,
    /// The node id, or the owner when a node's incarnations overlap (a
    /// zombie and its replacement each get a lane).
    key: String,
    /// The node a node lane belongs to.
    node: String,
    y: f64,
    h: f64,
}

/// The lanes and how hosts, owners and nodes map onto them.
struct Lanes {
    lanes: Vec<Lane>,
    by_key: BTreeMap<String, usize>,
    /// Nodes drawn with one lane per incarnation.
    split: BTreeMap<String, Vec<usize>>,
    /// Nodes not drawn.
    hidden: usize,
    /// Where the lanes begin (below the header and the overlap labels).
    top: f64,
    bottom: f64,
}

impl Lanes {
    fn build<'a>(timeline: &'a Timeline, report: &'a Report, scale: &Scale, top: f64) -> Self {
        // Which nodes matter in the window: those that led first, then
        // those faulted, then the rest, each in scenario order.
        let mut rank: BTreeMap<&str, u8> = BTreeMap::new();
        let mut note = |node: &'a str, r: u8| {
            let e = rank.entry(node).or_insert(r);
            *e = (*e).min(r);
        };
        for t in &report.terms {
            if scale.meets(ms_to_ns(t.start_ms), ms_to_ns(t.end_ms)) {
                note(t.node.as_str(), 0);
            }
        }
        for f in &timeline.faults {
            if scale.meets(f.start_ns, f.end_ns) {
                note(host_node(&f.host), 1);
            }
        }
        for c in &timeline.crashes {
            if scale.contains(c.at_ns) {
                note(c.node.as_str(), 1);
            }
        }
        let order: BTreeMap<&str, usize> = timeline
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut shown: Vec<&str> = timeline.nodes.iter().map(String::as_str).collect();
        shown.sort_by_key(|n| rank.get(n).copied().unwrap_or(2));
        shown.truncate(MAX_NODE_LANES);
        shown.sort_by_key(|n| order.get(n).copied().unwrap_or(usize::MAX));
        let hidden = timeline.nodes.len().saturating_sub(shown.len());

        // Incarnations of each node: (owner, start, end).
        let mut lives: BTreeMap<&str, Vec<(&str, u64, u64)>> = BTreeMap::new();
        for s in &timeline.starts {
            let died = timeline
                .crashes
                .iter()
                .filter(|c| c.owner == s.owner && c.at_ns >= s.at_ns)
                .map(|c| c.at_ns)
                .min()
                .unwrap_or(timeline.end_ns);
            lives
                .entry(s.node.as_str())
                .or_default()
                .push((s.owner.as_str(), s.at_ns, died));
        }
        let mut lanes = Vec::new();
        let mut by_key = BTreeMap::new();
        let mut split: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut y = top;
        for node in shown {
            let mut owners = lives.remove(node).unwrap_or_default();
            owners.sort_by_key(|&(_, start, _)| start);
            let overlapping = owners
                .windows(2)
                .any(|w| w[1].1 < w[0].2 && scale.meets(w[1].1, w[0].2));
            let keys: Vec<String> = if overlapping {
                owners.iter().map(|(o, _, _)| o.to_string()).collect()
            } else {
                vec![node.to_string()]
            };
            for key in keys {
                by_key.insert(key.clone(), lanes.len());
                if overlapping {
                    split.entry(node.to_string()).or_default().push(lanes.len());
                }
                lanes.push(Lane {
                    kind: "node",
                    key,
                    node: node.to_string(),
                    y,
                    h: NODE_LANE,
                });
                y += NODE_LANE;
            }
        }
        for (kind, key, h) in [
            ("lease-store", LEASE_STORE, STORE_LANE),
            ("downstream", DOWNSTREAM, DOWNSTREAM_LANE),
            ("membership", "membership", MEMBERSHIP_LANE),
        ] {
            by_key.insert(key.to_string(), lanes.len());
            lanes.push(Lane {
                kind,
                key: key.to_string(),
                node: String::new(),
                y,
                h,
            });
            y += h;
        }
        Lanes {
            lanes,
            by_key,
            split,
            hidden,
            top,
            bottom: y,
        }
    }

    /// The lane of a process (owner `node#n` of `node`).
    fn of_owner(&self, owner: &str, node: &str) -> Option<usize> {
        if self.split.contains_key(node) {
            self.by_key.get(owner).copied()
        } else {
            self.by_key.get(node).copied()
        }
    }

    /// The lanes a fault on `host` shades.
    fn of_host(&self, host: &str) -> Vec<usize> {
        let node = host_node(host);
        if node != host {
            return self.of_owner(host, node).into_iter().collect();
        }
        match self.split.get(node) {
            Some(all) => all.clone(),
            None => self.by_key.get(node).copied().into_iter().collect(),
        }
    }

    fn get(&self, key: &str) -> &Lane {
        &self.lanes[self.by_key[key]]
    }
}

/// Everything needed while drawing.
struct Picture<'a> {
    report: &'a Report,
    timeline: &'a Timeline,
    scale: Scale,
    lanes: Lanes,
    /// Per lane, the label strip at its top.
    strips: Vec<Strip>,
    /// Belief bars' extents and tokens, labelled after the pauses are drawn.
    belief_labels: Vec<(f64, f64, f64, u64)>,
    doc: Doc,
}

/// Renders the run as an SVG document (see the module docs). `replay_command`
/// is printed in the title; `window` picks the span shown (an invalid window
/// is clamped to the run; check it first with [`Window::check`]).
pub fn render_timeline(
    scenario: &Scenario,
    report: &Report,
    timeline: &Timeline,
    replay_command: &str,
    window: Window,
) -> String {
    let end = timeline.end_ns.max(1);
    let (from, to, zoom_note) = match (window.from, window.to) {
        (None, None) => match auto_window(scenario, report, timeline) {
            Some((a, b)) => (
                a,
                b,
                format!(
                    "showing {}–{} of {} (auto-zoom; --from/--to to change)",
                    time_label(a),
                    time_label(b),
                    time_label(end)
                ),
            ),
            None => (0, end, String::new()),
        },
        (f, t) => {
            let a = f.map_or(0, nanos).min(end.saturating_sub(1));
            let b = t.map_or(end, nanos).min(end).max(a + 1);
            (
                a,
                b,
                format!(
                    "showing {}–{} of {}",
                    time_label(a),
                    time_label(b),
                    time_label(end)
                ),
            )
        }
    };
    let scale = Scale { from, to };
    // The header's height depends on its text; measure it on a scratch
    // document, then lay the lanes out below it.
    let hidden = Lanes::build(timeline, report, &scale, 0.0).hidden;
    let header_text = (
        scenario,
        report,
        timeline,
        replay_command,
        zoom_note.as_str(),
        hidden,
    );
    let header_h = header(&mut Doc::new(1.0, 1.0, ""), header_text);
    let lanes = Lanes::build(timeline, report, &scale, header_h + 22.0);
    let legend_list = legend_items(report, timeline, &scale);
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
        report,
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

    fn lane_backgrounds(&mut self) {
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

    fn time_axis(&mut self) {
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

    /// Crashed nodes' down time, under the bars.
    fn down_time(&mut self) {
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
    fn fault_spans(&mut self, pauses: bool) {
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

    /// A red band across the lanes wherever two processes believe they lead.
    fn two_leaders(&mut self) {
        let top = self.lanes.top - 2.0;
        let bottom = self.lanes.get(DOWNSTREAM).y + DOWNSTREAM_LANE;
        let mut strip = Strip::default();
        self.doc.open("overlaps", "");
        for (a, b) in overlaps(&self.report.terms) {
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

    fn beliefs(&mut self) {
        let no_lease = no_lease(self.report, self.timeline);
        let mut labels: Vec<(f64, f64, f64, u64)> = Vec::new();
        self.doc.open("beliefs", "");
        for (index, term) in self.report.terms.iter().enumerate() {
            let Some(li) = self.lanes.of_owner(&term.owner, &term.node) else {
                continue;
            };
            let lane_y = self.lanes.lanes[li].y;
            let (a, b) = (ms_to_ns(term.start_ms), ms_to_ns(term.end_ms));
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
    fn fault_labels(&mut self) {
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
        for (term, s, e) in no_lease(self.report, self.timeline) {
            let term = &self.report.terms[term];
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

    fn crashes_and_restarts(&mut self) {
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

    fn lease_store(&mut self) {
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

    fn downstream(&mut self) {
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

    fn membership(&mut self) {
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

    fn heal(&mut self) {
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

/// The header's inputs: scenario, report, timeline, replay command, zoom
/// note and the number of nodes not drawn.
type HeaderText<'a> = (
    &'a Scenario,
    &'a Report,
    &'a Timeline,
    &'a str,
    &'a str,
    usize,
);

/// Draws the title, the description (up to two lines), the settings, the
/// replay command and the verdict; returns the y below them.
fn header(doc: &mut Doc, text: HeaderText<'_>) -> f64 {
    const X: f64 = 30.0;
    let (scenario, report, timeline, replay, zoom_note, hidden) = text;
    let room = WIDTH - X - 16.0;
    doc.open("header", "");
    doc.text(
        X,
        30.0,
        &format!("class=\"title\" font-size=\"20\" font-weight=\"bold\" fill=\"{INK}\""),
        &format!("{} · seed {}", report.scenario, report.seed),
    );
    let mut y = 32.0;
    if let Some(description) = &scenario.description {
        let text = crate::summary::first_sentence(description);
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
        "{} virtual · {} node{} · fencing {} · lease_ttl {}, renew every {}, safety margin {}",
        time_label(timeline.end_ns),
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

/// `text`, cut at a word with an ellipsis if it is wider than `room` px.
pub(crate) fn fit(text: &str, size: f64, room: f64) -> String {
    if text_width(text, size, false) <= room {
        return text.to_string();
    }
    let first = wrap(text, size, room - size, false).swap_remove(0);
    format!("{first}…")
}

/// `text` in lines at most `room` px wide, broken at spaces (a word wider
/// than `room` gets a line of its own).
pub(crate) fn wrap(text: &str, size: f64, room: f64, mono: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && text_width(&candidate, size, mono) > room {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    lines.push(line);
    lines
}

/// One sentence on what the picture shows, and its colour.
fn verdict(report: &Report, timeline: &Timeline) -> (String, &'static str) {
    let overlap = if report.overlap_ms > 0 {
        format!(
            "; two processes believed they led for {}",
            span_label(ms_to_ns(report.overlap_ms))
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Swatch {
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
fn legend_items(report: &Report, timeline: &Timeline, scale: &Scale) -> Vec<(Swatch, String)> {
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
        Swatch::NoLease => no_lease(report, timeline)
            .iter()
            .any(|&(_, s, e)| scale.meets(s, e)),
        Swatch::TwoLeaders => overlaps(&report.terms)
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

/// Where a process believed it led without the store giving it the lease:
/// `(term index, start, end)`, at least a millisecond long.
fn no_lease(report: &Report, timeline: &Timeline) -> Vec<(usize, u64, u64)> {
    let mut truths: BTreeMap<(&str, u64), Vec<(u64, u64)>> = BTreeMap::new();
    for h in &timeline.truth {
        truths
            .entry((h.owner.as_str(), h.token))
            .or_default()
            .push((h.start_ns, h.end_ns));
    }
    let mut out = Vec::new();
    for (i, term) in report.terms.iter().enumerate() {
        let held = truths
            .get(&(term.owner.as_str(), term.token))
            .map_or(&[][..], Vec::as_slice);
        for (s, e) in subtract(ms_to_ns(term.start_ms), ms_to_ns(term.end_ms), held) {
            if e - s >= NS {
                out.push((i, s, e));
            }
        }
    }
    out
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

fn legend_height(items: &[(Swatch, String)]) -> f64 {
    legend_rows(items).len() as f64 * LEGEND_ROW
}

fn legend(doc: &mut Doc, items: &[(Swatch, String)], y0: f64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_labels_read_well() {
        assert_eq!(time_label(0), "0s");
        assert_eq!(time_label(500 * NS), "500ms");
        assert_eq!(time_label(12_500 * NS), "12.5s");
        assert_eq!(time_label(40_000 * NS), "40s");
        assert_eq!(time_label(90_000 * NS), "1m30s");
        assert_eq!(time_label(120_000 * NS), "2m");
        assert_eq!(time_label(3_600_000 * NS), "1h");
    }

    #[test]
    fn tick_steps_are_nice() {
        assert_eq!(tick_step(120_000 * NS, 12), 10_000 * NS);
        assert_eq!(tick_step(3_600_000 * NS, 12), 300_000 * NS);
        assert_eq!(tick_step(2_000 * NS, 12), 200 * NS);
        assert_eq!(tick_step(637_000 * NS, 12), 60_000 * NS);
        assert_eq!(tick_step(200_000 * NS, 12), 30_000 * NS);
    }

    #[test]
    fn overlaps_need_two_believers() {
        let term = |s: u64, e: u64| Term {
            node: "n".into(),
            owner: "n#1".into(),
            token: 1,
            start_ms: s,
            end_ms: e,
            end_reason: "x".into(),
        };
        assert_eq!(overlaps(&[term(0, 10), term(10, 20)]), vec![]);
        assert_eq!(
            overlaps(&[term(0, 10), term(5, 20)]),
            vec![(5 * NS, 10 * NS)]
        );
    }

    #[test]
    fn subtract_leaves_the_gaps() {
        assert_eq!(subtract(0, 10, &[(2, 4), (6, 12)]), vec![(0, 2), (4, 6)]);
        assert_eq!(subtract(0, 10, &[]), vec![(0, 10)]);
    }

    #[test]
    fn escaping() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.256), "1.26");
        assert_eq!(num(-0.001), "0");
    }
}
