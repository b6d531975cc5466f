//! Upstream's own unit tests of Curator's `LeaderLatch`, ported as contract
//! tests of the model: apache/curator at 88dee99,
//! `curator-recipes/src/test/java/org/apache/curator/framework/recipes/leader/TestLeaderLatch.java`.
//!
//! Upstream runs several latches on one `CuratorFramework` (one session);
//! the model has one latch per client, so each latch is a client of its own
//! (its own session). The latch order is the nodes' sequence order either
//! way. `waitForALeader`, `sleepABit` and `forWaiting` keep `Timing`'s
//! values (2.5 s steps, 50 s); a test's listener callback runs at once.
//! Connection-state tests of Curator and ZooKeeper themselves are in
//! `upstream_zookeeper_session.rs`.
//!
//! # Not expressible
//!
//! * `testWithCircuitBreaker`: `ConnectionStateListenerManagerFactory.circuitBreaking`
//!   and `RetryForever` are left out (the model posts every state change).
//! * `testUncreatedPathGetLeader`: `getLeader()` / `getParticipants()` are
//!   not modelled (the model's latch path always exists).
//! * `testResettingOfLeadershipAfterConcurrentLeadershipChange`: it parks
//!   `reset()` between `setLeadership(false)` and the old node's delete
//!   (`debugResetWaitBeforeNodeDeleteLatch`) and inside the create callback;
//!   the model's `reset` is one step.
//! * `testRelativePath`: path validation (the model has one fixed path).
//!
//! Where upstream parks a latch with a debug `CountDownLatch`, the port
//! holds the same message instead: `debugCheckLeaderShipLatch` after
//! `getChildren` = the children answer held (a paused process);
//! `debugResetWaitLatch` in the create callback = `reset()` called while
//! the create is in flight; `debugHandleReconnectedLatch` = the client
//! paused across the reconnect.

#[path = "upstream_zookeeper_driver.rs"]
mod driver;

use std::time::Duration;

use driver::{timing, Note, Zk};
use fenced_zoo::zookeeper::{CloseMode, ErrorPolicy, ZooKeeperRequest, ZooKeeperSettings};
use fenced_zoo::ClientId;

const FOR_WAITING: Duration = Duration::from_secs(50);

fn is_leader(note: &Note) -> bool {
    matches!(note, Note::IsLeader(_))
}

fn not_leader(note: &Note) -> bool {
    matches!(note, Note::NotLeader(_))
}

/// Whether `client` has sent a request matching `what` since index `from`
/// of the request log.
fn sent_since(zk: &Zk, from: usize, client: ClientId, what: fn(&ZooKeeperRequest) -> bool) -> bool {
    zk.requests[from..]
        .iter()
        .any(|(_, id, request)| *id == client && what(request))
}

/// One participant leads; closing it leaves no one (`PARTICIPANT_QTY` is 1
/// upstream). Rows: started at once, or from a thread after a delay.
#[test]
fn basic() {
    for (row, delay) in [
        ("testBasic (START_IMMEDIATELY)", Duration::ZERO),
        ("testBasicAlt (START_IN_THREADS)", Duration::from_millis(73)),
    ] {
        // TestLeaderLatch, `row`.
        let mut zk = Zk::new(timing());
        zk.run_for(delay);
        let a = zk.start(1);
        let leaders = zk.wait_for_a_leader();
        assert_eq!(leaders, vec![a], "{row}: there can only be one leader");
        zk.close(a, CloseMode::Silent);
        zk.run_for(Duration::from_secs(1));
        assert!(zk.leaders().is_empty(), "{row}");
        assert!(zk.children().is_empty(), "{row}");
    }
}

