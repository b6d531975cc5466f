//! The connection-lock node (`fenced-lab node --connection-lock`): leader
//! election by a PostgreSQL session-level advisory lock, held for the
//! connection's life — the zoo's `fenced_zoo::connection_lock` model, for
//! real.
//!
//! # What it follows, and where each timing comes from
//!
//! The model's application loop (`zoo/src/connection_lock/mod.rs`, "The
//! application loop", and its `PgClient`), one decision for one decision:
//!
//! * **Connect** with libpq's behaviour bounded as the model bounds it:
//!   `connect_timeout` (the model's default is Linux's SYN give-up, 127 s,
//!   `tcp_syn_retries` = 6, since libpq's own `connect_timeout` is 0 = wait
//!   forever). The server's keepalive settings travel in the startup packet
//!   (`options='-c tcp_keepalives_idle=… -c tcp_keepalives_interval=… -c
//!   tcp_keepalives_count=…'`, PostgreSQL docs, "Connection Settings"), so
//!   they hold for this session from its first byte, on the server's
//!   socket: the model's `PgSettings::tcp_keepalives_*` (Linux's 7200 s /
//!   75 s / 9 by default), scaled and in whole seconds
//!   ([`crate::design`]).
//! * **Not holding**: `pg_try_advisory_lock(key)` at once on a new
//!   connection, then every `retry_interval` (PostgreSQL docs, "Advisory
//!   Lock Functions": it does not wait, and answers true or false).
//! * **Holding**: `SELECT 1` every `check_interval` — the only way a libpq
//!   client learns its connection is broken is to **use** it.
//! * **A query** is given up after `query_timeout` (the model's default is
//!   Linux's retransmission give-up, `tcp_retries2` = 15: 924.6 s; libpq has
//!   no query timeout of its own); a query that fails or is given up breaks
//!   the connection: leadership ends (`term-ended`, reason `local-deadline`
//!   as the simulator's zoo processes record a design's own step-down), the
//!   client closes the connection (tokio-postgres sends `Terminate` when the
//!   client is dropped, as `PQfinish` does — which ends the session if it
//!   ever arrives) and reconnects after `retry_interval`.
//! * **Stop** (SIGTERM): leadership ends (`stopped`), `pg_advisory_unlock`,
//!   then close. The model sends both and forgets them; here they are
//!   awaited for at most `write_interval + work_duration` (the fenced node's
//!   stop bound), so the bytes leave before the process exits.
//!
//! Each query is one `simple_query` (one round trip, as libpq's `PQexec`);
//! the key is computed here, so no statement needs preparing.
//!
//! # Terms, without a token
//!
//! The design has no token. The simulator numbers a tokenless design's
//! terms in the order they begin (`sim/src/zoo/process.rs`); here the
//! holder draws its term number from the run's sequence
//! ([`crate::schema::LOCK_TERMS`]) **in the statement that takes the
//! lock** (`SELECT CASE WHEN pg_try_advisory_lock(k) THEN nextval(…)
//! END`), so terms are numbered in the order the server granted the lock.
//! The number only tells terms apart for the checker; the downstream is the
//! plain table (validation refuses `fencing = true` for a tokenless
//! design), which checks nothing.
//!
//! # The key
//!
//! Advisory locks are per database, not per schema, and the lab's tests run
//! two runs at a time on one database: the key is FNV-1a of `<run's
//! schema>/<role>`, so runs never contend with each other.

use std::sync::Arc;
use std::time::Duration;

use fenced::history::Event;
use fenced::postgres::tokio_postgres::{self, Client, Config, NoTls, SimpleQueryMessage};
use fenced::tokio::CancellationToken;
use fenced::{FencingToken, StepDownReason};
use fenced_zoo::connection_lock::PgSettings;
use tokio::sync::watch;
use tokio::time::{sleep_until, timeout, Instant};

use super::errors::{bad, NodeError};
use super::{say, WorkContext};
use crate::schema::LOCK_TERMS;

/// What the lock's client needs, validated.
pub(super) struct LockClient {
    /// Where PostgreSQL is (the node's proxy), with the keepalive options.
    config: Config,
    /// The lock's key.
    key: i64,
    /// The statement that tries the lock and draws a term number.
    try_lock: String,
    /// The model's settings, scaled.
    settings: PgSettings,
    /// How long a stop may take to unlock and close.
    stop_bound: Duration,
}

/// FNV-1a, 64 bits, as a signed key.
pub(super) fn key_of(text: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash as i64
}

