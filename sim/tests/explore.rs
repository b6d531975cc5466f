//! Swarm exploration: determinism of campaigns, sharding, coverage of the
//! default mix, the liveness phase, and shrinking.

mod common;

use common::*;
use fenced_sim::explore::{default_base, generate, run_campaign, CampaignSummary, SeedRange};
use fenced_sim::{FaultSpec, RunOptions, Scenario, Simulation};

fn campaign(
    count: u64,
    shard: u64,
    shards: u64,
    jobs: usize,
) -> Vec<fenced_sim::explore::SeedOutcome> {
    let range = SeedRange {
        start: 1000,
        count,
        shard,
        shards,
    };
    run_campaign(&default_base(), range, jobs, &RunOptions::default(), &|| {})
        .expect("threads start")
}

#[test]
fn a_campaign_gives_the_same_results_whatever_the_number_of_jobs() {
    // Proves the output is identical with one worker thread or several: results come back in seed order and each seed's run is deterministic.
    let one = campaign(60, 0, 1, 1);
    let three = campaign(60, 0, 1, 3);
    assert_eq!(one, three);
    assert_eq!(one.len(), 60);
    assert!(one.windows(2).all(|w| w[0].seed < w[1].seed));
}

#[test]
fn shards_partition_the_seeds() {
    // Proves that --shard I/N runs every N-th seed: the shards together run each seed exactly once, with the same results as the whole campaign.
    let whole = campaign(30, 0, 1, 2);
    let mut merged: Vec<_> = (0..4).flat_map(|i| campaign(30, i, 4, 1)).collect();
    merged.sort_by_key(|o| o.seed);
    assert_eq!(merged, whole);
}

#[test]
fn the_default_mix_breaks_no_invariant_and_exercises_every_sometimes_property() {
    // Proves the fenced protocol survives a few hundred swarm schedules, and that the generator is not too tame: every "sometimes" property happens in some seed.
    let outcomes = campaign(400, 0, 1, 2);
    let summary = CampaignSummary::of(&outcomes);
    let failures: Vec<_> = outcomes.iter().filter(|o| !o.ok).collect();
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(
        summary.never_exercised(),
        Vec::<&str>::new(),
        "{summary:#?}"
    );
    assert_eq!(
        summary.determinism_checked, 25,
        "one seed in 16 is run twice"
    );
}

#[test]
fn generated_schedules_switch_fault_kinds_per_seed_and_end_with_a_liveness_phase() {
    // Proves swarm testing (different seeds switch different fault kinds on) and that every schedule heals its faults and leaves time for a leader to emerge.
    let base = default_base();
    let mixes: std::collections::BTreeSet<Vec<&str>> = (0..50)
        .map(|seed| generate(&base, seed).1.names())
        .collect();
    assert!(mixes.len() > 20, "only {} distinct mixes", mixes.len());
    for seed in 0..50 {
        let (s, _) = generate(&base, seed);
        let heal_at = s.heal_at.expect("a liveness phase");
        assert_eq!(heal_at, base.duration);
        assert!(s.duration > heal_at + s.election.lease_ttl);
        assert!(s
            .faults
            .iter()
            .all(|f| f.window().is_none_or(|(at, _)| at < heal_at)));
        s.validate().unwrap();
    }
}

#[test]
fn generated_schedules_are_valid_on_every_shipped_base() {
    // Proves the generator never draws a schedule the validator refuses (a `generator` failure) on any shipped scenario, including those with partitions of their own (at most one partition may be active at a time).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut bases = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let base = fenced_sim::file::load(&path).unwrap();
        fenced_sim::explore::check_base(&base).unwrap();
        for seed in 0..1000 {
            let (s, mix) = generate(&base, seed);
            if let Err(e) = s.validate() {
                panic!("{} seed {seed} ({:?}): {e}", path.display(), mix.names());
            }
        }
        bases += 1;
    }
    assert!(bases >= 19, "{bases}");
}

#[test]
fn a_cluster_that_cannot_converge_in_time_fails_the_liveness_invariant() {
    // Proves the liveness check is not vacuous: healing one second before the end, right after the leader crashed, leaves no leader, and the run fails with `liveness`.
    let mut scenario = trio("no-time", secs(60)).with_fault(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(50),
        restart_after: None,
    });
    scenario.heal_at = Some(secs(59));
    let report = run_seed(&scenario, 1);
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    assert_eq!(report.violations[0].invariant, "liveness");
    // With the bound exploration uses, the same cluster converges.
    scenario.duration = secs(59) + fenced_sim::explore::liveness_bound(&scenario);
    assert_eq!(run_seed(&scenario, 1).violations, vec![]);
}

#[test]
fn healing_resumes_paused_hosts_restarts_crashed_nodes_and_stops_faults() {
    // Proves what the liveness phase does: a paused leader resumes, a crashed node without a restart comes back as a new incarnation, and later faults never start.
    let mut scenario = trio("heal", secs(200))
        .with_fault(pause_a(secs(500)))
        .with_fault(FaultSpec::Crash {
            node: "node-b".into(),
            at: secs(20),
            restart_after: None,
        })
        .with_fault(FaultSpec::Isolate {
            host: "node-c".into(),
            at: secs(150),
            duration: secs(40),
        });
    scenario.heal_at = Some(secs(100));
    let (report, trace) = run_traced(&scenario, 3);
    assert_eq!(report.violations, vec![]);
    assert!(!lines(&trace, "node-a#1", "resumed").is_empty());
    assert!(!lines(&trace, "node-b#2", "process started").is_empty());
    assert!(lines(&trace, "node-c", "isolated").is_empty());
}

#[test]
fn a_shrunk_schedule_is_standalone_and_still_breaks_the_same_invariant() {
    // Proves shrinking on an unfenced pause: the result has no recurring faults, at most the faults that matter, and reproduces split-brain when run from its TOML text.
    let mut base = trio("unfenced", secs(120)).with_fault(pause_a(secs(40)));
    base.fencing = false;
    base.faults.push(FaultSpec::Isolate {
        host: "node-c".into(),
        at: secs(90),
        duration: secs(5),
    });
    base.faults.push(fenced_sim::explore::fleet_like_pauses());
    let shrunk = fenced_sim::shrink::shrink(&base, &RunOptions::default(), 2000).unwrap();
    assert_eq!(shrunk.invariant, "split-brain");
    assert!(shrunk.faults_after <= 1, "{:#?}", shrunk.scenario.faults);
    assert!(shrunk
        .scenario
        .faults
        .iter()
        .all(|f| !matches!(f, FaultSpec::Recurring { .. })));
    let text = fenced_sim::to_toml::to_toml(&shrunk.scenario);
    let reloaded = fenced_sim::file::parse(&text, std::path::Path::new("shrunk.toml")).unwrap();
    let mut sim = Simulation::from_scenario(&reloaded, RunOptions::default()).unwrap();
    sim.run_to_end();
    let report = sim.report();
    assert!(report.split_brain);
    assert!(
        !report.expect.met,
        "running the shrunk file fails, as it should"
    );
}

#[test]
fn a_passing_scenario_has_nothing_to_shrink() {
    // Proves shrink refuses a run without violations instead of inventing one.
    let scenario: Scenario = trio("fine", secs(30));
    assert_eq!(
        fenced_sim::shrink::shrink(&scenario, &RunOptions::default(), 10).unwrap_err(),
        fenced_sim::shrink::ShrinkError::Passes
    );
}
