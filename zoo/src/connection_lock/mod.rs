//! A PostgreSQL session-level advisory lock held for a connection's life
//! (`SELECT pg_try_advisory_lock(key)`), the leader election many services
//! run "because we already have Postgres".
//!
//! # What it mirrors
//!
//! * PostgreSQL docs, "Advisory Locks" (explicit-locking.html#ADVISORY-LOCKS)
//!   and "Advisory Lock Functions" (functions-admin.html): a session-level
//!   advisory lock is held until explicitly released **or the session ends**;
//!   `pg_try_advisory_lock` does not wait and returns `true`/`false`; a
//!   session that already holds the lock gets it again and then holds it
//!   **twice** ("multiple lock requests stack, so that if the same resource
//!   is locked three times it must then be unlocked three times") — the
//!   model keeps that count, so a duplicated request needs two unlocks.
//! * PostgreSQL docs, "Connection Settings": `tcp_keepalives_idle`,
//!   `tcp_keepalives_interval`, `tcp_keepalives_count`, all defaulting to `0`
//!   = "the operating system's default". The backend learns its client is
//!   gone when the client's kernel closes the connection (the process died:
//!   [`LockClient::kernel_closed`](crate::LockClient::kernel_closed)), or
//!   when its own kernel gives up on a silent one; until then the session,
//!   and its advisory lock, live. On Linux the defaults are
//!   `tcp_keepalive_time` 7200 s, `tcp_keepalive_intvl` 75 s,
//!   `tcp_keepalive_probes` 9: a vanished client's lock is freed
//!   7200 + 9 × 75 = 7875 s (2 h 11 min 15 s) after it was last heard from.
//!   The model's defaults are those Linux values — what a default install
//!   really does. `idle_session_timeout` and
//!   `idle_in_transaction_session_timeout` default to 0 (off) and are left out.
//! * The client is libpq-like (`PQconnectdb`, one synchronous query at a
//!   time): it believes it holds the lock while its connection lives and
//!   learns the connection is broken only when it next **uses** it — a query
//!   that errors (a restarted server resets the unknown connection) or times
//!   out. libpq has no query timeout: a query to a vanished server blocks
//!   until the kernel stops retransmitting (Linux `tcp_retries2` = 15:
//!   ≈ 924.6 s), which is the default of [`PgSettings::query_timeout`]; the
//!   connect timeout defaults to Linux's SYN give-up (`tcp_syn_retries` = 6:
//!   127 s; libpq's `connect_timeout` is 0 = wait forever). A client that
//!   gives up on a connection closes it (`PQfinish` sends `Terminate`), which
//!   ends the session if it reaches the server.
//! * **Each connection is a TCP connection**, numbered by the id of its
//!   `Connect` ([`Protocol::request_connection`]), so a driver carries it
//!   as TCP does and as `fenced-lab`'s proxy does for real: in order, a
//!   lost segment retransmitted rather than lost (a query sent into a 40 s
//!   partition is answered after it, not given up 924.6 s later), held while
//!   its link is down, and opened by a handshake. When the server process
//!   dies, its machine's kernel resets every connection it had open
//!   ([`LockServer::went_down`](crate::LockServer::went_down): the client
//!   hears [`PgResponse::Closed`]); a libpq client finds out when it next
//!   uses the socket — at once if a query is waiting on it, else at its next
//!   query, which fails with nothing sent. A connect while the server is
//!   down is refused by its kernel ([`Protocol::refused`]: `PQconnectdb`
//!   fails at once, "Connection refused") and the loop tries again after
//!   `retry_interval`. Measured in `fenced-lab` (a restart of `postgres`:
//!   its proxies reset the connections and refuse new ones). The
//!   consequence, shipped as `scenarios/connection-lock-server-restart`: a
//!   holder that learns of the restart only at its next health query leads
//!   on while a follower, whose try came first, has taken the freed lock.
//!
//! # The application loop (the model's own, documented choice)
//!
//! Not holding: `pg_try_advisory_lock` every [`PgSettings::retry_interval`]
//! (5 s). Holding: a health query (`SELECT 1`) every
//! [`PgSettings::check_interval`] (10 s). A broken connection: reconnect after
//! `retry_interval`. Stop: `pg_advisory_unlock`, then close.
//!
//! # Left out
//!
//! The client's own TCP keepalive (libpq `keepalives_idle` also defaults to
//! the OS's 7200 s, and the client talks every few seconds, so it never
//! fires); the server's TCP retransmission timeout for replies left unacked
//! (a machine vanishing between queries — the common case of a silent
//! client — is the keepalive path); `tcp_user_timeout`; transaction-level
//! advisory locks.
//!
//! **Keepalive probes are answered by the client's kernel**, even while the
//! client process is paused (a GC pause keeps the lock). The model answers
//! probes in [`LockClient::handle_response`](crate::LockClient::handle_response):
//! a driver that wants kernel fidelity should deliver
//! [`PgResponse::KeepaliveProbe`] to a paused client host too.
//!
//! **A crash is a killed process on a live machine.** Its kernel closes
//! the socket (FIN), the backend reads end-of-file and exits, and the lock
//! is freed at once: the client sends `Terminate` from
//! [`LockClient::kernel_closed`](crate::LockClient::kernel_closed), which
//! ends the session alike. `fenced-lab` measured it (a SIGKILLed holder's
//! lock is free within milliseconds, `lab/tests/zoo_connection_lock.rs`);
//! until then this model waited for the keepalive verdict, which is what a
//! machine that vanishes gets (a partition, or an isolation before the
//! crash).
//!
//! # Known failure modes
//!
//! No token, and the server frees a vanished or partitioned holder's lock
//! only on its keepalive verdict (2 h 11 min by default), while a paused or
//! partitioned holder keeps acting as leader until its next query fails.
//! A server restart frees the lock at once, but the holder learns of it
//! only at its next query (up to `check_interval` later): another client
//! can take the lock first, and both lead meanwhile.

