//! The plans of the shipped scenarios: which run for real, which are
//! refused and why, and what a plan holds.

use std::path::PathBuf;

use fenced_sim::{FaultSpec, Scenario, StoreClock};

use super::*;
use crate::faketime::{Measured, StepSupport, StepsMeasured};

fn scenario_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"))
}

fn verified() -> FaketimeSupport {
    FaketimeSupport::Verified {
        library: PathBuf::from("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
        measured: Measured {
            realtime_offset_secs: 100.0,
            monotonic_rate: 2.0,
        },
        steps: StepSupport::Verified(StepsMeasured {
            before_secs: 0.0,
            after_secs: 100.0,
            monotonic_rate: 1.0,
        }),
    }
}

/// libfaketime that fakes offsets and rates but cannot step a running
/// process's wall clock alone.
fn without_steps() -> FaketimeSupport {
    let FaketimeSupport::Verified {
        library, measured, ..
    } = verified()
    else {
        unreachable!("verified() is verified")
    };
    FaketimeSupport::Verified {
        library,
        measured,
        steps: StepSupport::Unavailable {
            why: "the step did not reach the wall clock".to_string(),
        },
    }
}

fn options(scale: f64, faketime: FaketimeSupport) -> PlanOptions {
    PlanOptions {
        time_scale: TimeScale::new(scale).expect("a valid scale"),
        seed: None,
        faketime,
    }
}

fn plan_file(name: &str, scale: f64) -> Result<LabPlan, PlanError> {
    let scenario = load(&scenario_file(name)).expect("a shipped scenario loads");
    LabPlan::new(&scenario, &options(scale, verified()))
}

fn refusals(result: Result<LabPlan, PlanError>) -> Vec<Refusal> {
    match result {
        Err(PlanError::Refused(refusals)) => refusals,
        Ok(_) => panic!("planned, expected a refusal"),
        Err(other) => panic!("expected a refusal, got {other}"),
    }
}

#[test]
fn every_shipped_scenario_is_planned_or_refused_as_listed() {
    // The lab's coverage of the shipped library, at --time-scale 0.1: the
    // fenced-protocol, connection-lock, etcd and zookeeper scenarios run for real; the
    // rest are refused up front, each with the first reason listed here
    // (Redlock's plan at 0.2: `design_redlock`'s tests).
    let refused = [
        ("client-go-fast-clock", "election.protocol"),
        ("client-go-gc-pause-fenced", "election.protocol"),
        ("client-go-gc-pause-unfenced", "election.protocol"),
        ("client-go-mixed-lease-durations-fixed", "election.protocol"),
        ("client-go-mixed-lease-durations", "election.protocol"),
        ("client-go-true-clocks", "election.protocol"),
        ("client-go-wall-clock-steps", "election.protocol"),
        ("downstream-restart-volatile", "fault[1] (restart)"),
        ("dynamodb-gc-pause-unfenced", "election.protocol"),
        ("etcd-wall-clock-steps", "fault[0] (clock-jump)"),
        ("explored-client-go-split-brain", "election.protocol"),
        ("explored-dynamodb-split-brain", "election.protocol"),
        (
            "explored-redlock-split-brain",
            "election.redlock.redis_timeout",
        ),
        ("fleet-election", "fault[0] (pause)"),
        ("fleet-election-50", "node"),
        ("fleet-election-500", "node"),
        ("heavy-loss-duplication", "network.duplicate"),
        ("lease-store-restart-volatile", "fault[1] (restart)"),
        ("redlock-clock-jump", "election.redlock.redis_timeout"),
        ("redlock-clock-strobe", "election.redlock.redis_timeout"),
        ("redlock-gc-pause", "election.redlock.redis_timeout"),
        ("redlock-restart-durable", "election.redlock.redis_timeout"),
        (
            "redlock-restart-without-persistence",
            "election.redlock.redis_timeout",
        ),
    ];
    let planned = [
        "asymmetric-cut",
        "connection-lock-gc-pause",
        "connection-lock-server-restart",
        "asymmetric-cut-eager-rejoin",
        "crash-restart",
        "downstream-restart-durable",
        "etcd-paused-leader-fenced",
        "etcd-paused-leader-unfenced",
        "explored-etcd-split-brain",
        "gc-pause-fenced",
        "gc-pause-unfenced",
        "graceful-stop",
        "leader-crash",
        "leader-isolated",
        "leader-partitioned-from-store",
        "lease-store-restart-durable",
        "membership-heartbeat-loss",
        "node-wall-clock-steps",
        "renew-too-close-under-loss",
        "short-pause",
        "slow-clock-fenced",
        "slow-clock-unfenced",
        "slow-store",
        "steady-state",
        "store-clock-slew-fenced",
        "store-clock-step-fenced",
        "store-clock-step-unfenced",
        "work-fails-abdicate",
        "zombie-replacement",
        "zookeeper-session-policy-partition",
        "zookeeper-standard-policy-partition",
    ];
    for (name, what) in refused {
        let refusals = refusals(plan_file(name, 0.1));
        assert_eq!(refusals[0].what, what, "{name}: {refusals:?}");
    }
    for name in planned {
        if let Err(error) = plan_file(name, 0.1) {
            panic!("{name} should plan: {error}");
        }
    }
    // Every shipped scenario is in one list or the other.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut shipped: Vec<String> = std::fs::read_dir(dir)
        .expect("the scenarios directory")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            Some(name.strip_suffix(".toml")?.to_string())
        })
        .collect();
    shipped.sort();
    let mut listed: Vec<String> = refused
        .iter()
        .map(|(name, _)| name.to_string())
        .chain(planned.iter().map(|name| name.to_string()))
        .collect();
    listed.sort();
    assert_eq!(shipped, listed);
}

