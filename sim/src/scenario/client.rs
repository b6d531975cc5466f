//! `[client]`: how a node's process reaches the servers — the fenced
//! protocol's lease store and registry, and every protocol's downstream.
//!
//! The default mirrors the crate's production client, `fenced::postgres`
//! (`src/postgres/connection.rs`): each store handle (the lease store, the
//! registry, the downstream's table) keeps **one session**, opened on first
//! use at a cost of five round trips, bounded by timeouts, retired when a
//! call outlives its bound and reset when the server restarts. The
//! simulator's hosts model it in `hosts/session.rs`; `fenced-lab` runs the
//! real driver with the same settings. `transport = "datagrams"` is the
//! model of the releases before sessions: every message stands alone, no
//! call is ever answered late or failed by the client, and nothing is
//! opened — kept so that an older scenario's outcome (and trace hash) can be
//! had again, and for abstract studies of the protocol alone.

use std::time::Duration;

/// `[client] transport`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// One session per store handle, as `fenced::postgres` keeps one
    /// connection per store (the default).
    #[default]
    Sessions,
    /// Every message on its own: no session to open, no answer awaited for
    /// a write, a heartbeat or a release (the model before sessions).
    Datagrams,
}

impl Transport {
    /// The scenario file's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Sessions => "sessions",
            Transport::Datagrams => "datagrams",
        }
    }
}

/// `[client]`: the transport and the client's bounds.
///
/// The defaults are `fenced::postgres::PostgresOptions`'s:
/// `DEFAULT_CONNECT_TIMEOUT` (5 s), `DEFAULT_QUERY_TIMEOUT` (5 s) and
/// `QUERY_TIMEOUT_GRACE` (1 s). A client bounds one call by
/// `query_timeout + query_grace` (the server cancels a statement at
/// `query_timeout`; the client waits the grace longer for that answer
/// before it gives the connection up: `Connection::run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client {
    /// Sessions (the default) or datagrams.
    pub transport: Transport,
    /// The bound on a session's connect (TCP and PostgreSQL's startup):
    /// `Connection::open`'s `timeout(connect_timeout, connect)`.
    pub connect_timeout: Duration,
    /// The server's statement timeout.
    pub query_timeout: Duration,
    /// How much longer than `query_timeout` the client waits.
    pub query_grace: Duration,
}

impl Default for Client {
    fn default() -> Self {
        Client {
            transport: Transport::Sessions,
            connect_timeout: Duration::from_secs(5),
            query_timeout: Duration::from_secs(5),
            query_grace: Duration::from_secs(1),
        }
    }
}

impl Client {
    /// The client's bound on one call once its session is open:
    /// `query_timeout + query_grace`.
    pub fn query_bound(&self) -> Duration {
        self.query_timeout.saturating_add(self.query_grace)
    }

    /// Whether nodes keep sessions.
    pub fn sessions(&self) -> bool {
        self.transport == Transport::Sessions
    }
}
