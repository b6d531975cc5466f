//! Negative controls: each planted bug must be caught by the invariant that
//! names it, and the same scenario without the bug must be clean — so we know
//! the checker is not vacuous.
#![cfg(feature = "planted-bugs")]

mod common;

use common::*;
use fenced::PlantedBug;
use fenced_sim::{FaultSpec, Report, RunOptions, Scenario};

fn with_bug(scenario: &Scenario, bug: Option<PlantedBug>) -> Report {
    run(
        scenario,
        RunOptions {
            planted_bug: bug,
            ..RunOptions::with_seed(Some(1))
        },
    )
}

fn invariants(report: &Report) -> Vec<&str> {
    report
        .violations
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

/// Asserts the scenario is clean without the bug and breaks `invariant` with it.
fn caught(scenario: &Scenario, bug: PlantedBug, invariant: &str) -> Report {
    let clean = with_bug(scenario, None);
    assert_eq!(clean.violations, vec![], "the control run must be clean");
    let buggy = with_bug(scenario, Some(bug));
    assert!(
        invariants(&buggy).contains(&invariant),
        "{bug} should break {invariant}, got {:?}",
        invariants(&buggy)
    );
    assert!(!buggy.expect.met);
    assert_eq!(buggy.planted_bug.as_deref(), Some(bug.name()));
    buggy
}

fn leader_crash() -> Scenario {
    trio("leader-crash", secs(120)).with_fault(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(25),
        restart_after: None,
    })
}

#[test]
fn a_store_that_skips_the_token_bump_on_takeover_breaks_token_monotonicity() {
    // Proves the token-monotonic invariant catches a takeover that reuses the previous term's token.
    let report = caught(
        &leader_crash(),
        PlantedBug::StoreSkipsTokenBump,
        "token-monotonic",
    );
    assert!(
        report.violations[0].detail.contains("token 1"),
        "{:?}",
        report.violations[0]
    );
}

#[test]
fn a_store_that_bumps_the_token_on_renewal_breaks_token_monotonicity() {
    // Proves the token-monotonic invariant catches a renewal that changes the token.
    let report = caught(
        &trio("steady", secs(60)),
        PlantedBug::StoreBumpsTokenOnRenewal,
        "token-monotonic",
    );
    assert!(
        report.violations[0].detail.contains("renewal"),
        "{:?}",
        report.violations[0]
    );
}

#[test]
fn a_store_that_lets_a_second_owner_renew_breaks_lease_exclusivity() {
    // Proves the lease-exclusive invariant catches a second owner "renewing" a live lease it does not hold.
    caught(
        &trio("steady", secs(60)),
        PlantedBug::StoreLetsSecondOwnerRenew,
        "lease-exclusive",
    );
}

#[test]
fn an_elector_that_ignores_its_deadline_is_caught_as_split_brain_when_unfenced() {
    // Proves that a leader which never steps down on its local deadline, cut off from the store but not from the plain downstream, keeps writing after its successor: split-brain.
    let mut scenario = trio("deaf-leader", secs(120)).with_fault(FaultSpec::Partition {
        groups: vec![vec!["node-a".into()], vec!["lease-store".into()]],
        at: secs(15),
        duration: secs(60),
    });
    scenario.fencing = false;
    let report = caught(&scenario, PlantedBug::ElectorIgnoresDeadline, "split-brain");
    assert!(report.split_brain);
    assert!(invariants(&report).contains(&"local-deadline"));
}

#[test]
fn an_elector_that_ignores_its_deadline_is_caught_by_the_local_deadline_invariant_when_fenced() {
    // Proves the local-deadline invariant catches the same bug when fencing contains its writes: the leader starts units of work past its own deadline.
    let scenario = trio("deaf-leader", secs(120)).with_fault(FaultSpec::Partition {
        groups: vec![vec!["node-a".into()], vec!["lease-store".into()]],
        at: secs(15),
        duration: secs(60),
    });
    let report = caught(
        &scenario,
        PlantedBug::ElectorIgnoresDeadline,
        "local-deadline",
    );
    // Fencing still keeps the downstream safe: the late writes are rejected.
    assert!(!report.split_brain);
    assert!(report.writes.rejected_stale > 0);
    assert!(report.overlap_ms > 0);
}

