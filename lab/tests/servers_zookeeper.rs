//! A real ZooKeeper, a quorum of one (`fenced_lab::servers::zookeeper`), driven
//! through the `zookeeper-client` crate the nodes will use: what Curator's
//! `LeaderLatch` needs — negotiated session timeouts within the server's
//! bounds, ephemeral sequential nodes with their `czxid`, a watch on the
//! predecessor, session events (disconnected on a paused server, connected
//! again on resume, expired after the server is gone), a new zxid epoch
//! at each restart, as the model's server numbers them — and nothing left
//! behind after a stop, a failed start and a SIGKILLed owner.

mod support;

use std::net::{Ipv4Addr, TcpListener};
use std::time::Duration;

use fenced_lab::servers::zookeeper::{self, ZooKeeperOptions, ZooKeeperServer};
use fenced_lab::servers::ServerError;
use zookeeper_client::{Acls, Client, CreateMode, EventType, SessionState, StateWatcher};

fn installed(test: &str) -> bool {
    support::zoo_server(test, zookeeper::java("zookeeper"))
        && support::zoo_server(test, zookeeper::classpath("zookeeper"))
}

/// The server's last zxid, from `srvr`.
async fn srvr_zxid(server: &ZooKeeperServer) -> u64 {
    zookeeper::srvr_zxid(&server.connect_string())
        .await
        .expect("srvr answers with a zxid")
}

/// Fast ticks: session timeouts from 400 ms to 4 s.
fn fast() -> ZooKeeperOptions {
    ZooKeeperOptions {
        tick: Duration::from_millis(200),
        min_session_timeout: Some(Duration::from_millis(400)),
        max_session_timeout: Some(Duration::from_secs(4)),
        ..ZooKeeperOptions::default()
    }
}

async fn session(server: &ZooKeeperServer, timeout: Duration) -> Client {
    let address = server.connect_string();
    let connecting = Client::connector()
        .with_session_timeout(timeout)
        .connect(&address);
    tokio::time::timeout(Duration::from_secs(10), connecting)
        .await
        .expect("a session within 10 s")
        .expect("connects")
}

async fn wait_for(states: &mut StateWatcher, wanted: SessionState, within: Duration) {
    let waiting = async {
        while states.state() != wanted {
            states.changed().await;
        }
    };
    tokio::time::timeout(within, waiting)
        .await
        .unwrap_or_else(|_| panic!("no {wanted} within {within:?}"));
}

