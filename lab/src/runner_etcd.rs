//! The run's own etcd, for a scenario whose nodes follow etcd's election:
//! one member on loopback ([`crate::servers::etcd`]: ports of its own, its
//! data directory under the run's directory, its log beside the run's
//! others), started before anything else of the run and stopped after the
//! nodes and the proxies — its data directory removed — on every exit
//! path: the end, an error (dropping the cluster kills it and removes the
//! directory), Ctrl-C, a panic (the same drop), and the runner's own
//! SIGKILL (the member dies with the runner: `PR_SET_PDEATHSIG`).
//!
//! The model is one linearizable server (`fenced_zoo::etcd`, "Left out"):
//! a single member is exactly that. Each node reaches it through its
//! lease-store proxy, so link faults stall a node's gRPC connection — and
//! with it the lease's keep-alive stream, which is the application's own
//! message, not a kernel's probe: a stalled link lets the lease expire at
//! the server, as the model says.
//!
//! Server faults are real: the scenario's durable restart of `etcd` kills
//! the member (SIGKILL) at its start and starts it again over its data at
//! its end (the new leader's lessor `Promote`s every lease by the election
//! timeout plus its TTL, `server/lease/lessor.go`, as the model's restart
//! does); its pause is a SIGSTOP of the member and a SIGCONT
//! ([`crate::plan::Action::ServerPause`]).
//!
//! # The highest token, from the server's own history
//!
//! The simulator's figure `max_token` for a design with a server of its own
//! is the server's truth: the highest token it ever reported a holder with
//! (`sim/src/zoo/mod.rs`, `max_token`) — for etcd, the create revision of
//! the key that was lowest under the prefix, i.e. the leader's, at some
//! moment (the raw revision: the terms carry it plus one). No node sees
//! that (a follower learns it leads only when its watch says so), so the
//! runner reads it from etcd itself at the end of the run, before stopping
//! it: every event under the prefix since revision 1 (etcd keeps its whole
//! MVCC history: auto-compaction is off unless asked for), replayed in
//! revision order, the lowest live create revision after each
//! ([`highest_holder`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use etcd_client::{Client, EventType, GetOptions, WatchOptions};

use crate::design::Design;
use crate::plan::{Action, LabPlan, Server};
use crate::servers::etcd::{EtcdCluster, EtcdOptions};

use super::{infra, Lab, RunError};

/// The member's name in the run's directory (`etcd-0.log`).
const NAME: &str = "etcd";

impl Lab<'_> {
    /// A server's fault (`action`, of scenario fault `fault`): etcd's and
    /// ZooKeeper's made real on their process; the PostgreSQL servers'
    /// restart in their proxies (connections reset and refused).
    pub(super) async fn server_fault(
        &mut self,
        fault: usize,
        action: &Action,
    ) -> Result<String, RunError> {
        let (Action::ServerDown { server }
        | Action::ServerUp { server }
        | Action::ServerPause { server }
        | Action::ServerResume { server }) = *action
        else {
            unreachable!("not a server's fault: {action:?}");
        };
        let starts = matches!(
            action,
            Action::ServerDown { .. } | Action::ServerPause { .. }
        );
        if starts {
            // The histories name the lock server `lease-store`.
            self.history.server_fault(fault, &server.name());
        } else {
            self.history.ended(fault);
        }
        if let (Server::LeaseStore, Some(run)) = (server, self.zookeeper.as_mut()) {
            return match action {
                Action::ServerDown { .. } => Ok(super::zookeeper::down(run).await),
                Action::ServerUp { .. } => super::zookeeper::up(run).await,
                _ => super::zookeeper::pause(run, starts),
            };
        }
        let etcd = match (server, self.etcd.as_mut()) {
            (Server::LeaseStore, Some(etcd)) => etcd,
            _ => {
                return match action {
                    Action::ServerDown { .. } | Action::ServerUp { .. } => {
                        Ok(self.set_down(server, fault, starts))
                    }
                    _ => Ok(format!(
                        "{}: not the run's own: no process to signal",
                        server.name()
                    )),
                };
            }
        };
        match action {
            Action::ServerDown { .. } => Ok(down(etcd).await),
            Action::ServerUp { .. } => up(etcd).await,
            _ => pause(etcd, starts),
        }
    }

    /// At the end of the run, after the nodes and the proxies: etcd's
    /// holders read from its history (when the run completed), then etcd
    /// stopped and its data directory removed.
    pub(super) async fn stop_etcd(
        &mut self,
        completed: bool,
        schema: &str,
        keep_data: bool,
    ) -> Option<Result<u64, String>> {
        let mut etcd = self.etcd.take()?;
        if keep_data {
            etcd.keep_data();
        }
        let holder = if completed {
            let prefix =
                crate::design_etcd::election_prefix(schema, self.plan.settings.role.as_str());
            Some(highest_holder(&etcd, &prefix).await)
        } else {
            None
        };
        etcd.stop().await;
        holder
    }
}

/// The real run's `max_token` for etcd: the highest holder etcd's history
/// shows (see the module docs), when the run has an etcd.
///
/// # Errors
/// etcd's history could not be read.
pub(super) fn record_holder(
    report: &mut fenced_sim::Report,
    holder: Option<Result<u64, String>>,
) -> Result<(), RunError> {
    if let Some(holder) = holder {
        report.max_token = holder.map_err(|e| infra(format!("etcd's history: {e}")))?;
    }
    Ok(())
}

