//! Real Redis instances for Redlock (`fenced_lab::servers::redis`), driven
//! through the `redis` crate the nodes will use: the commands Redlock needs,
//! crashes and restarts with and without data, a pause, a stepped wall
//! clock that expires a key early, and nothing left behind — after a stop,
//! a failed start, and a SIGKILLed owner.

mod support;

use std::net::{Ipv4Addr, TcpListener};
use std::time::Duration;

use fenced_lab::servers::redis as lab_redis;
use fenced_lab::servers::ServerError;
use lab_redis::{Persistence, RedisOptions, RedisServer, Restart};

fn installed(test: &str) -> bool {
    support::zoo_server(test, lab_redis::program("redis"))
}

async fn connect(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(server.url()).expect("a URL");
    // Redlock's redis_timeout is 0.1 s; generous here, for a busy machine.
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("connects")
}

/// Redlock's lock: `SET key value NX PX ttl`; `true` when taken.
async fn lock(
    connection: &mut redis::aio::MultiplexedConnection,
    key: &str,
    value: &str,
    ttl_ms: u64,
) -> bool {
    let reply: Option<String> = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query_async(connection)
        .await
        .expect("SET NX PX");
    reply.as_deref() == Some("OK")
}

async fn get(connection: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("GET")
        .arg(key)
        .query_async(connection)
        .await
        .expect("GET")
}

/// redlock-rb's unlock script: delete the key only if it holds our value.
const UNLOCK: &str = r#"if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end"#;

#[tokio::test]
async fn an_instance_answers_redlocks_commands_and_leaves_nothing_when_stopped() {
    if !installed("an_instance_answers_redlocks_commands") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let mut server = RedisServer::start(base.path(), "redis-0", &RedisOptions::default())
        .await
        .expect("starts");
    let pid = server.pid().expect("runs");
    let data = server.data_dir().to_path_buf();
    assert!(data.is_dir());
    let mut connection = connect(&server).await;
    assert!(lock(&mut connection, "resource", "client-a", 10_000).await);
    assert!(!lock(&mut connection, "resource", "client-b", 10_000).await);
    let ttl: i64 = redis::cmd("PTTL")
        .arg("resource")
        .query_async(&mut connection)
        .await
        .expect("PTTL");
    assert!((1..=10_000).contains(&ttl), "{ttl}");
    // EVALSHA with the fallback to EVAL, as redlock-rb does.
    let unlock = redis::Script::new(UNLOCK);
    let not_ours: i64 = unlock
        .key("resource")
        .arg("client-b")
        .invoke_async(&mut connection)
        .await
        .expect("unlock script");
    assert_eq!(not_ours, 0);
    let ours: i64 = unlock
        .key("resource")
        .arg("client-a")
        .invoke_async(&mut connection)
        .await
        .expect("unlock script");
    assert_eq!(ours, 1);
    assert_eq!(get(&mut connection, "resource").await, None);
    drop(connection);
    server.stop().await;
    support::assert_nothing_left("redis after stop", &[pid], &data);
}

#[tokio::test]
async fn restarts_keep_acknowledged_keys_only_when_persisted_and_a_pause_freezes_answers() {
    if !installed("restarts_keep_acknowledged_keys") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    // Redlock's five instances; the first persists every write.
    let mut servers = lab_redis::start_many(base.path(), 5, |i| RedisOptions {
        persistence: if i == 0 {
            Persistence::AppendOnly
        } else {
            Persistence::None
        },
        ..RedisOptions::default()
    })
    .await
    .expect("five start");
    let mut ports: Vec<u16> = servers.iter().map(RedisServer::port).collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 5, "each instance has its own port");
    for server in &servers {
        let mut connection = connect(server).await;
        assert!(lock(&mut connection, "resource", "client-a", 60_000).await);
    }
    // A crash of the persisted one and of a memory-only one.
    let old_pid = servers[0].pid().expect("runs");
    servers[0].kill().await;
    servers[1].kill().await;
    assert!(servers[0].pid().is_none());
    assert!(!fenced_lab::supervisor::process_running(old_pid));
    servers[0]
        .restart(Restart::KeepData)
        .await
        .expect("restarts");
    servers[1]
        .restart(Restart::KeepData)
        .await
        .expect("restarts");
    let mut persisted = connect(&servers[0]).await;
    assert_eq!(
        get(&mut persisted, "resource").await.as_deref(),
        Some("client-a"),
        "the append-only file brings the acknowledged lock back"
    );
    let mut forgetful = connect(&servers[1]).await;
    assert_eq!(get(&mut forgetful, "resource").await, None);
    assert!(lock(&mut forgetful, "resource", "client-b", 60_000).await);
    // "Without its data", whatever its persistence.
    drop(persisted);
    servers[0]
        .restart(Restart::Empty)
        .await
        .expect("restarts empty");
    let mut emptied = connect(&servers[0]).await;
    assert_eq!(get(&mut emptied, "resource").await, None);
    // A frozen instance answers nothing until resumed.
    let mut frozen = connect(&servers[2]).await;
    servers[2].pause().expect("pauses");
    let late = tokio::time::timeout(Duration::from_millis(300), get(&mut frozen, "resource")).await;
    assert!(late.is_err(), "a paused instance answered");
    servers[2].resume().expect("resumes");
    assert_eq!(
        get(&mut frozen, "resource").await.as_deref(),
        Some("client-a")
    );
    let mut pids = Vec::new();
    let mut dirs = Vec::new();
    for server in &mut servers {
        pids.push(server.pid().expect("runs"));
        dirs.push(server.data_dir().to_path_buf());
    }
    drop((emptied, forgetful, frozen));
    for server in servers {
        server.stop().await;
    }
    for dir in dirs {
        support::assert_nothing_left("redis after stop", &pids, &dir);
    }
}

