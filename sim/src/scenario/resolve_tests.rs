//! The resolution of faults into primitive actions, and the plan's order.

use std::time::Duration;

use super::*;
use crate::scenario::{NodeSpec, ProtocolSpec};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const STORE: HostId = HostId::Server(ServerId::Lock(0));
const DOWN: HostId = HostId::Server(ServerId::Downstream);

fn scenario() -> Scenario {
    Scenario::new("r", secs(100)).with_nodes(["a", "b"])
}

fn plan(scenario: &Scenario) -> Vec<(Duration, StepCause, FaultAction)> {
    let valid = scenario.validated().expect("a valid scenario");
    valid
        .fault_plan()
        .steps()
        .iter()
        .map(|s| (s.at, s.cause, s.action.clone()))
        .collect()
}

#[test]
fn names_resolve_to_hosts_for_every_design() {
    // The fenced protocol's servers have fixed names; another design's
    // servers go by their own names, and `lease-store` is its first.
    let fenced = HostNames::of(&scenario());
    assert_eq!(fenced.host("lease-store"), Some(STORE));
    assert_eq!(fenced.host("downstream"), Some(DOWN));
    assert_eq!(fenced.host("b"), Some(HostId::Node(1)));
    assert_eq!(fenced.host("c"), None);
    assert_eq!(fenced.name(STORE), "lease-store");
    let mut redlock = scenario();
    redlock.election.protocol = ProtocolSpec::by_name("redlock").expect("a design");
    let names = HostNames::of(&redlock);
    assert_eq!(
        names.host("redis-3"),
        Some(HostId::Server(ServerId::Lock(2)))
    );
    assert_eq!(names.host("lease-store"), names.host("redis-1"));
    assert_eq!(names.name(HostId::Server(ServerId::Lock(2))), "redis-3");
    let wrong = FaultSpec::Crash {
        node: "downstream".to_string(),
        at: secs(1),
        restart_after: None,
    };
    assert_eq!(
        wrong.resolve(&redlock, &names),
        Err(ResolveError::NotANode {
            name: "downstream".to_string()
        })
    );
}

#[test]
fn a_partition_is_bridged_by_hosts_in_no_group() {
    // `[[a], [lease-store]]` separates a from the store; the downstream and
    // b, named in no group, reach both sides.
    let s = scenario();
    let fault = FaultSpec::Partition {
        groups: vec![vec!["a".to_string()], vec!["lease-store".to_string()]],
        at: secs(5),
        duration: secs(10),
    };
    let Ok(Resolution::Scheduled(resolved)) = fault.resolve(&s, &HostNames::of(&s)) else {
        panic!("a scheduled fault");
    };
    let FaultAction::Partition(partition) = &resolved.start else {
        panic!("a partition: {resolved:?}");
    };
    let a = HostId::Node(0);
    assert!(partition.separates(a, STORE) && partition.separates(STORE, a));
    assert!(!partition.separates(a, DOWN) && !partition.separates(HostId::Node(1), STORE));
    assert_eq!(partition.group_of(DOWN), None);
    assert_eq!(partition.text(), "[a] | [lease-store]");
    let end = resolved.follow_up.expect("an end");
    assert_eq!(
        (end.after, end.action),
        (secs(10), FaultAction::EndPartition(partition.clone()))
    );
}

#[test]
fn a_restart_keeps_state_as_the_scenario_declares() {
    // An explicit `durable` wins; otherwise `[store] durable`, else durable.
    let mut s = scenario();
    s.durability.store = Some(false);
    let restart = |durable| FaultSpec::Restart {
        host: "lease-store".to_string(),
        at: secs(1),
        duration: secs(2),
        durable,
    };
    let server = ServerId::Lock(0);
    for (given, host, expected) in [
        (None, "lease-store", false),
        (Some(true), "lease-store", true),
        (None, "downstream", true),
    ] {
        let mut fault = restart(given);
        if let FaultSpec::Restart { host: h, .. } = &mut fault {
            *h = host.to_string();
        }
        let Ok(Resolution::Scheduled(resolved)) = fault.resolve(&s, &HostNames::of(&s)) else {
            panic!("a scheduled fault");
        };
        let server = if host == "downstream" {
            ServerId::Downstream
        } else {
            server
        };
        assert_eq!(
            resolved.start,
            FaultAction::ServerDown {
                server,
                durable: expected
            }
        );
        assert_eq!(
            resolved.follow_up.map(|f| f.action),
            Some(FaultAction::ServerUp {
                server,
                durable: expected
            })
        );
    }
}

