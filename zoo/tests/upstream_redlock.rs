//! redlock-rb's own `spec/client_spec.rb` (leandromoreira/redlock-rb at
//! f176e57), ported as contract tests of the Redlock model.
//!
//! The spec's `lock_manager` is `Redlock::Client.new(DEFAULT_REDIS_URLS,
//! retry_count: 3)`: **one** instance, `ttl` 1000 ms; a few cases build
//! clients of three instances. Its `lock_manager.lock(...)` is a model
//! client's `lock` call, whose return is [`RedlockClient::last_lock`];
//! `unlock` is the client's `stop`; `be_lockable` is a fresh client's first
//! `lock` returning lock information. The model's leader loop calls `lock`
//! again after a `false` and extends a held lock (every 500 ms for the
//! 1000 ms TTL); each case looks at the first call. An `unreachable_redis`
//! is an instance whose link is cut: redis-client's timeout is the error
//! `lock_instances` rescues and counts. The queries
//! (`get_remaining_ttl_*`, `locked?`, `valid_lock?`) are
//! `fenced_zoo::redlock::query` over the instances' `PTTL_SCRIPT` answers.
//!
//! Cases the model cannot express:
//!
//! * `describe 'initialize'` (4 cases: URLs and Redis objects, ConnectionPool
//!   objects, configuration hashes, "does not load scripts"): connection
//!   objects and the script cache are not modelled.
//! * `context 'when script cache has been flushed'` (4 cases): the `NOSCRIPT`
//!   reload path is left out (module docs).
//! * `'accepts retry_delay as proc'`: the model's `retry_delay` is a
//!   duration, not a function of the attempt number.
//! * `'when extend_life flag is given'` and `'when extend_only_if_life flag is
//!   given'`: deprecated option names and their warnings; the model has the
//!   one setting `extend_only_if_locked`. (Upstream renames them only after
//!   `try_lock_instances` has run, so the very call that passes them ignores
//!   them; the specs pass because the lock is held by the caller anyway.)
//! * `describe 'block syntax'` (7 cases) and the block cases of `lock!`
//!   (`'locks'`, `"returns the received block's return value"`,
//!   `'automatically unlocks'`, `'... when block raises exception'`,
//!   `'passes the extension parameter'`): Ruby control flow around `lock`
//!   and `unlock`, whose outcomes the `lock`/`unlock` cases below cover.
//!   `lock!`'s `'raises a LockError'` and `'does not execute the block'` are
//!   ported: `lock!` raises exactly when `lock` returns `false`.
//! * `'#default_time_source'`, `'when CLOCK_MONOTONIC is not available'`: the
//!   driver passes the clock the model declares; there is no fallback.

mod common;

use std::time::Duration;

use common::{millis, Clock, Sim};
use fenced_zoo::redlock::query::{counts_as_locked, remaining_ttl, remaining_ttl_for_lock};
use fenced_zoo::redlock::{
    LockReturn, RedisInstance, RedisRequest, RedisResponse, RedisScript, Redlock, RedlockClient,
    RedlockSettings,
};
use fenced_zoo::{
    ClientId, ClientOutput, ClockKind, Instant, LockClient, LockServer, Protocol, ServerOutput,
};

/// The spec's `ttl`.
const TTL_MS: u64 = 1000;

/// The spec's `'hello world'` and `'gibberish'` lock values, as bytes.
const HELLO_WORLD: u128 = 0x0068_656c_6c6f_2077_6f72_6c64;
const GIBBERISH: u128 = 0x0067_6962_6265_7269_7368;

/// A row: the case, the unreachable instances, the expected return.
type Row = (&'static str, &'static [u16], fn(LockReturn) -> bool);

/// `Redlock::Client.new(servers, retry_count: 3)` locking for `ttl_ms`.
fn manager(instances: u16, ttl_ms: u64) -> RedlockSettings {
    RedlockSettings {
        instances,
        ttl: Duration::from_millis(ttl_ms),
        extend_interval: Duration::from_millis(ttl_ms / 2),
        retry_count: 3,
        ..RedlockSettings::default()
    }
}

fn sim(settings: RedlockSettings) -> Sim<Redlock> {
    Sim::new(settings)
}

