//! Property fuzzing with proptest: random clusters, timings and fault
//! schedules, fenced, must never break an invariant — safety during the fault
//! phase, liveness after healing. proptest shrinks any failure to a minimal
//! schedule and persists it in `proptest-regressions/`; a failure found there
//! becomes a checked-in scenario under `scenarios/regressions/`.

use std::time::Duration;

use fenced_sim::{ClockOffset, FaultSpec, RunOptions, Scenario, Simulation};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const HOSTS_EXTRA: [&str; 2] = ["lease-store", "downstream"];

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

#[derive(Clone, Debug)]
struct Timing {
    lease_ttl_ms: u64,
    margin_permille: u64,
    renew_permille: u64,
    retry_ms: u64,
    latency_max_ms: u64,
}

fn timing() -> impl Strategy<Value = Timing> {
    (2_000u64..60_000, 50u64..300, 100u64..800).prop_flat_map(|(ttl, margin, renew)| {
        // A follower must hear answers: latency well below the retry interval.
        let retry = 100u64..(ttl / 3).max(101);
        (Just(ttl), Just(margin), Just(renew), retry).prop_flat_map(
            |(ttl, margin, renew, retry)| {
                (1u64..(retry / 4).max(2)).prop_map(move |latency| Timing {
                    lease_ttl_ms: ttl,
                    margin_permille: margin,
                    renew_permille: renew,
                    retry_ms: retry,
                    latency_max_ms: latency,
                })
            },
        )
    })
}

#[derive(Clone, Debug)]
enum Kind {
    Pause,
    Isolate,
    Cut { from_store: bool, downstream: bool },
    Partition,
    Crash { restart_ms: Option<u64> },
    Replace,
    Stop { restart_ms: Option<u64> },
    Abdicate,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Pause),
        Just(Kind::Isolate),
        (any::<bool>(), any::<bool>()).prop_map(|(from_store, downstream)| Kind::Cut {
            from_store,
            downstream
        }),
        Just(Kind::Partition),
        proptest::option::of(500u64..60_000).prop_map(|restart_ms| Kind::Crash { restart_ms }),
        Just(Kind::Replace),
        proptest::option::of(100u64..60_000).prop_map(|restart_ms| Kind::Stop { restart_ms }),
        Just(Kind::Abdicate),
    ]
}

#[derive(Clone, Debug)]
struct Fault {
    kind: Kind,
    node: usize,
    at_ms: u64,
    length_ms: u64,
}

#[derive(Clone, Debug)]
struct Case {
    nodes: usize,
    timing: Timing,
    drifts: Vec<(i64, i64)>,
    loss_percent: u64,
    duplicate_percent: u64,
    faults: Vec<Fault>,
}

const FAULT_PHASE_MS: u64 = 180_000;

fn case() -> impl Strategy<Value = Case> {
    (2usize..=7, timing()).prop_flat_map(|(nodes, timing)| {
        let fault = (kind(), 0..nodes, 0..FAULT_PHASE_MS, 1u64..90_000).prop_map(
            |(kind, node, at_ms, length_ms)| Fault {
                kind,
                node,
                at_ms,
                length_ms,
            },
        );
        (
            Just(nodes),
            Just(timing),
            // Clock offset (ms) and drift (permille) per node.
            proptest::collection::vec((-3_600_000i64..3_600_000, -150i64..150), nodes),
            0u64..25,
            0u64..25,
            proptest::collection::vec(fault, 0..8),
        )
            .prop_map(
                |(nodes, timing, drifts, loss_percent, duplicate_percent, faults)| Case {
                    nodes,
                    timing,
                    drifts,
                    loss_percent,
                    duplicate_percent,
                    faults,
                },
            )
    })
}