#[test]
fn refusals_name_the_fault_and_say_why() {
    // Every refusal is listed at once, each with its reason.
    let recurring = refusals(plan_file("heavy-loss-duplication", 0.1));
    let whats: Vec<&str> = recurring.iter().map(|r| r.what.as_str()).collect();
    assert_eq!(whats, ["network.duplicate", "fault[0] (pause)"]);
    assert!(recurring[1].why.contains("recurring"), "{recurring:?}");
    let volatile = refusals(plan_file("lease-store-restart-volatile", 0.1));
    assert!(volatile[0].why.contains("durable = false"), "{volatile:?}");
    let zoo = refusals(plan_file("dynamodb-gc-pause-unfenced", 0.1));
    assert_eq!(
        zoo.len(),
        1,
        "another design's faults are not judged: {zoo:?}"
    );
    assert!(zoo[0].why.contains("`dynamodb`"), "{zoo:?}");
    // A floor is refused once, not once per node of the design.
    let redlock = refusals(plan_file("redlock-clock-jump", 0.1));
    assert_eq!(redlock.len(), 1, "{redlock:?}");
    assert_eq!(redlock[0].what, "election.redlock.redis_timeout");
    let fleet = refusals(plan_file("fleet-election-50", 0.1));
    assert!(fleet[0].why.contains("50 nodes"), "{fleet:?}");
}

#[test]
fn node_clocks_are_refused_without_a_verified_libfaketime() {
    // A drift the lab cannot fake is refused, naming the node.
    let scenario = load(&scenario_file("slow-clock-fenced")).expect("loads");
    let missing = FaketimeSupport::Unavailable {
        why: "not installed".to_string(),
    };
    let refusals = refusals(LabPlan::new(&scenario, &options(0.1, missing)));
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].what, "node[0] node-a");
    assert!(
        refusals[0].why.contains("clock drift -0.25"),
        "{refusals:?}"
    );
    let plan = LabPlan::new(&scenario, &options(0.1, verified())).expect("plans");
    let clock = plan.nodes[0].clock.expect("node-a has a clock");
    assert_eq!(clock.faketime_spec(), "+0.000000000 x0.75");
    assert_eq!(plan.nodes[1].clock, None);
}

