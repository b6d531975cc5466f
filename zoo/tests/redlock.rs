//! Contract tests of the Redlock model (redlock-rb over N Redis instances).

mod common;

use std::time::Duration;

use common::{millis, secs, Clock, Event, Sim};
use fenced_zoo::redlock::{
    LockReturn, RedisInstance, RedisRequest, RedisResponse, Redlock, RedlockClient, RedlockSettings,
};
use fenced_zoo::{
    ClientId, ClientOutput, Instant, LockClient, LockServer, Protocol, ServerOutput, SettingsError,
};

fn sim() -> Sim<Redlock> {
    Sim::new(RedlockSettings::default())
}

/// A client that reaches only 3 of 5 instances still gets the lock: a
/// majority suffices.
#[test]
fn three_of_five_is_a_majority() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.cut_link(a, 3);
    sim.cut_link(a, 4);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![a]);
    for index in 0..3 {
        assert_eq!(sim.holder(index), Some((Some(a), None)));
    }
}

/// Two of five is not: the client never leads, and each failed round unlocks
/// its value on every instance (so no key of it survives anywhere).
#[test]
fn two_of_five_fails_and_unlocks_everywhere() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    for index in 2..5 {
        sim.cut_link(a, index);
    }
    sim.run_for(Duration::from_millis(2_000));
    assert!(sim.became_leader_at(a).is_none());
    let unlocks_to_0 = sim
        .requests
        .iter()
        .filter(|(_, _, to, request)| *to == 0 && matches!(request, RedisRequest::Unlock { .. }))
        .count();
    let locks_to_0 = sim
        .requests
        .iter()
        .filter(|(_, _, to, request)| *to == 0 && matches!(request, RedisRequest::Lock { .. }))
        .count();
    assert_eq!(unlocks_to_0, locks_to_0, "every failed round unlocks");
    for index in 0..2 {
        assert_eq!(sim.server(index).key_at(sim.server_now(index)), None);
    }
}

/// Validity is exactly `TTL − elapsed − (TTL/100 + 2 ms)` in whole
/// milliseconds of the client's clock, counted from the end of the round.
#[test]
fn validity_arithmetic_is_exact() {
    let mut sim = sim();
    sim.latency = Duration::from_millis(5);
    let a = sim.add_client(1, Clock::default());
    // Five instances in turn, each a new connection's prelude and then the
    // lock script, two round trips of 10 ms: the round ends at 100 ms.
    sim.run_until(millis(100));
    assert_eq!(sim.became_leader_at(a), Some(millis(100)));
    let validity_ms = 10_000 - 100 - (10_000 / 100 + 2);
    assert_eq!(
        sim.client(a).valid_until(),
        Some(fenced_zoo::Instant::from_millis(100 + validity_ms))
    );
}

/// The application keeps leading across extends: one term, no loss, for a
/// minute.
#[test]
fn extending_keeps_one_term() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(60));
    let leaders = sim.leader_ids();
    assert_eq!(leaders.len(), 1);
    let leader = leaders[0];
    let other = if leader == a { b } else { a };
    assert!(sim.lost_leadership(leader).is_none());
    assert!(sim.became_leader_at(other).is_none());
}

/// A value set by one client is never deleted by another's unlock
/// (compare-and-delete): B's failed rounds leave A's keys in place.
#[test]
fn compare_and_delete_spares_another_clients_key() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(3));
    assert_eq!(sim.leader_ids(), vec![a]);
    assert!(sim
        .requests
        .iter()
        .any(|(_, from, _, request)| *from == b && matches!(request, RedisRequest::Unlock { .. })));
    for index in 0..5 {
        assert_eq!(sim.holder(index), Some((Some(a), None)));
    }
}

