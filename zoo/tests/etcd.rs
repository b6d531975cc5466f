//! Contract tests of the etcd Session + Election model.

mod common;

use std::time::Duration;

use common::{secs, Clock, Event, Sim};
use fenced_zoo::etcd::{Etcd, EtcdRequest, EtcdSettings};
use fenced_zoo::{Protocol, SettingsError};

fn sim() -> Sim<Etcd> {
    Sim::new(EtcdSettings::default())
}

fn tokens(sim: &Sim<Etcd>) -> Vec<u64> {
    sim.log
        .iter()
        .filter_map(|(_, event)| match event {
            Event::BecameLeader { token, .. } => *token,
            _ => None,
        })
        .collect()
}

/// A campaigner waits until every key with a lower create revision is
/// deleted: B leads only after A resigns, C only after B; the tokens (create
/// revisions) increase.
#[test]
fn campaign_waits_for_lower_revisions() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let c = sim.add_client(3, Clock::default());
    sim.run_for(Duration::from_secs(30));
    assert_eq!(sim.leader_ids(), vec![a]);
    sim.stop(a);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![b]);
    sim.stop(b);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![c]);
    let tokens = tokens(&sim);
    assert_eq!(tokens.len(), 3);
    assert!(
        tokens.windows(2).all(|pair| pair[0] < pair[1]),
        "{tokens:?}"
    );
}

/// The session's keep-alive goes out every TTL/3 after each answer (20 s for
/// the default 60 s TTL).
#[test]
fn keepalive_every_third_of_the_ttl() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(100));
    let sent: Vec<u64> = sim
        .requests
        .iter()
        .filter(|(_, from, _, request)| {
            *from == a && matches!(request, EtcdRequest::KeepAlive { .. })
        })
        .map(|(at, ..)| *at)
        .collect();
    assert_eq!(sent.len(), 5, "{sent:?}");
    for pair in sent.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            secs(20) + 2_000_000,
            "20 s after the answer"
        );
    }
}

/// A partitioned leader learns its session is over only when its keep-alive
/// deadline (last answer + TTL, on its clock) passes — at the client's
/// `deadlineLoop` look after it, up to a second later; the server revokes
/// the lease at its revoke loop's look after the expiry (every 500 ms) and
/// the next campaigner leads. So even on true clocks the two may overlap,
/// by less than a second (upstream's own window: only fencing closes it);
/// on a slow clock the old leader believes far too long: two leaders, told
/// apart by the token.
#[test]
fn session_expiry_is_learned_only_through_keepalive() {
    for (clock, slow) in [(Clock::default(), false), (Clock::rate(1, 2), true)] {
        let mut sim = sim();
        let a = sim.add_client(1, clock);
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client(2, Clock::default());
        sim.run_for(Duration::from_secs(5));
        sim.cut(a);
        let mut both = false;
        for _ in 0..2_000 {
            sim.run_for(Duration::from_millis(100));
            both |= sim.leader_ids().len() == 2;
        }
        assert_eq!(sim.leader_ids(), vec![b]);
        let (lost_at, reason) = sim.lost_leadership(a).expect("A learned");
        assert_eq!(reason, "session expired");
        let took_over = sim.became_leader_at(b).expect("B leads");
        if slow {
            assert!(
                both && lost_at > took_over + secs(20),
                "{lost_at} {took_over}"
            );
        } else {
            // At most one look of the client's loop after B leads.
            assert!(lost_at < took_over + secs(1), "{lost_at} {took_over}");
        }
    }
}

/// A store that lost its data answers keep-alives with TTL 0: the session
/// ends at the next keep-alive, and the client starts a new one.
#[test]
fn lease_not_found_ends_the_session() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let first = sim.client(a).lease();
    sim.restart_server(0, false);
    sim.run_for(Duration::from_secs(25));
    let (lost_at, reason) = sim.lost_leadership(a).expect("learned");
    assert_eq!(reason, "session expired");
    assert!(lost_at > secs(20) && lost_at < secs(21));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert_ne!(sim.client(a).lease(), first);
}

/// A durable restart promotes every lease to now + TTL: the leader keeps its
/// key (and its token).
#[test]
fn durable_restart_keeps_the_leader() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(50));
    sim.restart_server(0, true);
    sim.run_for(Duration::from_secs(100));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert!(sim.lost_leadership(a).is_none());
    assert_eq!(tokens(&sim).len(), 1);
}

/// A leader paused past its TTL does not lead when it wakes (its keep-alive
/// deadline passed), and the next campaigner already does.
#[test]
fn paused_leader_wakes_without_leadership() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.pause(a, Duration::from_secs(90));
    sim.run_for(Duration::from_secs(85));
    assert_eq!(sim.leader_ids(), vec![b]);
    sim.run_for(Duration::from_secs(10));
    assert_eq!(
        sim.lost_leadership(a).map(|(_, r)| r),
        Some("session expired")
    );
}

