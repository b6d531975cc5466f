//! Upstream's own tests of the connection and session behaviour the
//! ZooKeeper model mirrors under its `LeaderLatch`, ported as contract
//! tests:
//!
//! * apache/curator at 88dee99,
//!   `curator-framework/src/test/java/org/apache/curator/framework/imps/TestEnabledSessionExpiredState.java`
//!   and `.../framework/state/TestConnectionStateManager.java` (Curator's
//!   connection states and its simulated session expiration);
//! * apache/zookeeper at `release-3.9.4`,
//!   `zookeeper-server/src/test/java/org/apache/zookeeper/test/SessionTimeoutTest.java`
//!   (the client-side expiry of ZOOKEEPER-4508, ephemerals across a restart
//!   and a close).
//!
//! Upstream's clients there run no recipe; the model's client always runs
//! its latch, so the tests read only the connection states (and the nodes).
//! `Timing2`: session 15 s, `milliseconds()` 10 s, `forSessionSleep()`
//! 26.25 s.
//!
//! # Not expressible
//!
//! * `TestEnabledSessionExpiredState.testResetCausesLost`:
//!   `CuratorZookeeperClient.reset()` (closing and replacing the handle on
//!   demand) is not modelled.
//! * `TestConnectionStateManager.testConnectionStateRecoversFromUnexpectedExpiredConnection`:
//!   it queues a `WatchedEvent` whose `getPath()` throws, to break the event
//!   thread; the model has no event thread to break.
//! * `SessionTimeoutTest.testSessionRecoveredAfterMultipleFailedAttempts`:
//!   several hosts in the connect string; the model has one.
//! * `SessionTimeoutTest.testSessionExpirationWhenNoServerUp`: a bare
//!   ZooKeeper handle that never connected is never `Expired`; the model's
//!   client is always Curator on top of the handle, and Curator's simulated
//!   expiration posts `LOST` once `SUSPENDED` has lasted a session timeout,
//!   connected before or not (`ConnectionStateManager.checkSessionExpiration`).
//!   The model's ZooKeeper handle itself has no client-side expiry without a
//!   session (`sessionId == 0`), as upstream's.
//! * `SessionTimeoutTest.testQueueEvent`: event injection.
//! * `ClientCnxnSocketTest`, `ClientCnxnSocketFragilityTest`: socket
//!   internals. ZooKeeper has no unit test of the read timeout (2/3 of the
//!   session) or the ping cadence on their own; the model's are checked by
//!   `tests/zookeeper.rs`.

#[path = "upstream_zookeeper_driver.rs"]
mod driver;

use std::time::Duration;

use driver::{timing, Zk};
use fenced_zoo::zookeeper::{CloseMode, ConnectionState, ErrorPolicy, ZooKeeperSettings};
use fenced_zoo::{ClientId, Instant};

const MILLISECONDS: Duration = Duration::from_secs(10);
const FOR_SESSION_SLEEP: Duration = Duration::from_millis(26_250);

/// The connection states `client` was told of, in order.
fn connection_states(zk: &Zk, client: ClientId) -> Vec<&'static str> {
    zk.states(client)
        .into_iter()
        .filter(|state| *state != "true" && *state != "false")
        .collect()
}

/// A connected client.
fn connected(settings: ZooKeeperSettings) -> (Zk, ClientId) {
    let mut zk = Zk::new(settings);
    let a = zk.start(1);
    zk.run_for(Duration::from_secs(1));
    assert_eq!(connection_states(&zk, a), ["CONNECTED"]);
    (zk, a)
}

/// `injectSessionExpiration()`: the handle is `Expired` (`LOST`), and
/// Curator's new handle connects (`RECONNECTED`) with a new session.
#[test]
fn kill_session() {
    for row in [
        "TestEnabledSessionExpiredState.testKillSession",
        "SessionTimeoutTest.testSessionExpiration",
    ] {
        // `row`.
        let (mut zk, a) = connected(timing());
        let session = zk.client(a).session();
        zk.inject_session_expiration(a);
        zk.run_for(MILLISECONDS);
        assert_eq!(
            connection_states(&zk, a),
            ["CONNECTED", "LOST", "RECONNECTED"],
            "{row}"
        );
        assert_ne!(zk.client(a).session(), session, "{row}: a new session");
    }
}

