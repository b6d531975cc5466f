//! `fenced-sim compare`: the lock designs under the same protocol-neutral
//! faults. The matrix is deterministic, its known cells hold (what each
//! design lets happen, unfenced and fenced by its own token; the stuck
//! connection-bound lock), bad input is refused naming the problem, and the
//! CSV and SVG outputs are what they say.

mod common;

use std::time::Duration;

use common::{assert_exit, fenced_sim, stderr, stdout};
use fenced_sim::compare::{builtin, expiry, Matrix, Plan, Subject, CSV_HEADER};
use fenced_sim::sweep::Seeds;
use fenced_sim::{FaultSpec, NodeSpec, ProtocolSpec, Scenario};

/// Every design.
fn all_protocols() -> Vec<ProtocolSpec> {
    ProtocolSpec::NAMES
        .iter()
        .map(|n| ProtocolSpec::by_name(n).expect("a known name"))
        .collect()
}

/// The built-in scenarios named, run by every design over `seeds` seeds.
fn matrix(names: &[&str], seeds: u64, fenced: bool) -> Matrix {
    let rows = builtin()
        .into_iter()
        .filter(|n| names.contains(&n.name))
        .map(Subject::Builtin)
        .collect();
    let plan = Plan {
        rows,
        protocols: all_protocols(),
        seeds: Seeds {
            start: 0,
            count: seeds,
        },
        fenced,
    };
    plan.run(2, &|| {}).expect("the comparison runs")
}

#[test]
fn same_args_give_identical_output_whatever_the_threads() {
    let args = ["compare", "--seeds", "3", "--json"];
    let one = fenced_sim(args.iter().chain(&["--jobs", "1"]));
    assert_exit(&one, 0);
    let two = fenced_sim(args.iter().chain(&["--jobs", "2"]));
    assert_exit(&two, 0);
    assert_eq!(stdout(&one), stdout(&two));
    let json: serde_json::Value = serde_json::from_str(&stdout(&one)).expect("one JSON object");
    let (rows, cols) = (builtin().len(), ProtocolSpec::NAMES.len());
    assert_eq!(json["scenarios"].as_array().map(Vec::len), Some(rows));
    assert_eq!(json["protocols"].as_array().map(Vec::len), Some(cols));
    assert_eq!(json["cells"].as_array().map(Vec::len), Some(rows * cols));
    // The text names what ran, and the wall time stays on standard error.
    let text = fenced_sim(["compare", "--seeds", "3", "--only", "heavy-loss"]);
    assert_exit(&text, 0);
    assert!(stdout(&text).contains("1 scenario × 7 designs × 3 seeds"));
    assert!(!stdout(&text).contains("jobs"));
    assert!(stderr(&text).contains("21 runs"), "{}", stderr(&text));
}

#[test]
fn unfenced_designs_split_brain_when_a_stalled_leader_wakes() {
    let m = matrix(
        &[
            "stalled-leader",
            "stalled-leader-40s",
            "servers-restart-empty",
            "heavy-loss",
        ],
        5,
        false,
    );
    // Every design that fails over under a stall past its expiry lets the
    // woken leader's prepared write land after its successor's.
    for p in [
        "fenced",
        "client-go",
        "etcd",
        "redlock",
        "zookeeper",
        "dynamodb",
    ] {
        let c = m.find("stalled-leader", p).expect("a cell");
        assert!(c.split_brain_rate > 0.5, "{p}: {c:?}");
        assert_eq!(c.failover_rate, 1.0, "{p}: {c:?}");
        assert_eq!(c.stuck_rate, Some(0.0), "{p}: {c:?}");
    }
    // The connection-bound lock keeps a stalled holder's lock: no failover
    // in a 40 s stall, so no split-brain either.
    let pg = m
        .find("stalled-leader-40s", "connection-lock")
        .expect("a cell");
    assert_eq!(
        (pg.failover_rate, pg.split_brain_rate),
        (0.0, 0.0),
        "{pg:?}"
    );
    // A 40 s stall is past Redlock's 10 s TTL but within etcd's 60 s session.
    let redlock = m.find("stalled-leader-40s", "redlock").expect("a cell");
    assert!(redlock.split_brain_rate > 0.5, "{redlock:?}");
    assert_eq!(redlock.failover_due, 5, "{redlock:?}");
    let etcd = m.find("stalled-leader-40s", "etcd").expect("a cell");
    assert_eq!((etcd.failover_due, etcd.stuck_rate), (0, None), "{etcd:?}");
    // Loss alone never makes a failover due.
    assert!(m
        .cells
        .iter()
        .filter(|c| c.scenario == "heavy-loss")
        .all(|c| c.failover_due == 0 && c.stuck_rate.is_none()));
    // A lease store that comes back empty grants token 1 again: the fenced
    // protocol's tokens need a durable store.
    let empty = m.find("servers-restart-empty", "fenced").expect("a cell");
    assert!(
        empty.other_invariants.contains("token-monotonic"),
        "{empty:?}"
    );
    assert!(m
        .cells
        .iter()
        .filter(|c| c.scenario != "servers-restart-empty")
        .all(|c| c.other_violations == 0 && !c.fenced));
}

