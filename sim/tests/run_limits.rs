//! Every run ends in bounded time and memory: the event budget, the bound on
//! pending events, the bounded queue of a paused host, and the durations and
//! products of durations refused up front.

mod common;

use common::*;
use fenced_sim::limits::{DEFAULT_MAX_EVENTS, MAX_DEFERRED_MESSAGES, MAX_EVENTS_LIMIT};
use fenced_sim::{FaultSpec, Halt, RunOptions, Scenario, Simulation};

fn error_of(scenario: &Scenario, options: RunOptions) -> fenced_sim::ScenarioError {
    Simulation::from_scenario(scenario, options).expect_err("refused")
}

#[test]
fn a_run_that_could_never_finish_is_refused_before_it_starts() {
    // Proves audit item 14: heartbeats every nanosecond for a year is refused at once, naming the
    // key and the flag, instead of running for ever.
    let mut scenario = trio("busy", secs(365 * 24 * 3600));
    scenario.membership.heartbeat_interval = std::time::Duration::from_nanos(1);
    let err = error_of(&scenario, RunOptions::default());
    assert_eq!(err.key, "membership.heartbeat_interval");
    assert!(err.message.contains("--max-events"), "{err}");
    assert!(
        err.message.contains(&DEFAULT_MAX_EVENTS.to_string()),
        "{err}"
    );
}

#[test]
fn the_event_budget_halts_a_run_cleanly() {
    // Proves that a run reaching its event budget stops with `Halt::EventBudget` at the time it
    // reached, runs nothing more, and still gives a report of the time simulated.
    let scenario = trio("budget", secs(120));
    let mut options = RunOptions::with_seed(Some(1));
    options.max_events = Some(800);
    let mut sim = Simulation::from_scenario(&scenario, options).expect("valid");
    sim.run_to_end();
    let Some(Halt::EventBudget { max_events, at, .. }) = sim.halted().cloned() else {
        panic!("expected an event-budget halt, got {:?}", sim.halted());
    };
    assert_eq!(max_events, 800);
    assert_eq!(sim.events(), 800);
    assert!(at < secs(120));
    assert_eq!(sim.now(), at);
    sim.run_to_end();
    assert_eq!(sim.events(), 800, "nothing runs after a halt");
    assert!(sim.report().virtual_ms < 120_000);
    let message = sim.halted().map(ToString::to_string).unwrap_or_default();
    assert!(message.contains("--max-events"), "{message}");
}

#[test]
fn an_event_budget_outside_its_range_is_refused() {
    // Proves that --max-events 0 and a budget above MAX_EVENTS_LIMIT are errors naming the flag.
    for bad in [0, MAX_EVENTS_LIMIT + 1] {
        let options = RunOptions {
            max_events: Some(bad),
            ..RunOptions::default()
        };
        let err = error_of(&trio("budget", secs(60)), options);
        assert_eq!(err.key, "--max-events");
    }
}

#[test]
fn a_paused_store_queues_a_bounded_number_of_messages() {
    // Proves audit item 12 (engine half): 40 nodes heartbeating every 10 ms at a lease store paused
    // for 10 minutes queue at most MAX_DEFERRED_MESSAGES messages; the rest are dropped and traced
    // (a 29-day pause of 100 nodes used to allocate gigabytes).
    let names: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
    let mut scenario = Scenario::new("store-pause", secs(700)).with_nodes(names.iter());
    scenario.membership.heartbeat_interval = ms(10);
    let scenario = scenario.with_fault(FaultSpec::Pause {
        host: "lease-store".into(),
        at: secs(10),
        duration: secs(600),
    });
    let (report, trace) = run_traced(&scenario, 1);
    let resumed = lines(&trace, "lease-store", "resumed; handling");
    assert_eq!(resumed.len(), 1);
    let queued: usize = resumed[0]
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a count");
    assert!(queued <= MAX_DEFERRED_MESSAGES + 8, "{}", resumed[0]);
    assert!(queued >= MAX_DEFERRED_MESSAGES, "{}", resumed[0]);
    assert!(trace.contains("receiver paused with a full queue"));
    assert_eq!(report.violations, vec![]);
}

