//! A durable, shared lease store, node registry and fenced table on
//! PostgreSQL (cargo feature `postgres`), as backends of the
//! [tokio driver](crate::tokio).
//!
//! The in-process stores of [`crate::tokio`] live in one process, so every
//! process would elect itself. [`PostgresStore`] keeps leases in a database
//! that all contenders share, with exactly the contract of the pure
//! [`LeaseStore`](crate::LeaseStore) (the table in [`crate::lease`]):
//!
//! * **The database clock is the arbiter.** Every statement reads
//!   `clock_timestamp()` on the server *after* taking its row lock — never
//!   `now()`, which is the transaction's start and can lie before a long lock
//!   wait, writing an expiry already in the past. Clients' clocks only drive
//!   their own electors' deadlines.
//! * **Acquire-or-renew is one statement** (a PL/pgSQL function the migration
//!   creates), so it is atomic under any concurrency: the role's token-counter
//!   row is locked, the lease row read, and the grant, renewal or refusal
//!   written, in one transaction. Every grant that is not a live same-holder
//!   renewal bumps the token, renewals never do, refusals name the holder with
//!   its token and expiry, expired means `now >= expires_at`, and a release
//!   frees the lease only for its live holder with that token.
//! * **Tokens never go backwards.** Counters live in a logged table of their
//!   own, separate from the lease rows, never deleted (triggers refuse
//!   `DELETE`, `TRUNCATE` and lowering), and every connection commits with
//!   `synchronous_commit = on`: a crash, a restart or a deleted lease row
//!   cannot hand a token out twice.
//! * [`PostgresRegistry`]: heartbeats into a table; live nodes are those whose
//!   liveness TTL has not run out on the database clock, sorted by id.
//! * [`PostgresFencedTable`]: a downstream table whose write compares the
//!   token and writes in one statement, with the outcomes of
//!   [`FencedStore`](crate::FencedStore).
//!
//! # Time
//!
//! Instants returned by these stores (a lease's `expires_at`) are on the
//! **database clock**: microseconds since the Unix epoch × 1 000, as
//! nanoseconds ([`instant_from_database`]). Never compare them with a
//! [`Clock`](crate::tokio::Clock)'s instants; the elector never does.
//!
//! # Schema
//!
//! [`PostgresStore::migrate`] creates everything, idempotently, in the
//! [`Namespace`] of the options (schema `fenced` by default, optional table
//! prefix): tables `lease_tokens`, `leases`, `nodes`, `fenced_resources`,
//! `schema_version`, and the functions the statements call. Migrations of one
//! database are serialized by an advisory lock, so every process may call it
//! at start.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use fenced::postgres::{PostgresOptions, PostgresStore};
//! use fenced::tokio::{CancellationToken, ElectorOptions, LeaseLeaderElector};
//! use fenced::{OwnerId, ResourceId, Role};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = PostgresStore::new("postgres://app@db.internal/app", PostgresOptions::default())?;
//! store.migrate().await?;
//! let table = store.fenced_table();
//! let owner = OwnerId::new(format!("{}#{}", "node-a", std::process::id()))?;
//! let elector = LeaseLeaderElector::new(store.clone(), ElectorOptions::new(owner.clone()));
//! let shutdown = CancellationToken::new();
//! elector
//!     .run(
//!         Role::new("reports")?,
//!         move |token, cancel| {
//!             let (table, owner) = (table.clone(), owner.clone());
//!             async move {
//!                 let resource = ResourceId::new("daily-report").expect("valid");
//!                 while !cancel.is_cancelled() {
//!                     // Every write carries the token; a stale one is rejected.
//!                     let _ = table.write(&resource, token, &owner, b"...").await;
//!                     tokio::time::sleep(Duration::from_secs(1)).await;
//!                 }
//!             }
//!         },
//!         shutdown.cancelled_owned(),
//!     )
//!     .await?;
//! # Ok(())
//! # }
//! ```

mod clock;
mod connection;
mod fenced;
mod namespace;
mod registry;
mod schema;
mod store;

use std::fmt;
use std::time::Duration;

pub use clock::{instant_from_database, ManualClock, TimeSource};
pub use connection::PostgresTls;
pub use fenced::{Decision, FencedRecord, PostgresFencedTable};
pub use namespace::{Namespace, NamespaceError};
pub use registry::PostgresRegistry;
pub use store::PostgresStore;
/// Re-exported: the driver crate, for [`PostgresStore::with_tls`]'s
/// configuration and TLS connector types.
pub use tokio_postgres;

use crate::id::FencingToken;
use crate::lease::LeaseStoreConfig;
use crate::tokio::BackendError;

/// How a [`PostgresStore`] connects and where its tables are.
#[derive(Clone, Debug)]
pub struct PostgresOptions {
    namespace: Namespace,
    lease_config: LeaseStoreConfig,
    connect_timeout: Duration,
    query_timeout: Duration,
    query_timeout_grace: Duration,
    time_source: TimeSource,
    recorder: crate::history::Recorder,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            namespace: Namespace::default(),
            lease_config: LeaseStoreConfig::default(),
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
            query_timeout: Self::DEFAULT_QUERY_TIMEOUT,
            query_timeout_grace: Self::QUERY_TIMEOUT_GRACE,
            time_source: TimeSource::Database,
            recorder: crate::history::Recorder::off(),
        }
    }
}

