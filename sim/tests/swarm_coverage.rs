//! The abstract states a run visits, and the swarm's coverage of a bounded
//! search's states (`fenced-sim verify --swarm`): what each state records is
//! what the runs did, the measure grows with the seeds and never exceeds the
//! space, and it does not depend on the number of threads.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::workspace_root;
use fenced_sim::observation::describe_abstract_state;
use fenced_sim::verify::{swarm, verify, Bounds, FaultKind, Outcome};
use fenced_sim::{FaultSpec, LatencyScript, RunOptions, Scenario, Simulation};

fn load(name: &str) -> Scenario {
    fenced_sim::file::load(&workspace_root().join(format!("sim/tests/verify/{name}.toml")))
        .expect("the test scenario loads")
}

/// The states a run of `scenario` visits, described.
fn visited(scenario: &Scenario) -> BTreeSet<String> {
    let mut sim = Simulation::from_scenario(scenario, RunOptions::default()).expect("runs");
    sim.record_abstract_states();
    sim.run_to_end();
    let nodes: Vec<String> = scenario.nodes.iter().map(|n| n.id.clone()).collect();
    sim.take_abstract_states()
        .expect("asked for")
        .into_iter()
        .map(|code| describe_abstract_state(code, &nodes).expect("two nodes: exact codes"))
        .collect()
}

fn any(states: &BTreeSet<String>, needle: &str) -> bool {
    states.iter().any(|s| s.contains(needle))
}

#[test]
fn a_stale_leader_is_a_state_only_the_split_brain_schedule_visits() {
    // The clean run of the unfenced configuration: node-a leads the newest
    // term, node-b follows. verify's shortest split-brain (node-a paused
    // from 2 ms + 1 ns for 4 s - 1 ns) passes through node-a leading an
    // older term while node-b leads the newest.
    let mut scenario = load("small-unfenced");
    // verify's schedule: every message 1 ms.
    scenario.network.script = Some(LatencyScript {
        latency: Duration::from_millis(1),
        choices: Vec::new(),
        reorders: Vec::new(),
    });
    let clean = visited(&scenario);
    assert!(
        any(
            &clean,
            "node-a: leads; node-b: follows; store: granted node-a last"
        ),
        "{clean:#?}"
    );
    assert!(!any(&clean, "older term"), "{clean:#?}");
    scenario.faults.push(FaultSpec::Pause {
        host: "node-a".to_string(),
        at: Duration::from_nanos(2_000_001),
        duration: Duration::from_nanos(3_999_999_999),
    });
    let split = visited(&scenario);
    assert!(
        any(
            &split,
            "node-a: leads an older term, paused; node-b: leads; store: granted node-b last"
        ),
        "{split:#?}"
    );
}

#[test]
fn cut_off_means_the_link_to_the_store_is_down_whatever_fault_downs_it() {
    // An isolation of the node, an isolation of the store, a cut either way
    // and a partition that separates them all cut node-a off; a partition
    // that leaves node-a a bridge does not.
    let base = load("small-fenced");
    let second = Duration::from_secs(1);
    let with = |fault: FaultSpec| {
        let mut s = base.clone();
        s.faults.push(fault);
        visited(&s)
    };
    let cut_off = "node-a: leads, cut off from the store";
    let faults = [
        FaultSpec::Isolate {
            host: "node-a".to_string(),
            at: 5 * second,
            duration: second,
        },
        FaultSpec::Isolate {
            host: "lease-store".to_string(),
            at: 5 * second,
            duration: second,
        },
        FaultSpec::Cut {
            from: "lease-store".to_string(),
            to: "node-a".to_string(),
            at: 5 * second,
            duration: second,
        },
        FaultSpec::Partition {
            groups: vec![vec!["node-a".to_string()], vec!["lease-store".to_string()]],
            at: 5 * second,
            duration: second,
        },
    ];
    for fault in faults {
        let states = with(fault.clone());
        assert!(any(&states, cut_off), "{fault:?}: {states:#?}");
    }
    let bridge = with(FaultSpec::Partition {
        groups: vec![vec!["node-b".to_string()], vec!["lease-store".to_string()]],
        at: 5 * second,
        duration: second,
    });
    assert!(!any(&bridge, "node-a: leads, cut off"), "{bridge:#?}");
    assert!(
        any(&bridge, "node-b: cut off from the store"),
        "{bridge:#?}"
    );
    assert!(!any(&visited(&base), "cut off"));
}

#[test]
fn the_swarm_covers_more_of_the_space_with_more_seeds_and_never_more_than_it() {
    let scenario = load("small-fenced");
    let bounds = Bounds {
        faults: 1,
        kinds: vec![FaultKind::Pause, FaultKind::Isolate, FaultKind::Crash],
        servers: true,
        grid: Duration::from_secs(1),
        boundaries: false,
        lengths: vec![Duration::from_secs(1), Duration::from_secs(4)],
        latencies: vec![Duration::from_millis(1), Duration::from_millis(5)],
        deviations: 0,
        drops: 0,
        duplicates: 0,
        reorders: 0,
        max_states: 100_000,
        jobs: 2,
        deduplicate: true,
        symmetry: false,
    };
    let search = verify(&scenario, &RunOptions::default(), &bounds).expect("runs");
    assert_eq!(search.outcome, Outcome::Proven);
    assert_eq!(
        search.abstract_states,
        search.abstract_state_set.len() as u64
    );
    assert!(search.abstract_states > 5, "{}", search.abstract_states);
    let measure = |jobs| {
        swarm::coverage(
            &scenario,
            &RunOptions::default(),
            &search.abstract_state_set,
            &[1, 10, 200],
            jobs,
        )
        .expect("the swarm runs")
    };
    let points = measure(2);
    assert_eq!(points, measure(1), "the measure does not depend on threads");
    assert_eq!(
        points.iter().map(|p| p.seeds).collect::<Vec<_>>(),
        [1, 10, 200]
    );
    for pair in points.windows(2) {
        assert!(pair[0].covered <= pair[1].covered, "{points:?}");
        assert!(pair[0].outside <= pair[1].outside, "{points:?}");
    }
    for p in &points {
        assert!(
            p.covered <= p.space && p.space == search.abstract_states,
            "{p:?}"
        );
        assert_eq!(p.missed.len() as u64, p.space - p.covered, "{p:?}");
    }
    assert!(points[2].covered > points[0].covered, "{points:?}");
    // Bad checkpoints are refused, not run.
    assert!(swarm::coverage(&scenario, &RunOptions::default(), &BTreeSet::new(), &[0], 1).is_err());
}
