#![cfg(feature = "postgres")]
//! What the PostgreSQL store does when the database misbehaves: a lock wait,
//! a statement stuck past the query timeout, a connection killed under it.
//!
//! Needs `FENCED_POSTGRES_URL`; without it every test here prints `SKIPPED`
//! and passes, unless `FENCED_REQUIRE_POSTGRES=1`.
#![allow(clippy::disallowed_methods)] // Real-time tests against a live PostgreSQL: the wall clock is what they measure.

mod postgres_support;

use std::time::{Duration, SystemTime};

use fenced::postgres::tokio_postgres::error::SqlState;
use fenced::postgres::tokio_postgres::{Client, Config, NoTls, Transaction};
use fenced::postgres::{instant_from_database, PostgresError, PostgresOptions, PostgresStore};
use fenced::tokio::{BackendError, LeaseBackend};
use fenced::{FencingToken, LeaseResult, OwnerId, ReleaseResult, Role};
use postgres_support::{admin, database_url, drop_schema, fresh_store, schema_for};

fn role() -> Role {
    Role::new("reports").expect("valid role")
}

fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).expect("valid owner")
}

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero token")
}

/// Locks the counter row of `role()` in `schema` in an open transaction of
/// `client`, as a long transaction of some other program would.
async fn hold_role_lock<'a>(client: &'a mut Client, schema: &str) -> Transaction<'a> {
    let transaction = client.transaction().await.expect("a transaction");
    let locked = transaction
        .execute(
            &format!("SELECT 1 FROM \"{schema}\".\"lease_tokens\" WHERE role = $1 FOR UPDATE"),
            &[&role().as_str()],
        )
        .await
        .expect("the counter row can be locked");
    assert_eq!(locked, 1, "the role's counter row exists");
    transaction
}

// Proves: the expiry of a grant is computed from the database clock *after*
// the statement waited for the role's lock (clock_timestamp(), not now(),
// which would date the grant back to before the wait and shorten the lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clock_is_read_after_the_lock_wait() {
    let Some(url) = database_url("the_clock_is_read_after_the_lock_wait") else {
        return;
    };
    let store = fresh_store(&url, "lock_wait", PostgresOptions::default()).await;
    let schema = schema_for("lock_wait");
    let ttl = Duration::from_secs(10);
    let first = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert_eq!(first.expect("an answer").acquired_token(), Some(token(1)));
    let released = store.release(&role(), &owner("a"), token(1)).await;
    assert_eq!(released.expect("an answer"), ReleaseResult::Released);

    let mut blocker = admin(&url).await;
    let transaction = hold_role_lock(&mut blocker, &schema).await;
    let contender = store.clone();
    let waiting =
        tokio::spawn(async move { contender.acquire_or_renew(&role(), &owner("b"), ttl).await });
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!waiting.is_finished(), "the grant waits for the lock");
    let unlocked_at: SystemTime = transaction
        .query_one("SELECT clock_timestamp()", &[])
        .await
        .expect("the database clock")
        .get(0);
    transaction.commit().await.expect("commit");

    let granted = waiting.await.expect("no panic").expect("an answer");
    let LeaseResult::Granted {
        token: t,
        expires_at,
    } = granted
    else {
        panic!("expected a grant, got {granted:?}");
    };
    assert_eq!(t, token(2));
    let granted_at = expires_at - ttl;
    let unlocked_at = instant_from_database(unlocked_at).expect("a recent timestamp");
    assert!(
        granted_at >= unlocked_at,
        "granted at {granted_at}, before the lock was free at {unlocked_at}: \
         the lease would be {:?} short",
        unlocked_at - granted_at
    );
    drop_schema(&admin(&url).await, &schema).await;
}

// Proves: a statement stuck behind a lock longer than the query timeout is
// cancelled by the server (so it holds nothing), the call fails as
// Unavailable with the server's reason (the elector retries), and the next
// call works once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_statement_times_out_and_the_store_recovers() {
    let Some(url) = database_url("a_stuck_statement_times_out_and_the_store_recovers") else {
        return;
    };
    let options = PostgresOptions::default().with_query_timeout(Duration::from_millis(500));
    let store = fresh_store(&url, "stuck", options).await;
    let schema = schema_for("stuck");
    let ttl = Duration::from_secs(10);
    let first = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert_eq!(first.expect("an answer").acquired_token(), Some(token(1)));

    let mut blocker = admin(&url).await;
    let transaction = hold_role_lock(&mut blocker, &schema).await;
    let stuck = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    match stuck {
        // The server cancelled it at the query timeout (statement_timeout).
        Err(BackendError::Unavailable(error)) => match error.downcast_ref() {
            Some(PostgresError::Query(cause)) => {
                assert_eq!(cause.code(), Some(&SqlState::QUERY_CANCELED), "{error}");
                assert!(error.to_string().contains("statement timeout"), "{error}");
            }
            _ => panic!("expected the server's cancellation, got {error}"),
        },
        other => panic!("expected a timeout, got {other:?}"),
    }
    transaction.commit().await.expect("commit");

    let renewed = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert!(
        matches!(renewed, Ok(LeaseResult::Renewed { token: t, .. }) if t == token(1)),
        "{renewed:?}"
    );
    drop_schema(&admin(&url).await, &schema).await;
}