/// A server stopped and restarted within the session: `SUSPENDED`, then
/// `RECONNECTED` on the same session.
#[test]
fn reconnect_without_expiration() {
    // TestEnabledSessionExpiredState, testReconnectWithoutExpiration.
    let (mut zk, a) = connected(timing());
    let session = zk.client(a).session();
    zk.stop_server();
    zk.run_for(Duration::from_millis(500));
    assert_eq!(connection_states(&zk, a), ["CONNECTED", "SUSPENDED"]);
    zk.restart_server();
    zk.run_for(MILLISECONDS);
    assert_eq!(
        connection_states(&zk, a),
        ["CONNECTED", "SUSPENDED", "RECONNECTED"]
    );
    assert_eq!(zk.client(a).session(), session);
}

/// A server that stays down: `SUSPENDED` at once, then `LOST` within
/// `forSessionSleep` — Curator's simulated expiration, one session timeout
/// after `SUSPENDED` (a watcher sees `Expired`).
#[test]
fn session_expiration_from_timeout() {
    for row in [
        "testSessionExpirationFromTimeout",
        "testInjectedWatchedEvent",
    ] {
        // TestEnabledSessionExpiredState, `row`.
        let (mut zk, a) = connected(timing());
        zk.stop_server();
        let stopped = zk.now;
        zk.run_for(FOR_SESSION_SLEEP);
        assert_eq!(
            connection_states(&zk, a),
            ["CONNECTED", "SUSPENDED", "LOST"],
            "{row}"
        );
        let lost_at = zk
            .log
            .iter()
            .rev()
            .find(|(_, _, note)| *note == driver::Note::State(ConnectionState::Lost))
            .map(|(at, _, _)| *at);
        let suspended_at = stopped + Duration::from_millis(1);
        assert_eq!(
            lost_at,
            Some(suspended_at + Duration::from_secs(15)),
            "{row}"
        );
    }
}

/// A server down for longer than the session: `SUSPENDED`, `LOST`; when it
/// is back, `RECONNECTED` — and no other event: after `LOST`, the new
/// handle's failing connection attempts post no `SUSPENDED`
/// (`ConnectionStateManager.setToSuspended` refuses in `LOST`).
#[test]
fn session_expiration_from_timeout_with_restart() {
    // TestEnabledSessionExpiredState, testSessionExpirationFromTimeoutWithRestart.
    let (mut zk, a) = connected(timing());
    zk.stop_server();
    zk.run_for(FOR_SESSION_SLEEP);
    assert_eq!(
        connection_states(&zk, a),
        ["CONNECTED", "SUSPENDED", "LOST"]
    );
    zk.restart_server();
    let reconnected = zk.run_until_cond(FOR_SESSION_SLEEP, |zk| {
        connection_states(zk, a).last() == Some(&"RECONNECTED")
    });
    assert!(reconnected, "{:?}", connection_states(&zk, a));
    zk.run_for(MILLISECONDS / 2);
    assert_eq!(
        connection_states(&zk, a),
        ["CONNECTED", "SUSPENDED", "LOST", "RECONNECTED"],
        "there should be no other events"
    );
}

