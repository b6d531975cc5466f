//! The result of a run: what `fenced-sim run --json` prints.
//!
//! Field names are a public contract read by users' scripts: fields may be
//! added, never renamed or repurposed. The first twelve are those of the
//! design's `run --json` object, in its order.
//!
//! Beside it: the judgement of a scenario's `[expect]` block against a
//! report (`expect.rs`) and the text summary people read (`summary.rs`). A
//! report is built from a checker's verdict by
//! `checker::assemble`; this layer holds results and imports no checker.

use crate::scenario::Expectations;
use serde::{Deserialize, Serialize};

pub(crate) mod expect;
pub mod summary;

/// Why a run stopped before its end: `halted` in `run --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Halted {
    /// Which limit was reached.
    pub reason: HaltReason,
    /// The virtual time reached, in milliseconds.
    pub at_ms: u64,
    /// What happened and how to avoid it, in words (the message `run`
    /// prints on standard error).
    pub detail: String,
}

/// The limit a [`Halted`] run reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HaltReason {
    /// The run handled its whole event budget (`--max-events`).
    EventBudget,
    /// Too many events were pending at once
    /// ([`MAX_PENDING_EVENTS`](crate::limits::MAX_PENDING_EVENTS)).
    TooManyPending,
}

impl std::fmt::Display for Halted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

/// Everything a run found and measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The scenario's name.
    pub scenario: String,
    /// The root seed of the run.
    pub seed: u64,
    /// Virtual time simulated, in milliseconds.
    pub virtual_ms: u64,
    /// Events processed.
    pub events: u64,
    /// The 64-bit trace hash, as 16 lowercase hex digits.
    pub trace_hash: String,
    /// Whether an older term's write was accepted after a newer term's.
    pub split_brain: bool,
    /// Invariant breaches, in order (at most [`MAX_VIOLATIONS_LISTED`]; see
    /// `violations_total`).
    pub violations: Vec<Violation>,
    /// Leadership terms as the nodes believed them, in start order.
    pub terms: Vec<Term>,
    /// How many times the leader changed owner (a term starting whose owner
    /// differs from the previous term's).
    pub leader_changes: u64,
    /// Each hand-over of the downstream writes from one owner to another.
    pub failovers: Vec<Failover>,
    /// Downstream write counts.
    pub writes: Writes,
    /// Whether the scenario's expectations were met.
    pub expect: ExpectOutcome,
    /// All violations, including those not listed.
    pub violations_total: u64,
    /// Whether the downstream enforced fencing.
    pub fencing: bool,
    /// Total time two or more processes both believed they led, in ms.
    pub overlap_ms: u64,
    /// Time with no process believing it led, from the first process start
    /// (so the initial election counts, and a run nobody led is all
    /// leaderless), in ms.
    pub leaderless_ms: u64,
    /// Terms lost while the leader was healthy and connected (no fault touched
    /// it or the lease store within one lease TTL before the loss).
    pub spurious_failovers: u64,
    /// The highest fencing token the lease store granted (0: none).
    pub max_token: u64,
    /// For a protocol whose tokens count every client's writes (ZooKeeper's
    /// zxid, etcd's revision): the tokens `max_token` could have been had
    /// the server taken the concurrent writes it raced in another order —
    /// the first and last write of its burst (writes of two or more
    /// writers, each at most one round trip at the scenario's highest
    /// latency after the one before). A real server orders such writes by
    /// its network and scheduler, not by the simulator's draws, so a real
    /// run's highest token anywhere in this span is the same outcome
    /// (`fenced-lab` compares so). Absent (no key) when the highest token
    /// raced no one, and for the fenced protocol, whose tokens count grants
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_token_race: Option<TokenRace>,
    /// Membership changes seen by the registry.
    pub membership: MembershipReport,
    /// Counts of interesting things that happened (coverage of the run).
    pub coverage: Coverage,
    /// Writes the run ended before the downstream judged: a verdict of "no
    /// violation" says nothing about them.
    #[serde(default)]
    pub unjudged_writes: UnjudgedWrites,
    /// Why the run stopped before its end, or `None` (JSON `null`) when it
    /// reached it. A halted run's verdict covers only the `virtual_ms`
    /// simulated: tools treat it as bad input (`run` exits 2 after its
    /// report, `sweep` and `compare` refuse it, `shrink` never keeps it,
    /// `explore` counts the seed as `event-budget`).
    #[serde(default)]
    pub halted: Option<Halted>,
    /// Each anchored fault of the scenario (a table in its `at`), in file
    /// order: when its event happened and when it began, `null` for never.
    /// One that never began leaves the expectations unmet. Absent (no key)
    /// for a scenario without anchored faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<AnchoredFault>,
    /// The planted bug active in this run, if any (negative controls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planted_bug: Option<String>,
    /// For `fenced-sim check-history` only: the histories judged and what
    /// was wrong with them. A simulated run has none (and no such key).
    /// In a history's report `seed` is 0, `virtual_ms` is the real time the
    /// histories span, `events` counts their event lines, and `trace_hash`
    /// hashes the merged history as `--trace` writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryReport>,
}

