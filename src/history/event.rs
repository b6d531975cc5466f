//! The owned, serde types of one history line.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::elector::{ElectorTimings, ResponseDisposition, StepDownReason};
use crate::fenced_store::WriteOutcome;
use crate::id::{FencingToken, NodeId, OwnerId};
use crate::lease::LeaseResult;
use crate::time::duration_nanos;

/// The value of a header's `history` field.
pub const FORMAT: &str = "fenced";
/// The format version this crate writes and reads.
pub const VERSION: u32 = 1;

/// What a process is, for the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A contender: an elector, perhaps heartbeats and work. Its events are
    /// its own.
    Node,
    /// A process that only hosts the downstream (its `write-handled` events
    /// name their writers).
    Downstream,
    /// The lab that runs the processes and injects faults (`fault`,
    /// `process-killed`).
    Lab,
}

/// The first line of every history file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`]: tells a history from any other JSON lines.
    pub history: String,
    /// The format version ([`VERSION`]).
    pub version: u32,
    /// What the process is.
    pub kind: Kind,
    /// A node's id (required for [`Kind::Node`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<NodeId>,
    /// A node's incarnation: 1 for its first process, one more per restart
    /// (required for [`Kind::Node`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<u32>,
    /// A node's owner id, as its elector contends (required for
    /// [`Kind::Node`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<OwnerId>,
    /// The OS process id (informational).
    pub pid: u32,
    /// The clock of `at_ns` ([`clock::CLOCK_NAME`](super::clock::CLOCK_NAME)).
    pub clock: String,
    /// The run's name, if the lab gives one (reports are titled with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The run's settings, as this process knows them. Every file that has
    /// them must agree; at least one file of a run must have them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
}

impl Header {
    /// The header of node `node`'s process number `incarnation`, contending
    /// as `owner`, in this OS process.
    pub fn node(node: NodeId, incarnation: u32, owner: OwnerId, settings: Settings) -> Header {
        Header {
            node: Some(node),
            incarnation: Some(incarnation),
            owner: Some(owner),
            settings: Some(settings),
            ..Header::of_kind(Kind::Node)
        }
    }

    /// A header of `kind` with no identity, settings or run name.
    pub fn of_kind(kind: Kind) -> Header {
        Header {
            history: FORMAT.to_string(),
            version: VERSION,
            kind,
            node: None,
            incarnation: None,
            owner: None,
            pid: std::process::id(),
            clock: super::clock::CLOCK_NAME.to_string(),
            run: None,
            settings: None,
        }
    }

    /// Names the run.
    pub fn with_run(mut self, run: impl Into<String>) -> Header {
        self.run = Some(run.into());
        self
    }

    /// Replaces the settings.
    pub fn with_settings(mut self, settings: Settings) -> Header {
        self.settings = Some(settings);
        self
    }
}

/// The settings the checker needs, as the processes ran with them. Spans are
/// in nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// The role contended for.
    pub role: String,
    /// The elector's lease TTL.
    pub lease_ttl_ns: u64,
    /// How often a leader renews.
    pub renew_interval_ns: u64,
    /// How often a follower retries.
    pub retry_interval_ns: u64,
    /// The elector's safety margin (in effect, defaults resolved).
    pub safety_margin_ns: u64,
    /// Whether the downstream enforces fencing.
    pub fencing: bool,
    /// The registry's liveness TTL, if the run has membership.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness_ttl_ns: Option<u64>,
    /// How often a leader starts a unit of work, if it works in units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_interval_ns: Option<u64>,
    /// How long a unit takes between its check and its write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_duration_ns: Option<u64>,
}

impl Settings {
    /// Settings for `role` with `timings` (defaults resolved), fencing as
    /// given, and no membership or work loop.
    pub fn new(role: impl Into<String>, timings: &ElectorTimings, fencing: bool) -> Settings {
        Settings {
            role: role.into(),
            lease_ttl_ns: duration_nanos(timings.lease_ttl),
            renew_interval_ns: duration_nanos(timings.renew_interval),
            retry_interval_ns: duration_nanos(timings.retry_interval),
            safety_margin_ns: duration_nanos(timings.effective_safety_margin()),
            fencing,
            liveness_ttl_ns: None,
            write_interval_ns: None,
            work_duration_ns: None,
        }
    }

