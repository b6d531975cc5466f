//! Contract tests of the ZooKeeper + Curator `LeaderLatch` model.

mod common;

use std::time::Duration;

use common::{secs, Clock, Event, Loss, Sim};
use fenced_zoo::zookeeper::{
    ErrorPolicy, ZooKeeper, ZooKeeperRequest, ZooKeeperResponse, ZooKeeperSettings,
};
use fenced_zoo::{ClientId, Protocol, SettingsError};

fn sim(error_policy: ErrorPolicy) -> Sim<ZooKeeper> {
    Sim::new(ZooKeeperSettings {
        error_policy,
        ..ZooKeeperSettings::default()
    })
}

fn tokens(sim: &Sim<ZooKeeper>) -> Vec<(ClientId, u64)> {
    sim.log
        .iter()
        .filter_map(|(_, event)| match event {
            Event::BecameLeader { client, token } => Some((*client, token.expect("czxid"))),
            _ => None,
        })
        .collect()
}

fn get_children_from(sim: &Sim<ZooKeeper>, client: ClientId, after: u64) -> usize {
    sim.requests
        .iter()
        .filter(|(at, from, _, request)| {
            *at > after
                && *from == client
                && matches!(request, ZooKeeperRequest::GetChildren { .. })
        })
        .count()
}

/// The lowest sequence leads; each other contender watches only its
/// predecessor: deleting the leader's node wakes B alone (C makes no
/// request), deleting a middle node re-points C's watch without leading, and
/// the czxid tokens strictly increase across leaders.
#[test]
fn lowest_sequence_leads_and_predecessor_watch_hands_over() {
    let mut sim = sim(ErrorPolicy::Standard);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let c = sim.add_client(3, Clock::default());
    let d = {
        sim.run_for(Duration::from_secs(1));
        sim.add_client(4, Clock::default())
    };
    sim.run_for(Duration::from_secs(30));
    assert_eq!(sim.leader_ids(), vec![a]);

    let stopped_at = sim.now;
    sim.stop(a);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(get_children_from(&sim, c, stopped_at), 0, "no herd");
    assert_eq!(get_children_from(&sim, d, stopped_at), 0, "no herd");

    sim.stop(c);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![b], "D now watches B");
    sim.stop(b);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![d]);

    let tokens = tokens(&sim);
    assert_eq!(
        tokens.iter().map(|(client, _)| *client).collect::<Vec<_>>(),
        vec![a, b, d]
    );
    assert!(
        tokens.windows(2).all(|pair| pair[0].1 < pair[1].1),
        "{tokens:?}"
    );
    assert_eq!(sim.holder(0), Some((Some(d), Some(tokens[2].1))));
}

/// A connected client pings once `readTimeout / 2 - 1 s` (19 s for a 60 s
/// session) has passed since its last send.
#[test]
fn ping_every_read_timeout_half_less_a_second() {
    let mut sim = sim(ErrorPolicy::Standard);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(100));
    let pings: Vec<u64> = sim
        .requests
        .iter()
        .filter(|(_, from, _, request)| {
            *from == a && matches!(request, ZooKeeperRequest::Ping { .. })
        })
        .map(|(at, ..)| *at)
        .collect();
    assert_eq!(pings.len(), 5, "{pings:?}");
    for pair in pings.windows(2) {
        assert_eq!(pair[1] - pair[0], secs(19));
    }
}

/// A leader paused past the session timeout loses its session on the
/// server's clock (next tick after 60 s) and its successor leads. Under the
/// Standard policy it stopped believing at the read timeout (40 s), before
/// the expiry: no overlap. Under the Session policy it believes until it
/// wakes and reconnects to learn its session expired: two leaders, told apart
/// by the czxid.
#[test]
fn paused_leader_loses_its_session_overlap_only_under_session_policy() {
    for (policy, overlap) in [(ErrorPolicy::Standard, false), (ErrorPolicy::Session, true)] {
        let mut sim = sim(policy);
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client(2, Clock::default());
        sim.run_for(Duration::from_secs(1));
        sim.pause(a, Duration::from_secs(70));
        let mut both = false;
        for _ in 0..750 {
            sim.run_for(Duration::from_millis(100));
            both |= sim.leader_ids().len() == 2;
        }
        assert_eq!(both, overlap, "{policy:?}");
        assert_eq!(sim.leader_ids(), vec![b], "{policy:?}");
        let took_over = sim.became_leader_at(b).expect("B leads");
        assert!(
            took_over >= secs(62) && took_over <= secs(66),
            "{took_over}"
        );
        let (lost_at, reason) = sim.lost_leadership(a).expect("A learned");
        match policy {
            // SUSPENDED on waking: the socket the server closed.
            ErrorPolicy::Standard => assert_eq!(reason, "connection suspended"),
            // LOST after reconnecting: 1 s spin delay, then `Expired`.
            ErrorPolicy::Session => {
                assert_eq!(reason, "session lost");
                assert!(lost_at > secs(73) && lost_at < secs(74), "{lost_at}");
            }
        }
        let tokens = tokens(&sim);
        assert!(tokens[0].1 < tokens[1].1);
    }
}

