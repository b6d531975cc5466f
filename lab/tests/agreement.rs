//! Agreement as a number, asserted: a few shipped scenarios, each run for
//! real three times at `--time-scale 0.1` beside its simulations, meet their
//! expectations and agree with the simulation on every compared figure in
//! every run — the README's agreement table says 10 / 10 for each; three
//! runs keep the suite short.

mod support;

/// `fenced-lab run SCENARIO --runs 3 --time-scale 0.1 --json` of the
/// shipped scenario `name`: every run meets `[expect]` and agrees with its
/// simulation on every compared figure.
async fn agrees_in_every_run(test: &str, name: &str) {
    let Some(url) = support::database_url(test) else {
        return;
    };
    let (code, tally) =
        support::run_json(&url, &support::scenario(name), "0.1", &["--runs", "3"], &[]).await;
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
    agrees_in_every_run("agreement_leader_crash", "leader-crash").await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_unfenced_gc_pause_splits_brain_and_agrees_in_every_run() {
    agrees_in_every_run("agreement_gc_pause_unfenced", "gc-pause-unfenced").await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_membership_flap_is_seen_for_real_and_agrees_in_every_run() {
    // node-c's heartbeats held back past its liveness TTL: the registry
    // drops it and takes it back. No process is told of the leave (and the
    // rejoin's answer may never reach node-c), so the runner's membership
    // watcher is what sees the flap that `min_membership_flaps` expects.
    agrees_in_every_run("agreement_membership_flap", "membership-heartbeat-loss").await;
}
