//! Curator's `LeaderLatch` on ZooKeeper (`[election] protocol =
//! "zookeeper"`) run for real: each node a `fenced-lab node --zookeeper`
//! process driving the zoo model's client against a real standalone
//! ZooKeeper the run starts itself (through the node's proxy, speaking
//! ZooKeeper's wire protocol), writing to the fenced or the plain table,
//! its history judged by the simulator's checker beside the simulator's
//! prediction of the same scaled scenario and seed.
//!
//! Each run is a real `fenced-lab run --json` at `--time-scale 0.1`,
//! against the PostgreSQL in `FENCED_POSTGRES_URL` (a failure, not a skip,
//! with `FENCED_REQUIRE_POSTGRES=1`) and Debian's ZooKeeper and `java` (a
//! failure, not a skip, with `FENCED_REQUIRE_ZOO_SERVERS=1`).

mod support;

use std::path::Path;
use std::time::Duration;

use fenced_lab::design::Design;
use fenced_lab::faketime::FaketimeSupport;
use fenced_lab::plan::{load, LabPlan, PlanError, PlanOptions, TimeScale};
use fenced_lab::servers::zookeeper;
use fenced_zoo::zookeeper::ErrorPolicy;
use serde_json::Value;

use support::{applied, MUST_AGREE};

/// The two runs whose margins are a fraction of a real second (a pause 2 s
/// of the run past a 6 s session, at 0.1) and the one that starts a second
/// JVM mid-run (a restart: a second or so of both cores) take turns, so the
/// JVM's start never lands inside the other's margin.
static TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// PostgreSQL's URL, `java` and ZooKeeper's jar, or `None` after saying
/// why the test skips.
fn servers(test: &str) -> Option<String> {
    let url = support::database_url(test)?;
    let installed = support::zoo_server(test, zookeeper::java("zookeeper"))
        && support::zoo_server(test, zookeeper::classpath("zookeeper"));
    installed.then_some(url)
}

/// Every figure that must agree agrees, and the comparison says so.
fn assert_agrees(report: &Value) {
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    support::assert_same(report, &MUST_AGREE);
}

fn plan(path: &Path) -> Result<LabPlan, PlanError> {
    let options = PlanOptions {
        time_scale: TimeScale::new(0.1).expect("valid"),
        seed: None,
        faketime: FaketimeSupport::NotProbed,
    };
    LabPlan::new(&load(path).expect("loads"), &options)
}

#[test]
fn zookeeper_scenarios_plan_with_the_scaled_session_and_tick_and_refuse_clock_steps() {
    // Proves the plan gives every node the latch's design with Curator's
    // 60 s session and the server's 3 s tick scaled to 6 s and 300 ms (so
    // the server's [2, 20]-tick clamp grants what the model grants) and
    // the policy kept; and that a step of ZooKeeper's clock and of a
    // node's are refused by name, with the reason.
    let session = plan(&support::scenario("zookeeper-session-policy-partition")).expect("plans");
    for node in &session.nodes {
        let Design::ZooKeeper(settings) = &node.design else {
            panic!("{}: {:?}", node.id, node.design);
        };
        assert_eq!(settings.session_timeout, Duration::from_secs(6));
        assert_eq!(settings.tick_time, Duration::from_millis(300));
        assert_eq!(settings.error_policy, ErrorPolicy::Session);
    }
    let Err(PlanError::Refused(refusals)) =
        plan(&support::lab_scenario("lab-zookeeper-clock-steps"))
    else {
        panic!("lab-zookeeper-clock-steps should be refused");
    };
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert_eq!(refusals[0].what, "fault[0] (clock-jump)", "{refusals:?}");
    assert!(refusals[0].why.contains("System.nanoTime"), "{refusals:?}");
    assert_eq!(refusals[1].what, "fault[1] (clock-jump)", "{refusals:?}");
    assert!(
        refusals[1].why.contains("checkSessionExpiration"),
        "{refusals:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_session_policy_leads_on_past_the_servers_expiry_for_real() {
    // The shipped story: node-a's pings to ZooKeeper stall one way in its
    // proxy from 1.2 s for 12 s (scale 0.1: a 6 s session, 4 s read
    // timeout). The server expires node-a's session on its own clock and
    // deletes its node; node-b's watch fires and it leads. node-a, under
    // the session policy, SUSPENDED since its read timeout, leads on until
    // ZOOKEEPER-4508's client-side expiry (8 s after it last heard):
    // split-brain on the plain table, for real as in the simulation.
    let Some(url) = servers("zookeeper_session_policy_for_real") else {
        return;
    };
    let logs = tempfile::tempdir().expect("tempdir");
    let keep = logs.path().to_string_lossy().into_owned();
    let scenario = support::scenario("zookeeper-session-policy-partition");
    let (code, report) =
        support::run_json(&url, &scenario, "0.1", &["--keep", keep.as_str()], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], true);
    assert!(
        applied(&report, "node-a -> lease-store: stalled"),
        "{:#}",
        report["applied"]
    );
    assert_agrees(&report);
    // No process of ZooKeeper is left; a kept run keeps its log and its
    // data directory, whose transaction log says in which order the server
    // took the clients' writes (TxnLogToolkit).
    let data = logs.path().join("zookeeper.data");
    let txn_logs = std::fs::read_dir(data.join("data").join("version-2"))
        .expect("the kept data directory")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("log."))
        .count();
    assert!(txn_logs >= 1, "no transaction log in {}", data.display());
    assert!(logs.path().join("zookeeper.log").exists());
    assert_eq!(
        support::processes_mentioning(logs.path()),
        Vec::<i32>::new()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_standard_policy_gives_up_before_the_servers_expiry_for_real() {
    // The twin: the same stall under Curator's default policy. node-a gives
    // leadership up on SUSPENDED, at its read timeout (4 s after it last
    // heard), before the server expires its session (6 s) and node-b
    // leads: one failover, no overlap, in both runs.
    let Some(url) = servers("zookeeper_standard_policy_for_real") else {
        return;
    };
    let scenario = support::scenario("zookeeper-standard-policy-partition");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["split_brain"], false);
    assert_eq!(report["violations_total"], 0);
    assert_agrees(&report);
}

