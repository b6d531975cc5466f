//! Which span of a run the timeline draws: the [`Window`] set by the
//! `--from`/`--to` flags, checked against the run, and the automatic zoom
//! ([`auto_window`]) of runs longer than [`AUTO_ZOOM_AFTER`].

use std::time::Duration;

use super::time::time_label;
use crate::scenario::Scenario;
use crate::time::span_nanos;
use crate::timeline::{Timeline, WriteFate};
use crate::units::human;

/// Runs longer than this are zoomed automatically (when no window is given)
/// to the span of their interesting events.
pub const AUTO_ZOOM_AFTER: Duration = Duration::from_secs(300);

/// The span of the run to draw. Both ends unset: automatic (see
/// [`auto_window`]); one end set: from it to the other end of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The first instant shown (true time since the start of the run).
    pub from: Option<Duration>,
    /// The last instant shown.
    pub to: Option<Duration>,
}

/// What is wrong with a window, naming the flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowError {
    /// `--from` is not before `--to`.
    FromNotBeforeTo {
        /// `--from`.
        from: Duration,
        /// `--to`.
        to: Duration,
    },
    /// `--from` is at or past the end of the run.
    FromPastTheEnd {
        /// `--from`.
        from: Duration,
        /// How long the run lasts.
        run: Duration,
    },
    /// `--to 0`.
    ToAtTheStart,
}

impl std::fmt::Display for WindowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            WindowError::FromNotBeforeTo { from, to } => write!(
                f,
                "--from {} must be before --to {}",
                human(from),
                human(to)
            ),
            WindowError::FromPastTheEnd { from, run } => write!(
                f,
                "--from {} is not inside the run, which lasts {}",
                human(from),
                human(run)
            ),
            WindowError::ToAtTheStart => f.write_str("--to must be after the start of the run"),
        }
    }
}

impl std::error::Error for WindowError {}

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
    pub fn check(&self, run: Duration) -> Result<(), WindowError> {
        if let (Some(from), Some(to)) = (self.from, self.to) {
            if from >= to {
                return Err(WindowError::FromNotBeforeTo { from, to });
            }
        }
        if let Some(from) = self.from {
            if from >= run {
                return Err(WindowError::FromPastTheEnd { from, run });
            }
        }
        if self.to.is_some_and(|to| to.is_zero()) {
            return Err(WindowError::ToAtTheStart);
        }
        Ok(())
    }

    /// The span drawn, `(from, to)` in nanoseconds since the start of the
    /// run, and the note the header prints about it (empty when the whole
    /// run is shown). An invalid window is clamped to the run.
    pub(super) fn shown(self, scenario: &Scenario, timeline: &Timeline) -> (u64, u64, String) {
        let end = timeline.end_ns.max(1);
        match (self.from, self.to) {
            (None, None) => match auto_window(scenario, timeline) {
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
                let a = f.map_or(0, span_nanos).min(end.saturating_sub(1));
                let b = t.map_or(end, span_nanos).min(end).max(a + 1);
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
        }
    }
}

/// The automatic zoom of a run longer than [`AUTO_ZOOM_AFTER`]: the span from
/// the first to the last *interesting* event — a fault starting or ending, a
/// crash, a process (re)start after time zero, a grant of a token above 1, a
/// term ending before the run did, a rejected or split-brain write, the heal —
/// widened on each side by a margin of one lease TTL or 5% of the span,
/// whichever is longer, and clamped to the run. `None` (draw the whole run)
/// when the run is short or nothing interesting happened.
pub fn auto_window(scenario: &Scenario, timeline: &Timeline) -> Option<(u64, u64)> {
    let end = timeline.end_ns;
    if end <= span_nanos(AUTO_ZOOM_AFTER) {
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
        timeline
            .beliefs
            .iter()
            .filter(|t| t.end_reason != "run-ended")
            .map(|t| t.end_ns),
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
    let margin = span_nanos(scenario.election.lease_ttl).max((hi - lo) / 20);
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