#[test]
fn one_instant_orders_starts_then_heal_then_ends() {
    // As the simulator's queue does: what is scheduled before the run (node
    // starts, fault starts, the heal) comes first at an instant, then ends
    // and restarts, by their fault's start.
    let mut s = scenario();
    s.nodes[1] = NodeSpec {
        start_at: secs(10),
        ..NodeSpec::new("b")
    };
    let pause = |at, duration| FaultSpec::Pause {
        host: "a".to_string(),
        at: secs(at),
        duration: secs(duration),
    };
    s.faults = vec![pause(5, 5), pause(10, 5), pause(2, 8)];
    let a = HostId::Node(0);
    assert_eq!(
        plan(&s),
        [
            (
                secs(0),
                StepCause::Start,
                FaultAction::StartNode { node: 0 }
            ),
            (secs(2), StepCause::Fault(2), FaultAction::Pause { host: a }),
            (secs(5), StepCause::Fault(0), FaultAction::Pause { host: a }),
            (
                secs(10),
                StepCause::Start,
                FaultAction::StartNode { node: 1 }
            ),
            (
                secs(10),
                StepCause::Fault(1),
                FaultAction::Pause { host: a }
            ),
            (
                secs(10),
                StepCause::Fault(2),
                FaultAction::Resume { host: a }
            ),
            (
                secs(10),
                StepCause::Fault(0),
                FaultAction::Resume { host: a }
            ),
            (
                secs(15),
                StepCause::Fault(1),
                FaultAction::Resume { host: a }
            ),
        ]
    );
}

#[test]
fn heal_ends_what_runs_and_starts_nothing_later() {
    // A fault at exactly heal_at starts just before the heal, which ends
    // it; a later one never starts; a restart stays (it is conditional).
    let mut s = scenario();
    s.heal_at = Some(secs(30));
    s.faults = vec![
        FaultSpec::Crash {
            node: "a".to_string(),
            at: secs(20),
            restart_after: Some(secs(20)),
        },
        FaultSpec::Isolate {
            host: "b".to_string(),
            at: secs(30),
            duration: secs(5),
        },
        FaultSpec::Crash {
            node: "b".to_string(),
            at: secs(31),
            restart_after: Some(secs(1)),
        },
    ];
    let b = HostId::Node(1);
    assert_eq!(
        plan(&s),
        [
            (
                secs(0),
                StepCause::Start,
                FaultAction::StartNode { node: 0 }
            ),
            (
                secs(0),
                StepCause::Start,
                FaultAction::StartNode { node: 1 }
            ),
            (
                secs(20),
                StepCause::Fault(0),
                FaultAction::Crash { node: 0 }
            ),
            (
                secs(30),
                StepCause::Fault(1),
                FaultAction::Isolate { host: b }
            ),
            (secs(30), StepCause::Heal, FaultAction::Heal),
            (
                secs(40),
                StepCause::Fault(0),
                FaultAction::Restart { node: 0 }
            ),
        ]
    );
}

#[test]
fn steps_at_or_after_the_end_are_left_out() {
    // The run never reaches them; the fault is still resolved.
    let mut s = scenario();
    s.faults = vec![FaultSpec::Crash {
        node: "a".to_string(),
        at: secs(99),
        restart_after: Some(secs(1)),
    }];
    let valid = s.validated().expect("valid");
    let plan = valid.fault_plan();
    assert_eq!(plan.steps().last().map(|s| s.at), Some(secs(99)));
    assert_eq!(plan.faults().len(), 1);
}

#[test]
fn a_drawn_occurrence_means_what_its_scheduled_form_means() {
    // Each recurring kind's occurrence resolves as the fault shrinking
    // writes down for it.
    let s = scenario();
    let names = HostNames::of(&s);
    for kind in [
        RecurringKind::Pause,
        RecurringKind::Isolate,
        RecurringKind::Crash,
    ] {
        let recurring = FaultSpec::Recurring {
            kind,
            node: None,
            every: secs(60),
            duration: DurationRange::fixed(secs(3)),
        };
        let Ok(Resolution::Recurring(fault)) = recurring.resolve(&s, &names) else {
            panic!("a recurring fault");
        };
        assert_eq!(fault.nodes, [0, 1]);
        let drawn = fault.kind.occurrence(1, secs(7), secs(3));
        let scheduled = kind.scheduled("b".to_string(), secs(7), secs(3));
        assert_eq!(
            scheduled.resolve(&s, &names),
            Ok(Resolution::Scheduled(drawn))
        );
    }
}
