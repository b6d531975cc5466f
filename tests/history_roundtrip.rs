#![cfg(all(feature = "tokio", target_os = "linux", not(fenced_alone)))]
//! Histories written by the real tokio driver (`fenced::history` recorders
//! in the elector's options, the fenced store and the work loop), judged by
//! `fenced-sim check-history`'s library: a graceful handover between two
//! electors passes with two terms and no violation — in process, and, with
//! `FENCED_POSTGRES_URL`, through the PostgreSQL store and fenced table.
//!
//! These run on the real clock (the history clock is real time): short
//! timings, about two seconds each.

#[cfg(feature = "postgres")]
mod postgres_support;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fenced::history::{Event, Header, Kind, Recorder, Settings};
use fenced::tokio::{
    CancellationToken, Clock, ElectorOptions, InProcessLeaseBackend, LeaseBackend,
    LeaseLeaderElector, SharedFencedStore,
};
use fenced::{
    ElectorTimings, Fencing, LeaseStore, NodeId, OwnerId, ResourceId, Role, WriteOutcome,
};
use fenced_sim::history::{check_paths, CheckOptions, Judged};

fn timings() -> ElectorTimings {
    ElectorTimings {
        lease_ttl: Duration::from_millis(600),
        renew_interval: Duration::from_millis(150),
        retry_interval: Duration::from_millis(100),
        ..ElectorTimings::default()
    }
}

fn settings() -> Settings {
    Settings::new("reports", &timings(), true)
        .with_work(Duration::from_millis(50), Duration::from_millis(10))
}

fn node_recorder(dir: &Path, node: &str) -> (OwnerId, Recorder, PathBuf) {
    let owner = OwnerId::new(format!("{node}#1")).expect("valid owner");
    let path = dir.join(format!("{node}.jsonl"));
    let header = Header::node(
        NodeId::new(node).expect("valid node"),
        1,
        owner.clone(),
        settings(),
    )
    .with_run("roundtrip");
    let recorder = Recorder::to_file(&path, header).expect("the history opens");
    (owner, recorder, path)
}

/// The work loop of a node program: each unit checks leadership on the
/// elector's clock, records it, works 10 ms, and writes with its token
/// through `write` unless its term ended meanwhile.
async fn work_loop<F, Fut>(
    token: fenced::FencingToken,
    cancel: CancellationToken,
    clock: Clock,
    recorder: Recorder,
    write: F,
) where
    F: Fn(fenced::FencingToken, u64) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut unit = 0;
    while !cancel.is_cancelled() {
        unit += 1;
        let local_ns = clock.now().as_nanos();
        recorder.record(|| Event::WorkStarted {
            token,
            unit,
            local_ns,
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        if cancel.is_cancelled() {
            recorder.record(|| Event::WorkCancelled { token, unit });
            break;
        }
        recorder.record(|| Event::WriteSent { token, unit });
        write(token, unit).await;
        tokio::select! {
            () = cancel.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(40)) => {}
        }
    }
}