#[test]
fn a_gc_pause_becomes_sigstop_and_sigcont_at_scaled_times() {
    // Every duration is multiplied by the time scale: the run, the pause,
    // the start times and the elector's timings.
    let plan = plan_file("gc-pause-fenced", 0.1).expect("plans");
    assert_eq!(plan.end, Duration::from_secs(12));
    assert_eq!(plan.settings.timings.lease_ttl, Duration::from_secs(3));
    let steps: Vec<(Duration, &Action)> = plan.steps.iter().map(|s| (s.at, &s.action)).collect();
    assert_eq!(
        steps,
        [
            (Duration::ZERO, &Action::Spawn { node: 0 }),
            (Duration::from_millis(100), &Action::Spawn { node: 1 }),
            (Duration::from_millis(100), &Action::Spawn { node: 2 }),
        ]
    );
    // The pause is anchored on node-a's first unit of work after 1.2 s
    // (12 s scaled): no timed step, its actions from its start.
    let [anchored] = plan.anchored.as_slice() else {
        panic!("one anchored fault: {:?}", plan.anchored);
    };
    assert_eq!(anchored.fault, 0);
    assert_eq!(anchored.anchor.event, fenced_sim::AnchorEvent::WorkStarted);
    assert_eq!(anchored.anchor.node, Some(0));
    assert_eq!(anchored.anchor.not_before, Duration::from_millis(1200));
    assert_eq!(anchored.anchor.delay, Duration::ZERO);
    assert_eq!(anchored.text, "work-started of node-a");
    let actions: Vec<(Duration, &Action, bool)> = (anchored.steps.iter())
        .map(|s| (s.step.at, &s.step.action, s.ended_by_heal))
        .collect();
    assert_eq!(
        actions,
        [
            (Duration::ZERO, &Action::Pause { node: 0 }, false),
            (Duration::from_secs(4), &Action::Resume { node: 0 }, true),
        ]
    );
    assert!(plan.settings.fencing);
    assert_eq!(plan.seed, 7);
}

#[test]
fn network_faults_become_proxy_blocks_of_the_right_links() {
    // A partition of node-a from the lease store stalls both directions of
    // that one link; the downstream link stays up.
    let plan = plan_file("leader-partitioned-from-store", 0.1).expect("plans");
    let link = Link {
        node: 0,
        server: Server::LeaseStore,
    };
    let blocks: Vec<&Action> = plan
        .steps
        .iter()
        .filter(|s| matches!(s.cause, Cause::Fault(0)))
        .map(|s| &s.action)
        .collect();
    assert_eq!(
        blocks,
        [
            &Action::Block {
                link,
                direction: Direction::ToServer
            },
            &Action::Block {
                link,
                direction: Direction::ToNode
            },
            &Action::Unblock {
                link,
                direction: Direction::ToServer
            },
            &Action::Unblock {
                link,
                direction: Direction::ToNode
            },
        ]
    );
    // A one-way cut from the lease store to node-a stalls only answers.
    let plan = plan_file("asymmetric-cut", 0.1).expect("plans");
    let first = plan
        .steps
        .iter()
        .find(|s| matches!(s.cause, Cause::Fault(0)))
        .expect("the cut");
    assert_eq!(
        first.action,
        Action::Block {
            link,
            direction: Direction::ToNode
        }
    );
}

#[test]
fn server_faults_become_resets_and_stalls() {
    // A durable restart of the lease store resets and refuses its links;
    // a pause of a node is a SIGSTOP.
    let plan = plan_file("lease-store-restart-durable", 0.1).expect("plans");
    let server_steps: Vec<&Action> = plan
        .steps
        .iter()
        .filter(|s| s.cause == Cause::Fault(1))
        .map(|s| &s.action)
        .collect();
    let server = Server::LeaseStore;
    assert_eq!(
        server_steps,
        [&Action::ServerDown { server }, &Action::ServerUp { server }]
    );
    // A pause of the downstream stalls every node's downstream link, both ways.
    let mut scenario = Scenario::new("p", Duration::from_secs(60)).with_nodes(["a", "b"]);
    scenario.faults.push(FaultSpec::Pause {
        host: DOWNSTREAM.to_string(),
        at: Duration::from_secs(10),
        duration: Duration::from_secs(5),
    });
    let valid = scenario.validated().expect("valid");
    let plan = LabPlan::new(&valid, &options(1.0, verified())).expect("plans");
    let blocked = plan
        .steps
        .iter()
        .filter(
            |s| matches!(s.action, Action::Block { link, .. } if link.server == Server::Downstream),
        )
        .count();
    assert_eq!(blocked, 4);
}

