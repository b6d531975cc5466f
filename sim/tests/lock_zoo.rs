//! The lock zoo in the simulator: every modelled protocol runs on the same
//! engine under the same faults and is judged by the same checker —
//! deterministically, with bad settings refused as bad input, and with the
//! checker catching what each design lets happen.

mod common;

use std::time::Duration;

use common::{assert_exit, fenced_sim, ms, pause_a, run_seed, run_traced, secs, stderr, trio};
use fenced_sim::explore::generate;
use fenced_sim::{Anchor, AnchorEvent, FaultSpec, ProtocolSpec, RunOptions, Scenario, Simulation};

/// The zoo's protocols (every one but the fenced protocol).
fn zoo() -> Vec<ProtocolSpec> {
    ProtocolSpec::NAMES
        .iter()
        .filter(|&&name| name != "fenced")
        .map(|name| ProtocolSpec::by_name(name).expect("a known name"))
        .collect()
}

/// Three nodes running `protocol`, unfenced unless it has a token.
fn trio_of(protocol: &ProtocolSpec, duration: Duration) -> Scenario {
    let mut s = trio(protocol.name(), duration);
    s.election.protocol = protocol.clone();
    s.fencing = protocol.has_token();
    s
}

#[test]
fn every_protocol_elects_a_leader_that_writes() {
    for protocol in zoo() {
        let report = run_seed(&trio_of(&protocol, secs(90)), 3);
        assert!(!report.terms.is_empty(), "{protocol}: nobody led");
        assert!(
            report.writes.accepted > 10,
            "{protocol}: {:?}",
            report.writes
        );
        assert!(
            report.violations.is_empty(),
            "{protocol}: {:?}",
            report.violations
        );
    }
}

#[test]
fn same_seed_same_trace_and_different_seeds_differ() {
    for protocol in zoo() {
        let mut s = trio_of(&protocol, secs(60));
        s.faults.push(pause_a(secs(20)));
        s.network.latency = (ms(1), ms(20));
        let (a, trace_a) = run_traced(&s, 5);
        let (b, trace_b) = run_traced(&s, 5);
        assert_eq!(a.trace_hash, b.trace_hash, "{protocol}");
        assert_eq!(trace_a, trace_b, "{protocol}");
        let c = run_seed(&s, 6);
        assert_ne!(
            a.trace_hash, c.trace_hash,
            "{protocol}: seeds 5 and 6 ran alike"
        );
    }
}

/// Negative control: the checker is not vacuous for the zoo. A GC pause
/// past each design's expiry, unfenced, must show as two believed leaders
/// and a split-brain write — for every protocol that fails over at all
/// (the connection-bound lock does not: its holder keeps the lock). The
/// pause is anchored on node-a's unit of work, so a write is in flight
/// whatever each design's first lock costs (Redlock's opens a connection
/// to each of five instances in turn: about 75 ms).
#[test]
fn a_long_pause_unfenced_is_caught_as_split_brain_wherever_the_lock_moves() {
    for protocol in zoo() {
        let mut s = trio_of(&protocol, secs(200));
        s.fencing = false;
        s.faults.push(
            pause_a(secs(100)).anchored(Anchor::on(AnchorEvent::WorkStarted).of_node("node-a")),
        );
        let report = run_seed(&s, 1);
        if protocol.name() == "connection-lock" {
            assert_eq!(
                report.leader_changes, 0,
                "the paused holder keeps its session"
            );
            assert!(report.violations.is_empty());
            continue;
        }
        assert!(report.leader_changes >= 1, "{protocol}: no failover");
        assert!(report.split_brain, "{protocol}: {report:#?}");
        assert!(report.overlap_ms > 0, "{protocol}");
    }
}

/// A connection-lock holder killed on a live machine: its kernel closes the
/// connection, PostgreSQL ends the session, and a follower takes the lock on
/// its next try (every 5 s) — not after the keepalive verdict (2 h 11 min by
/// default), which only a machine that vanishes waits for. `fenced-lab`
/// measured it against the real server (`lab/tests/zoo_connection_lock.rs`).
/// Every other design's server keeps its lease, session or key past a
/// closed connection: their crashes are untouched (their expiry decides).
#[test]
fn a_killed_connection_lock_holder_fails_over_on_the_next_try() {
    let protocol = ProtocolSpec::by_name("connection-lock").expect("known");
    let mut s = trio_of(&protocol, secs(120));
    s.faults.push(FaultSpec::Crash {
        node: "node-a".into(),
        at: ms(30_050),
        restart_after: None,
    });
    let report = run_seed(&s, 1);
    assert_eq!(report.leader_changes, 1, "{report:#?}");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let gap = report.failovers[0].gap_ms;
    assert!(gap < 6_000, "failed over after {gap} ms");
}