/// Each instance expires the key on its own clock: an instance whose clock
/// runs three times fast drops it after 10/3 s of real time, while the
/// client (on a true clock) still trusts its validity.
#[test]
fn expiry_runs_on_each_instances_own_clock() {
    let mut sim = sim();
    sim.set_server_clock(0, Clock::rate(3, 1));
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(3_400));
    assert_eq!(sim.holder(0), Some((None, None)));
    let expired_at = sim
        .log
        .iter()
        .rev()
        .find_map(|(at, event)| match event {
            Event::Holder {
                server: 0,
                holder: None,
                ..
            } => Some(*at),
            _ => None,
        })
        .expect("instance 0 expired the key");
    assert!(expired_at > millis(3_330) && expired_at < millis(3_340));
    assert_eq!(sim.leader_ids(), vec![a]);
}

/// A restart without persistence forgets the key; a second client then holds
/// its own majority while the first still trusts its validity: two leaders.
/// With persistence it does not.
#[test]
fn non_durable_restart_gives_two_majorities() {
    for durable in [false, true] {
        let mut sim = sim();
        let a = sim.add_client(1, Clock::default());
        sim.cut_link(a, 3);
        sim.cut_link(a, 4);
        // Two unanswered instances cost two 100 ms timeouts.
        sim.run_for(Duration::from_millis(300));
        assert_eq!(sim.leader_ids(), vec![a]);
        sim.restart_server(2, durable);
        let b = sim.add_client(2, Clock::default());
        sim.cut_link(b, 0);
        sim.cut_link(b, 1);
        sim.run_for(Duration::from_millis(500));
        if durable {
            assert_eq!(sim.leader_ids(), vec![a]);
        } else {
            assert_eq!(sim.leader_ids(), vec![a, b], "both hold a majority");
        }
    }
}

/// Leadership is a clock check: a client paused past its validity does not
/// lead when it wakes, even before any timer ran; and the next client takes
/// over only once the keys expired on the instances.
#[test]
fn validity_elapses_on_the_client_clock() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    let valid_until = sim.client(a).valid_until().expect("holds");
    sim.pause(a, Duration::from_secs(30));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(9));
    assert_eq!(
        sim.became_leader_at(b),
        None,
        "B waits for the keys to expire"
    );
    // The paused process still believes it leads: nothing has told it otherwise.
    assert_eq!(sim.leader_ids(), vec![a]);
    sim.run_for(Duration::from_secs(3));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert!(sim
        .client(a)
        .valid_until()
        .is_some_and(|until| until == valid_until));
    assert!(fenced_zoo::LockClient::leadership(sim.client(a), sim.client_now(a)).is_none());
}

/// A round trip longer than `redis_timeout` (120 ms against 100 ms): no
/// connection's prelude is ever answered in time, so no script ever runs,
/// and the client never leads; each timed-out connection is closed.
#[test]
fn a_round_trip_longer_than_the_timeout_never_connects() {
    let mut sim = sim();
    sim.latency = Duration::from_millis(60);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(5));
    assert!(sim.became_leader_at(a).is_none());
    let sent = |kind: fn(&RedisRequest) -> bool| sim.requests.iter().filter(|r| kind(&r.3)).count();
    assert!(sent(|r| matches!(r, RedisRequest::Hello { .. })) > 20);
    assert_eq!(
        sent(|r| matches!(r, RedisRequest::Close { .. })),
        sent(|r| matches!(r, RedisRequest::Hello { .. }))
    );
    assert_eq!(sent(|r| matches!(r, RedisRequest::Lock { .. })), 0);
    assert!(!sim.log.iter().any(|(_, event)| matches!(
        event,
        Event::Holder {
            holder: Some(_),
            ..
        }
    )));
}