/// A partitioned leader: SUSPENDED at the read timeout (Standard gives up),
/// LOST at 4/3 of the timeout by the client's own expiry (ZOOKEEPER-4508,
/// Session gives up); the server expires the session at the next tick after
/// 60 s. Without the client's expiry, Curator's simulated expiration fires a
/// full session timeout after SUSPENDED (100 s).
#[test]
fn partitioned_leader_suspended_then_lost() {
    for (policy, client_session_expiry, lost_at_secs) in [
        (ErrorPolicy::Standard, true, 40),
        (ErrorPolicy::Session, true, 80),
        (ErrorPolicy::Session, false, 100),
    ] {
        let mut sim = Sim::<ZooKeeper>::new(ZooKeeperSettings {
            error_policy: policy,
            client_session_expiry,
            ..ZooKeeperSettings::default()
        });
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_millis(10));
        sim.cut(a);
        let cut_at = sim.now;
        sim.run_for(Duration::from_secs(120));
        let (lost_at, _) = sim.lost_leadership(a).expect("A gave up");
        let after = lost_at - cut_at;
        assert!(
            after > secs(lost_at_secs) - secs(1) && after < secs(lost_at_secs) + secs(1),
            "{policy:?} {client_session_expiry}: {after}"
        );
        assert_eq!(sim.holder(0), Some((None, None)), "the server expired A");
    }
}

/// A leader on a slow clock: its read timeout runs late, so even the
/// Standard policy believes past the server-side expiry.
#[test]
fn slow_clock_leader_overlaps_even_under_standard_policy() {
    let mut sim = sim(ErrorPolicy::Standard);
    let a = sim.add_client(1, Clock::rate(1, 2));
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    sim.cut(a);
    let mut both = false;
    for _ in 0..1_000 {
        sim.run_for(Duration::from_millis(100));
        both |= sim.leader_ids().len() == 2;
    }
    assert!(both);
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// A durable restart closes every socket (SUSPENDED) but reloads sessions
/// and touches them: the leader reconnects to the same session and keeps
/// its node and czxid (Standard: a short gap; Session: none). A partitioned
/// leader's session lives a full timeout from the restart.
#[test]
fn durable_restart_keeps_sessions_for_the_timeout() {
    for policy in [ErrorPolicy::Standard, ErrorPolicy::Session] {
        let mut sim = sim(policy);
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_secs(30));
        sim.restart_server(0, true);
        sim.run_for(Duration::from_secs(100));
        assert_eq!(sim.leader_ids(), vec![a]);
        let tokens = tokens(&sim);
        assert!(tokens.iter().all(|(_, czxid)| *czxid == tokens[0].1));
        assert_eq!(
            sim.lost_leadership(a).is_some(),
            policy == ErrorPolicy::Standard
        );
    }

    let mut sim = sim(ErrorPolicy::Session);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(29));
    sim.cut(a);
    sim.run_for(Duration::from_secs(30));
    let restarted_at = sim.now;
    sim.restart_server(0, true);
    sim.run_until(restarted_at + secs(60) - 1);
    assert_eq!(sim.holder(0).and_then(|(holder, _)| holder), Some(a));
    sim.run_for(Duration::from_secs(5));
    assert_eq!(sim.holder(0).and_then(|(holder, _)| holder), Some(b));
}

/// A store that lost its data does not know the session: the reconnect
/// answers `Expired`, Curator posts LOST and the latch starts over in a new
/// session.
#[test]
fn wiped_server_expires_the_session_on_reconnect() {
    let mut sim = sim(ErrorPolicy::Session);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let first = sim.client(a).session();
    sim.restart_server(0, false);
    sim.run_for(Duration::from_secs(5));
    assert_eq!(sim.lost_leadership(a).map(|(_, r)| r), Some("session lost"));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_ne!(sim.client(a).session(), first);
    let tokens = tokens(&sim);
    assert!(tokens[0].1 < tokens[1].1, "a new epoch: {tokens:?}");
}