/// Runs until `client`'s first `lock` call returns (at most 5 s).
fn first_lock(sim: &mut Sim<Redlock>, client: ClientId) -> LockReturn {
    let returned = sim.run_until_cond(Duration::from_secs(5), |sim| {
        sim.client(client).last_lock().is_some()
    });
    assert!(returned, "lock returned");
    sim.client(client).last_lock().expect("returned")
}

/// Starts client `id` and returns what its first `lock` returned.
fn lock(sim: &mut Sim<Redlock>, id: u32) -> (ClientId, LockReturn) {
    let client = sim.add_client(id, Clock::default());
    (client, first_lock(sim, client))
}

/// `be_lockable`: a fresh client's `lock` returns lock information (it is
/// then unlocked, as the matcher's `ensure` does).
fn lockable(sim: &mut Sim<Redlock>, id: u32) -> bool {
    let (client, returned) = lock(sim, id);
    sim.stop(client);
    sim.run_for(Duration::from_millis(20));
    matches!(returned, LockReturn::Locked { .. })
}

fn value_of(returned: LockReturn) -> u128 {
    match returned {
        LockReturn::Locked { value, .. } => value,
        other => panic!("lock information expected, got {other:?}"),
    }
}

/// The instances' `PTTL_SCRIPT` answers now (`None` for a cut instance, as
/// `get_remaining_ttl` rescues the connection error into `nil`).
fn pttl_answers(sim: &Sim<Redlock>, cut: &[u16]) -> Vec<Option<(u128, u64)>> {
    (0..sim.servers.len() as u16)
        .map(|index| {
            if cut.contains(&index) {
                None
            } else {
                sim.server(index).pttl(sim.server_now(index))
            }
        })
        .collect()
}

fn quorum(sim: &Sim<Redlock>) -> u16 {
    sim.settings.quorum()
}

/// `get_remaining_ttl_for_resource` now, all asked at once (elapsed 0).
fn remaining_for_resource(sim: &Sim<Redlock>, cut: &[u16]) -> Option<i64> {
    let answers = pttl_answers(sim, cut);
    remaining_ttl(quorum(sim), &answers, 0).map(|remaining| remaining.ttl_ms)
}

/// `get_remaining_ttl_for_lock(lock_info)` now.
fn remaining_for_lock(sim: &Sim<Redlock>, value: u128) -> Option<i64> {
    let answers = pttl_answers(sim, &[]);
    remaining_ttl_for_lock(quorum(sim), value, &answers, 0)
}

/// The values of `client`'s tries, with the delivery time of each try's
/// first `Lock` and of its last `Unlock` (global ns), in order.
fn tries(sim: &Sim<Redlock>, client: ClientId) -> Vec<(u128, u64, Option<u64>)> {
    let mut tries: Vec<(u128, u64, Option<u64>)> = Vec::new();
    for (at, from, _, request) in &sim.requests {
        if *from != client {
            continue;
        }
        match request {
            RedisRequest::Lock { value, .. } if tries.last().is_none_or(|t| t.0 != *value) => {
                tries.push((*value, *at, None));
            }
            RedisRequest::Unlock { value, .. } => {
                if let Some(last) = tries.iter_mut().rev().find(|t| t.0 == *value) {
                    last.2 = Some(*at);
                }
            }
            _ => {}
        }
    }
    tries
}

/// The sleeps between tries: from the end of a try's unlock sweep (its last
/// `Unlock` delivered + 1 ms answer) to the next try's first `Lock` sent
/// (delivered − 1 ms).
fn sleeps(sim: &Sim<Redlock>, client: ClientId) -> Vec<u64> {
    let tries = tries(sim, client);
    tries
        .windows(2)
        .map(|pair| {
            let unlocked = pair[0].2.expect("a failed try unlocks") + millis(1);
            pair[1].1 - millis(1) - unlocked
        })
        .collect()
}

/// Drives one client alone at zero latency against `servers`, delivering
/// every message at once and jumping to its timers, until `done`.
fn drive_alone(
    client: &mut RedlockClient,
    servers: &mut [RedisInstance],
    mut now: Instant,
    done: impl Fn(&RedlockClient) -> bool,
) -> Instant {
    for _ in 0..10_000 {
        while let Some(output) = client.poll_output() {
            let ClientOutput::Send { to, request } = output else {
                continue;
            };
            let server = &mut servers[usize::from(to)];
            server.handle_request(client.id(), request, now);
            let replies: Vec<RedisResponse> = std::iter::from_fn(|| server.poll_output())
                .filter_map(|output| match output {
                    ServerOutput::Reply { response, .. } => Some(response),
                    ServerOutput::Holder { .. } => None,
                })
                .collect();
            for reply in replies {
                client.handle_response(to, reply, now);
            }
        }
        if done(client) {
            return now;
        }
        now = client
            .next_timeout()
            .expect("a client that is not done waits");
        client.handle_timeout(now);
    }
    panic!("the client did not finish");
}