#[tokio::test]
async fn a_latch_of_ephemeral_sequential_nodes_with_watches_and_session_events() {
    if !installed("a_latch_of_ephemeral_sequential_nodes") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let mut server = ZooKeeperServer::start(base.path(), "zookeeper", &fast())
        .await
        .expect("starts");
    let first_pid = server.pid().expect("runs");
    let data = server.data_dir().to_path_buf();

    // The server clamps a requested session timeout into its bounds.
    let clamped = session(&server, Duration::from_secs(10)).await;
    assert_eq!(clamped.session_timeout(), Duration::from_secs(4));
    drop(clamped);
    let a = session(&server, Duration::from_secs(1)).await;
    let b = session(&server, Duration::from_secs(2)).await;
    assert_eq!(a.session_timeout(), Duration::from_secs(1));

    // LeaderLatch's nodes: ephemeral sequential children of the latch path.
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    a.create("/latch", b"", &persistent)
        .await
        .expect("the latch path");
    let (stat_a, sequence_a) = a
        .create("/latch/latch-", b"node-a", &ephemeral)
        .await
        .expect("a's node");
    let (stat_b, sequence_b) = b
        .create("/latch/latch-", b"node-b", &ephemeral)
        .await
        .expect("b's node");
    assert!(stat_a.czxid > 0 && stat_b.czxid > stat_a.czxid);
    assert_eq!(stat_a.ephemeral_owner, a.session_id().0);
    assert!(sequence_b.into_i64() > sequence_a.into_i64());
    let path_a = format!("/latch/latch-{sequence_a}");
    let mut children = b.list_children("/latch").await.expect("children");
    children.sort();
    assert_eq!(children.len(), 2);
    assert_eq!(format!("/latch/{}", children[0]), path_a);

    // b watches its predecessor; a's session closes; the node goes.
    let (stat, watcher) = b.check_and_watch_stat(&path_a).await.expect("exists");
    assert_eq!(stat.map(|s| s.czxid), Some(stat_a.czxid));
    drop(a);
    let event = tokio::time::timeout(Duration::from_secs(5), watcher.changed())
        .await
        .expect("a watch event within 5 s");
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert_eq!(event.path, path_a);

    // Session events: a frozen server is a lost connection (b's connection
    // timeout is 2/5 of its 2 s session); resumed, the session goes on.
    let mut states = b.state_watcher();
    assert_eq!(states.state(), SessionState::SyncConnected);
    server.pause().expect("pauses");
    wait_for(
        &mut states,
        SessionState::Disconnected,
        Duration::from_secs(5),
    )
    .await;
    server.resume().expect("resumes");
    wait_for(
        &mut states,
        SessionState::SyncConnected,
        Duration::from_secs(10),
    )
    .await;
    let before = srvr_zxid(&server).await;
    assert_eq!(before >> 32, 1, "the first epoch is 1: {before:#x}");
    // The server gone for good: the client expires the session itself
    // (7/5 of the session timeout after its last answer).
    server.kill().await;
    wait_for(&mut states, SessionState::Expired, Duration::from_secs(15)).await;
    drop(b);

    // A restart over the data keeps the persistent node, and begins a new
    // zxid epoch with its counter at zero, as the model's server does
    // (`fenced_zoo::zookeeper`, `restart`): a standalone server would have
    // kept epoch 0 and counted on. The readiness check took no zxid.
    server.restart().await.expect("restarts");
    let second_pid = server.pid().expect("runs");
    assert_ne!(second_pid, first_pid);
    assert_eq!(
        srvr_zxid(&server).await,
        2 << 32,
        "a fresh epoch, nothing taken"
    );
    let c = session(&server, Duration::from_secs(2)).await;
    assert!(c.check_stat("/latch").await.expect("exists").is_some());
    let made = c
        .create(
            "/after",
            &[],
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .expect("creates");
    // The session's createSession took counter 1, the create 2.
    assert_eq!(made.0.czxid, (2_i64 << 32) + 2, "{:#x}", made.0.czxid);
    drop(c);
    server.stop().await;
    support::assert_nothing_left("zookeeper after stop", &[first_pid, second_pid], &data);
}

#[tokio::test]
async fn a_failed_start_names_the_server_and_leaves_nothing() {
    if !installed("a_failed_start_names_the_server") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binds");
    let port = taken.local_addr().expect("address").port();
    let options = ZooKeeperOptions {
        port: Some(port),
        ready_within: Duration::from_secs(30),
        ..fast()
    };
    let error = ZooKeeperServer::start(base.path(), "zk-taken", &options)
        .await
        .expect_err("the port is taken");
    let text = error.to_string();
    assert!(text.contains("zk-taken"), "{text}");
    assert!(text.contains("QuorumPeerMain"), "{text}");
    assert!(error.is_port_clash(), "{text}");
    support::assert_nothing_left(
        "zookeeper on a taken port",
        &[],
        &base.path().join("zk-taken.data"),
    );

    let options = ZooKeeperOptions {
        extra_config: vec![("tickTime".into(), "soon".into())],
        ..fast()
    };
    let error = ZooKeeperServer::start(base.path(), "zk-bad", &options)
        .await
        .expect_err("a bad tickTime");
    let text = error.to_string();
    assert!(matches!(error, ServerError::Exited { .. }), "{text}");
    assert!(text.contains("zk-bad"), "{text}");
    assert!(text.contains("soon"), "the log's end is quoted: {text}");
    support::assert_nothing_left(
        "zookeeper with a bad config",
        &[],
        &base.path().join("zk-bad.data"),
    );
}

#[tokio::test]
async fn the_server_dies_with_a_sigkilled_owner() {
    if !installed("the_server_dies_with_a_sigkilled_owner") {
        return;
    }
    let base = tempfile::tempdir().expect("tempdir");
    support::servers_die_with_their_owner("zookeeper", 1, base.path()).await;
}
