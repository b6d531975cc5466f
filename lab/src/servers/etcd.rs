//! etcd on loopback: one member, or a cluster of three.
//!
//! Each member is
//! `etcd --name N --data-dir D --listen-client-urls http://127.0.0.1:P
//! --advertise-client-urls http://127.0.0.1:P --listen-peer-urls
//! http://127.0.0.1:Q --initial-advertise-peer-urls http://127.0.0.1:Q
//! --initial-cluster … --initial-cluster-state new --initial-cluster-token T
//! --logger zap --log-outputs stderr`, with every `ETCD_*` variable removed
//! from its environment (etcd refuses one that shadows a flag). The members
//! of a cluster start together (each waits for a quorum) and the cluster is
//! ready when every member answers a linearizable `Range` through
//! `etcd-client` — which needs an elected leader. etcd keeps its Raft log
//! and keyspace in its data directory (fsynced), so a member killed and
//! started again ([`EtcdCluster::restart`]) rejoins with its data. Leases
//! are kept too; a newly elected leader gives every lease a full TTL from
//! its election (the lessor's `Promote`), as in production.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::data_dir::DataDir;
use super::process::{kill_slot, live_pid, signal_slot, Launch, ServerProcess};
use super::{find_program, ports, ServerError, START_ATTEMPTS};
use crate::supervisor::Signal;

/// Where Debian's package puts the server.
pub const PROGRAM_PATHS: [&str; 1] = ["/usr/bin/etcd"];

/// How to start a cluster.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// How many members: 1, or 3 for a quorum that survives one loss.
    pub members: usize,
    /// The first member's client port; `None` picks free ports for all.
    pub client_port: Option<u16>,
    /// More arguments for every member, after the lab's.
    pub extra_args: Vec<String>,
    /// The server program; `None` looks in [`PROGRAM_PATHS`], then `PATH`.
    pub program: Option<PathBuf>,
    /// How long the start may take.
    pub ready_within: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            members: 1,
            client_port: None,
            extra_args: Vec::new(),
            program: None,
            ready_within: Duration::from_secs(30),
        }
    }
}

/// The server program, or why it cannot be had.
///
/// # Errors
/// Not installed.
pub fn program(server: &str) -> Result<PathBuf, ServerError> {
    find_program("etcd", &PROGRAM_PATHS).ok_or_else(|| ServerError::NotInstalled {
        server: server.to_string(),
        looked_for: "etcd".to_string(),
        install: "apt-get install etcd-server",
    })
}

/// One member.
#[derive(Debug)]
pub struct EtcdMember {
    // Declared first: dropped (killed) before the directory is removed.
    process: Option<ServerProcess>,
    launch: Launch,
    client_port: u16,
    peer_port: u16,
    data: DataDir,
}

impl EtcdMember {
    /// Its name (`etcd-0`).
    pub fn name(&self) -> &str {
        &self.launch.server
    }

    /// Its client endpoint: `http://127.0.0.1:P`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// Its client port.
    pub fn client_port(&self) -> u16 {
        self.client_port
    }

    /// Its peer (Raft) port.
    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The pid of its live process, if it has one.
    pub fn pid(&mut self) -> Option<i32> {
        live_pid(&mut self.process)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.launch.log
    }

    /// Its command line, as started.
    pub fn command_line(&self) -> String {
        self.launch.command_line()
    }
}

/// A running cluster (of one or three). Dropping it kills every member and
/// removes their data directories.
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<EtcdMember>,
    ready_within: Duration,
}

impl EtcdCluster {
    /// Starts `options.members` members named `<name>-0`, … with data in
    /// `<base>/<member>.data` and logs in `<base>/<member>.log`, and waits
    /// until every member answers a linearizable read.
    ///
    /// # Errors
    /// Bad options, not installed, files, ports, or the start failed
    /// (nothing is left running and the data directories are removed).
    pub async fn start(
        base: &Path,
        name: &str,
        options: &EtcdOptions,
    ) -> Result<EtcdCluster, ServerError> {
        if !matches!(options.members, 1 | 3) {
            return Err(ServerError::Unsupported {
                server: name.to_string(),
                what: format!("{} members: the lab runs 1 or 3", options.members),
            });
        }
        let program = match &options.program {
            Some(program) => program.clone(),
            None => program(name)?,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            match EtcdCluster::start_once(base, name, options, &program, attempt).await {
                Err(error)
                    if error.is_port_clash()
                        && options.client_port.is_none()
                        && attempt < START_ATTEMPTS => {}
                outcome => return outcome,
            }
        }
    }

