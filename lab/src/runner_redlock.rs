//! The runner's Redis instances, for a Redlock run: started before the
//! proxies (each node reaches each instance through a proxy of its own, so
//! a cut acts on one link), and made to suffer the instance faults for
//! real — a pause is SIGSTOP/SIGCONT of the instance's `redis-server`, a
//! restart is SIGKILL then a start on the same port from its data (AOF,
//! `appendfsync always`: a durable restart) or from an empty directory (a
//! restart without persistence), a clock step moves its wall clock through
//! the wall-clock shim ([`crate::servers::wall_clock`]).
//!
//! The instances' logs are in the run's directory (`redis-N.log`, kept
//! with the run's logs); their data directories in a directory of the
//! run's own on tmpfs (`/dev/shm/fenced-lab-redis-<runner pid>-*/redis-N.data`,
//! removed when they stop). On tmpfs because a durable instance
//! (`appendfsync always`) answers a write only after its `fsync`, and on
//! this machine's disk an `fsync` under load sometimes takes longer than a
//! scaled `redis_timeout` (20 to 50 ms) — a latency the model has not got
//! and the time scale does not shrink. The scenarios' durability is a
//! restart of the process (SIGKILL), which the page cache survives: an
//! instance restarted from tmpfs reloads every acknowledged write, as from
//! a disk. The instances are stopped with the nodes and proxies on every
//! way out of the run; dropped (a panic), each is killed and its
//! directories removed ([`crate::servers::redis::RedisServer`]).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;

use super::{infra, Lab, RunError};
use crate::design::Design;
use crate::design_redlock::Instances;
use crate::node::RedlockNode;
use crate::plan::{Action, Link, Server};
use crate::servers::redis::{Persistence, RedisOptions, RedisServer, Restart};

/// The run's Redis instances and what the faults did to them.
#[derive(Debug, Default)]
pub(super) struct Fleet {
    servers: Vec<RedisServer>,
    /// The data directories' parent on tmpfs (removed when dropped, after
    /// the servers: declared after them).
    data: Option<tempfile::TempDir>,
    /// Per instance, its wall clock's offset from the machine's now.
    offsets: Vec<i64>,
    /// Per instance, the faults pausing it.
    paused: Vec<BTreeSet<usize>>,
    /// Per instance, whether a fault killed it (and has not restarted it).
    down: Vec<bool>,
}

impl Fleet {
    /// Starts `instances` under `dir`, `redis-1` … `redis-N`.
    ///
    /// # Errors
    /// An instance could not start (those started are stopped).
    pub(super) async fn start(instances: &Instances, dir: &Path) -> Result<Fleet, RunError> {
        let count = instances.append_only.len();
        let data = tempfile::Builder::new()
            .prefix(&format!("{}{}-", DATA_PREFIX, std::process::id()))
            .tempdir_in(DATA_ON)
            .map_err(|e| infra(format!("cannot create a data directory in {DATA_ON}: {e}")))?;
        let mut servers = Vec::with_capacity(count);
        for i in 0..count {
            let options = RedisOptions {
                persistence: if instances.append_only[i] {
                    Persistence::AppendOnly
                } else {
                    Persistence::None
                },
                stepped_clock: instances.stepped_clock[i],
                data_base: Some(data.path().to_path_buf()),
                ..RedisOptions::default()
            };
            let name = format!("redis-{}", i + 1);
            // On `?` the started ones drop: killed, directories removed.
            let server = RedisServer::start(dir, &name, &options)
                .await
                .map_err(|e| infra(format!("cannot start {name}: {e}")))?;
            servers.push(server);
        }
        Ok(Fleet {
            servers,
            data: Some(data),
            offsets: vec![0; count],
            paused: vec![BTreeSet::new(); count],
            down: vec![false; count],
        })
    }

    /// Where instance `index` listens.
    pub(super) fn address(&self, index: u16) -> Result<SocketAddr, RunError> {
        self.server(index)
            .map(|server| SocketAddr::from(([127, 0, 0, 1], server.port())))
    }

    fn server(&self, index: u16) -> Result<&RedisServer, RunError> {
        self.servers
            .get(usize::from(index))
            .ok_or_else(|| infra(format!("no Redis instance {index}")))
    }

    fn server_mut(&mut self, index: u16) -> Result<&mut RedisServer, RunError> {
        self.servers
            .get_mut(usize::from(index))
            .ok_or_else(|| infra(format!("no Redis instance {index}")))
    }

    /// Fault `fault` pauses instance `index` (SIGSTOP).
    pub(super) fn pause(&mut self, index: u16, fault: usize) -> Result<String, RunError> {
        if self.down.get(usize::from(index)).copied().unwrap_or(false) {
            // Killed by a restart not yet over: nothing runs to stop.
            return Ok(format!(
                "{} has no process to stop",
                Server::Redis(index).name()
            ));
        }
        let server = self.server_mut(index)?;
        let pid = server.pid();
        server.pause().map_err(infra)?;
        let name = server.name().to_string();
        self.paused[usize::from(index)].insert(fault);
        Ok(format!("SIGSTOP {name} (pid {})", describe_pid(pid)))
    }

