//! What the Redlock node says to its servers: redlock-rb's scripts on each
//! instance, one call at a time within `redis_timeout`, and the term
//! numbers drawn from the run's sequence on PostgreSQL (see
//! `lab/src/node_redlock.rs` for why each is as it is).

use std::future::Future;
use std::time::Duration;

use fenced::postgres::tokio_postgres::{self, Client, NoTls};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ErrorKind, Script, ServerErrorKind, Value};
use tokio::time::timeout;

use crate::schema::LOCK_TERMS;

/// redlock-rb's `Scripts::LOCK_SCRIPT` (`lib/redlock/scripts.rb`).
pub(super) const LOCK_SCRIPT: &str = r#"
if (redis.call("exists", KEYS[1]) == 0 and ARGV[3] == "yes") or redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
end
"#;

/// redlock-rb's `Scripts::UNLOCK_SCRIPT`.
pub(super) const UNLOCK_SCRIPT: &str = r#"
if redis.call("get",KEYS[1]) == ARGV[1] then
  return redis.call("del",KEYS[1])
else
  return 0
end
"#;

/// redlock-rb's `Scripts::PTTL_SCRIPT`: never called by the node, but
/// `load_scripts` loads it with the other two.
pub(super) const PTTL_SCRIPT: &str = r#"
return { redis.call("get", KEYS[1]), redis.call("pttl", KEYS[1]) }
"#;

/// The term numbers' source: the run's sequence on the downstream's
/// PostgreSQL, one connection kept open.
pub(in crate::node) struct TermSource {
    url: String,
    draw: String,
    connect_timeout: Duration,
    query_timeout: Duration,
    client: Option<Client>,
}

impl TermSource {
    pub(in crate::node) fn new(
        url: &str,
        schema: &str,
        connect_timeout: Duration,
        query_timeout: Duration,
    ) -> TermSource {
        TermSource {
            url: url.to_string(),
            draw: format!("SELECT nextval('\"{schema}\".{LOCK_TERMS}')"),
            connect_timeout,
            query_timeout,
            client: None,
        }
    }

    /// The next term number: on the open connection, or on a new one if
    /// that fails.
    pub(super) async fn next(&mut self) -> Result<u64, String> {
        let mut last = String::new();
        for _ in 0..2 {
            match self.try_next().await {
                Ok(number) => return Ok(number),
                Err(error) => {
                    self.client = None;
                    last = error;
                }
            }
        }
        Err(last)
    }

    async fn try_next(&mut self) -> Result<u64, String> {
        if self.client.is_none() {
            let connecting = tokio_postgres::connect(&self.url, NoTls);
            let (client, connection) = timeout(self.connect_timeout, connecting)
                .await
                .map_err(|_| "no connection within connect_timeout".to_string())?
                .map_err(|e| e.to_string())?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            self.client = Some(client);
        }
        let Some(client) = &self.client else {
            return Err("no connection".to_string());
        };
        let row = timeout(self.query_timeout, client.query_one(&self.draw, &[]))
            .await
            .map_err(|_| "no answer within query_timeout".to_string())?
            .map_err(|e| e.to_string())?;
        let number: i64 = row.try_get(0).map_err(|e| e.to_string())?;
        u64::try_from(number).map_err(|_| format!("term number {number}"))
    }
}

/// Which script one call runs.
#[derive(Clone, Copy)]
pub(super) enum Call {
    /// `LOCK_SCRIPT` with `allow_new_lock`.
    Lock { allow_new: bool },
    /// `UNLOCK_SCRIPT`.
    Unlock,
}

/// The instances' clients and open connections.
pub(super) struct Instances {
    pub(super) clients: Vec<redis::Client>,
    pub(super) connections: Vec<Option<MultiplexedConnection>>,
    pub(super) lock: Script,
    pub(super) unlock: Script,
    pub(super) pttl: Script,
    pub(super) key: String,
    pub(super) ttl_ms: u64,
    pub(super) redis_timeout: Duration,
}

impl Instances {
    /// One call to instance `index`: whether it said yes. A timeout or an
    /// error drops the connection (redis-client's `close`) and is a no.
    ///
    /// Each operation is bounded by `redis_timeout` on its own — opening
    /// the connection, each command — as redis-client bounds them
    /// (redlock-rb's `RedisClient.config(url:, timeout: redis_timeout)`
    /// sets its connect, read and write timeouts alike). In the steady state
    /// (connection open, script cached) a call is one `EVALSHA`, bounded as
    /// the model bounds its request. On a fresh or restarted instance the
    /// script cache is empty: `NOSCRIPT`, then `SCRIPT LOAD` of the unlock,
    /// lock and pttl scripts in turn and the `EVALSHA` once more
    /// (redlock-rb's `recover_from_script_flush` and `load_scripts`), each
    /// bounded; a second `NOSCRIPT` is an error that keeps the connection
    /// (a `CommandError`), as the model's client has it.
    /// A connection found broken (the instance died: its kernel reset the
    /// socket under the client) fails the call once, with no retry:
    /// redis-client's default `reconnect_attempts: false`
    /// (`lib/redis_client/config.rb`; `ensure_connected` closes the socket
    /// and raises), as the model's client does; the next call connects
    /// anew. Measured with redlock-rb itself (`zoo/upstream/redlock-restart.rb`).
    pub(super) async fn call(&mut self, index: usize, call: Call, value: &str) -> bool {
        match self.call_once(index, call, value).await {
            Ok(yes) => yes,
            Err(failure) => {
                // The node's log (standard error): why an instance said no.
                eprintln!("redis instance {index}: {failure}");
                if !matches!(failure, Failure::Command(_)) {
                    self.connections[index] = None;
                }
                false
            }
        }
    }

