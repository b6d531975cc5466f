//! The PostgreSQL advisory lock ("connection_lock" in the zoo) through
//! `tokio-postgres`, the client the nodes will use: `pg_try_advisory_lock`
//! is held by a session, stacks, and is freed with the session; and the
//! per-session `SET tcp_keepalives_idle/interval/count` — the knobs that
//! decide how long a dead holder's lock lingers — reach the server's socket
//! for that session only (read back from the kernel's `/proc/net/tcp`).
//! Needs `FENCED_POSTGRES_URL` over TCP (`FENCED_REQUIRE_POSTGRES=1` makes
//! its absence a failure).

mod support;

use std::time::Duration;

// The same tokio-postgres the lease store uses, re-exported by `fenced`.
use fenced::postgres::tokio_postgres::Client;

async fn session(url: &str) -> Client {
    fenced_lab::schema::connect(url).await.expect("connects")
}

async fn try_lock(client: &Client, key: i64) -> bool {
    client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .await
        .expect("pg_try_advisory_lock")
        .get(0)
}

/// A key no other test of this process (or a concurrent run) uses.
fn lock_key() -> i64 {
    0x7a00_0000_0000 + i64::from(std::process::id())
}

#[tokio::test]
async fn an_advisory_lock_is_held_by_its_session_and_freed_with_it() {
    let Some(url) = support::database_url("an_advisory_lock_is_held_by_its_session") else {
        return;
    };
    let key = lock_key();
    let holder = session(&url).await;
    let contender = session(&url).await;
    assert!(try_lock(&holder, key).await);
    assert!(!try_lock(&contender, key).await, "one session at a time");
    // Session-level locks stack: two takes need two releases.
    assert!(try_lock(&holder, key).await);
    let unlocked: bool = holder
        .query_one("SELECT pg_advisory_unlock($1)", &[&key])
        .await
        .expect("unlock")
        .get(0);
    assert!(unlocked);
    assert!(!try_lock(&contender, key).await, "still held once");
    // The session ends: the server frees its locks.
    // (The backend ends on the client's Terminate; poll a little.)
    drop(holder);
    let mut taken = false;
    for _ in 0..250 {
        if try_lock(&contender, key).await {
            taken = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(taken, "the lock outlived its session");
}

#[tokio::test]
async fn keepalive_settings_are_per_session_and_reach_the_servers_socket() {
    let Some(url) = support::database_url("keepalive_settings_are_per_session") else {
        return;
    };
    let tuned = session(&url).await;
    let plain = session(&url).await;
    tuned
        .batch_execute(
            "SET tcp_keepalives_idle = 7; SET tcp_keepalives_interval = 3; \
             SET tcp_keepalives_count = 2",
        )
        .await
        .expect("SET tcp_keepalives_*");
    for (setting, value) in [
        ("tcp_keepalives_idle", "7"),
        ("tcp_keepalives_interval", "3"),
        ("tcp_keepalives_count", "2"),
    ] {
        let shown: String = tuned
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .expect("SHOW")
            .get(0);
        assert_eq!(shown, value, "{setting}");
        let other: String = plain
            .query_one(&format!("SHOW {setting}"), &[])
            .await
            .expect("SHOW")
            .get(0);
        assert_ne!(other, value, "{setting} leaked into another session");
    }
    // The kernel's view: the server's socket of the tuned session has its
    // keepalive timer within 7 s; the plain one's is the system's (2 h).
    let (server_port, tuned_port) = ports(&tuned).await;
    let (_, plain_port) = ports(&plain).await;
    let tuned_timer = keepalive_timer(server_port, tuned_port)
        .await
        .expect("the tuned session's server socket in /proc/net/tcp");
    let plain_timer = keepalive_timer(server_port, plain_port)
        .await
        .expect("the plain session's server socket in /proc/net/tcp");
    assert!(tuned_timer <= 7.0, "keepalive timer {tuned_timer} s");
    assert!(plain_timer > 60.0, "keepalive timer {plain_timer} s");
}

/// The server's port and the session's client port, as the server sees it.
async fn ports(client: &Client) -> (u16, u16) {
    let row = client
        .query_one("SELECT inet_server_port(), inet_client_port()", &[])
        .await
        .expect("ports");
    let server: Option<i32> = row.get(0);
    let client_port: Option<i32> = row.get(1);
    let port = |p: Option<i32>| {
        u16::try_from(p.expect("a TCP session (not a Unix socket)")).expect("a port")
    };
    (port(server), port(client_port))
}

/// [`support::keepalive_timer_secs`] once the socket's last answer is acknowledged:
/// until then its timer is the retransmission timer (`tr` 1).
async fn keepalive_timer(local: u16, remote: u16) -> Option<f64> {
    for _ in 0..100 {
        if let Some(seconds) = support::keepalive_timer_secs(local, remote) {
            return Some(seconds);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}
