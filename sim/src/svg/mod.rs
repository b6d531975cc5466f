//! Pictures of a run: a self-contained SVG timeline.
//!
//! Time runs left to right. Each node has a lane with its **belief** (it
//! thinks it leads; a bar coloured by the term's fencing token, from the
//! report's terms) above a thin band of **truth** (the lease store says it
//! holds the lease; from the [`Timeline`](crate::timeline::Timeline)). Where
//! a node believes without the lease the bar is striped red, and wherever two
//! nodes believe at once a red band crosses every lane: the split-brain
//! window. Pauses are hatched, crashes are a cross (with the node's down time
//! greyed), isolation, cuts and partitions are shaded on the lanes of the
//! hosts they affect. Below the nodes: the lease store (the holder, grants
//! with their token numbers, refusals as ticks), the downstream (accepted
//! writes in their token's colour, rejected writes in red, split-brain writes
//! flagged), and the membership's live count as a step line. A title names
//! the scenario, the seed and the command that replays the run; a legend
//! explains the marks.
//!
//! The output is deterministic (no hash-map order, no clock, no randomness):
//! the same run renders to the same bytes, so pictures can be snapshotted.
//! It uses no scripts, no external resources and only generic font families.
//!
//! **Zoom.** A [`Window`] with `from`/`to` shows that span. Without one, a
//! run of at most [`AUTO_ZOOM_AFTER`] is shown whole; a longer run is shown
//! around its interesting events (see [`auto_window`]).
//!
//! # How the module is split
//!
//! Two layers, each in its own files; a layer uses only the layers above it.
//!
//! * **Toolkit** — `document` (the `Doc` builder and its drawing
//!   primitives, escaping, number formatting, text measuring and wrapping,
//!   fonts, the shared palette) and `time` (time labels and axis tick
//!   steps). It knows nothing of runs, terms, leases or timelines: any picture
//!   may use it, the sweep's charts ([`crate::sweep`]) as well as the timeline.
//!   It imports nothing from the rest of the crate.
//! * **The run timeline** — `window` (which span of the run is drawn: the
//!   [`Window`] flags and the automatic zoom) and `timeline` (the picture
//!   itself: lanes, marks, header, verdict and legend).

pub(crate) mod document;
pub(crate) mod time;
mod timeline;
mod window;

pub use self::timeline::{render_timeline, token_colour, MAX_NODE_LANES};
pub use self::window::{auto_window, Window, WindowError, AUTO_ZOOM_AFTER};