#[tokio::test(flavor = "current_thread")]
async fn a_leader_paused_past_its_session_is_succeeded_and_fenced_for_real() {
    // node-a SIGSTOPped 8 s against its 6 s session: ZooKeeper expires the
    // session and deletes its node, a follower's watch fires and it leads
    // with a newer czxid; node-a wakes past its read timeout and starts no
    // unit. One failover, the same tokens, no violation, in both runs.
    let Some(url) = servers("zookeeper_paused_leader_for_real") else {
        return;
    };
    let _turn = TURNS.lock().await;
    let scenario = support::lab_scenario("lab-zookeeper-paused-leader");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert!(applied(&report, "SIGSTOP"), "{:#}", report["applied"]);
    assert_eq!(report["leader_changes"], 1);
    assert_agrees(&report);
}

#[tokio::test(flavor = "current_thread")]
async fn ctrl_c_removes_zookeeper_and_its_data() {
    // SIGINT while a ZooKeeper run is under way: exit 1, and the JVM, its
    // data directory and every node process are gone.
    let Some(url) = servers("ctrl_c_removes_zookeeper_and_its_data") else {
        return;
    };
    support::ctrl_c_removes_the_server_and_its_data(
        &url,
        "zookeeper-standard-policy-partition",
        "zookeeper.data",
        Duration::from_secs(60),
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_zookeeper_shorter_than_the_read_timeout_changes_nothing() {
    // SIGSTOP of the JVM 2 s against a 6 s session (4 s read timeout): no
    // read timeout and no expiry passes, the queued pings are answered on
    // SIGCONT, and node-a leads on: one term, in both runs.
    let Some(url) = servers("zookeeper_server_paused_for_real") else {
        return;
    };
    let scenario = support::lab_scenario("lab-zookeeper-server-paused");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert!(
        applied(&report, "zookeeper: SIGSTOP"),
        "{:#}",
        report["applied"]
    );
    assert!(
        applied(&report, "zookeeper: SIGCONT"),
        "{:#}",
        report["applied"]
    );
    assert_eq!(report["leader_changes"], 0);
    assert_agrees(&report);
}

#[tokio::test(flavor = "current_thread")]
async fn a_restarted_zookeeper_resumes_every_session_in_a_new_epoch_for_real() {
    // The JVM killed at 12 s and started over its data at 32 s (a 60 s
    // session): every socket closes at the kill, node-a suspends and gives
    // up (Standard policy), reconnects to its session once the server is
    // back (a refused connect is tried again after a second) and leads again
    // with its node's czxid: two terms of node-a, the same token, in both
    // runs.
    let Some(url) = servers("zookeeper_server_restart_for_real") else {
        return;
    };
    let _turn = TURNS.lock().await;
    let scenario = support::lab_scenario("lab-zookeeper-server-restart");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert!(
        applied(&report, "zookeeper: SIGKILL"),
        "{:#}",
        report["applied"]
    );
    assert!(applied(&report, "zookeeper: started again"));
    assert_eq!(report["leader_changes"], 0);
    assert_eq!(report["terms"].as_array().map(Vec::len), Some(2));
    assert_agrees(&report);
}