/// `lock(resource, ttl, extend: { value: value }, extend_only_if_locked:)`
/// by a fresh client on `servers`; what it returned.
fn extend_with(servers: &mut [RedisInstance], value: u128, only_if_locked: bool) -> LockReturn {
    let settings = RedlockSettings {
        extend_only_if_locked: only_if_locked,
        ..manager(servers.len() as u16, TTL_MS)
    };
    let mut client = Redlock::new_client(&settings, ClientId(7), "extender", 7);
    let now = Instant::from_secs(1);
    client.start_extending(value, now);
    drive_alone(&mut client, servers, now, |c| c.last_lock().is_some());
    client.last_lock().expect("returned")
}

fn instances(n: u16) -> Vec<RedisInstance> {
    (0..n).map(RedisInstance::new).collect()
}

/// `lock` / `when lock is available` / `when redis connection error occurs`,
/// both cases: of three instances, one unreachable still leaves a quorum
/// (`be_truthy`); two unreachable leave none, and after its tries `lock`
/// raises `LockAcquisitionError` with two errors.
#[test]
fn lock_with_unreachable_instances() {
    let rows: [Row; 2] = [
        (
            "locks if majority of redis instances are available",
            &[2],
            |r| matches!(r, LockReturn::Locked { .. }),
        ),
        (
            "fails to acquire a lock if majority of Redis instances are not available",
            &[1, 2],
            |r| r == LockReturn::Raised { errors: 2 },
        ),
    ];
    for (name, unreachable, expected) in rows {
        let mut sim = sim(manager(3, TTL_MS));
        let client = ClientId(1);
        for index in unreachable {
            sim.cut_link(client, *index);
        }
        let (_, returned) = lock(&mut sim, 1);
        assert!(expected(returned), "{name}: {returned:?}");
    }
}

/// `'locks'`: once locked, the resource is not lockable by another client.
#[test]
fn locks() {
    let mut sim = sim(manager(1, TTL_MS));
    let (_, returned) = lock(&mut sim, 1);
    assert!(matches!(returned, LockReturn::Locked { .. }));
    assert!(!lockable(&mut sim, 2));
}

/// `'returns lock information'`: `{ validity:, resource:, value: }`, the
/// validity being `ttl - time_elapsed - drift(ttl)`: six round trips of 2
/// ms (a new connection's prelude; the script, `NOSCRIPT` on a fresh
/// instance; `load_scripts`' three `SCRIPT LOAD`s; the script again), drift
/// `(1000 * 0.01).to_i + 2` = 12 ms.
#[test]
fn returns_lock_information() {
    let mut sim = sim(manager(1, TTL_MS));
    let (_, returned) = lock(&mut sim, 1);
    let LockReturn::Locked { value, validity_ms } = returned else {
        panic!("lock information: {returned:?}");
    };
    assert_eq!(validity_ms, TTL_MS - 12 - 12);
    assert_eq!(
        sim.server(0).key_at(sim.server_now(0)).map(|(v, _)| v),
        Some(value)
    );
}

/// `'interprets lock time as milliseconds'`: a `ttl` of 20000 leaves the key
/// a `PTTL` within 200 of 20000.
#[test]
fn interprets_lock_time_as_milliseconds() {
    let mut sim = sim(manager(1, 20_000));
    lock(&mut sim, 1);
    let (_, pttl) = sim.server(0).pttl(sim.server_now(0)).expect("the key");
    assert!(pttl.abs_diff(20_000) <= 200, "PTTL {pttl}");
}

