//! Contract tests of the PostgreSQL advisory-lock model.

mod common;

use std::time::Duration;

use common::{secs, Clock, Sim};
use fenced_zoo::connection_lock::{ConnectionLock, PgRequest, PgResponse, PgSettings, SessionId};
use fenced_zoo::{ClientId, Instant, LockServer, Protocol, ServerOutput, SettingsError};

fn sim() -> Sim<ConnectionLock> {
    Sim::new(PgSettings::default())
}

/// A paused holder keeps its connection, so its lock, for the whole pause
/// (an hour here): the kernel answers keepalives, nobody else gets the lock,
/// and the holder resumes as leader.
#[test]
fn paused_holder_keeps_the_lock() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.pause(a, Duration::from_secs(3600));
    sim.run_for(Duration::from_secs(3600 + 60));
    assert_eq!(sim.holder(0), Some((Some(a), None)));
    assert_eq!(sim.became_leader_at(b), None);
    assert_eq!(sim.leader_ids(), vec![a]);
}

/// A holder whose machine vanishes (crashed with nothing sent: power loss,
/// a kernel panic) has its lock freed only by the server's keepalive
/// verdict: idle + count × interval (7875 s by default) after it was last
/// heard.
#[test]
fn server_frees_only_after_keepalive_verdict() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(20));
    sim.crash(a);
    // A's last health query reached the server at 10.001 s or 20.001 s.
    let verdict = PgSettings::default().keepalive_verdict_after();
    assert_eq!(verdict, Duration::from_secs(7875));
    sim.run_until(secs(7875));
    assert_eq!(
        sim.became_leader_at(b),
        None,
        "still held by the dead session"
    );
    sim.run_until(secs(20 + 7875 + 6));
    let freed_at = sim
        .log
        .iter()
        .find_map(|(at, event)| match event {
            common::Event::Holder { holder: None, .. } => Some(*at),
            _ => None,
        })
        .expect("freed");
    assert!(freed_at >= secs(20 + 7875) && freed_at < secs(20 + 7875 + 1));
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// A holder killed on a live machine: its kernel closes the connection,
/// the session ends, and the lock is free one latency later — a follower
/// takes it on its next try (every 5 s), not hours later.
#[test]
fn a_killed_holders_kernel_frees_the_lock_at_once() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(20));
    sim.kill(a);
    sim.run_for(Duration::from_millis(10));
    assert_eq!(sim.holder(0), Some((None, None)), "freed by the FIN");
    sim.run_for(Duration::from_secs(6));
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// After a server restart the holder still believes it leads until it next
/// uses its connection (its 10 s health query); meanwhile another client can
/// take the lock: two leaders for up to a check interval.
#[test]
fn client_learns_of_a_restart_only_on_next_use() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(500));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_millis(600));
    sim.restart_server(0, true);
    assert_eq!(sim.holder(0), Some((None, None)));
    // B's next try (every 5 s) reconnects... its connection is reset first.
    sim.run_for(Duration::from_secs(8));
    assert_eq!(
        sim.leader_ids(),
        vec![a],
        "A has not used its connection yet"
    );
    sim.run_for(Duration::from_secs(30));
    let (lost_at, reason) = sim.lost_leadership(a).expect("A learned on its ping");
    assert_eq!(reason, "connection broken");
    assert!(lost_at > secs(10) && lost_at < secs(11));
    assert!(sim.became_leader_at(b).is_some() || sim.became_leader_at(a).is_some());
}