    async fn start_once(
        base: &Path,
        name: &str,
        options: &EtcdOptions,
        program: &Path,
        attempt: usize,
    ) -> Result<EtcdCluster, ServerError> {
        let mut ports = Vec::with_capacity(options.members);
        for i in 0..options.members {
            let member = format!("{name}-{i}");
            let no_port = |error| ServerError::NoPort {
                server: member.clone(),
                error,
            };
            let client = match (i, options.client_port) {
                (0, Some(port)) => port,
                _ => ports::free_port().map_err(no_port)?,
            };
            ports.push((member.clone(), client, ports::free_port().map_err(no_port)?));
        }
        let initial_cluster = ports
            .iter()
            .map(|(member, _, peer)| format!("{member}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        // Unique per start: a member never joins another run's cluster.
        let token = format!("fenced-lab-{}-{name}-{attempt}", std::process::id());
        let mut members = Vec::with_capacity(ports.len());
        for (member, client_port, peer_port) in ports {
            let data_path = base.join(format!("{member}.data"));
            let data = DataDir::create(&data_path).map_err(|error| ServerError::Files {
                server: member.clone(),
                path: data_path.clone(),
                error,
            })?;
            let launch = Launch {
                server: member.clone(),
                program: program.to_path_buf(),
                args: arguments(
                    &member,
                    data.path(),
                    client_port,
                    peer_port,
                    &initial_cluster,
                    &token,
                    &options.extra_args,
                ),
                env: Vec::new(),
                env_remove_prefixes: vec!["ETCD_"],
                dir: base.to_path_buf(),
                log: base.join(format!("{member}.log")),
            };
            members.push(EtcdMember {
                process: None,
                launch,
                client_port,
                peer_port,
                data,
            });
        }
        let mut cluster = EtcdCluster {
            members,
            ready_within: options.ready_within,
        };
        // All at once: a member of three waits for its peers to elect.
        for member in &mut cluster.members {
            member.process = Some(ServerProcess::spawn(member.launch.clone())?);
        }
        for i in 0..cluster.members.len() {
            // On `?` the cluster drops: every member killed, data removed.
            cluster.wait_member_ready(i).await?;
        }
        Ok(cluster)
    }

    async fn wait_member_ready(&mut self, index: usize) -> Result<(), ServerError> {
        let within = self.ready_within;
        let member = &mut self.members[index];
        let endpoint = member.endpoint();
        let Some(process) = member.process.as_mut() else {
            return Err(ServerError::NotRunning {
                server: member.launch.server.clone(),
                what: "become ready",
            });
        };
        process
            .wait_ready(within, || linearizable_read(endpoint.clone()))
            .await
    }

    /// The members.
    pub fn members(&self) -> &[EtcdMember] {
        &self.members
    }

    /// Member `index`, for its pid.
    pub fn member_mut(&mut self, index: usize) -> Option<&mut EtcdMember> {
        self.members.get_mut(index)
    }

    /// Every member's client endpoint, for `etcd_client::Client::connect`.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(EtcdMember::endpoint).collect()
    }

    /// Freezes member `index` (SIGSTOP).
    ///
    /// # Errors
    /// No such member, not running, or the signal failed.
    pub fn pause(&mut self, index: usize) -> Result<(), ServerError> {
        self.signal(index, Signal::Stop)
    }

    /// Resumes member `index` (SIGCONT).
    ///
    /// # Errors
    /// No such member, not running, or the signal failed.
    pub fn resume(&mut self, index: usize) -> Result<(), ServerError> {
        self.signal(index, Signal::Continue)
    }

    fn signal(&mut self, index: usize, signal: Signal) -> Result<(), ServerError> {
        let member = self.member_or_error(index)?;
        signal_slot(&mut member.process, &member.launch, signal)
    }

    fn member_or_error(&mut self, index: usize) -> Result<&mut EtcdMember, ServerError> {
        let count = self.members.len();
        self.members
            .get_mut(index)
            .ok_or_else(|| ServerError::Unsupported {
                server: format!("etcd member {index}"),
                what: format!("no such member (the cluster has {count})"),
            })
    }

    /// SIGKILLs member `index` (a crash); its data directory stays.
    pub async fn kill(&mut self, index: usize) {
        if let Some(member) = self.members.get_mut(index) {
            kill_slot(&mut member.process).await;
        }
    }

    /// Kills member `index` if it runs and starts it again over its data, on
    /// the same ports; waits until it answers a linearizable read (with
    /// three members, only once a quorum is up).
    ///
    /// # Errors
    /// No such member, or the start failed.
    pub async fn restart(&mut self, index: usize) -> Result<(), ServerError> {
        self.member_or_error(index)?;
        self.kill(index).await;
        let member = &mut self.members[index];
        member.process = Some(ServerProcess::spawn(member.launch.clone())?);
        self.wait_member_ready(index).await
    }

    /// Leaves every member's data directory in place when dropped (its
    /// write-ahead log: a run kept with `--keep`).
    pub fn keep_data(&mut self) {
        for member in &mut self.members {
            member.data.keep();
        }
    }

    /// Kills every member and removes the data directories (as dropping the
    /// cluster does), unless [kept](Self::keep_data).
    pub async fn stop(mut self) {
        for i in 0..self.members.len() {
            self.kill(i).await;
        }
    }
}

fn arguments(
    member: &str,
    data: &Path,
    client_port: u16,
    peer_port: u16,
    initial_cluster: &str,
    token: &str,
    extra: &[String],
) -> Vec<OsString> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let mut args: Vec<OsString> = vec![
        "--name".into(),
        member.into(),
        "--data-dir".into(),
        data.as_os_str().to_owned(),
        "--listen-client-urls".into(),
        client.clone().into(),
        "--advertise-client-urls".into(),
        client.into(),
        "--listen-peer-urls".into(),
        peer.clone().into(),
        "--initial-advertise-peer-urls".into(),
        peer.into(),
        "--initial-cluster".into(),
        initial_cluster.into(),
        "--initial-cluster-state".into(),
        "new".into(),
        "--initial-cluster-token".into(),
        token.into(),
        "--logger".into(),
        "zap".into(),
        "--log-outputs".into(),
        "stderr".into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    args
}

/// One linearizable `Range` through `etcd-client`, on a new connection: it
/// succeeds only when the member is up and the cluster has a leader.
async fn linearizable_read(endpoint: String) -> Result<(), etcd_client::Error> {
    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(1))
        .with_timeout(Duration::from_secs(1));
    let mut client = etcd_client::Client::connect([endpoint], Some(options)).await?;
    client.get("fenced-lab/ready", None).await?;
    Ok(())
}