#[tokio::test]
async fn a_forward_step_of_one_instances_wall_clock_expires_its_key_early() {
    // Redis expires keys by its wall clock (mstime()): one instance's clock
    // stepped 20 s forward drops a 10 s lock at once; its neighbour keeps
    // it.
    if !installed("a_forward_step_of_one_instances_wall_clock") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let stepped = RedisOptions {
        stepped_clock: true,
        ..RedisOptions::default()
    };
    let servers = lab_redis::start_many(base.path(), 2, |i| {
        if i == 0 {
            stepped.clone()
        } else {
            RedisOptions::default()
        }
    })
    .await
    .expect("two start");
    let mut jumped = connect(&servers[0]).await;
    let mut steady = connect(&servers[1]).await;
    let before = server_time(&mut jumped).await;
    assert!((before - server_time(&mut steady).await).abs() < 5.0);
    assert!(lock(&mut jumped, "resource", "client-a", 10_000).await);
    assert!(lock(&mut steady, "resource", "client-a", 10_000).await);
    servers[0]
        .set_clock_offset(20_000_000_000)
        .expect("steps the clock");
    let after = server_time(&mut jumped).await;
    assert!(
        (after - server_time(&mut steady).await - 20.0).abs() < 5.0,
        "TIME on the stepped instance: {after}"
    );
    assert_eq!(
        get(&mut jumped, "resource").await,
        None,
        "the key outlived a 20 s step of a 10 s TTL"
    );
    assert!(lock(&mut jumped, "resource", "client-b", 10_000).await);
    assert_eq!(
        get(&mut steady, "resource").await.as_deref(),
        Some("client-a")
    );
    // An instance started without a stepped clock refuses a step.
    assert!(matches!(
        servers[1].set_clock_offset(1),
        Err(ServerError::Unsupported { .. })
    ));
    drop((jumped, steady));
    for server in servers {
        server.stop().await;
    }
}

/// The server's `TIME`, in seconds.
async fn server_time(connection: &mut redis::aio::MultiplexedConnection) -> f64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(connection)
        .await
        .expect("TIME");
    seconds as f64 + micros as f64 / 1e6
}

#[tokio::test]
async fn a_failed_start_names_the_server_and_leaves_nothing() {
    if !installed("a_failed_start_names_the_server") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    // A taken port.
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
    let port = taken.local_addr().expect("address").port();
    let error = RedisServer::start(
        base.path(),
        "redis-taken",
        &RedisOptions {
            port: Some(port),
            ..RedisOptions::default()
        },
    )
    .await
    .expect_err("the port is taken");
    let text = error.to_string();
    assert!(matches!(error, ServerError::Exited { .. }), "{text}");
    assert!(text.contains("redis-taken"), "{text}");
    assert!(text.contains("redis-server --port"), "{text}");
    assert!(error.is_port_clash(), "{text}");
    support::assert_nothing_left(
        "redis on a taken port",
        &[],
        &base.path().join("redis-taken.data"),
    );
    // A bad flag.
    let error = RedisServer::start(
        base.path(),
        "redis-bad",
        &RedisOptions {
            extra_args: vec!["--no-such-directive".into(), "x".into()],
            ..RedisOptions::default()
        },
    )
    .await
    .expect_err("a bad flag");
    let text = error.to_string();
    assert!(text.contains("redis-bad"), "{text}");
    assert!(text.contains("--no-such-directive"), "{text}");
    assert!(
        text.contains("Bad directive"),
        "the log's end is quoted: {text}"
    );
    support::assert_nothing_left(
        "redis with a bad flag",
        &[],
        &base.path().join("redis-bad.data"),
    );
}

#[tokio::test]
async fn instances_die_with_a_sigkilled_owner() {
    if !installed("instances_die_with_a_sigkilled_owner") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    support::servers_die_with_their_owner("redis", 2, base.path()).await;
}
