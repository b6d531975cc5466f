//! The zoo's connection lock (`[election] protocol = "connection-lock"`)
//! run for real: each node a `fenced-lab node --connection-lock` process
//! holding a session-level `pg_try_advisory_lock` on the real PostgreSQL
//! (through its proxy, with the scenario's server-side keepalives in its
//! startup packet), writing to the plain table, its history judged by the
//! simulator's checker beside the simulator's prediction of the same scaled
//! scenario and seed.
//!
//! Each run is a real `fenced-lab run --json` against the PostgreSQL in
//! `FENCED_POSTGRES_URL` (a failure, not a skip, with
//! `FENCED_REQUIRE_POSTGRES=1`), at `--time-scale 0.1`.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A scenario written for the lab's tests.
fn lab_scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
        .join(format!("{name}.toml"))
}

/// The figures both runs must agree on, and whether they do.
fn assert_same(comparison: &Value, keys: &[&str]) {
    let (real, simulated) = (&comparison["real"], &comparison["simulated"]);
    for key in keys {
        assert_eq!(real[key], simulated[key], "{key}: {comparison:#}");
    }
}

/// The owners of the real run's terms, in order.
fn owners(report: &Value) -> Vec<String> {
    report["terms"]
        .as_array()
        .expect("terms")
        .iter()
        .filter_map(|t| t["owner"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_holder_keeps_its_lock_for_real_and_the_simulation_agrees() {
    // The shipped story: node-a takes the lock and is SIGSTOPped for 4 s
    // (40 s scaled) in the middle of a unit of work. Its connection stays
    // open (keepalive probes are answered by a kernel, never by the
    // stopped process), so PostgreSQL keeps its session and its advisory
    // lock: node-b and node-c try every 0.5 s and never get it — the role
    // is stuck for the whole pause, and node-a leads on after it. Real and
    // simulated agree on every figure that must agree and on every
    // expectation.
    let Some(url) = support::database_url("connection_lock_gc_pause_for_real") else {
        return;
    };
    let scenario = support::scenario("connection-lock-gc-pause");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["judged"], true);
    assert_eq!(report["violations_total"], 0);
    assert_eq!(report["split_brain"], false);
    assert_eq!(owners(&report), ["node-a#1"], "{:#}", report["terms"]);
    assert_eq!(report["leader_changes"], 0);
    // The lab's pause was applied (node-a was really stopped).
    let applied = report["applied"].as_array().expect("applied");
    assert!(
        applied.iter().any(|a| a["effect"]
            .as_str()
            .is_some_and(|d| d.starts_with("SIGSTOP"))),
        "{applied:#?}"
    );
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(
        comparison,
        &["violations", "split_brain", "term_count", "max_token"],
    );
    // A tokenless design: no token in either run's store.
    assert_eq!(comparison["real"]["max_token"], 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_killed_holders_lock_is_freed_at_once_for_real_where_the_model_waits_for_keepalives() {
    // SIGKILL of the holder at 1.5 s. Both runs: one failover, no overlap,
    // no violation, a leader at the end — every expectation agrees. The
    // failover's length does not, and this pins the known disagreement
    // (lab/README.md, "Real vs simulated: connection-lock"): for real the
    // killed process's kernel closes its socket, the proxy passes the FIN
    // on, PostgreSQL ends the session and frees the lock at once, and a
    // follower takes it on its next try (0.5 s); the model ends the session
    // only on the server's keepalive verdict, 2 + 2 × 1 s after node-a was
    // last heard from (`fenced_zoo::connection_lock`).
    let Some(url) = support::database_url("connection_lock_crash_for_real") else {
        return;
    };
    let scenario = lab_scenario("lab-connection-lock-crash");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["violations_total"], 0);
    let comparison = &report["comparison"];
    assert_same(
        comparison,
        &["violations", "split_brain", "term_count", "max_token"],
    );
    let expectations = comparison["expectations"].as_array().expect("listed");
    assert!(
        expectations.iter().all(|e| e["agrees"] == true),
        "{comparison:#}"
    );
    let gap = |run: &str| {
        comparison[run]["failover_gaps_ms"][0]
            .as_u64()
            .unwrap_or_else(|| panic!("a {run} failover: {comparison:#}"))
    };
    let (real, simulated) = (gap("real"), gap("simulated"));
    // Real: the last write before the kill (up to one write interval,
    // 100 ms, earlier), plus at most one retry interval (500 ms), plus
    // scheduling — well under the 4 s keepalive verdict.
    assert!(real < 1_500, "real gap {real} ms: {comparison:#}");
    // Simulated: the keepalive verdict (4 s after node-a was last heard
    // from, at most one check interval before the kill) and the retry.
    assert!(
        (3_000..6_000).contains(&simulated),
        "simulated gap {simulated} ms: {comparison:#}"
    );
    assert_eq!(
        comparison["agrees"], false,
        "the model's crash waits for keepalives; if this now agrees, the model was changed: \
         update lab/README.md and this test: {comparison:#}"
    );
}
