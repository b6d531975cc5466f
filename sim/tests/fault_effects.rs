//! Each fault kind shows its effect, through the library API a user scripts.

mod common;

use common::*;
use fenced_sim::{ClockOffset, FaultSpec, RunOptions, Scenario, Simulation};

#[test]
fn a_paused_leader_is_taken_over_and_its_late_write_is_rejected() {
    // Proves the GC-pause case with fencing (Kleppmann's tokens 33/34): the successor leads with a higher token and the stalled leader's write, sent after it resumes, is rejected as stale.
    let scenario = trio("pause", secs(120)).with_fault(pause_a(secs(40)));
    let (report, trace) = run_traced(&scenario, 1);
    assert_eq!(report.violations, vec![]);
    assert!(!report.split_brain);
    assert_eq!(report.terms[0].owner, "node-a#1");
    assert_eq!(report.terms[0].token, 1);
    assert_eq!(report.terms[1].token, 2);
    assert_ne!(report.terms[1].owner, "node-a#1");
    assert_eq!(report.writes.rejected_stale, 1);
    // The rejected write was sent when node-a resumed, at 52.05 s.
    let rejected = lines(&trace, "downstream", "REJECTED");
    assert_eq!(rejected.len(), 1);
    assert!(
        rejected[0].contains("from node-a#1 with token 1"),
        "{}",
        rejected[0]
    );
    assert!((52.05..52.1).contains(&time_of(rejected[0])));
    assert!(report.coverage.takeover_during_pause >= 1);
}

#[test]
fn without_fencing_the_same_pause_is_reported_as_split_brain() {
    // Proves the checker finds and reports split-brain when the downstream does not check tokens: the late write is accepted after the successor's.
    let mut scenario = trio("pause-unfenced", secs(120)).with_fault(pause_a(secs(40)));
    scenario.fencing = false;
    let report = run_seed(&scenario, 1);
    assert!(report.split_brain);
    assert_eq!(report.violations_total, 1);
    let v = &report.violations[0];
    assert_eq!(v.invariant, "split-brain");
    assert!((52_050..52_100).contains(&v.at_ms), "{v:?}");
    assert!(v.detail.contains("token 1"), "{v:?}");
    assert_eq!(v.events.len(), 2, "the newer term's write and the late one");
    assert!(
        !report.expect.met,
        "split-brain is unexpected unless the scenario says so"
    );
}

#[test]
fn an_isolated_leader_steps_down_before_its_successor_starts() {
    // Proves that a leader cut off from every host stops on its local deadline, before its lease lapses at the store, so no two nodes ever believe they lead.
    let scenario = trio("isolate", secs(120)).with_fault(FaultSpec::Isolate {
        host: "node-a".into(),
        at: secs(15),
        duration: secs(60),
    });
    let (report, trace) = run_traced(&scenario, 2);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms.len(), 2);
    let (old, new) = (&report.terms[0], &report.terms[1]);
    assert_eq!(old.end_reason, "local-deadline");
    assert!(old.end_ms < new.start_ms, "{old:?} then {new:?}");
    assert_eq!(report.overlap_ms, 0);
    // The writes it sent while isolated, until its deadline, wait in the
    // network — its session is a TCP stream, which holds what a down link
    // cannot carry — and reach the downstream at the heal (75 s), where
    // fencing rejects every one: the network-delayed write, fenced.
    let rejected = lines(&trace, "downstream", "REJECTED");
    assert!(!rejected.is_empty());
    assert_eq!(rejected.len() as u64, report.writes.rejected_stale);
    for line in &rejected {
        assert!(line.contains("from node-a#1 with token 1"), "{line}");
        assert!(time_of(line) >= 75.0, "{line}");
    }
}

fn asymmetric_cut() -> Scenario {
    trio("cut", secs(180)).with_fault(FaultSpec::Cut {
        from: "lease-store".into(),
        to: "node-a".into(),
        at: secs(15),
        duration: secs(150),
    })
}