/// What became of one anchored fault.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnchoredFault {
    /// Its index among the scenario's `[[fault]]`s.
    pub fault: usize,
    /// Its kind (`pause`, ...).
    pub kind: String,
    /// What it waited for: `work-started of node-a + 50ms`.
    pub anchor: String,
    /// When its event happened, in ms from the start (to the µs), or `None`.
    pub fired_at_ms: Option<f64>,
    /// When it began, or `None`: its event never happened, or happened
    /// after the heal, or its delay ran past the run's end.
    pub began_at_ms: Option<f64>,
}

impl Report {
    /// Records what became of the run's anchored faults and, unless
    /// `expect` says anchors need not begin (`anchors_begin = false`), makes
    /// each one that never began an unmet expectation. The simulator and
    /// the lab's judged real run both report anchors through this.
    pub fn record_anchors(&mut self, anchors: Vec<AnchoredFault>, expect: &Expectations) {
        self.anchors = anchors;
        if expect.anchors_begin == Some(false) {
            return;
        }
        for sentence in self
            .anchors
            .iter()
            .filter_map(AnchoredFault::unmet_sentence)
        {
            self.expect.met = false;
            self.expect.unmet.push(sentence);
        }
    }
}

impl AnchoredFault {
    /// The fault `fault` of kind `kind`, anchored on `anchor` (its
    /// [`Display`](std::fmt::Display) text): not fired yet.
    pub fn waiting(fault: usize, kind: &str, anchor: &str) -> Self {
        AnchoredFault {
            fault,
            kind: kind.to_string(),
            anchor: anchor.to_string(),
            fired_at_ms: None,
            began_at_ms: None,
        }
    }

    /// `at` from the run's start in the report's unit: milliseconds, to the
    /// microsecond.
    pub fn ms(at: std::time::Duration) -> f64 {
        at.as_micros() as f64 / 1000.0
    }

    /// The sentence of the unmet expectation a fault that never began
    /// makes, beginning with the key `anchors`.
    pub fn unmet_sentence(&self) -> Option<String> {
        if self.began_at_ms.is_some() {
            return None;
        }
        let why = match self.fired_at_ms {
            None => "its event never happened".to_string(),
            Some(at) => format!("its event happened at {at} ms, but the fault could not begin (after the heal, or its delay ran past the end)"),
        };
        Some(format!(
            "anchors: fault[{}] ({}, at {}) never began: {why}, so what the scenario expects of it was never tested",
            self.fault, self.kind, self.anchor
        ))
    }
}

/// The histories behind a `check-history` report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryReport {
    /// Each file, in the order given.
    pub files: Vec<HistoryFileReport>,
    /// The history clock (nanoseconds) at the report's time 0: the earliest
    /// event of any file.
    pub start_ns: u64,
    /// Lines that could not be read, in file and line order (at most
    /// [`MAX_PROBLEMS_LISTED`]; see `problems_total`).
    pub problems: Vec<HistoryProblem>,
    /// All problems, including those not listed.
    pub problems_total: u64,
    /// Malformed lines that were not a file's cut-short last line: the
    /// verdict could not see them, so the run fails (`expect.met` false).
    pub errors: u64,
    /// Processes whose history ends with neither `process-stopped` nor a
    /// lab's `process-killed`: judged as crashed at their last line.
    pub unterminated: Vec<String>,
}

/// One history file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryFileReport {
    /// The path as given.
    pub path: String,
    /// `node`, `downstream` or `lab`.
    pub kind: String,
    /// A node's owner id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Event lines read (the header not counted).
    pub events: u64,
}

