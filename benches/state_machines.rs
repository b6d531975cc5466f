//! Criterion benches of the state machines' hot paths.
//!
//! * `lease_renew`: a same-holder renewal with 1, 1 000 and 100 000 roles, next
//!   to its floor, a bare `BTreeMap<Role, (u64, Instant)>` `get_mut` and update
//!   on the same keys in the same order. Target (issue 2): the store within 2x
//!   of the floor at every size, growing no faster than O(log roles).
//! * `lease_grant`: a new term on a role whose lease has expired (the failover
//!   path: token bump and a new holder).
//! * `lease_refusal`: another owner asking while the lease is live (`Held`,
//!   which clones the holder's lease for the answer).
//! * `registry_heartbeat` / `registry_live_nodes`: 10, 1 000 and 100 000 nodes.
//! * `elector`: one renewal round trip of a leader (`handle_timeout`, the
//!   request, `handle_response`, outputs drained), without and with the store.
//!
//! Every key is built before the timed loop. Keys are inserted and visited in
//! one fixed pseudo-random order (a shuffle by a `ChaCha8Rng` with a fixed
//! seed), so no bench depends on a thread RNG and a run is repeatable.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fenced::{
    Elector, ElectorConfig, ElectorOutput, ElectorTimings, FencingToken, Instant, LeaseResult,
    LeaseStore, NodeId, NodeRegistry, OwnerId, Role,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

const ROLE_COUNTS: [usize; 3] = [1, 1_000, 100_000];
const NODE_COUNTS: [usize; 3] = [10, 1_000, 100_000];
/// Long enough that no lease or node expires while a bench runs, even at one
/// nanosecond of clock per call.
const LONG_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// `n` names with a common prefix (as real role and node names have), in a
/// fixed shuffled order.
fn names(prefix: &str, n: usize) -> Vec<String> {
    let mut names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:06}")).collect();
    // Fisher-Yates with a fixed seed: the same order on every run.
    let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        names.swap(i, j);
    }
    names
}

/// Cycles through `keys` without bounds checks in the timed loop mattering.
struct Cycle<'a, T> {
    keys: &'a [T],
    next: usize,
}

impl<'a, T> Cycle<'a, T> {
    fn new(keys: &'a [T]) -> Self {
        Cycle { keys, next: 0 }
    }

    #[inline]
    fn next_key(&mut self) -> &'a T {
        let key = &self.keys[self.next];
        self.next += 1;
        if self.next == self.keys.len() {
            self.next = 0;
        }
        key
    }
}

/// A clock that moves one nanosecond per call, so every call is at a new `now`.
struct Clock(u64);

impl Clock {
    #[inline]
    fn tick(&mut self) -> Instant {
        self.0 += 1;
        Instant::from_nanos(self.0)
    }
}

fn roles(n: usize) -> Vec<Role> {
    names("role", n)
        .into_iter()
        .map(|s| Role::new(s).unwrap())
        .collect()
}

fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).unwrap()
}

/// A store in which `holder` holds every role in `roles` until well after the bench.
fn store_held_by(roles: &[Role], holder: &OwnerId, now: Instant) -> LeaseStore {
    let mut store = LeaseStore::default();
    for role in roles {
        let result = store
            .try_acquire_or_renew(role, holder, LONG_TTL, now)
            .unwrap();
        assert!(matches!(result, LeaseResult::Granted { .. }));
    }
    store
}