impl PostgresOptions {
    /// The default bound on opening a connection.
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// The default bound on one statement (the server's
    /// `statement_timeout`).
    pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(5);
    /// How much longer than the query timeout the client waits for an
    /// answer (the server's cancellation) before it gives the connection up,
    /// unless [`with_query_timeout_grace`](Self::with_query_timeout_grace)
    /// says otherwise.
    pub const QUERY_TIMEOUT_GRACE: Duration = Duration::from_secs(1);

    /// Tables in `namespace` instead of schema `fenced`.
    pub fn with_namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
        self
    }

    /// The lease store's settings (the maximum TTL), as for the pure store.
    pub fn with_lease_config(mut self, config: LeaseStoreConfig) -> Self {
        self.lease_config = config;
        self
    }

    /// How long opening a connection may take.
    pub fn with_connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// How long one statement may take: the server cancels it then (its
    /// `statement_timeout`, so it holds no lock any longer), and the call
    /// fails. If not even the cancellation arrives within
    /// [`QUERY_TIMEOUT_GRACE`](Self::QUERY_TIMEOUT_GRACE) more (a dead
    /// server, a wedged network), the call fails anyway and the connection is
    /// replaced. Keep it well below the elector's lease TTL.
    pub fn with_query_timeout(mut self, query_timeout: Duration) -> Self {
        self.query_timeout = query_timeout;
        self
    }

    /// How much longer than the query timeout the client waits for the
    /// server's cancellation before it gives the connection up (default
    /// [`QUERY_TIMEOUT_GRACE`](Self::QUERY_TIMEOUT_GRACE)). A client's whole
    /// bound on one call is `query_timeout + grace`; a run whose timings are
    /// all scaled down (`fenced-lab --time-scale`) scales this too, so that
    /// the bound keeps its place among the elector's timings. Zero is
    /// allowed: the client then gives up when the server should cancel.
    pub fn with_query_timeout_grace(mut self, grace: Duration) -> Self {
        self.query_timeout_grace = grace;
        self
    }

    /// Whose clock decides `now`: leave it at [`TimeSource::Database`] except
    /// in tests.
    pub fn with_time_source(mut self, time_source: TimeSource) -> Self {
        self.time_source = time_source;
        self
    }

    /// Records what the registry and the fenced table of the store see into
    /// `recorder` (see [`crate::history`]): members joining and leaving, and
    /// each write's outcome. Lease answers are recorded by the elector
    /// ([`ElectorOptions::with_recorder`](crate::tokio::ElectorOptions::with_recorder)),
    /// which sees every backend's. Off by default.
    pub fn with_recorder(mut self, recorder: crate::history::Recorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Where the history goes ([`Recorder::off`](crate::history::Recorder::off)
    /// unless set).
    pub fn recorder(&self) -> &crate::history::Recorder {
        &self.recorder
    }

    /// Where the tables are.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// The lease store's settings.
    pub fn lease_config(&self) -> &LeaseStoreConfig {
        &self.lease_config
    }

    /// See [`with_connect_timeout`](Self::with_connect_timeout).
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// See [`with_query_timeout`](Self::with_query_timeout).
    pub fn query_timeout(&self) -> Duration {
        self.query_timeout
    }

    /// See [`with_query_timeout_grace`](Self::with_query_timeout_grace).
    pub fn query_timeout_grace(&self) -> Duration {
        self.query_timeout_grace
    }

    /// Whose clock decides `now`.
    pub fn time_source(&self) -> &TimeSource {
        &self.time_source
    }
}

/// Why a PostgreSQL store call produced no answer.
#[derive(Debug)]
pub enum PostgresError {
    /// The connection URL could not be parsed.
    InvalidUrl(tokio_postgres::Error),
    /// An option is unusable (a zero timeout).
    InvalidOptions {
        /// Which option and why.
        problem: &'static str,
    },
    /// Connecting (or setting up the session) failed.
    Connect(tokio_postgres::Error),
    /// No connection within the connect timeout.
    ConnectTimeout(Duration),
    /// The schema's tables or functions are missing: call
    /// [`PostgresStore::migrate`] first.
    NotMigrated(tokio_postgres::Error),
    /// The schema was migrated by a newer version of this crate, whose
    /// functions this version must not replace.
    SchemaTooNew {
        /// The version found in the database.
        found: i32,
        /// The newest version this crate knows.
        supported: i32,
    },
    /// A statement failed (a server error, a lost connection). A lease call
    /// that failed this way may or may not have taken effect.
    Query(tokio_postgres::Error),
    /// No answer, not even the server's cancellation, within this long (the
    /// query timeout plus its grace); the connection was dropped and the next
    /// call reconnects. A statement the server cancels at the query timeout
    /// is a [`PostgresError::Query`] (SQLSTATE `57014`).
    QueryTimeout(Duration),
    /// A row held something this crate never writes (an invalid identity, a
    /// zero token, an unknown outcome): the tables were edited by hand.
    Corrupt {
        /// What was wrong.
        detail: String,
    },
    /// A database timestamp lies before 1970 or after 2554, outside
    /// [`Instant`](crate::Instant)'s range.
    TimeOutOfRange,
    /// A fencing token above `i64::MAX`, which PostgreSQL's `bigint` cannot
    /// hold (the store never issues one).
    TokenOutOfRange(FencingToken),
}

impl PostgresError {
    /// Whether the call failed because its connection was lost or could not
    /// be opened — a connection error, not a timeout nor a server's refusal:
    /// [`Connect`](Self::Connect), [`ConnectTimeout`](Self::ConnectTimeout),
    /// or a [`Query`](Self::Query) on a connection found closed (reset by a
    /// server restart). The call did not run, or ran and its answer was lost
    /// with the connection; an application may send it again on the fresh
    /// connection the next call opens (a fenced write may: the fence judges
    /// the repeat as it judged the first). After a
    /// [`QueryTimeout`](Self::QueryTimeout) the statement may still be
    /// running at the server.
    pub fn connection_lost(&self) -> bool {
        match self {
            PostgresError::Connect(_) | PostgresError::ConnectTimeout(_) => true,
            PostgresError::Query(error) => error.is_closed(),
            _ => false,
        }
    }
}

/// A driver error with its causes (`tokio_postgres::Error`'s own `Display`
/// leaves them out: "db error", without the server's message).
struct Chain<'a>(&'a tokio_postgres::Error);

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = std::error::Error::source(self.0);
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        if let Some(code) = self.0.code() {
            write!(f, " (SQLSTATE {})", code.code())?;
        }
        Ok(())
    }
}

