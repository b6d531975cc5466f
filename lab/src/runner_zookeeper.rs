//! The run's own ZooKeeper, for a scenario whose nodes follow Curator's
//! `LeaderLatch`: one server on loopback, a quorum of one
//! ([`crate::servers::zookeeper`]: ports of its own, its data directory
//! under the run's directory, its log beside the run's others) with the
//! run's scaled `tickTime` ([`crate::design_zookeeper`]), started before
//! anything else of the run and stopped after the nodes and the proxies —
//! its data directory removed — on every exit path: the end, an error
//! (dropping the server kills it and removes the directory), Ctrl-C, a
//! panic (the same drop), and the runner's own SIGKILL (the JVM dies with
//! the runner: `PR_SET_PDEATHSIG`).
//!
//! The model is one linearizable server (`fenced_zoo::zookeeper`, "Left
//! out"): a one-member quorum is exactly that, and it numbers its zxids as
//! the model does — a new epoch at each start and restart. Each node reaches it
//! through its lease-store proxy, so link faults stall the node's one TCP
//! connection to it — and with it the client's pings, the only thing that
//! keeps a session alive: the server expires the session on its own clock
//! and deletes its ephemeral node, as the model says. A pause of the
//! server is a SIGSTOP of the JVM ([`crate::plan::Action::ServerPause`]);
//! its session clock stops with it. A durable restart is a SIGKILL of the
//! JVM at its start and a start over its data directory at its end, in a
//! new zxid epoch ([`down`], [`up`]).
//!
//! Before the nodes start the runner makes the latch path (the run's
//! `/fenced-lab/<schema>/<role>`, persistent) through its own session,
//! closes that session, and reads the server's last zxid (`srvr`, the one
//! four-letter word ZooKeeper enables by default): the nodes number their
//! tokens from it (`lab/src/node_zookeeper.rs`, "The token").
//!
//! # The highest token
//!
//! The simulator's `max_token` is the server's truth: the highest `czxid`
//! the lowest node ever had. ZooKeeper keeps no history to replay (as
//! etcd's MVCC store does, `lab/src/runner_etcd.rs`), so the real figure
//! is the highest `czxid` a node led with — the terms' highest token, less
//! the one the terms add — which differs from the truth only when a node
//! was lowest and never learned it before the run ended.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use zookeeper_client::{Acls, Client, CreateMode};

use crate::design::Design;
use crate::plan::LabPlan;
use crate::servers::zookeeper::{self, ZooKeeperOptions, ZooKeeperServer};

use super::{infra, RunError};

/// The server's name in the run's directory (`zookeeper.log`).
const NAME: &str = "zookeeper";

/// The run's server and the zxid the nodes number their tokens from.
#[derive(Debug)]
pub(super) struct RunServer {
    pub server: ZooKeeperServer,
    pub zxid_base: u64,
}

/// The scaled settings of `plan`'s ZooKeeper nodes, if they follow it.
fn settings(plan: &LabPlan) -> Option<&fenced_zoo::zookeeper::ZooKeeperSettings> {
    plan.nodes.iter().find_map(|node| match &node.design {
        Design::ZooKeeper(settings) => Some(settings),
        _ => None,
    })
}

/// Starts the run's ZooKeeper in `dir`, if `plan` needs one.
///
/// # Errors
/// ZooKeeper is not installed or did not start (nothing is left behind).
pub(super) async fn start(plan: &LabPlan, dir: &Path) -> Result<Option<ZooKeeperServer>, RunError> {
    let Some(settings) = settings(plan) else {
        return Ok(None);
    };
    let options = ZooKeeperOptions {
        tick: settings.tick_time,
        ..ZooKeeperOptions::default()
    };
    let server = ZooKeeperServer::start(dir, NAME, &options)
        .await
        .map_err(|e| infra(format!("cannot start ZooKeeper: {e}")))?;
    Ok(Some(server))
}

/// Makes `latch` (and its parents) and reads the zxid after the session
/// that made them closed.
///
/// # Errors
/// The server did not answer within a few seconds.
pub(super) async fn prepare(server: ZooKeeperServer, latch: &str) -> Result<RunServer, RunError> {
    let address = server.connect_string();
    let preparing = async {
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&address)
            .await
            .map_err(|e| e.to_string())?;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        client
            .mkdir(latch, &persistent)
            .await
            .map_err(|e| e.to_string())?;
        let stat = client
            .check_stat(latch)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the latch path is missing")?;
        drop(client);
        // The closeSession's txn is the next after the latch path's.
        let closed = u64::try_from(stat.czxid).unwrap_or(0) + 1;
        loop {
            let zxid = zookeeper::srvr_zxid(&address).await?;
            if zxid >= closed {
                return Ok::<u64, String>(zxid);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), preparing).await {
        Ok(Ok(zxid_base)) => Ok(RunServer { server, zxid_base }),
        Ok(Err(e)) => Err(infra(format!("cannot prepare ZooKeeper's latch path: {e}"))),
        Err(_) => Err(infra(
            "ZooKeeper's latch path was not made within 10 s".to_string(),
        )),
    }
}

/// Where the server serves clients.
pub(super) fn address(run: &RunServer) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], run.server.port()))
}

/// What a durable restart of ZooKeeper does at its start: the JVM is
/// killed (its kernel closes every client's socket at once).
pub(super) async fn down(run: &mut RunServer) -> String {
    let pid = run.server.pid();
    run.server.kill().await;
    match pid {
        Some(pid) => format!("zookeeper: SIGKILL (pid {pid}), its data directory kept"),
        None => "zookeeper: no live process to kill".to_string(),
    }
}

/// What it does at its end: the JVM starts again over its data, a new
/// zxid epoch (a one-member quorum: `crate::servers::zookeeper`).
///
/// # Errors
/// The start failed.
pub(super) async fn up(run: &mut RunServer) -> Result<String, RunError> {
    run.server
        .restart()
        .await
        .map_err(|e| infra(format!("cannot restart ZooKeeper: {e}")))?;
    let pid = run.server.pid();
    Ok(format!(
        "zookeeper: started again over its data (pid {})",
        pid.map_or_else(|| "?".to_string(), |p| p.to_string())
    ))
}

/// The server is frozen (SIGSTOP) or thawed (SIGCONT).
///
/// # Errors
/// The signal failed.
pub(super) fn pause(run: &mut RunServer, on: bool) -> Result<String, RunError> {
    let pid = run.server.pid();
    let signal = if on {
        run.server.pause()
    } else {
        run.server.resume()
    };
    signal.map_err(|e| infra(format!("cannot signal ZooKeeper: {e}")))?;
    let name = if on { "SIGSTOP" } else { "SIGCONT" };
    Ok(format!(
        "zookeeper: {name} (pid {})",
        pid.map_or_else(|| "?".to_string(), |p| p.to_string())
    ))
}

/// The real run's `max_token` for ZooKeeper (see the module docs).
pub(super) fn record_max_token(report: &mut fenced_sim::Report) {
    let highest = report.terms.iter().map(|term| term.token).max();
    report.max_token = highest.map_or(0, |token| token.saturating_sub(1));
}