#[test]
fn an_asymmetric_cut_is_survived_by_the_rejoin_policy() {
    // Proves that when the leader's requests reach the store but the answers do not, a client that keeps its connection (a query timeout longer than the cut) lets it step down on its deadline, release, stay quiet, and a follower take over.
    let mut scenario = asymmetric_cut();
    scenario.client.query_timeout = secs(600);
    let (report, trace) = run_traced(&scenario, 3);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms[0].end_reason, "local-deadline");
    assert_eq!(report.terms.len(), 2);
    assert_ne!(report.terms[1].owner, "node-a#1");
    let released = lines(
        &trace,
        "lease-store",
        "release of token 1 from node-a#1: released",
    );
    assert_eq!(released.len(), 1);
    // Within a retry or two of the release.
    let (step_down, successor) = (released[0], &report.terms[1]);
    assert!(successor.start_ms as f64 / 1000.0 - time_of(step_down) < 5.0);
    // Answers to node-a were held by the cut (its session is a TCP
    // stream), never dropped; requests from it went through.
    assert!(lines(&trace, "lease-store", "to node-a#1 dropped").is_empty());
}

#[test]
fn an_asymmetric_cut_retires_the_default_clients_session_and_the_lease_lapses() {
    // Proves fenced::postgres's defaults under the same cut: the first unanswered renewal retires the session after the query bound (5 s + 1 s), a new one cannot open (its answers are cut), so neither renewals nor the release reach the store and the successor waits for the lease to lapse, 30 s after the last renewal that got through.
    let (report, trace) = run_traced(&asymmetric_cut(), 3);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms[0].end_reason, "local-deadline");
    assert_eq!(report.terms.len(), 2);
    let retired = lines(
        &trace,
        "node-a#1",
        "lease session closed: retired after a call timed out",
    );
    assert_eq!(retired.len(), 1, "one session, retired once");
    assert!(!lines(
        &trace,
        "node-a#1",
        "lease session closed: its open timed out"
    )
    .is_empty());
    assert!(lines(&trace, "lease-store", "release of token 1 from node-a#1").is_empty());
    let renewals = lines(&trace, "lease-store", "from node-a#1: renewed token 1");
    let last_renewal = time_of(renewals.last().expect("renewals before the cut"));
    assert!(
        last_renewal < time_of(retired[0]),
        "none after the retirement"
    );
    let successor = report.terms[1].start_ms as f64 / 1000.0;
    assert!(
        (last_renewal + 30.0..last_renewal + 33.0).contains(&successor),
        "the lease lapsed at {} + 30 s; the successor led at {successor}",
        last_renewal
    );
}

#[test]
fn a_crashed_leader_restarts_as_a_new_owner_with_a_fresh_token() {
    // Proves a crash loses the process and a restart is a new incarnation (node-a#2), which never reuses node-a#1's token.
    let scenario = Scenario::new("crash", secs(120))
        .with_nodes(["node-a"])
        .with_fault(FaultSpec::Crash {
            node: "node-a".into(),
            at: secs(25),
            restart_after: Some(secs(3)),
        });
    let (report, trace) = run_traced(&scenario, 4);
    assert_eq!(report.violations, vec![]);
    let owners: Vec<(&str, u64, &str)> = report
        .terms
        .iter()
        .map(|t| (t.owner.as_str(), t.token, t.end_reason.as_str()))
        .collect();
    assert_eq!(
        owners,
        vec![("node-a#1", 1, "crash"), ("node-a#2", 2, "run-ended")]
    );
    // While node-a#1's lease was live, the store refused node-a#2: a new owner.
    assert!(!lines(
        &trace,
        "lease-store",
        "from node-a#2: refused, held by node-a#1"
    )
    .is_empty());
}

#[test]
fn a_slow_leader_clock_makes_belief_overlap_that_fencing_rejects() {
    // Proves that drift beyond the safety margin lets the old leader believe past its lease, and that fencing rejects its writes in that window.
    let mut scenario = trio("slow-clock", secs(120)).with_fault(FaultSpec::Partition {
        groups: vec![vec!["node-a".into()], vec!["lease-store".into()]],
        at: secs(15),
        duration: secs(60),
    });
    scenario.nodes[0].clock_drift = -0.25;
    let report = run_seed(&scenario, 5);
    assert_eq!(report.violations, vec![]);
    assert!(
        report.overlap_ms > 1_000,
        "overlap {} ms",
        report.overlap_ms
    );
    assert!(report.writes.rejected_stale >= 1);

    scenario.fencing = false;
    let unfenced = run_seed(&scenario, 5);
    assert!(unfenced.split_brain);
}