/// `'can extend its own lock'`: `lock(extend: my_lock_info)` returns lock
/// information with the same value.
#[test]
fn can_extend_its_own_lock() {
    let mut sim = sim(manager(1, TTL_MS));
    let (client, first) = lock(&mut sim, 1);
    let mine = value_of(first);
    sim.run_for(Duration::from_millis(600));
    let extends = sim
        .requests
        .iter()
        .filter(|(at, from, _, r)| {
            *from == client
                && *at > millis(400)
                && matches!(r, RedisRequest::Lock { value, .. } if *value == mine)
        })
        .count();
    assert!(extends >= 1, "an extend was sent");
    assert_eq!(value_of(sim.client(client).last_lock().unwrap()), mine);
}

/// `'when extend param is nil'`, `'defaults to creating a new lock'`: a new
/// random value (`SecureRandom.uuid`) per lock.
#[test]
fn without_extend_a_new_lock_has_a_new_value() {
    let mut sim = sim(manager(1, TTL_MS));
    let (a, first) = lock(&mut sim, 1);
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    let (_, second) = lock(&mut sim, 2);
    assert_ne!(value_of(first), value_of(second));
}

/// `'when extend_only_if_locked flag is given'`, `'does not extend a
/// non-existent lock'`: `lock(extend: {value: 'hello world'},
/// extend_only_if_locked: true)` on a free resource returns false.
#[test]
fn extend_only_if_locked_does_not_extend_a_non_existent_lock() {
    let mut servers = instances(1);
    assert_eq!(
        extend_with(&mut servers, HELLO_WORLD, true),
        LockReturn::False
    );
    assert_eq!(servers[0].key_at(Instant::from_secs(1)), None);
}

/// `'(when extending) resets the TTL, rather than adding extra time to it'`:
/// an extend with `extend_only_if_locked` leaves a `PTTL` within 200 of the
/// TTL (20000), not the TTL plus what was left.
#[test]
fn extending_resets_the_ttl() {
    let settings = RedlockSettings {
        extend_only_if_locked: true,
        ..manager(1, 20_000)
    };
    let mut sim = sim(settings);
    let (client, first) = lock(&mut sim, 1);
    assert!(!lockable(&mut sim, 2));
    // The model's loop extends `extend_interval` (10 s) after the lock
    // returned (at 12 ms: a fresh instance's `NOSCRIPT` and reload); look
    // just after the extend returned.
    sim.run_until(millis(10_020));
    assert!(
        sim.requests
            .iter()
            .any(|(at, from, ..)| *from == client && *at > millis(10_000)),
        "the extend ran"
    );
    let after = sim.client(client).last_lock().unwrap();
    assert_eq!(value_of(after), value_of(first), "extended, not relocked");
    let (_, pttl) = sim.server(0).pttl(sim.server_now(0)).expect("the key");
    assert!(pttl.abs_diff(20_000) <= 200, "PTTL {pttl}");
}

/// `'when extend_only_if_locked flag is not given'`, `'sets the given value
/// when trying to extend a non-existent lock'`: lock information with the
/// given value — which is also what the instance holds.
#[test]
fn extend_without_the_flag_sets_the_given_value() {
    let mut servers = instances(1);
    let returned = extend_with(&mut servers, HELLO_WORLD, false);
    assert_eq!(value_of(returned), HELLO_WORLD);
    let held = servers[0]
        .key_at(Instant::from_secs(1))
        .map(|(value, _)| value);
    assert_eq!(held, Some(HELLO_WORLD));
}

/// `"doesn't extend somebody else's lock"` (lock available) and `'returns
/// false'` (lock not available): a second `lock` while another holds it
/// returns false.
#[test]
fn a_second_lock_returns_false() {
    for name in [
        "doesn't extend somebody else's lock",
        "when lock is not available: returns false",
    ] {
        let mut sim = sim(manager(1, TTL_MS));
        lock(&mut sim, 1);
        let (_, second) = lock(&mut sim, 2);
        assert_eq!(second, LockReturn::False, "{name}");
    }
}

/// `"can't extend somebody else's lock"`: `lock(extend: another's lock_info
/// merged with value: 'gibberish')` returns false, and the other's key is
/// untouched.
#[test]
fn cannot_extend_somebody_elses_lock() {
    let mut servers = instances(1);
    let now = Instant::from_secs(1);
    let another = 42;
    servers[0].handle_request(ClientId(1), RedisRequest::Hello { conn: 1 }, now);
    servers[0].handle_request(
        ClientId(1),
        RedisRequest::ScriptLoad {
            conn: 1,
            id: 1,
            script: RedisScript::Lock,
        },
        now,
    );
    servers[0].handle_request(
        ClientId(1),
        RedisRequest::Lock {
            conn: 1,
            id: 2,
            value: another,
            ttl_ms: TTL_MS,
            allow_new: true,
        },
        now,
    );
    while servers[0].poll_output().is_some() {}
    assert_eq!(
        extend_with(&mut servers, GIBBERISH, false),
        LockReturn::False
    );
    assert_eq!(servers[0].key_at(now).map(|(v, _)| v), Some(another));
}

