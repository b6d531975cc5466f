//! The clock faults people see besides a step: Jepsen's **strobe** (the wall
//! clock flipping between two offsets, a train of steps) and an NTP **slew**
//! (both clocks run fast or slow until a correction is made). A strobe, being
//! steps, reaches only what times by a wall clock; a slew reaches every host,
//! since Linux slews `CLOCK_MONOTONIC` too.

mod common;

use std::time::Duration;

use common::{lines, run_seed, run_traced, secs, seen, time_of, trio, zoo};
use fenced_sim::{ClockOffset, FaultSpec, StoreClock};

fn strobe(host: &str, at: u64, by_secs: i64, period: Duration, duration: Duration) -> FaultSpec {
    FaultSpec::ClockStrobe {
        host: host.into(),
        at: secs(at),
        by: ClockOffset(by_secs * 1_000_000_000),
        period,
        duration,
    }
}

fn slew(host: &str, at: u64, by_secs: i64, rate: f64) -> FaultSpec {
    FaultSpec::ClockSlew {
        host: host.into(),
        at: secs(at),
        by: ClockOffset(by_secs * 1_000_000_000),
        rate,
    }
}

/// A strobe flips the wall clock `by` ahead and back every period, an even
/// number of times, so it ends where it began.
#[test]
fn a_strobe_is_an_even_train_of_steps_that_ends_where_it_began() {
    let mut s = trio("strobe", secs(60));
    s.faults.push(strobe(
        "lease-store",
        10,
        5,
        secs(1),
        Duration::from_millis(4_500),
    ));
    let (_, trace) = run_traced(&s, 1);
    let flips = lines(&trace, "lease-store", "clock jumps by");
    // 4.5 s at 1 s: 4 flips (rounded to even), at 10, 11, 12, 13 s.
    assert_eq!(flips.len(), 4, "{flips:#?}");
    for (i, line) in flips.iter().enumerate() {
        assert_eq!(time_of(line), 10.0 + i as f64, "{line}");
        let sign = if i % 2 == 0 { "+5s" } else { "-5s" };
        assert!(line.contains(&format!("clock jumps by {sign}")), "{line}");
    }
    // An odd count rounds up: 3 periods make 4 flips, the last one back.
    let mut odd = trio("strobe-odd", secs(60));
    odd.faults.push(strobe("node-a", 10, 2, secs(2), secs(6)));
    let (_, trace) = run_traced(&odd, 1);
    let flips = lines(&trace, "node-a", "clock jumps by");
    assert_eq!(flips.len(), 4, "{flips:#?}");
    assert!(flips[3].contains("-2s"), "{}", flips[3]);
}

/// The heal ends a strobe in progress: a clock standing `by` off steps back
/// at the heal, and no flip follows.
#[test]
fn the_heal_ends_a_strobe() {
    let mut s = trio("strobe-heal", secs(60));
    s.faults
        .push(strobe("lease-store", 10, 5, secs(2), secs(20)));
    s.heal_at = Some(Duration::from_millis(13_500));
    let (_, trace) = run_traced(&s, 1);
    let flips = lines(&trace, "lease-store", "clock jumps by");
    let times: Vec<f64> = flips.iter().map(|l| time_of(l)).collect();
    // Flips at 10 (+), 12 (-), then +5 s at... no: the third flip (14 s)
    // is after the heal; the clock stood at its base at the heal.
    assert_eq!(times, vec![10.0, 12.0], "{flips:#?}");

    s.heal_at = Some(Duration::from_millis(15_500));
    let (_, trace) = run_traced(&s, 1);
    let flips = lines(&trace, "lease-store", "clock jumps by");
    let times: Vec<f64> = flips.iter().map(|l| time_of(l)).collect();
    // 10 (+), 12 (-), 14 (+), then back at the heal (15.5 s).
    assert_eq!(times, vec![10.0, 12.0, 14.0, 15.5], "{flips:#?}");
    assert!(flips[3].contains("-5s"), "{}", flips[3]);
}