    /// With the registry's liveness TTL.
    pub fn with_liveness_ttl(mut self, liveness_ttl: Duration) -> Settings {
        self.liveness_ttl_ns = Some(duration_nanos(liveness_ttl));
        self
    }

    /// With the work loop's interval and unit duration.
    pub fn with_work(mut self, write_interval: Duration, work_duration: Duration) -> Settings {
        self.write_interval_ns = Some(duration_nanos(write_interval));
        self.work_duration_ns = Some(duration_nanos(work_duration));
        self
    }
}

/// One event line: when (history clock) and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// The history clock when it was recorded, in nanoseconds.
    pub at_ns: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// The store's answer to a lease request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeaseAnswer {
    /// A new term for the requester.
    Granted,
    /// The requester's live lease, extended.
    Renewed,
    /// Refused: another owner (`holder`) holds it.
    Held,
}

/// What the elector made of an answer ([`ResponseDisposition`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Disposition {
    /// Applied.
    Applied,
    /// Ignored: no longer outstanding.
    Stale,
    /// A grant or renewal whose validity had passed.
    TooLate,
    /// A grant of a term the elector had released or stopped.
    AlreadyReleased,
}

impl From<ResponseDisposition> for Disposition {
    fn from(disposition: ResponseDisposition) -> Self {
        match disposition {
            ResponseDisposition::Applied => Disposition::Applied,
            ResponseDisposition::Stale => Disposition::Stale,
            ResponseDisposition::TooLate => Disposition::TooLate,
            ResponseDisposition::AlreadyReleased => Disposition::AlreadyReleased,
        }
    }
}

impl From<Disposition> for ResponseDisposition {
    fn from(disposition: Disposition) -> Self {
        match disposition {
            Disposition::Applied => ResponseDisposition::Applied,
            Disposition::Stale => ResponseDisposition::Stale,
            Disposition::TooLate => ResponseDisposition::TooLate,
            Disposition::AlreadyReleased => ResponseDisposition::AlreadyReleased,
        }
    }
}

/// Why a term ended ([`StepDownReason`], without its data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The local deadline passed.
    LocalDeadline,
    /// A renewal was refused: `by` holds it with `by_token`.
    Superseded,
    /// The store answered with another token.
    NewTerm,
    /// The elector was stopped.
    Stopped,
    /// The work gave up.
    Abdicated,
}

/// What the downstream made of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteVerdict {
    /// Stored.
    Accepted,
    /// Rejected: below the highest accepted token (`highest`).
    RejectedStale,
    /// Rejected: the token is bound to another writer (`bound_to`).
    RejectedWrongWriter,
}

