//! Agreement as a number, asserted: a few shipped scenarios, each run for
//! real three times at `--time-scale 0.1` beside its simulations, meet their
//! expectations and agree with the simulation on every compared figure in
//! every run — the README's agreement table says 10 / 10 for each; three
//! runs keep the suite short.

mod support;

use serde_json::Value;

/// `fenced-lab run SCENARIO --runs 3 --time-scale 0.1 --json`.
async fn campaign(url: &str, name: &str) -> (i32, Value) {
    support::run_json(url, &support::scenario(name), "0.1", &["--runs", "3"], &[]).await
}

fn assert_all_agree(name: &str, code: i32, tally: &Value) {
    assert_eq!(code, 0, "{name}: {tally:#}");
    assert_eq!(tally["runs"], 3, "{name}");
    assert_eq!(tally["passed"], 3, "{name}: {:#}", tally["per_run"]);
    assert_eq!(tally["compared"], 3, "{name}");
    assert_eq!(tally["agreed"], 3, "{name}: {:#}", tally["per_run"]);
    for figure in tally["figures"].as_array().expect("figures") {
        assert_eq!(figure["agreed"], figure["compared"], "{name}: {figure}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_crashed_leader_agrees_in_every_run() {
    let Some(url) = support::database_url("agreement_leader_crash") else {
        return;
    };
    let (code, tally) = campaign(&url, "leader-crash").await;
    assert_all_agree("leader-crash", code, &tally);
}

#[tokio::test(flavor = "current_thread")]
async fn the_unfenced_gc_pause_splits_brain_and_agrees_in_every_run() {
    let Some(url) = support::database_url("agreement_gc_pause_unfenced") else {
        return;
    };
    let (code, tally) = campaign(&url, "gc-pause-unfenced").await;
    assert_all_agree("gc-pause-unfenced", code, &tally);
}

#[tokio::test(flavor = "current_thread")]
async fn a_membership_flap_is_seen_for_real_and_agrees_in_every_run() {
    // node-c's heartbeats held back past its liveness TTL: the registry
    // drops it and takes it back. No process is told of the leave (and the
    // rejoin's answer may never reach node-c), so the runner's membership
    // watcher is what sees the flap that `min_membership_flaps` expects.
    let Some(url) = support::database_url("agreement_membership_flap") else {
        return;
    };
    let (code, tally) = campaign(&url, "membership-heartbeat-loss").await;
    assert_all_agree("membership-heartbeat-loss", code, &tally);
}
