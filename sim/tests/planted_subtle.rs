//! Negative controls that are not one-seed trivial: each of these planted bugs
//! needs a particular schedule (a lost renewal, a restart within the lease, a
//! zombie, a late answer) before it shows. Exploration over the default mix
//! must find each within 2 000 seeds, by the invariant that names it, and
//! shrinking must turn the first find into a scenario of at most three faults
//! that is clean without the bug. Seeds-to-first-find over several start
//! offsets, with the release binary, are in the README's table; this file
//! checks one offset.
#![cfg(feature = "planted-bugs")]

use fenced::PlantedBug;
use fenced_sim::explore::{default_base, generate, run_seed};
use fenced_sim::{RunOptions, Simulation};

/// The bugs, each with the invariant that must catch it.
const SUBTLE: [(PlantedBug, &str); 10] = [
    (PlantedBug::ElectorAnchorsAtArrival, "local-deadline"),
    (PlantedBug::ElectorMatchesNewestRequest, "local-deadline"),
    (PlantedBug::ElectorDeadlineWithoutMargin, "local-deadline"),
    (PlantedBug::ElectorAppliesStaleAnswer, "local-deadline"),
    (
        PlantedBug::StoreReleaseDeletesUnconditionally,
        "lease-exclusive",
    ),
    (PlantedBug::StoreRenewsLapsedLease, "token-monotonic"),
    (PlantedBug::StoreTruncatesExpiryToSeconds, "lease-exclusive"),
    (PlantedBug::StoreKeysLeaseByHost, "lease-exclusive"),
    (PlantedBug::StoreForgetsTokenOnRelease, "token-monotonic"),
    (PlantedBug::DownstreamTrustsSameHost, "single-writer"),
];

/// The most seeds a bug may take to be found.
const SEEDS_MAX: u64 = 2_000;

fn violations(scenario: &fenced_sim::Scenario, options: &RunOptions) -> Vec<String> {
    let mut sim = Simulation::from_scenario(scenario, options.clone()).unwrap();
    sim.run_to_end();
    sim.report()
        .violations
        .iter()
        .map(|v| v.invariant.clone())
        .collect()
}

fn found_and_shrunk(bug: PlantedBug, invariant: &str) {
    let base = default_base();
    let options = RunOptions {
        planted_bug: Some(bug),
        ..RunOptions::default()
    };
    let found = (0..SEEDS_MAX)
        .map(|seed| run_seed(&base, seed, &options))
        .find(|o| !o.ok)
        .unwrap_or_else(|| panic!("{bug} not found in {SEEDS_MAX} seeds"));
    assert_eq!(
        found.invariant.as_deref(),
        Some(invariant),
        "{bug}: {found:?}"
    );
    let (scenario, _) = generate(&base, found.seed);
    let shrunk = fenced_sim::shrink::shrink(&scenario, &options, 2_000).unwrap();
    assert_eq!(shrunk.invariant, invariant, "{bug}");
    assert!(
        shrunk.faults_after <= 3,
        "{bug}: {:#?}",
        shrunk.scenario.faults
    );
    assert!(
        violations(&shrunk.scenario, &options).contains(&invariant.to_string()),
        "{bug}: the shrunk scenario must still break {invariant}"
    );
    // Without the bug the shrunk scenario is clean: the bug, not the schedule, breaks it.
    assert_eq!(
        violations(&shrunk.scenario, &RunOptions::default()),
        Vec::<String>::new(),
        "{bug}"
    );
}

#[test]
fn every_subtle_bug_is_in_the_list_of_all_planted_bugs() {
    // Proves the table above and `PlantedBug::ALL` agree, so a new bug cannot be left untested here by accident.
    for (bug, _) in SUBTLE {
        assert!(PlantedBug::ALL.contains(&bug), "{bug}");
        assert_eq!(bug.name().parse::<PlantedBug>(), Ok(bug));
    }
}

#[test]
fn an_elector_that_anchors_validity_at_the_answers_arrival_is_found_and_shrunk() {
    // Proves explore finds a deadline measured from the answer's arrival (local-deadline) and shrinks it small.
    found_and_shrunk(SUBTLE[0].0, SUBTLE[0].1);
}

#[test]
fn an_elector_that_matches_an_answer_to_the_newest_request_is_found_and_shrunk() {
    // Proves explore finds an answer anchored at a later request's send (local-deadline) and shrinks it small.
    found_and_shrunk(SUBTLE[1].0, SUBTLE[1].1);
}

#[test]
fn an_elector_without_a_safety_margin_is_found_and_shrunk() {
    // Proves explore finds a deadline of the whole TTL (local-deadline) and shrinks it small.
    found_and_shrunk(SUBTLE[2].0, SUBTLE[2].1);
}

#[test]
fn an_elector_that_applies_a_stale_answer_is_found_and_shrunk() {
    // Proves explore finds a duplicate or overtaken answer applied to the newest request (local-deadline) and shrinks it small.
    found_and_shrunk(SUBTLE[3].0, SUBTLE[3].1);
}

#[test]
fn a_store_whose_release_deletes_unconditionally_is_found_and_shrunk() {
    // Proves explore finds a release that frees another holder's lease (lease-exclusive) and shrinks it small.
    found_and_shrunk(SUBTLE[4].0, SUBTLE[4].1);
}

#[test]
fn a_store_that_renews_a_lapsed_lease_is_found_and_shrunk() {
    // Proves explore finds a lapsed lease handed back without a new token (token-monotonic) and shrinks it small.
    found_and_shrunk(SUBTLE[5].0, SUBTLE[5].1);
}

#[test]
fn a_store_that_truncates_expiry_to_seconds_is_found_and_shrunk() {
    // Proves explore finds a lease that ends up to a second early (lease-exclusive) and shrinks it small.
    found_and_shrunk(SUBTLE[6].0, SUBTLE[6].1);
}

#[test]
fn a_store_that_keys_the_lease_by_host_is_found_and_shrunk() {
    // Proves explore finds a restarted process renewing its dead predecessor's lease (lease-exclusive) and shrinks it small.
    found_and_shrunk(SUBTLE[7].0, SUBTLE[7].1);
}

#[test]
fn a_store_that_forgets_its_token_on_release_is_found_and_shrunk() {
    // Proves explore finds tokens restarting at 1 after a release (token-monotonic) and shrinks it small.
    found_and_shrunk(SUBTLE[8].0, SUBTLE[8].1);
}

#[test]
fn a_downstream_that_trusts_a_writer_on_the_same_host_is_found_and_shrunk() {
    // Proves explore finds a zombie's lower-token write accepted by host (single-writer) and shrinks it small.
    found_and_shrunk(SUBTLE[9].0, SUBTLE[9].1);
}