/// A strobe is steps: the designs that time by a monotonic clock see
/// nothing of it, on any host.
#[test]
fn a_strobe_changes_nothing_for_designs_that_time_by_a_monotonic_clock() {
    for design in common::MONOTONIC_DESIGNS {
        let s = zoo(design);
        let plain = run_seed(&s, 1);
        let mut strobed = s.clone();
        for host in s.election.protocol.server_names() {
            strobed
                .faults
                .push(strobe(&host, 20, 30, secs(3), secs(30)));
        }
        strobed
            .faults
            .push(strobe("node-a", 25, -20, secs(2), secs(40)));
        let report = run_seed(&strobed, 1);
        assert_eq!(seen(&plain), seen(&report), "{design}");
    }
    // The fenced protocol with a monotonic store, every host strobed.
    let mut s = trio("fenced-strobe", secs(120));
    s.store_clock = StoreClock::Monotonic;
    let plain = run_seed(&s, 1);
    for host in ["lease-store", "node-a", "node-b"] {
        s.faults.push(strobe(host, 20, 40, secs(1), secs(30)));
    }
    assert_eq!(seen(&plain), seen(&run_seed(&s, 1)));
}

/// A slew reaches a host that times by its monotonic clock (a step would
/// not): a monotonic lease store slewed forward expires leases early.
#[test]
fn a_slew_moves_the_monotonic_clock_a_step_does_not() {
    let text = common::shipped_text("store-clock-slew-fenced");
    assert!(
        text.contains("clock = \"monotonic\""),
        "the store is monotonic"
    );
    let path = common::workspace_root().join("scenarios/store-clock-slew-fenced.toml");
    let slewed = common::run_library(&path, None).report;
    assert!(slewed.expect.met, "{slewed:?}");
    assert!(slewed.overlap_ms >= 500 && slewed.writes.rejected_stale >= 1);
    // The same scenario with the correction made as a step instead: the
    // monotonic store ignores it, and no two nodes ever lead together.
    let mut scenario = fenced_sim::file::load(&path).expect("loads");
    let FaultSpec::ClockSlew { host, at, by, .. } = scenario.faults[0].clone() else {
        panic!("the first fault is the slew");
    };
    scenario.faults[0] = FaultSpec::ClockJump { host, at, by };
    let stepped = run_seed(&scenario, 23);
    assert_eq!(stepped.overlap_ms, 0, "{stepped:?}");
    assert_eq!(stepped.writes.rejected_stale, 0);
}

/// A slew of a fenced node moves its elector's timing (its monotonic clock
/// runs fast): it renews earlier in true time, and the trace says both
/// clocks slew.
#[test]
fn a_slew_of_a_node_moves_its_electors_timers() {
    let s = trio("node-slew", secs(120));
    let (_, plain) = run_traced(&s, 1);
    let mut slewed = s.clone();
    slewed.faults.push(slew("node-a", 5, 20, 0.25));
    let (report, trace) = run_traced(&slewed, 1);
    assert!(
        trace.contains("clocks slew by +20s over 1m 20s (both: wall and monotonic)"),
        "{trace}"
    );
    let renewals = |t: &str| -> Vec<f64> {
        lines(t, "lease-store", "request #")
            .iter()
            .filter(|l| l.contains("from node-a#1"))
            .map(|l| time_of(l))
            .collect()
    };
    let (before, after) = (renewals(&plain), renewals(&trace));
    assert_ne!(before, after, "the slew moves node-a's renewals");
    // 25 % fast from 5 s for 80 s: renewals every 10 s of its clock come
    // every 8 s of true time (at about 9, 17, 25, ... s).
    let gaps: Vec<f64> = after.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.len() >= 6 && gaps[1..6].iter().all(|g| (7.99..8.01).contains(g)),
        "{after:?}"
    );
    let plain_gaps: Vec<f64> = before.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        plain_gaps[1..6].iter().all(|g| (9.99..10.01).contains(g)),
        "{before:?}"
    );
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

