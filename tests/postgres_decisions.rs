#![cfg(feature = "postgres")]
//! The fenced table numbers its decisions in the order it makes them
//! (schema version 2), a release answers with the database clock at its
//! decision (version 3), and a version-1 schema migrates in place.
//!
//! Needs `FENCED_POSTGRES_URL`; without it the test prints `SKIPPED` and
//! passes, unless `FENCED_REQUIRE_POSTGRES=1`.

mod postgres_support;

use std::sync::{Arc, Mutex};

use std::time::Duration;

use fenced::postgres::{Decision, Namespace, PostgresOptions, PostgresStore};
use fenced::tokio::LeaseBackend;
use fenced::{
    FencedStore, Fencing, FencingToken, Instant, LeaseResult, OwnerId, ReleaseResult, ResourceId,
    Role, WriteOutcome,
};
use postgres_support::{admin, database_url, drop_schema, fresh_store, schema_for};

const WRITERS: u64 = 8;
const WRITES_EACH: u64 = 40;

/// One answered write: who, with which token, and the table's decision.
#[derive(Clone, Debug)]
struct Answered {
    writer: OwnerId,
    token: FencingToken,
    decision: Decision,
}

fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero")
}

// Proves: eight writers racing on one resource, each on its own connection,
// get decision numbers that are distinct, and replaying the writes through
// the pure `FencedStore` in number order gives every writer the very answer
// the table gave it — the numbers are an order the database decided in. Two
// resources share the sequence and each keeps its own order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decision_numbers_follow_the_order_of_the_fence() {
    let Some(url) = database_url("decision_numbers_follow_the_order_of_the_fence") else {
        return;
    };
    let store = fresh_store(&url, "decisions", PostgresOptions::default()).await;
    let answered = Arc::new(Mutex::new(Vec::new()));
    let resources = [
        ResourceId::new("ledger").expect("valid"),
        ResourceId::new("report").expect("valid"),
    ];
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (store, answered, resources) = (store.clone(), answered.clone(), resources.clone());
        tasks.push(tokio::spawn(async move {
            let table = store.fenced_table();
            let writer = OwnerId::new(format!("writer-{w}")).expect("valid");
            for i in 0..WRITES_EACH {
                // Tokens rise per writer and interleave across writers, so
                // the race decides which are stale.
                let token = token(1 + i * WRITERS / 3 + w);
                let resource = &resources[usize::from(i % 5 == 0)];
                let decision = table
                    .write_decided(resource, token, &writer, b"x")
                    .await
                    .expect("the table answers");
                let mut answered = answered.lock().expect("not poisoned");
                answered.push((
                    resource.clone(),
                    Answered {
                        writer: writer.clone(),
                        token,
                        decision,
                    },
                ));
            }
        }));
    }
    for task in tasks {
        task.await.expect("no writer panicked");
    }
    let mut answered = Arc::try_unwrap(answered)
        .expect("every task ended")
        .into_inner()
        .expect("not poisoned");
    assert_eq!(answered.len() as u64, WRITERS * WRITES_EACH);
    answered.sort_by_key(|(_, a)| a.decision.number);
    let numbers: Vec<u64> = answered.iter().map(|(_, a)| a.decision.number).collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "numbers are distinct"
    );
    let mut model: FencedStore<Vec<u8>> = FencedStore::new(Fencing::Enforced);
    let (mut accepted, mut rejected) = (0, 0);
    for (resource, a) in &answered {
        let expected = model.write(
            resource,
            a.token,
            &a.writer,
            b"x".to_vec(),
            Instant::from_nanos(0),
        );
        assert_eq!(
            a.decision.outcome, expected,
            "decision {} ({} with token {} on {resource}) is the pure fence's answer in number order",
            a.decision.number, a.writer, a.token
        );
        match expected {
            WriteOutcome::Accepted => accepted += 1,
            _ => rejected += 1,
        }
    }
    assert!(
        accepted > 0 && rejected > 0,
        "the race both accepted and rejected: {accepted}/{rejected}"
    );
    drop_schema(&admin(&url).await, &schema_for("decisions")).await;
}