/// A line of a history that could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryProblem {
    /// The file.
    pub path: String,
    /// The line number (1 is the header).
    pub line: u64,
    /// `warning` (a file's last line cut short: a process killed mid-write)
    /// or `error` (a malformed line anywhere else).
    pub severity: String,
    /// What is wrong.
    pub detail: String,
}

/// The most history problems listed individually in a report.
pub const MAX_PROBLEMS_LISTED: usize = 100;

/// The most violations listed individually in a report.
pub const MAX_VIOLATIONS_LISTED: usize = 100;
/// The most terms listed individually in a report.
pub const MAX_TERMS_LISTED: usize = 10_000;

/// The end reason of a term still going when the run (or the report) ended.
pub const RUN_ENDED: &str = "run-ended";

/// The end reason of a term its process's crash ended.
pub const CRASHED: &str = "crash";

/// The end reason of a term its process's stop ended (a `stop` fault, or
/// the elector told to stop).
pub const STOPPED: &str = "stopped";

/// The invariants the checker enforces; [`Violation::invariant`] holds
/// [`Invariant::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// Grants carry strictly increasing tokens; renewals never change one.
    TokenMonotonic,
    /// At the store's clock, at most one unexpired holder.
    LeaseExclusive,
    /// The fenced downstream accepts tokens in non-decreasing order, each
    /// from one writer only.
    SingleWriter,
    /// An older term's write accepted after a newer term's.
    SplitBrain,
    /// A unit of work started past its holder's own deadline.
    LocalDeadline,
    /// After healing, no single leader with accepted writes by the end.
    Liveness,
    /// Two live processes share one owner identity.
    UniqueOwner,
    /// The node registry's answers disagree with its heartbeats and TTL: a
    /// node listed past its liveness TTL, dropped before it, announced late,
    /// or counted wrong.
    Membership,
}

impl Invariant {
    /// The name reports and command lines use.
    pub const fn name(self) -> &'static str {
        match self {
            Invariant::TokenMonotonic => "token-monotonic",
            Invariant::LeaseExclusive => "lease-exclusive",
            Invariant::SingleWriter => "single-writer",
            Invariant::SplitBrain => "split-brain",
            Invariant::LocalDeadline => "local-deadline",
            Invariant::Liveness => "liveness",
            Invariant::UniqueOwner => "unique-owner",
            Invariant::Membership => "membership",
        }
    }
}

/// One invariant breach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Which invariant: `token-monotonic`, `lease-exclusive`, `single-writer`,
    /// `split-brain`, `local-deadline`, `liveness`, `unique-owner`, `membership`.
    pub invariant: String,
    /// When it happened (true time), in ms.
    pub at_ms: u64,
    /// One sentence on what happened.
    pub detail: String,
    /// The events behind it, oldest first.
    pub events: Vec<String>,
}

/// One leadership term, as its holder believed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Term {
    /// The node.
    pub node: String,
    /// The owner identity (node and incarnation).
    pub owner: String,
    /// The term's fencing token.
    pub token: u64,
    /// When the node began to believe it led (true time), in ms.
    pub start_ms: u64,
    /// When it stopped believing it (or the run's end), in ms.
    pub end_ms: u64,
    /// Why it ended: `local-deadline`, `superseded`, `new-term`, `stopped`,
    /// `crash`, or `run-ended`.
    pub end_reason: String,
}

/// A span of tokens (both ends included): see [`Report::max_token_race`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRace {
    /// The burst's first write.
    pub low: u64,
    /// The burst's last write.
    pub high: u64,
}

impl TokenRace {
    /// Whether `token` lies in the span.
    pub fn contains(&self, token: u64) -> bool {
        (self.low..=self.high).contains(&token)
    }
}

/// One hand-over of the downstream writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failover {
    /// The node whose term wrote last before the hand-over.
    pub from: String,
    /// The node whose term wrote first after it.
    pub to: String,
    /// Time from the old term's last accepted write to the new term's first, ms.
    pub gap_ms: u64,
    /// The old term's token.
    pub from_token: u64,
    /// The new term's token.
    pub to_token: u64,
    /// When the new term's first write was accepted, ms.
    pub at_ms: u64,
    /// The old term's owner (node and incarnation).
    pub from_owner: String,
    /// The new term's owner (node and incarnation).
    pub to_owner: String,
}