fn bench_lease_renew(c: &mut Criterion) {
    let mut group = c.benchmark_group("lease_renew");
    for &n in &ROLE_COUNTS {
        let keys = roles(n);
        let holder = owner("node-a#1");
        let start = Instant::from_secs(1);

        let mut store = store_held_by(&keys, &holder, start);
        group.bench_with_input(BenchmarkId::new("store", n), &n, |b, _| {
            let mut cycle = Cycle::new(&keys);
            let mut clock = Clock(start.as_nanos());
            b.iter(|| {
                let role = cycle.next_key();
                black_box(store.try_acquire_or_renew(role, &holder, LONG_TTL, clock.tick()))
            });
        });
        // The renewal really is a renewal: same token, still the holder.
        let check = store
            .try_acquire_or_renew(&keys[0], &holder, LONG_TTL, Instant::from_secs(2))
            .unwrap();
        assert!(matches!(check, LeaseResult::Renewed { .. }), "{check:?}");

        // The floor: the same lookup and the same update (expiry), nothing else.
        // Built by inserting in the store's order, so both trees have the same shape
        // (`collect` would bulk-build a denser tree).
        let expires_at = start + LONG_TTL;
        let mut floor: BTreeMap<Role, (u64, Instant)> = BTreeMap::new();
        for role in &keys {
            floor.insert(role.clone(), (1, expires_at));
        }
        group.bench_with_input(BenchmarkId::new("btreemap_floor", n), &n, |b, _| {
            let mut cycle = Cycle::new(&keys);
            let mut clock = Clock(start.as_nanos());
            b.iter(|| {
                let role = cycle.next_key();
                let now = clock.tick();
                black_box(floor.get_mut(role.as_str()).map(|entry| {
                    entry.1 = now + LONG_TTL;
                    entry.0
                }))
            });
        });
    }
    group.finish();
}

fn bench_lease_grant(c: &mut Criterion) {
    let mut group = c.benchmark_group("lease_grant");
    // A one-nanosecond lease has expired by the next call on its role, so
    // every call is a grant of a new term with a bumped token.
    let ttl = Duration::from_nanos(1);
    for &n in &ROLE_COUNTS {
        let keys = roles(n);
        let owners = [owner("node-a#1"), owner("node-b#1")];
        let mut store = LeaseStore::default();
        let mut clock = Clock(1_000);
        for role in &keys {
            store
                .try_acquire_or_renew(role, &owners[0], ttl, clock.tick())
                .unwrap();
        }
        group.bench_with_input(BenchmarkId::new("store", n), &n, |b, _| {
            let mut cycle = Cycle::new(&keys);
            let mut flip = 0usize;
            b.iter(|| {
                let role = cycle.next_key();
                flip ^= 1;
                black_box(store.try_acquire_or_renew(role, &owners[flip], ttl, clock.tick()))
            });
        });
        let check = store
            .try_acquire_or_renew(&keys[0], &owners[0], ttl, clock.tick())
            .unwrap();
        assert!(
            matches!(check, LeaseResult::Granted { token, .. } if token > FencingToken::FIRST),
            "{check:?}"
        );
    }
    group.finish();
}

fn bench_lease_refusal(c: &mut Criterion) {
    let mut group = c.benchmark_group("lease_refusal");
    for &n in &ROLE_COUNTS {
        let keys = roles(n);
        let (holder, other) = (owner("node-a#1"), owner("node-b#1"));
        let start = Instant::from_secs(1);
        let mut store = store_held_by(&keys, &holder, start);
        group.bench_with_input(BenchmarkId::new("store", n), &n, |b, _| {
            let mut cycle = Cycle::new(&keys);
            let mut clock = Clock(start.as_nanos());
            b.iter(|| {
                let role = cycle.next_key();
                black_box(store.try_acquire_or_renew(role, &other, LONG_TTL, clock.tick()))
            });
        });
        let check = store
            .try_acquire_or_renew(&keys[0], &other, LONG_TTL, Instant::from_secs(2))
            .unwrap();
        assert!(matches!(check, LeaseResult::Held { .. }), "{check:?}");
    }
    group.finish();
}

fn registry_with(nodes: &[NodeId], now: Instant) -> NodeRegistry {
    let mut registry = NodeRegistry::new(LONG_TTL).unwrap();
    for node in nodes {
        registry.heartbeat(node, now);
    }
    // The joins are not what is measured; drop them.
    while registry.poll_change().is_some() {}
    registry
}