#[test]
fn heal_at_ends_every_fault_and_drops_later_ones() {
    // After heal_at nothing is injected any more: a fault starting later is
    // not planned, one still running ends with the heal.
    let mut scenario = Scenario::new("h", Duration::from_secs(60)).with_nodes(["a"]);
    scenario.heal_at = Some(Duration::from_secs(30));
    scenario.faults.push(FaultSpec::Pause {
        host: "a".to_string(),
        at: Duration::from_secs(20),
        duration: Duration::from_secs(20),
    });
    scenario.faults.push(FaultSpec::Crash {
        node: "a".to_string(),
        at: Duration::from_secs(40),
        restart_after: Some(Duration::from_secs(1)),
    });
    let valid = scenario.validated().expect("valid");
    let plan = LabPlan::new(&valid, &options(1.0, verified())).expect("plans");
    let actions: Vec<&Action> = plan.steps.iter().map(|s| &s.action).collect();
    assert_eq!(
        actions,
        [
            &Action::Spawn { node: 0 },
            &Action::Pause { node: 0 },
            &Action::Heal
        ]
    );
    assert_eq!(plan.steps[2].at, Duration::from_secs(30));
}

#[test]
fn time_scales_and_floors_are_checked() {
    // A scale outside (0, 1000] is bad input; one that squeezes an interval
    // below the lab's floor is refused, naming the key.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1000.5] {
        assert!(
            matches!(TimeScale::new(bad), Err(PlanError::TimeScale { .. })),
            "{bad}"
        );
    }
    assert!(TimeScale::new(1000.0).is_ok());
    let refusals = refusals(plan_file("steady-state", 0.001));
    let whats: Vec<&str> = refusals.iter().map(|r| r.what.as_str()).collect();
    assert!(whats.contains(&"election.retry_interval"), "{whats:?}");
    assert!(
        refusals[0].why.contains("--time-scale 0.001"),
        "{refusals:?}"
    );
}

#[test]
fn one_instant_is_ordered_as_the_simulator_orders_it() {
    // A pause starting as another ends keeps the node stopped (the start
    // comes first, as in the simulator's queue); a fault at exactly heal_at
    // starts just before the heal ends it.
    let mut scenario = Scenario::new("o", Duration::from_secs(60)).with_nodes(["a"]);
    let pause = |at, duration| FaultSpec::Pause {
        host: "a".to_string(),
        at: Duration::from_secs(at),
        duration: Duration::from_secs(duration),
    };
    scenario.faults = vec![pause(5, 5), pause(10, 5), pause(30, 5)];
    scenario.heal_at = Some(Duration::from_secs(30));
    let valid = scenario.validated().expect("valid");
    let plan = LabPlan::new(&valid, &options(1.0, verified())).expect("plans");
    let steps: Vec<(u64, &Action)> = plan
        .steps
        .iter()
        .map(|s| (s.at.as_secs(), &s.action))
        .collect();
    assert_eq!(
        steps,
        [
            (0, &Action::Spawn { node: 0 }),
            (5, &Action::Pause { node: 0 }),
            (10, &Action::Pause { node: 0 }),
            (10, &Action::Resume { node: 0 }),
            (15, &Action::Resume { node: 0 }),
            (30, &Action::Pause { node: 0 }),
            (30, &Action::Heal),
        ]
    );
}

fn clock_fault(kind: &str, host: &str, at_secs: u64, by_secs: i64) -> FaultSpec {
    let at = Duration::from_secs(at_secs);
    let by = fenced_sim::ClockOffset(by_secs * 1_000_000_000);
    match kind {
        "clock-jump" => FaultSpec::ClockJump {
            host: host.to_string(),
            at,
            by,
        },
        "clock-slew" => FaultSpec::ClockSlew {
            host: host.to_string(),
            at,
            by,
            rate: 0.1,
        },
        _ => FaultSpec::ClockStrobe {
            host: host.to_string(),
            at,
            by,
            period: Duration::from_secs(2),
            duration: Duration::from_secs(8),
        },
    }
}

