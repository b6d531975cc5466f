//! `fenced-sim verify`, the bounded exhaustive search: it covers exactly the
//! schedules its bounds describe, proves a clean configuration within them,
//! finds a shortest violating schedule, says when a bound cut it short, and
//! writes counterexamples that `fenced-sim run` replays to the same
//! violation.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{assert_exit, fenced_sim, stderr, stdout, workspace_root};
use fenced_sim::verify::{verify, Bounds, FaultKind, Outcome, Schedule, Verification};
use fenced_sim::{LatencyChoice, LatencyScript, RunOptions, Scenario, Simulation};

fn data(name: &str) -> PathBuf {
    workspace_root().join(format!("sim/tests/verify/{name}.toml"))
}

fn load(name: &str) -> Scenario {
    fenced_sim::file::load(&data(name)).expect("the test scenario loads")
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One pause on any node, starting on a 1 s grid and at the boundaries,
/// with the boundary lengths; no latency deviations.
fn one_pause(scenario: &Scenario) -> Bounds {
    common::one_pause_bounds(fenced_sim::verify::boundary_lengths(scenario))
}

fn search(scenario: &Scenario, options: &RunOptions, bounds: &Bounds) -> Verification {
    verify(scenario, options, bounds).expect("the search runs")
}

/// The invariants and the schedule of a search that must have found a
/// violation.
fn violation(r: &Verification) -> (&Vec<String>, &Schedule) {
    match &r.outcome {
        Outcome::Violation {
            invariants,
            schedule,
        } => (invariants, schedule),
        other => panic!("expected a violation, got {other:?}: {r:#?}"),
    }
}

#[test]
fn a_clean_configuration_is_proven_over_every_single_pause() {
    // Every schedule of one pause ran — the base run plus one per start
    // instant, node and length, no more, no fewer — and none broke anything.
    let scenario = load("small-fenced");
    let bounds = one_pause(&scenario);
    let r = search(&scenario, &RunOptions::default(), &bounds);
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
    assert_eq!(r.depth_complete, Some(1));
    let expected = 1 + r.base_start_instants * 2 * bounds.lengths.len() as u64;
    assert_eq!(r.schedules_run, expected);
    assert_eq!(r.refused, 0);
    // The boundaries add instants the 1 s grid does not have.
    assert!(r.base_start_instants > 19, "{}", r.base_start_instants);
    assert!(r.distinct_behaviours > 1 && r.distinct_behaviours <= r.schedules_run);
}

#[test]
fn a_clean_configuration_is_proven_over_every_single_latency_deviation() {
    // With no fault, every message in turn takes the other latency: one
    // schedule per message of the base run, and the base run.
    let scenario = load("small-fenced");
    let bounds = Bounds {
        faults: 0,
        deviations: 1,
        ..one_pause(&scenario)
    };
    let r = search(&scenario, &RunOptions::default(), &bounds);
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
    assert!(r.base_draws > 100, "{}", r.base_draws);
    assert_eq!(r.schedules_run, 1 + r.base_draws);
    // Every deviation changes some delivery instant, so every run differs.
    assert_eq!(r.distinct_behaviours, r.schedules_run);
}

#[test]
fn split_brain_without_fencing_is_found_with_a_shortest_schedule_of_one_pause() {
    // The base run is clean, so the shortest violating schedule has one
    // fault: a pause of the leader longer than its lease, starting while a
    // unit of work is under way (just after a work timer fired: a boundary
    // instant, not a grid point).
    let scenario = load("small-unfenced");
    let r = search(&scenario, &RunOptions::default(), &one_pause(&scenario));
    let (invariants, schedule) = violation(&r);
    assert_eq!(invariants, &vec!["split-brain".to_string()]);
    assert_eq!(schedule.len(), 1);
    assert!(schedule.deviations.is_empty());
    let pause = schedule.faults[0];
    assert_eq!((pause.kind, pause.host), (FaultKind::Pause, 0), "{pause:?}");
    assert!(
        pause.length_ns > 3_000_000_000,
        "longer than the TTL: {pause:?}"
    );
    assert_ne!(pause.at_ns % 1_000_000_000, 0, "a boundary, not the grid");
    assert_eq!(r.depth_complete, Some(0));
    // Without the boundaries, the grid alone misses this window.
    let grid_only = Bounds {
        boundaries: false,
        ..one_pause(&scenario)
    };
    let r = search(&scenario, &RunOptions::default(), &grid_only);
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
}

#[test]
fn the_counterexample_replays_with_run_to_the_same_violation() {
    // The schedule written as a scenario file (faults as [[fault]], the
    // latencies as [network.script]) fails `fenced-sim run` with the same
    // invariant, and reads back as the very scenario the search ran.
    let dir = tempfile::tempdir().expect("a temp dir");
    let (result, report, file) = common::verify_and_replay(dir.path(), &data("small-unfenced"));
    assert_eq!(result["outcome"]["verdict"], "violation");
    assert_eq!(result["outcome"]["invariants"][0], "split-brain");
    // The JSON states what it did not do, as the human output does.
    assert!(result["deduplication"]
        .as_str()
        .is_some_and(|d| d.starts_with("none")));
    assert!(result["not_explored"]
        .as_array()
        .is_some_and(|list| !list.is_empty()));
    assert_eq!(
        result["replay"],
        format!("fenced-sim run {}", file.display()).as_str()
    );
    assert_eq!(report["split_brain"], true, "{report}");
    // The file is the search's schedule, exactly.
    let scenario = load("small-unfenced");
    let r = search(&scenario, &RunOptions::default(), &one_pause(&scenario));
    let written = fenced_sim::file::load(&file).expect("the counterexample loads");
    assert_eq!(Some(written), r.counterexample);
}

#[test]
fn a_search_cut_short_by_max_states_is_incomplete_not_proven() {
    // The same clean search with room for 100 schedules: the base level
    // completes, the next does not, and the verdict says so (exit code 3).
    let scenario = load("small-fenced");
    let bounds = Bounds {
        max_states: 100,
        ..one_pause(&scenario)
    };
    let r = search(&scenario, &RunOptions::default(), &bounds);
    let Outcome::Incomplete { unrun_at_least } = r.outcome else {
        panic!("expected incomplete: {r:#?}");
    };
    assert_eq!(r.depth_complete, Some(0));
    assert_eq!(r.schedules_run, 100);
    // The schedules of length 1 that ran plus those left out are all of
    // them: nothing was dropped unsaid.
    let level_one = r.base_start_instants * 2 * bounds.lengths.len() as u64;
    assert_eq!(r.schedules_run - 1 + unrun_at_least, level_one);
    let source = data("small-fenced").display().to_string();
    let out = fenced_sim(["verify", &source, "--max-states", "100"]);
    assert_exit(&out, 3);
    assert!(stdout(&out).contains("INCOMPLETE"), "{}", stdout(&out));
    let proven = fenced_sim(["verify", &source, "--faults", "0", "--deviations", "0"]);
    assert_exit(&proven, 0);
    assert!(
        stdout(&proven).contains("no violation in any schedule within these bounds"),
        "{}",
        stdout(&proven)
    );
}

#[test]
fn the_result_does_not_depend_on_the_number_of_threads() {
    let scenario = load("small-unfenced");
    let bounds = one_pause(&scenario);
    let one = search(&scenario, &RunOptions::default(), &bounds);
    let two = search(
        &scenario,
        &RunOptions::default(),
        &Bounds {
            jobs: 2,
            ..bounds.clone()
        },
    );
    assert_eq!(one, two);
    let fenced = load("small-fenced");
    let fenced_bounds = Bounds {
        faults: 0,
        deviations: 1,
        ..bounds
    };
    let one = search(&fenced, &RunOptions::default(), &fenced_bounds);
    let two = search(
        &fenced,
        &RunOptions::default(),
        &Bounds {
            jobs: 2,
            ..fenced_bounds
        },
    );
    assert_eq!(one, two);
}

#[test]
fn progress_is_reported_in_order_and_ends_at_the_schedules_run() {
    // The observer sees every batch: counts never go back, depths never
    // go back, and the last report is the result's own count.
    let scenario = load("small-fenced");
    let bounds = one_pause(&scenario);
    let mut seen = Vec::new();
    let r =
        fenced_sim::verify::verify_observed(&scenario, &RunOptions::default(), &bounds, &mut |p| {
            seen.push(p)
        })
        .expect("the search runs");
    assert!(seen.len() > 1, "{seen:?}");
    assert!(seen
        .windows(2)
        .all(|w| w[0].schedules_run < w[1].schedules_run && w[0].depth <= w[1].depth));
    assert_eq!(seen.last().map(|p| p.schedules_run), Some(r.schedules_run));
    assert_eq!(r, search(&scenario, &RunOptions::default(), &bounds));
}

#[test]
fn a_latency_script_decides_every_message_and_round_trips_through_a_file() {
    // The same script twice gives the same run; a different choice at one
    // message gives another; writing the scenario out and reading it back
    // keeps the script. A scenario without a script draws at random, as
    // before (no draws are counted).
    let mut scenario = load("small-fenced");
    let run = |s: &Scenario| {
        let mut sim = Simulation::from_scenario(s, RunOptions::default()).expect("runs");
        sim.run_to_end();
        (sim.trace_hash(), sim.scripted_draws())
    };
    let (_, draws) = run(&scenario);
    assert_eq!(draws, None);
    scenario.network.script = Some(LatencyScript {
        latency: ms(1),
        choices: vec![LatencyChoice::latency(3, ms(5))],
        reorders: Vec::new(),
    });
    let (hash, draws) = run(&scenario);
    assert!(draws.is_some_and(|d| d > 3), "{draws:?}");
    assert_eq!(run(&scenario).0, hash);
    let mut other = scenario.clone();
    if let Some(script) = &mut other.network.script {
        script.choices[0].draw = 4;
    }
    assert_ne!(run(&other).0, hash);
    let text = fenced_sim::to_toml::to_toml(&scenario);
    let back = fenced_sim::file::parse(&text, std::path::Path::new("back.toml")).expect("parses");
    assert_eq!(back, scenario);
}

#[test]
fn bad_bounds_and_bad_scripts_are_refused_with_exit_2() {
    let source = data("small-fenced").display().to_string();
    let cases: [(&[&str], &str); 6] = [
        (
            &["--latencies", "10ms"],
            "outside the scenario's network.latency",
        ),
        (&["--latencies", "1ms,1ms"], "listed twice"),
        (&["--kinds", "slew"], "not a fault kind"),
        (&["--drops", "1"], "loses nothing"),
        (&["--duplicates", "1"], "duplicates nothing"),
        (&["--grid", "0s"], "--grid"),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["verify", source.as_str()];
        args.extend_from_slice(flags);
        let out = fenced_sim(&args);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(needle), "{flags:?}: {}", stderr(&out));
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = std::fs::read_to_string(data("small-fenced")).expect("readable");
    let path = dir.path().join("bad.toml");
    let refused = |command: &str, script: &str, needle: &str| {
        std::fs::write(&path, format!("{text}\n[network.script]\n{script}\n")).expect("writable");
        let out = fenced_sim([command, &path.display().to_string()]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(needle), "{script}: {}", stderr(&out));
    };
    refused(
        "run",
        "latency = \"1ms\"\nchoices = [{ draw = 5, latency = \"5ms\" }, { draw = 2, latency = \"5ms\" }]",
        "network.script.choices",
    );
    refused("run", "latency = \"9ms\"", "network.script.latency");
    // A schedule stays inside the scenario's space: no loss where the
    // network loses nothing, no copy where it duplicates nothing.
    refused(
        "run",
        "latency = \"1ms\"\nchoices = [{ draw = 2, lost = true }]",
        "loses nothing",
    );
    refused(
        "run",
        "latency = \"1ms\"\nchoices = [{ draw = 2, latency = \"1ms\", duplicate = \"5ms\" }]",
        "duplicates nothing",
    );
    refused(
        "run",
        "latency = \"1ms\"\nchoices = [{ draw = 2 }]",
        "needs a latency",
    );
    refused("run", "latency = \"1ms\"\nlatncy = \"1ms\"", "latncy");
    // A scenario that already is a schedule is not a search space.
    refused(
        "verify",
        "latency = \"1ms\"",
        "already has a [network.script]",
    );
}

#[test]
fn losses_and_copies_are_searched_one_message_at_a_time_where_the_network_allows_them() {
    // On a lossy network, every message of the base run in turn is lost,
    // or delivered twice with its copy at each latency of the set: one
    // schedule each, and the base run. The protocol survives every one.
    let scenario = load("small-lossy");
    let bounds = Bounds {
        faults: 0,
        drops: 1,
        duplicates: 1,
        ..one_pause(&scenario)
    };
    // Length 1 only: one loss or one copy.
    let r = search(
        &scenario,
        &RunOptions::default(),
        &Bounds {
            max_states: 1_000_000,
            ..bounds.clone()
        },
    );
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
    assert!(r.base_draws > 100, "{}", r.base_draws);
    assert_eq!(r.depth_complete, Some(2));
    let level_one = 1 + r.base_draws * 3;
    assert!(r.schedules_run > level_one, "{}", r.schedules_run);
    let only_drops = search(
        &scenario,
        &RunOptions::default(),
        &Bounds {
            duplicates: 0,
            ..bounds
        },
    );
    assert_eq!(only_drops.schedules_run, 1 + only_drops.base_draws);
    // A loss is no copy: the scenario's space decides what is searched.
    assert_eq!(only_drops.drops_max, 1);
    assert_eq!(only_drops.duplicates_max, 0);
}

#[test]
fn a_lost_or_duplicated_message_changes_the_run_and_round_trips_through_a_file() {
    let mut scenario = load("small-lossy");
    let run = |s: &Scenario| {
        let mut sim = Simulation::from_scenario(s, RunOptions::default()).expect("runs");
        sim.run_to_end();
        sim.trace_hash()
    };
    let script = |choice: LatencyChoice| LatencyScript {
        latency: ms(1),
        choices: vec![choice],
        reorders: Vec::new(),
    };
    scenario.network.script = Some(script(LatencyChoice::latency(3, ms(1))));
    let plain = run(&scenario);
    let mut lost = LatencyChoice::latency(3, ms(1));
    lost.lost = true;
    let mut twice = LatencyChoice::latency(3, ms(1));
    twice.duplicate = Some(ms(5));
    for choice in [lost, twice] {
        let mut s = scenario.clone();
        s.network.script = Some(script(choice));
        assert_ne!(run(&s), plain, "{choice:?}");
        assert_eq!(run(&s), run(&s));
        let text = fenced_sim::to_toml::to_toml(&s);
        let back =
            fenced_sim::file::parse(&text, std::path::Path::new("back.toml")).expect("parses");
        assert_eq!(back, s, "{text}");
    }
}

#[test]
fn every_fault_kind_is_searched_on_the_hosts_it_can_strike() {
    // Each kind alone, one fault, on the 1 s grid with one length: the
    // schedules of length 1 are the base run's start instants times the
    // hosts the kind strikes — a replace has no length, a restart strikes
    // only servers, a crash, stop or replace only nodes.
    let scenario = load("small-fenced");
    let one_kind = |kind: FaultKind| {
        let r = search(
            &scenario,
            &RunOptions::default(),
            &Bounds {
                kinds: vec![kind],
                servers: true,
                boundaries: false,
                lengths: vec![ms(1_500), ms(4_000)],
                ..one_pause(&scenario)
            },
        );
        assert_eq!(r.depth_complete, Some(1), "{kind}: {r:#?}");
        assert_eq!(r.outcome, Outcome::Proven, "{kind}: {r:#?}");
        r.schedules_run + r.refused - 1
    };
    // 19 grid instants (1 s .. 19 s), 2 nodes, 2 servers, 2 lengths.
    let starts = 19;
    for (kind, hosts, lengths) in [
        (FaultKind::Pause, 4, 2),
        (FaultKind::Isolate, 4, 2),
        (FaultKind::Crash, 2, 2),
        (FaultKind::Replace, 2, 1),
        (FaultKind::Stop, 2, 2),
        (FaultKind::Restart, 2, 2),
        (FaultKind::ClockForward, 4, 2),
        (FaultKind::ClockBack, 4, 2),
    ] {
        assert_eq!(one_kind(kind), starts * hosts * lengths, "{kind}");
    }
}

#[test]
fn same_instant_orders_of_one_host_are_searched_and_replay() {
    // Every order point of the base run — two events of one host due at
    // the same instant — handled the other way round, one at a time: one
    // schedule each, and the base run; clean. A reordered schedule written
    // as a scenario reads back the same and runs the same.
    let scenario = load("small-fenced");
    let bounds = Bounds {
        faults: 0,
        reorders: 1,
        ..one_pause(&scenario)
    };
    let r = search(&scenario, &RunOptions::default(), &bounds);
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
    assert!(r.base_order_points > 10, "{}", r.base_order_points);
    assert_eq!(r.schedules_run, 1 + r.base_order_points);
    // Some swaps change the run (others swap, say, a stale timer).
    assert!(r.distinct_behaviours > 1, "{r:#?}");
    let run = |s: &Scenario| {
        let mut sim = Simulation::from_scenario(s, RunOptions::default()).expect("runs");
        sim.run_to_end();
        sim.trace_hash()
    };
    let base = fenced_sim::verify::scripted(&scenario, &bounds, &Schedule::default());
    let changed = (0..r.base_order_points)
        .map(|k| {
            let schedule = Schedule {
                reorders: vec![k],
                ..Schedule::default()
            };
            fenced_sim::verify::scripted(&scenario, &bounds, &schedule)
        })
        .find(|s| run(s) != run(&base))
        .expect("a swap that changes the run");
    let text = fenced_sim::to_toml::to_toml(&changed);
    assert!(text.contains("reorder = ["), "{text}");
    let back = fenced_sim::file::parse(&text, std::path::Path::new("back.toml")).expect("parses");
    assert_eq!(back, changed);
    assert_eq!(run(&back), run(&changed));
}

#[cfg(feature = "planted-bugs")]
mod planted {
    use super::*;
    use fenced::PlantedBug;

    #[test]
    fn a_downstream_accepting_lower_tokens_is_found_with_one_pause() {
        // Fencing on: clean without the bug (proven above); with the bug,
        // the paused leader's late write is accepted below its successor's
        // token, and the shortest schedule is one pause.
        let scenario = load("small-fenced");
        let options = RunOptions {
            planted_bug: Some(PlantedBug::DownstreamAcceptsLowerToken),
            ..RunOptions::default()
        };
        let r = search(&scenario, &options, &one_pause(&scenario));
        let (invariants, schedule) = violation(&r);
        assert!(
            invariants.contains(&"single-writer".to_string()),
            "{invariants:?}"
        );
        assert_eq!(schedule.len(), 1, "{schedule:?}");
        assert_eq!(r.depth_complete, Some(0));
        // The counterexample fails `run` with the bug, and is clean without.
        let found = r.counterexample.expect("a counterexample");
        let judged = |options: RunOptions| {
            let mut sim = Simulation::from_scenario(&found, options).expect("runs");
            sim.run_to_end();
            sim.report()
        };
        let report = judged(options.clone());
        assert!(report
            .violations
            .iter()
            .any(|v| v.invariant == "single-writer"));
        assert!(judged(RunOptions::default()).violations.is_empty());
    }

    /// Whether `run` of `scenario` with `bug` planted breaks `invariant`,
    /// and without it breaks nothing.
    fn replays(scenario: &Scenario, bug: PlantedBug, invariant: &str) {
        let judged = |planted_bug| {
            let options = RunOptions {
                planted_bug,
                ..RunOptions::default()
            };
            let mut sim = Simulation::from_scenario(scenario, options).expect("runs");
            sim.run_to_end();
            sim.report()
        };
        let report = judged(Some(bug));
        assert!(
            report.violations.iter().any(|v| v.invariant == invariant),
            "{bug}: {:?}",
            report.violations
        );
        assert!(judged(None).violations.is_empty(), "{bug}");
    }

    #[test]
    fn a_zombie_that_the_downstream_trusts_is_found_with_a_pause_and_a_replace() {
        // The only bug of the set that needs two lives of one node: the
        // leader paused mid-work, replaced while paused; its zombie's late
        // write passes a downstream that trusts the host. Shortest: the
        // pause and the replacement, nothing shorter.
        let scenario = load("small-fenced");
        let bug = PlantedBug::DownstreamTrustsSameHost;
        let options = RunOptions {
            planted_bug: Some(bug),
            ..RunOptions::default()
        };
        let bounds = Bounds {
            faults: 2,
            kinds: vec![FaultKind::Pause, FaultKind::Replace],
            lengths: vec![Duration::from_nanos(3_999_999_999)],
            ..one_pause(&scenario)
        };
        let r = search(&scenario, &options, &bounds);
        let (invariants, schedule) = violation(&r);
        assert!(
            invariants.contains(&"single-writer".to_string()),
            "{invariants:?}"
        );
        let kinds: Vec<FaultKind> = schedule.faults.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            [FaultKind::Pause, FaultKind::Replace],
            "{schedule:?}"
        );
        assert_eq!(r.depth_complete, Some(1));
        // Every schedule of one fault ran clean first (depth 1 complete),
        // and the counterexample is clean without the bug.
        replays(
            &r.counterexample.expect("a counterexample"),
            bug,
            "single-writer",
        );
    }

    #[test]
    fn overtaken_answers_are_found_on_a_slow_network() {
        // Every message at 600 ms, past the 500 ms retry interval: renewals
        // overlap. Matching an answer to the newest request, or dropping
        // answers to older ones, breaks the base run already; applying a
        // stale answer needs one message made fast, so that an answer
        // overtakes another. Clean without a bug, every message made fast
        // in turn.
        let scenario = load("small-slow");
        let bounds = Bounds {
            faults: 0,
            deviations: 1,
            latencies: vec![ms(600), ms(1)],
            ..one_pause(&scenario)
        };
        assert_eq!(
            search(&scenario, &RunOptions::default(), &bounds).outcome,
            Outcome::Proven
        );
        for (bug, invariant, length) in [
            (PlantedBug::ElectorMatchesNewestRequest, "local-deadline", 0),
            (PlantedBug::ElectorDropsSlowAnswers, "liveness", 0),
            (PlantedBug::ElectorAppliesStaleAnswer, "local-deadline", 1),
        ] {
            let options = RunOptions {
                planted_bug: Some(bug),
                ..RunOptions::default()
            };
            let r = search(&scenario, &options, &bounds);
            let (invariants, schedule) = violation(&r);
            assert!(
                invariants.contains(&invariant.to_string()),
                "{bug}: {invariants:?}"
            );
            assert_eq!(schedule.len(), length, "{bug}: {schedule:?}");
            replays(&r.counterexample.expect("a counterexample"), bug, invariant);
        }
    }
}