/// `simulatedSessionExpirationPercent(30)` under the Session policy: `LOST`
/// 30 % of a session after `SUSPENDED` (within a third of a session plus a
/// `sleepABit`).
#[test]
fn session_connection_state_error_policy_with_expiration_percent_30() {
    // TestConnectionStateManager, testSessionConnectionStateErrorPolicyWithExpirationPercent30.
    let settings = ZooKeeperSettings {
        error_policy: ErrorPolicy::Session,
        simulated_session_expiration_percent: 30,
        ..timing()
    };
    let (mut zk, a) = connected(settings);
    zk.stop_server();
    let closed = zk.now;
    let expected = Duration::from_secs(15) / 3 + Duration::from_millis(2_500);
    let lost = zk.run_until_cond(expected, |zk| connection_states(zk, a).contains(&"LOST"));
    assert!(lost, "{:?}", connection_states(&zk, a));
    let at = zk.now.saturating_duration_since(closed);
    assert_eq!(
        at,
        Duration::from_millis(4_501),
        "1 ms to SUSPENDED + 4.5 s"
    );
}

/// ZOOKEEPER-4508: with every server unreachable the handle declares its
/// session `Expired` itself, `expirationTimeout` (4/3 of the negotiated 6 s)
/// after it last heard from a server — no sooner than the session timeout,
/// well within ten. Rows: the server stopped (sockets closed: Curator's
/// simulated expiration one session after `SUSPENDED` comes first), or cut
/// off (the read timeout suspends at 2/3 and the handle's own check wins).
#[test]
fn session_expiration_after_all_server_down() {
    for (row, cut) in [("stopServer", false), ("unreachable", true)] {
        // SessionTimeoutTest, testSessionExpirationAfterAllServerDown, `row`
        // (sessionTimeout 3000 ms, raised to 2 ticks of 3 s).
        let settings = ZooKeeperSettings {
            session_timeout: Duration::from_millis(3_000),
            error_policy: ErrorPolicy::Session,
            ..ZooKeeperSettings::default()
        };
        let (mut zk, a) = connected(settings);
        let negotiated = Duration::from_secs(6);
        let start = zk.now;
        if cut {
            zk.cut(a);
        } else {
            zk.stop_server();
        }
        let expired = zk.run_until_cond(negotiated * 10, |zk| {
            connection_states(zk, a).contains(&"LOST")
        });
        assert!(expired, "{row}: watcher.expired");
        let elapsed = zk.now.saturating_duration_since(start);
        assert!(elapsed >= negotiated, "{row}: {elapsed:?}");
        assert!(elapsed < negotiated * 10, "{row}: {elapsed:?}");
        if cut {
            let last_heard = last_pong(&zk, a, start);
            assert_eq!(zk.now, last_heard + negotiated * 4 / 3, "{row}");
        }
    }
}

/// When the client last heard from the server before `until`: the last
/// answer it got is to its last request before then (1 ms each way).
fn last_pong(zk: &Zk, client: ClientId, until: Instant) -> Instant {
    let sent = zk
        .requests
        .iter()
        .filter(|(at, id, _)| *id == client && *at <= until)
        .map(|(at, _, _)| *at)
        .next_back()
        .expect("a request");
    sent + Duration::from_millis(2)
}

/// Ephemerals outlive a server restart (the session is reloaded); a
/// client gone without closing leaves its ephemeral to its session's
/// expiry; a closed session takes its ephemeral with it.
#[test]
fn ephemerals_and_sessions() {
    for (row, end) in [
        ("testSessionSurviveServerRestart", "restart"),
        ("testSessionRestore", "disconnect"),
        ("testSessionDisconnect", "close"),
    ] {
        // SessionTimeoutTest, `row`.
        let mut zk = Zk::new(timing());
        let a = zk.start(1);
        zk.run_for(Duration::from_secs(1));
        assert_eq!(zk.children(), vec![a], "{row}: created");
        match end {
            "restart" => {
                zk.stop_server();
                zk.restart_server();
            }
            "disconnect" => zk.crash(a),
            _ => zk.close(a, CloseMode::Silent),
        }
        zk.run_for(Duration::from_secs(1));
        let b = zk.start(2);
        zk.run_for(Duration::from_secs(1));
        let a_node_present = zk.children().contains(&a);
        assert_eq!(a_node_present, end != "close", "{row}");
        assert!(zk.children().contains(&b), "{row}");
    }
}
