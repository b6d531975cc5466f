//! Event-anchored faults: a fault that begins when the system *does*
//! something (a node begins a unit of work, a term begins, a renewal goes
//! out), not at an instant that happens to coincide with it in one
//! schedule.
//!
//! Why: a fault placed at 12.05 s because the simulator's node-a starts a
//! 200 ms unit at 12.0 s means what it is meant to only while that schedule
//! holds. Shift a latency, change the seed, or run it for real (where start
//! times jitter by milliseconds) and the pause lands outside the unit: the
//! story is gone. An anchor says what the fault waits for, so the same file
//! means the same thing in the simulator, in `explore`, and in the lab.
//!
//! An anchor is written as a table in the fault's `at`:
//!
//! ```toml
//! [[fault]]
//! kind = "pause"
//! node = "node-a"
//! duration = "30s"
//! at = { event = "work-started", node = "node-a", after = "12s", delay = "50ms" }
//! ```
//!
//! The fault begins `delay` (default 0) after the first `event` of `node`
//! (default: any node) at or after `after` (default 0), optionally only one
//! carrying fencing token `token`. It fires at most once. The events are
//! the ones every run's history records, so that the lab can watch for
//! them in a real node's output as the simulator does in its observation
//! stream ([`AnchorEvent`]). With delay 0 the fault begins right after the
//! event that fired it, before anything else happens at that instant — for
//! `work-started`, after the unit began and before its write went out.
//!
//! A fault whose anchor does not happen before the run ends (or before
//! `heal_at`, after which no fault begins) never begins: the report lists
//! it under `anchors` as not fired and the run's expectations are unmet,
//! because whatever they were written for did not happen.

use std::fmt;
use std::time::Duration;

use super::FaultSpec;

/// What an anchored fault waits for: one kind of event of a node's
/// processes, as the run's history names it (`fenced::history::Event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AnchorEvent {
    /// A process began to believe it leads (`term-started`): the lease
    /// store's grant, as the node learns it.
    TermStarted,
    /// A process stopped believing it leads (`term-ended`).
    TermEnded,
    /// A unit of work began after its leadership check (`work-started`);
    /// its write goes out `work_duration` later.
    WorkStarted,
    /// A unit's write went out to the downstream (`write-sent`).
    WriteSent,
    /// A process sent a lease request, to acquire or to renew
    /// (`request-sent`). The fenced protocol only: other designs' clients
    /// speak their own protocols.
    RequestSent,
    /// A process that believes it leads sent a lease request: its renewal
    /// (a `request-sent` inside a term). The fenced protocol only.
    RenewalSent,
}

impl AnchorEvent {
    /// Every event, in the order the docs list them.
    pub const ALL: [AnchorEvent; 6] = [
        AnchorEvent::TermStarted,
        AnchorEvent::TermEnded,
        AnchorEvent::WorkStarted,
        AnchorEvent::WriteSent,
        AnchorEvent::RequestSent,
        AnchorEvent::RenewalSent,
    ];

    /// The scenario-file (and history) spelling.
    pub fn name(self) -> &'static str {
        match self {
            AnchorEvent::TermStarted => "term-started",
            AnchorEvent::TermEnded => "term-ended",
            AnchorEvent::WorkStarted => "work-started",
            AnchorEvent::WriteSent => "write-sent",
            AnchorEvent::RequestSent => "request-sent",
            AnchorEvent::RenewalSent => "renewal-sent",
        }
    }

    /// The event spelled `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// Whether the event carries a fencing token (so `token` may filter it).
    pub fn has_token(self) -> bool {
        !matches!(self, AnchorEvent::RequestSent | AnchorEvent::RenewalSent)
    }

    /// Whether only the fenced protocol's elector makes this event.
    pub fn fenced_only(self) -> bool {
        matches!(self, AnchorEvent::RequestSent | AnchorEvent::RenewalSent)
    }
}

impl fmt::Display for AnchorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an anchored fault waits for, and how long after it the fault
/// begins. The earliest time it may fire is the wrapped fault's `at`
/// (written `after` in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// The event.
    pub event: AnchorEvent,
    /// The node whose processes must make it (any of its lives); `None`:
    /// any node.
    pub node: Option<String>,
    /// Only an event carrying this fencing token.
    pub token: Option<u64>,
    /// How long after the event the fault begins.
    pub delay: Duration,
}

impl Anchor {
    /// `event` of any node, at once.
    pub fn on(event: AnchorEvent) -> Self {
        Anchor {
            event,
            node: None,
            token: None,
            delay: Duration::ZERO,
        }
    }

    /// The same anchor, only for `node`'s events.
    pub fn of_node(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    /// The same anchor, only for events with `token`.
    pub fn with_token(mut self, token: u64) -> Self {
        self.token = Some(token);
        self
    }

    /// The same anchor, the fault beginning `delay` after the event.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

impl fmt::Display for Anchor {
    /// `work-started of node-a (token 2) + 50ms`, for reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.event)?;
        match &self.node {
            Some(node) => write!(f, " of {node}")?,
            None => f.write_str(" of any node")?,
        }
        if let Some(token) = self.token {
            write!(f, " with token {token}")?;
        }
        if !self.delay.is_zero() {
            write!(f, " + {}", crate::units::human(self.delay))?;
        }
        Ok(())
    }
}

/// An anchor resolved: the node by index, the earliest instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolvedAnchor {
    /// The event.
    pub event: AnchorEvent,
    /// The node (its index in the scenario), or `None` for any.
    pub node: Option<u32>,
    /// Only events with this token.
    pub token: Option<u64>,
    /// The earliest instant the event counts, from the start of the run.
    pub not_before: Duration,
    /// How long after the event the fault begins.
    pub delay: Duration,
}

impl ResolvedAnchor {
    /// When a fault whose event happened at `fired` begins: `delay` later,
    /// or never when that is at or after `heal_at` (the heal is scheduled
    /// before the run, so at its instant it goes first, and after it no
    /// fault begins). One rule for the simulator and the lab.
    pub fn begins(&self, fired: Duration, heal_at: Option<Duration>) -> Option<Duration> {
        let begins = fired.saturating_add(self.delay);
        heal_at.is_none_or(|heal| begins < heal).then_some(begins)
    }

    /// Whether `event` of node `node` carrying `token` (if it has one) at
    /// `at` fires this anchor.
    pub fn matches(&self, event: AnchorEvent, node: u32, token: Option<u64>, at: Duration) -> bool {
        event == self.event
            && at >= self.not_before
            && self.node.is_none_or(|n| n == node)
            && self.token.is_none_or(|t| token == Some(t))
    }
}

impl FaultSpec {
    /// The fault `anchor` starts `delay` after its event, at or after this
    /// fault's `at`.
    pub fn anchored(self, when: Anchor) -> Self {
        FaultSpec::Anchored {
            when,
            fault: Box::new(self),
        }
    }

    /// The anchor, for an anchored fault.
    pub fn anchor(&self) -> Option<&Anchor> {
        match self {
            FaultSpec::Anchored { when, .. } => Some(when),
            _ => None,
        }
    }

    /// The fault itself: an anchored fault's wrapped fault, or this one.
    pub fn unanchored(&self) -> &FaultSpec {
        match self {
            FaultSpec::Anchored { fault, .. } => fault,
            other => other,
        }
    }

    /// [`unanchored`](Self::unanchored), to change the fault and keep its
    /// anchor.
    pub fn unanchored_mut(&mut self) -> &mut FaultSpec {
        match self {
            FaultSpec::Anchored { fault, .. } => fault,
            other => other,
        }
    }
}