mod client;
mod server;

use std::time::Duration;

pub use client::PgClient;
pub use server::PgServer;

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Protocol, ServerIndex, SettingsError};

/// The PostgreSQL advisory-lock protocol.
#[derive(Clone, Copy, Debug)]
pub enum ConnectionLock {}

/// Settings; `Default` = PostgreSQL's defaults resolved on Linux, plus the
/// application loop's intervals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSettings {
    /// Server: silence before the first keepalive probe (7200 s).
    pub tcp_keepalives_idle: Duration,
    /// Server: between probes (75 s).
    pub tcp_keepalives_interval: Duration,
    /// Server: unanswered probes before the connection is dead (9).
    pub tcp_keepalives_count: u32,
    /// Client: how long a query may go unanswered before the connection is
    /// declared broken (Linux retransmission give-up, 924.6 s).
    pub query_timeout: Duration,
    /// Client: how long a connection attempt may take (Linux SYN give-up, 127 s).
    pub connect_timeout: Duration,
    /// Client: between lock attempts, and before reconnecting (5 s).
    pub retry_interval: Duration,
    /// Client: between health queries while holding (10 s).
    pub check_interval: Duration,
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings {
            tcp_keepalives_idle: Duration::from_secs(7200),
            tcp_keepalives_interval: Duration::from_secs(75),
            tcp_keepalives_count: 9,
            query_timeout: Duration::from_millis(924_600),
            connect_timeout: Duration::from_secs(127),
            retry_interval: Duration::from_secs(5),
            check_interval: Duration::from_secs(10),
        }
    }
}

impl PgSettings {
    /// How long after the last word from a client the server declares its
    /// session dead: `idle + count × interval`.
    pub fn keepalive_verdict_after(&self) -> Duration {
        self.tcp_keepalives_idle + self.tcp_keepalives_interval * self.tcp_keepalives_count
    }
}