fn plan_with(
    faults: Vec<FaultSpec>,
    drift: f64,
    faketime: FaketimeSupport,
) -> Result<LabPlan, PlanError> {
    let mut scenario = Scenario::new("c", Duration::from_secs(60)).with_nodes(["a", "b"]);
    scenario.nodes[0].clock_drift = drift;
    scenario.faults = faults;
    let valid = scenario.validated().expect("valid");
    LabPlan::new(&valid, &options(0.5, faketime))
}

#[test]
fn clock_faults_the_lab_cannot_make_real_are_refused_with_the_reason() {
    // A node's slew (its monotonic clock would have to change rate at run
    // time), a step of a drifting node (libfaketime fakes a rate only by
    // faking CLOCK_MONOTONIC), a step where libfaketime cannot step a
    // running process, a step of a lease store declared monotonic.
    let slew = refusals(plan_with(
        vec![clock_fault("clock-slew", "a", 5, 2)],
        0.0,
        verified(),
    ));
    assert_eq!(slew[0].what, "fault[0] (clock-slew)");
    assert!(slew[0].why.contains("CLOCK_MONOTONIC"), "{slew:?}");
    let drifting = refusals(plan_with(
        vec![clock_fault("clock-jump", "a", 5, 2)],
        0.01,
        verified(),
    ));
    assert!(drifting[0].why.contains("drifts (0.01)"), "{drifting:?}");
    for kind in ["clock-jump", "clock-strobe"] {
        let unsupported = refusals(plan_with(
            vec![clock_fault(kind, "b", 5, 2)],
            0.0,
            without_steps(),
        ));
        assert_eq!(unsupported[0].what, format!("fault[0] ({kind})"));
        assert!(
            unsupported[0].why.contains("did not reach"),
            "{unsupported:?}"
        );
    }
    let mut scenario = Scenario::new("m", Duration::from_secs(60)).with_nodes(["a"]);
    scenario.store_clock = StoreClock::Monotonic;
    scenario.faults = vec![clock_fault("clock-jump", LEASE_STORE, 5, 40)];
    let valid = scenario.validated().expect("valid");
    let monotonic = refusals(LabPlan::new(&valid, &options(1.0, verified())));
    assert!(
        monotonic[0].why.contains("[store] clock = \"wall\""),
        "{monotonic:?}"
    );
    // A slew reaches a monotonic clock too: planned.
    scenario.faults = vec![clock_fault("clock-slew", LEASE_STORE, 5, 4)];
    let valid = scenario.validated().expect("valid");
    assert!(LabPlan::new(&valid, &options(1.0, verified())).is_ok());
}

#[test]
fn clock_steps_of_nodes_and_the_store_are_planned_at_scaled_times() {
    // At --time-scale 0.5: node b's step of +2 s at 5 s is +1 s at 2.5 s,
    // through its clock file; the store's step of -4 s at 10 s is -2 s at
    // 5 s, and its slew of 2 s at 10 % takes 10 s (scaled).
    let faults = vec![
        clock_fault("clock-jump", "b", 5, 2),
        clock_fault("clock-jump", LEASE_STORE, 10, -4),
        clock_fault("clock-slew", LEASE_STORE, 20, 2),
    ];
    let plan = plan_with(faults, 0.0, verified()).expect("plans");
    assert!(!plan.nodes[0].wall_steps);
    assert!(plan.nodes[1].wall_steps);
    assert!(plan.store_clock);
    let clock_steps: Vec<(Duration, &Action)> = plan
        .steps
        .iter()
        .filter(|s| matches!(s.cause, Cause::Fault(_)))
        .map(|s| (s.at, &s.action))
        .collect();
    assert_eq!(
        clock_steps,
        [
            (
                Duration::from_millis(2_500),
                &Action::ClockStep {
                    target: ClockTarget::Node(1),
                    by_nanos: 1_000_000_000
                }
            ),
            (
                Duration::from_secs(5),
                &Action::ClockStep {
                    target: ClockTarget::LeaseStore,
                    by_nanos: -2_000_000_000
                }
            ),
            (
                Duration::from_secs(10),
                &Action::ClockSlew {
                    target: ClockTarget::LeaseStore,
                    by_nanos: 1_000_000_000,
                    over: Duration::from_secs(10)
                }
            ),
        ]
    );
    // A run without a clock fault of the store installs no clock.
    let plan =
        plan_with(vec![clock_fault("clock-jump", "a", 5, 2)], 0.0, verified()).expect("plans");
    assert!(!plan.store_clock);
    assert!(plan.nodes[0].wall_steps);
}