/// What happened. Events of a node's file are that process's own, except
/// `write-handled` (its `writer`) and membership (its `node`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The process started (written by [`Recorder::to_file`](super::Recorder::to_file)).
    ProcessStarted,
    /// The process is exiting after a graceful stop.
    ProcessStopped,
    /// The elector sent lease request `request` at `local_ns` on its clock.
    RequestSent {
        /// The elector's request id.
        request: u64,
        /// The process's own clock at the send.
        local_ns: u64,
    },
    /// The store's answer to `request`, as received.
    LeaseHandled {
        /// The request.
        request: u64,
        /// Granted, renewed or held.
        answer: LeaseAnswer,
        /// The requester's token (granted, renewed) or the holder's (held).
        token: FencingToken,
        /// The lease's expiry on the store's clock.
        expires_at_ns: u64,
        /// The store's clock when it decided (grants and renewals).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_now_ns: Option<u64>,
        /// The holder (held).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holder: Option<OwnerId>,
    },
    /// `request` got no answer: the store was unreachable, refused it as bad
    /// input (`rejected`), or did not answer in time.
    LeaseFailed {
        /// The request.
        request: u64,
        /// Whether the store refused it as bad input.
        rejected: bool,
        /// What went wrong.
        error: String,
    },
    /// What the elector made of the answer to `request`.
    ResponseHandled {
        /// The request.
        request: u64,
        /// Applied, stale, too late, already released.
        disposition: Disposition,
        /// The token granted or renewed, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acquired: Option<FencingToken>,
        /// Whether the answer was a renewal.
        renewal: bool,
    },
    /// The process began to believe it leads.
    TermStarted {
        /// The term's token.
        token: FencingToken,
    },
    /// The process stopped believing it leads.
    TermEnded {
        /// The term's token.
        token: FencingToken,
        /// Why.
        reason: EndReason,
        /// The new holder (superseded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<OwnerId>,
        /// The new token (superseded, new term).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by_token: Option<FencingToken>,
    },
    /// The elector sent a release of `token` to the store (its answer, if
    /// one comes, is `release-handled`). A release whose answer never comes
    /// — a cut swallowed it, the process stopped first — may still have
    /// freed the lease: `check-history` counts it as made when sent.
    ReleaseSent {
        /// The token released.
        token: FencingToken,
    },
    /// The store answered a release.
    ReleaseHandled {
        /// The token released.
        token: FencingToken,
        /// Whether it freed the lease.
        released: bool,
        /// The store's clock when it decided, on the clock of grants' and
        /// renewals' `store_now_ns`, if the store said
        /// (`LeaseBackend::release_dated`, with the `tokio` feature):
        /// `check-history` then orders the release among them by it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_now_ns: Option<u64>,
    },
    /// The registry answered a heartbeat of `node`.
    HeartbeatHandled {
        /// The node.
        node: NodeId,
        /// Whether the node joined the live set with it.
        joined: bool,
    },
    /// `node` joined the live set (as a registry reported it).
    MemberJoined {
        /// The node.
        node: NodeId,
    },
    /// `node` left the live set (as a registry reported it).
    MemberLeft {
        /// The node.
        node: NodeId,
    },
    /// A unit of work started after its leadership check at `local_ns`.
    WorkStarted {
        /// The token it will write with.
        token: FencingToken,
        /// The unit's number (per process).
        unit: u64,
        /// The process's own clock at the leadership check.
        local_ns: u64,
    },
    /// A unit's write went out.
    WriteSent {
        /// The token.
        token: FencingToken,
        /// The unit.
        unit: u64,
    },
    /// A unit was cancelled before it wrote (its term ended).
    WorkCancelled {
        /// The token.
        token: FencingToken,
        /// The unit.
        unit: u64,
    },
    /// The downstream judged a write by `writer`.
    WriteHandled {
        /// The writer.
        writer: OwnerId,
        /// The token presented.
        token: FencingToken,
        /// The unit, if the recorder knew it (else the writer's oldest unit
        /// sent with this token and not yet judged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unit: Option<u64>,
        /// Accepted or rejected.
        outcome: WriteVerdict,
        /// The highest token accepted (stale).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        highest: Option<FencingToken>,
        /// The writer the token is bound to (wrong writer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bound_to: Option<OwnerId>,
        /// The downstream's own number for this decision, if it gives one:
        /// decisions of one downstream are numbered in the order it made
        /// them (the PostgreSQL tables draw it from a sequence in the same
        /// statement as the write). A writer records its answer some time
        /// after the decision — later still if it is starved — so the
        /// recording order of two writers' answers is not the downstream's;
        /// `check-history` orders numbered decisions by this number.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<u64>,
    },
    /// A lab's fault on `host` began (`start`) or ended.
    Fault {
        /// An owner id (a process), a node id, `lease-store` or
        /// `downstream`.
        host: String,
        /// What: `pause` (SIGSTOP), or anything else for a network fault
        /// (`partition`, `delay`, `cut`, ...).
        label: String,
        /// Began or ended.
        start: bool,
    },
    /// The lab killed process `owner` (its history just ends).
    ProcessKilled {
        /// The process.
        owner: OwnerId,
    },
}

