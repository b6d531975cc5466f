//! Two real node processes against a real PostgreSQL: one leader; a leader
//! stopped (SIGSTOP) beyond its TTL loses the role, and its late write is
//! rejected by the fenced table.

mod support;

use std::path::Path;
use std::time::Duration;

use fenced::postgres::{PostgresOptions, PostgresStore};
use fenced::{ElectorTimings, NodeId, ResourceId, Role};
use fenced_lab::node::NodeConfig;
use fenced_lab::schema::RunSchema;
use fenced_lab::supervisor::{Launch, Signal, Supervisor};

fn config(url: &str, schema: &RunSchema, node: &str) -> NodeConfig {
    NodeConfig {
        node: NodeId::new(node).expect("id"),
        incarnation: 1,
        lease_url: url.to_string(),
        registry_url: url.to_string(),
        downstream_url: url.to_string(),
        namespace: schema.namespace().clone(),
        role: Role::new("reports").expect("role"),
        resource: ResourceId::new("reports").expect("resource"),
        timings: ElectorTimings {
            lease_ttl: Duration::from_millis(1000),
            renew_interval: Duration::from_millis(300),
            retry_interval: Duration::from_millis(100),
            ..ElectorTimings::default()
        },
        heartbeat_interval: Duration::from_millis(200),
        liveness_ttl: Duration::from_secs(1),
        write_interval: Duration::from_millis(100),
        // Three units always in flight: any pause catches one mid-work.
        work_duration: Duration::from_millis(300),
        query_timeout: Duration::from_millis(500),
        query_grace: Duration::from_millis(100),
        connect_timeout: Duration::from_millis(500),
        write_retries: 1,
        fencing: true,
        lock: None,
        redlock: None,
        etcd: None,
        zookeeper: None,
        history: None,
        run_name: None,
        #[cfg(feature = "planted-bugs")]
        planted: None,
    }
}

fn launch(config: &NodeConfig) -> Launch {
    let (args, env) = config.to_command();
    Launch {
        node: config.node.to_string(),
        incarnation: config.incarnation,
        args,
        env,
    }
}

fn log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test(flavor = "current_thread")]
async fn a_stopped_leader_loses_the_role_and_its_late_write_is_rejected() {
    let Some(url) = support::database_url("node_takeover") else {
        return;
    };
    let schema = RunSchema::create(&url).await.expect("the run's schema");
    let logs = tempfile::tempdir().expect("tempdir");
    let mut supervisor = Supervisor::new(&support::program(), logs.path());
    let a = supervisor
        .spawn(launch(&config(&url, &schema, "node-a")))
        .expect("spawn a");
    let b = supervisor
        .spawn(launch(&config(&url, &schema, "node-b")))
        .expect("spawn b");
    let out = |i: usize| supervisor.processes()[i].logs.0.clone();
    let (out_a, out_b) = (out(a), out(b));

    // Exactly one leader, writing.
    let elected = support::eventually(Duration::from_secs(10), || {
        log(&out_a).contains("outcome=accepted") || log(&out_b).contains("outcome=accepted")
    })
    .await;
    assert!(elected, "nobody wrote:\n{}\n{}", log(&out_a), log(&out_b));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let leading: Vec<bool> = [&out_a, &out_b]
        .iter()
        .map(|p| log(p).contains("leading token=1"))
        .collect();
    assert_eq!(
        leading.iter().filter(|l| **l).count(),
        1,
        "not exactly one leader"
    );
    assert!(!log(&out_a).contains("token=2") && !log(&out_b).contains("token=2"));
    let (leader, follower, out_leader, out_follower) = if leading[0] {
        (a, b, out_a, out_b)
    } else {
        (b, a, out_b, out_a)
    };

    // Freeze the leader for 2.5 TTLs: the follower takes over with token 2.
    supervisor.signal(leader, Signal::Stop).expect("SIGSTOP");
    let took_over = support::eventually(Duration::from_millis(2500), || {
        log(&out_follower).contains("token=2 outcome=accepted")
    })
    .await;
    assert!(took_over, "no takeover:\n{}", log(&out_follower));
    tokio::time::sleep(Duration::from_millis(300)).await;
    supervisor
        .signal(leader, Signal::Continue)
        .expect("SIGCONT");

    // On resume, the units it had in flight write with token 1: rejected.
    let rejected = support::eventually(Duration::from_secs(3), || {
        log(&out_leader).contains("token=1 outcome=rejected-stale highest=2")
    })
    .await;
    assert!(rejected, "no rejected late write:\n{}", log(&out_leader));
    assert!(!log(&out_leader).contains("token=1 outcome=accepted highest"));

    let options = PostgresOptions::default().with_namespace(schema.namespace().clone());
    let table = PostgresStore::new(&url, options)
        .expect("store")
        .fenced_table();
    let record = table
        .read(&ResourceId::new("reports").expect("resource"))
        .await
        .expect("read")
        .expect("written");
    assert_eq!(record.highest.get(), 2);
    let follower_owner = format!("{}#1", supervisor.processes()[follower].node);
    assert_eq!(record.writer.as_str(), follower_owner);

    supervisor.shutdown().await;
    schema.drop_schema().await.expect("dropped");
}