#[test]
fn a_partition_separates_groups_but_bridges_unnamed_hosts() {
    // Proves partition groups: node-a loses the store but still writes to the (unnamed, bridging) downstream until its deadline, and the successor writes too.
    let scenario = trio("partition", secs(120)).with_fault(FaultSpec::Partition {
        groups: vec![vec!["node-a".into()], vec!["lease-store".into()]],
        at: secs(15),
        duration: secs(60),
    });
    let (report, trace) = run_traced(&scenario, 6);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.overlap_ms, 0);
    let last_a_write = lines(&trace, "downstream", "from node-a#1 with token 1: accepted")
        .last()
        .map(|l| time_of(l))
        .unwrap();
    assert!(
        last_a_write > 30.0,
        "node-a kept writing after the partition: {last_a_write}"
    );
    assert!(report.terms.len() >= 2);
}

#[test]
fn a_pure_clock_offset_changes_nothing_about_safety() {
    // Proves that leases measure spans, not absolute times: nodes whose clocks are hours apart still elect one leader with no overlap.
    let mut scenario = trio("offsets", secs(300));
    scenario.nodes[0].clock_offset = ClockOffset::ahead(secs(3 * 3600));
    scenario.nodes[1].clock_offset = ClockOffset::behind(secs(5 * 3600));
    let report = run_seed(&scenario, 7);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms.len(), 1);
    assert_eq!(report.overlap_ms, 0);
}

#[test]
fn a_zombie_incarnation_is_fenced() {
    // Proves the zombie case: a paused process and its replacement share a node id but not an owner; the replacement gets a new token and the zombie's late write is rejected.
    let scenario = Scenario::new("zombie", secs(120))
        .with_nodes(["node-a"])
        .with_fault(pause_a(secs(60)))
        .with_fault(FaultSpec::Replace {
            node: "node-a".into(),
            at: secs(20),
        });
    let mut scenario = scenario;
    scenario.work.work_duration = ms(200);
    let report = run_seed(&scenario, 8);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms[1].owner, "node-a#2");
    assert_eq!(report.terms[1].token, 2);
    assert_eq!(report.writes.rejected_stale, 1);
    assert_eq!(report.coverage.zombie_fenced, 1);
}

#[test]
fn heavy_loss_and_duplication_break_no_invariant() {
    // Proves that matching answers by request id makes lost, duplicated and reordered messages harmless to safety.
    let mut scenario = trio("lossy", secs(1200));
    scenario.network.loss = 0.3;
    scenario.network.duplicate = 0.3;
    scenario.network.latency = (ms(1), ms(800));
    for seed in 0..5 {
        let report = run_seed(&scenario, seed);
        assert_eq!(report.violations, vec![], "seed {seed}");
        assert!(
            report.writes.accepted > 100,
            "seed {seed}: the cluster still works"
        );
    }
}

#[test]
fn a_simulation_can_be_scripted_step_by_step() {
    // Proves the library API: run to a time, add a fault mid-run, run until quiescent, and read the report at any point.
    let scenario = trio("scripted", secs(600));
    let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).unwrap();
    sim.run_until(secs(20));
    assert_eq!(sim.now(), secs(20));
    let early = sim.report();
    assert_eq!(early.terms.len(), 1);
    assert_eq!(early.virtual_ms, 20_000);
    sim.add_fault(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(20),
        restart_after: None,
    })
    .unwrap();
    assert!(sim
        .add_fault(FaultSpec::Pause {
            host: "node-x".into(),
            at: secs(30),
            duration: secs(1)
        })
        .is_err());
    assert!(sim.run_until_quiescent(secs(120)));
    let report = sim.report();
    assert_eq!(report.terms.len(), 2);
    assert!(
        sim.now() < secs(60),
        "converged soon after the lease lapsed: {:?}",
        sim.now()
    );
}

