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
