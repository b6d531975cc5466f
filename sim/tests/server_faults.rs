//! Server faults: a `restart` (down for a while, back with its state or
//! empty) and a `clock-jump` (a host's clock steps), on the fenced
//! protocol's servers and on other designs' — what each does, that the
//! checker sees what it breaks, and that bad uses are refused.

mod common;

use common::{lines, run_seed, run_traced, secs, time_of, trio};
use fenced_sim::{ClockOffset, FaultSpec, ProtocolSpec};

fn restart(host: &str, durable: bool) -> FaultSpec {
    FaultSpec::Restart {
        host: host.into(),
        at: secs(20),
        duration: secs(2),
        durable: Some(durable),
    }
}

/// A lease store that comes back empty hands out token 1 again: the
/// `token-monotonic` invariant catches it (a negative control for the
/// durability the fenced protocol relies on); a durable one is harmless.
#[test]
fn a_lease_store_restarted_empty_reissues_tokens_and_is_caught() {
    let mut s = trio("store-restart", secs(90));
    s.faults.push(restart("lease-store", false));
    let report = run_seed(&s, 1);
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.invariant == "token-monotonic"),
        "{:#?}",
        report.violations
    );
    let mut durable = trio("store-restart-durable", secs(90));
    durable.faults.push(restart("lease-store", true));
    let report = run_seed(&durable, 1);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.leader_changes, 0);
}

/// A downstream that comes back empty forgets the highest token it
/// accepted: fencing then lets a stale write through — split-brain.
#[test]
fn a_downstream_restarted_empty_lets_a_stale_write_through() {
    let mut s = trio("downstream-restart", secs(120));
    // node-a leads and stalls in a unit past its lease (12.05 s to 52.05 s);
    // node-b takes over and writes; the downstream is down from 51.5 s and
    // back empty at 52 s, just before node-a's late write arrives.
    s.faults.push(common::pause_a(secs(40)));
    s.faults.push(FaultSpec::Restart {
        host: "downstream".into(),
        at: common::ms(51_500),
        duration: common::ms(500),
        durable: Some(false),
    });
    let report = run_seed(&s, 1);
    assert!(report.split_brain, "{:#?}", report.violations);
    let mut durable = trio("downstream-restart-durable", secs(120));
    durable.faults.push(common::pause_a(secs(40)));
    durable.faults.push(FaultSpec::Restart {
        host: "downstream".into(),
        at: common::ms(51_500),
        duration: common::ms(500),
        durable: Some(true),
    });
    let report = run_seed(&durable, 1);
    assert!(!report.split_brain);
    assert!(report.writes.rejected_stale >= 1);
}

/// A clock step on the fenced lease store moves its expiry decisions with
/// it; the checker reads the store's instants on the store's clock, so a
/// store that jumps back (and keeps a lease longer) breaks no invariant.
#[test]
fn a_clock_jump_on_the_lease_store_is_judged_on_its_own_clock() {
    for by in [ClockOffset(-5_000_000_000), ClockOffset(40_000_000_000)] {
        let mut s = trio("store-jump", secs(120));
        s.faults.push(FaultSpec::ClockJump {
            host: "lease-store".into(),
            at: secs(20),
            by,
        });
        let report = run_seed(&s, 1);
        assert!(
            report.violations.is_empty(),
            "{by}: {:#?}",
            report.violations
        );
        // A jump forward expires the leader's lease early at the store:
        // another node is granted the lease while the old leader still
        // believes — fencing keeps the downstream safe.
        assert!(!report.split_brain, "{by}");
    }
}

/// Kleppmann's Redlock counterexample runs as shipped: one instance's clock
/// jumps, two clients hold a majority.
#[test]
fn a_clock_jump_on_one_redis_instance_gives_two_majorities() {
    let report = common::run_library(
        &common::workspace_root().join("scenarios/redlock-clock-jump.toml"),
        None,
    )
    .report;
    assert!(report.split_brain);
    assert!(report.overlap_ms >= 500);
}

#[test]
fn bad_server_faults_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let head = "name = \"bad\"\nduration = \"1m\"\n[[node]]\nid = \"a\"\n";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "restart-a-node",
            "[[fault]]\nkind = \"restart\"\nnode = \"a\"\nat = \"1s\"\nduration = \"1s\"\ndurable = true\n",
            &["fault[0].node", "only servers restart", "crash"],
        ),
        (
            "durable-on-a-pause",
            "[[fault]]\nkind = \"pause\"\nnode = \"a\"\nat = \"1s\"\nduration = \"1s\"\ndurable = true\n",
            &["fault[0].durable", "does not take `durable`"],
        ),
        (
            "store-durable-not-a-bool",
            "[store]\ndurable = \"yes\"\n",
            &["store.durable"],
        ),
        (
            "jump-without-by",
            "[[fault]]\nkind = \"clock-jump\"\nnode = \"a\"\nat = \"1s\"\n",
            &["fault[0].by", "needs `by`"],
        ),
        (
            "jump-the-downstream",
            "[[fault]]\nkind = \"clock-jump\"\nnode = \"downstream\"\nat = \"1s\"\nby = \"5s\"\n",
            &["fault[0].node", "reads no clock"],
        ),
        (
            "jump-too-far",
            "[[fault]]\nkind = \"clock-jump\"\nnode = \"a\"\nat = \"1s\"\nby = \"3days\"\n",
            &["fault[0].by", "one day"],
        ),
        (
            "jump-with-a-duration",
            "[[fault]]\nkind = \"clock-jump\"\nnode = \"a\"\nat = \"1s\"\nby = \"5s\"\nduration = \"1s\"\n",
            &["fault[0].duration", "does not take"],
        ),
    ];
    common::assert_refused(dir.path(), head, cases);
}