    /// Fault `fault`'s pause of instance `index` ends (SIGCONT when no
    /// pause is left).
    pub(super) fn resume(&mut self, index: u16, fault: usize) -> Result<String, RunError> {
        let faults = &mut self.paused[usize::from(index)];
        faults.remove(&fault);
        if !faults.is_empty() {
            return Ok("still paused by another fault".to_string());
        }
        if self.down.get(usize::from(index)).copied().unwrap_or(false) {
            // Killed meanwhile (a restart's SIGKILL ends its pause too).
            return Ok(format!(
                "{} has no process to resume",
                Server::Redis(index).name()
            ));
        }
        let server = self.server_mut(index)?;
        server.resume().map_err(infra)?;
        Ok(format!("SIGCONT {}", server.name()))
    }

    /// Instance `index` crashes (SIGKILL); its directory stays.
    pub(super) async fn kill(&mut self, index: u16) -> Result<String, RunError> {
        let server = self.server_mut(index)?;
        let pid = server.pid();
        server.kill().await;
        let name = server.name().to_string();
        self.down[usize::from(index)] = true;
        self.paused[usize::from(index)].clear();
        Ok(format!("SIGKILL {name} (pid {})", describe_pid(pid)))
    }

    /// Instance `index` starts again on its port: from its data when
    /// `durable` (AOF fsynced on every write: every acknowledged key, with
    /// its absolute expiry), else from an emptied directory.
    pub(super) async fn restart(&mut self, index: u16, durable: bool) -> Result<String, RunError> {
        let from = if durable {
            Restart::KeepData
        } else {
            Restart::Empty
        };
        let server = self.server_mut(index)?;
        server.restart(from).await.map_err(infra)?;
        let pid = server.pid();
        let name = server.name().to_string();
        self.down[usize::from(index)] = false;
        let how = if durable {
            "from its append-only file"
        } else {
            "empty"
        };
        Ok(format!(
            "restarted {name} {how} (pid {})",
            describe_pid(pid)
        ))
    }

    /// Steps instance `index`'s wall clock by `by_nanos`.
    pub(super) fn step_clock(&mut self, index: u16, by_nanos: i64) -> Result<String, RunError> {
        let offset = &mut self.offsets[usize::from(index)];
        *offset = offset.saturating_add(by_nanos);
        let offset = *offset;
        let server = self.server(index)?;
        server.set_clock_offset(offset).map_err(infra)?;
        Ok(format!(
            "{}'s wall clock stepped {:+.3}s (now {:+.3}s from the machine's; keys expire by it)",
            server.name(),
            by_nanos as f64 / 1e9,
            offset as f64 / 1e9
        ))
    }

    /// The heal: every paused instance resumed, every killed one started
    /// again (from its data if it has persistence).
    pub(super) async fn heal(&mut self) -> Result<Vec<String>, RunError> {
        let mut said = Vec::new();
        for i in 0..self.servers.len() {
            let index = i as u16;
            if !self.paused[i].is_empty() {
                self.paused[i].clear();
                let server = self.server_mut(index)?;
                server.resume().map_err(infra)?;
                said.push(format!("SIGCONT {}", server.name()));
            }
            if self.down[i] {
                said.push(self.restart(index, true).await?);
            }
        }
        Ok(said)
    }

    /// Kills every instance and removes its directories.
    pub(super) async fn stop(&mut self) {
        for server in self.servers.drain(..) {
            server.stop().await;
        }
        self.data = None;
    }
}

impl Lab<'_> {
    /// What a Redlock node `node` is told: its settings, and each instance
    /// through its own proxy.
    pub(super) fn redlock_node(&self, node: usize) -> Option<RedlockNode> {
        let Design::Redlock(settings) = &self.plan.nodes[node].design else {
            return None;
        };
        let instances = (0..settings.instances)
            .map(|index| {
                let server = Server::Redis(index);
                let proxy = &self.proxies[&Link { node, server }];
                format!("redis://{}/", proxy.address())
            })
            .collect();
        Some(RedlockNode {
            settings: settings.clone(),
            instances,
        })
    }

    /// A fault of an instance's own process, for fault `fault`.
    ///
    /// These are not written in the lab's history: its format names a
    /// server only as `lease-store` or `downstream`
    /// (`lab/src/lab_history.rs`); the checker sees their effects in the
    /// nodes' histories.
    pub(super) async fn apply_instance(
        &mut self,
        action: &Action,
        fault: usize,
    ) -> Result<String, RunError> {
        let index = |server: Server| match server {
            Server::Redis(index) => Ok(index),
            other => Err(infra(format!(
                "{} is no process of the run's",
                other.name()
            ))),
        };
        match *action {
            Action::ServerPause { server } => self.redis.pause(index(server)?, fault),
            Action::ServerResume { server } => self.redis.resume(index(server)?, fault),
            Action::ServerKill { server } => self.redis.kill(index(server)?).await,
            Action::ServerRestart { server, durable } => {
                self.redis.restart(index(server)?, durable).await
            }
            _ => Err(infra(format!("{action} is no instance fault"))),
        }
    }
}

/// Where the instances' data directories go: tmpfs (see the module docs).
pub(super) const DATA_ON: &str = "/dev/shm";
/// The prefix of a run's data directory there, followed by the runner's
/// pid: `fenced-lab-redis-<pid>-…`.
pub(super) const DATA_PREFIX: &str = "fenced-lab-redis-";

fn describe_pid(pid: Option<i32>) -> String {
    pid.map_or_else(|| "none".to_string(), |pid| pid.to_string())
}
