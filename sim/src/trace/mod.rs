//! The trace: one canonical line per thing that happened, and a hash of it all.
//!
//! Every record is folded into a 64-bit hash as a fixed sequence of `u64`
//! words (the true time in nanoseconds, the host's code, a tag, then the
//! record's numeric fields in a fixed order) — never formatted text, so
//! hashing costs a few multiplications per record and is always on. The text
//! line is formatted only when a trace writer is attached.
//!
//! `hash.rs` folds each observation of the stream straight into the hash;
//! `observe.rs` maps it to its record for the text line, only when one is
//! written.
//!
//! The hash function is stable across machines and versions of Rust: per word,
//! `h = (h.rotate_left(5) ^ word) * 0x51_7cc1_b727_220a95` (the FxHash step),
//! started from the FNV-1a offset basis and finalised with SplitMix64's
//! avalanche. It is not `std`'s `DefaultHasher`, whose output may change.

use std::io::{self, Write};

use fenced::{
    FencingToken, LeaseResult, OwnerId, ResponseDisposition, StepDownReason, WriteOutcome,
};

use crate::observation::{
    CallFailure, DropReason, FailedCall, HostRef, MessageKind, Observation, Observer, SessionEnd,
    SessionKind, SimTime, Skipped,
};
use crate::rng::mix64;

mod hash;
mod observe;

impl DropReason {
    fn code(self) -> u64 {
        self as u64
    }
    fn text(self) -> &'static str {
        match self {
            DropReason::Lost => "lost",
            DropReason::LinkDown => "link down",
            DropReason::ProcessGone => "receiver gone",
            DropReason::QueueFull => "receiver paused with a full queue",
            DropReason::ConnectionReset => "connection reset by the server's restart",
            DropReason::ConnectionRefused => "connection refused: the server is down",
        }
    }
}

impl MessageKind {
    fn text(self) -> &'static str {
        match self {
            MessageKind::LeaseRequest => "lease request",
            MessageKind::LeaseResponse => "lease response",
            MessageKind::LeaseFailed => "lease failure",
            MessageKind::Release => "release",
            MessageKind::Heartbeat => "heartbeat",
            MessageKind::Write => "write",
            MessageKind::ProtocolRequest => "request",
            MessageKind::ProtocolResponse => "response",
            MessageKind::SessionOpen => "session open",
            MessageKind::SessionOpened => "session open answer",
            MessageKind::CallAnswer => "answer",
        }
    }
}

const HASH_START: u64 = 0xcbf2_9ce4_8422_2325;
const HASH_MULTIPLIER: u64 = 0x517c_c1b7_2722_0a95;

/// A host as the text trace names it.
#[derive(Clone, Copy, Debug)]
struct TraceHost<'a> {
    name: &'a str,
}

impl<'a> TraceHost<'a> {
    fn of(host: HostRef<'a>) -> Self {
        TraceHost { name: host.name() }
    }
}

/// One thing that happened.
#[derive(Clone, Copy, Debug)]
enum Record<'a> {
    ProcessStarted,
    ProcessCrashed,
    ProcessStopped,
    WorkFailed {
        led: bool,
    },
    Skipped(Skipped),
    Healed,
    Paused,
    Resumed {
        deferred: u64,
    },
    Isolated {
        start: bool,
    },
    Cut {
        to: TraceHost<'a>,
        start: bool,
    },
    Partitioned {
        start: bool,
        groups: &'a str,
    },
    Dropped {
        to: TraceHost<'a>,
        kind: MessageKind,
        reason: DropReason,
    },
    LeaseHandled {
        from: TraceHost<'a>,
        request: u64,
        result: &'a LeaseResult,
    },
    LeaseRejected {
        from: TraceHost<'a>,
        request: u64,
        error: &'a str,
    },
    ReleaseHandled {
        from: TraceHost<'a>,
        token: FencingToken,
        released: bool,
    },
    HeartbeatHandled {
        from: TraceHost<'a>,
        joined: bool,
    },
    MemberLeft {
        node: TraceHost<'a>,
    },
    ResponseHandled {
        request: u64,
        disposition: ResponseDisposition,
        acquired: Option<FencingToken>,
    },
    RequestFailed {
        request: u64,
    },
    TermStarted {
        token: FencingToken,
    },
    TermEnded {
        token: FencingToken,
        reason: &'a StepDownReason,
        why: Option<&'a str>,
    },
    ClockJumped {
        by_nanos: i64,
        moved: bool,
    },
    ClockSlewed {
        by_nanos: i64,
        over_nanos: u64,
    },
    Restarted {
        durable: bool,
    },
    Holder {
        truth: bool,
        holder: Option<&'a OwnerId>,
        token: Option<u64>,
    },
    WorkStarted {
        token: FencingToken,
        unit: u64,
    },
    WriteSent {
        token: FencingToken,
        unit: u64,
    },
    WorkCancelled {
        token: FencingToken,
        unit: u64,
    },
    WriteHandled {
        from: TraceHost<'a>,
        token: FencingToken,
        unit: u64,
        outcome: &'a WriteOutcome,
    },
    SessionOpened {
        session: SessionKind,
    },
    SessionClosed {
        session: SessionKind,
        why: SessionEnd,
    },
    CallFailed {
        call: FailedCall,
        why: CallFailure,
    },
}