/// Identifies one backend session (a connection). Never reused by a server,
/// even across restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub u64);

/// A client's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgRequest {
    /// Open a connection (startup packet): the first packet of a new TCP
    /// connection, which follows its handshake.
    Connect {
        /// Matches the answer, and numbers the connection: every later
        /// message on it, either way, names it as `conn`.
        id: u64,
    },
    /// `SELECT pg_try_advisory_lock(key)`.
    TryLock {
        /// The TCP connection it travels on (its `Connect`'s `id`).
        conn: u64,
        /// The session the server gave that connection.
        session: SessionId,
        /// Matches the answer.
        id: u64,
    },
    /// `SELECT 1`: using the connection.
    Ping {
        /// The TCP connection it travels on (its `Connect`'s `id`).
        conn: u64,
        /// The session the server gave that connection.
        session: SessionId,
        /// Matches the answer.
        id: u64,
    },
    /// `SELECT pg_advisory_unlock(key)`.
    Unlock {
        /// The TCP connection it travels on (its `Connect`'s `id`).
        conn: u64,
        /// The session the server gave that connection.
        session: SessionId,
        /// Matches the answer.
        id: u64,
    },
    /// `Terminate`: close the connection; the session ends.
    Terminate {
        /// The TCP connection it travels on (its `Connect`'s `id`).
        conn: u64,
        /// The session the server gave that connection.
        session: SessionId,
    },
    /// The client kernel's ACK of a keepalive probe.
    KeepaliveAck {
        /// The TCP connection it travels on (its `Connect`'s `id`).
        conn: u64,
        /// The session the server gave that connection.
        session: SessionId,
    },
}

/// The server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgResponse {
    /// The connection is open.
    Connected {
        /// The `Connect` it answers.
        id: u64,
        /// The new session.
        session: SessionId,
    },
    /// `pg_try_advisory_lock`'s result.
    Locked {
        /// The connection it travels on.
        conn: u64,
        /// The request.
        id: u64,
        /// `true` if the session now holds the lock.
        ok: bool,
    },
    /// `SELECT 1` answered.
    Pong {
        /// The connection it travels on.
        conn: u64,
        /// The request.
        id: u64,
    },
    /// `pg_advisory_unlock`'s result.
    Unlocked {
        /// The connection it travels on.
        conn: u64,
        /// The request.
        id: u64,
        /// `false` if the session did not hold it (PostgreSQL warns).
        ok: bool,
    },
    /// The connection is unknown to the server (it restarted, or ended the
    /// session): the client's socket is reset.
    ConnectionReset {
        /// The connection it travels on.
        conn: u64,
        /// The request.
        id: u64,
    },
    /// A TCP keepalive probe on `session`'s connection.
    KeepaliveProbe {
        /// The connection probed.
        conn: u64,
        /// Its session.
        session: SessionId,
    },
    /// The connection was closed under the client by the server machine's
    /// kernel: the server process died (every connection it had open is
    /// reset at once), or, for a connection being opened, nothing listened
    /// on the port (the SYN was refused). A libpq client learns it when it
    /// next uses the connection — at once if a query is waiting on it.
    Closed {
        /// The connection.
        conn: u64,
    },
}

impl Protocol for ConnectionLock {
    const NAME: &'static str = "connection-lock";
    type Settings = PgSettings;
    type Request = PgRequest;
    type Response = PgResponse;
    type Client = PgClient;
    type Server = PgServer;
    const HAS_TOKEN: bool = false;
    /// The client's only timing is the kernel's: TCP keepalive and
    /// retransmission timers run on the kernel's monotonic clock.
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// PostgreSQL frees a session's advisory lock when the kernel's
    /// keepalive verdict ends the connection: `tcp_keepalives_idle`,
    /// `_interval`, `_count` are kernel timers, on its monotonic clock.
    const SERVER_CLOCK: ClockKind = ClockKind::Monotonic;