/// A partitioned holder keeps believing until its health query times out
/// (924.6 s, Linux's retransmission give-up), and the server keeps its lock
/// until its keepalive verdict (7875 s): nobody leads in between.
#[test]
fn partitioned_holder_learns_by_query_timeout() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(500));
    let b = sim.add_client(2, Clock::default());
    sim.cut(a);
    sim.run_for(Duration::from_secs(2000));
    let (lost_at, reason) = sim.lost_leadership(a).expect("query timed out");
    assert_eq!(reason, "connection broken");
    // Connected at 2 ms, locked at 4 ms, first health query at 10.004 s.
    assert_eq!(lost_at, secs(10) + 924_600_000_000 + 4_000_000);
    assert_eq!(sim.holder(0), Some((Some(a), None)));
    assert!(sim.leader_ids().is_empty());
    sim.run_for(Duration::from_secs(7875));
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// Session-level advisory locks stack: a session that locked twice (a
/// duplicated request) still holds after one unlock; ending the session frees it.
#[test]
fn advisory_locks_stack_per_session() {
    let mut server = ConnectionLock::new_server(&PgSettings::default(), 0);
    let now = Instant::from_secs(1);
    let c = ClientId(1);
    server.handle_request(c, PgRequest::Connect { id: 1 }, now);
    let session = SessionId(1);
    assert!(matches!(
        server.poll_output(),
        Some(ServerOutput::Reply {
            response: PgResponse::Connected {
                session: SessionId(1),
                ..
            },
            ..
        })
    ));
    // The same request twice (a duplicate): the lock is held twice.
    let try_lock = PgRequest::TryLock {
        conn: 1,
        session,
        id: 2,
    };
    for _ in 0..2 {
        server.handle_request(c, try_lock.clone(), now);
    }
    server.handle_request(
        c,
        PgRequest::Unlock {
            conn: 1,
            session,
            id: 3,
        },
        now,
    );
    assert_eq!(server.holder(), Some((session, c)));
    server.handle_request(c, PgRequest::Terminate { conn: 1, session }, now);
    assert_eq!(server.holder(), None);
    // A request on the ended session is reset.
    while server.poll_output().is_some() {}
    server.handle_request(
        c,
        PgRequest::Ping {
            conn: 1,
            session,
            id: 4,
        },
        now,
    );
    assert!(matches!(
        server.poll_output(),
        Some(ServerOutput::Reply {
            response: PgResponse::ConnectionReset { conn: 1, id: 4 },
            ..
        })
    ));
}

/// A graceful stop unlocks and closes: the next client gets the lock on its
/// next try.
#[test]
fn stop_releases() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(500));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    sim.stop(a);
    assert_eq!(sim.lost_leadership(a).map(|(_, r)| r), Some("stopped"));
    sim.run_for(Duration::from_secs(6));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(sim.server(0).sessions(), 1);
}

/// Zero durations and counts are rejected, naming the setting.
#[test]
fn settings_validation() {
    let settings = PgSettings {
        tcp_keepalives_count: 0,
        ..PgSettings::default()
    };
    assert_eq!(
        ConnectionLock::validate(&settings),
        Err(SettingsError::Zero {
            setting: "tcp_keepalives_count"
        })
    );
    let settings = PgSettings {
        query_timeout: Duration::ZERO,
        ..PgSettings::default()
    };
    assert_eq!(
        ConnectionLock::validate(&settings).unwrap_err().to_string(),
        "query_timeout must be greater than zero"
    );
    assert_eq!(ConnectionLock::validate(&PgSettings::default()), Ok(()));
}