/// `context 'when lock is not available'`: the retry cases. `lock` makes
/// `retry_count + 1` tries (a call's `retry_count` option prioritized, here
/// a client's setting), sleeping `retry_count` times, each sleep at least
/// `retry_delay` and below `retry_delay + retry_jitter` (`rand(retry_jitter)`
/// is below the jitter), options prioritized over the defaults.
#[test]
fn retries_when_the_lock_is_not_available() {
    // (case, retry_count, retry_delay ms, retry_jitter ms, tries, sleeps)
    let rows: [(&str, u32, u64, u64, usize, usize); 7] = [
        ("tries up to 'retry_count' + 1 times", 3, 200, 50, 4, 3),
        ("sleeps in between retries", 3, 200, 50, 4, 3),
        (
            "sleeps at least the specified retry_delay in milliseconds",
            3,
            200,
            50,
            4,
            3,
        ),
        (
            "sleeps a maximum of retry_delay + retry_jitter in milliseconds",
            3,
            200,
            50,
            4,
            3,
        ),
        (
            "when retry_count is given: prioritizes the retry_count in option",
            1,
            200,
            50,
            2,
            1,
        ),
        (
            "when retry_delay is given: prioritizes the retry_delay in option",
            3,
            300,
            50,
            4,
            3,
        ),
        (
            "when retry_jitter is given: prioritizes the retry_jitter in option",
            3,
            200,
            60,
            4,
            3,
        ),
    ];
    for (name, retry_count, delay_ms, jitter_ms, expected_tries, expected_sleeps) in rows {
        let mut sim = sim(manager(1, TTL_MS));
        lock(&mut sim, 1);
        let settings = RedlockSettings {
            retry_count,
            retry_delay: Duration::from_millis(delay_ms),
            retry_jitter: Duration::from_millis(jitter_ms),
            ..manager(1, TTL_MS)
        };
        let b = sim.add_client_with(2, Clock::default(), &settings);
        assert_eq!(first_lock(&mut sim, b), LockReturn::False, "{name}");
        // Only the first `lock` call: it returned just now.
        let returned_at = sim.now;
        let tries: Vec<_> = tries(&sim, b)
            .into_iter()
            .filter(|t| t.1 <= returned_at)
            .collect();
        assert_eq!(tries.len(), expected_tries, "{name}: tries");
        let sleeps: Vec<u64> = sleeps(&sim, b)
            .into_iter()
            .take(expected_tries - 1)
            .collect();
        assert_eq!(sleeps.len(), expected_sleeps, "{name}: sleeps");
        for sleep in sleeps {
            assert!(sleep >= millis(delay_ms), "{name}: slept {sleep} ns");
            assert!(
                sleep < millis(delay_ms + jitter_ms),
                "{name}: slept {sleep} ns"
            );
        }
    }
}

/// `'when a server goes away'`, `'raises an error on connection issues'`,
/// and `'when a server comes back'`, `'recovers from connection issues'`:
/// with the one instance unreachable `lock` raises `LockAcquisitionError`
/// with one error; once it is back, `lock` succeeds.
#[test]
fn a_server_goes_away_and_comes_back() {
    let mut sim = sim(manager(1, TTL_MS));
    let client = ClientId(1);
    sim.cut(client);
    let (_, returned) = lock(&mut sim, 1);
    assert_eq!(
        returned,
        LockReturn::Raised { errors: 1 },
        "raises an error on connection issues"
    );
    sim.heal(client);
    let recovered = sim.run_until_cond(Duration::from_secs(5), |sim| {
        matches!(
            sim.client(client).last_lock(),
            Some(LockReturn::Locked { .. })
        )
    });
    assert!(recovered, "recovers from connection issues");
}

