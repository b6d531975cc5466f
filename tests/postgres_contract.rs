#![cfg(feature = "postgres")]
//! The PostgreSQL store against the pure state machines: random operation
//! sequences must get the same answers from both (differential tests), plus
//! the durability and schema properties only a database has.
//!
//! Needs `FENCED_POSTGRES_URL`; without it every test here prints `SKIPPED`
//! and passes, unless `FENCED_REQUIRE_POSTGRES=1`.
#![allow(clippy::disallowed_methods)] // Real-time tests against a live PostgreSQL: the wall clock is what they measure.

mod postgres_support;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use fenced::postgres::{
    ManualClock, Namespace, PostgresError, PostgresOptions, PostgresStore, TimeSource,
};
use fenced::tokio::{BackendError, LeaseBackend, RegistryBackend};
use fenced::{
    FencedStore, Fencing, FencingToken, Heartbeat, Instant, LeaseError, LeaseResult, LeaseStore,
    LeaseStoreConfig, NodeId, NodeRegistry, OwnerId, ReleaseResult, ResourceId, Role,
};
use postgres_support::{admin, database_url, drop_schema, fresh_store, schema_for};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// The model and the database both refuse TTLs above this.
const MAX_TTL: Duration = Duration::from_secs(10);
/// Roles, owners, nodes, resources and writers per case: few, so that
/// operations collide.
const NAMES: u8 = 3;
/// Every case runs in a time window of its own on the manual clock, far
/// after the previous case's, starting here (2023-11-14, in the database
/// clock's frame of Unix-epoch nanoseconds).
const FIRST_CASE_AT_SECS: u64 = 1_700_000_000;
const CASE_WINDOW_SECS: u64 = 100_000;

fn role(case: u64, index: u8) -> Role {
    Role::new(format!("case{case}-role{index}")).expect("valid role")
}

fn owner(index: u8) -> OwnerId {
    OwnerId::new(format!("owner-{index}")).expect("valid owner")
}

fn node(case: u64, index: u8) -> NodeId {
    NodeId::new(format!("case{case}-node{index}")).expect("valid node")
}

fn resource(case: u64, index: u8) -> ResourceId {
    ResourceId::new(format!("case{case}-resource{index}")).expect("valid resource")
}

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero token")
}

/// Runs `property` on `cases` random inputs (or `PROPTEST_CASES`), with
/// shrinking, each on the current-thread runtime `runtime`.
fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(cases);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&strategy, property) {
        panic!("{failure}");
    }
}

/// What a differential test runs on: a runtime, a store in a fresh schema on
/// a manual clock, and the case counter that gives each case its own time
/// window.
struct Differential {
    url: String,
    tag: &'static str,
    runtime: tokio::runtime::Runtime,
    clock: ManualClock,
    store: PostgresStore,
    cases: Cell<u64>,
}

impl Differential {
    fn new(url: String, tag: &'static str, options: PostgresOptions) -> Differential {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let clock = ManualClock::new(Instant::from_secs(FIRST_CASE_AT_SECS));
        let options = options.with_time_source(TimeSource::Manual(clock.clone()));
        let store = runtime.block_on(fresh_store(&url, tag, options));
        Differential {
            url,
            tag,
            runtime,
            clock,
            store,
            cases: Cell::new(0),
        }
    }

    /// Starts the next case: its number, with the clock at the start of its
    /// window, after every earlier case's (so what earlier cases left is
    /// long expired).
    fn next_case(&self) -> (u64, Instant) {
        let case = self.cases.get() + 1;
        self.cases.set(case);
        let start = Instant::from_secs(FIRST_CASE_AT_SECS + case * CASE_WINDOW_SECS);
        self.clock.set(start);
        (case, start)
    }

    fn finish(self) {
        self.runtime.block_on(async {
            drop_schema(&admin(&self.url).await, &schema_for(self.tag)).await;
        });
    }
}