/// Ten participants, each started once the one before has settled; closing
/// the third (neither the leader nor the last) must not elect the second,
/// which watches the first: the fourth re-reads the children and watches
/// the second.
#[test]
fn correct_watching() {
    // TestLeaderLatch, testCorrectWatching.
    let mut zk = Zk::new(timing());
    let mut latches = Vec::new();
    for id in 1..=10 {
        latches.push(zk.start(id));
        zk.wait_for_a_leader();
        zk.run_for(Duration::from_millis(100));
    }
    assert_eq!(zk.leaders(), vec![latches[0]]);
    assert_eq!(zk.children(), latches);
    let before = zk.requests.len();
    zk.close(latches[2], CloseMode::Silent);
    zk.run_for(Duration::from_secs(5));
    assert!(
        !zk.has_leadership(latches[1]),
        "PARTICIPANT_ID - 1 not elected"
    );
    assert_eq!(zk.leaders(), vec![latches[0]]);
    let second = zk.client(latches[1]).our_node().expect("a node");
    let watches_second = zk.requests[before..].iter().any(|(_, id, request)| {
        *id == latches[3]
            && matches!(request, ZooKeeperRequest::GetData { node, watch: true, .. } if *node == second)
    });
    assert!(watches_second, "the fourth now watches the second");
}

/// Ten participants lose the server: once the session is `LOST` nobody
/// leads; when the server is back exactly one does.
#[test]
fn lost_connection() {
    // TestLeaderLatch, testLostConnection.
    let mut zk = Zk::new(timing());
    let latches: Vec<ClientId> = (1..=10).map(|id| zk.start(id)).collect();
    assert_eq!(zk.wait_for_a_leader().len(), 1);
    zk.stop_server();
    let lost = zk.run_until_cond(FOR_WAITING, |zk| {
        latches.iter().any(|id| zk.states(*id).contains(&"LOST"))
    });
    assert!(lost, "LOST within forWaiting");
    zk.run_for(Duration::from_millis(12_500));
    assert!(zk.leaders().is_empty());
    zk.restart_server();
    assert_eq!(zk.wait_for_a_leader().len(), 1, "should reconnect");
}

/// The error policy on a server stop and restart (session 60 s). Session
/// policy: `SUSPENDED` keeps leadership, `RECONNECTED` changes nothing
/// more. Standard: `SUSPENDED` ends it (either order), `RECONNECTED` gives
/// it back on the same node.
#[test]
fn session_error_policy() {
    for (row, policy) in [
        ("isSessionIteration", ErrorPolicy::Session),
        ("standard iteration", ErrorPolicy::Standard),
    ] {
        // TestLeaderLatch, testSessionErrorPolicy, `row`.
        let settings = ZooKeeperSettings {
            session_timeout: Duration::from_secs(60),
            error_policy: policy,
            ..ZooKeeperSettings::default()
        };
        let mut zk = Zk::new(settings);
        let a = zk.start(1);
        zk.run_for(Duration::from_secs(1));
        assert_eq!(zk.states(a), ["CONNECTED", "true"], "{row}");
        let before = zk.children();
        let node = zk.client(a).our_node();
        zk.stop_server();
        zk.run_for(Duration::from_millis(500));
        let mut after_stop = zk.states(a)[2..].to_vec();
        after_stop.sort_unstable();
        match policy {
            ErrorPolicy::Session => assert_eq!(after_stop, ["SUSPENDED"], "{row}"),
            ErrorPolicy::Standard => assert_eq!(after_stop, ["SUSPENDED", "false"], "{row}"),
        }
        zk.restart_server();
        zk.run_for(Duration::from_secs(10));
        let tail = zk.states(a)[2 + after_stop.len()..].to_vec();
        match policy {
            ErrorPolicy::Session => assert_eq!(tail, ["RECONNECTED"], "{row}: nothing more"),
            ErrorPolicy::Standard => {
                assert_eq!(tail, ["RECONNECTED", "true"], "{row}");
                assert_eq!(zk.children(), before, "{row}: beforeResetChildren");
                assert_eq!(zk.client(a).our_node(), node, "{row}");
            }
        }
    }
}

