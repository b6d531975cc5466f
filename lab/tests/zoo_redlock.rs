//! Redlock (`[election] protocol = "redlock"`) run for real: the runner
//! starts five `redis-server`s of its own, each node a `fenced-lab node
//! --redlock` process following redlock-rb's `lock` through a proxy per
//! instance, writing to the plain table, its history judged by the
//! simulator's checker beside the simulator's prediction of the same scaled
//! scenario and seed.
//!
//! Each run is a real `fenced-lab run --json` against the PostgreSQL in
//! `FENCED_POSTGRES_URL` (a failure, not a skip, with
//! `FENCED_REQUIRE_POSTGRES=1`) and the Debian `redis-server` (a failure,
//! not a skip, with `FENCED_REQUIRE_ZOO_SERVERS=1`). Time scale 0.2 to
//! 0.5: at 0.1 redlock-rb's 0.1 s `redis_timeout` would be 10 ms, under the
//! lab's 20 ms floor (refused by name; `refuses_a_redis_timeout_under_the_floor`).
//! The runs take turns ([`SERIAL`]): two at once on a two-core machine
//! would make a 20 ms bound measure the machine.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// One real run at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The database and `redis-server`, or `None` after a loud skip.
fn servers(test: &str) -> Option<String> {
    let url = support::database_url(test)?;
    let redis = fenced_lab::servers::redis::program("redis");
    support::zoo_server(test, redis).then_some(url)
}

use support::{applied, assert_same, MUST_AGREE};

#[tokio::test(flavor = "current_thread")]
async fn a_step_of_one_instances_clock_gives_two_majorities_for_real() {
    // Kleppmann's counterexample: node-a holds redis-1..3 (cut from 4 and
    // 5), node-b reaches only 3..5. redis-3's wall clock (its own
    // redis-server's, through the shim) jumps 10 s (20 s scaled) forward:
    // node-a's key there expires at once, node-b wins 3, 4 and 5 — a
    // second majority — and both write until node-a's next extend fails.
    // Real and simulated agree: split-brain, two terms, same violations.
    let Some(url) = servers("redlock_clock_jump_for_real") else {
        return;
    };
    let _turn = SERIAL.lock().await;
    let scenario = support::scenario("redlock-clock-jump");
    // At 0.5, not 0.2: at 0.2 a loaded machine's scheduling let node-a win
    // its lock back once in a full-suite run (three terms for real, two
    // simulated); the story's timings want the slack.
    let (code, report) = support::run_json(&url, &scenario, "0.5", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], true);
    assert!(applied(&report, "redis-3's wall clock stepped +10.000s"));
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(&report, &MUST_AGREE);
    assert_eq!(comparison["real"]["term_count"], 2);
    // A tokenless design: no token in either run's store.
    assert_eq!(comparison["real"]["max_token"], 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_holders_late_write_lands_after_the_new_holders_for_real() {
    // The GC-pause diagram: node-a is SIGSTOPped 8 s (40 s scaled) 4 ms
    // into a unit (anchored to its work-started); its keys expire on every
    // instance by their own clocks, a follower wins a majority and writes,
    // and node-a's unit, resumed, writes after it: split-brain, for real
    // and in the simulation.
    let Some(url) = servers("redlock_gc_pause_for_real") else {
        return;
    };
    let _turn = SERIAL.lock().await;
    let scenario = support::lab_scenario("lab-redlock-gc-pause");
    let (code, report) = support::run_json(&url, &scenario, "0.2", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], true);
    assert!(applied(&report, "SIGSTOP node-a#1"));
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(&report, &MUST_AGREE);
}

#[tokio::test(flavor = "current_thread")]
async fn a_restart_without_persistence_gives_two_majorities_and_a_durable_one_a_safe_failover() {
    // The page's crash-recovery hazard, for real: redis-3 (which node-a
    // holds with redis-1 and 2) is SIGKILLed and started again 0.15 s
    // later. Started empty, it lets node-b win 3, 4 and 5: split-brain.
    // Started from its append-only file (fsync always), it still holds
    // node-a's key (its absolute expiry with it), so node-b never wins
    // while node-a holds — but the kill reset node-a's connection, and
    // redis-client does not reconnect (`reconnect_attempts: false`): its
    // next extend fails on that socket, unlocks everywhere and steps
    // down, and node-b takes over: two terms, no split-brain. Both agree
    // with the simulation. At scale 0.3 and 0.5: the durable instance
    // fsyncs every write before it answers, and on this machine's disk an
    // fsync sometimes outlasts a 20 or 30 ms redis_timeout (lab/README.md,
    // "Redlock for real").
    let Some(url) = servers("redlock_restarts_for_real") else {
        return;
    };
    let _turn = SERIAL.lock().await;
    let volatile = support::scenario("redlock-restart-without-persistence");
    let (code, report) = support::run_json(&url, &volatile, "0.3", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], true);
    assert!(applied(&report, "SIGKILL redis-3"));
    assert!(applied(&report, "restarted redis-3 empty"));
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(&report, &MUST_AGREE);

    let durable = support::scenario("redlock-restart-durable");
    let (code, report) = support::run_json(&url, &durable, "0.5", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], false);
    assert_eq!(report["leader_changes"], 1);
    assert!(applied(
        &report,
        "restarted redis-3 from its append-only file"
    ));
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(&report, &MUST_AGREE);
    assert_eq!(comparison["real"]["term_count"], 2);
}

