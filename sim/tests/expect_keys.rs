//! Each unmet expectation's sentence begins with its key, which the lab's
//! per-expectation agreement (`ExpectOutcome::unmet_because`) relies on.

use std::time::Duration;

use fenced_sim::{Expectations, RunOptions, Scenario, Simulation};

#[test]
fn every_unmet_sentence_begins_with_a_checked_key() {
    // A quiet one-node run against expectations it fails: one sentence per
    // checked key, each found by its key, none by a prefix of a key.
    let mut scenario = Scenario::new("one", Duration::from_secs(30)).with_nodes(["a"]);
    scenario.expect = Expectations {
        split_brain: Some(true),
        violations: Some(3),
        min_leader_changes: Some(1),
        max_leader_changes: None,
        max_failover: None,
        max_spurious_failovers: None,
        min_spurious_failovers: Some(1),
        min_rejected_writes: Some(1),
        max_overlap: None,
        min_overlap: Some(Duration::from_secs(2)),
        max_token: Some(0),
        min_membership_flaps: Some(1),
        leader_at_end: Some(false),
        anchors_begin: None,
    };
    let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).expect("valid");
    sim.run_to_end();
    let outcome = sim.report().expect;
    let keys = scenario.expect.checked_keys();
    assert_eq!(outcome.unmet.len(), keys.len(), "{:#?}", outcome.unmet);
    for key in &keys {
        assert!(
            outcome.unmet_because(key).is_some(),
            "{key}: {:#?}",
            outcome.unmet
        );
    }
    assert_eq!(outcome.unmet_because("min"), None);
    assert!(outcome
        .unmet_because("min_overlap")
        .is_some_and(|s| s.starts_with("min_overlap: expected at least 2s")));
}

#[test]
fn the_upper_bounds_fail_with_their_own_keys_too() {
    // The keys a quiet run cannot fail: the shipped unfenced GC pause has a
    // takeover, a failover gap and a belief overlap, so upper bounds of 0
    // fail, each sentence found by its key.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/gc-pause-unfenced.toml"
    );
    let mut scenario: Scenario = fenced_sim::file::load(path.as_ref()).expect("shipped");
    scenario.expect = Expectations {
        split_brain: Some(true),
        max_leader_changes: Some(0),
        max_failover: Some(Duration::from_millis(1)),
        max_overlap: Some(Duration::ZERO),
        ..Expectations::default()
    };
    let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).expect("valid");
    sim.run_to_end();
    let outcome = sim.report().expect;
    for key in ["max_leader_changes", "max_failover", "max_overlap"] {
        assert!(
            outcome.unmet_because(key).is_some(),
            "{key}: {:#?}",
            outcome.unmet
        );
    }
    assert_eq!(
        outcome.unmet_because("split_brain"),
        None,
        "{:#?}",
        outcome.unmet
    );
    assert_eq!(outcome.unmet.len(), 3, "{:#?}", outcome.unmet);
}

#[test]
fn spurious_failovers_above_the_bound_fail_with_their_key() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/renew-too-close-under-loss.toml"
    );
    let mut scenario: Scenario = fenced_sim::file::load(path.as_ref()).expect("shipped");
    scenario.expect.max_spurious_failovers = Some(0);
    let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).expect("valid");
    sim.run_to_end();
    let outcome = sim.report().expect;
    assert!(
        outcome.unmet_because("max_spurious_failovers").is_some(),
        "{:#?}",
        outcome.unmet
    );
}
