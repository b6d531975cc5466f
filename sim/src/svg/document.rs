//! The SVG document toolkit: a growing document ([`Doc`]) with its drawing
//! primitives, XML escaping ([`esc`]), coordinate formatting ([`num`]), text
//! measuring and wrapping ([`text_width`], [`wrap`], [`fit`]), the font
//! families, the palette every picture shares and colour ramps ([`ramp`]).
//!
//! It knows nothing of runs, terms, leases or timelines and imports nothing
//! from the rest of the crate, so any picture may use it: the run timeline
//! (`svg::timeline`) and the sweep's charts (`sweep`). Everything it writes is
//! deterministic: the same calls give the same bytes.

use std::fmt::Write as _;

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
    /// A `width` × `height` px document with a white background; `title`
    /// becomes its `<title>`, the name viewers and screen readers show.
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

    /// Appends `s` verbatim (markup the other primitives do not cover), then
    /// a newline. The caller escapes any text in it with [`esc`].
    pub(crate) fn raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Opens a group `<g class="class"…>`; `extra` is appended verbatim to
    /// the tag. Close it with [`Doc::close`].
    pub(crate) fn open(&mut self, class: &str, extra: &str) {
        let _ = writeln!(self.out, "<g class=\"{}\"{extra}>", esc(class));
    }

    /// Closes the group last opened.
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

    /// A line from `(x1, y1)` to `(x2, y2)`; `attrs` and `tip` as for
    /// [`Doc::rect`].
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

    /// Closes the document and returns its text.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

/// Red, the alarm colour: pictures keep it for what went wrong (in the
/// timeline: rejected writes, split-brain, belief without the lease).
pub(crate) const RED: &str = "#d62728";
/// Ink: titles, labels and strong marks.
pub(crate) const INK: &str = "#222222";
/// Muted grey: secondary text, ticks and the axis.
pub(crate) const MUTED: &str = "#666666";
/// Light grey: grid lines and lane rules.
pub(crate) const GRID: &str = "#e4e4e4";

/// A colour as red, green and blue, each 0 to 255 (fractions allowed: a
/// ramp's stops are blended before rounding).
pub(crate) type Rgb = (f64, f64, f64);

/// The colour at `t` (clamped to 0–1) along a ramp through `stops`, evenly
/// spaced, as `#rrggbb`: each channel blended linearly between the two
/// stops around `t`, then rounded. At least two stops.
pub(crate) fn ramp(stops: &[Rgb], t: f64) -> String {
    assert!(stops.len() >= 2, "a colour ramp needs two stops");
    let t = t.clamp(0.0, 1.0) * (stops.len() - 1) as f64;
    let i = (t.floor() as usize).min(stops.len() - 2);
    let f = t - i as f64;
    let (a, b) = (stops[i], stops[i + 1]);
    let blend = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        blend(a.0, b.0),
        blend(a.1, b.1),
        blend(a.2, b.2)
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.256), "1.26");
        assert_eq!(num(-0.001), "0");
    }

    #[test]
    fn ramps_blend_between_their_stops() {
        let stops = [(0.0, 0.0, 0.0), (255.0, 128.0, 10.0), (255.0, 255.0, 255.0)];
        assert_eq!(ramp(&stops, 0.0), "#000000");
        assert_eq!(ramp(&stops, 0.5), "#ff800a");
        assert_eq!(ramp(&stops, 1.0), "#ffffff");
        assert_eq!(ramp(&stops, 0.25), "#804005");
        // Outside 0-1 the ends hold.
        assert_eq!(ramp(&stops, -3.0), "#000000");
        assert_eq!(ramp(&stops, 7.0), "#ffffff");
    }
}
