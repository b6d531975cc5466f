//! Contract tests of the Redlock model (redlock-rb over N Redis instances).

mod common;

use std::time::Duration;

use common::{millis, secs, Clock, Event, Sim};
use fenced_zoo::redlock::{
    LockReturn, RedisInstance, RedisRequest, RedisResponse, RedisScript, Redlock, RedlockClient,
    RedlockSettings,
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
    // Every value tried on instance 0 is unlocked there (the first try's
    // lock script goes out twice: `NOSCRIPT`, then again after the reload).
    let values_to_0 = |unlock: bool| {
        sim.requests
            .iter()
            .filter_map(|(_, _, to, request)| match request {
                RedisRequest::Lock { value, .. } if *to == 0 && !unlock => Some(*value),
                RedisRequest::Unlock { value, .. } if *to == 0 && unlock => Some(*value),
                _ => None,
            })
            .collect::<std::collections::BTreeSet<u128>>()
    };
    assert!(values_to_0(false).len() > 1);
    assert_eq!(
        values_to_0(true),
        values_to_0(false),
        "every failed round unlocks"
    );
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
    // Five fresh instances in turn, each a new connection's prelude, the
    // lock script (`NOSCRIPT`), three `SCRIPT LOAD`s and the lock script
    // again: six round trips of 10 ms, so the round ends at 300 ms.
    sim.run_until(millis(300));
    assert_eq!(sim.became_leader_at(a), Some(millis(300)));
    let validity_ms = 10_000 - 300 - (10_000 / 100 + 2);
    assert_eq!(
        sim.client(a).valid_until(),
        Some(fenced_zoo::Instant::from_millis(300 + validity_ms))
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
    // Set 11 ms in (1 ms each way: the prelude, the lock script's
    // `NOSCRIPT`, three `SCRIPT LOAD`s, the lock script again), gone
    // 10 s / 3 of real time later.
    assert!(expired_at > millis(3_343) && expired_at < millis(3_346));
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
    let settings = one_instance();
    let mut client = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let mut server = Redlock::new_server(&settings, 0);
    let start = Instant::from_secs(1);
    load_scripts(&mut server, start);
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
    let settings = one_instance();
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
/// the prelude, then the lock script — on a fresh instance `NOSCRIPT`, the
/// three `SCRIPT LOAD`s and the lock script again — each answered at
/// `now`. Returns the connection.
fn exchange(client: &mut RedlockClient, server: &mut RedisInstance, now: Instant) -> u64 {
    let hello = sent_request(client);
    let RedisRequest::Hello { conn } = hello else {
        panic!("a new connection's prelude first, not {hello:?}");
    };
    server.handle_request(ClientId(1), hello, now);
    client.handle_response(0, reply(server), now);
    loop {
        let request = sent_request(client);
        assert_eq!(request.conn(), conn, "{request:?}");
        server.handle_request(ClientId(1), request, now);
        let answer = reply(server);
        let done = matches!(answer, RedisResponse::Lock { .. });
        client.handle_response(0, answer, now);
        if done {
            return conn;
        }
    }
}

/// Loads redlock-rb's three scripts into `server`'s cache, as another
/// client's `load_scripts` would have.
fn load_scripts(server: &mut RedisInstance, now: Instant) {
    server.handle_request(ClientId(99), RedisRequest::Hello { conn: 1 }, now);
    for (id, script) in (1..).zip(RedisScript::LOAD_ORDER) {
        server.handle_request(
            ClientId(99),
            RedisRequest::ScriptLoad {
                conn: 1,
                id,
                script,
            },
            now,
        );
    }
    while server.poll_output().is_some() {}
}

/// The first `EVALSHA` on a fresh instance meets `NOSCRIPT`: redlock-rb's
/// `recover_from_script_flush` sends `load_scripts`' three `SCRIPT LOAD`s
/// in turn (unlock, lock, pttl), each bounded by `redis_timeout`, then the
/// `EVALSHA` again, on the same connection. The cache is the instance's:
/// a second client's first call runs at once. A restart empties it (Redis
/// 7 persists no scripts; measured: after a SIGKILL and an AOF start the
/// key was back and `EVALSHA` answered `NOSCRIPT`), so the first call
/// after it reloads again.
#[test]
fn the_first_call_to_a_fresh_or_restarted_instance_reloads_the_scripts() {
    let settings = one_instance();
    let mut server = Redlock::new_server(&settings, 0);
    let mut a = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let mut now = Instant::from_secs(1);
    a.start(now);
    let hello = sent_request(&mut a);
    server.handle_request(ClientId(1), hello, now);
    a.handle_response(0, reply(&mut server), now);
    let mut sent = Vec::new();
    loop {
        assert_eq!(
            a.next_timeout(),
            Some(now + settings.redis_timeout),
            "each step is bounded on its own"
        );
        let request = sent_request(&mut a);
        now = now + Duration::from_millis(1);
        server.handle_request(ClientId(1), request.clone(), now);
        sent.push(request);
        let answer = reply(&mut server);
        let done = matches!(answer, RedisResponse::Lock { .. });
        a.handle_response(0, answer, now);
        if done {
            break;
        }
    }
    let scripts: Vec<_> = sent
        .iter()
        .filter_map(|request| match request {
            RedisRequest::ScriptLoad { script, .. } => Some(*script),
            _ => None,
        })
        .collect();
    assert_eq!(scripts, RedisScript::LOAD_ORDER);
    assert_eq!(
        sent.len(),
        5,
        "EVALSHA, three SCRIPT LOADs, EVALSHA: {sent:?}"
    );
    assert!(matches!(sent[0], RedisRequest::Lock { .. }));
    assert!(matches!(sent[4], RedisRequest::Lock { .. }));
    assert_eq!(sent[0].conn(), sent[4].conn());
    assert!(a.leadership(now).is_some(), "the retried lock succeeded");

    // A second client's first call finds the scripts cached.
    assert!(matches!(
        first_answer(&settings, &mut server, 2, now),
        RedisResponse::Lock { ok: false, .. }
    ));

    // A durable restart keeps the key and empties the cache.
    server.restart(now, true);
    assert!(server.key_at(now).is_some());
    assert!(matches!(
        first_answer(&settings, &mut server, 3, now),
        RedisResponse::NoScript { .. }
    ));
}

/// A new client `id` connects to `server` and makes its first call: the
/// instance's answer to the lock script.
fn first_answer(
    settings: &RedlockSettings,
    server: &mut RedisInstance,
    id: u32,
    now: Instant,
) -> RedisResponse {
    let mut client = Redlock::new_client(settings, ClientId(id), "client", u64::from(id));
    client.start(now);
    let hello = sent_request(&mut client);
    server.handle_request(ClientId(id), hello, now);
    client.handle_response(0, reply(server), now);
    let lock = sent_request(&mut client);
    server.handle_request(ClientId(id), lock, now);
    reply(server)
}

/// `recover_from_script_flush` retries once: a second `NOSCRIPT` is
/// raised — a `CommandError`, which `lock_instances` counts as an error —
/// and, unlike a timeout, leaves the connection open: the unlock sweep
/// goes out on it.
#[test]
fn a_second_noscript_is_an_error_on_a_connection_kept_open() {
    let settings = one_instance();
    let mut client = Redlock::new_client(&settings, ClientId(1), "a", 1);
    let now = Instant::from_secs(1);
    client.start(now);
    let RedisRequest::Hello { conn } = sent_request(&mut client) else {
        panic!("a prelude first");
    };
    client.handle_response(0, RedisResponse::Hello { conn }, now);
    let answer_noscript = |client: &mut RedlockClient| {
        let RedisRequest::Lock { id, .. } = sent_request(client) else {
            panic!("the lock script");
        };
        client.handle_response(0, RedisResponse::NoScript { conn, id }, now);
    };
    answer_noscript(&mut client);
    for script in RedisScript::LOAD_ORDER {
        let request = sent_request(&mut client);
        let RedisRequest::ScriptLoad { id, script: s, .. } = request else {
            panic!("a SCRIPT LOAD, not {request:?}");
        };
        assert_eq!(s, script);
        client.handle_response(0, RedisResponse::ScriptLoaded { conn, id }, now);
    }
    answer_noscript(&mut client);
    let unlock = sent_request(&mut client);
    assert!(
        matches!(unlock, RedisRequest::Unlock { conn: c, .. } if c == conn),
        "the failed try unlocks on the same connection: {unlock:?}"
    );
}

/// A killed client's kernel closes its connection: the instance drops it,
/// and a command arriving on it after the FIN is reset, never run.
#[test]
fn a_killed_clients_kernel_closes_its_connections() {
    let settings = one_instance();
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

/// redlock-rb's defaults over a single instance: one call per round.
fn one_instance() -> RedlockSettings {
    RedlockSettings {
        instances: 1,
        ..RedlockSettings::default()
    }
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