/// Whether `plan`'s nodes follow etcd's election.
pub(super) fn wanted(plan: &LabPlan) -> bool {
    plan.nodes
        .iter()
        .any(|node| matches!(node.design, Design::Etcd(_)))
}

/// Starts the run's etcd in `dir`, if `plan` needs one.
///
/// # Errors
/// etcd is not installed or did not start (nothing is left behind).
pub(super) async fn start(plan: &LabPlan, dir: &Path) -> Result<Option<EtcdCluster>, RunError> {
    if !wanted(plan) {
        return Ok(None);
    }
    let cluster = EtcdCluster::start(dir, NAME, &EtcdOptions::default())
        .await
        .map_err(|e| infra(format!("cannot start etcd: {e}")))?;
    Ok(Some(cluster))
}

/// Where the member serves clients.
pub(super) fn address(cluster: &EtcdCluster) -> Option<SocketAddr> {
    let member = cluster.members().first()?;
    Some(SocketAddr::from(([127, 0, 0, 1], member.client_port())))
}

/// What a durable restart of etcd does at its start: the member is killed.
pub(super) async fn down(cluster: &mut EtcdCluster) -> String {
    let pid = cluster.member_mut(0).and_then(|m| m.pid());
    cluster.kill(0).await;
    match pid {
        Some(pid) => format!("etcd: SIGKILL (pid {pid}), its data directory kept"),
        None => "etcd: no live process to kill".to_string(),
    }
}

/// What it does at its end: the member starts again over its data.
///
/// # Errors
/// The start failed.
pub(super) async fn up(cluster: &mut EtcdCluster) -> Result<String, RunError> {
    cluster
        .restart(0)
        .await
        .map_err(|e| infra(format!("cannot restart etcd: {e}")))?;
    let pid = cluster.member_mut(0).and_then(|m| m.pid());
    Ok(format!(
        "etcd: started again over its data (pid {})",
        pid.map_or_else(|| "?".to_string(), |p| p.to_string())
    ))
}

/// The member is frozen (SIGSTOP) or thawed (SIGCONT).
///
/// # Errors
/// The signal failed.
pub(super) fn pause(cluster: &mut EtcdCluster, on: bool) -> Result<String, RunError> {
    let pid = cluster.member_mut(0).and_then(|m| m.pid());
    let signal = if on {
        cluster.pause(0)
    } else {
        cluster.resume(0)
    };
    signal.map_err(|e| infra(format!("cannot signal etcd: {e}")))?;
    let name = if on { "SIGSTOP" } else { "SIGCONT" };
    Ok(format!(
        "etcd: {name} (pid {})",
        pid.map_or_else(|| "?".to_string(), |p| p.to_string())
    ))
}

/// The heal: a paused member thawed, a killed one started again.
///
/// # Errors
/// The start failed.
pub(super) async fn heal(cluster: &mut EtcdCluster) -> Result<String, RunError> {
    match cluster.member_mut(0).and_then(|m| m.pid()) {
        Some(_) => pause(cluster, false),
        None => up(cluster).await,
    }
}

/// The highest create revision that was ever the lowest under `prefix` (the
/// election's holder), replayed from etcd's history (see the module docs);
/// 0 when no key was ever written.
///
/// # Errors
/// etcd did not answer within a few seconds, or its answers are unreadable.
pub(super) async fn highest_holder(cluster: &EtcdCluster, prefix: &str) -> Result<u64, String> {
    let replay = async {
        let mut client = Client::connect(cluster.endpoints(), None)
            .await
            .map_err(|e| e.to_string())?;
        let prefix = format!("{prefix}/");
        let now = client
            .get(
                prefix.as_str(),
                Some(GetOptions::new().with_prefix().with_count_only()),
            )
            .await
            .map_err(|e| e.to_string())?
            .header()
            .map(|h| h.revision())
            .ok_or("no header")?;
        let options = WatchOptions::new().with_prefix().with_start_revision(1);
        let mut stream = client
            .watch(prefix.as_str(), Some(options))
            .await
            .map_err(|e| e.to_string())?;
        let mut live: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        // Every revision after the first is a write under the prefix: no
        // one else writes to the run's etcd (its readiness probe reads).
        let (mut highest, mut seen) = (0_i64, 1_i64);
        while seen < now {
            let Some(answer) = stream.message().await.map_err(|e| e.to_string())? else {
                return Err("the watch ended".to_string());
            };
            if answer.canceled() {
                return Err(format!(
                    "the watch was cancelled: {}",
                    answer.cancel_reason()
                ));
            }
            for event in answer.events() {
                let Some(kv) = event.kv() else { continue };
                match event.event_type() {
                    EventType::Put => {
                        live.entry(kv.key().to_vec())
                            .or_insert(kv.create_revision());
                    }
                    EventType::Delete => {
                        live.remove(kv.key());
                    }
                }
                seen = seen.max(kv.mod_revision());
                if let Some(lowest) = live.values().min() {
                    highest = highest.max(*lowest);
                }
            }
        }
        Ok(u64::try_from(highest).unwrap_or(0))
    };
    tokio::time::timeout(Duration::from_secs(5), replay)
        .await
        .map_err(|_| "etcd's history could not be read within 5 s".to_string())?
}