#[test]
fn fencing_by_the_designs_own_token_ends_split_brain_where_there_is_one() {
    let names: Vec<&str> = builtin().iter().map(|n| n.name).collect();
    let m = matrix(&names, 2, true);
    for c in &m.cells {
        let token = ProtocolSpec::by_name(&c.protocol)
            .expect("known")
            .has_token();
        assert_eq!(c.fenced, token, "{c:?}");
        if token {
            assert_eq!(c.split_brain_rate, 0.0, "{c:?}");
        }
    }
    // Redlock has nothing to fence with.
    let redlock = m.find("stalled-leader", "redlock").expect("a cell");
    assert!(redlock.split_brain_rate > 0.5, "{redlock:?}");
    assert!(m.columns.iter().all(|c| c.fenced == c.has_token));
}

#[test]
fn a_stalled_connection_bound_lock_is_stuck_and_a_lease_is_not() {
    // A 3 h stall: past PostgreSQL's keepalive verdict (2 h 11 min), and
    // the holder's kernel answers the probes, so its session lives on.
    let pg = ProtocolSpec::by_name("connection-lock").expect("known");
    assert_eq!(expiry(&pg), Duration::from_secs(7875));
    let mut s = Scenario::new("three-hour-stall", Duration::from_secs(4 * 3600));
    s.fencing = false;
    s.nodes.push(NodeSpec::new("node-a"));
    for id in ["node-b", "node-c"] {
        let mut n = NodeSpec::new(id);
        n.start_at = Duration::from_secs(1);
        s.nodes.push(n);
    }
    s.faults.push(FaultSpec::Pause {
        host: "node-a".into(),
        at: Duration::from_millis(12_050),
        duration: Duration::from_secs(3 * 3600),
    });
    let plan = Plan {
        rows: vec![Subject::File {
            label: "three-hour-stall".into(),
            scenario: Box::new(s),
        }],
        protocols: vec![pg, ProtocolSpec::Fenced],
        seeds: Seeds { start: 0, count: 2 },
        fenced: false,
    };
    let m = plan.run(1, &|| {}).expect("the comparison runs");
    let stuck = m
        .find("three-hour-stall", "connection-lock")
        .expect("a cell");
    assert_eq!(
        (stuck.failover_due, stuck.stuck_rate),
        (2, Some(1.0)),
        "{stuck:?}"
    );
    let lease = m.find("three-hour-stall", "fenced").expect("a cell");
    assert_eq!(
        (lease.failover_due, lease.stuck_rate),
        (2, Some(0.0)),
        "{lease:?}"
    );
}

/// A crashed leader's failover is due in every design, and none is stuck:
/// the term the crash ends (at the crash's very millisecond) was held when
/// the fault began. Before, the simulation counted no failover as due here,
/// where the real run of the same cell (`fenced-lab matrix`) counted one.
#[test]
fn a_crashed_leaders_failover_is_due_and_not_stuck() {
    let m = matrix(&["leader-crash"], 3, false);
    for p in ProtocolSpec::NAMES {
        let c = m.find("leader-crash", p).expect("a cell");
        assert_eq!((c.failover_due, c.stuck_rate), (3, Some(0.0)), "{c:?}");
    }
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let unknown = fenced_sim(["compare", "--protocols", "fenced,paxos"]);
    assert_exit(&unknown, 2);
    let err = stderr(&unknown);
    assert!(err.contains("unknown protocol `paxos`"), "{err}");
    assert!(
        err.contains("connection-lock, client-go, etcd, redlock"),
        "{err}"
    );

    let zero = fenced_sim(["compare", "--seeds", "0"]);
    assert_exit(&zero, 2);
    assert!(stderr(&zero).contains("--seeds must be at least 1"));

    let only = fenced_sim(["compare", "--only", "stalled-leader,nope"]);
    assert_exit(&only, 2);
    assert!(stderr(&only).contains("unknown scenario `nope`"));

    let missing = fenced_sim(["compare", "no/such/file.toml"]);
    assert_exit(&missing, 2);
    assert!(stderr(&missing).contains("no/such/file.toml"));

    let dir = tempfile::tempdir().expect("a temporary directory");
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "name = \"broken\"\nduration = \"soon\"\n").expect("written");
    let out = fenced_sim(["compare".as_ref(), broken.as_os_str()]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("broken.toml"), "{}", stderr(&out));

    // A file that targets one design's server cannot run on another.
    let other = fenced_sim([
        "compare",
        "scenarios/zookeeper-session-policy-partition.toml",
        "--protocols",
        "zookeeper,etcd",
        "--seeds",
        "1",
    ]);
    assert_exit(&other, 2);
    let err = stderr(&other);
    assert!(
        err.contains("zookeeper-session-policy-partition with protocol etcd"),
        "{err}"
    );
}