#[test]
fn a_strobe_is_planned_flip_by_flip_and_the_heal_steps_it_back() {
    // Node b strobes by 1 s from 5 s every 2 s for 8 s (4 flips). Healed at
    // 8 s: the flips at 5 and 7 s were made, the one due at 9 s never comes,
    // and the clock stands where it began. Healed at 10 s: three flips (5,
    // 7, 9 s) were made, and the heal steps the clock back.
    for (heal_secs, expected) in [
        (8, vec![(5_000, 1_000), (7_000, -1_000)]),
        (
            10,
            vec![
                (5_000, 1_000),
                (7_000, -1_000),
                (9_000, 1_000),
                (10_000, -1_000),
            ],
        ),
    ] {
        let mut scenario = Scenario::new("s", Duration::from_secs(60)).with_nodes(["a", "b"]);
        scenario.heal_at = Some(Duration::from_secs(heal_secs));
        scenario.faults = vec![clock_fault("clock-strobe", "b", 5, 1)];
        let valid = scenario.validated().expect("valid");
        let plan = LabPlan::new(&valid, &options(1.0, verified())).expect("plans");
        let flips: Vec<(u128, i64, u32)> = plan
            .steps
            .iter()
            .filter_map(|s| match s.action {
                Action::ClockStep { target, by_nanos } => {
                    assert_eq!(target, ClockTarget::Node(1));
                    Some((s.at.as_millis(), by_nanos / 1_000_000, s.flip))
                }
                _ => None,
            })
            .collect();
        let expected: Vec<(u128, i64, u32)> = expected
            .into_iter()
            .enumerate()
            .map(|(i, (at, by))| (at, by, i as u32))
            .collect();
        assert_eq!(flips, expected, "healed at {heal_secs} s");
        // Steps stay in time order, the heal among them.
        assert!(plan.steps.windows(2).all(|w| w[0].at <= w[1].at));
    }
}

#[test]
fn the_nodes_run_with_the_settings_of_the_scaled_scenario_the_simulator_predicts() {
    // One scaling: what the plan gives the node processes (elector timings,
    // heartbeats, work, the client's bounds, retries, the network model) is
    // exactly what the scaled scenario the simulation runs says.
    let mut checked = 0;
    for entry in std::fs::read_dir(scenario_file("x").parent().expect("dir")).expect("scenarios") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let scenario = load(&path).expect("a shipped scenario loads");
        let Ok(plan) = LabPlan::new(&scenario, &options(0.1, verified())) else {
            continue;
        };
        let scaled = crate::judge::scaled_scenario(&scenario, plan.time_scale, plan.seed);
        let scaled = scaled.validated().expect("the scaled scenario is valid");
        let (s, n) = (scaled.scenario(), &plan.settings);
        let core = scaled.elector_timings(0);
        let name = path.display();
        assert_eq!(n.timings.lease_ttl, core.lease_ttl, "{name}");
        assert_eq!(n.timings.renew_interval, core.renew_interval, "{name}");
        assert_eq!(n.timings.retry_interval, core.retry_interval, "{name}");
        assert_eq!(n.timings.safety_margin, core.safety_margin, "{name}");
        assert_eq!(n.timings.rejoin_delay, core.rejoin_delay, "{name}");
        assert_eq!(
            n.heartbeat_interval, s.membership.heartbeat_interval,
            "{name}"
        );
        assert_eq!(n.liveness_ttl, s.membership.liveness_ttl, "{name}");
        assert_eq!(n.write_interval, s.work.write_interval, "{name}");
        assert_eq!(n.work_duration, s.work.work_duration, "{name}");
        assert_eq!(n.client, s.client, "{name}");
        assert_eq!(n.write_retries, s.work.write_retries, "{name}");
        assert_eq!(plan.network.latency, s.network.latency, "{name}");
        assert_eq!(plan.network.loss, s.network.loss, "{name}");
        assert_eq!(
            plan.network.retransmit_timeout, s.network.retransmit_timeout,
            "{name}"
        );
        checked += 1;
    }
    assert!(checked >= 20, "{checked} plannable scenarios checked");
}