impl Event {
    /// The `lease-handled` event of `result`, the answer to `request` for a
    /// lease of `ttl` (which dates the store's decision: `expires_at − ttl`).
    pub fn lease_handled(request: u64, result: &LeaseResult, ttl: Duration) -> Event {
        let store_now = |expires_at: crate::Instant| {
            Some(expires_at.as_nanos().saturating_sub(duration_nanos(ttl)))
        };
        match result {
            LeaseResult::Granted { token, expires_at } => Event::LeaseHandled {
                request,
                answer: LeaseAnswer::Granted,
                token: *token,
                expires_at_ns: expires_at.as_nanos(),
                store_now_ns: store_now(*expires_at),
                holder: None,
            },
            LeaseResult::Renewed { token, expires_at } => Event::LeaseHandled {
                request,
                answer: LeaseAnswer::Renewed,
                token: *token,
                expires_at_ns: expires_at.as_nanos(),
                store_now_ns: store_now(*expires_at),
                holder: None,
            },
            LeaseResult::Held { holder } => Event::LeaseHandled {
                request,
                answer: LeaseAnswer::Held,
                token: holder.token,
                expires_at_ns: holder.expires_at.as_nanos(),
                store_now_ns: None,
                holder: Some(holder.owner.clone()),
            },
        }
    }

    /// The `term-ended` event of the term `token` ending for `reason`.
    pub fn term_ended(token: FencingToken, reason: &StepDownReason) -> Event {
        let (reason, by, by_token) = match reason {
            StepDownReason::LocalDeadline => (EndReason::LocalDeadline, None, None),
            StepDownReason::Superseded { holder, token } => {
                (EndReason::Superseded, Some(holder.clone()), Some(*token))
            }
            StepDownReason::NewTerm { token } => (EndReason::NewTerm, None, Some(*token)),
            StepDownReason::Stopped => (EndReason::Stopped, None, None),
            StepDownReason::Abdicated => (EndReason::Abdicated, None, None),
        };
        Event::TermEnded {
            token,
            reason,
            by,
            by_token,
        }
    }

    /// The `write-handled` event of `writer`'s write with `token` (unit
    /// `unit`, if known) and its `outcome`.
    pub fn write_handled(
        writer: &OwnerId,
        token: FencingToken,
        unit: Option<u64>,
        outcome: &WriteOutcome,
    ) -> Event {
        let (outcome, highest, bound_to) = match outcome {
            WriteOutcome::Accepted => (WriteVerdict::Accepted, None, None),
            WriteOutcome::RejectedStale { highest, .. } => {
                (WriteVerdict::RejectedStale, Some(*highest), None)
            }
            WriteOutcome::RejectedWrongWriter { bound_to, .. } => (
                WriteVerdict::RejectedWrongWriter,
                None,
                Some(bound_to.clone()),
            ),
        };
        Event::WriteHandled {
            writer: writer.clone(),
            token,
            unit,
            outcome,
            highest,
            bound_to,
            decision: None,
        }
    }

    /// This event with the downstream's decision number `number` (see
    /// [`Event::WriteHandled`]'s `decision`); any other event unchanged.
    #[must_use]
    pub fn with_decision(mut self, number: u64) -> Event {
        if let Event::WriteHandled { decision, .. } = &mut self {
            *decision = Some(number);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_flat_json_with_at_ns_first_and_round_trips() {
        // Proves the documented shape: `at_ns`, then `event` and its fields
        // on one level, optional fields left out, and parsing gives it back.
        let token = FencingToken::new(3).expect("non-zero");
        let line = Line {
            at_ns: 17,
            event: Event::TermStarted { token },
        };
        let text = serde_json::to_string(&line).expect("encodes");
        assert_eq!(text, r#"{"at_ns":17,"event":"term-started","token":3}"#);
        assert_eq!(serde_json::from_str::<Line>(&text).ok(), Some(line));
        let started = serde_json::to_string(&Line {
            at_ns: 1,
            event: Event::ProcessStarted,
        })
        .expect("encodes");
        assert_eq!(started, r#"{"at_ns":1,"event":"process-started"}"#);
    }

    #[test]
    fn invalid_values_do_not_parse() {
        // Proves parse-don't-validate: a zero token, an unknown event and an
        // invalid owner id are errors, not values.
        for bad in [
            r#"{"at_ns":1,"event":"term-started","token":0}"#,
            r#"{"at_ns":1,"event":"no-such-event"}"#,
            r#"{"at_ns":1,"event":"process-killed","owner":""}"#,
            r#"{"event":"process-started"}"#,
        ] {
            assert!(serde_json::from_str::<Line>(bad).is_err(), "{bad}");
        }
    }
}