/// Zero settings are rejected, naming the setting.
#[test]
fn settings_validation() {
    let settings = EtcdSettings {
        session_ttl_secs: 0,
        ..EtcdSettings::default()
    };
    assert_eq!(
        Etcd::validate(&settings),
        Err(SettingsError::Zero {
            setting: "session_ttl_secs"
        })
    );
    let settings = EtcdSettings {
        request_timeout: Duration::ZERO,
        ..EtcdSettings::default()
    };
    assert_eq!(
        Etcd::validate(&settings).unwrap_err().to_string(),
        "request_timeout must be greater than zero"
    );
    assert_eq!(Etcd::validate(&EtcdSettings::default()), Ok(()));
}

/// `Campaign` answered `ErrLeaseNotFound` (the session's lease vanished
/// between the grant and the txn) returns the error to its caller
/// (`client/v3/concurrency/election.go`): the application makes a new
/// session after `restart_delay` — it does not re-send the txn at once,
/// which at zero latency never stopped.
#[test]
fn lease_not_found_on_the_campaign_starts_a_new_session_after_the_delay() {
    use fenced_zoo::etcd::EtcdResponse;
    use fenced_zoo::{ClientId, ClientOutput, Instant, LockClient};
    let settings = EtcdSettings::default();
    let mut client = Etcd::new_client(&settings, ClientId(1), "a#1", 1);
    let t0 = Instant::from_nanos(1_000_000_000);
    client.start(t0);
    let sent = |client: &mut <Etcd as Protocol>::Client| {
        let mut requests = Vec::new();
        while let Some(output) = client.poll_output() {
            if let ClientOutput::Send { request, .. } = output {
                requests.push(request);
            }
        }
        requests
    };
    let grant = sent(&mut client);
    let Some(EtcdRequest::Grant { id, .. }) = grant.first().cloned() else {
        panic!("a Grant first: {grant:?}");
    };
    let lease = fenced_zoo::etcd::LeaseId(7);
    client.handle_response(0, EtcdResponse::Granted { id, lease }, t0);
    let campaign = sent(&mut client);
    let Some(EtcdRequest::Campaign { id, .. }) = campaign
        .iter()
        .find(|r| matches!(r, EtcdRequest::Campaign { .. }))
        .cloned()
    else {
        panic!("a Campaign txn: {campaign:?}");
    };
    client.handle_response(
        0,
        EtcdResponse::Campaigned {
            id,
            create_revision: None,
        },
        t0,
    );
    let after = sent(&mut client);
    assert!(
        !after
            .iter()
            .any(|r| matches!(r, EtcdRequest::Campaign { .. })),
        "no txn re-sent at once: {after:?}"
    );
    assert_eq!(client.lease(), None, "the session is closed");
    // The next thing it does is a new Grant, after the restart delay.
    let next = client.next_timeout().expect("a timer");
    assert_eq!(next, t0 + settings.restart_delay);
    client.handle_timeout(next);
    let regrant = sent(&mut client);
    assert!(
        matches!(regrant.first(), Some(EtcdRequest::Grant { .. })),
        "{regrant:?}"
    );
}

/// The lessor revokes at its revoke loop's looks, every 500 ms
/// (`server/lease/lessor.go`, `runLoop`), not at the expiry itself; and a
/// durable restart `Promote`s leases to now + election timeout (1 s) + TTL.
#[test]
fn the_server_revokes_at_its_half_second_looks_and_promotes_by_the_election_timeout() {
    use fenced_zoo::etcd::{EtcdResponse, LeaseId};
    use fenced_zoo::{ClientId, Instant, LockServer, ServerOutput};
    let settings = EtcdSettings::default();
    let mut server = Etcd::new_server(&settings, 0);
    let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    server.handle_request(
        ClientId(1),
        EtcdRequest::Grant { id: 1, ttl_secs: 2 },
        at(200),
    );
    let mut granted = None;
    while let Some(output) = server.poll_output() {
        if let ServerOutput::Reply {
            response: EtcdResponse::Granted { lease, .. },
            ..
        } = output
        {
            granted = Some(lease);
        }
    }
    let lease: LeaseId = granted.expect("granted");
    // Expires at 2.2 s; the loop looks at 2.5 s.
    assert_eq!(server.next_timeout(), Some(at(2_500)));
    // A call between looks revokes nothing yet.
    server.handle_timeout(at(2_300));
    server.handle_request(ClientId(1), EtcdRequest::KeepAlive { lease }, at(2_300));
    let alive = std::iter::from_fn(|| server.poll_output()).any(|o| {
        matches!(o, ServerOutput::Reply { response: EtcdResponse::KeepAlive { ttl_secs, .. }, .. } if ttl_secs > 0)
    });
    assert!(alive, "still there at 2.3 s, and refreshed to 4.3 s");
    // A durable restart at 3 s promotes it to 3 + 1 + 2 = 6 s; revoked at the
    // look at 6 s.
    server.restart(at(3_000), true);
    assert_eq!(server.next_timeout(), Some(at(6_000)));
}
