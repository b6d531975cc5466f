//! ZooKeeper's sockets and the connection lock's libpq connections are TCP
//! streams in the simulator (`sim/src/zoo`): a new socket's first packet
//! goes only after a handshake round trip in both directions, as
//! `fenced-lab`'s proxy opens a real one; a dead server's kernel resets
//! them, and refuses a connect while it is down.

mod common;

use std::time::Duration;

use common::{lines, ms, run_seed, run_traced, secs, time_of, trio};
use fenced_sim::{FaultSpec, ProtocolSpec, Scenario};

/// node-a starts at 0, with `cut` the link from ZooKeeper to it cut for
/// that long from the start; node-b and node-c start at 1 s.
fn connect_through_a_one_way_cut(cut: Option<Duration>) -> Scenario {
    let mut s = trio("zk-connect-under-cut", secs(90));
    s.election.protocol = ProtocolSpec::by_name("zookeeper").expect("a design");
    if let Some(duration) = cut {
        s.faults.push(FaultSpec::Cut {
            from: "zookeeper".into(),
            to: "node-a".into(),
            at: Duration::ZERO,
            duration,
        });
    }
    s
}

/// The first token of the run: `(epoch 1 << 32) + czxid + 1`, the czxid
/// counting every transaction before the leader's node (each
/// `createSession`, `create`, ...).
fn first_token(s: &Scenario) -> (String, u64) {
    let report = run_seed(s, 3);
    let first = report.terms.first().expect("a leader");
    (first.node.clone(), first.token)
}

#[test]
fn a_new_socket_carries_nothing_while_its_syn_ack_cannot_come_back() {
    // With the cut, node-a's ConnectRequests never reach the server (each
    // attempt's SYN-ACK is held), so node-a creates no session: the leader
    // is node-b or node-c, whose node's czxid is 3 (the two sessions of
    // node-b and node-c, then the first create). Carried as a datagram, as
    // before the streams, node-a's first ConnectRequest reached the server
    // through the cut and its session took zxid 1: the token was one higher
    // (4294967301 against 4294967300 at this seed).
    let (leader, token) = first_token(&connect_through_a_one_way_cut(Some(secs(30))));
    assert_ne!(leader, "node-a");
    assert_eq!(token, (1 << 32) + 3 + 1);
    // Control: without the cut node-a connects first and leads, its own
    // session and node the first two transactions.
    let (leader, token) = first_token(&connect_through_a_one_way_cut(None));
    assert_eq!((leader.as_str(), token), ("node-a", (1 << 32) + 2 + 1));
}

/// When ZooKeeper first takes a create (its `this server is held by` line),
/// with every hop 10 ms and, with `pause`, the server paused from 0 for it.
fn first_create_handled(pause: Option<Duration>) -> f64 {
    let mut s = common::zoo("zookeeper");
    s.duration = secs(10);
    s.network.latency = (ms(10), ms(10));
    if let Some(duration) = pause {
        s.faults.push(FaultSpec::Pause {
            host: "zookeeper".into(),
            at: Duration::ZERO,
            duration,
        });
    }
    let (_, trace) = run_traced(&s, 3);
    let held = lines(&trace, "zookeeper", "this server is held by");
    time_of(held.first().expect("a create handled"))
}

#[test]
fn a_paused_servers_kernel_answers_the_syn_so_the_connect_request_waits_in_its_socket() {
    // The engine hands a SYN to a paused server at once (`answered_while_paused`:
    // the kernel completes the handshake, as a SIGSTOPped ZooKeeper's does), so
    // node-a's ConnectRequest is already in the server's socket when it
    // resumes at 3 s: handled at 3 s, its answer back at 3.01 s, the create
    // handled at 3.02 s — two hops. Were the SYN held with the process, the
    // handshake would come first: SYN-ACK, then ConnectRequest, four hops,
    // 3.04 s.
    let paused = first_create_handled(Some(secs(3)));
    assert!((paused - 3.020).abs() < 1e-9, "first create at {paused}");
    // Control: unpaused, the whole exchange from node-a's start is five
    // hops (SYN, SYN-ACK, ConnectRequest, ConnectResponse, create).
    let running = first_create_handled(None);
    assert!((running - 0.050).abs() < 1e-9, "first create at {running}");
}

