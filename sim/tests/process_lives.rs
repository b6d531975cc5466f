//! A node's lives: one live process at a time unless a `replace` fault says
//! otherwise, owner ids never renamed or shared, and crashes of a node that is
//! already down doing nothing.

mod common;

use common::*;
use fenced_sim::{FaultSpec, NodeSpec, RunOptions, Scenario, Simulation, MAX_NODE_ID_LEN};

fn crash(node: &str, at: u64, restart_after: Option<u64>) -> FaultSpec {
    FaultSpec::Crash {
        node: node.into(),
        at: secs(at),
        restart_after: restart_after.map(secs),
    }
}

/// The owners whose processes started, in trace order.
fn started(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter(|l| l.contains("process started"))
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

#[test]
fn a_second_crash_of_a_down_node_schedules_no_second_restart() {
    // Proves audit item 2: crash b at 10 s (restart after 20 s) and again at 15 s (restart after 1 s)
    // gives one new process, b#2 at 30 s — not b#2 at 16 s and b#3 at 30 s running together.
    let scenario = trio("double-crash", secs(60))
        .with_fault(crash("node-b", 10, Some(20)))
        .with_fault(crash("node-b", 15, Some(1)));
    let (report, trace) = run_traced(&scenario, 1);
    let b: Vec<String> = started(&trace)
        .into_iter()
        .filter(|o| o.starts_with("node-b"))
        .collect();
    assert_eq!(b, ["node-b#1", "node-b#2"]);
    let restarted = lines(&trace, "node-b#2", "process started");
    assert!(
        (30.0..30.1).contains(&time_of(restarted[0])),
        "{restarted:?}"
    );
    let ignored = lines(&trace, "node-b", "crash ignored");
    assert_eq!(ignored.len(), 1, "{trace}");
    assert!((15.0..15.1).contains(&time_of(ignored[0])));
    assert_eq!(report.violations, vec![]);
}

#[test]
fn a_crash_before_the_node_starts_does_nothing() {
    // Proves audit item 2's sibling: a crash before a node's `start_at` finds no process, kills
    // nothing and restarts nothing; the node starts once, at its `start_at`.
    let mut scenario = trio("early-crash", secs(60)).with_fault(crash("node-c", 0, Some(2)));
    scenario.nodes[2].start_at = secs(5);
    let (report, trace) = run_traced(&scenario, 1);
    let c: Vec<String> = started(&trace)
        .into_iter()
        .filter(|o| o.starts_with("node-c"))
        .collect();
    assert_eq!(c, ["node-c#1"]);
    assert!((5.0..5.1).contains(&time_of(lines(&trace, "node-c#1", "process started")[0])));
    assert_eq!(report.violations, vec![]);
}

#[test]
fn a_restart_finding_a_replacement_running_does_nothing() {
    // Proves that a restart (or a first start) finds a node already running a process started by
    // `replace`, and does not add a third life; the replacement is the only live process after.
    let mut scenario = trio("replace-then-start", secs(60)).with_fault(FaultSpec::Replace {
        node: "node-c".into(),
        at: secs(2),
    });
    scenario.nodes[2].start_at = secs(5);
    let (_, trace) = run_traced(&scenario, 1);
    let c: Vec<String> = started(&trace)
        .into_iter()
        .filter(|o| o.starts_with("node-c"))
        .collect();
    assert_eq!(c, ["node-c#1"]);
    assert_eq!(lines(&trace, "node-c", "start ignored").len(), 1, "{trace}");
}

#[test]
fn recurring_and_scheduled_crashes_agree_on_a_down_node() {
    // Proves that the rule is the same for every crash: after a scheduled crash without restart,
    // a recurring crash of the same node finds nothing and schedules no restart.
    let scenario = trio("crash-then-recurring", secs(600))
        .with_fault(crash("node-b", 10, None))
        .with_fault(FaultSpec::Recurring {
            kind: fenced_sim::RecurringKind::Crash,
            node: Some("node-b".into()),
            every: secs(30),
            duration: fenced_sim::DurationRange::fixed(secs(1)),
        });
    let (_, trace) = run_traced(&scenario, 3);
    let b: Vec<String> = started(&trace)
        .into_iter()
        .filter(|o| o.starts_with("node-b"))
        .collect();
    // The recurring crashes before 10 s (if any) restart node-b; none after.
    let late = lines(&trace, "node-b", "process started")
        .into_iter()
        .filter(|l| time_of(l) > 11.0)
        .count();
    assert_eq!(late, 0, "{b:?}");
    assert!(!lines(&trace, "node-b", "crash ignored").is_empty());
}

#[test]
fn node_ids_too_long_for_an_owner_id_are_refused_not_renamed() {
    // Proves audit item 1: an id longer than MAX_NODE_ID_LEN is a validation error naming the key
    // and the limit — it used to be renamed `n0#1` and collide with a node really named `n0`.
    let long = "x".repeat(MAX_NODE_ID_LEN + 1);
    let scenario = Scenario::new("long-id", secs(60)).with_nodes([long.as_str(), "n0"]);
    let err = Simulation::from_scenario(&scenario, RunOptions::default()).unwrap_err();
    assert_eq!(err.key, "node[0].id");
    assert!(
        err.message
            .contains(&format!("at most {MAX_NODE_ID_LEN} bytes")),
        "{err}"
    );

    // At the limit, every owner id is the node id with its incarnation.
    let longest = "x".repeat(MAX_NODE_ID_LEN);
    let mut scenario = Scenario::new("longest-id", secs(60)).with_nodes([longest.as_str(), "n0"]);
    scenario.nodes.push(NodeSpec::new("n1"));
    scenario.nodes[1].start_at = secs(1);
    scenario.nodes[2].start_at = secs(1);
    let scenario = scenario.with_fault(FaultSpec::Pause {
        host: longest.clone(),
        at: secs(5),
        duration: secs(40),
    });
    let report = run_seed(&scenario, 0);
    let owners: Vec<&str> = report.terms.iter().map(|t| t.owner.as_str()).collect();
    assert_eq!(owners[0], format!("{longest}#1"));
    assert!(owners[1..].iter().all(|o| *o == "n0#1" || *o == "n1#1"));
    assert_eq!(report.violations, vec![]);
}