impl LockClient {
    /// The client of `url` for the lock of `role` in `schema`.
    ///
    /// # Errors
    /// Bad input: the URL does not parse.
    pub(super) fn new(
        url: &str,
        schema: &str,
        role: &str,
        settings: PgSettings,
        stop_bound: Duration,
    ) -> Result<LockClient, NodeError> {
        let mut config: Config = url.parse().map_err(|e| bad(format!("--lease-url: {e}")))?;
        config.options(format!(
            "-c tcp_keepalives_idle={} -c tcp_keepalives_interval={} -c tcp_keepalives_count={}",
            settings.tcp_keepalives_idle.as_secs(),
            settings.tcp_keepalives_interval.as_secs(),
            settings.tcp_keepalives_count
        ));
        let key = super::connection_lock_key(schema, role);
        Ok(LockClient {
            config,
            key,
            try_lock: format!(
                "SELECT CASE WHEN pg_try_advisory_lock({key}) \
                 THEN nextval('\"{schema}\".{LOCK_TERMS}') END"
            ),
            settings,
            stop_bound,
        })
    }
}

/// One open connection; dropping it closes it (`Terminate`).
struct Session {
    client: Client,
}

/// Why a query gave no answer.
enum Broken {
    /// The server or the connection failed.
    Failed(tokio_postgres::Error),
    /// No answer within `query_timeout`.
    TimedOut,
    /// An answer this client cannot read.
    Unreadable(String),
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Failed(e) => write!(f, "{e}"),
            Broken::TimedOut => f.write_str("no answer within query_timeout"),
            Broken::Unreadable(what) => f.write_str(what),
        }
    }
}

/// The term being led: its number and what cancels its work.
use super::DesignTerm as Term;

/// Runs the client until `shutdown`, telling `believed` (and the history)
/// when a term begins and ends, and running `context`'s work while it does.
pub(super) async fn run(
    lock: LockClient,
    context: Arc<WorkContext>,
    believed: watch::Sender<Option<FencingToken>>,
    shutdown: CancellationToken,
) {
    let driver = Driver {
        lock,
        context,
        believed,
        shutdown,
        term: None,
    };
    driver.run().await;
}

struct Driver {
    lock: LockClient,
    context: Arc<WorkContext>,
    believed: watch::Sender<Option<FencingToken>>,
    shutdown: CancellationToken,
    term: Option<Term>,
}

impl Driver {
    async fn run(mut self) {
        loop {
            let Some(session) = self.connect().await else {
                if self.pause(self.lock.settings.retry_interval).await {
                    return;
                }
                continue;
            };
            match self.hold(&session).await {
                Some(broken) => {
                    say(&self.context.owner, format_args!("lock broken={broken}"));
                    self.end_term(&StepDownReason::LocalDeadline, "connection broken");
                    drop(session);
                    if self.pause(self.lock.settings.retry_interval).await {
                        return;
                    }
                }
                None => {
                    self.stop(session).await;
                    return;
                }
            }
        }
    }

    /// Waits `span`; whether a shutdown came meanwhile.
    async fn pause(&self, span: Duration) -> bool {
        tokio::select! {
            _ = self.shutdown.cancelled() => true,
            _ = tokio::time::sleep(span) => false,
        }
    }

    /// A new connection, or `None` when it failed or took longer than
    /// `connect_timeout` (or a shutdown came).
    async fn connect(&self) -> Option<Session> {
        let connecting = timeout(
            self.lock.settings.connect_timeout,
            self.lock.config.connect(NoTls),
        );
        let connected = tokio::select! {
            _ = self.shutdown.cancelled() => return None,
            connected = connecting => connected,
        };
        match connected {
            Ok(Ok((client, connection))) => {
                // Detached: it ends when the socket does, after sending
                // `Terminate` once the client is dropped.
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                say(&self.context.owner, format_args!("lock connected"));
                Some(Session { client })
            }
            Ok(Err(error)) => {
                say(&self.context.owner, format_args!("lock connect={error}"));
                None
            }
            Err(_) => {
                say(&self.context.owner, format_args!("lock connect=timed-out"));
                None
            }
        }
    }