fn bench_registry(c: &mut Criterion) {
    let start = Instant::from_secs(1);
    let all: Vec<Vec<NodeId>> = NODE_COUNTS
        .iter()
        .map(|&n| {
            names("node", n)
                .into_iter()
                .map(|s| NodeId::new(s).unwrap())
                .collect()
        })
        .collect();

    let mut group = c.benchmark_group("registry_heartbeat");
    for (nodes, &n) in all.iter().zip(&NODE_COUNTS) {
        let mut registry = registry_with(nodes, start);
        group.bench_with_input(BenchmarkId::new("refresh", n), &n, |b, _| {
            let mut cycle = Cycle::new(nodes);
            let mut clock = Clock(start.as_nanos());
            b.iter(|| black_box(registry.heartbeat(cycle.next_key(), clock.tick())));
        });
        assert_eq!(registry.len(), n);
        assert_eq!(registry.poll_change(), None, "a refresh is not a join");
    }
    group.finish();

    let mut group = c.benchmark_group("registry_live_nodes");
    for (nodes, &n) in all.iter().zip(&NODE_COUNTS) {
        let registry = registry_with(nodes, start);
        let now = Instant::from_secs(2);
        group.bench_with_input(BenchmarkId::new("count", n), &n, |b, _| {
            b.iter(|| black_box(registry.live_nodes(black_box(now)).count()));
        });
        assert_eq!(registry.live_count(now), n);
    }
    group.finish();
}

/// A started elector leading with token 1, its outputs drained.
fn leader(role: &Role, owner: &OwnerId, store: &mut LeaseStore) -> Elector {
    let config =
        ElectorConfig::new(owner.clone(), role.clone(), ElectorTimings::default()).unwrap();
    let mut elector = Elector::new(config);
    elector.start(Instant::ZERO);
    while let Some(output) = elector.poll_output() {
        if let ElectorOutput::SendLeaseRequest { id, ttl } = output {
            let answer = store
                .try_acquire_or_renew(role, owner, ttl, Instant::ZERO)
                .unwrap();
            elector.handle_response(id, answer, Instant::ZERO);
        }
    }
    assert_eq!(elector.token(), Some(FencingToken::FIRST));
    elector
}

fn bench_elector(c: &mut Criterion) {
    let mut group = c.benchmark_group("elector");
    let role = Role::new("reports").unwrap();
    let me = owner("node-a#1");
    let latency = Duration::from_millis(1);
    let ttl = ElectorTimings::default().lease_ttl;

    // The elector alone: the store's answer is made up, so only the elector is measured.
    let mut store = LeaseStore::default();
    let mut elector = leader(&role, &me, &mut store);
    group.bench_function("renew_round_trip", |b| {
        b.iter(|| {
            let now = elector.next_timeout().unwrap();
            elector.handle_timeout(now);
            while let Some(output) = elector.poll_output() {
                if let ElectorOutput::SendLeaseRequest { id, .. } = output {
                    let answer = LeaseResult::Renewed {
                        token: FencingToken::FIRST,
                        expires_at: now + ttl,
                    };
                    black_box(elector.handle_response(id, answer, now + latency));
                }
            }
            while let Some(output) = elector.poll_output() {
                black_box(output);
            }
        });
    });
    assert_eq!(elector.token(), Some(FencingToken::FIRST));

    // The same round trip through a real store.
    let mut store = LeaseStore::default();
    let mut elector = leader(&role, &me, &mut store);
    group.bench_function("renew_round_trip_with_store", |b| {
        b.iter(|| {
            let now = elector.next_timeout().unwrap();
            elector.handle_timeout(now);
            while let Some(output) = elector.poll_output() {
                if let ElectorOutput::SendLeaseRequest { id, ttl } = output {
                    let answer = store.try_acquire_or_renew(&role, &me, ttl, now).unwrap();
                    black_box(elector.handle_response(id, answer, now + latency));
                }
            }
            while let Some(output) = elector.poll_output() {
                black_box(output);
            }
        });
    });
    assert_eq!(elector.token(), Some(FencingToken::FIRST));
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_lease_renew, bench_lease_grant, bench_lease_refusal, bench_registry, bench_elector
}
criterion_main!(benches);