#[test]
fn every_duration_is_at_most_a_year() {
    // Proves audit item 9: each duration key over one year is refused with its key (they used to
    // overflow or panic in explore), and so is a unit-of-work overlap the queue cannot hold.
    let year_and_a_day = secs(366 * 24 * 3600);
    type Edit<'a> = Box<dyn Fn(&mut Scenario) + 'a>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "election.retry_interval",
            Box::new(|s: &mut Scenario| s.election.retry_interval = year_and_a_day),
        ),
        (
            "election.rejoin_delay",
            Box::new(|s: &mut Scenario| s.election.rejoin_delay = Some(year_and_a_day)),
        ),
        (
            "work.write_interval",
            Box::new(|s: &mut Scenario| s.work.write_interval = year_and_a_day),
        ),
        (
            "work.work_duration",
            Box::new(|s: &mut Scenario| s.work.work_duration = year_and_a_day),
        ),
        (
            "membership.heartbeat_interval",
            Box::new(|s: &mut Scenario| s.membership.heartbeat_interval = year_and_a_day),
        ),
        (
            "membership.liveness_ttl",
            Box::new(|s: &mut Scenario| s.membership.liveness_ttl = year_and_a_day),
        ),
        (
            "fault[0].duration",
            Box::new(|s: &mut Scenario| s.faults.push(pause_a(year_and_a_day))),
        ),
        (
            "work.work_duration",
            Box::new(|s: &mut Scenario| {
                s.work.write_interval = ms(1);
                s.work.work_duration = secs(5 * 3600);
            }),
        ),
    ];
    for (key, edit) in cases {
        let mut scenario = trio("long", secs(60));
        edit(&mut scenario);
        let err = error_of(&scenario, RunOptions::default());
        assert_eq!(err.key, key, "{err}");
    }
}

#[test]
fn a_network_too_slow_to_elect_anyone_is_refused_and_a_slow_one_warned() {
    // Proves audit item 3's validation: a shortest round trip at or past the validity can never
    // elect anyone (an error); a longest one past it stalls elections (a warning).
    let mut scenario = trio("too-slow", secs(60));
    scenario.network.latency = (secs(14), secs(15));
    let err = error_of(&scenario, RunOptions::default());
    assert_eq!(err.key, "network.latency");
    assert!(err.message.contains("no node could ever lead"), "{err}");
    scenario.network.latency = (secs(1), secs(14));
    assert!(Simulation::from_scenario(&scenario, RunOptions::default()).is_ok());
    let warnings = scenario.warnings();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, "network.latency");
    assert!(trio("fine", secs(60)).warnings().is_empty());
}

#[test]
fn a_halted_run_says_so_in_run_json_and_the_summary() {
    // Proves that `run --json` of a run stopped at its event budget prints its report with
    // `halted` (the reason and the virtual time reached), the summary says HALTED, the exit code
    // stays 2, and a run that reached its end reports `halted: null`.
    let args = ["run", &shipped("fleet-election"), "--max-events", "35000"];
    let out = fenced_sim(args.iter().copied().chain(["--json"]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON report");
    let halted = &report["halted"];
    assert_eq!(halted["reason"], "event-budget", "{report}");
    assert_eq!(halted["at_ms"], report["virtual_ms"], "{report}");
    assert!(
        halted["detail"].as_str().unwrap().contains("35000"),
        "{halted}"
    );
    assert_eq!(report["events"], 35000);
    let summary = fenced_sim(args);
    assert_eq!(summary.status.code(), Some(2));
    assert!(
        stdout(&summary).contains("HALTED at "),
        "{}",
        stdout(&summary)
    );
    let whole = fenced_sim(["run", &shipped("steady-state"), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&whole)).expect("one JSON report");
    assert!(report["halted"].is_null(), "{report}");
}

#[test]
fn shrink_never_takes_a_halted_run_for_a_failure() {
    // Proves that shrinking a scenario whose run stops at its event budget is refused with
    // `ShrinkError::Halted` (the candidates' runs go through the same rule: a halted run never
    // "still fails").
    let path = workspace_root().join(shipped("fleet-election"));
    let scenario = fenced_sim::file::load(&path).expect("a shipped scenario");
    let options = RunOptions {
        max_events: Some(35_000),
        ..RunOptions::default()
    };
    let halted = Simulation::run_scenario(&scenario, options.clone()).expect("valid");
    assert!(halted.report.halted.is_some());
    let err = fenced_sim::shrink::shrink(&scenario, &options, 50).expect_err("refused");
    assert!(
        matches!(err, fenced_sim::shrink::ShrinkError::Halted(_)),
        "{err}"
    );
}