/// The trace hash, and the text trace when asked for.
pub(crate) struct Tracer {
    hash: u64,
    records: u64,
    out: Option<Box<dyn Write + Send>>,
    line: String,
    error: Option<io::Error>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("hash", &self.hash)
            .field("records", &self.records)
            .field("writing", &self.out.is_some())
            .finish()
    }
}

impl Tracer {
    pub(crate) fn new() -> Self {
        Tracer {
            hash: HASH_START,
            records: 0,
            out: None,
            line: String::with_capacity(160),
            error: None,
        }
    }

    pub(crate) fn set_writer(&mut self, out: Box<dyn Write + Send>) {
        self.out = Some(out);
    }

    /// The finished hash of everything recorded so far.
    pub(crate) fn hash(&self) -> u64 {
        mix64(self.hash ^ self.records)
    }

    /// Flushes the writer and returns the first write error, if any.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        if let Some(err) = self.error.take() {
            return Err(err);
        }
        if let Some(out) = self.out.as_mut() {
            out.flush()?;
        }
        Ok(())
    }

    fn write_line(&mut self, t: u64, host: TraceHost<'_>, rec: &Record<'_>) {
        use std::fmt::Write as _;
        self.line.clear();
        let _ = write!(
            self.line,
            "{:>6}.{:09} {:<14} ",
            t / 1_000_000_000,
            t % 1_000_000_000,
            host.name
        );
        let l = &mut self.line;
        let _ = match *rec {
            Record::ProcessStarted => write!(l, "process started (follower)"),
            Record::ProcessCrashed => write!(l, "process crashed"),
            Record::ProcessStopped => write!(l, "process stopped gracefully and exited"),
            Record::WorkFailed { led: true } => {
                write!(l, "work failed; abdicates (releases and stays quiet)")
            }
            Record::WorkFailed { led: false } => write!(l, "work failed while not leading"),
            Record::Skipped(Skipped::CrashOfDownNode) => {
                write!(l, "crash ignored: no live process (down, or not started yet)")
            }
            Record::Skipped(Skipped::StartOfRunningNode) => {
                write!(l, "start ignored: the node already runs a process")
            }
            Record::Skipped(Skipped::StopOfDownNode) => {
                write!(l, "stop ignored: no live process")
            }
            Record::Healed => write!(
                l,
                "every fault healed; liveness phase: one leader with accepted writes must follow"
            ),
            Record::Paused => write!(l, "paused"),
            Record::Resumed { deferred } => {
                write!(l, "resumed; handling {deferred} events that queued while paused")
            }
            Record::Isolated { start: true } => write!(l, "isolated from every host"),
            Record::Isolated { start: false } => write!(l, "isolation healed"),
            Record::Cut { to, start: true } => write!(l, "link to {} cut", to.name),
            Record::Cut { to, start: false } => write!(l, "link to {} restored", to.name),
            Record::Partitioned { start: true, groups } => write!(l, "partition {groups}"),
            Record::Partitioned { start: false, groups } => {
                write!(l, "partition {groups} healed")
            }
            Record::Dropped { to, kind, reason } => {
                write!(l, "{} to {} dropped: {}", kind.text(), to.name, reason.text())
            }
            Record::LeaseHandled {
                from,
                request,
                result,
            } => match result {
                LeaseResult::Granted { token, expires_at } => write!(
                    l,
                    "request #{request} from {}: granted token {token}, expires {expires_at}",
                    from.name
                ),
                LeaseResult::Renewed { token, expires_at } => write!(
                    l,
                    "request #{request} from {}: renewed token {token}, expires {expires_at}",
                    from.name
                ),
                LeaseResult::Held { holder } => write!(
                    l,
                    "request #{request} from {}: refused, held by {} (token {}) until {}",
                    from.name, holder.owner, holder.token, holder.expires_at
                ),
            },
            Record::LeaseRejected {
                from,
                request,
                error,
            } => write!(l, "request #{request} from {}: error: {error}", from.name),
            Record::ReleaseHandled {
                from,
                token,
                released,
            } => write!(
                l,
                "release of token {token} from {}: {}",
                from.name,
                if released { "released" } else { "ignored (not the live holder)" }
            ),
            Record::HeartbeatHandled { from, joined } => write!(
                l,
                "heartbeat from {}{}",
                from.name,
                if joined { ": joined" } else { "" }
            ),
            Record::MemberLeft { node } => write!(l, "{} left (liveness TTL ran out)", node.name),
            Record::ResponseHandled {
                request,
                disposition,
                acquired,
            } => {
                let _ = write!(l, "response #{request}: ");
                match (disposition, acquired) {
                    (ResponseDisposition::Applied, Some(token)) => write!(l, "holds token {token}"),
                    (ResponseDisposition::Applied, None) => l.write_str("refused"),
                    (ResponseDisposition::Stale, _) => l.write_str("stale, ignored"),
                    (ResponseDisposition::TooLate, _) => l.write_str("too late to use, ignored"),
                    (ResponseDisposition::AlreadyReleased, _) => {
                        l.write_str("grants a term already released; released again")
                    }
                }
            }
            Record::RequestFailed { request } => write!(l, "request #{request} failed"),
            Record::TermStarted { token } => write!(l, "LEADS with token {token}"),
            Record::TermEnded { token, reason, why } => match why {
                Some(why) => write!(l, "steps down from token {token}: {why}"),
                None => write!(l, "steps down from token {token}: {reason}"),
            },
            Record::ClockJumped { by_nanos, moved } => {
                let step = crate::scenario::ClockOffset(by_nanos);
                let sign = if by_nanos > 0 { "+" } else { "" };
                let unmoved = if moved {
                    ""
                } else {
                    " (its wall clock; it times by its monotonic clock)"
                };
                write!(l, "clock jumps by {sign}{step}{unmoved}")
            }
            Record::ClockSlewed {
                by_nanos,
                over_nanos,
            } => {
                let (step, over) = (
                    crate::scenario::ClockOffset(by_nanos),
                    crate::scenario::ClockOffset(over_nanos.min(i64::MAX as u64) as i64),
                );
                let sign = if by_nanos > 0 { "+" } else { "" };
                write!(l, "clocks slew by {sign}{step} over {over} (both: wall and monotonic)")
            }
            Record::Restarted { durable } => {
                if durable {
                    write!(l, "restarts with its state")
                } else {
                    write!(l, "restarts empty (its state is lost)")
                }
            }
            Record::Holder {
                truth,
                holder,
                token,
            } => {
                let whose = if truth { "the lock" } else { "this server" };
                match (holder, token) {
                    (Some(owner), Some(t)) => write!(l, "{whose} is held by {owner} (token {t})"),
                    (Some(owner), None) => write!(l, "{whose} is held by {owner}"),
                    (None, _) => write!(l, "{whose} is free"),
                }
            }
            Record::WorkStarted { token, unit } => {
                write!(l, "unit {unit} started under token {token}")
            }
            Record::WriteSent { token, unit } => {
                write!(l, "unit {unit} done; write sent with token {token}")
            }
            Record::WorkCancelled { token, unit } => {
                write!(l, "unit {unit} cancelled: term {token} ended")
            }
            Record::WriteHandled {
                from,
                token,
                unit,
                outcome,
            } => match outcome {
                WriteOutcome::Accepted => write!(
                    l,
                    "write unit {unit} from {} with token {token}: accepted",
                    from.name
                ),
                WriteOutcome::RejectedStale { highest, .. } => write!(
                    l,
                    "write unit {unit} from {} with token {token}: REJECTED, stale (highest {highest})",
                    from.name
                ),
                WriteOutcome::RejectedWrongWriter { bound_to, .. } => write!(
                    l,
                    "write unit {unit} from {} with token {token}: REJECTED, token belongs to {bound_to}",
                    from.name
                ),
            },
            Record::SessionOpened { session } => {
                write!(l, "{} session open", session.text())
            }
            Record::SessionClosed { session, why } => {
                write!(l, "{} session closed: {}", session.text(), why.text())
            }
            Record::CallFailed { call, why } => match call {
                FailedCall::Release { token } => {
                    write!(l, "release of token {token} failed: {}", why.text())
                }
                FailedCall::Heartbeat => write!(l, "heartbeat failed: {}", why.text()),
                FailedCall::Write {
                    token,
                    unit,
                    retried,
                } => write!(
                    l,
                    "write unit {unit} with token {token} failed: {}{}",
                    why.text(),
                    if retried { "; sent again" } else { "" }
                ),
            },
        };
        self.line.push('\n');
        if self.error.is_none() {
            if let Some(out) = self.out.as_mut() {
                if let Err(err) = out.write_all(self.line.as_bytes()) {
                    self.error = Some(err);
                }
            }
        }
    }
}