/// When `node`'s connects were refused, in seconds.
fn refused_at(trace: &str, node: &str) -> Vec<f64> {
    common::lines(trace, node, "connection refused")
        .into_iter()
        .map(common::time_of)
        .collect()
}

/// Each term as `(node, start_ms, end_ms, end_reason)`.
fn term_rows(report: &fenced_sim::Report) -> Vec<(&str, u64, u64, &str)> {
    report
        .terms
        .iter()
        .map(|t| (t.node.as_str(), t.start_ms, t.end_ms, t.end_reason.as_str()))
        .collect()
}

#[test]
fn a_killed_zookeepers_kernel_closes_its_clients_sockets_when_it_dies_not_when_it_is_back() {
    // ZooKeeper restarted (durable) from 12 s to 17 s: its JVM dies at 12 s
    // and the kernel closes every socket at once, so node-a hears the end
    // of its connection then (Curator: SUSPENDED; the Standard policy gives
    // up leadership) — as a real kill does (`fenced-lab`), not at 17 s when
    // the server is back, which is when the model's restart used to close
    // them. Back, it reconnects to the same session, its node and czxid
    // kept: the same token, no leader change. While it is down, each
    // client's connect is refused by the machine's kernel (a RST for the
    // SYN, `ConnectException`) and tried again after
    // `hostProvider.next(1000)` and `startConnect`'s random sleep below a
    // second: every one to two seconds, not held until the server is back.
    let mut s = common::zoo("zookeeper");
    s.duration = secs(40);
    s.faults.push(FaultSpec::Restart {
        host: "zookeeper".into(),
        at: secs(12),
        duration: secs(5),
        durable: Some(true),
    });
    let (report, trace) = common::run_traced(&s, 7);
    for node in ["node-a", "node-b", "node-c"] {
        let refused = refused_at(&trace, node);
        assert!(
            refused.len() >= 3 && refused.iter().all(|t| (12.0..17.0).contains(t)),
            "{node}: {refused:?}"
        );
        for pair in refused.windows(2) {
            let wait = pair[1] - pair[0];
            assert!((1.0..2.02).contains(&wait), "{node}: {refused:?}");
        }
    }
    let terms = term_rows(&report);
    assert_eq!(terms.len(), 2, "{terms:?}");
    assert_eq!(
        (terms[0].0, terms[0].2, terms[0].3),
        ("node-a", 12_000, "connection suspended"),
        "{terms:?}"
    );
    assert_eq!(terms[1].0, "node-a", "{terms:?}");
    assert!(
        (17_000..19_050).contains(&terms[1].1),
        "back only after the restart, within a spin and a sleep: {terms:?}"
    );
    assert_eq!(report.terms[0].token, report.terms[1].token);
    assert_eq!(report.leader_changes, 0);
}

#[test]
fn a_token_taken_in_a_burst_of_concurrent_writes_carries_the_span_another_order_would_give() {
    // The server stalled for 2 min while node-a led: at its SIGCONT all
    // three sessions expire (three closeSession txns) and the three clients
    // reconnect at once — per client a createSession, the failed delete of
    // its expired node (an error txn) and a create: twelve writes, each
    // within a round trip of the one before. A real ZooKeeper numbered them
    // in another order in two of three runs (its transaction log), so the
    // winner's czxid could be any of the twelve: the report says which.
    let mut s = trio("zk-stalled", secs(240));
    s.election.protocol = ProtocolSpec::by_name("zookeeper").expect("a design");
    s.faults.push(FaultSpec::Pause {
        host: "zookeeper".into(),
        at: secs(32),
        duration: secs(120),
    });
    let report = run_seed(&s, 1);
    let race = report.max_token_race.expect("the winner's create raced");
    assert!(
        race.contains(report.max_token),
        "{race:?} {}",
        report.max_token
    );
    assert_eq!(race.high - race.low + 1, 12, "{race:?}");
    // Every earlier write (the three sessions and nodes of the start) lies
    // before the burst.
    assert!(race.low > report.terms[0].token, "{race:?}");
    // A token that raced no one carries no span: node-a alone, its session
    // and its node two round trips apart with no other writer.
    let mut alone = Scenario::new("zk-alone", secs(20)).with_nodes(["node-a"]);
    alone.election.protocol = ProtocolSpec::by_name("zookeeper").expect("a design");
    let report = run_seed(&alone, 1);
    assert!(report.max_token > 0);
    assert_eq!(report.max_token_race, None);
    // The fenced protocol's tokens count grants alone: never a span.
    let report = run_seed(&trio("fenced-stalled", secs(60)), 1);
    assert_eq!(report.max_token_race, None);
}