    async fn call_once(&mut self, index: usize, call: Call, value: &str) -> Result<bool, Failure> {
        let bound = self.redis_timeout;
        let bounded = |what: &'static str| move |_| Failure::TimedOut(what);
        if self.connections[index].is_none() {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(None)
                .set_response_timeout(None);
            let connecting =
                self.clients[index].get_multiplexed_async_connection_with_config(&config);
            let connection = timeout(bound, connecting)
                .await
                .map_err(bounded("connect"))?
                .map_err(Failure::Error)?;
            self.connections[index] = Some(connection);
        }
        let Some(connection) = self.connections[index].as_mut() else {
            return Err(Failure::TimedOut("connect"));
        };
        let script = match call {
            Call::Lock { .. } => &self.lock,
            Call::Unlock => &self.unlock,
        };
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(script.get_hash())
            .arg(1)
            .arg(&self.key)
            .arg(value);
        if let Call::Lock { allow_new } = call {
            command
                .arg(self.ttl_ms)
                .arg(if allow_new { "yes" } else { "no" });
        }
        let first: Result<Value, _> = timeout(bound, command.query_async(connection))
            .await
            .map_err(bounded("EVALSHA"))?;
        let no_script = |error: &redis::RedisError| {
            error.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        };
        let answer = match first {
            Err(error) if no_script(&error) => {
                for loading in [&self.unlock, &self.lock, &self.pttl] {
                    timeout(bound, loading.load_async(connection))
                        .await
                        .map_err(bounded("SCRIPT LOAD"))?
                        .map_err(Failure::Error)?;
                }
                match timeout(bound, command.query_async::<Value>(connection))
                    .await
                    .map_err(bounded("EVALSHA"))?
                {
                    Err(error) if no_script(&error) => return Err(Failure::Command(error)),
                    other => other.map_err(Failure::Error)?,
                }
            }
            other => other.map_err(Failure::Error)?,
        };
        Ok(match call {
            // LOCK_SCRIPT: `OK`, or nil when another value holds the key.
            Call::Lock { .. } => !matches!(answer, Value::Nil),
            // UNLOCK_SCRIPT: 1 if it deleted the key.
            Call::Unlock => matches!(answer, Value::Int(1)),
        })
    }

    /// Before the first `lock`: a connection to every instance at once,
    /// each within [`WARM_UP`]; how many succeeded. The scripts are not
    /// loaded: the first call to each instance meets `NOSCRIPT` and reloads
    /// them, as redlock-rb's does and the model's client does.
    ///
    /// A real process's first calls pay for its start (a debug build's
    /// first connection), which
    /// the time scale does not shrink: at 0.2 they outlast the 20 ms
    /// `redis_timeout` and the first tries would fail for the machine's
    /// reasons, not the design's. redlock-rb's own first call connects
    /// inside its timeout, in well under a millisecond on loopback; this is
    /// the lab's cost, paid before the process's first decision. An
    /// instance not warmed (a link cut from the start) connects on its
    /// first call, as any other time.
    pub(super) async fn warm_up(&mut self) -> usize {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(None)
            .set_response_timeout(None);
        let opening = self.clients.iter().map(|client| {
            let config = config.clone();
            async move {
                let opened = client.get_multiplexed_async_connection_with_config(&config);
                timeout(WARM_UP, opened).await.ok().and_then(Result::ok)
            }
        });
        let opened = futures_join_all(opening).await;
        let mut connected = 0;
        for (slot, connection) in self.connections.iter_mut().zip(opened) {
            if connection.is_some() {
                connected += 1;
            }
            *slot = connection;
        }
        connected
    }
}

/// Why a call got no answer.
#[derive(Debug)]
enum Failure {
    /// The operation named took longer than `redis_timeout`.
    TimedOut(&'static str),
    /// The instance or the connection failed.
    Error(redis::RedisError),
    /// A second `NOSCRIPT` after the reload: redis-client's
    /// `CommandError`, which leaves the connection open.
    Command(redis::RedisError),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TimedOut(what) => write!(f, "{what}: no answer within redis_timeout"),
            Failure::Error(error) | Failure::Command(error) => write!(f, "{error}"),
        }
    }
}

/// The bound on each instance's warm-up connection (real time, not
/// scaled: what it bounds is the machine's cost).
const WARM_UP: Duration = Duration::from_millis(100);

/// Awaits every future of `futures` at once, in order (no `futures` crate
/// in the lab: a `JoinSet` would need `'static` futures).
async fn futures_join_all<F: Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (future, out) in pending.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *out = Some(value),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}