/// Both new faults write back to themselves and replay identically.
#[test]
fn server_faults_round_trip_and_replay() {
    let mut s = trio("rt", secs(60));
    s.election.protocol = ProtocolSpec::by_name("etcd").expect("known");
    s.faults.push(restart("etcd", true));
    s.faults.push(FaultSpec::ClockJump {
        host: "node-b".into(),
        at: secs(30),
        by: ClockOffset(-2_000_000_000),
    });
    let text = fenced_sim::to_toml::to_toml(&s);
    let again = fenced_sim::file::parse(&text, std::path::Path::new("rt.toml")).expect("valid");
    assert_eq!(again, s);
    assert_eq!(run_seed(&s, 4).trace_hash, run_seed(&again, 4).trace_hash);
}

/// Exploration restarts a server whose durability the base declares: a
/// volatile lease store is found out (its tokens go backwards), a durable one
/// passes; an undeclared base draws no restart (its seeds are unchanged).
#[test]
fn explore_restarts_declared_stores() {
    use fenced_sim::explore::generate;
    let mut base = fenced_sim::explore::default_base();
    base.durability.store = Some(false);
    let mut found = None;
    for seed in 0..200 {
        let (s, mix) = generate(&base, seed);
        if !mix.restart {
            continue;
        }
        let report = run_seed(&s, seed);
        if report
            .violations
            .iter()
            .any(|v| v.invariant == "token-monotonic")
        {
            found = Some(seed);
            break;
        }
    }
    assert!(found.is_some(), "no volatile restart found in 200 seeds");
    base.durability.store = Some(true);
    let mut restarted = 0;
    for seed in 0..40 {
        let (s, mix) = generate(&base, seed);
        if mix.restart {
            restarted += 1;
            let report = run_seed(&s, seed);
            assert!(
                report.violations.is_empty(),
                "seed {seed}: {:#?}",
                report.violations
            );
        }
    }
    assert!(restarted > 0);
    let undeclared = fenced_sim::explore::default_base();
    assert!((0..200).all(|seed| !generate(&undeclared, seed).1.restart));
}

/// A connect to a server that is down is refused one round trip after it
/// went out — the machine's kernel resets the SYN, as `fenced-lab`'s proxy
/// resets a connection to a restarting server — so the call that opened it
/// fails at once instead of at the connect bound, and the nodes reconnect
/// on their own schedule once the store is back. The same store cut off by
/// an isolation instead refuses nothing: its link holds the SYN.
#[test]
fn a_connect_to_a_restarting_store_is_refused_at_once_and_one_to_an_isolated_store_waits() {
    let mut s = trio("store-restart-refused", secs(40));
    s.faults.push(FaultSpec::Restart {
        host: "lease-store".into(),
        at: secs(20),
        duration: secs(8),
        durable: Some(true),
    });
    let (report, trace) = run_traced(&s, 1);
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    let syns: Vec<f64> = trace
        .lines()
        .filter(|l| l.contains("connection refused: the server is down"))
        .map(time_of)
        .collect();
    assert!(
        syns.len() >= 4,
        "every node's connects while down: {syns:?}"
    );
    for process in ["node-a#1", "node-b#1", "node-c#1"] {
        let refusals = lines(&trace, process, "its connect was refused");
        assert!(
            !refusals.is_empty(),
            "{process} connects while the store is down"
        );
        for line in refusals {
            let at = time_of(line);
            // Heard within a round trip at the highest latency (5 ms each
            // way) of a SYN sent while the store was down.
            assert!(
                syns.iter()
                    .any(|&sent| sent <= at && at - sent <= 0.010 + 1e-9),
                "{line}: no SYN of the round trip before it in {syns:?}"
            );
            assert!((20.0..28.0 + 0.010).contains(&at), "{line}");
        }
    }
    // The leader's renewal fails on the refusal, not at the TTL, and it
    // keeps its lease: the store comes back durable, within the TTL.
    assert!(!lines(&trace, "node-a#1", "failed").is_empty());
    assert_eq!(report.leader_changes, 0);

    let mut isolated = trio("store-isolated", secs(40));
    isolated.faults.push(FaultSpec::Isolate {
        host: "lease-store".into(),
        at: secs(20),
        duration: secs(8),
    });
    let (_, trace) = run_traced(&isolated, 1);
    assert!(
        !trace.contains("connect was refused") && !trace.contains("connection refused"),
        "an isolation holds every segment: nothing is refused"
    );
    // node-a's lease session retires at its query bound (26 s) and its new
    // connect waits, held, until the isolation ends (then five round trips
    // at 1-5 ms each way open it).
    let reopened: Vec<f64> = lines(&trace, "node-a#1", "lease session open")
        .into_iter()
        .map(time_of)
        .filter(|&t| t > 20.0)
        .collect();
    assert!(
        reopened
            .first()
            .is_some_and(|&t| (28.0..28.05).contains(&t)),
        "{reopened:?}"
    );
}