/// `describe 'unlock'`, `'unlocks'`: locked, the resource is not lockable;
/// after `unlock` it is.
#[test]
fn unlock_unlocks() {
    let mut sim = sim(manager(1, TTL_MS));
    let (a, _) = lock(&mut sim, 1);
    assert!(!lockable(&mut sim, 2));
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    assert!(lockable(&mut sim, 3));
}

/// `describe 'lock!'`, `'when lock is not available'`: `'raises a LockError'`
/// — `lock!` raises `LockError` exactly when `lock` returns `false` (a
/// `LockAcquisitionError` would pass through instead) — and `'does not
/// execute the block'`: the client never acts as the lock's holder.
#[test]
fn lock_bang_when_not_available() {
    let mut sim = sim(manager(1, TTL_MS));
    lock(&mut sim, 1);
    let (b, returned) = lock(&mut sim, 2);
    assert_eq!(returned, LockReturn::False, "raises a LockError");
    assert!(
        sim.became_leader_at(b).is_none(),
        "does not execute the block"
    );
}

/// `describe 'get_remaining_ttl_for_resource'`: valid lock (ttl 20000) →
/// within 300 of 20000; after unlock → nil; one instance unreachable → nil,
/// no error; the instance back → truthy.
#[test]
fn get_remaining_ttl_for_resource() {
    let mut sim = sim(manager(1, 20_000));
    let (a, _) = lock(&mut sim, 1);
    let remaining = remaining_for_resource(&sim, &[]).expect("gets the remaining ttl of a lock");
    assert!(remaining.abs_diff(20_000) <= 300, "{remaining}");
    assert_eq!(
        remaining_for_resource(&sim, &[0]),
        None,
        "server goes away: nil"
    );
    assert!(
        remaining_for_resource(&sim, &[]).is_some(),
        "a server comes back: recovers"
    );
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    assert_eq!(
        remaining_for_resource(&sim, &[]),
        None,
        "when lock is not valid: nil"
    );
}

/// `'when servers respond with varying ttls'`, `'returns the minimum ttl
/// value'`: three instances answering 20000, 15000 and 10000 ms for the
/// lock's value give the TTL a quorum (2) is sure of, 15000, less elapsed
/// time and drift — within 300 of 15000.
#[test]
fn varying_ttls_give_the_quorums_minimum() {
    let value = 9;
    let answers = [
        Some((value, 20_000)),
        Some((value, 15_000)),
        Some((value, 10_000)),
    ];
    let remaining = remaining_ttl_for_lock(2, value, &answers, 0).expect("a quorum holds it");
    assert!(remaining.abs_diff(15_000) <= 300, "{remaining}");
}

/// `describe 'get_remaining_ttl_for_lock'`: valid (ttl 20000) → within 300
/// of 20000; after unlock → nil.
#[test]
fn get_remaining_ttl_for_lock() {
    let mut sim = sim(manager(1, 20_000));
    let (a, returned) = lock(&mut sim, 1);
    let value = value_of(returned);
    let remaining = remaining_for_lock(&sim, value).expect("gets the remaining ttl of a lock");
    assert!(remaining.abs_diff(20_000) <= 300, "{remaining}");
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    assert_eq!(
        remaining_for_lock(&sim, value),
        None,
        "when lock is not valid: nil"
    );
}

/// `describe 'locked?'` and `describe 'valid_lock?'`, each `'returns true'`
/// while locked and `'returns false'` after unlock.
#[test]
fn locked_and_valid_lock() {
    let mut sim = sim(manager(1, TTL_MS));
    let (a, returned) = lock(&mut sim, 1);
    let value = value_of(returned);
    assert!(
        counts_as_locked(remaining_for_resource(&sim, &[])),
        "locked?: true"
    );
    assert!(
        counts_as_locked(remaining_for_lock(&sim, value)),
        "valid_lock?: true"
    );
    sim.stop(a);
    sim.run_for(Duration::from_millis(10));
    assert!(
        !counts_as_locked(remaining_for_resource(&sim, &[])),
        "locked?: false"
    );
    assert!(
        !counts_as_locked(remaining_for_lock(&sim, value)),
        "valid_lock?: false"
    );
}

/// `describe '#default_time_source'`, `'when CLOCK_MONOTONIC is available'`:
/// the client times its attempts by `Process.clock_gettime(CLOCK_MONOTONIC)`.
#[test]
fn default_time_source_is_monotonic() {
    assert_eq!(Redlock::CLIENT_CLOCK, ClockKind::Monotonic);
}