/// A keepalive probe is the kernel's business: answering it makes the client
/// process do nothing else — no query, no verdict — so a holder paused for
/// hours keeps its lock (found by `fenced-sim compare`: a probe used to run
/// the client's timer, a paused holder queried at the first probe and gave
/// up at the second, 4 h in).
#[test]
fn answering_a_keepalive_probe_makes_the_client_do_nothing_else() {
    use fenced_zoo::connection_lock::{ConnectionLock, PgRequest, PgResponse};
    use fenced_zoo::{ClientId, ClientOutput, LockClient, LockServer, Protocol, ServerOutput};
    let settings = <ConnectionLock as Protocol>::Settings::default();
    let mut server = ConnectionLock::new_server(&settings, 0);
    let mut client = ConnectionLock::new_client(&settings, ClientId(0), "a", 1);
    let t0 = fenced_zoo::Instant::from_secs(1);
    client.start(t0);
    // Deliver everything at once until the client holds the lock.
    let mut session = None;
    let mut conn = None;
    for _ in 0..20 {
        while let Some(out) = client.poll_output() {
            if let ClientOutput::Send { request, .. } = out {
                server.handle_request(ClientId(0), request, t0);
            }
        }
        while let Some(out) = server.poll_output() {
            if let ServerOutput::Reply { response, .. } = out {
                if let PgResponse::Connected { id, session: s } = &response {
                    session = Some(*s);
                    conn = Some(*id);
                }
                client.handle_response(0, response, t0);
            }
        }
    }
    let (session, conn) = (session.expect("connected"), conn.expect("connected"));
    assert!(client.leadership(t0).is_some(), "holds the lock");
    // Hours later, while the process is stalled, a probe arrives: only the
    // kernel's ack goes out.
    let later = fenced_zoo::Instant::from_secs(7_300);
    client.handle_response(0, PgResponse::KeepaliveProbe { conn, session }, later);
    let mut sent = Vec::new();
    while let Some(out) = client.poll_output() {
        if let ClientOutput::Send { request, .. } = out {
            sent.push(request);
        }
    }
    assert!(
        matches!(sent.as_slice(), [PgRequest::KeepaliveAck { .. }]),
        "{sent:?}"
    );
}

/// What `client` sends now, drained (its other outputs are returned apart).
fn sent_by(
    client: &mut <ConnectionLock as Protocol>::Client,
) -> (
    Vec<PgRequest>,
    Vec<fenced_zoo::ClientOutput<ConnectionLock>>,
) {
    use fenced_zoo::{ClientOutput, LockClient};
    let (mut sent, mut other) = (Vec::new(), Vec::new());
    while let Some(out) = client.poll_output() {
        match out {
            ClientOutput::Send { request, .. } => sent.push(request),
            out => other.push(out),
        }
    }
    (sent, other)
}

/// The replies `server` gives, drained, as `(to, response)`.
fn replies_of(server: &mut <ConnectionLock as Protocol>::Server) -> Vec<(ClientId, PgResponse)> {
    let mut replies = Vec::new();
    while let Some(out) = server.poll_output() {
        if let ServerOutput::Reply { to, response } = out {
            replies.push((to, response));
        }
    }
    replies
}

/// Delivers at `at` everything `client` (process `who`) and `server` send
/// each other, until neither has anything more to say.
fn exchange(
    client: &mut <ConnectionLock as Protocol>::Client,
    who: ClientId,
    server: &mut <ConnectionLock as Protocol>::Server,
    at: Instant,
) {
    use fenced_zoo::LockClient;
    loop {
        let requests = sent_by(client).0;
        if requests.is_empty() {
            return;
        }
        for request in requests {
            server.handle_request(who, request, at);
        }
        for (_, response) in replies_of(server) {
            client.handle_response(0, response, at);
        }
    }
}