/// A backward slew never runs a clock backward, and a new slew stops the
/// previous one where it stands: the run stays clean and deterministic.
#[test]
fn slews_back_and_overlapping_are_deterministic_and_clean() {
    let mut s = trio("slews", secs(120));
    s.faults.push(slew("node-a", 5, -10, 0.4));
    s.faults.push(slew("node-a", 20, 3, 0.1));
    s.faults.push(slew("lease-store", 30, -2, 0.05));
    let a = run_seed(&s, 3);
    let b = run_seed(&s, 3);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_ne!(a.trace_hash, run_seed(&s, 4).trace_hash);
    assert!(a.violations.is_empty(), "{:?}", a.violations);
}

/// Both kinds read, validate and write back; bad values are refused with
/// the key named.
#[test]
fn clock_fault_keys_round_trip_and_bad_values_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let head = "name = \"c\"\nduration = \"1m\"\n[[node]]\nid = \"a\"\n";
    let good = format!(
        "{head}[[fault]]\nkind = \"clock-slew\"\nnode = \"a\"\nat = \"1s\"\nby = \"-2s\"\n\
         [[fault]]\nkind = \"clock-slew\"\nnode = \"lease-store\"\nat = \"2s\"\nby = \"1s\"\nrate = 0.01\n\
         [[fault]]\nkind = \"clock-strobe\"\nnode = \"a\"\nat = \"3s\"\nby = \"5s\"\nperiod = \"100ms\"\nduration = \"2s\"\n"
    );
    let path = common::write_file(dir.path(), "good.toml", &good);
    let scenario = fenced_sim::file::load(&path).expect("loads");
    assert!(matches!(
        scenario.faults[0],
        FaultSpec::ClockSlew { rate, .. } if rate == 0.0005
    ));
    let back = fenced_sim::to_toml::to_toml(&scenario);
    let path = common::write_file(dir.path(), "back.toml", &back);
    assert_eq!(
        fenced_sim::file::load(&path).expect("reloads"),
        scenario,
        "{back}"
    );

    let slew_tail = "[[fault]]\nkind = \"clock-slew\"\nnode = \"a\"\nat = \"1s\"\n";
    let strobe_tail =
        "[[fault]]\nkind = \"clock-strobe\"\nnode = \"a\"\nat = \"1s\"\nby = \"1s\"\n";
    let cases: Vec<(&str, String, &[&str])> = vec![
        ("slew-no-by", slew_tail.to_string(), &["fault[0].by", "needs `by`"]),
        ("slew-zero-rate", format!("{slew_tail}by = \"1s\"\nrate = 0.0\n"), &["fault[0].rate", "not a slew rate"]),
        ("slew-fast", format!("{slew_tail}by = \"1s\"\nrate = 0.9\n"), &["fault[0].rate", "at most 0.5"]),
        ("slew-nan", format!("{slew_tail}by = \"1s\"\nrate = nan\n"), &["fault[0].rate"]),
        ("slew-ppm", format!("{slew_tail}by = \"1s\"\nrate = \"500ppm\"\n"), &["fault[0].rate", "expected a number", "0.0005 (500 ppm"]),
        ("slew-zero", format!("{slew_tail}by = \"0s\"\n"), &["fault[0].by", "must not be zero"]),
        ("slew-downstream", "[[fault]]\nkind = \"clock-slew\"\nnode = \"downstream\"\nat = \"1s\"\nby = \"1s\"\n".to_string(), &["fault[0].node", "reads no clock"]),
        ("slew-period", format!("{slew_tail}by = \"1s\"\nperiod = \"1s\"\n"), &["fault[0].period", "does not take `period`"]),
        ("strobe-no-period", format!("{strobe_tail}duration = \"2s\"\n"), &["fault[0].period", "needs `period`"]),
        ("strobe-no-duration", format!("{strobe_tail}period = \"1s\"\n"), &["fault[0].duration", "needs `duration`"]),
        ("strobe-zero-period", format!("{strobe_tail}period = \"0s\"\nduration = \"2s\"\n"), &["fault[0].period"]),
        ("strobe-short", format!("{strobe_tail}period = \"2s\"\nduration = \"1s\"\n"), &["fault[0].duration", "shorter than the period"]),
        ("strobe-many", format!("{strobe_tail}period = \"1ms\"\nduration = \"1h\"\n"), &["fault[0].period", "more than the limit of 100000"]),
        ("strobe-rate", format!("{strobe_tail}period = \"1s\"\nduration = \"2s\"\nrate = 0.1\n"), &["fault[0].rate", "does not take `rate`"]),
        ("jump-rate", "[[fault]]\nkind = \"clock-jump\"\nnode = \"a\"\nat = \"1s\"\nby = \"1s\"\nrate = 0.1\n".to_string(), &["fault[0].rate", "does not take `rate`"]),
    ];
    for (name, tail, says) in &cases {
        common::assert_refused(dir.path(), head, &[(name, tail, says)]);
    }
}