#[test]
fn csv_has_one_row_per_cell_and_files_replace_the_set() {
    let out = fenced_sim([
        "compare",
        "scenarios/gc-pause-unfenced.toml",
        "scenarios/leader-crash.toml",
        "--protocols",
        "fenced,redlock,client-go",
        "--seeds",
        "2",
        "--csv",
    ]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(lines.len(), 1 + 2 * 3, "{text}");
    let width = CSV_HEADER.split(',').count();
    for line in &lines[1..] {
        assert_eq!(line.split(',').count(), width, "{line}");
    }
    assert!(lines[1].starts_with("gc-pause-unfenced,fenced,as in the file,30.0,false,2,"));
    assert!(lines[6].starts_with("leader-crash,client-go,"));
}

#[test]
fn the_chart_is_an_svg_with_a_cell_per_scenario_and_design() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("compare.svg");
    let out = fenced_sim([
        "compare".as_ref(),
        "--only".as_ref(),
        "stalled-leader,leader-crash".as_ref(),
        "--seeds".as_ref(),
        "2".as_ref(),
        "--svg".as_ref(),
        path.as_os_str(),
    ]);
    assert_exit(&out, 0);
    let svg = std::fs::read_to_string(&path).expect("the chart was written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let cells: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class").is_some_and(|c| c.starts_with("cell")))
        .collect();
    assert_eq!(cells.len(), 2 * ProtocolSpec::NAMES.len());
    let rate = |p: &str| {
        cells
            .iter()
            .find(|n| n.attribute("data-protocol") == Some(p))
            .and_then(|n| n.attribute("data-split-brain"))
            .map(str::to_string)
    };
    let redlock = rate("redlock").and_then(|r| r.parse::<f64>().ok());
    assert!(redlock.is_some_and(|r| r > 0.5), "{redlock:?}");
    assert!(svg.contains("$ fenced-sim compare --only stalled-leader,leader-crash --seeds 2"));
}

/// Every built-in fault is anchored on node-a's unit of work, so it begins
/// `50 ms + j ms` into a unit — a write in flight — for every design,
/// however long its first lock takes (Redlock's opens a connection to each
/// of five instances in turn, about 75 ms, which a fault fixed at 50–149 ms
/// past a whole second missed in a third of the seeds).
#[test]
fn every_built_in_fault_begins_inside_node_as_unit_of_work_for_every_design() {
    use fenced_sim::compare::fault_placement;
    use fenced_sim::{RunOptions, Simulation};
    let row = builtin()
        .into_iter()
        .find(|n| n.name == "stalled-leader")
        .expect("a row");
    for protocol in all_protocols() {
        for seed in 0..6 {
            let placement = fault_placement(seed);
            let s = row.build(&protocol, false, seed);
            let report = Simulation::run_scenario(&s, RunOptions::with_seed(Some(seed)))
                .expect("runs")
                .report;
            let [anchor] = report.anchors.as_slice() else {
                panic!("{protocol} seed {seed}: {:?}", report.anchors);
            };
            let (fired, began) = (
                anchor.fired_at_ms.expect("node-a worked"),
                anchor.began_at_ms.expect("it began"),
            );
            assert!(
                fired >= placement.after.as_secs_f64() * 1000.0,
                "{protocol} seed {seed}: {anchor:?}"
            );
            let into = began - fired;
            let want = placement.into_unit.as_secs_f64() * 1000.0;
            assert!(
                (into - want).abs() < 0.01,
                "{protocol} seed {seed}: {anchor:?}"
            );
            assert!((50.0..150.0).contains(&into), "{protocol}: {anchor:?}");
        }
    }
}
