//! What observers are told of the client's sessions (`[client] transport =
//! "sessions"`; the model is `hosts/session.rs`).

/// Which of a process's sessions: each store handle of a real process
/// keeps its own connection (`fenced::postgres`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// The elector's, to the lease store (leases and releases).
    Lease = 0,
    /// The heartbeat's, to the lease store's registry.
    Registry = 1,
    /// The worker's, to the downstream (writes).
    Downstream = 2,
}

impl SessionKind {
    /// The words of traces.
    pub fn text(self) -> &'static str {
        match self {
            SessionKind::Lease => "lease",
            SessionKind::Registry => "registry",
            SessionKind::Downstream => "downstream",
        }
    }
}

/// A call that ended without an answer for its caller (a lease request's
/// failure is [`Observation::RequestFailed`](super::Observation::RequestFailed)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedCall {
    /// A release of the term `token`.
    Release {
        /// The term.
        token: fenced::FencingToken,
    },
    /// A heartbeat.
    Heartbeat,
    /// A unit's write.
    Write {
        /// The token it carries.
        token: fenced::FencingToken,
        /// The unit.
        unit: u64,
        /// Whether the worker sends it again (`[work] write_retries`).
        retried: bool,
    },
}

/// Why a call ended without an answer for its caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallFailure {
    /// The caller's own bound passed (the driver's TTL, retry interval or
    /// heartbeat interval); the call may still be answered, too late.
    CallerBound = 0,
    /// No answer within the query bound on the open session, which retired.
    QueryTimeout = 1,
    /// The session it waited for could not open within a phase's bound.
    OpenTimeout = 2,
    /// The server restarted: the connection was reset.
    Reset = 3,
    /// Its session's connect was refused: the server was down.
    Refused = 4,
}

impl CallFailure {
    /// The words of traces.
    pub fn text(self) -> &'static str {
        match self {
            CallFailure::CallerBound => "its caller's bound passed",
            CallFailure::QueryTimeout => "no answer within the query bound",
            CallFailure::OpenTimeout => "its session could not open",
            CallFailure::Reset => "connection reset",
            CallFailure::Refused => "connection refused",
        }
    }

    /// Whether an application retries a call that failed so: its session
    /// never opened (timed out or refused), or its connection was reset — a
    /// connection error, not a timeout (after which the call may still be
    /// running at the server). A reset may still come after the server
    /// handled the call: its retry then repeats it, as a real client's
    /// would.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            CallFailure::OpenTimeout | CallFailure::Reset | CallFailure::Refused
        )
    }
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// A phase of its open passed its bound.
    OpenTimedOut = 0,
    /// A call on it passed the query bound: no later call uses it.
    Retired = 1,
    /// The server restarted.
    Reset = 2,
    /// The call that was opening it was dropped by its caller.
    Abandoned = 3,
    /// Its connect was refused: the server was down.
    Refused = 4,
}

impl SessionEnd {
    /// The words of traces.
    pub fn text(self) -> &'static str {
        match self {
            SessionEnd::OpenTimedOut => "its open timed out",
            SessionEnd::Retired => "retired after a call timed out",
            SessionEnd::Reset => "reset by the server's restart",
            SessionEnd::Abandoned => "its open was abandoned",
            SessionEnd::Refused => "its connect was refused: the server is down",
        }
    }
}
