//! `fenced-sim verify` on the zoo's designs: the same search, run through
//! the design's own models, starting and sizing its faults at the design's
//! boundaries (its server's expiries, its TTLs and timeouts) rather than at
//! the fenced protocol's. etcd with its defaults: a 60 s session lease kept
//! alive every 20 s.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::workspace_root;
use fenced_sim::verify::{
    boundary_lengths, verify, Bounds, FaultChoice, FaultKind, Outcome, Verification,
};
use fenced_sim::{RunOptions, Scenario};

fn data(name: &str) -> PathBuf {
    workspace_root().join(format!("sim/tests/verify/zoo/{name}.toml"))
}

fn load(name: &str) -> Scenario {
    fenced_sim::file::load(&data(name)).expect("the test scenario loads")
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Every length 1 ns below, at and 1 ns above each of `edges`.
fn straddling(edges: &[Duration]) -> Vec<Duration> {
    let one = Duration::from_nanos(1);
    edges.iter().flat_map(|&e| [e - one, e, e + one]).collect()
}

/// One pause on either node, on a 1 s grid and at the boundaries, with
/// `lengths`; every message at 1 ms; two jobs.
fn one_pause(lengths: Vec<Duration>) -> Bounds {
    Bounds {
        jobs: 2,
        ..common::one_pause_bounds(lengths)
    }
}

fn search(scenario: &Scenario, bounds: &Bounds) -> Verification {
    verify(scenario, &RunOptions::default(), bounds).expect("the search runs")
}

/// The one pause of a shortest split-brain of the configuration `name`,
/// searched at its design's boundaries: a pause of node-a, the leader.
fn shortest_split_brain(name: &str) -> FaultChoice {
    let scenario = load(name);
    let r = search(&scenario, &one_pause(boundary_lengths(&scenario)));
    let Outcome::Violation {
        invariants,
        schedule,
    } = &r.outcome
    else {
        panic!("{name}: expected a violation: {r:#?}");
    };
    assert_eq!(invariants, &vec!["split-brain".to_string()], "{name}");
    assert_eq!(schedule.len(), 1, "{name}: {schedule:?}");
    let pause = schedule.faults[0];
    assert_eq!(
        (pause.kind, pause.host),
        (FaultKind::Pause, 0),
        "{name}: {pause:?}"
    );
    pause
}

#[test]
fn a_designs_fault_lengths_are_its_own_boundaries() {
    // etcd: the session lease's TTL (60 s) and the keep-alive period, a
    // third of it — not the fenced protocol's lease_ttl, validity and
    // rejoin delay, which the scenario's [election] keys still hold.
    let etcd = load("etcd-unfenced");
    assert_eq!(boundary_lengths(&etcd), straddling(&[secs(20), secs(60)]));
    // Redlock with redlock-rb's defaults: the extension period (5 s), the
    // validity a client counts, ttl − drift(ttl) = 10 s − 102 ms, and the
    // TTL.
    let mut redlock = etcd.clone();
    redlock.election.protocol =
        fenced_sim::ProtocolSpec::by_name("redlock").expect("a design of the zoo");
    assert_eq!(
        boundary_lengths(&redlock),
        straddling(&[secs(5), Duration::from_millis(9_898), secs(10)])
    );
    // The fenced protocol keeps its own.
    let mut fenced = etcd.clone();
    fenced.election.protocol = fenced_sim::ProtocolSpec::Fenced;
    let lengths = boundary_lengths(&fenced);
    assert!(lengths.contains(&fenced.election.lease_ttl), "{lengths:?}");
    assert!(!lengths.contains(&secs(60)), "{lengths:?}");
}

#[test]
fn an_unfenced_etcd_leader_paused_until_its_lease_lapses_is_found_at_etcds_boundary() {
    // The shortest split-brain: node-a paused 1 ns after a deadline, just
    // after its keep-alive reached etcd, for 60 s − 1 ns — its lease lapses
    // at the server as the pause ends (the server's expiry, `keep-alive
    // arrival + TTL`, is a start instant too), node-b is elected, and
    // node-a's unit of work lands after node-b's first write.
    let pause = shortest_split_brain("etcd-unfenced");
    let scenario = load("etcd-unfenced");
    assert_eq!(pause.length_ns, 59_999_999_999, "the TTL's lower edge");
    assert_ne!(pause.at_ns % 1_000_000_000, 0, "a boundary, not the grid");

    // The control: searched with the lengths the fenced protocol's keys
    // give (what verify used for every design before it asked the design),
    // no single pause outlasts etcd's lease, and the same search proves
    // the unfenced design clean within those bounds.
    let mut as_fenced = scenario.clone();
    as_fenced.election.protocol = fenced_sim::ProtocolSpec::Fenced;
    let r = search(&scenario, &one_pause(boundary_lengths(&as_fenced)));
    assert_eq!(r.outcome, Outcome::Proven, "{r:#?}");
}

#[test]
fn the_etcd_counterexample_replays_with_run() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (_, report, file) = common::verify_and_replay(dir.path(), &data("etcd-unfenced"));
    assert_eq!(report["split_brain"], true, "{report}");
    let written = fenced_sim::file::load(&file).expect("the counterexample loads");
    assert_eq!(written.election.protocol.name(), "etcd");
}

#[test]
fn every_zoo_configuration_gives_the_verdict_the_readme_states() {
    // The README's table: each unfenced design breaks under one pause of
    // its leader whose length is one of the design's own boundaries (the
    // TTL's, the validity's, the lease duration's or the client-side
    // expiry's lower edge); the fenced ones, and the connection lock (its
    // holder's kernel answers the keepalive probes through any pause), are
    // proven over every single pause at their boundaries.
    let found = [
        ("redlock-unfenced", 9_897_999_999),
        ("zookeeper-unfenced", 79_999_999_999),
        ("client-go-unfenced", 14_999_999_999),
        ("dynamodb-unfenced", 19_999_999_999),
    ];
    for (name, length_ns) in found {
        let pause = shortest_split_brain(name);
        assert_eq!(pause.length_ns, length_ns, "{name}: {pause:?}");
    }
    for name in [
        "etcd-fenced",
        "zookeeper-fenced",
        "client-go-fenced",
        "connection-lock-unfenced",
    ] {
        let scenario = load(name);
        let r = search(&scenario, &one_pause(boundary_lengths(&scenario)));
        assert_eq!(r.outcome, Outcome::Proven, "{name}: {r:#?}");
        assert!(r.schedules_run > 5_000, "{name}: {}", r.schedules_run);
    }
}