/// With a token, the same pause is harmless once the downstream fences by
/// it: the woken leader's writes are rejected.
#[test]
fn fencing_by_the_protocols_own_token_rejects_the_late_writes() {
    for protocol in zoo().into_iter().filter(ProtocolSpec::has_token) {
        let mut s = trio_of(&protocol, secs(200));
        s.faults.push(pause_a(secs(100)));
        let report = run_seed(&s, 1);
        assert!(
            report.violations.is_empty(),
            "{protocol}: {:?}",
            report.violations
        );
        assert!(
            report.writes.rejected_stale >= 1,
            "{protocol}: {:?}",
            report.writes
        );
    }
}

/// Every protocol runs the exploration's fault swarm (pauses, isolations,
/// cuts, partitions, crashes, replacements, stops, clock offsets and rates,
/// loss, duplication) to its end without a panic or a limit.
#[test]
fn every_protocol_survives_the_fault_swarm() {
    for protocol in zoo() {
        let base = trio_of(&protocol, secs(120));
        for seed in 0..25 {
            let (s, mix) = generate(&base, seed);
            s.validate()
                .unwrap_or_else(|e| panic!("{protocol} seed {seed}: {e}"));
            let mut sim = Simulation::from_scenario(&s, RunOptions::default()).expect("valid");
            sim.run_to_end();
            assert!(
                sim.halted().is_none(),
                "{protocol} seed {seed} {:?}",
                mix.names()
            );
            let report = sim.report();
            assert!(report.events > 0);
        }
    }
}

#[test]
fn a_scenario_with_a_protocol_writes_back_to_itself() {
    let text = "name = \"rt\"\nduration = \"1m\"\n\n[election]\nprotocol = \"client-go\"\n\n\
                [election.client-go]\nlease_duration = \"20s\"\nrelease_on_cancel = true\n\n\
                [downstream]\nfencing = false\n\n[[node]]\nid = \"a\"\n";
    let scenario =
        fenced_sim::file::parse(text, std::path::Path::new("rt.toml")).expect("a valid scenario");
    let ProtocolSpec::ClientGo(settings) = &scenario.election.protocol else {
        panic!("{:?}", scenario.election.protocol);
    };
    assert_eq!(settings.lease_duration, secs(20));
    assert!(settings.release_on_cancel);
    assert_eq!(
        settings.renew_deadline,
        secs(10),
        "the rest keep client-go's defaults"
    );
    let written = fenced_sim::to_toml::to_toml(&scenario);
    assert!(written.contains("[election.client-go]"), "{written}");
    let again = fenced_sim::file::parse(&written, std::path::Path::new("rt.toml"))
        .expect("writes back valid");
    assert_eq!(again, scenario);
}

/// ZooKeeper's table — every key, the error policy by name, the client's
/// constants among the durations — reads and writes back to itself.
#[test]
fn a_zookeeper_table_writes_back_to_itself() {
    let text = "name = \"zk\"\nduration = \"1m\"\n[election]\nprotocol = \"zookeeper\"\n\
                [election.zookeeper]\nsession_timeout = \"30s\"\nerror_policy = \"session\"\n\
                simulated_session_expiration_percent = 80\nclient_session_expiry = false\n\
                tick_time = \"2s\"\nreconnect_spin = \"500ms\"\nreconnect_sleep = \"250ms\"\n\
                max_send_ping_interval = \"5s\"\n\
                [downstream]\nfencing = true\n[[node]]\nid = \"a\"\n";
    let scenario = fenced_sim::file::parse(text, std::path::Path::new("zk.toml")).expect("valid");
    let ProtocolSpec::ZooKeeper(settings) = &scenario.election.protocol else {
        panic!("{:?}", scenario.election.protocol);
    };
    assert_eq!(
        settings.error_policy,
        fenced_zoo::zookeeper::ErrorPolicy::Session
    );
    assert_eq!(settings.simulated_session_expiration_percent, 80);
    assert!(!settings.client_session_expiry);
    assert_eq!(settings.reconnect_spin, ms(500));
    assert_eq!(settings.reconnect_sleep, ms(250));
    assert_eq!(settings.max_send_ping_interval, secs(5));
    let written = fenced_sim::to_toml::to_toml(&scenario);
    assert!(written.contains("error_policy = \"session\""), "{written}");
    let again = fenced_sim::file::parse(&written, std::path::Path::new("zk.toml"))
        .expect("writes back valid");
    assert_eq!(again, scenario);
}