fn build(case: &Case) -> Scenario {
    let t = &case.timing;
    let ttl = ms(t.lease_ttl_ms);
    let margin = ttl * t.margin_permille as u32 / 1000;
    let validity = ttl - margin;
    let mut s = Scenario::new("fuzz", ms(FAULT_PHASE_MS))
        .with_nodes((1..=case.nodes).map(|i| format!("n{i}")));
    s.election.lease_ttl = ttl;
    s.election.safety_margin = Some(margin);
    s.election.renew_interval = (validity * t.renew_permille as u32 / 1000).max(ms(1));
    s.election.retry_interval = ms(t.retry_ms);
    s.network.latency = (ms(1), ms(t.latency_max_ms));
    // The client is configured for its network, as a user would: a slow
    // network needs longer connect and query bounds than the defaults (the
    // property is the protocol's, not a configuration's).
    s.client = fenced_sim::explore::client_for_latency(&s.client, s.network.latency.1);
    s.network.loss = case.loss_percent as f64 / 100.0;
    s.network.duplicate = case.duplicate_percent as f64 / 100.0;
    for (node, (offset, drift)) in s.nodes.iter_mut().zip(&case.drifts) {
        node.clock_offset = if *offset < 0 {
            ClockOffset::behind(ms(offset.unsigned_abs()))
        } else {
            ClockOffset::ahead(ms(*offset as u64))
        };
        node.clock_drift = *drift as f64 / 1000.0;
    }
    let mut partition_used = false;
    for f in &case.faults {
        let node = format!("n{}", f.node + 1);
        let (at, duration) = (ms(f.at_ms), ms(f.length_ms));
        let spec = match f.kind {
            Kind::Pause => FaultSpec::Pause {
                host: node,
                at,
                duration,
            },
            Kind::Isolate => FaultSpec::Isolate {
                host: node,
                at,
                duration,
            },
            Kind::Cut {
                from_store,
                downstream,
            } => {
                let other = HOSTS_EXTRA[usize::from(downstream)].to_string();
                let (from, to) = if from_store {
                    (other, node)
                } else {
                    (node, other)
                };
                FaultSpec::Cut {
                    from,
                    to,
                    at,
                    duration,
                }
            }
            Kind::Partition if !partition_used => {
                partition_used = true;
                FaultSpec::Partition {
                    groups: vec![vec![node], vec!["lease-store".to_string()]],
                    at,
                    duration,
                }
            }
            Kind::Partition => continue,
            Kind::Crash { restart_ms } => FaultSpec::Crash {
                node,
                at,
                restart_after: restart_ms.map(ms),
            },
            Kind::Replace => FaultSpec::Replace { node, at },
            Kind::Stop { restart_ms } => FaultSpec::Stop {
                node,
                at,
                restart_after: restart_ms.map(ms),
            },
            Kind::Abdicate => FaultSpec::Abdicate { node, at },
        };
        s.faults.push(spec);
    }
    s.heal_at = Some(ms(FAULT_PHASE_MS));
    s.duration = ms(FAULT_PHASE_MS) + fenced_sim::explore::liveness_bound(&s);
    s
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("FENCED_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(128),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn fenced_runs_never_violate_an_invariant(case in case()) {
        // Proves: whatever the cluster size, timings, clocks, network and faults, a fenced run breaks no safety invariant and converges after healing.
        let scenario = build(&case);
        // The strategy only builds valid scenarios; a rejected one is a bug
        // in `build`, not a case to skip.
        prop_assert_eq!(scenario.validate(), Ok(()));
        let mut sim = Simulation::from_scenario(&scenario, RunOptions::default()).unwrap();
        sim.run_to_end();
        let report = sim.report();
        prop_assert!(
            report.violations.is_empty(),
            "violations: {:#?}\nscenario:\n{}",
            report.violations,
            fenced_sim::to_toml::to_toml(&scenario)
        );
    }
}

#[cfg(feature = "planted-bugs")]
#[test]
fn the_fuzzer_finds_a_planted_bug_and_proptest_shrinks_it_to_a_small_schedule() {
    // Proves the property is not vacuous: with the elector ignoring its deadline, proptest finds a failing case and shrinks it to at most three faults (proptest removes one fault at a time; with eight fault kinds the fixed case ends at a local minimum of three).
    use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
    let options = RunOptions {
        planted_bug: Some(fenced::PlantedBug::ElectorIgnoresDeadline),
        ..RunOptions::default()
    };
    // A fixed RNG: which case is found first, and how far it shrinks, must
    // not vary from run to run (this is a test, not a campaign).
    let config = Config {
        cases: 256,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&case(), |case| {
        let scenario = build(&case);
        prop_assert_eq!(scenario.validate(), Ok(()));
        let mut sim = Simulation::from_scenario(&scenario, options.clone()).unwrap();
        sim.run_to_end();
        prop_assert!(sim.report().violations.is_empty());
        Ok(())
    });
    match result {
        Err(TestError::Fail(_, minimal)) => {
            assert!(minimal.faults.len() <= 3, "{minimal:#?}");
        }
        other => panic!("expected the planted bug to be found, got {other:?}"),
    }
}