#[test]
fn an_elector_that_drops_slow_answers_is_caught_by_liveness_on_a_slow_network() {
    // Proves explore's slow-network mix and the liveness invariant catch the first release's
    // rule (an answer to a re-sent request is ignored): with round trips longer than
    // retry_interval nobody leads after healing. Without the bug the same seeds are clean.
    use fenced_sim::explore::{default_base, run_seed};
    let base = default_base();
    let buggy = RunOptions {
        planted_bug: Some(PlantedBug::ElectorDropsSlowAnswers),
        ..RunOptions::default()
    };
    let outcomes: Vec<_> = (0..40u64)
        .map(|seed| run_seed(&base, seed, &buggy))
        .collect();
    let slow: Vec<_> = outcomes
        .iter()
        .filter(|o| o.mix.iter().any(|m| m == "slow-network"))
        .collect();
    assert!(!slow.is_empty(), "40 seeds draw a slow network");
    for o in &slow {
        assert_eq!(o.invariant.as_deref(), Some("liveness"), "seed {}", o.seed);
        let clean = run_seed(&base, o.seed, &RunOptions::default());
        assert!(
            clean.ok,
            "seed {} without the bug: {:?}",
            o.seed, clean.detail
        );
    }
    // Seeds without a slow network never meet a late answer: the bug shows only where one is.
    assert!(outcomes
        .iter()
        .filter(|o| !o.ok)
        .all(|o| o.mix.iter().any(|m| m == "slow-network")));
}

#[test]
fn a_downstream_that_accepts_a_lower_token_breaks_the_single_writer_invariant() {
    // Proves the single-writer invariant catches a fenced store that accepts a stale token (here, the paused leader's late write).
    let scenario = trio("pause", secs(120)).with_fault(pause_a(secs(40)));
    let report = caught(
        &scenario,
        PlantedBug::DownstreamAcceptsLowerToken,
        "single-writer",
    );
    assert!(
        report.split_brain,
        "the accepted stale write is also a split-brain write"
    );
}

#[test]
fn explore_finds_every_planted_bug_quickly_and_shrinks_it_small() {
    // Proves exploration on the default mix finds each planted bug within a few seeds, and shrinking turns the first failing seed into a standalone scenario with at most two faults that still breaks the same invariant.
    use fenced_sim::explore::{default_base, generate, run_seed};
    let base = default_base();
    // The first six planted bugs, each found within a few seeds; the subtler
    // ones, which need up to 2 000, are in `planted_subtle.rs`.
    for bug in &PlantedBug::ALL[..6] {
        let bug = *bug;
        let options = RunOptions {
            planted_bug: Some(bug),
            ..RunOptions::default()
        };
        let found = (0..20u64)
            .map(|seed| run_seed(&base, seed, &options))
            .find(|o| !o.ok)
            .unwrap_or_else(|| panic!("{bug} not found in 20 seeds"));
        let (scenario, _) = generate(&base, found.seed);
        let shrunk = fenced_sim::shrink::shrink(&scenario, &options, 2000).unwrap();
        assert_eq!(
            Some(shrunk.invariant.as_str()),
            found.invariant.as_deref(),
            "{bug}"
        );
        assert!(
            shrunk.faults_after <= 2,
            "{bug}: {:#?}",
            shrunk.scenario.faults
        );
        let again = run(&shrunk.scenario, options.clone());
        assert!(
            invariants(&again).contains(&shrunk.invariant.as_str()),
            "{bug}"
        );
        // Without the bug the shrunk scenario is clean: the bug, not the schedule, breaks it.
        assert_eq!(
            run(&shrunk.scenario, RunOptions::default()).violations,
            vec![],
            "{bug}"
        );
    }
}