/// client-go's REST timeout follows the renew deadline as
/// `resourcelock.NewFromKubeconfig` sets it, `max(1 s, renewDeadline / 2)`,
/// unless the table says `request_timeout` itself; and it writes back.
#[test]
fn client_go_derives_its_request_timeout_from_the_renew_deadline() {
    let timeout = |table: &str| {
        let text = format!(
            "name = \"t\"\nduration = \"1m\"\n[election]\nprotocol = \"client-go\"\n\
             [election.client-go]\nlease_duration = \"60s\"\n{table}\n[downstream]\nfencing = false\n\
             [[node]]\nid = \"a\"\n"
        );
        let scenario =
            fenced_sim::file::parse(&text, std::path::Path::new("t.toml")).expect("valid");
        let again = fenced_sim::file::parse(
            &fenced_sim::to_toml::to_toml(&scenario),
            std::path::Path::new("t.toml"),
        )
        .expect("writes back valid");
        assert_eq!(again, scenario, "{table}");
        let ProtocolSpec::ClientGo(settings) = &scenario.election.protocol else {
            panic!("{:?}", scenario.election.protocol);
        };
        settings.request_timeout
    };
    assert_eq!(timeout("renew_deadline = \"40s\""), secs(20));
    assert_eq!(
        timeout("renew_deadline = \"1500ms\"\nretry_period = \"1s\""),
        secs(1)
    );
    assert_eq!(
        timeout("renew_deadline = \"40s\"\nrequest_timeout = \"7s\""),
        secs(7)
    );
    assert_eq!(
        timeout(""),
        secs(5),
        "client-go's default (renew deadline 10 s)"
    );
}

/// Bad protocol settings are bad input: exit 2, the key named, never a panic.
#[test]
fn bad_protocol_settings_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let head = "name = \"bad\"\nduration = \"1m\"\n[[node]]\nid = \"a\"\n";
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "unknown-protocol",
            "[election]\nprotocol = \"chubby\"\n",
            &["election.protocol", "unknown protocol `chubby`", "client-go", "redlock"],
        ),
        (
            "unknown-key",
            "[election]\nprotocol = \"etcd\"\n[election.etcd]\nttl = \"10s\"\n[downstream]\nfencing = true\n",
            &["election.etcd.ttl", "unknown key `ttl`", "session_ttl_secs"],
        ),
        (
            "table-of-another-protocol",
            "[election]\nprotocol = \"etcd\"\n[election.redlock]\nttl = \"10s\"\n",
            &["election.redlock", "runs protocol `etcd`"],
        ),
        (
            "unknown-error-policy",
            "[election]\nprotocol = \"zookeeper\"\n[election.zookeeper]\nerror_policy = \"lenient\"\n",
            &["election.zookeeper.error_policy", "\"standard\" or \"session\""],
        ),
        (
            "wrong-type",
            "[election]\nprotocol = \"client-go\"\n[election.client-go]\nlease_duration = 15\n",
            &["election.client-go.lease_duration", "duration string"],
        ),
        (
            "library-refuses",
            "[election]\nprotocol = \"client-go\"\n[election.client-go]\nrenew_deadline = \"20s\"\n",
            &["election.client-go", "renew_deadline"],
        ),
        (
            "fencing-without-a-token",
            "[election]\nprotocol = \"redlock\"\n",
            &["downstream.fencing", "no token", "fencing = false"],
        ),
        (
            "abdicate-without-the-call",
            "[election]\nprotocol = \"etcd\"\n[[fault]]\nkind = \"abdicate\"\nnode = \"a\"\nat = \"5s\"\n",
            &["fault[0]", "abdicate"],
        ),
    ];
    common::assert_refused(dir.path(), head, cases);
}

