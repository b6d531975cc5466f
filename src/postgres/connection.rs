//! One shared connection, (re)opened on demand, with its prepared statements.
//!
//! A store needs little throughput (an elector sends a request every few
//! seconds) but must recover on its own: one `tokio_postgres::Client`, which
//! pipelines concurrent queries, is opened on first use and replaced after it
//! closes or a query outlives the query timeout (a wedged socket). Every call
//! is a single statement, so sharing one connection never mixes transactions.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ::tokio::sync::Mutex;
use ::tokio::task::JoinHandle;
use ::tokio::time::timeout;
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{Client, Config, Socket, Statement};

use super::schema::Sql;
use super::PostgresError;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Opens a connection and spawns its I/O task; the TLS type is erased here so
/// the store types stay free of it.
trait Connect: Send + Sync + 'static {
    fn connect(&self) -> BoxFuture<Result<(Client, ConnectionTask), tokio_postgres::Error>>;
}

/// A TLS connector a store can use from any task: implemented for every
/// `tokio_postgres` [`MakeTlsConnect`] that is `Clone + Send + Sync` and
/// whose streams and handshakes are `Send` — [`NoTls`](tokio_postgres::NoTls),
/// `postgres-native-tls`'s `MakeTlsConnector`, `tokio-postgres-rustls`'s
/// `MakeRustlsConnect`. Never implement it yourself; it names those bounds.
pub trait PostgresTls:
    MakeTlsConnect<Socket, Stream = Self::SendStream, TlsConnect = Self::SendConnect>
    + Clone
    + Send
    + Sync
    + 'static
{
    /// The TLS stream, `Send`.
    type SendStream: TlsStream + Unpin + Send + 'static;
    /// The per-connection connector, `Send`, with a `Send` handshake.
    type SendConnect: TlsConnect<Socket, Stream = Self::SendStream, Future = Self::SendHandshake>
        + Send;
    /// The handshake future.
    type SendHandshake: Send;
}

impl<T> PostgresTls for T
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    type SendStream = T::Stream;
    type SendConnect = T::TlsConnect;
    type SendHandshake = <T::TlsConnect as TlsConnect<Socket>>::Future;
}

struct Connector<T> {
    config: Config,
    tls: T,
}

impl<T: PostgresTls> Connect for Connector<T> {
    fn connect(&self) -> BoxFuture<Result<(Client, ConnectionTask), tokio_postgres::Error>> {
        let config = self.config.clone();
        let tls = self.tls.clone();
        Box::pin(async move {
            let (client, connection) = config.connect(tls).await?;
            let task = ::tokio::spawn(async move {
                if let Err(error) = connection.await {
                    tracing::warn!(%error, "postgres connection closed with an error");
                }
            });
            Ok((client, ConnectionTask(task)))
        })
    }
}

/// The connection's I/O task, aborted when the session is dropped so that a
/// connection abandoned on a dead socket does not linger.
pub(crate) struct ConnectionTask(JoinHandle<()>);

impl Drop for ConnectionTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The statements every store call uses, prepared once per connection.
pub(crate) struct Statements {
    pub(crate) acquire_or_renew: Statement,
    pub(crate) release: Statement,
    pub(crate) holder: Statement,
    pub(crate) highest_token: Statement,
    pub(crate) heartbeat: Statement,
    pub(crate) live_nodes: Statement,
    pub(crate) fenced_write: Statement,
    pub(crate) fenced_read: Statement,
}

/// An open connection with its statements. Field order matters: the client
/// is dropped (and says goodbye) before its task is aborted.
pub(crate) struct Session {
    pub(crate) client: Client,
    pub(crate) statements: Statements,
    _task: ConnectionTask,
}

/// The connection of one store and everything needed to reopen it.
pub(crate) struct Connection {
    connector: Box<dyn Connect>,
    session: Mutex<Option<Arc<Session>>>,
    /// Session settings sent after every connect (see [`session_setup`]).
    setup: String,
    connect_timeout: Duration,
    /// The client's bound on one call: the query timeout plus its grace.
    query_timeout: Duration,
}

/// The settings every connection runs with, whatever the server's defaults:
/// `READ COMMITTED` (the lease functions rely on it, and check it), commits
/// that wait for the WAL flush (a grant acknowledged and then lost in a crash
/// would hand its token out twice), and a server-side statement timeout equal
/// to the query timeout, so a stuck statement is cancelled and holds no lock
/// on (the client waits a grace period longer for that cancellation).
fn session_setup(query_timeout: Duration) -> String {
    let millis = query_timeout.as_millis().clamp(1, i32::MAX as u128);
    format!(
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED; \
         SET synchronous_commit = on; \
         SET statement_timeout = {millis}"
    )
}