/// A reply later than `redis_timeout` is never read: the call timed out,
/// its connection was closed (the `Close` follows the command), and the
/// reply that comes after is ignored — the instance did set the key.
#[test]
fn late_replies_are_ignored() {
    let settings = RedlockSettings {
        instances: 1,
        ..RedlockSettings::default()
    };
    let mut client = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let mut server = Redlock::new_server(&settings, 0);
    let start = Instant::from_secs(1);
    client.start(start);
    let hello = sent_request(&mut client);
    assert!(matches!(hello, RedisRequest::Hello { .. }));
    server.handle_request(ClientId(1), hello, start);
    let ready = reply(&mut server);
    client.handle_response(0, ready, start + Duration::from_millis(2));
    let lock = sent_request(&mut client);
    assert!(matches!(lock, RedisRequest::Lock { .. }));
    let deadline = client.next_timeout().expect("the call is bounded");
    assert_eq!(deadline, start + Duration::from_millis(102));
    client.handle_timeout(deadline);
    let close = sent_request(&mut client);
    assert_eq!(close, RedisRequest::Close { conn: lock.conn() });
    // The command arrives late, then the FIN: the key is set, the
    // connection closed; the answer reaches a client that stopped reading.
    server.handle_request(ClientId(1), lock, deadline);
    let late = reply(&mut server);
    server.handle_request(ClientId(1), close.clone(), deadline);
    assert!(matches!(late, RedisResponse::Lock { ok: true, .. }));
    assert!(server.key_at(deadline).is_some());
    client.handle_response(0, late, deadline + Duration::from_millis(1));
    assert!(client.leadership(deadline).is_none());
    // The unlock sweep after the failed try connects anew.
    let next = sent_request(&mut client);
    assert!(matches!(next, RedisRequest::Hello { conn } if conn != close.conn()));
}

/// An instance whose process dies resets the client's connection: a call
/// waiting on it fails at once, a connection reset while idle fails the
/// next call at once (redis-client's default `reconnect_attempts: false`:
/// no retry), and the call after that connects anew. A connect while the
/// instance is down is refused: the engine hands the client `Closed`.
#[test]
fn a_dead_instance_resets_the_connection_and_the_next_call_fails_once() {
    let settings = RedlockSettings {
        instances: 1,
        ..RedlockSettings::default()
    };
    let mut client = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let mut server = Redlock::new_server(&settings, 0);
    let mut now = Instant::from_secs(1);
    client.start(now);
    // Connect and lock: leader.
    let conn = exchange(&mut client, &mut server, now);
    while server.poll_output().is_some() {}
    while client.poll_output().is_some() {}
    assert!(client.leadership(now).is_some());
    assert!(matches!(
        client.last_lock(),
        Some(LockReturn::Locked { .. })
    ));
    // The instance dies while the client is idle: the kernel's reset.
    server.went_down();
    let reset = reply(&mut server);
    assert_eq!(reset, RedisResponse::Closed { conn });
    client.handle_response(0, reset, now);
    assert!(
        client.poll_output().is_none(),
        "hearing of the reset sends nothing"
    );
    // The extend: the call on the reset socket fails at once, with no
    // timeout waited and nothing sent for it; the failed extend unlocks
    // on a new connection.
    now = client.next_timeout().expect("the extend is due");
    client.handle_timeout(now);
    let unlock_hello = sent_request(&mut client);
    assert!(matches!(unlock_hello, RedisRequest::Hello { conn: c } if c > conn));
    assert!(
        client.leadership(now).is_some(),
        "validity left: it still leads"
    );
    // That connect is refused (the instance is still down).
    client.handle_response(
        0,
        RedisResponse::Closed {
            conn: unlock_hello.conn(),
        },
        now,
    );
    assert!(
        client.leadership(now).is_none(),
        "the extend failed: it stepped down"
    );
    // The next `lock` connects anew once the instance is back.
    now = client.next_timeout().expect("lock is called again");
    client.handle_timeout(now);
    server.restart(now, true);
    let hello = sent_request(&mut client);
    assert!(matches!(hello, RedisRequest::Hello { .. }));
    // A command on a connection from before the restart is reset, not run.
    server.handle_request(
        ClientId(2),
        RedisRequest::Unlock {
            conn: 9,
            id: 9,
            value: 1,
        },
        now,
    );
    assert_eq!(reply(&mut server), RedisResponse::Closed { conn: 9 });
}