/// The database error behind a `BackendError::Unavailable` answer.
fn unavailable_cause<T: std::fmt::Debug>(answer: Result<T, BackendError>) -> PostgresError {
    match answer {
        Err(BackendError::Unavailable(error)) => match error.downcast::<PostgresError>() {
            Ok(cause) => *cause,
            Err(other) => panic!("not a PostgresError: {other}"),
        },
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// One step of a lease-store sequence.
#[derive(Clone, Debug)]
enum LeaseOp {
    Acquire {
        role: u8,
        owner: u8,
        ttl_ms: u64,
    },
    /// Releases with the token the model says `owner` last got for `role`,
    /// shifted by `shift` (so late and wrong-token releases happen too).
    Release {
        role: u8,
        owner: u8,
        shift: i8,
    },
    Advance {
        ms: u64,
    },
    /// The clock jumps to the last expiry answered for `role`, plus
    /// `shift_ms`: the boundary where a lease stops being live.
    ToExpiry {
        role: u8,
        shift_ms: i8,
    },
    /// The caller's clock jumps back: both stores must clamp it.
    StepBack {
        ms: u64,
    },
    Inspect {
        role: u8,
    },
}

fn lease_op() -> impl Strategy<Value = LeaseOp> {
    let name = 0..NAMES;
    prop_oneof![
        6 => (name.clone(), name.clone(), prop_oneof![
            5 => 1..=3_000u64,
            3 => prop_oneof![Just(500u64), Just(1_000), Just(2_000)],
            1 => Just(0u64),                 // ZeroTtl
            1 => 10_001..=20_000u64,         // TtlAboveMaximum
            1 => Just(10_000u64),            // exactly the maximum
        ]).prop_map(|(role, owner, ttl_ms)| LeaseOp::Acquire { role, owner, ttl_ms }),
        2 => (name.clone(), name.clone(), -1..=1i8)
            .prop_map(|(role, owner, shift)| LeaseOp::Release { role, owner, shift }),
        4 => prop_oneof![0..=4_000u64, Just(0u64), Just(1u64), Just(500u64), Just(1_000)]
            .prop_map(|ms| LeaseOp::Advance { ms }),
        2 => (name.clone(), -1..=1i8).prop_map(|(role, shift_ms)| LeaseOp::ToExpiry { role, shift_ms }),
        1 => (1..=2_000u64).prop_map(|ms| LeaseOp::StepBack { ms }),
        1 => name.prop_map(|role| LeaseOp::Inspect { role }),
    ]
}

fn backend_answer<T>(
    answer: Result<T, BackendError>,
) -> Result<Result<T, LeaseError>, TestCaseError> {
    match answer {
        Ok(value) => Ok(Ok(value)),
        Err(BackendError::Rejected(error)) => Ok(Err(error)),
        Err(error) => Err(TestCaseError::fail(format!("the database failed: {error}"))),
    }
}

/// Runs `ops` against one pure [`LeaseStore`] per role and the PostgreSQL
/// store, on the same clock, comparing every answer.
async fn lease_sequence_agrees(
    store: &PostgresStore,
    clock: &ManualClock,
    (case, start): (u64, Instant),
    ops: &[LeaseOp],
) -> Result<(), TestCaseError> {
    let config = LeaseStoreConfig::new(MAX_TTL).expect("valid config");
    // The database keeps the never-backwards clock per role (a store-wide
    // one would make every call of every role update one row), so the model
    // is the pure store applied per role: one `LeaseStore` each.
    let mut models: BTreeMap<u8, LeaseStore> = BTreeMap::new();
    let mut last_token: BTreeMap<(u8, u8), u64> = BTreeMap::new();
    let mut last_expiry: BTreeMap<u8, Instant> = BTreeMap::new();
    for (step, op) in ops.iter().enumerate() {
        let now = clock.now();
        match *op {
            LeaseOp::Acquire {
                role: r,
                owner: o,
                ttl_ms,
            } => {
                let ttl = Duration::from_millis(ttl_ms);
                let model = models.entry(r).or_insert_with(|| LeaseStore::new(config));
                let expected = model.try_acquire_or_renew(&role(case, r), &owner(o), ttl, now);
                let actual =
                    backend_answer(store.acquire_or_renew(&role(case, r), &owner(o), ttl).await)?;
                prop_assert_eq!(&actual, &expected, "step {}: {:?}", step, op);
                match &actual {
                    Ok(LeaseResult::Granted { token, expires_at })
                    | Ok(LeaseResult::Renewed { token, expires_at }) => {
                        last_token.insert((r, o), token.get());
                        last_expiry.insert(r, *expires_at);
                    }
                    Ok(LeaseResult::Held { holder }) => {
                        last_expiry.insert(r, holder.expires_at);
                    }
                    Err(_) => {}
                }
            }
            LeaseOp::Release {
                role: r,
                owner: o,
                shift,
            } => {
                let base = last_token.get(&(r, o)).copied().unwrap_or(1);
                let t = token(base.saturating_add_signed(i64::from(shift)).max(1));
                let model = models.entry(r).or_insert_with(|| LeaseStore::new(config));
                let expected = model.release(&role(case, r), &owner(o), t, now);
                let actual = backend_answer(store.release(&role(case, r), &owner(o), t).await)?;
                prop_assert_eq!(
                    actual,
                    Ok(expected),
                    "step {}: {:?} with token {}",
                    step,
                    op,
                    t
                );
            }
            LeaseOp::Advance { ms } => clock.advance(Duration::from_millis(ms)),
            LeaseOp::ToExpiry { role: r, shift_ms } => {
                if let Some(expiry) = last_expiry.get(&r) {
                    let shift = Duration::from_millis(u64::from(shift_ms.unsigned_abs()));
                    clock.set(if shift_ms < 0 {
                        *expiry - shift
                    } else {
                        *expiry + shift
                    });
                }
            }
            LeaseOp::StepBack { ms } => {
                clock.set(now.saturating_sub(Duration::from_millis(ms)).max(start));
            }
            LeaseOp::Inspect { role: r } => {
                let model = models.entry(r).or_insert_with(|| LeaseStore::new(config));
                let expected = (
                    model.holder(&role(case, r), now).cloned(),
                    model.highest_token(&role(case, r)),
                );
                let actual = (
                    store.holder(&role(case, r)).await,
                    store.highest_token(&role(case, r)).await,
                );
                let actual = match actual {
                    (Ok(holder), Ok(highest)) => (holder, highest),
                    (Err(e), _) | (_, Err(e)) => {
                        return Err(TestCaseError::fail(format!("the database failed: {e}")))
                    }
                };
                prop_assert_eq!(actual, expected, "step {}: {:?}", step, op);
            }
        }
    }
    Ok(())
}

// Proves: on random sequences of acquire/renew, release (right, late and
// wrong tokens), bad TTLs, clock advances and backward steps, the PostgreSQL
// store answers exactly as the pure `LeaseStore` does, result by result
// (tokens, expiries, holders, refusals, errors).
#[test]
fn lease_store_agrees_with_the_pure_lease_store() {
    let Some(url) = database_url("lease_store_agrees_with_the_pure_lease_store") else {
        return;
    };
    let config = LeaseStoreConfig::new(MAX_TTL).expect("valid config");
    let options = PostgresOptions::default().with_lease_config(config);
    let t = Differential::new(url, "lease_diff", options);
    check(128, prop::collection::vec(lease_op(), 1..60), |ops| {
        let case = t.next_case();
        t.runtime
            .block_on(lease_sequence_agrees(&t.store, &t.clock, case, &ops))
    });
    t.finish();
}

/// One step of a registry sequence.
#[derive(Clone, Debug)]
enum RegistryOp {
    Heartbeat { node: u8 },
    Advance { ms: u64 },
    LiveNodes,
}

fn registry_op() -> impl Strategy<Value = RegistryOp> {
    prop_oneof![
        4 => (0..NAMES + 1).prop_map(|node| RegistryOp::Heartbeat { node }),
        3 => prop_oneof![0..=3_000u64, Just(1_000u64)].prop_map(|ms| RegistryOp::Advance { ms }),
        2 => Just(RegistryOp::LiveNodes),
    ]
}

// Proves: on random heartbeats and clock advances, the PostgreSQL registry
// answers as the pure `NodeRegistry` does: joined versus refreshed on every
// heartbeat (including exactly at the liveness boundary), and the same live
// set, sorted by id.
#[test]
fn registry_agrees_with_the_pure_node_registry() {
    let Some(url) = database_url("registry_agrees_with_the_pure_node_registry") else {
        return;
    };
    const LIVENESS_TTL: Duration = Duration::from_millis(2_000);
    let t = Differential::new(url, "registry_diff", PostgresOptions::default());
    let (clock, registry) = (
        &t.clock,
        t.store.registry(LIVENESS_TTL).expect("non-zero TTL"),
    );
    check(64, prop::collection::vec(registry_op(), 1..40), |ops| {
        // The nodes of earlier cases are long expired in this one's window.
        let (case, _) = t.next_case();
        let mut model = NodeRegistry::new(LIVENESS_TTL).expect("non-zero TTL");
        t.runtime.block_on(async {
            for (step, op) in ops.iter().enumerate() {
                let now = clock.now();
                match *op {
                    RegistryOp::Heartbeat { node: n } => {
                        let expected: Heartbeat = model.heartbeat(&node(case, n), now);
                        let actual = registry.heartbeat(&node(case, n)).await;
                        let actual = actual.map_err(|e| TestCaseError::fail(e.to_string()))?;
                        prop_assert_eq!(actual, expected, "step {}: {:?}", step, op);
                    }
                    RegistryOp::Advance { ms } => clock.advance(Duration::from_millis(ms)),
                    RegistryOp::LiveNodes => {
                        let expected: Vec<NodeId> = model.live_nodes(now).cloned().collect();
                        let actual = registry.live_nodes().await;
                        let actual = actual.map_err(|e| TestCaseError::fail(e.to_string()))?;
                        prop_assert_eq!(actual, expected, "step {}: {:?}", step, op);
                    }
                }
            }
            Ok(())
        })
    });
    t.finish();
}

/// One step of a fenced-table sequence.
#[derive(Clone, Debug)]
enum WriteOp {
    Write {
        resource: u8,
        token: u64,
        writer: u8,
    },
    Advance {
        ms: u64,
    },
}

fn write_op() -> impl Strategy<Value = WriteOp> {
    prop_oneof![
        5 => (0..2u8, 1..=6u64, 0..NAMES)
            .prop_map(|(resource, token, writer)| WriteOp::Write { resource, token, writer }),
        1 => (0..=1_000u64).prop_map(|ms| WriteOp::Advance { ms }),
    ]
}

// Proves: on random writes with random tokens and writers, the PostgreSQL
// fenced table accepts and rejects exactly as the pure `FencedStore` does
// (stale token with the highest; a token presented by a second writer), and
// keeps the same value, highest token, count and last write time.
#[test]
fn fenced_table_agrees_with_the_pure_fenced_store() {
    let Some(url) = database_url("fenced_table_agrees_with_the_pure_fenced_store") else {
        return;
    };
    let t = Differential::new(url, "fenced_diff", PostgresOptions::default());
    let (clock, table) = (&t.clock, t.store.fenced_table());
    check(64, prop::collection::vec(write_op(), 1..40), |ops| {
        let (case, _) = t.next_case();
        let mut model: FencedStore<Vec<u8>> = FencedStore::new(Fencing::Enforced);
        t.runtime.block_on(async {
            for (step, op) in ops.iter().enumerate() {
                let (r, t, w) = match *op {
                    WriteOp::Advance { ms } => {
                        clock.advance(Duration::from_millis(ms));
                        continue;
                    }
                    WriteOp::Write {
                        resource,
                        token,
                        writer,
                    } => (resource, token, writer),
                };
                let payload = format!("step {step}").into_bytes();
                let (res, writer) = (resource(case, r), owner(w));
                let expected = model.write(&res, token(t), &writer, payload.clone(), clock.now());
                let actual = table.write(&res, token(t), &writer, &payload).await;
                let actual = actual.map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&actual, &expected, "step {}: {:?}", step, op);
                let record = table.read(&res).await;
                let record = record.map_err(|e| TestCaseError::fail(e.to_string()))?;
                let record = record.expect("a written resource has a row");
                prop_assert_eq!(Some(&record.payload), model.value(&res));
                prop_assert_eq!(Some(record.highest), model.highest_token(&res));
                prop_assert_eq!(record.accepted, model.accepted_count(&res));
                prop_assert_eq!(Some(record.last_write_at), model.last_write_at(&res));
            }
            Ok(())
        })
    });
    t.finish();
}

// Proves: on the database's own clock (no manual time), a lease expires after
// its TTL and the next grant — to another owner, or to the same owner after
// its own lapse — carries a higher token, while a renewal in time keeps it.
#[tokio::test]
async fn the_database_clock_expires_leases() {
    let Some(url) = database_url("the_database_clock_expires_leases") else {
        return;
    };
    let store = fresh_store(&url, "db_clock", PostgresOptions::default()).await;
    let r = Role::new("reports").expect("valid role");
    let (a, b) = (owner(0), owner(1));
    let ttl = Duration::from_millis(300);
    let granted = store
        .acquire_or_renew(&r, &a, ttl)
        .await
        .expect("an answer");
    assert!(matches!(granted, LeaseResult::Granted { token: t, .. } if t == token(1)));
    let renewed = store
        .acquire_or_renew(&r, &a, ttl)
        .await
        .expect("an answer");
    assert!(matches!(renewed, LeaseResult::Renewed { token: t, .. } if t == token(1)));
    let held = store
        .acquire_or_renew(&r, &b, ttl)
        .await
        .expect("an answer");
    assert!(matches!(&held, LeaseResult::Held { holder } if holder.owner == a));

    tokio::time::sleep(Duration::from_millis(400)).await;
    let again = store
        .acquire_or_renew(&r, &a, ttl)
        .await
        .expect("an answer");
    assert!(
        matches!(again, LeaseResult::Granted { token: t, .. } if t == token(2)),
        "re-acquiring after one's own lapse is a new term: {again:?}"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let taken = store
        .acquire_or_renew(&r, &b, ttl)
        .await
        .expect("an answer");
    assert!(matches!(taken, LeaseResult::Granted { token: t, .. } if t == token(3)));
    assert_eq!(
        store.release(&r, &a, token(2)).await.expect("an answer"),
        ReleaseResult::NotHeld,
        "a late release of an older term is a no-op"
    );
    assert_eq!(
        store.holder(&r).await.expect("an answer").map(|l| l.owner),
        Some(b.clone())
    );
    // Instants are Unix-epoch nanoseconds on the database clock: whole
    // microseconds, and close to this machine's wall clock.
    let lease = store.holder(&r).await.expect("an answer").expect("held");
    assert_eq!(lease.expires_at.as_nanos() % 1_000, 0);
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    let skew = Duration::from_nanos(lease.expires_at.as_nanos()).abs_diff(wall);
    assert!(
        skew < Duration::from_secs(60),
        "expiry {skew:?} away from now"
    );
    drop_schema(&admin(&url).await, &schema_for("db_clock")).await;
}

// Proves: token counters survive the loss of lease rows — deleting every
// lease (as an operator or a bad restore might) never sends a role's tokens
// backwards — and the counters themselves cannot be deleted, truncated or
// lowered.
#[tokio::test]
async fn deleted_leases_never_send_tokens_backwards() {
    let Some(url) = database_url("deleted_leases_never_send_tokens_backwards") else {
        return;
    };
    let store = fresh_store(&url, "durable", PostgresOptions::default()).await;
    let schema = schema_for("durable");
    let admin = admin(&url).await;
    let r = Role::new("reports").expect("valid role");
    let ttl = Duration::from_secs(30);
    for n in 1..=3 {
        let granted = store
            .acquire_or_renew(&r, &owner(0), ttl)
            .await
            .expect("an answer");
        assert_eq!(granted.acquired_token(), Some(token(n)));
        let released = store
            .release(&r, &owner(0), token(n))
            .await
            .expect("an answer");
        assert_eq!(released, ReleaseResult::Released);
    }
    store
        .acquire_or_renew(&r, &owner(1), ttl)
        .await
        .expect("an answer");
    admin
        .batch_execute(&format!("DELETE FROM \"{schema}\".\"leases\""))
        .await
        .expect("lease rows can be deleted");
    let after = store
        .acquire_or_renew(&r, &owner(2), ttl)
        .await
        .expect("an answer");
    assert_eq!(after.acquired_token(), Some(token(5)));

    for sabotage in [
        format!("DELETE FROM \"{schema}\".\"lease_tokens\""),
        format!("TRUNCATE \"{schema}\".\"lease_tokens\""),
        format!("UPDATE \"{schema}\".\"lease_tokens\" SET highest = 1"),
    ] {
        let error = admin
            .batch_execute(&sabotage)
            .await
            .expect_err("the counters are guarded");
        assert!(
            format!("{error:?}").contains("never deleted or lowered"),
            "{sabotage}: {error:?}"
        );
    }
    assert_eq!(
        store.highest_token(&r).await.expect("an answer"),
        Some(token(5))
    );
    drop_schema(&admin, &schema).await;
}

// Proves: the migration is idempotent and safe to run concurrently (eight
// processes starting at once), a store used before it says so with a typed
// error, and two namespaces in one database are independent stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_is_idempotent_concurrent_and_namespaced() {
    let Some(url) = database_url("migration_is_idempotent_concurrent_and_namespaced") else {
        return;
    };
    let admin = admin(&url).await;
    let (first, second) = (schema_for("migrate_a"), schema_for("migrate_b"));
    drop_schema(&admin, &first).await;
    drop_schema(&admin, &second).await;
    let options = |schema: &str| {
        PostgresOptions::default().with_namespace(Namespace::new(schema, "app_").expect("valid"))
    };
    let store = PostgresStore::new(&url, options(&first)).expect("valid URL");
    let r = Role::new("reports").expect("valid role");
    let unmigrated = store
        .acquire_or_renew(&r, &owner(0), Duration::from_secs(5))
        .await;
    let cause = unavailable_cause(unmigrated);
    assert!(matches!(cause, PostgresError::NotMigrated(_)), "{cause}");

    let migrations: Vec<_> = (0..8)
        .map(|_| {
            let store = PostgresStore::new(&url, options(&first)).expect("valid URL");
            tokio::spawn(async move { store.migrate().await })
        })
        .collect();
    for migration in migrations {
        migration
            .await
            .expect("no panic")
            .expect("every migration succeeds");
    }
    store.migrate().await.expect("and once more");
    let granted = store
        .acquire_or_renew(&r, &owner(0), Duration::from_secs(5))
        .await
        .expect("the store works once migrated");
    assert_eq!(granted.acquired_token(), Some(token(1)));

    let other = PostgresStore::new(&url, options(&second)).expect("valid URL");
    other.migrate().await.expect("migrates");
    let elsewhere = other
        .acquire_or_renew(&r, &owner(1), Duration::from_secs(5))
        .await
        .expect("an answer");
    assert_eq!(elsewhere.acquired_token(), Some(token(1)), "its own tokens");
    let tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'app\\_%'",
            &[&first],
        )
        .await
        .expect("catalog query")
        .get(0);
    assert_eq!(
        tables, 5,
        "lease_tokens, leases, nodes, fenced_resources, schema_version"
    );
    drop_schema(&admin, &first).await;
    drop_schema(&admin, &second).await;
}