    fn validate(settings: &PgSettings) -> Result<(), SettingsError> {
        nonzero("tcp_keepalives_idle", settings.tcp_keepalives_idle)?;
        nonzero("tcp_keepalives_interval", settings.tcp_keepalives_interval)?;
        if settings.tcp_keepalives_count == 0 {
            return Err(SettingsError::Zero {
                setting: "tcp_keepalives_count",
            });
        }
        nonzero("query_timeout", settings.query_timeout)?;
        nonzero("connect_timeout", settings.connect_timeout)?;
        nonzero("retry_interval", settings.retry_interval)?;
        nonzero("check_interval", settings.check_interval)?;
        Ok(())
    }

    fn servers(_settings: &PgSettings) -> u16 {
        1
    }

    /// The server's kernel probes a silent connection `tcp_keepalives_idle`
    /// after the last packet it heard and declares it dead after
    /// `tcp_keepalives_count` unanswered probes, `interval` apart
    /// (`server.rs`, `due`): both instants follow each input. Lengths: that
    /// verdict, the client's query timeout and its health-check period.
    fn boundaries(settings: &PgSettings) -> Boundaries {
        let verdict = settings.tcp_keepalives_idle
            + settings.tcp_keepalives_interval * settings.tcp_keepalives_count;
        Boundaries {
            expiries: vec![settings.tcp_keepalives_idle, verdict],
            expiry_tick: None,
            lengths: vec![verdict, settings.query_timeout, settings.check_interval],
        }
    }

    /// A keepalive probe is answered by the holder's kernel, even while its
    /// process is stopped in a GC pause: that is why a paused holder keeps
    /// its session and so its lock.
    fn answered_by_kernel(response: &PgResponse) -> bool {
        matches!(response, PgResponse::KeepaliveProbe { .. })
    }

    /// Each libpq connection is a TCP connection of its own, numbered by
    /// its `Connect`'s id: a driver carries it as a stream (in order, held
    /// while its link is down, as the kernel retransmits, and opened by a
    /// handshake), as `fenced-lab`'s proxy carries it for real.
    fn request_connection(request: &PgRequest) -> Option<u64> {
        Some(match *request {
            PgRequest::Connect { id } => id,
            PgRequest::TryLock { conn, .. }
            | PgRequest::Ping { conn, .. }
            | PgRequest::Unlock { conn, .. }
            | PgRequest::Terminate { conn, .. }
            | PgRequest::KeepaliveAck { conn, .. } => conn,
        })
    }

    /// The startup packet opens the connection (`PQconnectdb`: connect, then
    /// the startup message).
    fn opens_connection(request: &PgRequest) -> bool {
        matches!(request, PgRequest::Connect { .. })
    }

    fn response_connection(response: &PgResponse) -> Option<u64> {
        Some(match *response {
            PgResponse::Connected { id, .. } => id,
            PgResponse::Locked { conn, .. }
            | PgResponse::Pong { conn, .. }
            | PgResponse::Unlocked { conn, .. }
            | PgResponse::ConnectionReset { conn, .. }
            | PgResponse::KeepaliveProbe { conn, .. }
            | PgResponse::Closed { conn } => conn,
        })
    }

    /// A connect to a server that is down is refused by its machine's
    /// kernel: libpq's `PQconnectdb` returns `CONNECTION_BAD` ("Connection
    /// refused") at once, and the application loop tries again after its
    /// retry interval, as after any broken connection.
    fn refused(connection: u64) -> Option<PgResponse> {
        Some(PgResponse::Closed { conn: connection })
    }

    fn new_server(settings: &PgSettings, _index: ServerIndex) -> PgServer {
        PgServer::new(settings.clone())
    }

    fn new_client(settings: &PgSettings, id: ClientId, _name: &str, _seed: u64) -> PgClient {
        PgClient::new(settings.clone(), id)
    }
}