#[test]
fn a_connection_lock_scenario_plans_its_design_and_refuses_what_the_proxy_cannot_make() {
    // The shipped connection-lock scenario plans, every node on the
    // design's settings scaled (keepalives in whole seconds); of a
    // scenario's faults, those that stall PostgreSQL's link (whose
    // keepalives the proxy's kernel answers) and a step of PostgreSQL's
    // clock (which moves nothing of the design) are refused, naming why,
    // while a cut of the downstream and a crash plan.
    let plan = plan_file("connection-lock-gc-pause", 0.1).expect("plans");
    for node in &plan.nodes {
        let Design::ConnectionLock(settings) = &node.design else {
            panic!("{}: {:?}", node.id, node.design);
        };
        assert_eq!(settings.tcp_keepalives_idle, Duration::from_secs(720));
        assert_eq!(settings.tcp_keepalives_interval, Duration::from_secs(8));
        assert_eq!(settings.retry_interval, Duration::from_millis(500));
    }
    let text = r#"
name = "t"
duration = "60s"
[election]
protocol = "connection-lock"
[downstream]
fencing = false
[[node]]
id = "node-a"
[[node]]
id = "node-b"
[[fault]]
kind = "cut"
from = "postgres"
to = "node-a"
at = "10s"
duration = "5s"
[[fault]]
kind = "cut"
from = "downstream"
to = "node-b"
at = "10s"
duration = "5s"
[[fault]]
kind = "crash"
node = "node-b"
at = "20s"
[[fault]]
kind = "clock-jump"
node = "postgres"
at = "30s"
by = "10s"
[[fault]]
kind = "isolate"
node = "node-a"
at = "40s"
duration = "5s"
"#;
    let scenario = fenced_sim::file::parse(text, std::path::Path::new("t.toml"))
        .expect("parses")
        .validated()
        .expect("valid");
    let refused = refusals(LabPlan::new(&scenario, &options(0.1, verified())));
    let whats: Vec<&str> = refused.iter().map(|r| r.what.as_str()).collect();
    assert_eq!(
        whats,
        [
            "fault[0] (cut)",
            "fault[3] (clock-jump)",
            "fault[4] (isolate)"
        ],
        "{refused:?}"
    );
    assert!(refused[0].why.contains("keepalive"), "{refused:?}");
    assert!(refused[1].why.contains("moved: false"), "{refused:?}");
}

/// A server pause of etcd and of ZooKeeper is a SIGSTOP of the server's own
/// process, whether the pause is at an instant or anchored on an event: the
/// anchored path once skipped the designs' own realisation, and an anchored
/// pause of ZooKeeper became a stall of its links (the server went on
/// expiring sessions; found by `fenced-lab matrix --keep` on
/// `servers-stalled`).
#[test]
fn a_server_pause_is_the_designs_own_whether_timed_or_anchored() {
    for name in ["lab-zookeeper-server-paused", "lab-etcd-server-paused"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/scenarios")
            .join(format!("{name}.toml"));
        let valid = load(&path).expect("a lab scenario loads");
        let timed = LabPlan::new(&valid, &options(0.1, verified())).expect("plannable");
        let server_pause = |action: &Action| {
            matches!(
                action,
                Action::ServerPause {
                    server: Server::LeaseStore
                }
            )
        };
        assert!(
            timed.steps.iter().any(|s| server_pause(&s.action)),
            "{name}: {:?}",
            timed.steps
        );
        let mut scenario = valid.into_scenario();
        let pause = scenario.faults.remove(0);
        let when = fenced_sim::Anchor::on(fenced_sim::AnchorEvent::WorkStarted);
        scenario.faults.push(pause.anchored(when));
        let valid = scenario.validated().expect("still valid");
        let anchored = LabPlan::new(&valid, &options(0.1, verified())).expect("plannable");
        let steps = &anchored.anchored[0].steps;
        assert!(server_pause(&steps[0].step.action), "{name}: {steps:?}");
        assert!(
            steps
                .iter()
                .all(|s| !matches!(s.step.action, Action::Block { .. })),
            "{name}: {steps:?}"
        );
    }
}