fn is_missing_schema(error: &tokio_postgres::Error) -> bool {
    matches!(
        error.code(),
        Some(code) if *code == SqlState::UNDEFINED_FUNCTION
            || *code == SqlState::UNDEFINED_TABLE
            || *code == SqlState::INVALID_SCHEMA_NAME
    )
}

impl Connection {
    pub(crate) fn new<T: PostgresTls>(
        mut config: Config,
        tls: T,
        connect_timeout: Duration,
        query_timeout: Duration,
        grace: Duration,
    ) -> Connection {
        if config.get_application_name().is_none() {
            config.application_name("fenced");
        }
        Connection {
            connector: Box::new(Connector { config, tls }),
            session: Mutex::new(None),
            setup: session_setup(query_timeout),
            connect_timeout,
            // The server cancels at the query timeout; the client waits a
            // little longer for that answer before it gives up on the socket.
            // (`super::PostgresOptions::QUERY_TIMEOUT_GRACE` unless the options
            // say otherwise.)
            query_timeout: query_timeout.saturating_add(grace),
        }
    }

    /// A new connection of its own, with the session settings applied (for
    /// the migration, which needs a transaction).
    pub(crate) async fn open(&self) -> Result<(Client, ConnectionTask), PostgresError> {
        let connect = self.connector.connect();
        let (client, task) = match timeout(self.connect_timeout, connect).await {
            Ok(connected) => connected.map_err(PostgresError::Connect)?,
            Err(_) => return Err(PostgresError::ConnectTimeout(self.connect_timeout)),
        };
        let setup = client.batch_execute(&self.setup);
        match timeout(self.query_timeout, setup).await {
            Ok(done) => done.map_err(PostgresError::Connect)?,
            Err(_) => return Err(PostgresError::QueryTimeout(self.query_timeout)),
        }
        Ok((client, task))
    }

    async fn prepare(client: &Client, sql: &Sql) -> Result<Statements, tokio_postgres::Error> {
        let (acquire_or_renew, release, holder, highest_token) = ::tokio::try_join!(
            client.prepare(&sql.acquire_or_renew),
            client.prepare(&sql.release),
            client.prepare(&sql.holder),
            client.prepare(&sql.highest_token),
        )?;
        let (heartbeat, live_nodes, fenced_write, fenced_read) = ::tokio::try_join!(
            client.prepare(&sql.heartbeat),
            client.prepare(&sql.live_nodes),
            client.prepare(&sql.fenced_write),
            client.prepare(&sql.fenced_read),
        )?;
        Ok(Statements {
            acquire_or_renew,
            release,
            holder,
            highest_token,
            heartbeat,
            live_nodes,
            fenced_write,
            fenced_read,
        })
    }

    /// The open session, or a new one. Only one caller connects at a time;
    /// the others wait for its result.
    async fn session(&self, sql: &Sql) -> Result<Arc<Session>, PostgresError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.client.is_closed()) {
            return Ok(Arc::clone(session));
        }
        *slot = None;
        let (client, task) = self.open().await?;
        let statements = match timeout(self.query_timeout, Self::prepare(&client, sql)).await {
            Ok(Ok(statements)) => statements,
            Ok(Err(error)) if is_missing_schema(&error) => {
                return Err(PostgresError::NotMigrated(error))
            }
            Ok(Err(error)) => return Err(PostgresError::Query(error)),
            Err(_) => return Err(PostgresError::QueryTimeout(self.query_timeout)),
        };
        tracing::debug!("postgres session opened");
        let session = Arc::new(Session {
            client,
            statements,
            _task: task,
        });
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Drops `session` if it is still the current one, so the next call
    /// reconnects.
    async fn forget(&self, session: &Arc<Session>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *slot = None;
            tracing::warn!("postgres session dropped; the next call reconnects");
        }
    }

    /// Runs one call on the session, bounded by the query timeout. A call
    /// that times out or finds the connection closed retires the session.
    pub(crate) async fn run<T, F, Fut>(&self, sql: &Sql, call: F) -> Result<T, PostgresError>
    where
        F: FnOnce(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let session = self.session(sql).await?;
        match timeout(self.query_timeout, call(Arc::clone(&session))).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => {
                if error.is_closed() {
                    self.forget(&session).await;
                }
                Err(PostgresError::Query(error))
            }
            Err(_) => {
                self.forget(&session).await;
                Err(PostgresError::QueryTimeout(self.query_timeout))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_setup_pins_isolation_durability_and_the_timeout() {
        let setup = session_setup(Duration::from_millis(2_500));
        assert!(setup.contains("ISOLATION LEVEL READ COMMITTED"));
        assert!(setup.contains("synchronous_commit = on"));
        assert!(setup.ends_with("statement_timeout = 2500"));
        assert!(session_setup(Duration::from_nanos(1)).ends_with("statement_timeout = 1"));
    }
}