/// The error policy on a server that is gone for good (session 15 s).
/// Standard: `SUSPENDED` and `false` (either order), then `LOST`. Session:
/// `SUSPENDED`, then `LOST` and `false` (either order).
#[test]
fn error_policies() {
    for (row, policy, first, second) in [
        (
            "StandardConnectionStateErrorPolicy",
            ErrorPolicy::Standard,
            ["SUSPENDED", "false"],
            "LOST",
        ),
        (
            "SessionConnectionStateErrorPolicy",
            ErrorPolicy::Session,
            ["LOST", "false"],
            "SUSPENDED",
        ),
    ] {
        // TestLeaderLatch, testErrorPolicies, `row`.
        let settings = ZooKeeperSettings {
            error_policy: policy,
            ..timing()
        };
        let mut zk = Zk::new(settings);
        let a = zk.start(1);
        zk.run_for(Duration::from_secs(1));
        assert_eq!(zk.states(a), ["CONNECTED", "true"], "{row}");
        zk.stop_server();
        zk.run_for(Duration::from_secs(30));
        let states = zk.states(a);
        let (pair, single) = match policy {
            ErrorPolicy::Standard => (&states[2..4], states[4]),
            ErrorPolicy::Session => (&states[3..5], states[2]),
        };
        let mut pair = pair.to_vec();
        pair.sort_unstable();
        let mut first = first.to_vec();
        first.sort_unstable();
        assert_eq!(pair, first, "{row}: {states:?}");
        assert_eq!(single, second, "{row}: {states:?}");
        assert_eq!(states.len(), 5, "{row}: {states:?}");
    }
}

/// A client-side session expiration of the leader: the follower gains
/// leadership, the old leader loses it and does not regain it with its new
/// session — its own old node fails the `ephemeralOwner` check.
#[test]
fn session_interruption_does_not_cause_brain_split() {
    // TestLeaderLatch, testSessionInterruptionDoNotCauseBrainSplit.
    let mut zk = Zk::new(timing());
    let a = zk.start(1);
    zk.wait_for_a_leader();
    let b = zk.start(2);
    zk.run_for(Duration::from_millis(2_500));
    assert!(zk.has_leadership(a));
    assert!(!zk.has_leadership(b));
    let mark = zk.log.len();
    zk.inject_session_expiration(a);
    let gained = zk.run_until_cond(FOR_WAITING, |zk| zk.has_leadership(b));
    assert!(gained, "events1: GAINED_LEADERSHIP");
    zk.run_for(Duration::from_secs(30));
    let after: Vec<Note> = zk.log[mark..]
        .iter()
        .filter(|(_, id, _)| *id == a)
        .map(|(_, _, note)| *note)
        .filter(|note| is_leader(note) || not_leader(note))
        .collect();
    assert_eq!(after, [Note::NotLeader("session lost")], "no brain split");
    assert_eq!(zk.leaders(), vec![b]);
}

/// CURATOR-724: the ensemble is recreated empty (sessions and latch path
/// gone). The follower reconnects first, finds no children, resets and
/// leads; the old leader, held across its reconnect, has lost leadership
/// and does not regain it.
#[test]
fn get_children_hits_no_node() {
    // TestLeaderLatch, testGetChildrenHitsNoNode.
    let mut zk = Zk::new(timing());
    let a = zk.start(1);
    zk.wait_for_a_leader();
    let b = zk.start(2);
    zk.run_for(Duration::from_millis(2_500));
    assert!(zk.has_leadership(a) && !zk.has_leadership(b));
    let mark = zk.log.len();
    zk.recreate_server();
    zk.run_for(Duration::from_millis(10));
    zk.pause(a, Duration::from_secs(5));
    let gained = zk.run_until_cond(FOR_WAITING, |zk| zk.has_leadership(b));
    assert!(gained, "events1: GAINED_LEADERSHIP");
    zk.run_for(Duration::from_secs(20));
    let first_of_a = zk.log[mark..]
        .iter()
        .find(|(_, id, note)| *id == a && (is_leader(note) || not_leader(note)))
        .map(|(_, _, note)| *note);
    assert_eq!(first_of_a, Some(Note::NotLeader("connection suspended")));
    assert_eq!(zk.leaders(), vec![b]);
    assert_eq!(zk.children(), vec![b, a]);
}