    /// The open connection's loop: the lock tried until held, then the
    /// connection checked. Returns why it broke, or `None` on a shutdown.
    async fn hold(&mut self, session: &Session) -> Option<Broken> {
        let settings = self.lock.settings.clone();
        let mut next_query_at = Instant::now();
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return None,
                _ = sleep_until(next_query_at) => {}
            }
            let sql = if self.term.is_some() {
                "SELECT 1"
            } else {
                self.lock.try_lock.as_str()
            };
            let answer = tokio::select! {
                _ = self.shutdown.cancelled() => return None,
                answer = timeout(settings.query_timeout, session.client.simple_query(sql)) => answer,
            };
            let value = match answer {
                Ok(Ok(messages)) => first_value(&messages).map(str::to_string),
                Ok(Err(error)) => return Some(Broken::Failed(error)),
                Err(_) => return Some(Broken::TimedOut),
            };
            let interval = if self.term.is_some() {
                settings.check_interval
            } else {
                match value.as_deref().map(str::parse::<u64>) {
                    // NULL: another session holds the lock.
                    None => settings.retry_interval,
                    Some(Ok(number)) => match FencingToken::new(number) {
                        Some(token) => {
                            self.begin_term(token);
                            settings.check_interval
                        }
                        None => return Some(Broken::Unreadable("term number 0".to_string())),
                    },
                    Some(Err(_)) => {
                        return Some(Broken::Unreadable(format!(
                            "term number {value:?} is not a number"
                        )))
                    }
                }
            };
            next_query_at = Instant::now() + interval;
        }
    }

    /// The lock was granted with term number `token`: the term begins and
    /// its work starts.
    fn begin_term(&mut self, token: FencingToken) {
        self.term = Some(Term::begin(&self.context, &self.believed, token));
    }

    /// The term, if any, ends for `reason` (in the design's words: `why`).
    fn end_term(&mut self, reason: &StepDownReason, why: &str) {
        let Some(term) = self.term.take() else {
            return;
        };
        let _ = self.believed.send(None);
        term.work.cancel();
        let token = term.token;
        self.context
            .recorder
            .record(|| Event::term_ended(token, reason));
        say(
            &self.context.owner,
            format_args!("lock lost token={token} why={why:?}"),
        );
    }

    /// A graceful stop: leadership ends, the lock is released and the
    /// connection closed, within the stop bound.
    async fn stop(&mut self, session: Session) {
        let held = self.term.is_some();
        self.end_term(&StepDownReason::Stopped, "stopped");
        let bound = self.lock.stop_bound;
        if held {
            let unlock = format!("SELECT pg_advisory_unlock({})", self.lock.key);
            let _ = timeout(bound, session.client.simple_query(&unlock)).await;
        }
        drop(session);
        // Let the connection task send `Terminate` before the runtime ends.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The first column of the first row of a simple query's answer, if not
/// NULL.
fn first_value(messages: &[SimpleQueryMessage]) -> Option<&str> {
    messages.iter().find_map(|message| match message {
        SimpleQueryMessage::Row(row) => row.get(0),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_depends_on_the_schema_and_the_role() {
        // Proves that two runs (schemas) or two roles never share a lock,
        // and that the key is stable (FNV-1a's published test vector).
        assert_eq!(key_of("") as u64, 0xcbf2_9ce4_8422_2325);
        assert_eq!(key_of("a") as u64, 0xaf63_dc4c_8601_ec8c);
        assert_ne!(
            key_of("fenced_lab_1_0/reports"),
            key_of("fenced_lab_1_1/reports")
        );
        assert_ne!(
            key_of("fenced_lab_1_0/reports"),
            key_of("fenced_lab_1_0/billing")
        );
    }

    #[test]
    fn the_keepalives_travel_in_the_startup_options() {
        // Proves the session's server-side keepalives are set from its
        // first byte, in whole seconds, and the statement draws the term in
        // the run's schema.
        let settings = PgSettings {
            tcp_keepalives_idle: Duration::from_secs(2),
            tcp_keepalives_interval: Duration::from_secs(1),
            tcp_keepalives_count: 3,
            ..PgSettings::default()
        };
        let lock = LockClient::new(
            "host=127.0.0.1 port=1 user=postgres",
            "fenced_lab_1_0",
            "reports",
            settings,
            Duration::from_millis(100),
        )
        .expect("valid");
        assert_eq!(
            lock.config.get_options(),
            Some("-c tcp_keepalives_idle=2 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3")
        );
        assert!(lock
            .try_lock
            .contains("nextval('\"fenced_lab_1_0\".lab_lock_terms')"));
        assert!(LockClient::new(
            "postgres://[bad",
            "s",
            "r",
            PgSettings::default(),
            Duration::ZERO
        )
        .is_err());
    }
}
