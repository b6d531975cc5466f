//! The simulator alone, as a mutation oracle (issue 14, oracle (b)): does a
//! mutant of the core machines break something the *simulation* can see —
//! an invariant, an expectation, liveness — without any unit test's help?
//!
//! Part of the normal suite (≈3 s with the test profile), so the whole
//! suite — oracle (a) — contains the simulator's oracle (b): whatever the
//! simulation catches, the suite catches. `scripts/mutants.sh sim` runs it
//! alone as cargo-mutants' test command. It lives in the
//! `fenced` package (dev-depending on `fenced-sim`) because cargo-mutants
//! runs the mutated package's tests. It fails with
//! the first thing the simulation catches and prints, on standard error,
//! `oracle: caught by <what> at seed <n>` so the report can say how many
//! seeds a mutant needed.

// Needs the simulator, a dev-dependency left out under `--cfg fenced_alone`
// (CI's feature matrix; Cargo.toml).
#![cfg(not(fenced_alone))]

use std::path::PathBuf;

use fenced_sim::explore::{default_base, generate};
use fenced_sim::{RunOptions, Simulation};

/// The shipped scenario files, sorted.
fn scenario_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the scenarios directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// Seeds of the default mix the oracle runs (`FENCED_ORACLE_SEEDS`,
/// default 2 000: the budget).
fn seeds() -> u64 {
    std::env::var("FENCED_ORACLE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000)
}

#[test]
fn the_simulation_alone_judges_the_core_machines() {
    // 1. Every shipped scenario of the fenced protocol meets its
    //    expectations (its invariants and measures, not its snapshot).
    for file in scenario_files() {
        let scenario = fenced_sim::file::load(&file).expect("a shipped scenario loads");
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
