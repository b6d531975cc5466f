//! `fenced-lab run` end to end: refusals are bad input before anything
//! starts, a run applies its faults and leaves nothing behind, and so does
//! an interrupted or failed one.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use fenced_lab::supervisor::process_running;

fn lab() -> Command {
    let mut command = Command::new(support::program());
    command.stdin(Stdio::null());
    command
}

#[test]
fn a_scenario_the_lab_cannot_run_is_refused_naming_the_fault() {
    // Refused before any connection: the URL is never even resolved.
    let output = lab()
        .args(["run", "--postgres", "postgres://nobody@invalid.invalid/x"])
        .arg(support::scenario("lease-store-restart-volatile"))
        .args(["--time-scale", "0.1"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fault[1] (restart)"), "{stderr}");
    assert!(stderr.contains("durable = false"), "{stderr}");
}

#[test]
fn a_time_scale_out_of_range_is_bad_input() {
    for scale in ["0", "-0.5", "1001", "nan"] {
        let output = lab()
            .args(["run", "--postgres", "postgres://x@127.0.0.1:1/x"])
            .arg(support::scenario("steady-state"))
            .args(["--time-scale", scale])
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(2), "--time-scale {scale}");
    }
}

#[cfg(feature = "planted-bugs")]
#[test]
fn an_unknown_planted_bug_is_bad_input_naming_the_flag_and_the_known_bugs() {
    let output = lab()
        .args(["run", "--postgres", "postgres://x@127.0.0.1:1/x"])
        .arg(support::scenario("steady-state"))
        .args(["--plant", "no-such-bug"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--plant"), "{stderr}");
    assert!(stderr.contains("no-such-bug"), "{stderr}");
    assert!(stderr.contains("elector-ignores-deadline"), "{stderr}");
}

#[test]
fn a_database_that_cannot_be_reached_is_a_lab_failure_with_nothing_started() {
    // Port 1 refuses connections: exit 1, a clear message, no process.
    let output = lab()
        .args(["run", "--postgres", "postgres://postgres@127.0.0.1:1/x"])
        .arg(support::scenario("steady-state"))
        .args(["--time-scale", "0.1"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot connect to PostgreSQL"), "{stderr}");
    assert!(!stderr.contains("started node"), "{stderr}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_crash_and_restart_run_for_real_and_leave_nothing_behind() {
    // crash-restart at 1/20 speed: node-a#1 is SIGKILLed at 1.25 s, node-a#2
    // starts 150 ms later; the JSON report says so, and afterwards no
    // process and no schema of the run remain.
    let Some(url) = support::database_url("a_crash_and_restart_run_for_real") else {
        return;
    };
    let child = tokio::process::Command::new(support::program())
        .args(["run", "--postgres", &url, "--json", "--time-scale", "0.05"])
        .arg(support::scenario("crash-restart"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let runner = child.id().expect("pid");
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the run ends")
        .expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(report["scenario"], "crash-restart");
    assert_eq!(report["duration_ms"], 6000);
    let processes = report["processes"].as_array().expect("processes");
    let owners: Vec<&str> = processes
        .iter()
        .map(|p| p["owner"].as_str().expect("owner"))
        .collect();
    assert_eq!(owners, ["node-a#1", "node-a#2"]);
    assert_eq!(processes[0]["ending"], "killed (SIGKILL)");
    let applied = report["applied"].as_array().expect("applied");
    let crash = &applied[1];
    assert_eq!(crash["cause"], "fault[0]");
    assert_eq!(crash["planned_ms"], 1250);
    let late_ms = crash["real_ms"].as_u64().expect("ms") - 1250;
    assert!(late_ms < 200, "the crash came {late_ms} ms late");
    assert!(applied[2]["effect"]
        .as_str()
        .expect("effect")
        .starts_with("started node-a#2"));
    let downstream = report["downstream"].as_str().expect("downstream");
    assert!(
        downstream.contains("highest token 2 by node-a#2"),
        "{downstream}"
    );
    for process in processes {
        let pid = i32::try_from(process["pid"].as_i64().expect("pid")).expect("pid");
        assert!(!process_running(pid), "{process} survived the run");
    }
    let prefix = format!("fenced_lab_{runner}_");
    assert_eq!(
        support::schemas_like(&url, &prefix).await,
        Vec::<String>::new()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn ctrl_c_removes_every_process_and_the_schema() {
    // SIGINT in the middle of a run: exit 1 ("interrupted"), and everything
    // it started is gone.
    let Some(url) = support::database_url("ctrl_c_removes_every_process") else {
        return;
    };
    let logs = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(support::program())
        .args(["run", "--postgres", &url, "--time-scale", "0.1", "--keep"])
        .arg(logs.path())
        .arg(support::scenario("steady-state"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let runner = child.id().expect("pid");
    // Wait for node processes: their stdout files say their pids.
    let dir = logs.path().to_path_buf();
    let pids = move || -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
            .filter_map(|text| {
                let pid = text.split("start pid=").nth(1)?.split_whitespace().next()?;
                pid.parse().ok()
            })
            .collect()
    };
    let started = support::eventually(Duration::from_secs(20), || pids().len() == 3).await;
    assert!(started, "three nodes did not start");
    let pids = pids();
    support::interrupt(&mut child).await;
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use tokio::io::AsyncReadExt;
        let _ = pipe.read_to_string(&mut stderr).await;
    }
    assert!(stderr.contains("interrupted"), "{stderr}");
    for pid in pids {
        assert!(!process_running(pid), "node process {pid} survived Ctrl-C");
    }
    let prefix = format!("fenced_lab_{runner}_");
    assert_eq!(
        support::schemas_like(&url, &prefix).await,
        Vec::<String>::new()
    );
}

/// Starts `fenced-lab run` of steady-state (30 s at scale 0.1) and waits
/// until its schema exists; returns the child and the schema's name.
async fn a_running_runner(url: &str) -> (tokio::process::Child, String) {
    let child = tokio::process::Command::new(support::program())
        .args(["run", "--postgres", url, "--time-scale", "0.1", "--json"])
        .arg(support::scenario("steady-state"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("runs");
    let prefix = format!("fenced_lab_{}_", child.id().expect("pid"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(name) = support::schemas_like(url, &prefix).await.pop() {
            return (child, name);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no schema {prefix}* within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_schema_left_by_a_killed_runner_is_removed_and_a_live_run_s_is_kept() {
    // SIGKILL gives a runner no chance to drop its schema: it stays. `clean`
    // (and the next run, which calls the same code first) drops it — it is
    // marked by a runner of this host that is gone — and keeps the schema of
    // a run still going, and an unmarked schema with the runs' pattern.
    let Some(url) = support::database_url("killed_runner_schema") else {
        return;
    };
    let admin = fenced_lab::schema::connect(&url).await.expect("connects");
    let unmarked = "fenced_lab_999999999_0";
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {unmarked} CASCADE; CREATE SCHEMA {unmarked}"
        ))
        .await
        .expect("an unmarked schema");
    let (mut killed, left) = a_running_runner(&url).await;
    killed.kill().await.expect("SIGKILL");
    let _ = killed.wait().await;
    assert_eq!(
        support::schemas_like(&url, &left).await,
        vec![left.clone()],
        "SIGKILL leaves the schema behind"
    );
    let clean = || {
        let out = lab()
            .args(["clean", "--postgres", &url])
            .output()
            .expect("clean runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Other tests of this file may run alongside: their live schemas are
    // listed too, so each list is read for the names this test made.
    let listed = |said: &str, list: &str, name: &str| {
        said.split(list)
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .is_some_and(|names| names.contains(name))
    };
    let said = clean();
    // Gone after `clean`, and never judged live: dropped by it (listed as a
    // gone runner's) — or, when another test's runner started in between,
    // by that run's own clean-up first (`run` calls the same code), which
    // left `clean` nothing to list (seen once in CI, 4 tests at a time).
    assert!(!listed(&said, "of live runs", &left), "{said}");
    assert_eq!(
        support::schemas_like(&url, &left).await,
        Vec::<String>::new(),
        "{said}"
    );
    let (mut live, running) = a_running_runner(&url).await;
    let said = clean();
    assert!(listed(&said, "of live runs", &running), "{said}");
    assert!(
        !listed(&said, "of runners that are gone", &running),
        "{said}"
    );
    assert_eq!(
        support::schemas_like(&url, &running).await,
        vec![running.clone()]
    );
    assert_eq!(
        support::schemas_like(&url, unmarked).await,
        vec![unmarked.to_string()],
        "a schema without a runner's mark is never touched"
    );
    live.kill().await.expect("SIGKILL");
    let _ = live.wait().await;
    admin
        .batch_execute(&format!("DROP SCHEMA {unmarked}"))
        .await
        .expect("dropped");
    // The next run removes what the second kill left before making its own.
    let out = lab()
        .args(["run", "--postgres", &url, "--time-scale", "0.05"])
        .arg(support::scenario("steady-state"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&running), "{stderr}");
    assert_eq!(
        support::schemas_like(&url, &running).await,
        Vec::<String>::new()
    );
}

#[test]
fn a_campaign_s_bad_flags_are_refused_before_anything_starts() {
    // --runs is 1 to 1000 and runs neither a picture nor a kept directory.
    for (extra, says) in [
        (&["--runs", "0"][..], "--runs"),
        (&["--runs", "1001"][..], "--runs"),
        (&["--runs", "2", "--svg", "x.svg"][..], "--svg"),
        (&["--runs", "2", "--keep", "dir"][..], "--keep"),
    ] {
        let out = lab()
            .args(["run", "--postgres", "postgres://nobody@127.0.0.1:1/x"])
            .args(extra)
            .arg(support::scenario("steady-state"))
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_campaign_runs_the_scenario_again_with_the_next_seeds_and_counts_agreement() {
    // Two real runs of the store's clock step (9 s each at 0.1), seeds 5
    // and 6: each figure's agreement counted over both, one line per run.
    let Some(url) = support::database_url("campaign") else {
        return;
    };
    let out = lab()
        .args([
            "run",
            "--postgres",
            &url,
            "--time-scale",
            "0.1",
            "--runs",
            "2",
            "--json",
        ])
        .arg(support::scenario("store-clock-step-fenced"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("run 1/2 seed 5: PASS"), "{stderr}");
    assert!(stderr.contains("run 2/2 seed 6: PASS"), "{stderr}");
    let tally: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(tally["runs"], 2);
    assert_eq!(tally["passed"], 2);
    let seeds: Vec<u64> = tally["per_run"]
        .as_array()
        .expect("per_run")
        .iter()
        .map(|r| r["seed"].as_u64().expect("seed"))
        .collect();
    assert_eq!(seeds, [5, 6]);
    let figures: Vec<&str> = tally["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .map(|f| f["figure"].as_str().expect("name"))
        .collect();
    assert!(
        figures.contains(&"[expect] min_rejected_writes"),
        "{figures:?}"
    );
    for figure in tally["figures"].as_array().expect("figures") {
        assert_eq!(figure["compared"], 2, "{figure}");
    }
}