/// The harness drops exactly one message: the first one to (or from)
/// `client` that `pick` matches.
fn drop_first<M: 'static>(
    client: ClientId,
    pick: fn(&M) -> bool,
) -> Option<Box<common::DropFilter<M>>> {
    let mut dropped = false;
    Some(Box::new(move |peer: ClientId, message: &M| {
        let drop = !dropped && peer == client && pick(message);
        dropped |= drop;
        drop
    }))
}

/// Over TCP a response is never silently lost: the model turns a missing
/// answer into the broken connection it stands for. A's create is applied
/// (A holds the lowest node; the server reports A) but its answer is
/// dropped: the outstanding request runs out the read timeout (40 s after
/// its send), the connection is dropped (SUSPENDED), and after the 1 s spin
/// delay the protected create is re-sent, finds A's node, and A leads —
/// within 42 s of its start, and B (watching A's node) never leads.
#[test]
fn lost_create_response_reconnects_and_one_leader() {
    let mut sim = sim(ErrorPolicy::Standard);
    sim.drop_response = drop_first(ClientId(1), |response| {
        matches!(response, ZooKeeperResponse::Created { .. })
    });
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(39));
    assert_eq!(sim.dropped, 1);
    assert_eq!(sim.holder(0).and_then(|(holder, _)| holder), Some(a));
    assert!(sim.leader_ids().is_empty(), "A has not heard, B waits");
    assert!(sim.client(a).is_suspended() || sim.became_leader_at(a).is_none());
    let mut two = false;
    let led = sim.run_until_cond(Duration::from_secs(3), |sim| {
        two |= sim.leader_ids().len() > 1;
        sim.leader_ids() == vec![a]
    });
    assert!(led && !two, "leaders: {:?}", sim.leader_ids());
    assert!(sim.now <= secs(42), "{}", sim.now);
    sim.run_for(Duration::from_secs(120));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_eq!(sim.became_leader_at(b), None);
    let tokens = tokens(&sim);
    assert_eq!(tokens.len(), 1, "one czxid: {tokens:?}");
}

/// The symmetric case: A's create never reaches the server. Its answer is
/// outstanding for the read timeout, the connection is dropped, and the
/// create is re-sent on the new one: A leads within 42 s of its start.
#[test]
fn lost_create_request_reconnects_and_leads() {
    let mut sim = sim(ErrorPolicy::Standard);
    sim.drop_request = drop_first(ClientId(1), |request| {
        matches!(request, ZooKeeperRequest::Create { .. })
    });
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(39));
    assert_eq!(sim.dropped, 1);
    assert_eq!(sim.holder(0), None, "the server never saw a create");
    assert!(sim.leader_ids().is_empty());
    let led = sim.run_until_cond(Duration::from_secs(3), |sim| sim.leader_ids() == vec![a]);
    assert!(led, "A leads by 42 s");
    sim.run_for(Duration::from_secs(120));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_eq!(tokens(&sim).len(), 1);
}

/// A lost watch event: B watches A's node; A stops and its node's
/// `NodeDeleted` to B is dropped. Pongs that TCP would have held behind the
/// missing event do not count as heard, so B's read timeout drops the
/// connection and RECONNECTED re-reads the children: B leads within 42 s.
#[test]
fn lost_watch_event_reconnects_and_leads() {
    let mut sim = sim(ErrorPolicy::Standard);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(10));
    assert_eq!(sim.leader_ids(), vec![a]);
    sim.drop_response = drop_first(b, |response| {
        matches!(response, ZooKeeperResponse::NodeDeleted { .. })
    });
    let stopped_at = sim.now;
    sim.stop(a);
    sim.run_for(Duration::from_secs(30));
    assert_eq!(sim.dropped, 1);
    assert_eq!(sim.holder(0).and_then(|(holder, _)| holder), Some(b));
    let led = sim.run_until_cond(Duration::from_secs(12), |sim| sim.leader_ids() == vec![b]);
    assert!(led, "B leads by 42 s after A stopped");
    assert!(sim.now - stopped_at <= secs(42));
}