/// The watched leader goes away while the follower is between its
/// `getChildren` and `checkLeadership`, and the follower's `ourPath` is
/// reset meanwhile: it still ends up leader, with one child.
#[test]
fn watched_node_deleted_on_reconnect() {
    // TestLeaderLatch, testWatchedNodeDeletedOnReconnect.
    let mut zk = Zk::new(timing());
    let one = zk.start(1);
    assert!(zk.run_until_cond(FOR_WAITING, |zk| zk.has_leadership(one)));
    let two = zk.start(2);
    zk.run_for(Duration::from_millis(2_500));
    let mark = zk.requests.len();
    zk.close(one, CloseMode::Silent);
    let held = zk.run_until_cond(FOR_WAITING, |zk| {
        sent_since(zk, mark, two, |r| {
            matches!(r, ZooKeeperRequest::GetChildren { .. })
        })
    });
    assert!(held, "latch2 re-reads the children after the NodeDeleted");
    zk.reset(two);
    assert!(zk.run_until_cond(FOR_WAITING, |zk| zk.has_leadership(two)));
    zk.run_for(Duration::from_millis(2_500));
    assert_eq!(zk.children(), vec![two]);
}

/// The leader goes away after a candidate read the children but before it
/// checked them: the candidate watches a node that is gone (`NONODE`),
/// reads again, and exactly one of the two candidates leads.
#[test]
fn leadership_election_when_node_disappears_after_children_are_retrieved() {
    // TestLeaderLatch, testLeadershipElectionWhenNodeDisappearsAfterChildrenAreRetrieved.
    let mut zk = Zk::new(timing());
    let initial = zk.start(1);
    zk.wait_for_a_leader();
    let leader_node = zk.client(initial).our_node().expect("a node");
    let mark = zk.requests.len();
    let c0 = zk.start(2);
    zk.run_until_cond(FOR_WAITING, |zk| {
        sent_since(zk, mark, c0, |r| {
            matches!(r, ZooKeeperRequest::GetChildren { .. })
        })
    });
    zk.pause(c0, Duration::from_secs(2));
    let c1 = zk.start(3);
    assert!(zk.run_until_cond(FOR_WAITING, |zk| zk.children().len() == 3));
    zk.close(initial, CloseMode::Silent);
    zk.run_for(Duration::from_secs(5));
    assert!(zk.requests[mark..].iter().any(|(_, id, request)| *id == c0
        && matches!(request, ZooKeeperRequest::GetData { node, watch: true, .. } if *node == leader_node)));
    assert!(zk.has_leadership(c0) ^ zk.has_leadership(c1));
}

/// `reset()` while `start()`'s create is still unanswered must not leave
/// two nodes.
#[test]
fn reset_race() {
    // TestLeaderLatch, testResetRace.
    let mut zk = Zk::new(timing());
    let a = zk.start(1);
    zk.run_until_cond(FOR_WAITING, |zk| {
        sent_since(zk, 0, a, |r| matches!(r, ZooKeeperRequest::Create { .. }))
    });
    zk.reset(a);
    zk.run_for(Duration::from_millis(2_500));
    assert_eq!(zk.children(), vec![a]);
    assert!(zk.has_leadership(a));
}

/// `close()` while `start()`'s create is still unanswered leaves no node.
#[test]
fn create_delete_race() {
    // TestLeaderLatch, testCreateDeleteRace.
    let mut zk = Zk::new(timing());
    let a = zk.start(1);
    zk.run_until_cond(FOR_WAITING, |zk| {
        sent_since(zk, 0, a, |r| matches!(r, ZooKeeperRequest::Create { .. }))
    });
    zk.close(a, CloseMode::Silent);
    zk.run_for(Duration::from_millis(2_500));
    assert!(zk.children().is_empty());
}

/// A latch started and closed before any connection was made never
/// resets (never creates a node).
#[test]
fn proper_close_without_connection_established() {
    // TestLeaderLatch, testProperCloseWithoutConnectionEstablished.
    let mut zk = Zk::new(timing());
    zk.stop_server();
    let a = zk.start(1);
    zk.close(a, CloseMode::Silent);
    zk.restart_server();
    zk.run_for(FOR_WAITING);
    assert!(!sent_since(&zk, 0, a, |r| matches!(
        r,
        ZooKeeperRequest::Create { .. }
    )));
    assert!(zk.children().is_empty());
}