#[tokio::test(flavor = "current_thread")]
async fn refuses_a_redis_timeout_under_the_floor() {
    // At 0.1 the 0.1 s redis_timeout is 10 ms: refused by name, exit 2,
    // before anything starts.
    let output = std::process::Command::new(support::program())
        .args([
            "run",
            "--postgres",
            "host=127.0.0.1 port=1",
            "--time-scale",
            "0.1",
        ])
        .arg(support::scenario("redlock-clock-jump"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("election.redlock.redis_timeout") && stderr.contains("10ms"),
        "{stderr}"
    );
}

/// Asserts that nothing of the run of runner `pid`, which kept its
/// directory in `dir`, is left: no process mentions `dir` or the run's
/// data directory on tmpfs (`/dev/shm/fenced-lab-redis-<pid>-…`), and
/// neither that directory nor any `*.data` in `dir` exists.
fn assert_nothing_left(pid: u32, dir: &Path) {
    let prefix = format!("fenced-lab-redis-{pid}-");
    let data: Vec<PathBuf> = std::fs::read_dir("/dev/shm")
        .expect("/dev/shm")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .chain(
            std::fs::read_dir(dir)
                .expect("the kept directory")
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".data"))
                .map(|e| e.path()),
        )
        .collect();
    assert!(data.is_empty(), "data directories left: {data:?}");
    let stray = support::processes_mentioning(dir);
    assert!(
        stray.is_empty(),
        "processes {stray:?} mention {}",
        dir.display()
    );
    let stray = instances_of(pid);
    assert!(
        stray.is_empty(),
        "redis-servers {stray:?} of runner {pid} still run"
    );
}

/// The run's `redis-server`s: the live processes working in its tmpfs
/// directory (`/proc/PID/cwd`; Redis rewrites its command line to
/// `redis-server 127.0.0.1:PORT`, so the data directory is not in it).
fn instances_of(pid: u32) -> Vec<i32> {
    let prefix = format!("/dev/shm/fenced-lab-redis-{pid}-");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&process| {
            std::fs::read_link(format!("/proc/{process}/cwd"))
                .is_ok_and(|cwd| cwd.to_string_lossy().starts_with(&prefix))
                && fenced_lab::supervisor::process_running(process)
        })
        .collect()
}

/// Starts `fenced-lab run` of `scenario` at 0.2, kept in `dir`.
fn start_run(url: &str, scenario: &Path, dir: &Path) -> tokio::process::Child {
    tokio::process::Command::new(support::program())
        .args(["run", "--postgres", url, "--time-scale", "0.2", "--keep"])
        .arg(dir)
        .arg(scenario)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("runs")
}

#[tokio::test(flavor = "current_thread")]
async fn nothing_is_left_running_or_on_disk_after_a_run_or_an_interrupt() {
    // The five instances' logs are in the run's directory (kept here, so
    // the test can look), their data on tmpfs: after a run that ends, and
    // after one interrupted (SIGINT) while its nodes and instances run, no
    // redis-server of the run is left and no data directory either — only
    // logs.
    let Some(url) = servers("redlock_nothing_left") else {
        return;
    };
    let _turn = SERIAL.lock().await;
    let scenario = support::scenario("redlock-clock-jump");
    for interrupt in [false, true] {
        let parent = tempfile::tempdir().expect("a directory");
        let kept = parent.path().join("run");
        let mut run = start_run(&url, &scenario, &kept);
        let pid = run.id().expect("a pid");
        let started = support::eventually(Duration::from_secs(30), || {
            kept.join("node-b#1.jsonl").exists()
        })
        .await;
        assert!(started, "the run's nodes started");
        assert_eq!(instances_of(pid).len(), 5, "five instances run");
        if interrupt {
            // SAFETY: a plain system call on the child this test started.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
        }
        let status = tokio::time::timeout(Duration::from_secs(60), run.wait())
            .await
            .expect("it ends")
            .expect("status");
        if interrupt {
            assert_eq!(status.code(), Some(1));
        } else {
            assert!(matches!(status.code(), Some(0 | 1)), "{status}");
        }
        assert!(
            kept.join("redis-5.log").exists(),
            "the instances logged there"
        );
        assert_nothing_left(pid, &kept);
    }
}