// Proves: a schema a version-1 crate made (no sequence, no
// `fenced_write_ordered`, no `release_dated`, version 1 recorded) is
// migrated to this version in place: its data stays, the fence goes on from
// the highest token it holds, decisions are numbered, and version 1's
// `fenced_write` and `release` (what a version-1 client calls) still answer
// as they did.
#[tokio::test]
async fn a_version_1_schema_migrates_in_place() {
    let Some(url) = database_url("a_version_1_schema_migrates_in_place") else {
        return;
    };
    let schema = schema_for("v1_upgrade");
    let admin = admin(&url).await;
    drop_schema(&admin, &schema).await;
    let namespace = Namespace::new(&schema, "").expect("valid");
    let store = PostgresStore::new(&url, PostgresOptions::default().with_namespace(namespace))
        .expect("valid URL");
    store.migrate().await.expect("migrates");
    let table = store.fenced_table();
    let (resource, old) = (
        ResourceId::new("ledger").expect("valid"),
        OwnerId::new("old").expect("valid"),
    );
    table
        .write(&resource, token(5), &old, b"v1 data")
        .await
        .expect("writes");
    // Back to what version 1 left: its own fenced_write, nothing of 2.
    admin
        .batch_execute(&format!(
            r#"
            DROP FUNCTION "{schema}".fenced_write(text, bigint, text, bytea, timestamptz);
            DROP FUNCTION "{schema}".fenced_write_ordered(text, bigint, text, bytea, timestamptz);
            DROP SEQUENCE "{schema}".fenced_decisions;
            DROP FUNCTION "{schema}".release(text, text, bigint, timestamptz);
            DROP FUNCTION "{schema}".release_dated(text, text, bigint, timestamptz);
            CREATE FUNCTION "{schema}".fenced_write(
                p_resource text, p_token bigint, p_writer text, p_payload bytea, p_now timestamptz,
                OUT o_outcome text, OUT o_highest bigint, OUT o_writer text)
            LANGUAGE plpgsql AS $fn$
            BEGIN
                INSERT INTO "{schema}".fenced_resources AS f
                        (resource, highest, writer, payload, accepted, last_write_at)
                    VALUES (p_resource, p_token, p_writer, p_payload, 1,
                            coalesce(p_now, clock_timestamp()))
                    ON CONFLICT (resource) DO UPDATE SET
                        highest = EXCLUDED.highest, writer = EXCLUDED.writer,
                        payload = EXCLUDED.payload, accepted = f.accepted + 1,
                        last_write_at = greatest(f.last_write_at, EXCLUDED.last_write_at)
                    WHERE EXCLUDED.highest > f.highest
                       OR (EXCLUDED.highest = f.highest AND EXCLUDED.writer = f.writer);
                IF FOUND THEN
                    o_outcome := 'accepted'; o_highest := p_token; o_writer := p_writer;
                    RETURN;
                END IF;
                SELECT CASE WHEN p_token < f.highest THEN 'stale' ELSE 'wrong_writer' END,
                       f.highest, f.writer
                    INTO o_outcome, o_highest, o_writer
                    FROM "{schema}".fenced_resources f WHERE f.resource = p_resource;
            END
            $fn$;
            UPDATE "{schema}".schema_version SET version = 1;
            "#
        ))
        .await
        .expect("the version-1 state is made");

    let upgraded = PostgresStore::new(
        &url,
        PostgresOptions::default().with_namespace(Namespace::new(&schema, "").expect("valid")),
    )
    .expect("valid URL");
    upgraded.migrate().await.expect("migrates version 1 to 3");
    let version: i32 = admin
        .query_one(
            &format!(r#"SELECT version FROM "{schema}".schema_version"#),
            &[],
        )
        .await
        .expect("reads the version")
        .get(0);
    assert_eq!(version, 3);
    let released: bool = admin
        .query_one(
            &format!(r#"SELECT "{schema}".release('nobody-holds-it', 'old', 1, NULL)"#),
            &[],
        )
        .await
        .expect("version 1's release still works")
        .get(0);
    assert!(!released);
    let table = upgraded.fenced_table();
    let new = OwnerId::new("new").expect("valid");
    let stale = table
        .write_decided(&resource, token(4), &new, b"late")
        .await
        .expect("answers");
    assert_eq!(
        stale.outcome,
        WriteOutcome::RejectedStale {
            stale: token(4),
            highest: token(5)
        },
        "the fence goes on from version 1's highest token"
    );
    let accepted = table
        .write_decided(&resource, token(6), &new, b"v2 data")
        .await
        .expect("answers");
    assert_eq!(accepted.outcome, WriteOutcome::Accepted);
    assert!(accepted.number > stale.number, "numbered in order");
    let row = admin
        .query_one(
            &format!(
                r#"SELECT w.o_outcome, w.o_highest, w.o_writer
                   FROM "{schema}".fenced_write('ledger', 6, 'old', 'x'::bytea, NULL) w"#
            ),
            &[],
        )
        .await
        .expect("version 1's call still works");
    let (outcome, highest, writer): (String, i64, String) = (row.get(0), row.get(1), row.get(2));
    assert_eq!(
        (outcome.as_str(), highest, writer.as_str()),
        ("wrong_writer", 6, "new")
    );
    let record = table.read(&resource).await.expect("reads").expect("a row");
    assert_eq!(record.payload, b"v2 data");
    assert_eq!(record.accepted, 2, "version 1's write and version 2's");
    drop_schema(&admin, &schema).await;
}

// Proves: a release answers with the database clock at its decision, on the
// clock that dates grants and renewals (`expires_at − ttl`) and in their
// order: a's grant, a's renewal, a's release, b's grant are dated in that
// order, and a release that frees nothing is dated too.
#[tokio::test]
async fn a_release_is_dated_on_the_clock_of_grants() {
    let Some(url) = database_url("a_release_is_dated_on_the_clock_of_grants") else {
        return;
    };
    let store = fresh_store(&url, "release_dates", PostgresOptions::default()).await;
    let role = Role::new("reports").expect("valid");
    let (a, b) = (
        OwnerId::new("a").expect("valid"),
        OwnerId::new("b").expect("valid"),
    );
    let ttl = Duration::from_secs(30);
    let decided = |result: &LeaseResult| match result {
        LeaseResult::Granted { expires_at, .. } | LeaseResult::Renewed { expires_at, .. } => {
            expires_at.as_nanos() - ttl.as_nanos() as u64
        }
        held => panic!("not a grant or renewal: {held:?}"),
    };
    let granted = store
        .acquire_or_renew(&role, &a, ttl)
        .await
        .expect("answers");
    let renewed = store
        .acquire_or_renew(&role, &a, ttl)
        .await
        .expect("answers");
    let (released, at) = store
        .release_dated(&role, &a, token(1))
        .await
        .expect("answers");
    assert_eq!(released, ReleaseResult::Released);
    let at = at.expect("the database dates its releases").as_nanos();
    let successor = store
        .acquire_or_renew(&role, &b, ttl)
        .await
        .expect("answers");
    let times = [
        decided(&granted),
        decided(&renewed),
        at,
        decided(&successor),
    ];
    assert!(
        times.windows(2).all(|pair| pair[0] <= pair[1]),
        "grant, renewal, release, grant in the store's order: {times:?}"
    );
    let (again, later) = store
        .release_dated(&role, &a, token(1))
        .await
        .expect("answers");
    assert_eq!(again, ReleaseResult::NotHeld);
    assert!(later.expect("dated").as_nanos() >= times[3]);
    drop_schema(&admin(&url).await, &schema_for("release_dates")).await;
}
