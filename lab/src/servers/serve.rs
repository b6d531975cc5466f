//! `fenced-lab zoo-servers`: starts a lock-zoo design's real servers on
//! loopback, prints where they are, and stops them on SIGINT or SIGTERM.
//!
//! For poking at a server by hand, and for the tests that SIGKILL the
//! process owning servers and check that the servers die with it. Each
//! ready instance is one line on standard output:
//!
//! ```text
//! ready name=redis-0 pid=4242 address=127.0.0.1:23456 data=/tmp/x/redis-0.data log=/tmp/x/redis-0.log
//! ```
//!
//! then `all ready`. It runs on one thread (the servers' parent-death
//! signal follows the thread that started them).

use std::io::Write;
use std::path::PathBuf;

use tokio::signal::unix::{signal, SignalKind};

use super::etcd::{EtcdCluster, EtcdOptions};
use super::redis::{self, RedisOptions};
use super::zookeeper::{ZooKeeperOptions, ZooKeeperServer};
use super::ServerError;

/// A kind of server.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// etcd (one member, or three).
    Etcd,
    /// Independent Redis instances.
    Redis,
    /// A ZooKeeper, a quorum of one.
    Zookeeper,
}

/// `fenced-lab zoo-servers` arguments.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Which server.
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// How many: etcd members (1 or 3), Redis instances; ZooKeeper: 1.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// The directory for their data directories and logs (must exist).
    #[arg(long)]
    pub dir: PathBuf,
}

/// What was started, kept alive until the end.
enum Started {
    Etcd(EtcdCluster),
    Redis(Vec<redis::RedisServer>),
    ZooKeeper(Box<ZooKeeperServer>),
}

/// Starts the servers, prints them, waits for SIGINT or SIGTERM, stops them.
///
/// # Errors
/// A start failed (nothing is left running), or the signal handlers cannot
/// be installed.
pub async fn serve(args: &ServeArgs) -> Result<(), ServeError> {
    // Installed first: a signal during the start is then not lost.
    let mut interrupt = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
    let mut lines = Vec::new();
    let started = match args.kind {
        Kind::Etcd => {
            let options = EtcdOptions {
                members: args.count,
                ..EtcdOptions::default()
            };
            let mut cluster = EtcdCluster::start(&args.dir, "etcd", &options).await?;
            for i in 0..cluster.members().len() {
                if let Some(member) = cluster.member_mut(i) {
                    let pid = member.pid().unwrap_or(0);
                    lines.push(line(
                        member.name(),
                        pid,
                        &format!("127.0.0.1:{}", member.client_port()),
                        member.data_dir(),
                        member.log(),
                    ));
                }
            }
            Started::Etcd(cluster)
        }
        Kind::Redis => {
            let mut servers =
                redis::start_many(&args.dir, args.count, |_| RedisOptions::default()).await?;
            for server in &mut servers {
                let pid = server.pid().unwrap_or(0);
                lines.push(line(
                    server.name(),
                    pid,
                    &format!("127.0.0.1:{}", server.port()),
                    server.data_dir(),
                    server.log(),
                ));
            }
            Started::Redis(servers)
        }
        Kind::Zookeeper => {
            let mut server =
                ZooKeeperServer::start(&args.dir, "zookeeper", &ZooKeeperOptions::default())
                    .await?;
            let pid = server.pid().unwrap_or(0);
            lines.push(line(
                server.name(),
                pid,
                &server.connect_string(),
                server.data_dir(),
                server.log(),
            ));
            Started::ZooKeeper(Box::new(server))
        }
    };
    lines.push("all ready".to_string());
    let mut stdout = std::io::stdout().lock();
    for text in lines {
        // A closed stdout only loses the listing; the servers still run.
        let _ = writeln!(stdout, "{text}");
    }
    let _ = stdout.flush();
    drop(stdout);
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    match started {
        Started::Etcd(cluster) => cluster.stop().await,
        Started::Redis(servers) => {
            for server in servers {
                server.stop().await;
            }
        }
        Started::ZooKeeper(server) => server.stop().await,
    }
    Ok(())
}

fn line(
    name: &str,
    pid: i32,
    address: &str,
    data: &std::path::Path,
    log: &std::path::Path,
) -> String {
    format!(
        "ready name={name} pid={pid} address={address} data={} log={}",
        data.display(),
        log.display()
    )
}

/// Why `zoo-servers` failed.
#[derive(Debug)]
pub enum ServeError {
    /// A server did not start.
    Start(ServerError),
    /// The signal handlers cannot be installed.
    Signals(std::io::Error),
}

impl From<ServerError> for ServeError {
    fn from(error: ServerError) -> Self {
        ServeError::Start(error)
    }
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Start(error) => error.fmt(f),
            ServeError::Signals(error) => write!(f, "cannot handle SIGINT/SIGTERM: {error}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Start(error) => Some(error),
            ServeError::Signals(error) => Some(error),
        }
    }
}
