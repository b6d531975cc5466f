//! Why a node could not run ([`NodeError`]), why a duration flag is refused
//! ([`DurationFlagError`]) and why a write to the plain table failed
//! ([`WriteError`]).

use std::fmt;

use fenced::postgres::tokio_postgres;

/// Why a node could not run.
#[derive(Debug)]
pub enum NodeError {
    /// A flag is invalid (exit 2).
    BadInput(String),
    /// PostgreSQL or the runtime failed (exit 1).
    Infrastructure(String),
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeError::BadInput(what) => write!(f, "bad node arguments: {what}"),
            NodeError::Infrastructure(what) => write!(f, "node failed: {what}"),
        }
    }
}

impl std::error::Error for NodeError {}

pub(super) fn bad(what: impl fmt::Display) -> NodeError {
    NodeError::BadInput(what.to_string())
}

pub(super) fn infra(what: impl fmt::Display) -> NodeError {
    NodeError::Infrastructure(what.to_string())
}

/// Why a duration flag of `fenced-lab node` is refused (clap prints it
/// after the value).
#[derive(Debug)]
pub(super) struct DurationFlagError {
    /// The flag's value.
    pub(super) text: String,
    /// What humantime said.
    pub(super) source: humantime::DurationError,
}

impl fmt::Display for DurationFlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.text, self.source)
    }
}

impl std::error::Error for DurationFlagError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Why a write to the unfenced downstream failed.
#[derive(Debug)]
pub(super) enum WriteError {
    /// The fencing token does not fit PostgreSQL's `bigint`.
    TokenTooBig,
    /// Connecting took longer than the timeout.
    ConnectTimedOut,
    /// Connecting failed.
    Connect(tokio_postgres::Error),
    /// The insert failed.
    Insert(tokio_postgres::Error),
    /// The insert took longer than the timeout.
    InsertTimedOut,
    /// The insert's answer carried no row id.
    NoId,
}

impl WriteError {
    /// Whether the write failed because its connection was lost or could
    /// not be opened (as `fenced::postgres::PostgresError::connection_lost`
    /// says for the fenced table): sent again on a fresh connection.
    pub(super) fn connection_lost(&self) -> bool {
        match self {
            WriteError::ConnectTimedOut | WriteError::Connect(_) => true,
            WriteError::Insert(error) => error.is_closed(),
            WriteError::TokenTooBig | WriteError::InsertTimedOut | WriteError::NoId => false,
        }
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::TokenTooBig => f.write_str("token above i64::MAX"),
            WriteError::ConnectTimedOut => f.write_str("connect timed out"),
            WriteError::Connect(e) => write!(f, "connect: {e}"),
            WriteError::Insert(e) => write!(f, "insert: {e}"),
            WriteError::InsertTimedOut => f.write_str("insert timed out"),
            WriteError::NoId => f.write_str("the insert returned no row id"),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WriteError::Connect(e) | WriteError::Insert(e) => Some(e),
            WriteError::TokenTooBig
            | WriteError::ConnectTimedOut
            | WriteError::InsertTimedOut
            | WriteError::NoId => None,
        }
    }
}