#[test]
fn memory_stays_bounded_by_hosts_not_by_run_length() {
    // Proves the pending-event set (in-flight messages, timers, faults) does not grow with virtual time: a 24-hour run peaks no higher than a 1-hour run, within slack.
    let peak = |hours: u64| {
        let mut scenario = Scenario::new("fleet", secs(hours * 3600))
            .with_nodes((1..=5).map(|i| format!("node-{i}")));
        scenario.faults.push(FaultSpec::Recurring {
            kind: fenced_sim::RecurringKind::Pause,
            node: None,
            every: secs(600),
            duration: fenced_sim::DurationRange {
                low: secs(0),
                high: secs(60),
            },
        });
        let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).unwrap();
        let mut peak = 0;
        for minute in 1..=hours * 60 {
            sim.run_until(secs(minute * 60));
            peak = peak.max(sim.pending_events());
        }
        (peak, sim.report())
    };
    let (one_hour, _) = peak(1);
    let (one_day, report) = peak(24);
    assert!(one_hour > 0);
    assert!(
        one_day <= one_hour * 2 + 16,
        "24 h peak {one_day} vs 1 h peak {one_hour}"
    );
    assert_eq!(report.violations, vec![]);
}

#[test]
fn a_store_slower_than_retry_interval_still_elects_a_leader() {
    // Proves audit item 3: with a one-way latency of 1.1 s (round trip 2.2 s > retry_interval 2 s)
    // a late answer still counts, so a node leads and a crashed leader is replaced — before, nobody
    // ever led and the run reported "Violations: none".
    let mut scenario = trio("slow-store", secs(180)).with_fault(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(60),
        restart_after: None,
    });
    scenario.network.latency = (ms(1_100), ms(1_100));
    let report = run_seed(&scenario, 1);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms.len(), 2, "{:?}", report.terms);
    assert_eq!(report.terms[0].owner, "node-a#1");
    // The first answer arrives one round trip after the session opened, in
    // five round trips (its connect, two, within the 5 s connect timeout).
    assert!((13_200..13_300).contains(&report.terms[0].start_ms));
    assert_eq!(report.failovers.len(), 1);
    assert!(report.writes.accepted > 100);
}

#[test]
fn a_run_nobody_led_is_leaderless_throughout() {
    // Proves audit item 3's second half: leaderless time counts from the first process start, so a
    // run in which nobody ever led reports all of it (it used to print 0.000 s).
    let mut scenario = trio("nobody-leads", secs(60));
    scenario.network.loss = 1.0;
    let report = run_seed(&scenario, 1);
    assert!(report.terms.is_empty());
    assert_eq!(report.leaderless_ms, 60_000);
    // And with a leader, the initial election counts too (the session's
    // open and a round trip: a few tens of milliseconds).
    let report = run_seed(&trio("leads", secs(60)), 1);
    assert!(
        (6..70).contains(&report.leaderless_ms),
        "{}",
        report.leaderless_ms
    );
}

#[test]
fn writes_still_on_their_way_at_the_end_are_reported() {
    // Proves audit item 4: a run cut short while the paused leader still holds its token-1 write
    // reports that write as unjudged and from an older term, instead of a silent "no violation".
    let mut scenario = trio("cut-short", secs(52)).with_fault(pause_a(secs(40)));
    scenario.fencing = false;
    let report = run_seed(&scenario, 1);
    assert!(report.violations.is_empty());
    let unjudged = &report.unjudged_writes;
    assert_eq!(unjudged.total, 1, "{unjudged:?}");
    assert_eq!(unjudged.older_term, 1);
    assert_eq!(unjudged.writes[0].owner, "node-a#1");
    assert_eq!(unjudged.writes[0].token, 1);
    assert_eq!(unjudged.writes[0].state, "in-progress (paused)");
    // Run to 60 s instead, and the same write is judged: split-brain.
    scenario.duration = secs(60);
    let report = run_seed(&scenario, 1);
    assert!(report.split_brain);
    assert_eq!(report.unjudged_writes.older_term, 0);
}