/// 20 % of all messages, both ways, lost for five minutes among three
/// contenders (each seed its own loss pattern): once the loss stops, exactly
/// one of them leads within two session timeouts (a connection stalled just
/// before is dropped 40 s after its oldest unanswered request, a session
/// lost meanwhile is re-made at once), the one the server says holds the
/// lowest node, and it stays the only leader.
#[test]
fn random_loss_converges_to_one_leader_after_it_stops() {
    for seed in 1..=20 {
        let mut sim = sim(ErrorPolicy::Standard);
        sim.loss = Some(Loss::new(200, seed));
        let ids: Vec<ClientId> = (1..=3)
            .map(|id| sim.add_client(id, Clock::default()))
            .collect();
        sim.run_for(Duration::from_secs(300));
        assert!(sim.dropped > 0);
        sim.loss = None;
        let stopped_at = sim.now;
        let converged = sim.run_until_cond(Duration::from_secs(120), |sim| {
            sim.leader_ids().len() == 1
                && sim.holder(0).and_then(|(holder, _)| holder) == Some(sim.leader_ids()[0])
        });
        assert!(
            converged,
            "seed {seed}: leaders {:?}, holder {:?}",
            sim.leader_ids(),
            sim.holder(0)
        );
        let leader = sim.leader_ids()[0];
        assert!(ids.contains(&leader));
        assert!(sim.now - stopped_at <= secs(120));
        sim.run_for(Duration::from_secs(300));
        assert_eq!(sim.leader_ids(), vec![leader], "seed {seed}");
    }
}

/// Zero durations and a percent outside `1..=100` are rejected.
#[test]
fn settings_validation() {
    let settings = ZooKeeperSettings {
        session_timeout: Duration::ZERO,
        ..ZooKeeperSettings::default()
    };
    assert_eq!(
        ZooKeeper::validate(&settings),
        Err(SettingsError::Zero {
            setting: "session_timeout"
        })
    );
    let settings = ZooKeeperSettings {
        simulated_session_expiration_percent: 101,
        ..ZooKeeperSettings::default()
    };
    assert_eq!(
        ZooKeeper::validate(&settings).unwrap_err().to_string(),
        "simulated_session_expiration_percent: must be > 0 and <= 100"
    );
    assert_eq!(ZooKeeper::validate(&ZooKeeperSettings::default()), Ok(()));
}

/// A delete takes the next zxid before the server checks it, so a delete of
/// a node already gone (`NONODE`, as a client's guaranteed delete of its
/// expired session's node is) still uses one: upstream's
/// `PrepRequestProcessor.pRequestHelper` calls `pRequest2Txn(type,
/// zks.getNextZxid(), ...)` and keeps the header as an `ErrorTxn`. The real
/// server's zxids (the tokens) count it, so the model must.
#[test]
fn a_delete_of_a_missing_node_still_takes_a_zxid() {
    use fenced_zoo::zookeeper::ZooKeeperServer;
    use fenced_zoo::{Instant, LockServer, ServerOutput};

    let mut server = ZooKeeperServer::new(Duration::from_secs(2));
    let client = ClientId(0);
    let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    let connect = ZooKeeperRequest::Connect {
        connection: 1,
        session: None,
        timeout: Duration::from_secs(10),
    };
    server.handle_request(client, connect, at(1));
    let create = ZooKeeperRequest::Create {
        connection: 1,
        xid: 1,
        protection: 7,
    };
    server.handle_request(client, create, at(2));
    let mut created = None;
    while let Some(output) = server.poll_output() {
        if let ServerOutput::Reply {
            response: ZooKeeperResponse::Created { node, .. },
            ..
        } = output
        {
            created = Some(node);
        }
    }
    let node = created.expect("the create is answered");
    let after_create = server.zxid();
    let delete = ZooKeeperRequest::Delete {
        connection: 1,
        node,
    };
    server.handle_request(client, delete.clone(), at(3));
    assert_eq!(server.zxid(), after_create + 1, "a delete is one txn");
    assert_eq!(server.children().count(), 0);
    server.handle_request(client, delete, at(4));
    assert_eq!(
        server.zxid(),
        after_create + 2,
        "a NONODE delete is an error txn with its own zxid"
    );
    // A read takes none.
    let read = ZooKeeperRequest::GetChildren {
        connection: 1,
        xid: 2,
    };
    server.handle_request(client, read, at(5));
    assert_eq!(server.zxid(), after_create + 2);
}

