//! Two clocks per host: a `clock-jump` steps a host's wall clock, and only a
//! host that times its decisions by its wall clock sees it. client-go, etcd
//! (client and server), ZooKeeper's server, the DynamoDB lock client, the
//! connection lock and the fenced elector time by their monotonic clocks, so
//! a step of theirs changes nothing a user can see; Redis instances and a
//! wall-clock fenced lease store (the PostgreSQL backend's `now()`) expire by
//! their wall clocks, so a step of theirs still does.

mod common;

use common::{run_seed, run_traced, secs, seen, trio, zoo};
use fenced_sim::{ClockOffset, FaultSpec, Scenario, StoreClock};

fn jump(host: &str, by_secs: i64) -> FaultSpec {
    FaultSpec::ClockJump {
        host: host.into(),
        at: secs(20),
        by: ClockOffset(by_secs * 1_000_000_000),
    }
}

/// `scenario` with every step of `jumps`, against the same without any.
fn unchanged_by(scenario: &Scenario, jumps: &[FaultSpec]) -> Result<(), String> {
    let plain = run_seed(scenario, 1);
    let mut stepped = scenario.clone();
    stepped.faults.extend(jumps.iter().cloned());
    let report = run_seed(&stepped, 1);
    if seen(&plain) == seen(&report) {
        Ok(())
    } else {
        Err(format!(
            "{:?}: plain {} / stepped {}",
            jumps,
            serde_json::to_string(&seen(&plain)).unwrap_or_default(),
            serde_json::to_string(&seen(&report)).unwrap_or_default()
        ))
    }
}

/// The monotonic designs: forward and backward steps of every server, and
/// of the leader's and a follower's machine, change nothing.
#[test]
fn a_wall_step_changes_nothing_for_designs_that_time_by_a_monotonic_clock() {
    for design in common::MONOTONIC_DESIGNS {
        let s = zoo(design);
        let servers = s.election.protocol.server_names();
        for by in [90, -30] {
            let on_servers: Vec<FaultSpec> = servers.iter().map(|h| jump(h, by)).collect();
            // Curator's one wall-clock decision matters only while
            // SUSPENDED (see the next test): nothing here.
            let on_nodes = [jump("node-a", by), jump("node-b", by)];
            unchanged_by(&s, &on_nodes).unwrap_or_else(|e| panic!("{design} nodes: {e}"));
            unchanged_by(&s, &on_servers).unwrap_or_else(|e| panic!("{design} servers: {e}"));
        }
    }
}

/// The fenced protocol: a node's electors time by the monotonic clock
/// (`tokio::time::Instant` in the driver), so a step of a node changes
/// nothing — the trace says the step happened and that the node ignores it.
#[test]
fn a_wall_step_of_a_fenced_node_changes_nothing() {
    let s = trio("fenced-node-step", secs(120));
    for by in [90, -30] {
        unchanged_by(&s, &[jump("node-a", by), jump("node-c", by)])
            .unwrap_or_else(|e| panic!("fenced nodes: {e}"));
    }
    let mut stepped = s.clone();
    stepped.faults.push(jump("node-a", 90));
    let (_, trace) = run_traced(&stepped, 1);
    assert!(
        trace.contains("clock jumps by +1m 30s (its wall clock; it times by its monotonic clock)"),
        "{trace}"
    );
}

/// A lease store that expires by its wall clock (the default, the
/// PostgreSQL backend) ends the leader's lease early when stepped forward —
/// a failover; one that expires by a monotonic clock does not notice.
#[test]
fn the_store_step_matters_only_for_a_wall_clock_store() {
    let mut wall = trio("store-step", secs(120));
    assert_eq!(wall.store_clock, StoreClock::Wall, "the default");
    let plain = run_seed(&wall, 1);
    wall.faults.push(jump("lease-store", 40));
    let stepped = run_seed(&wall, 1);
    // The step expires the leader's lease at the store: its next renewal is
    // a new term (or another node's).
    assert!(
        stepped.terms.len() > plain.terms.len(),
        "a forward step of a wall-clock store expires the lease: {:?} vs {:?}",
        stepped.terms,
        plain.terms
    );
    assert!(!stepped.split_brain, "fencing keeps the downstream safe");

    let mut monotonic = trio("store-step-monotonic", secs(120));
    monotonic.store_clock = StoreClock::Monotonic;
    unchanged_by(
        &monotonic,
        &[jump("lease-store", 40), jump("lease-store", -20)],
    )
    .unwrap_or_else(|e| panic!("monotonic store: {e}"));
}