#[test]
fn a_graceful_stop_hands_over_within_one_retry_interval_not_one_ttl() {
    // Proves the `stop` fault drives the elector's `stop`: the leader ends its term (`stopped`),
    // releases, exits, and a follower takes over within about one retry_interval — where a crash
    // at the same instant waits out the TTL. The restart is a new incarnation that follows.
    let stop = trio("stop", secs(120)).with_fault(FaultSpec::Stop {
        node: "node-a".into(),
        at: secs(25),
        restart_after: Some(secs(20)),
    });
    let (report, trace) = run_traced(&stop, 5);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms[0].end_reason, "stopped");
    assert_eq!(report.coverage.leader_stopped, 1);
    assert_eq!(report.spurious_failovers, 0);
    assert!(
        report.failovers[0].gap_ms <= 3_100,
        "{:?}",
        report.failovers
    );
    assert_eq!(
        lines(&trace, "node-a#1", "process stopped gracefully").len(),
        1
    );
    assert_eq!(
        lines(
            &trace,
            "lease-store",
            "release of token 1 from node-a#1: released"
        )
        .len(),
        1
    );
    assert!((45.0..45.1).contains(&time_of(lines(&trace, "node-a#2", "process started")[0])));

    let crash = trio("crash", secs(120)).with_fault(FaultSpec::Crash {
        node: "node-a".into(),
        at: secs(25),
        restart_after: Some(secs(20)),
    });
    let crashed = run_seed(&crash, 5);
    assert!(
        crashed.failovers[0].gap_ms > 20_000,
        "{:?}",
        crashed.failovers
    );
}

#[test]
fn a_stop_waits_for_a_paused_process_and_a_stop_of_a_down_node_does_nothing() {
    // Proves a stop is an input like any other: a paused process handles it when it resumes (a
    // frozen process cannot run its SIGTERM handler), and a node with no live process ignores it.
    let scenario = trio("stop-paused", secs(120))
        .with_fault(FaultSpec::Pause {
            host: "node-a".into(),
            at: secs(20),
            duration: secs(10),
        })
        .with_fault(FaultSpec::Stop {
            node: "node-a".into(),
            at: secs(25),
            restart_after: None,
        })
        .with_fault(FaultSpec::Stop {
            node: "node-a".into(),
            at: secs(60),
            restart_after: None,
        });
    let (report, trace) = run_traced(&scenario, 5);
    assert_eq!(report.violations, vec![]);
    let stopped = lines(&trace, "node-a#1", "process stopped gracefully");
    assert_eq!(stopped.len(), 1);
    assert!((30.0..30.1).contains(&time_of(stopped[0])), "{stopped:?}");
    assert_eq!(
        lines(&trace, "node-a", "stop ignored: no live process").len(),
        1
    );
}

#[test]
fn failing_work_makes_the_leader_abdicate_and_a_follower_take_over() {
    // Proves the `abdicate` fault drives the elector's `abdicate`: the leader ends its term
    // (`abdicated`, not a spurious failover), releases, stays quiet, and a follower takes over
    // within about one retry_interval; work failing on a follower changes nothing.
    let scenario = trio("abdicate", secs(120))
        .with_fault(FaultSpec::Abdicate {
            node: "node-a".into(),
            at: secs(25),
        })
        .with_fault(FaultSpec::Abdicate {
            node: "node-b".into(),
            at: secs(10),
        });
    let (report, trace) = run_traced(&scenario, 5);
    assert_eq!(report.violations, vec![]);
    assert_eq!(report.terms[0].owner, "node-a#1");
    assert_eq!(report.terms[0].end_reason, "abdicated");
    assert_eq!(report.coverage.leader_abdicated, 1);
    assert_eq!(report.spurious_failovers, 0);
    assert!(
        report.failovers[0].gap_ms <= 3_100,
        "{:?}",
        report.failovers
    );
    assert_ne!(
        report.terms[1].owner, "node-a#1",
        "node-a stays quiet for rejoin_delay"
    );
    assert_eq!(
        lines(&trace, "node-b#1", "work failed while not leading").len(),
        1
    );
}
