//! The simulator and the lab execute one fault plan: for every shipped
//! scenario, the simulator's executed fault actions are exactly the steps of
//! `ValidScenario::fault_plan` (same actions, hosts, instants and order), its
//! drawn recurring faults resolve as their scheduled forms do, and — for
//! every scenario the lab runs — the lab's planned steps realise the same
//! plan steps, in order, at the same instants, on the hosts each names.
//! Needs no PostgreSQL.

use std::path::PathBuf;
use std::time::Duration;

use fenced_lab::faketime::{FaketimeSupport, Measured, StepSupport, StepsMeasured};
use fenced_lab::plan::{
    load, Action, ClockTarget, Direction, LabPlan, PlanOptions, Server, TimeScale,
};
use fenced_sim::{
    FaultAction, FaultPlan, HostId, HostNames, PlanStep, Resolution, RunOptions, ServerId,
    Simulation, StepCause, ValidScenario,
};

fn shipped() -> Vec<(String, ValidScenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the scenarios directory")
        .filter_map(|entry| Some(entry.ok()?.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_stem().expect("a name").to_string_lossy().into();
            (name, load(&path).expect("a shipped scenario loads"))
        })
        .collect()
}

/// What the simulator executed, recurring faults drawn as scheduled ones.
fn simulate(valid: &ValidScenario) -> (Vec<PlanStep>, Vec<fenced_sim::FaultSpec>) {
    let mut sim = Simulation::new(valid, RunOptions::default()).expect("within budget");
    sim.record_fault_actions();
    sim.record_recurring_faults();
    sim.run_until(valid.duration);
    assert!(sim.halted().is_none(), "{}: halted", valid.name);
    (
        sim.fault_actions().to_vec(),
        sim.recurring_faults().to_vec(),
    )
}

fn is_drawn(plan: &FaultPlan, step: &PlanStep) -> bool {
    matches!(step.cause, StepCause::Fault(i) if matches!(plan.faults()[i], Resolution::Recurring(_)))
}

fn is_anchored(plan: &FaultPlan, step: &PlanStep) -> bool {
    matches!(step.cause, StepCause::Fault(i) if matches!(plan.faults()[i], Resolution::Anchored { .. }))
}

/// Each anchored fault the simulator began ran its resolution's actions:
/// the start, then the follow-up its resolution has, that long after.
fn check_anchored(name: &str, plan: &FaultPlan, executed: &[PlanStep]) {
    for (index, fault) in plan.faults().iter().enumerate() {
        let Resolution::Anchored { anchor, fault } = fault else {
            continue;
        };
        let steps: Vec<&PlanStep> = executed
            .iter()
            .filter(|s| s.cause == StepCause::Fault(index))
            .collect();
        assert!(!steps.is_empty(), "{name}: anchored fault[{index}] began");
        assert_eq!(steps[0].action, fault.start, "{name}: fault[{index}] start");
        assert!(
            steps[0].at >= anchor.not_before,
            "{name}: fault[{index}] after `after`"
        );
        match &fault.follow_up {
            Some(follow) => {
                assert_eq!(steps.len(), 2, "{name}: fault[{index}]: {steps:?}");
                assert_eq!(steps[1].action, follow.action, "{name}: fault[{index}] end");
                assert_eq!(
                    steps[1].at,
                    steps[0].at + follow.after,
                    "{name}: fault[{index}]"
                );
            }
            None => assert_eq!(steps.len(), 1, "{name}: fault[{index}]: {steps:?}"),
        }
    }
}