/// Downstream write counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writes {
    /// Writes the downstream accepted.
    pub accepted: u64,
    /// Writes rejected for carrying a token below the highest accepted.
    pub rejected_stale: u64,
    /// Writes rejected because their token belongs to another writer.
    pub rejected_wrong_writer: u64,
    /// Units of work whose term ended before their write was sent (cancelled
    /// cooperatively; they never reached the downstream).
    pub cancelled: u64,
}

/// Writes still on their way when the run ended: units of work whose term
/// was still believed (their write will be sent, perhaps by a paused
/// process), and writes in flight to the downstream or queued at a paused
/// one. Each could still be accepted or rejected — a cut-short run cannot
/// say which, so the report says they exist.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnjudgedWrites {
    /// How many.
    pub total: u64,
    /// How many carry a token below the highest the lease store granted:
    /// writes of an older term, which could still land as split-brain writes
    /// (or be rejected by fencing). Writes of the newest term cannot change
    /// the verdict.
    pub older_term: u64,
    /// The first [`MAX_UNJUDGED_LISTED`] of them, by owner, token and unit.
    pub writes: Vec<UnjudgedWrite>,
}

/// One write not yet judged when the run ended.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct UnjudgedWrite {
    /// The writer (node and incarnation).
    pub owner: String,
    /// The token the write carries.
    pub token: u64,
    /// The writer's unit-of-work number.
    pub unit: u64,
    /// `in-progress` (the unit has not sent its write yet), `in-progress
    /// (paused)` (its process is paused mid-unit), `in-flight` (sent, not yet
    /// delivered) or `queued` (delivered to a paused downstream).
    pub state: String,
}

/// The most unjudged writes listed individually in a report.
pub const MAX_UNJUDGED_LISTED: usize = 20;

/// Whether expectations were met.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectOutcome {
    /// True when every expectation holds.
    pub met: bool,
    /// One sentence per unmet expectation.
    pub unmet: Vec<String>,
}

impl ExpectOutcome {
    /// Why expectation `key` (a key of
    /// [`Expectations::checked_keys`](crate::Expectations::checked_keys)) is
    /// unmet, or `None` when it is met: each sentence of [`unmet`](Self::unmet)
    /// begins with its key.
    pub fn unmet_because(&self, key: &str) -> Option<&str> {
        self.unmet.iter().map(String::as_str).find(|sentence| {
            sentence
                .strip_prefix(key)
                .is_some_and(|rest| rest.starts_with(':'))
        })
    }
}

/// Membership as the registry saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipReport {
    /// Nodes joining the live set.
    pub joins: u64,
    /// Nodes leaving it.
    pub leaves: u64,
    /// Nodes that left and later came back.
    pub flaps: u64,
    /// Nodes declared gone while one of their processes was running (alive
    /// and not paused): a false "node down".
    pub false_leaves: u64,
    /// Live nodes at the end of the run.
    pub live_at_end: u64,
}

/// How often the interesting things happened: "sometimes" properties that a
/// campaign must see, or its fault generator is too tame.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Writes rejected for a stale token.
    pub stale_write_rejected: u64,
    /// New terms granted while a previous holder's process was paused.
    pub takeover_during_pause: u64,
    /// Leaders stepping down on their local deadline.
    pub step_down_on_deadline: u64,
    /// Renewal requests of a leader that got no (timely) answer.
    pub renewal_lost: u64,
    /// Stale writes rejected from an older incarnation of a node while a newer
    /// incarnation of it was running (a zombie, fenced).
    pub zombie_fenced: u64,
    /// Lease requests refused because another owner held the lease.
    pub refused: u64,
    /// Terms ended by a graceful stop (the elector's `stop`: work ended,
    /// lease released).
    #[serde(default)]
    pub leader_stopped: u64,
    /// Terms ended by abdication (the work failed while leading).
    #[serde(default)]
    pub leader_abdicated: u64,
}

/// What a report needs besides the checker's verdict and the expectations:
/// the figures only the source of the observations knows (a simulation's
/// engine, or a real run's histories).
pub(crate) struct Figures {
    pub(crate) scenario: String,
    pub(crate) seed: u64,
    pub(crate) virtual_ms: u64,
    pub(crate) events: u64,
    pub(crate) trace_hash: String,
    pub(crate) fencing: bool,
    pub(crate) max_token: u64,
    pub(crate) live_at_end: u64,
    pub(crate) unjudged_writes: UnjudgedWrites,
    pub(crate) planted_bug: Option<String>,
    pub(crate) history: Option<HistoryReport>,
}