/// A protocol's servers are hosts: faults may name them (or `lease-store`
/// for the first), and a pause of the server stalls the lock.
#[test]
fn faults_reach_the_protocols_servers_by_name() {
    let protocol = ProtocolSpec::by_name("redlock").expect("known");
    let mut s = trio_of(&protocol, secs(60));
    for host in ["redis-1", "redis-2", "redis-3"] {
        s.faults.push(FaultSpec::Pause {
            host: host.into(),
            at: secs(10),
            duration: secs(20),
        });
    }
    let report = run_seed(&s, 2);
    // A majority of instances stalled: no one can lock while it lasts.
    assert!(report.leaderless_ms >= 10_000, "{report:#?}");
    let mut named = trio_of(&protocol, secs(30));
    named.faults.push(FaultSpec::Isolate {
        host: "redis-9".into(),
        at: secs(1),
        duration: secs(1),
    });
    let err = named.validate().expect_err("no ninth instance");
    assert!(err.to_string().contains("redis-9"), "{err}");
}

/// A node's own settings of the design (kubernetes PR #114872's mixed
/// lease durations) are read, validated, written back, and used by that
/// node's client only.
#[test]
fn a_node_may_run_its_own_settings_of_the_design() {
    let text = "name = \"mixed\"\nduration = \"1m\"\n[election]\nprotocol = \"client-go\"\n\
                [election.client-go]\nlease_duration = \"60s\"\nrenew_deadline = \"40s\"\n\
                [downstream]\nfencing = false\n[[node]]\nid = \"a\"\n[[node]]\nid = \"b\"\n\
                [node.client-go]\nlease_duration = \"15s\"\nrenew_deadline = \"10s\"\n";
    let scenario = fenced_sim::file::parse(text, std::path::Path::new("m.toml")).expect("valid");
    let Some(ProtocolSpec::ClientGo(own)) = &scenario.nodes[1].protocol else {
        panic!("{:?}", scenario.nodes[1].protocol);
    };
    assert_eq!(
        (own.lease_duration, own.renew_deadline),
        (secs(15), secs(10))
    );
    assert!(scenario.nodes[0].protocol.is_none());
    let written = fenced_sim::to_toml::to_toml(&scenario);
    let again = fenced_sim::file::parse(&written, std::path::Path::new("m.toml")).expect("valid");
    assert_eq!(again, scenario, "{written}");
    // The library's own rule applies to a node's settings too.
    let bad = text.replace("renew_deadline = \"10s\"\n", "renew_deadline = \"20s\"\n");
    let err = fenced_sim::file::parse(&bad, std::path::Path::new("m.toml")).expect_err("refused");
    assert!(err.to_string().contains("node[1].client-go"), "{err}");
    // Another design's table on a node is refused.
    let other = text.replace("[node.client-go]", "[node.etcd]");
    let err = fenced_sim::file::parse(&other, std::path::Path::new("m.toml")).expect_err("refused");
    assert!(err.to_string().contains("node[1].etcd"), "{err}");
}

/// `explore --protocol` finds each unfenced design's known weakness — a
/// split-brain write — within 100 seeds, and prints replay and shrink
/// commands that carry the design; the connection-bound lock gets stuck
/// instead of splitting.
#[test]
fn explore_finds_each_unfenced_designs_split_brain() {
    for design in ["client-go", "etcd", "redlock", "zookeeper", "dynamodb"] {
        let out = fenced_sim([
            "explore",
            "--protocol",
            design,
            "--seeds",
            "100",
            "--jobs",
            "2",
        ]);
        assert_exit(&out, 1);
        let text = common::stdout(&out);
        assert!(text.contains("split-brain"), "{design}: {text}");
        assert!(
            text.contains(&format!("fenced-sim shrink --protocol {design} --seed")),
            "{design}: {text}"
        );
    }
    let out = fenced_sim(["explore", "--protocol", "connection-lock", "--seeds", "30"]);
    assert!(!common::stdout(&out).contains("split-brain"));
    let out = fenced_sim(["explore", "--protocol", "chubby", "--seeds", "3"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--protocol `chubby`"),
        "{}",
        stderr(&out)
    );
}