// Proves: bad input is refused before any I/O — a zero TTL or one above the
// maximum is `Rejected` with the pure store's error even with no database
// reachable, and an unreachable database is a typed `Unavailable` error.
#[tokio::test]
async fn bad_input_and_no_database_are_typed_errors() {
    // Port 1 on loopback: nothing listens there.
    let options = PostgresOptions::default().with_connect_timeout(Duration::from_secs(2));
    let store =
        PostgresStore::new("postgres://nobody@127.0.0.1:1/none", options).expect("a valid URL");
    let r = Role::new("reports").expect("valid role");
    let zero = store.acquire_or_renew(&r, &owner(0), Duration::ZERO).await;
    assert!(matches!(
        zero,
        Err(BackendError::Rejected(LeaseError::ZeroTtl))
    ));
    let long = store
        .acquire_or_renew(&r, &owner(0), Duration::from_secs(100_000))
        .await;
    assert!(matches!(
        long,
        Err(BackendError::Rejected(LeaseError::TtlAboveMaximum { .. }))
    ));
    let unreachable = store
        .acquire_or_renew(&r, &owner(0), Duration::from_secs(1))
        .await;
    let cause = unavailable_cause(unreachable);
    assert!(matches!(cause, PostgresError::Connect(_)), "{cause}");
    assert!(matches!(
        PostgresStore::new("not a url at all ===", PostgresOptions::default()),
        Err(PostgresError::InvalidUrl(_))
    ));
    assert!(matches!(
        PostgresStore::new(
            "postgres://a@b/c",
            PostgresOptions::default().with_query_timeout(Duration::ZERO)
        ),
        Err(PostgresError::InvalidOptions { .. })
    ));
    let written = store
        .fenced_table()
        .write(
            &ResourceId::new("r").expect("valid"),
            token(u64::MAX),
            &owner(0),
            b"x",
        )
        .await;
    assert!(matches!(written, Err(PostgresError::TokenOutOfRange(_))));
}