/// A PostgreSQL that dies resets every connection its backends had open
/// (the machine's kernel closes a dead process's sockets), and a connect
/// while it is down is refused: a client learns either **at once** when a
/// query waits on the socket, else at its next use of it, sends nothing on
/// the dead socket, and tries again after its retry interval — as
/// `fenced-lab`'s proxies make a real restart do (they reset the
/// connections and refuse new ones), where the model used to lose the
/// queries and wait out `query_timeout` (924.6 s).
#[test]
fn a_dead_servers_kernel_resets_every_connection_and_a_connect_while_it_is_down_is_refused() {
    use fenced_zoo::{ClientOutput, LockClient};
    let settings = PgSettings::default();
    let retry = settings.retry_interval;
    let check = settings.check_interval;
    let mut server = ConnectionLock::new_server(&settings, 0);
    let (a, b) = (ClientId(1), ClientId(2));
    let mut client_a = ConnectionLock::new_client(&settings, a, "a", 1);
    let mut client_b = ConnectionLock::new_client(&settings, b, "b", 2);
    let t0 = Instant::from_secs(1);
    // A connects and takes the lock; then B connects, and its first
    // pg_try_advisory_lock is left in flight.
    client_a.start(t0);
    exchange(&mut client_a, a, &mut server, t0);
    assert!(client_a.leadership(t0).is_some(), "A holds the lock");
    client_b.start(t0);
    let connect = sent_by(&mut client_b).0;
    assert!(matches!(connect.as_slice(), [PgRequest::Connect { .. }]));
    server.handle_request(b, connect[0].clone(), t0);
    for (_, response) in replies_of(&mut server) {
        client_b.handle_response(0, response, t0);
    }
    let in_flight = sent_by(&mut client_b).0;
    assert!(matches!(in_flight.as_slice(), [PgRequest::TryLock { .. }]));

    // The server dies 2 s later: each session's client hears Closed on its
    // own connection; the lock's holder changes only when it is back.
    let died = Instant::from_secs(3);
    server.went_down();
    let resets = replies_of(&mut server);
    assert_eq!(resets.len(), 2, "{resets:?}");
    assert!(resets
        .iter()
        .all(|(_, r)| matches!(r, PgResponse::Closed { .. })));
    let reset_of = |who: ClientId| {
        resets
            .iter()
            .find(|(to, _)| *to == who)
            .map(|(_, r)| r.clone())
            .expect("a reset for each session")
    };
    // B's query waits on its socket: it fails at once, nothing is sent on
    // the dead socket, and B tries again one retry interval later.
    client_b.handle_response(0, reset_of(b), died);
    assert_eq!(sent_by(&mut client_b).0, Vec::new());
    assert_eq!(client_b.next_timeout(), Some(died + retry));
    // A is idle between health queries: it learns at its next one, which
    // fails with nothing sent, and leadership ends then, not before.
    client_a.handle_response(0, reset_of(a), died);
    assert_eq!(sent_by(&mut client_a).0, Vec::new());
    assert!(client_a.leadership(died).is_some());
    let next_check = client_a.next_timeout().expect("a health query is due");
    assert_eq!(next_check, t0 + check);
    client_a.handle_timeout(next_check);
    let (sent, other) = sent_by(&mut client_a);
    assert_eq!(sent, Vec::new(), "nothing goes out on a reset socket");
    assert!(matches!(
        other.as_slice(),
        [ClientOutput::LostLeadership {
            reason: "connection broken"
        }]
    ));
    assert_eq!(client_a.next_timeout(), Some(next_check + retry));

    // B reconnects while the server is down: its kernel's SYN is refused,
    // and it tries again after its retry interval.
    let again = died + retry;
    client_b.handle_timeout(again);
    let reconnect = sent_by(&mut client_b).0;
    let [PgRequest::Connect { id }] = reconnect.as_slice() else {
        panic!("a reconnect: {reconnect:?}");
    };
    let refused = ConnectionLock::refused(*id).expect("the design numbers its connections");
    assert_eq!(ConnectionLock::request_connection(&reconnect[0]), Some(*id));
    assert!(ConnectionLock::opens_connection(&reconnect[0]));
    client_b.handle_response(0, refused, again);
    assert_eq!(sent_by(&mut client_b).0, Vec::new());
    assert_eq!(client_b.next_timeout(), Some(again + retry));

    // Back (the lock died with its session): B's next connect opens a
    // session, and its try takes the lock.
    let back = again + retry;
    server.restart(back, true);
    assert_eq!(server.holder(), None);
    replies_of(&mut server);
    client_b.handle_timeout(back);
    exchange(&mut client_b, b, &mut server, back);
    assert!(client_b.leadership(back).is_some(), "B holds the lock");
    assert_eq!(server.holder().map(|(_, who)| who), Some(b));
}