/// `explore` draws steps, strobes and slews, of nodes and of the lease
/// store, each kind in some seeds and not in most.
#[test]
fn explore_draws_every_clock_fault_of_nodes_and_servers() {
    use fenced_sim::explore::{default_base, generate};
    let base = default_base();
    let (mut kinds, mut on_store, mut on_nodes, mut without) = (Vec::new(), 0, 0, 0);
    for seed in 0..300 {
        let (scenario, mix) = generate(&base, seed);
        let clock: Vec<&FaultSpec> = scenario
            .faults
            .iter()
            .filter(|f| {
                matches!(
                    f,
                    FaultSpec::ClockJump { .. }
                        | FaultSpec::ClockSlew { .. }
                        | FaultSpec::ClockStrobe { .. }
                )
            })
            .collect();
        let named: Vec<&str> = mix
            .names()
            .into_iter()
            .filter(|n| n.starts_with("clock-"))
            .collect();
        assert_eq!(clock.is_empty(), named.is_empty(), "seed {seed}: {named:?}");
        if clock.is_empty() {
            without += 1;
        }
        for fault in clock {
            kinds.push(fault.kind_name());
            let host = match fault {
                FaultSpec::ClockJump { host, .. }
                | FaultSpec::ClockSlew { host, .. }
                | FaultSpec::ClockStrobe { host, .. } => host,
                _ => unreachable!(),
            };
            if host == "lease-store" {
                on_store += 1;
            } else {
                on_nodes += 1;
            }
        }
    }
    for kind in ["clock-jump", "clock-slew", "clock-strobe"] {
        assert!(kinds.contains(&kind), "{kind} never drawn");
    }
    assert!(on_store > 0 && on_nodes > 0, "{on_store} {on_nodes}");
    assert!(
        without > 180,
        "most seeds draw no clock fault: {without} of 300"
    );
}

/// Seeds the clock draws found first: each exposed a checker that judged
/// what the system could not do (a registry leave 1 ns past an expiry a
/// slewing clock skipped; a registry time that a backward step held,
/// known to the registry but not to the checker; a liveness bound that a
/// strobe's backward flip outlasted). Each must now be clean.
#[test]
fn the_seeds_clock_draws_found_are_clean() {
    let base = fenced_sim::explore::default_base();
    for seed in [1442, 1798, 4084] {
        let outcome =
            fenced_sim::explore::run_seed(&base, seed, &fenced_sim::RunOptions::default());
        assert!(outcome.ok, "seed {seed}: {outcome:?}");
    }
}

