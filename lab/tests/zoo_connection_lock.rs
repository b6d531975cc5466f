//! The zoo's connection lock (`[election] protocol = "connection-lock"`)
//! run for real: each node a `fenced-lab node --connection-lock` process
//! holding a session-level `pg_try_advisory_lock` on the real PostgreSQL
//! (through its proxy, with the scenario's server-side keepalives in its
//! startup packet), writing to the plain table, its history judged by the
//! simulator's checker beside the simulator's prediction of the same scaled
//! scenario and seed.
//!
//! Each run is a real `fenced-lab run --json` against the PostgreSQL in
//! `FENCED_POSTGRES_URL` (a failure, not a skip, with
//! `FENCED_REQUIRE_POSTGRES=1`), at `--time-scale 0.1`.

mod support;

use serde_json::Value;

/// The figures both runs must agree on, and whether they do.
fn assert_same(comparison: &Value, keys: &[&str]) {
    let (real, simulated) = (&comparison["real"], &comparison["simulated"]);
    for key in keys {
        assert_eq!(real[key], simulated[key], "{key}: {comparison:#}");
    }
}

/// The owners of the real run's terms, in order.
fn owners(report: &Value) -> Vec<String> {
    report["terms"]
        .as_array()
        .expect("terms")
        .iter()
        .filter_map(|t| t["owner"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_paused_holder_keeps_its_lock_for_real_and_the_simulation_agrees() {
    // The shipped story: node-a takes the lock and is SIGSTOPped for 4 s
    // (40 s scaled) in the middle of a unit of work. Its connection stays
    // open (keepalive probes are answered by a kernel, never by the
    // stopped process), so PostgreSQL keeps its session and its advisory
    // lock: node-b and node-c try every 0.5 s and never get it — the role
    // is stuck for the whole pause, and node-a leads on after it. Real and
    // simulated agree on every figure that must agree and on every
    // expectation.
    let Some(url) = support::database_url("connection_lock_gc_pause_for_real") else {
        return;
    };
    let scenario = support::scenario("connection-lock-gc-pause");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["judged"], true);
    assert_eq!(report["violations_total"], 0);
    assert_eq!(report["split_brain"], false);
    assert_eq!(owners(&report), ["node-a#1"], "{:#}", report["terms"]);
    assert_eq!(report["leader_changes"], 0);
    // The lab's pause was applied (node-a was really stopped).
    let applied = report["applied"].as_array().expect("applied");
    assert!(
        applied.iter().any(|a| a["effect"]
            .as_str()
            .is_some_and(|d| d.starts_with("SIGSTOP"))),
        "{applied:#?}"
    );
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(
        comparison,
        &["violations", "split_brain", "term_count", "max_token"],
    );
    // A tokenless design: no token in either run's store.
    assert_eq!(comparison["real"]["max_token"], 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_killed_holders_lock_is_freed_at_once_for_real_and_the_simulation_agrees() {
    // SIGKILL of the holder at 1.5 s: its kernel closes the socket, the
    // proxy passes the FIN on, PostgreSQL ends the session and frees the
    // lock at once, and a follower takes it on its next try (0.5 s) — in
    // the real run and, since the model learned it from this run
    // (`LockClient::kernel_closed`), in the simulation: one failover well
    // under the 4 s keepalive verdict in both, no overlap, no violation,
    // every figure and every expectation agreeing. (Before, the model
    // waited for the verdict: 3.7 s against the real 0.2 s.)
    let Some(url) = support::database_url("connection_lock_crash_for_real") else {
        return;
    };
    let scenario = support::lab_scenario("lab-connection-lock-crash");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["violations_total"], 0);
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(
        comparison,
        &["violations", "split_brain", "term_count", "max_token"],
    );
    let gap = |run: &str| {
        comparison[run]["failover_gaps_ms"][0]
            .as_u64()
            .unwrap_or_else(|| panic!("a {run} failover: {comparison:#}"))
    };
    // The last write before the kill (up to one write interval, 100 ms,
    // earlier), at most one retry interval (500 ms), and scheduling: well
    // under the 4 s keepalive verdict, in both.
    for run in ["real", "simulated"] {
        assert!(gap(run) < 1_500, "{run} gap: {comparison:#}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_restarted_postgres_splits_brain_under_the_connection_lock_for_real_and_the_simulation_agrees(
) {
    // The shipped story, at 0.1: PostgreSQL restarts for 0.1 s at 1.05 s
    // (the proxies reset every connection, which ends every session and
    // frees the lock, and refuse new ones). A follower's next try finds
    // its socket reset, it reconnects half a second later and takes the
    // free lock; node-a, the holder, learns only at its next health query,
    // at 2 s, and writes until then: two writers, split-brain on the plain
    // table — for real, and in the simulation beside it, which before the
    // lock's connections were TCP (lost queries, waited out for 92 s)
    // showed node-a retaking its own lock with no overlap.
    let Some(url) = support::database_url("connection_lock_server_restart_for_real") else {
        return;
    };
    let scenario = support::scenario("connection-lock-server-restart");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert!(
        support::applied(&report, "reset"),
        "{:#}",
        report["applied"]
    );
    assert_eq!(report["split_brain"], true, "{report:#}");
    let owners = owners(&report);
    assert_eq!(owners.len(), 2, "{owners:?}");
    assert_eq!(owners[0], "node-a#1", "{owners:?}");
    assert_ne!(
        owners[1], "node-a#1",
        "a follower takes the freed lock: {owners:?}"
    );
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(comparison, &["split_brain", "term_count", "max_token"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_restarted_postgres_refuses_connects_until_it_is_back_for_real_and_the_simulation_agrees()
{
    // PostgreSQL down from 1.2 s to 2.4 s (0.1 of the scenario's 12 s to
    // 24 s): node-a learns at its health query at 2 s, node-b and node-c at
    // their tries; every connect meanwhile is refused at once and tried
    // again 0.5 s later, so node-a's retry (2.5 s) comes first after the
    // server is back and it leads again: two terms of node-a, no failover,
    // in both runs. The model that lost the queries sent to the down
    // server waited out query_timeout (92 s scaled): one term.
    let Some(url) = support::database_url("connection_lock_server_down_for_real") else {
        return;
    };
    let scenario = support::lab_scenario("lab-connection-lock-server-restart");
    let (code, report) = support::run_json(&url, &scenario, "0.1", &[], &[]).await;
    assert_eq!(code, 0, "{:#}", report["expect"]);
    assert_eq!(report["violations_total"], 0);
    assert_eq!(
        owners(&report),
        ["node-a#1", "node-a#1"],
        "{:#}",
        report["terms"]
    );
    let comparison = &report["comparison"];
    assert_eq!(comparison["agrees"], true, "{comparison:#}");
    assert_same(
        comparison,
        &["violations", "split_brain", "term_count", "max_token"],
    );
}

/// Whether some session other than `client`'s holds advisory lock `key`
/// (the test's own session takes it and gives it back when it is free).
async fn held_elsewhere(client: &fenced::postgres::tokio_postgres::Client, key: i64) -> bool {
    let row = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .await
        .expect("try the lock");
    let took: bool = row.get(0);
    if took {
        client
            .execute("SELECT pg_advisory_unlock($1)", &[&key])
            .await
            .expect("give it back");
    }
    !took
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_proxy_a_stopped_holders_kernel_keeps_the_lock_and_a_killed_ones_frees_it() {
    // The model's two claims about the kernel, against the real server with
    // no proxy in between: a node process holding the lock directly (server
    // keepalives 3 s idle + 1 × 1 s: a verdict 4 s after the last word, the
    // server socket's keepalive timer read from the kernel to prove they
    // hold) is SIGSTOPped for 6 s — its kernel answers the server's probes,
    // so the session and the lock outlive the verdict; then it is
    // SIGKILLed — its kernel closes the socket, and the lock is free within
    // a second, long before any keepalive verdict could free it.
    use fenced::{ElectorTimings, NodeId, ResourceId, Role};
    use fenced_lab::node::{connection_lock_key, NodeConfig};
    use fenced_lab::schema::RunSchema;
    use fenced_lab::supervisor::{Launch, Signal, Supervisor};
    use fenced_zoo::connection_lock::PgSettings;
    use std::time::Duration;

    let Some(url) = support::database_url("connection_lock_without_a_proxy") else {
        return;
    };
    let schema = RunSchema::create(&url).await.expect("the run's schema");
    let config = NodeConfig {
        node: NodeId::new("node-a").expect("id"),
        incarnation: 1,
        lease_url: url.clone(),
        registry_url: url.clone(),
        downstream_url: url.clone(),
        namespace: schema.namespace().clone(),
        role: Role::new("reports").expect("role"),
        resource: ResourceId::new("reports").expect("resource"),
        timings: ElectorTimings::default(),
        heartbeat_interval: Duration::from_secs(1),
        liveness_ttl: Duration::from_secs(3),
        write_interval: Duration::from_millis(200),
        work_duration: Duration::from_millis(20),
        query_timeout: Duration::from_secs(2),
        query_grace: Duration::from_millis(100),
        connect_timeout: Duration::from_secs(2),
        write_retries: 1,
        fencing: false,
        redlock: None,
        lock: Some(PgSettings {
            tcp_keepalives_idle: Duration::from_secs(3),
            tcp_keepalives_interval: Duration::from_secs(1),
            tcp_keepalives_count: 1,
            query_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(2),
            retry_interval: Duration::from_millis(100),
            // No health query during the test: only the kernel talks.
            check_interval: Duration::from_secs(60),
        }),
        etcd: None,
        zookeeper: None,
        history: None,
        run_name: None,
        #[cfg(feature = "planted-bugs")]
        planted: None,
    };
    let key = connection_lock_key(schema.name(), "reports");
    let logs = tempfile::tempdir().expect("tempdir");
    let mut supervisor = Supervisor::new(&support::program(), logs.path());
    let (args, env) = config.to_command();
    let node = supervisor
        .spawn(Launch {
            node: "node-a".to_string(),
            incarnation: 1,
            args,
            env,
        })
        .expect("spawn");
    let client = fenced_lab::schema::connect(&url).await.expect("connects");
    let mut held = false;
    for _ in 0..100 {
        if held_elsewhere(&client, key).await {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = supervisor.processes()[node].logs.0.clone();
    let log = || std::fs::read_to_string(&out).unwrap_or_default();
    assert!(held, "the node never took the lock:\n{}", log());

    // The node's session reached the server with its keepalive settings:
    // the server's socket of that session runs a keepalive timer of at
    // most 3 s (the system's default would be 2 h), read from the kernel.
    let (server_port, node_port) = holder_ports(&client, key).await;

    supervisor.signal(node, Signal::Stop).expect("SIGSTOP");
    let stopped_at = tokio::time::Instant::now();
    let mut timer = None;
    for _ in 0..100 {
        timer = support::keepalive_timer_secs(server_port, node_port);
        if timer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let timer = timer.expect("the holder's server socket runs a keepalive timer");
    assert!(timer <= 3.0, "keepalive timer {timer} s");
    while stopped_at.elapsed() < Duration::from_secs(6) {
        assert!(
            held_elsewhere(&client, key).await,
            "the stopped holder lost its lock after {:?}:\n{}",
            stopped_at.elapsed(),
            log()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    supervisor.signal(node, Signal::Kill).expect("SIGKILL");
    let killed_at = tokio::time::Instant::now();
    let mut freed = None;
    while killed_at.elapsed() < Duration::from_secs(3) {
        if !held_elsewhere(&client, key).await {
            freed = Some(killed_at.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let freed = freed.expect("the killed holder's lock was never freed");
    assert!(freed < Duration::from_secs(1), "freed after {freed:?}");
    supervisor.shutdown().await;
    schema.drop_schema().await.expect("dropped");
}

/// The server's port and the client port of the session that holds
/// advisory lock `key` (a bigint key is `classid` (high half), `objid`
/// (low half), `objsubid` 1 in `pg_locks`).
async fn holder_ports(client: &fenced::postgres::tokio_postgres::Client, key: i64) -> (u16, u16) {
    let (high, low) = ((key as u64 >> 32) as i64, (key as u64 & 0xffff_ffff) as i64);
    let row = client
        .query_one(
            "SELECT inet_server_port(), a.client_port FROM pg_locks l \
             JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
             AND l.classid::bigint = $1 AND l.objid::bigint = $2",
            &[&high, &low],
        )
        .await
        .expect("the holder's session");
    let port = |p: Option<i32>| u16::try_from(p.expect("a TCP session")).expect("a port");
    (port(row.get(0)), port(row.get(1)))
}