/// The JVM dies: the kernel closes every socket at once, so each connected
/// client is answered `Closed` on its own connection when the server goes
/// down; the restart that follows finds none open and closes nothing more.
#[test]
fn a_dying_server_closes_every_socket_at_once_and_its_restart_finds_none() {
    use fenced_zoo::{LockServer, ServerOutput};
    let settings = ZooKeeperSettings::default();
    let mut server = ZooKeeper::new_server(&settings, 0);
    let t0 = fenced_zoo::Instant::from_nanos(0);
    for (client, connection) in [(ClientId(0), 7), (ClientId(1), 9)] {
        let connect = ZooKeeperRequest::Connect {
            connection,
            session: None,
            timeout: Duration::from_secs(60),
        };
        server.handle_request(client, connect, t0);
    }
    while server.poll_output().is_some() {}
    server.went_down();
    let mut closed = Vec::new();
    while let Some(output) = server.poll_output() {
        if let ServerOutput::Reply { to, response } = output {
            closed.push((to, response));
        }
    }
    assert_eq!(
        closed,
        vec![
            (ClientId(0), ZooKeeperResponse::Closed { connection: 7 }),
            (ClientId(1), ZooKeeperResponse::Closed { connection: 9 }),
        ]
    );
    server.restart(fenced_zoo::Instant::from_nanos(5_000_000_000), true);
    while let Some(output) = server.poll_output() {
        assert!(
            !matches!(output, ServerOutput::Reply { .. }),
            "nothing left to close: {output:?}"
        );
    }
}

/// `ClientCnxn`'s two waits before a reconnect: `hostProvider.next(1000)`'s
/// spin always, and `startConnect`'s random sleep below 1 s once the handle
/// has connected a socket (`isFirstConnect`, cleared by `primeConnection`).
/// A first connect refused waits the spin alone; a connected handle whose
/// socket closes waits the spin and a draw that stays below the bound and
/// differs from seed to seed.
#[test]
fn a_reconnect_waits_the_spin_and_once_connected_a_random_sleep_too() {
    use fenced_zoo::zookeeper::{SessionId, ZooKeeperClient};
    use fenced_zoo::{ClientOutput, Instant, LockClient};
    let ms = |m: u64| Instant::from_nanos(m * 1_000_000);
    let server = 0;
    let connects = |c: &mut ZooKeeperClient| -> Vec<u64> {
        std::iter::from_fn(|| c.poll_output())
            .filter_map(|o| match o {
                ClientOutput::Send {
                    request: ZooKeeperRequest::Connect { connection, .. },
                    ..
                } => Some(connection),
                _ => None,
            })
            .collect()
    };
    let mut waits = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let mut c = ZooKeeperClient::new(ZooKeeperSettings::default(), ClientId(0), seed);
        c.start(ms(0));
        let first = connects(&mut c);
        assert_eq!(first.len(), 1, "{first:?}");
        c.handle_response(
            server,
            ZooKeeperResponse::Closed {
                connection: first[0],
            },
            ms(3),
        );
        assert_eq!(
            c.next_timeout(),
            Some(ms(1_003)),
            "never connected: the spin alone"
        );
        c.handle_timeout(ms(1_003));
        let second = connects(&mut c);
        assert_eq!(second.len(), 1, "{second:?}");
        let connected = ZooKeeperResponse::Connected {
            connection: second[0],
            session: SessionId(1),
            timeout: Duration::from_secs(60),
        };
        c.handle_response(server, connected, ms(1_005));
        while c.poll_output().is_some() {}
        let closed = ZooKeeperResponse::Closed {
            connection: second[0],
        };
        c.handle_response(server, closed, ms(2_000));
        let wait = c.next_timeout().expect("a reconnect") - ms(2_000);
        assert!(
            (Duration::from_secs(1)..Duration::from_secs(2)).contains(&wait),
            "seed {seed}: {wait:?}"
        );
        waits.insert(wait);
        // The server no longer knows the session: Curator's new handle
        // connects at once and, never connected itself, waits the spin
        // alone after a refused connect.
        let back = ms(2_000) + wait;
        c.handle_timeout(back);
        let third = connects(&mut c);
        assert_eq!(third.len(), 1, "{third:?}");
        let expired = ZooKeeperResponse::Connected {
            connection: third[0],
            session: SessionId(1),
            timeout: Duration::ZERO,
        };
        c.handle_response(server, expired, back);
        assert_eq!(
            c.next_timeout(),
            Some(back),
            "a new handle connects at once"
        );
        c.handle_timeout(back);
        let fourth = connects(&mut c);
        assert_eq!(fourth.len(), 1, "{fourth:?}");
        let refused = ZooKeeperResponse::Closed {
            connection: fourth[0],
        };
        c.handle_response(server, refused, back);
        assert_eq!(c.next_timeout(), Some(back + Duration::from_secs(1)));
    }
    assert!(waits.len() >= 15, "the sleep is drawn: {waits:?}");
}