/// The simulator's scheduled steps are the plan's; each drawn occurrence
/// starts as its scheduled form resolves, and each drawn end or restart is
/// one that resolution has (an occurrence that found nothing has none).
fn check_simulator(name: &str, valid: &ValidScenario, plan: &FaultPlan) {
    let (executed, drawn) = simulate(valid);
    let (anchored, executed): (Vec<PlanStep>, Vec<PlanStep>) = executed
        .into_iter()
        .partition(|step| is_anchored(plan, step));
    check_anchored(name, plan, &anchored);
    let (drawn_steps, scheduled): (Vec<PlanStep>, Vec<PlanStep>) =
        executed.into_iter().partition(|step| is_drawn(plan, step));
    assert_eq!(scheduled.len(), plan.steps().len(), "{name}: step count");
    for (i, (sim, planned)) in scheduled.iter().zip(plan.steps()).enumerate() {
        assert_eq!(sim, planned, "{name}: step {i}");
    }
    let hosts = HostNames::of(valid);
    let mut starts = Vec::new();
    let mut follow_ups = Vec::new();
    for fault in &drawn {
        let Ok(Resolution::Scheduled(resolved)) = fault.resolve(valid, &hosts) else {
            panic!("{name}: a drawn fault resolves as a scheduled one: {fault:?}");
        };
        starts.push((resolved.at, resolved.start.clone()));
        if let Some(follow) = resolved.follow_up {
            follow_ups.push((resolved.at + follow.after, follow.action));
        }
    }
    let mut logged_starts = Vec::new();
    for step in drawn_steps {
        let is_start = matches!(
            step.action,
            FaultAction::Pause { .. } | FaultAction::Isolate { .. } | FaultAction::Crash { .. }
        );
        if is_start {
            logged_starts.push((step.at, step.action));
            continue;
        }
        let found = follow_ups
            .iter()
            .position(|(at, action)| *at == step.at && *action == step.action);
        let Some(found) = found else {
            panic!("{name}: a drawn follow-up no occurrence has: {step:?}");
        };
        follow_ups.swap_remove(found);
    }
    assert_eq!(logged_starts, starts, "{name}: drawn starts");
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

fn lock(server: Server) -> HostId {
    HostId::Server(match server {
        Server::LeaseStore => ServerId::Lock(0),
        Server::Redis(index) => ServerId::Lock(index),
        Server::Downstream => ServerId::Downstream,
    })
}

/// The host a pause, resume or restart of a server names.
fn host_of(action: &FaultAction) -> Option<HostId> {
    match action {
        FaultAction::Pause { host } | FaultAction::Resume { host } => Some(*host),
        FaultAction::ServerDown { server, .. } | FaultAction::ServerUp { server, .. } => {
            Some(HostId::Server(*server))
        }
        _ => None,
    }
}

/// Whether lab action `real` acts on the hosts plan action `planned` names,
/// as a start (`Block`) or an end (`Unblock`) where it is one.
fn same_hosts(planned: &FaultAction, real: &Action) -> bool {
    let node = |n: &u32| *n as usize;
    match (planned, real) {
        (FaultAction::StartNode { node: n }, Action::Spawn { node: r })
        | (FaultAction::Crash { node: n }, Action::Kill { node: r })
        | (FaultAction::Stop { node: n }, Action::Terminate { node: r })
        | (FaultAction::Abdicate { node: n }, Action::Abdicate { node: r })
        | (FaultAction::Replace { node: n }, Action::Replace { node: r })
        | (FaultAction::Restart { node: n }, Action::Restart { node: r, .. }) => node(n) == *r,
        (FaultAction::Pause { host }, Action::Pause { node: r })
        | (FaultAction::Resume { host }, Action::Resume { node: r }) => {
            *host == HostId::Node(*r as u32)
        }
        (
            FaultAction::Pause { host } | FaultAction::Isolate { host },
            Action::Block { link, .. },
        )
        | (
            FaultAction::Resume { host } | FaultAction::Reconnect { host },
            Action::Unblock { link, .. },
        ) => *host == HostId::Node(link.node as u32) || *host == lock(link.server),
        (FaultAction::Cut { from, to }, Action::Block { link, direction })
        | (FaultAction::Uncut { from, to }, Action::Unblock { link, direction }) => {
            let (n, s) = (HostId::Node(link.node as u32), lock(link.server));
            match direction {
                Direction::ToServer => (*from, *to) == (n, s),
                Direction::ToNode => (*from, *to) == (s, n),
            }
        }
        (FaultAction::Partition(p), Action::Block { link, .. })
        | (FaultAction::EndPartition(p), Action::Unblock { link, .. }) => {
            p.separates(HostId::Node(link.node as u32), lock(link.server))
        }
        (FaultAction::Pause { .. }, Action::ServerPause { server })
        | (FaultAction::Resume { .. }, Action::ServerResume { server })
        | (FaultAction::ServerDown { .. }, Action::ServerKill { server })
            if matches!(server, Server::Redis(_)) =>
        {
            host_of(planned) == Some(lock(*server))
        }
        (FaultAction::Pause { host }, Action::ServerPause { server: s })
        | (FaultAction::Resume { host }, Action::ServerResume { server: s }) => *host == lock(*s),
        (FaultAction::ServerDown { server, .. }, Action::ServerDown { server: s })
        | (FaultAction::ServerUp { server, .. }, Action::ServerUp { server: s }) => {
            HostId::Server(*server) == lock(*s)
        }
        (FaultAction::ServerUp { durable, .. }, Action::ServerRestart { server, durable: d })
            if matches!(server, Server::Redis(_)) =>
        {
            durable == d && host_of(planned) == Some(lock(*server))
        }
        (FaultAction::Heal, Action::Heal) => true,
        (
            FaultAction::ClockJump { host, .. } | FaultAction::ClockStrobe { host, .. },
            Action::ClockStep { target, .. },
        )
        | (FaultAction::ClockSlew { host, .. }, Action::ClockSlew { target, .. }) => match target {
            ClockTarget::Node(node) => *host == HostId::Node(*node as u32),
            ClockTarget::LeaseStore => *host == HostId::Server(ServerId::Lock(0)),
            ClockTarget::Redis(index) => *host == HostId::Server(ServerId::Lock(*index)),
        },
        _ => false,
    }
}

/// The lab's steps realise the plan's, in order, each at its instant and on
/// its hosts; a plan step without one is a cut nothing travels over.
fn check_lab(name: &str, plan: &FaultPlan, lab: &LabPlan) {
    let mut next = 0;
    // A strobe's later flips come at their own instants, among later plan
    // steps: each is checked against its strobe's resolution, then set
    // aside.
    let mut flips = Vec::new();
    for (i, step) in lab.steps.iter().enumerate() {
        if step.flip > 0 {
            flips.push((i, step));
            continue;
        }
        assert!(
            step.planned + 1 >= next,
            "{name}: lab step {i} out of order"
        );
        for skipped in next..step.planned {
            let action = &plan.steps()[skipped].action;
            assert!(
                matches!(action, FaultAction::Cut { .. } | FaultAction::Uncut { .. }),
                "{name}: plan step {skipped} not realised: {action:?}"
            );
        }
        next = step.planned + 1;
        let planned = &plan.steps()[step.planned];
        assert_eq!(step.at, planned.at, "{name}: lab step {i}");
        assert_eq!(step.cause, planned.cause, "{name}: lab step {i}");
        assert!(
            same_hosts(&planned.action, &step.action),
            "{name}: lab step {i} {:?} realises {:?}",
            step.action,
            planned.action
        );
    }
    assert_eq!(next, plan.steps().len(), "{name}: every plan step realised");
    for (i, step) in flips {
        let planned = &plan.steps()[step.planned];
        let listed = planned.action.wall_steps(planned.at, lab_heal(lab));
        let wall = listed[step.flip as usize];
        assert_eq!(step.at, wall.at, "{name}: lab step {i}, a strobe's flip");
        assert!(
            matches!(step.action, Action::ClockStep { by_nanos, .. } if by_nanos == wall.by)
                && same_hosts(&planned.action, &step.action),
            "{name}: lab step {i} {:?} is flip {} of {:?}",
            step.action,
            step.flip,
            planned.action
        );
    }
}

/// When the lab's plan heals (at scale 1, the scenario's `heal_at`).
fn lab_heal(lab: &LabPlan) -> Option<Duration> {
    lab.steps
        .iter()
        .find(|step| matches!(step.action, Action::Heal))
        .map(|step| step.at)
}

#[test]
fn the_simulator_and_the_lab_execute_one_fault_plan() {
    let options = PlanOptions {
        time_scale: TimeScale::new(1.0).expect("a valid scale"),
        seed: None,
        faketime: verified(),
    };
    let mut compared = 0;
    for (name, valid) in shipped() {
        let plan = valid.fault_plan();
        check_simulator(&name, &valid, &plan);
        if let Ok(lab) = LabPlan::new(&valid, &options) {
            assert_eq!(lab.end, valid.duration, "{name}");
            check_lab(&name, &plan, &lab);
            compared += 1;
        }
    }
    // The scenarios the lab runs for real (lab/README.md): 35 (the last,
    // connection-lock-server-restart), and the two ZooKeeper partition
    // stories (the cut to `zookeeper` is a one-way block of node-a's
    // lease-store link, as any lock server's).
    assert_eq!(compared, 37);
}

#[test]
fn a_plan_whose_steps_tie_agrees_too() {
    // Steps at one instant — a pause starting as another ends, a node
    // starting as a fault does, a fault at heal_at — in the same order in
    // both.
    use fenced_sim::{FaultSpec, Scenario};
    let secs = Duration::from_secs;
    let mut scenario = Scenario::new("ties", secs(60)).with_nodes(["a", "b"]);
    scenario.nodes[1].start_at = secs(5);
    let pause = |host: &str, at, duration| FaultSpec::Pause {
        host: host.to_string(),
        at: secs(at),
        duration: secs(duration),
    };
    scenario.faults = vec![
        pause("a", 5, 5),
        pause("a", 10, 5),
        pause("b", 5, 10),
        FaultSpec::Partition {
            groups: vec![vec!["a".to_string()], vec!["lease-store".to_string()]],
            at: secs(15),
            duration: secs(5),
        },
        FaultSpec::Crash {
            node: "b".to_string(),
            at: secs(30),
            restart_after: Some(secs(10)),
        },
    ];
    scenario.heal_at = Some(secs(30));
    let valid = scenario.validated().expect("valid");
    let plan = valid.fault_plan();
    check_simulator("ties", &valid, &plan);
    let options = PlanOptions {
        time_scale: TimeScale::new(1.0).expect("a valid scale"),
        seed: None,
        faketime: verified(),
    };
    let lab = LabPlan::new(&valid, &options).expect("plans");
    check_lab("ties", &plan, &lab);
}