// Proves: a lease belongs to its owner, not to a connection: when the
// store's connection is killed on the server, the store reconnects by itself
// and the owner renews the same term (unlike a session-bound advisory lock).
#[tokio::test]
async fn a_killed_connection_is_replaced_and_the_lease_kept() {
    let Some(url) = database_url("a_killed_connection_is_replaced_and_the_lease_kept") else {
        return;
    };
    let fresh = fresh_store(&url, "killed", PostgresOptions::default()).await;
    let schema = schema_for("killed");
    let application = format!("fenced_killed_{}", std::process::id());
    let mut config: Config = url.parse().expect("a valid URL");
    config.application_name(&application);
    let store =
        PostgresStore::with_tls(config, NoTls, fresh.options().clone()).expect("valid options");
    let ttl = Duration::from_secs(10);
    let first = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert_eq!(first.expect("an answer").acquired_token(), Some(token(1)));

    let killed: i64 = admin(&url)
        .await
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = $1",
            &[&application],
        )
        .await
        .expect("pg_terminate_backend")
        .get(0);
    assert_eq!(killed, 1, "the store had one connection");

    let mut answers = Vec::new();
    for _ in 0..3 {
        let answer = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
        let done = answer.is_ok();
        answers.push(answer);
        if done {
            break;
        }
    }
    let last = answers.pop().expect("at least one call");
    assert!(
        matches!(last, Ok(LeaseResult::Renewed { token: t, .. }) if t == token(1)),
        "after reconnecting: {last:?} (earlier: {answers:?})"
    );
    drop_schema(&admin(&url).await, &schema).await;
}

/// A TCP proxy to the database that can be frozen: while frozen it keeps
/// accepting and reading, but forwards nothing, like a network that silently
/// drops packets (no reset, no error: only silence).
struct FreezableProxy {
    address: std::net::SocketAddr,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl FreezableProxy {
    async fn start(target: (String, u16)) -> FreezableProxy {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let address = listener.local_addr().expect("bound");
        let frozen = Arc::new(AtomicBool::new(false));
        let gate = Arc::clone(&frozen);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = tokio::net::TcpStream::connect(target.clone()).await else {
                    continue;
                };
                let (from_client, to_client) = inbound.into_split();
                let (from_server, to_server) = outbound.into_split();
                tokio::spawn(pump(from_client, to_server, Arc::clone(&gate)));
                tokio::spawn(pump(from_server, to_client, Arc::clone(&gate)));
            }
        });
        FreezableProxy { address, frozen }
    }

    fn freeze(&self, frozen: bool) {
        self.frozen
            .store(frozen, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Copies `from` to `to`, holding every chunk while the gate is frozen.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        while frozen.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

// Proves: when the network to the database goes silent (no error, no reset),
// a call fails within the query timeout plus its grace and the connection is
// dropped; reconnecting through the silence fails within the connect
// timeout; and once the network is back, the next call reconnects and the
// owner renews its term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_network_is_bounded_and_recovered_from() {
    let Some(url) = database_url("a_silent_network_is_bounded_and_recovered_from") else {
        return;
    };
    let direct: Config = url.parse().expect("a valid URL");
    let (Some(fenced::postgres::tokio_postgres::config::Host::Tcp(host)), Some(port)) =
        (direct.get_hosts().first(), direct.get_ports().first())
    else {
        eprintln!("this test needs a TCP database URL; {url} is not one");
        return;
    };
    let fresh = fresh_store(&url, "silent", PostgresOptions::default()).await;
    let proxy = FreezableProxy::start((host.clone(), *port)).await;
    let mut config = Config::new();
    config
        .host("127.0.0.1")
        .port(proxy.address.port())
        .dbname(direct.get_dbname().unwrap_or("postgres"));
    if let Some(user) = direct.get_user() {
        config.user(user);
    }
    if let Some(password) = direct.get_password() {
        config.password(password);
    }
    let query_timeout = Duration::from_millis(300);
    let options = fresh
        .options()
        .clone()
        .with_query_timeout(query_timeout)
        .with_connect_timeout(Duration::from_millis(500));
    let store = PostgresStore::with_tls(config, NoTls, options).expect("valid options");
    let ttl = Duration::from_secs(30);
    let first = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert_eq!(first.expect("an answer").acquired_token(), Some(token(1)));

    proxy.freeze(true);
    let started = std::time::Instant::now();
    let silent = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    let waited = started.elapsed();
    let bound = query_timeout + PostgresOptions::QUERY_TIMEOUT_GRACE;
    match silent {
        Err(BackendError::Unavailable(error)) => assert!(
            matches!(error.downcast_ref(), Some(PostgresError::QueryTimeout(after)) if *after == bound),
            "{error}"
        ),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        waited < bound + Duration::from_millis(500),
        "waited {waited:?}"
    );
    let reconnect = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    match reconnect {
        Err(BackendError::Unavailable(error)) => assert!(
            matches!(error.downcast_ref(), Some(PostgresError::ConnectTimeout(_))),
            "{error}"
        ),
        other => panic!("expected a connect timeout, got {other:?}"),
    }

    proxy.freeze(false);
    let renewed = store.acquire_or_renew(&role(), &owner("a"), ttl).await;
    assert!(
        matches!(renewed, Ok(LeaseResult::Renewed { token: t, .. }) if t == token(1)),
        "{renewed:?}"
    );
    drop_schema(&admin(&url).await, &schema_for("silent")).await;
}