/// The simulator makes a strobe's steps event by event; the lab makes the
/// steps `FaultAction::wall_steps` lists, for real. Both must be the same
/// steps at the same instants — with the heal before, during (an odd and an
/// even number of flips made), at the very instant of a flip, and after.
#[test]
fn a_strobe_makes_the_steps_its_resolution_lists_whatever_the_heal() {
    // (heal_at ms, what the steps are): strobe of node-a by 3 s from 10 s,
    // every 2 s for 8 s (4 flips, at 10, 12, 14, 16 s).
    for heal_ms in [None, Some(11_000), Some(13_500), Some(14_000), Some(30_000)] {
        let mut s = trio("strobe-heal", secs(40));
        s.faults
            .push(strobe("node-a", 10, 3, secs(2), Duration::from_secs(8)));
        s.heal_at = heal_ms.map(Duration::from_millis);
        let valid = s.clone().validated().expect("valid");
        let plan = valid.fault_plan();
        let step = plan
            .steps()
            .iter()
            .find(|step| step.action.kind_name() == "clock-strobe")
            .expect("the strobe starts");
        let listed: Vec<(f64, i64)> = step
            .action
            .wall_steps(step.at, s.heal_at)
            .iter()
            .map(|w| (w.at.as_secs_f64(), w.by / 1_000_000_000))
            .collect();
        let (_, trace) = run_traced(&s, 1);
        let made: Vec<(f64, i64)> = lines(&trace, "node-a", "clock jumps by")
            .iter()
            .map(|line| {
                let by = line
                    .split("clock jumps by ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|by| by.trim_end_matches('s').parse::<i64>().ok())
                    .unwrap_or_else(|| panic!("a whole-second step: {line}"));
                (time_of(line), by)
            })
            .collect();
        assert!(made.len() >= 2, "heal at {heal_ms:?}: {made:?}");
        assert_eq!(made, listed, "heal at {heal_ms:?}");
        assert_eq!(
            made.iter().map(|(_, by)| by).sum::<i64>(),
            0,
            "heal at {heal_ms:?}: the clock ends where it began"
        );
    }
}

/// A lease that expired at the store stays expired when the store's clock
/// then steps back: the store's time never runs backwards (`LeaseStore`'s
/// contract), so its grant to another node is correct, and the checker —
/// which judged it on the stepped-back reading and reported
/// `lease-exclusive` (explore seed 1 037 446) — judges it on the store's
/// own time now.
#[test]
fn a_store_clock_stepped_back_after_an_expiry_does_not_revive_the_lease() {
    let path =
        common::workspace_root().join("sim/tests/regressions/store-clock-back-after-expiry.toml");
    let scenario = fenced_sim::file::load(&path).expect("the regression scenario loads");
    let (report, trace) = run_traced(&scenario, 1_037_446);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(
        !lines(&trace, "lease-store", "clock jumps by -38s").is_empty(),
        "the store's clock stepped back"
    );
    let grant = lines(&trace, "lease-store", "granted token 2");
    let grant = grant.first().expect("token 2 is granted after the step");
    assert!(time_of(grant) > 93.923, "{grant}");
}

/// A host paused while its clock steps acts on the new reading as soon as
/// it runs again: the lease store's registry, whose host was paused and
/// cut off from 4 s to 5 s while its wall clock stepped 4 s forward, finds
/// both nodes' liveness run out by the new reading and lets them go at the
/// resume, 5 s — not when the next message happens to wake it (a
/// millisecond later, which the membership invariant rightly called late:
/// the registry could act). The schedule `fenced-sim verify` found on
/// small-fenced with three faults.
#[test]
fn a_host_paused_while_its_clock_steps_re_arms_its_timers_when_it_resumes() {
    let path = common::workspace_root().join("sim/tests/verify/small-fenced.toml");
    let mut s = fenced_sim::file::load(&path).expect("the scenario loads");
    s.faults.extend([
        FaultSpec::Pause {
            host: "lease-store".into(),
            at: secs(4),
            duration: secs(1),
        },
        FaultSpec::Isolate {
            host: "lease-store".into(),
            at: secs(4),
            duration: secs(1),
        },
        FaultSpec::ClockJump {
            host: "lease-store".into(),
            at: secs(4),
            by: ClockOffset::ahead(secs(4)),
        },
    ]);
    let (report, trace) = run_traced(&s, 1);
    let left = lines(&trace, "lease-store", "left (liveness TTL ran out)");
    assert_eq!(left.len(), 2, "{left:#?}");
    for line in &left {
        assert_eq!(time_of(line), 5.0, "{line}");
    }
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
}