/// Connects `client` to its one instance and makes its first call there:
/// the prelude and the lock script, each answered at `now`. Returns the
/// connection.
fn exchange(client: &mut RedlockClient, server: &mut RedisInstance, now: Instant) -> u64 {
    let hello = sent_request(client);
    let RedisRequest::Hello { conn } = hello else {
        panic!("a new connection's prelude first, not {hello:?}");
    };
    server.handle_request(ClientId(1), hello, now);
    client.handle_response(0, reply(server), now);
    let lock = sent_request(client);
    assert!(
        matches!(lock, RedisRequest::Lock { conn: c, .. } if c == conn),
        "{lock:?}"
    );
    server.handle_request(ClientId(1), lock, now);
    client.handle_response(0, reply(server), now);
    conn
}

/// A killed client's kernel closes its connection: the instance drops it,
/// and a command arriving on it after the FIN is reset, never run.
#[test]
fn a_killed_clients_kernel_closes_its_connections() {
    let settings = RedlockSettings {
        instances: 1,
        ..RedlockSettings::default()
    };
    let mut client = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let mut server = Redlock::new_server(&settings, 0);
    let now = Instant::from_secs(1);
    client.start(now);
    let conn = exchange(&mut client, &mut server, now);
    while server.poll_output().is_some() {}
    while client.poll_output().is_some() {}
    client.kernel_closed(now);
    let fin = sent_request(&mut client);
    assert_eq!(fin, RedisRequest::Close { conn });
    assert!(client.poll_output().is_none(), "one connection, one FIN");
    server.handle_request(ClientId(1), fin, now);
    assert!(server.poll_output().is_none(), "a FIN is not answered");
    server.handle_request(
        ClientId(1),
        RedisRequest::Unlock {
            conn,
            id: 99,
            value: 1,
        },
        now,
    );
    assert_eq!(reply(&mut server), RedisResponse::Closed { conn });
}

/// The request the client sends next (skipping no other output kind).
fn sent_request(client: &mut RedlockClient) -> RedisRequest {
    loop {
        match client.poll_output() {
            Some(ClientOutput::Send { request, .. }) => return request,
            Some(_) => continue,
            None => panic!("the client sent nothing"),
        }
    }
}

/// The instance's next reply.
fn reply(server: &mut RedisInstance) -> RedisResponse {
    loop {
        match server.poll_output() {
            Some(ServerOutput::Reply { response, .. }) => return response,
            Some(_) => continue,
            None => panic!("the instance answered nothing"),
        }
    }
}

/// Stop: leadership ends at once and the value is unlocked everywhere.
#[test]
fn stop_unlocks() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    sim.stop(a);
    assert_eq!(sim.lost_leadership(a).map(|(_, r)| r), Some("stopped"));
    sim.run_for(Duration::from_millis(100));
    for index in 0..5 {
        assert_eq!(sim.holder(index), Some((None, None)));
    }
    let _ = secs(0);
}

/// Settings the model rejects, with the setting named.
#[test]
fn settings_validation() {
    let bad = |change: fn(&mut RedlockSettings)| {
        let mut settings = RedlockSettings::default();
        change(&mut settings);
        Redlock::validate(&settings).unwrap_err()
    };
    assert!(matches!(
        bad(|s| s.instances = 0),
        SettingsError::Invalid {
            setting: "instances",
            ..
        }
    ));
    assert_eq!(
        bad(|s| s.ttl = Duration::ZERO),
        SettingsError::Zero { setting: "ttl" }
    );
    assert!(matches!(
        bad(|s| s.ttl = Duration::from_millis(2)),
        SettingsError::Invalid { setting: "ttl", .. }
    ));
    assert!(matches!(
        bad(|s| s.extend_interval = Duration::from_secs(10)),
        SettingsError::NotGreater { setting: "ttl", .. }
    ));
    assert_eq!(
        bad(|s| s.redis_timeout = Duration::ZERO).to_string(),
        "redis_timeout must be greater than zero"
    );
    assert_eq!(Redlock::validate(&RedlockSettings::default()), Ok(()));
    assert_eq!(RedlockSettings::default().quorum(), 3);
    assert_eq!(RedlockSettings::default().drift_ms(), 102);
    let server = Redlock::new_server(&RedlockSettings::default(), 0);
    assert_eq!(server.next_timeout(), None);
}