/// Runs node `a` alone for a while, stops it gracefully, lets `b` take over,
/// stops `b`; each node's `elect` runs its elector until the token it gets
/// is cancelled.
async fn handover<E, Fut>(dir: &Path, elect: E) -> Vec<PathBuf>
where
    E: Fn(OwnerId, Recorder, CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (owner_a, recorder_a, path_a) = node_recorder(dir, "node-a");
    let (owner_b, recorder_b, path_b) = node_recorder(dir, "node-b");
    let stop_a = CancellationToken::new();
    let stop_b = CancellationToken::new();
    let run_a = tokio::spawn(elect(owner_a, recorder_a.clone(), stop_a.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let run_b = tokio::spawn(elect(owner_b, recorder_b.clone(), stop_b.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop_a.cancel();
    run_a.await.expect("a's driver ends");
    recorder_a.process_stopped();
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop_b.cancel();
    run_b.await.expect("b's driver ends");
    recorder_b.process_stopped();
    assert_eq!(recorder_a.write_errors() + recorder_b.write_errors(), 0);
    vec![path_a, path_b]
}

fn assert_clean_handover(judged: &Judged) {
    let r = &judged.report;
    assert!(r.expect.met, "{:?}\n{}", r.expect.unmet, judged.trace);
    assert_eq!(r.violations_total, 0, "{:?}", r.violations);
    let terms: Vec<(&str, u64, &str)> = r
        .terms
        .iter()
        .map(|t| (t.owner.as_str(), t.token, t.end_reason.as_str()))
        .collect();
    assert_eq!(
        terms,
        vec![("node-a#1", 1, "stopped"), ("node-b#1", 2, "stopped")],
        "{}",
        judged.trace
    );
    assert_eq!(r.leader_changes, 1);
    assert!(r.writes.accepted >= 5, "{:?}", r.writes);
    assert_eq!(r.failovers.len(), 1);
    let history = r.history.as_ref().expect("a history report");
    assert!(history.problems.is_empty(), "{:?}", history.problems);
    assert!(history.unterminated.is_empty());
    assert_eq!(r.scenario, "roundtrip");
}

async fn elect_with<B: LeaseBackend + Clone>(
    backend: B,
    clock: Clock,
    owner: OwnerId,
    recorder: Recorder,
    stop: CancellationToken,
    write: impl Fn(
            fenced::FencingToken,
            u64,
            OwnerId,
            Recorder,
        ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync
        + Clone
        + 'static,
) {
    let options = ElectorOptions::new(owner.clone())
        .with_timings(timings())
        .with_clock(clock)
        .with_recorder(recorder.clone());
    let elector = LeaseLeaderElector::new(backend, options);
    let role = Role::new("reports").expect("valid role");
    let result = elector
        .run(
            role,
            move |token, cancel| {
                let (owner, recorder, write) = (owner.clone(), recorder.clone(), write.clone());
                let work_recorder = recorder.clone();
                async move {
                    let write =
                        move |token, unit| write(token, unit, owner.clone(), recorder.clone());
                    work_loop(token, cancel, clock, work_recorder, write).await;
                }
            },
            stop.cancelled_owned(),
        )
        .await;
    assert!(result.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_process_driver_records_a_history_that_check_history_passes() {
    let dir = tempfile_dir("inproc");
    let clock = Clock::new();
    let backend = InProcessLeaseBackend::new(LeaseStore::default(), clock);
    let downstream_path = dir.join("downstream.jsonl");
    let downstream = Recorder::to_file(&downstream_path, Header::of_kind(Kind::Downstream))
        .expect("the history opens");
    let store = SharedFencedStore::new(Fencing::Enforced, clock).with_recorder(downstream.clone());
    let write = move |token, _unit, owner: OwnerId, _recorder: Recorder| {
        let store = store.clone();
        Box::pin(async move {
            let resource = ResourceId::new("daily-report").expect("valid resource");
            let outcome = store
                .write(&resource, token, &owner, ())
                .expect("the store works");
            assert_eq!(outcome, WriteOutcome::Accepted);
        }) as std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
    };
    let mut paths = handover(&dir, move |owner, recorder, stop| {
        elect_with(backend.clone(), clock, owner, recorder, stop, write.clone())
    })
    .await;
    paths.push(downstream_path);
    let judged = check_paths(&paths, CheckOptions::default()).expect("valid histories");
    assert_clean_handover(&judged);
    // The graceful stop's release is dated on the store's clock.
    let dated_release = paths.iter().any(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines().any(|line| {
                line.contains("\"release-handled\"") && line.contains("\"store_now_ns\"")
            })
        })
    });
    assert!(
        dated_release,
        "the release's answer carries the store's time"
    );
    // `FENCED_HISTORY_KEEP=1` keeps the files, to look at them.
    if std::env::var_os("FENCED_HISTORY_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The in-process store behind a slow link: it decides at once, and every
/// lease answer comes back `delay` later.
#[derive(Clone)]
struct SlowAnswers {
    inner: InProcessLeaseBackend,
    delay: Duration,
}

impl LeaseBackend for SlowAnswers {
    async fn acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<fenced::LeaseResult, fenced::tokio::BackendError> {
        let answer = self.inner.acquire_or_renew(role, owner, ttl).await;
        tokio::time::sleep(self.delay).await;
        answer
    }

    async fn release(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: fenced::FencingToken,
    ) -> Result<fenced::ReleaseResult, fenced::tokio::BackendError> {
        self.inner.release(role, owner, token).await
    }

    async fn release_dated(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: fenced::FencingToken,
    ) -> Result<(fenced::ReleaseResult, Option<fenced::Instant>), fenced::tokio::BackendError> {
        self.inner.release_dated(role, owner, token).await
    }
}

// Proves: with a history on, an answer that comes after the driver's TTL
// bound (the request already failed, `lease-failed`) is still recorded as
// `lease-handled` — the store made that decision, and a history that
// missed it would judge the next renewal a renewal of a lapsed lease. Every
// answer here takes
// 800 ms against a 600 ms TTL, so each request fails first and is recorded
// later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_answers_are_recorded() {
    let dir = tempfile_dir("late");
    let clock = Clock::new();
    let backend = SlowAnswers {
        inner: InProcessLeaseBackend::new(LeaseStore::default(), clock),
        delay: Duration::from_millis(800),
    };
    let (owner, recorder, path) = node_recorder(&dir, "node-a");
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    let elector = tokio::spawn(async move {
        let options = ElectorOptions::new(owner)
            .with_timings(timings())
            .with_clock(clock)
            .with_recorder(recorder.clone());
        let elector = LeaseLeaderElector::new(backend, options);
        let role = Role::new("reports").expect("valid role");
        let run = elector
            .run(role, |_token, _cancel| async {}, stopper.cancelled_owned())
            .await;
        recorder.process_stopped();
        run
    });
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    stop.cancel();
    assert!(elector.await.expect("the elector task").is_ok());
    let text = std::fs::read_to_string(&path).expect("the history");
    let events: Vec<serde_json::Value> = text
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let is = |event: &serde_json::Value, kind: &str| event["event"] == kind;
    let failed_then_handled = events.iter().enumerate().any(|(i, event)| {
        is(event, "lease-failed")
            && events[i + 1..].iter().any(|later| {
                is(later, "lease-handled")
                    && later["request"] == event["request"]
                    && later["store_now_ns"].is_u64()
            })
    });
    assert!(
        failed_then_handled,
        "a failed request's late answer is recorded:\n{text}"
    );
    let judged = check_paths(&[path], CheckOptions::default()).expect("a valid history");
    assert!(
        judged.report.violations.is_empty(),
        "{:?}",
        judged.report.violations
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_and_table_record_a_history_that_check_history_passes() {
    use fenced::postgres::{PostgresFencedTable, PostgresOptions, PostgresStore};
    let Some(url) = postgres_support::database_url("history roundtrip") else {
        return;
    };
    let dir = tempfile_dir("pg");
    let base = postgres_support::fresh_store(&url, "history", PostgresOptions::default()).await;
    let namespace = base.options().namespace().clone();
    // Each node has its own store handle, recording into its own history,
    // as separate processes would.
    let elect = move |owner: OwnerId, recorder: Recorder, stop: CancellationToken| {
        let options = PostgresOptions::default()
            .with_namespace(namespace.clone())
            .with_recorder(recorder.clone());
        let store = PostgresStore::new(&url, options).expect("valid options");
        let table: PostgresFencedTable = store.fenced_table();
        let write = move |token, _unit, owner: OwnerId, _recorder: Recorder| {
            let table = table.clone();
            Box::pin(async move {
                let resource = ResourceId::new("daily-report").expect("valid resource");
                let outcome = table.write(&resource, token, &owner, b"x").await;
                assert!(matches!(outcome, Ok(WriteOutcome::Accepted)), "{outcome:?}");
            }) as std::pin::Pin<Box<dyn Future<Output = ()> + Send>>
        };
        elect_with(store, Clock::new(), owner, recorder, stop, write)
    };
    let paths = handover(&dir, elect).await;
    let judged = check_paths(&paths, CheckOptions::default()).expect("valid histories");
    assert_clean_handover(&judged);
    let schema = postgres_support::schema_for("history");
    let url = std::env::var(postgres_support::URL_VAR).unwrap_or_default();
    postgres_support::drop_schema(&postgres_support::admin(&url).await, &schema).await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fenced-history-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}
