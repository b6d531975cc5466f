//! The simulator alone, as a mutation oracle (issue 14, oracle (b)): does a
//! mutant of the core machines break something the *simulation* can see —
//! an invariant, an expectation, liveness — without any unit test's help?
//!
//! Ignored in the normal suite (`cargo test` already runs the shipped
//! scenarios with their snapshots, and explore's own tests); run by
//! `scripts/mutants.sh sim` as cargo-mutants' test command. It fails with
//! the first thing the simulation catches and prints, on standard error,
//! `oracle: caught by <what> at seed <n>` so the report can say how many
//! seeds a mutant needed.

mod common;

use fenced_sim::explore::{default_base, generate};
use fenced_sim::{RunOptions, Simulation};

/// Seeds of the default mix the oracle runs (`FENCED_ORACLE_SEEDS`,
/// default 2 000: the budget).
fn seeds() -> u64 {
    std::env::var("FENCED_ORACLE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000)
}

#[test]
#[ignore = "the mutation oracle: run by scripts/mutants.sh sim"]
fn the_simulation_alone_judges_the_core_machines() {
    // 1. Every shipped scenario of the fenced protocol meets its
    //    expectations (its invariants and measures, not its snapshot).
    for file in common::scenario_files() {
        let path = common::workspace_root().join(&file);
        let scenario = fenced_sim::file::load(&path).expect("a shipped scenario loads");
        if scenario.election.protocol != fenced_sim::ProtocolSpec::Fenced {
            continue;
        }
        let mut sim = Simulation::from_scenario(&scenario, RunOptions::default())
            .expect("a shipped scenario is valid");
        sim.run_to_end();
        let report = sim.report();
        if !report.expect.met {
            eprintln!("oracle: caught by scenario {} at seed 0", file.display());
            panic!("{}: {:?}", file.display(), report.expect.unmet);
        }
    }
    // 2. The default mix: every seed passes (no violation, liveness after
    //    heal), in seed order so the first failing seed is the count.
    let base = default_base();
    for seed in 0..seeds() {
        let (scenario, _) = generate(&base, seed);
        let mut sim = Simulation::from_scenario(&scenario, RunOptions::with_seed(Some(seed)))
            .expect("generated schedules are valid");
        sim.run_to_end();
        let report = sim.report();
        if let Some(v) = report.violations.first() {
            eprintln!("oracle: caught by {} at seed {}", v.invariant, seed + 1);
            panic!("seed {seed}: {} — {}", v.invariant, v.detail);
        }
    }
}