/// Each latch, on its first leadership, resets (to the back of the line);
/// on its second, closes. Every latch leads twice; `notLeader` fires once
/// per reset, and once more per close only for `NOTIFY_LEADER` latches.
/// Rows: all `SILENT`; the first three `SILENT`, the rest `NOTIFY_LEADER`.
#[test]
fn callbacks() {
    for (row, silent) in [("testCallbackSanity", 10), ("testCallbackNotifyLeader", 3)] {
        // TestLeaderLatch, `row`.
        let mut zk = Zk::new(timing());
        let latches: Vec<ClientId> = (1..=10).map(|id| zk.start(id)).collect();
        let mode = |id: ClientId| {
            if id.0 <= silent {
                CloseMode::Silent
            } else {
                CloseMode::NotifyLeader
            }
        };
        let mut seen = 0;
        let mut closed = 0;
        while closed < latches.len() {
            let grew = zk.run_until_cond(FOR_WAITING, |zk| zk.log.len() > seen);
            assert!(grew, "{row}: stuck after {closed} closed");
            let new: Vec<(ClientId, Note)> = zk.log[seen..]
                .iter()
                .map(|(_, id, note)| (*id, *note))
                .collect();
            seen = zk.log.len();
            for (id, note) in new {
                if !is_leader(&note) {
                    continue;
                }
                if zk.count(id, is_leader) == 1 {
                    zk.reset(id);
                } else {
                    zk.close(id, mode(id));
                    closed += 1;
                }
            }
        }
        let master: usize = latches.iter().map(|id| zk.count(*id, is_leader)).sum();
        let not: usize = latches.iter().map(|id| zk.count(*id, not_leader)).sum();
        assert_eq!(master, 20, "{row}: masterCounter");
        assert_eq!(not, 20 - silent as usize, "{row}: notLeaderCounter");
    }
}

/// Closing a latch that does not lead fires no `notLeader`, even with
/// `NOTIFY_LEADER`; `close(NOTIFY_LEADER)` of the leader fires one.
#[test]
fn callback_dont_notify() {
    // TestLeaderLatch, testCallbackDontNotify.
    let mut zk = Zk::new(timing());
    let leader = zk.start(1);
    zk.run_for(Duration::from_millis(2_500));
    let notified = zk.start(2);
    zk.run_for(Duration::from_millis(2_500));
    zk.close(notified, CloseMode::NotifyLeader);
    zk.run_for(Duration::from_millis(2_500));
    zk.close(leader, CloseMode::NotifyLeader);
    assert_eq!(zk.count(leader, not_leader), 1, "masterCounter");
    assert_eq!(zk.count(notified, not_leader), 0, "notLeaderCounter");
    assert!(zk.leaders().is_empty());
}

/// No server when the latch starts; once one runs, the latch is elected
/// exactly once and never unelected.
#[test]
fn no_server_at_start() {
    // TestLeaderLatch, testNoServerAtStart.
    let mut zk = Zk::new(timing());
    zk.stop_server();
    let a = zk.start(1);
    zk.run_for(Duration::from_millis(2_500));
    zk.restart_server();
    assert!(
        zk.run_until_cond(FOR_WAITING, |zk| zk.has_leadership(a)),
        "Not elected leader"
    );
    zk.run_for(Duration::from_secs(10));
    assert_eq!(zk.count(a, is_leader), 1, "Elected too many times");
    assert_eq!(zk.count(a, not_leader), 0, "Unelected too many times");
}

/// Ten participants start together; each, once it leads, holds leadership
/// alone for a few milliseconds and closes. There is never a second leader.
/// Upstream's ten tries with a random hold of 0–9 ms are the ten holds.
#[test]
fn waiting() {
    // TestLeaderLatch, testWaiting.
    for hold_ms in 0..10 {
        let mut zk = Zk::new(timing());
        let mut open: Vec<ClientId> = (1..=10).map(|id| zk.start(id)).collect();
        while !open.is_empty() {
            let mut two = false;
            let led = zk.run_until_cond(FOR_WAITING, |zk| {
                two |= zk.leaders().len() > 1;
                !zk.leaders().is_empty()
            });
            assert!(led && !two, "hold {hold_ms} ms: await");
            let leader = zk.leaders()[0];
            zk.run_until_cond(Duration::from_millis(hold_ms), |zk| {
                two |= zk.leaders().len() > 1;
                false
            });
            assert!(!two, "thereIsALeader.compareAndSet(false, true)");
            zk.close(leader, CloseMode::Silent);
            open.retain(|id| *id != leader);
        }
    }
}