impl fmt::Display for PostgresError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostgresError::InvalidUrl(error) => {
                write!(f, "invalid PostgreSQL URL: {}", Chain(error))
            }
            PostgresError::InvalidOptions { problem } => {
                write!(f, "invalid PostgreSQL store options: {problem}")
            }
            PostgresError::Connect(error) => {
                write!(f, "could not connect to PostgreSQL: {}", Chain(error))
            }
            PostgresError::ConnectTimeout(after) => {
                write!(f, "could not connect to PostgreSQL within {after:?}")
            }
            PostgresError::NotMigrated(error) => write!(
                f,
                "the fenced schema is missing or incomplete (run PostgresStore::migrate): {}",
                Chain(error)
            ),
            PostgresError::SchemaTooNew { found, supported } => write!(
                f,
                "the fenced schema is at version {found}, newer than the {supported} this \
                 version of the crate supports"
            ),
            PostgresError::Query(error) => {
                write!(f, "PostgreSQL statement failed: {}", Chain(error))
            }
            PostgresError::QueryTimeout(after) => {
                write!(f, "PostgreSQL statement unanswered within {after:?}")
            }
            PostgresError::Corrupt { detail } => {
                write!(f, "unexpected row in the fenced tables: {detail}")
            }
            PostgresError::TimeOutOfRange => {
                f.write_str("a database timestamp is outside the range of fenced::Instant")
            }
            PostgresError::TokenOutOfRange(token) => {
                write!(
                    f,
                    "fencing token {token} does not fit in a PostgreSQL bigint"
                )
            }
        }
    }
}

impl std::error::Error for PostgresError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PostgresError::InvalidUrl(error)
            | PostgresError::Connect(error)
            | PostgresError::NotMigrated(error)
            | PostgresError::Query(error) => Some(error),
            _ => None,
        }
    }
}

impl From<PostgresError> for BackendError {
    fn from(error: PostgresError) -> Self {
        BackendError::unavailable(error)
    }
}

/// Column `index` of `row`, as a `T`.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a tokio_postgres::Row,
    index: usize,
) -> Result<T, PostgresError> {
    row.try_get(index).map_err(PostgresError::Query)
}

/// A fencing token as a PostgreSQL `bigint`.
fn token_to_database(token: FencingToken) -> Result<i64, PostgresError> {
    i64::try_from(token.get()).map_err(|_| PostgresError::TokenOutOfRange(token))
}

/// A `bigint` from the database as a fencing token (`what` names the column).
fn token_from_database(value: i64, what: &str) -> Result<FencingToken, PostgresError> {
    u64::try_from(value)
        .ok()
        .and_then(FencingToken::new)
        .ok_or_else(|| PostgresError::Corrupt {
            detail: format!("{what} is {value}, not a fencing token"),
        })
}

/// Parses an identity (role, owner, node) read from the database.
fn identity_from_database<T>(value: &str) -> Result<T, PostgresError>
where
    T: std::str::FromStr<Err = crate::id::IdError>,
{
    value.parse().map_err(|error| PostgresError::Corrupt {
        detail: format!("{value:?}: {error}"),
    })
}