/// Curator's simulated expiration waits on a monotonic poll for what the
/// wall clock says is left (`ConnectionStateManager.processEvents`): a step
/// of a SUSPENDED client's wall clock forward changes nothing, a step back
/// delays its `LOST` — and so the end of its term under the session error
/// policy — by the step. (Redis's step, Kleppmann's counterexample, is
/// `server_faults.rs`'s `a_clock_jump_on_one_redis_instance_gives_two_majorities`.)
#[test]
fn curators_simulated_expiry_sees_only_a_backward_step_while_suspended() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text = "name = \"zk\"\nduration = \"3m\"\nseed = 7\n[election]\nprotocol = \"zookeeper\"\n\
                [election.zookeeper]\nerror_policy = \"session\"\n\
                simulated_session_expiration_percent = 50\n\
                [downstream]\nfencing = false\n\
                [[node]]\nid = \"node-a\"\n[[node]]\nid = \"node-b\"\nstart_at = \"1s\"\n\
                [[fault]]\nkind = \"cut\"\nfrom = \"node-a\"\nto = \"zookeeper\"\nat = \"12.05s\"\nduration = \"2m\"\n";
    let path = common::write_file(dir.path(), "zk.toml", text);
    let s = fenced_sim::file::load(&path).expect("loads");
    let end_of_a = |steps: &[FaultSpec]| -> u64 {
        let mut stepped = s.clone();
        stepped.faults.extend(steps.iter().cloned());
        let report = run_seed(&stepped, 7);
        report
            .terms
            .iter()
            .find(|t| t.node == "node-a")
            .map(|t| t.end_ms)
            .expect("node-a leads first")
    };
    let at_55 = |by_secs: i64| FaultSpec::ClockJump {
        host: "node-a".into(),
        at: secs(55),
        by: ClockOffset(by_secs * 1_000_000_000),
    };
    let plain = end_of_a(&[]);
    // SUSPENDED at the read timeout (about 40 s), LOST 30 s later.
    assert!((68_000..72_000).contains(&plain), "{plain}");
    assert_eq!(
        end_of_a(&[at_55(30)]),
        plain,
        "a forward step changes nothing"
    );
    let delayed = end_of_a(&[at_55(-5)]);
    assert!(
        (delayed as i64 - plain as i64 - 5_000).abs() <= 2,
        "a backward step of 5 s delays LOST by 5 s: {plain} → {delayed}"
    );
    // A step before SUSPENDED changes nothing either way.
    let early = |by_secs: i64| FaultSpec::ClockJump {
        host: "node-a".into(),
        at: secs(20),
        by: ClockOffset(by_secs * 1_000_000_000),
    };
    assert_eq!(end_of_a(&[early(-20)]), plain);
    assert_eq!(end_of_a(&[early(20)]), plain);
}

/// `[store] clock` reads, validates and writes back.
#[test]
fn the_store_clock_key_round_trips() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let text =
        "name = \"c\"\nduration = \"1m\"\n[store]\nclock = \"monotonic\"\n[[node]]\nid = \"a\"\n";
    let path = common::write_file(dir.path(), "c.toml", text);
    let scenario = fenced_sim::file::load(&path).expect("loads");
    assert_eq!(scenario.store_clock, StoreClock::Monotonic);
    let back = fenced_sim::to_toml::to_toml(&scenario);
    assert!(back.contains("[store]\nclock = \"monotonic\""), "{back}");
    let bad = text.replace("monotonic", "sundial");
    let path = common::write_file(dir.path(), "bad.toml", &bad);
    let err = fenced_sim::file::load(&path)
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("sundial") && err.contains("monotonic"),
        "{err}"
    );
}