#[test]
fn a_dead_postgres_resets_the_lock_s_connections_and_refuses_connects_until_it_is_back() {
    // PostgreSQL restarted (durable) from 12 s to 24 s under the connection
    // lock. Its death resets every connection, so each client learns at its
    // next use of it, not `query_timeout` (924.6 s) later as when the model
    // lost the queries sent to the down server: node-a, the holder, at its
    // next health query (every `check_interval`, 10 s), node-b and node-c at
    // their next try (every `retry_interval`, 5 s). Every connect while it
    // is down is refused at once and tried again `retry_interval` later;
    // back, the first connect opens a session and its try takes the lock
    // (the old one died with its session).
    let mut s = common::zoo("connection-lock");
    s.duration = secs(60);
    s.faults.push(FaultSpec::Restart {
        host: "postgres".into(),
        at: secs(12),
        duration: secs(12),
        durable: Some(true),
    });
    let (report, trace) = common::run_traced(&s, 7);
    let mut refusals = 0;
    for node in ["node-a", "node-b", "node-c"] {
        let refused = refused_at(&trace, node);
        assert!(
            refused.iter().all(|t| (12.0..24.0).contains(t)),
            "{node}: {refused:?}"
        );
        for pair in refused.windows(2) {
            let wait = pair[1] - pair[0];
            assert!((5.0..5.1).contains(&wait), "{node}: {refused:?}");
        }
        refusals += refused.len();
    }
    assert!(refusals >= 2, "connects during the downtime are refused");
    let terms = term_rows(&report);
    assert_eq!(terms.len(), 2, "{terms:?}");
    assert_eq!((terms[0].0, terms[0].3), ("node-a", "connection broken"));
    assert!(
        (12_000..22_100).contains(&terms[0].2),
        "the holder learns at its first health query after the kill: {terms:?}"
    );
    assert!(
        (24_000..29_100).contains(&terms[1].1),
        "a lock again within a retry interval of the server's return: {terms:?}"
    );
    assert_eq!(report.violations_total, 0);
}

#[test]
fn a_redlock_holder_cut_off_from_the_answers_cannot_unlock_so_its_keys_last_their_ttl() {
    // Every instance's answers to node-a are lost from 12 s (a one-way cut
    // from each of the five). Its connections are open, so its next extend
    // reaches the instances and sets the keys for another TTL (10 s); the
    // answers never come, each call times out and redis-client closes its
    // connection; the failed extend's `unlock` needs new connections, whose
    // handshakes the cut does not let complete, so no `unlock` reaches an
    // instance. The successor locks only once the keys expire: a TTL after
    // the extend, not a retry after the unlock (the model whose commands
    // stood alone let the unlock delete the keys at once: 1.04 s).
    let mut s = common::zoo("redlock");
    s.duration = secs(60);
    for instance in 1..=5 {
        s.faults.push(FaultSpec::Cut {
            from: format!("redis-{instance}"),
            to: "node-a".into(),
            at: secs(12),
            duration: secs(40),
        });
    }
    let report = run_seed(&s, 3);
    let terms = term_rows(&report);
    assert_eq!(terms.len(), 2, "{terms:?}");
    assert_eq!((terms[0].0, terms[0].3), ("node-a", "extend failed"));
    let extend_failed = terms[0].2;
    assert!((12_000..17_400).contains(&extend_failed), "{terms:?}");
    // The extend that failed had set the keys at about its start, 0.5 s or
    // less before it failed (five calls of at most `redis_timeout`).
    assert!(
        terms[1].1 >= extend_failed - 500 + 10_000,
        "the successor waits out the TTL: {terms:?}"
    );
    assert_eq!(report.violations_total, 0);
}
