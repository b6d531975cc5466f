//! A ZooKeeper on loopback, run with `java` directly, as a **one-member
//! quorum**.
//!
//! Not through `zkServer.sh` (which daemonises, so the lab would not own
//! the process) nor systemd: `java … -cp <classpath>
//! org.apache.zookeeper.server.quorum.QuorumPeerMain <data>/zoo.cfg`, the
//! process the lab starts being the server itself. The classpath is Debian's
//! (package `libzookeeper-java`, as `/etc/zookeeper/conf/environment` has
//! it): `/usr/share/java/zookeeper.jar`, whose manifest's `Class-Path` names
//! the jars it needs, plus `slf4j-simple.jar` (`libslf4j-java`, a
//! dependency) when present so the server logs to its stderr — without a
//! binding SLF4J logs nothing. The JVM runs with `-XX:-UsePerfData` (no
//! `/tmp/hsperfdata_*/<pid>` file that a SIGKILL would leave behind) and
//! its temporary directory in the server's data directory.
//!
//! Why a quorum of one and not the standalone server
//! (`ZooKeeperServerMain`): the zxids. A standalone server keeps its zxid
//! epoch across a restart (`ZooKeeperServer.loadData`:
//! `setZxid(zkDb.loadDataBase())` — measured with 3.8.0: a SIGKILL at
//! `0xd`, the next create at `0xf`), while a quorum peer begins a new
//! epoch each time it is elected leader (`Leader.lead` →
//! `ZxidUtils.makeZxid(epoch, 0)`): `0x100000000` at the first start,
//! `0x200000000` after a restart, as the model's server numbers them
//! (`fenced_zoo::zookeeper`, `restart`), so a token after a real restart is
//! the simulation's. `standaloneEnabled=false` keeps a one-server
//! configuration a quorum; `server.1` names this peer's quorum and
//! election ports (two more free loopback ports) and `myid` says it is 1.
//!
//! The generated `zoo.cfg`: `tickTime`, `initLimit`/`syncLimit` (no
//! follower ever syncs), `dataDir` (the instance's), `clientPort` on
//! `clientPortAddress=127.0.0.1`, `standaloneEnabled=false`, `server.1`,
//! `admin.enableServer=false` (no Jetty on port 8080), `maxClientCnxns=0`,
//! and `minSessionTimeout` / `maxSessionTimeout` when set (the server's
//! defaults are 2 and 20 ticks; a client's requested session timeout is
//! clamped into them). The server expires sessions on its own monotonic
//! clock; a SIGSTOP ([`ZooKeeperServer::pause`]) freezes that clock with
//! everything else. Ready means the `srvr` four-letter word (the one
//! ZooKeeper enables by default) answers `Mode: leader` — no session, so no
//! transaction: a readiness check after a restart takes no zxid the
//! model's server would not.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::data_dir::DataDir;
use super::process::{kill_slot, live_pid, signal_slot, Launch, ServerProcess};
use super::{find_program, ports, ServerError, START_ATTEMPTS};
use crate::supervisor::Signal;

/// Where Debian's packages put the JVM.
pub const JAVA_PATHS: [&str; 1] = ["/usr/bin/java"];
/// The server's jar (its manifest names the rest of the classpath).
pub const SERVER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// An SLF4J binding that logs to stderr, added when present.
pub const LOGGER_JAR: &str = "/usr/share/java/slf4j-simple.jar";
/// The server's main class (a quorum peer: see the module docs).
pub const MAIN_CLASS: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

/// How to start the server.
#[derive(Clone, Debug)]
pub struct ZooKeeperOptions {
    /// `tickTime`: the server's unit of time (session timeouts are bounded
    /// by 2 and 20 ticks unless set below).
    pub tick: Duration,
    /// `minSessionTimeout`, when set.
    pub min_session_timeout: Option<Duration>,
    /// `maxSessionTimeout`, when set.
    pub max_session_timeout: Option<Duration>,
    /// Its client port; `None` picks a free one.
    pub port: Option<u16>,
    /// More `key=value` lines for `zoo.cfg`, after the lab's.
    pub extra_config: Vec<(String, String)>,
    /// The JVM; `None` looks in [`JAVA_PATHS`], then `PATH`.
    pub java: Option<PathBuf>,
    /// The classpath; `None` is Debian's ([`classpath`]).
    pub classpath: Option<String>,
    /// How long the start may take (a JVM's start is slow on a busy
    /// machine).
    pub ready_within: Duration,
}

impl Default for ZooKeeperOptions {
    fn default() -> Self {
        ZooKeeperOptions {
            tick: Duration::from_millis(2_000),
            min_session_timeout: None,
            max_session_timeout: None,
            port: None,
            extra_config: Vec::new(),
            java: None,
            classpath: None,
            ready_within: Duration::from_secs(60),
        }
    }
}

/// The JVM, or why it cannot be had.
///
/// # Errors
/// Not installed.
pub fn java(server: &str) -> Result<PathBuf, ServerError> {
    find_program("java", &JAVA_PATHS).ok_or_else(|| ServerError::NotInstalled {
        server: server.to_string(),
        looked_for: "java".to_string(),
        install: "apt-get install default-jre-headless",
    })
}

/// Debian's classpath for the server, or why it cannot be had.
///
/// # Errors
/// The server's jar is not installed.
pub fn classpath(server: &str) -> Result<String, ServerError> {
    if !Path::new(SERVER_JAR).is_file() {
        return Err(ServerError::NotInstalled {
            server: server.to_string(),
            looked_for: SERVER_JAR.to_string(),
            install: "apt-get install zookeeper",
        });
    }
    let mut jars = vec![SERVER_JAR];
    if Path::new(LOGGER_JAR).is_file() {
        jars.push(LOGGER_JAR);
    }
    Ok(jars.join(":"))
}

/// A running (or killed) server, a quorum of one. Dropping it kills the process
/// and removes its data directory.
#[derive(Debug)]
pub struct ZooKeeperServer {
    // Declared first: dropped (killed) before the directory is removed.
    process: Option<ServerProcess>,
    launch: Launch,
    port: u16,
    ready_within: Duration,
    data: DataDir,
}

impl ZooKeeperServer {
    /// Starts server `name` with its data (and `zoo.cfg`) in
    /// `<base>/<name>.data` and its log in `<base>/<name>.log`, and waits
    /// until a client session is established.
    ///
    /// # Errors
    /// Not installed, files, ports, or the start failed (nothing is left
    /// running and the data directory is removed).
    pub async fn start(
        base: &Path,
        name: &str,
        options: &ZooKeeperOptions,
    ) -> Result<ZooKeeperServer, ServerError> {
        let java = match &options.java {
            Some(java) => java.clone(),
            None => java(name)?,
        };
        let classpath = match &options.classpath {
            Some(classpath) => classpath.clone(),
            None => classpath(name)?,
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let free = || {
                ports::free_port().map_err(|error| ServerError::NoPort {
                    server: name.to_string(),
                    error,
                })
            };
            let port = match options.port {
                Some(port) => port,
                None => free()?,
            };
            let peer = PeerPorts {
                quorum: free()?,
                election: free()?,
            };
            match ZooKeeperServer::start_once(base, name, options, &java, &classpath, port, peer)
                .await
            {
                Err(error)
                    if error.is_port_clash()
                        && options.port.is_none()
                        && attempt < START_ATTEMPTS => {}
                outcome => return outcome,
            }
        }
    }

    async fn start_once(
        base: &Path,
        name: &str,
        options: &ZooKeeperOptions,
        java: &Path,
        classpath: &str,
        port: u16,
        peer: PeerPorts,
    ) -> Result<ZooKeeperServer, ServerError> {
        let files = |path: &Path, error| ServerError::Files {
            server: name.to_string(),
            path: path.to_path_buf(),
            error,
        };
        let data_path = base.join(format!("{name}.data"));
        let data = DataDir::create(&data_path).map_err(|e| files(&data_path, e))?;
        let config = data.path().join("zoo.cfg");
        std::fs::write(&config, config_text(data.path(), port, peer, options))
            .map_err(|e| files(&config, e))?;
        // `myid` in the dataDir: this peer is server.1.
        let myid_dir = data.path().join("data");
        std::fs::create_dir_all(&myid_dir).map_err(|e| files(&myid_dir, e))?;
        let myid = myid_dir.join("myid");
        std::fs::write(&myid, "1\n").map_err(|e| files(&myid, e))?;
        let mut args: Vec<OsString> = vec![
            "-Xms32m".into(),
            "-Xmx256m".into(),
            "-XX:+UseSerialGC".into(),
            "-XX:-UsePerfData".into(),
        ];
        let mut tmpdir = OsString::from("-Djava.io.tmpdir=");
        tmpdir.push(data.path());
        args.push(tmpdir);
        args.extend([
            "-Dzookeeper.admin.enableServer=false".into(),
            "-Dzookeeper.jmx.log4j.disable=true".into(),
            "-Dorg.slf4j.simpleLogger.showDateTime=true".into(),
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS".into(),
            "-cp".into(),
            classpath.into(),
            MAIN_CLASS.into(),
            config.clone().into_os_string(),
        ]);
        let mut server = ZooKeeperServer {
            process: None,
            launch: Launch {
                server: name.to_string(),
                program: java.to_path_buf(),
                args,
                env: Vec::new(),
                // Options the JVM would pick up from the environment.
                env_remove_prefixes: vec!["JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"],
                dir: data.path().to_path_buf(),
                log: base.join(format!("{name}.log")),
            },
            port,
            ready_within: options.ready_within,
            data,
        };
        // On `?` the server drops: killed, data removed.
        server.run().await?;
        Ok(server)
    }

    /// Starts the process and waits until it serves as the leader.
    async fn run(&mut self) -> Result<(), ServerError> {
        let mut process = ServerProcess::spawn(self.launch.clone())?;
        let address = self.connect_string();
        process
            .wait_ready(self.ready_within, || leading(address.clone()))
            .await?;
        self.process = Some(process);
        Ok(())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.launch.server
    }

    /// Its client port on 127.0.0.1 (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its connection string, for `zookeeper_client::Client::connect`:
    /// `127.0.0.1:P`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The pid of its live process (the JVM), if it has one.
    pub fn pid(&mut self) -> Option<i32> {
        live_pid(&mut self.process)
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// Leaves its data directory in place when dropped (its transaction
    /// log: a run kept with `--keep`).
    pub fn keep_data(&mut self) {
        self.data.keep();
    }

    /// Its log file.
    pub fn log(&self) -> &Path {
        &self.launch.log
    }

    /// Its command line, as started.
    pub fn command_line(&self) -> String {
        self.launch.command_line()
    }

    /// Freezes it (SIGSTOP): connections stay open, nothing is answered,
    /// and its session clock stops too.
    ///
    /// # Errors
    /// Not running, or the signal failed.
    pub fn pause(&mut self) -> Result<(), ServerError> {
        self.signal(Signal::Stop)
    }

    /// Resumes it (SIGCONT).
    ///
    /// # Errors
    /// Not running, or the signal failed.
    pub fn resume(&mut self) -> Result<(), ServerError> {
        self.signal(Signal::Continue)
    }

    fn signal(&mut self, signal: Signal) -> Result<(), ServerError> {
        signal_slot(&mut self.process, &self.launch, signal)
    }

    /// SIGKILLs it (a crash); its data directory stays.
    pub async fn kill(&mut self) {
        kill_slot(&mut self.process).await;
    }

    /// Kills it if it runs and starts it again over its data (its snapshot
    /// and transaction log: sessions and ephemeral nodes survive, and the
    /// server restarts each session's timeout), on the same port.
    ///
    /// # Errors
    /// The start failed.
    pub async fn restart(&mut self) -> Result<(), ServerError> {
        self.kill().await;
        self.run().await
    }

    /// Kills it and removes its data directory (as dropping it does).
    pub async fn stop(mut self) {
        self.kill().await;
    }
}

/// The peer's quorum and election ports (`server.1=127.0.0.1:Q:E`).
#[derive(Clone, Copy, Debug)]
struct PeerPorts {
    quorum: u16,
    election: u16,
}

fn config_text(data: &Path, port: u16, peer: PeerPorts, options: &ZooKeeperOptions) -> String {
    let millis = |d: Duration| d.as_millis().max(1);
    let mut lines = vec![
        format!("tickTime={}", millis(options.tick)),
        "initLimit=10".to_string(),
        "syncLimit=5".to_string(),
        format!("dataDir={}", data.join("data").display()),
        format!("clientPort={port}"),
        "clientPortAddress=127.0.0.1".to_string(),
        "standaloneEnabled=false".to_string(),
        format!("server.1=127.0.0.1:{}:{}", peer.quorum, peer.election),
        "admin.enableServer=false".to_string(),
        "maxClientCnxns=0".to_string(),
    ];
    if let Some(min) = options.min_session_timeout {
        lines.push(format!("minSessionTimeout={}", millis(min)));
    }
    if let Some(max) = options.max_session_timeout {
        lines.push(format!("maxSessionTimeout={}", millis(max)));
    }
    lines.extend(
        options
            .extra_config
            .iter()
            .map(|(key, value)| format!("{key}={value}")),
    );
    lines.join("\n") + "\n"
}

/// The `srvr` four-letter word's answer from `address`, whole.
///
/// # Errors
/// No connection, or the answer could not be read.
pub async fn srvr(address: &str) -> Result<String, std::io::Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream.write_all(b"srvr").await?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await?;
    Ok(text)
}

/// The server's last zxid, from `srvr`'s `Zxid: 0x…` line.
///
/// # Errors
/// No connection, or no zxid in the answer (both said).
pub async fn srvr_zxid(address: &str) -> Result<u64, String> {
    let text = srvr(address).await.map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|line| line.strip_prefix("Zxid: 0x"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .ok_or_else(|| format!("no zxid in srvr's answer: {text:?}"))
}

/// Ready: `srvr` says this peer leads (a quorum of one elects itself; until
/// then it answers that it is not serving). No session, no transaction.
async fn leading(address: String) -> Result<(), String> {
    let text = srvr(&address).await.map_err(|e| e.to_string())?;
    if text.lines().any(|line| line.trim() == "Mode: leader") {
        Ok(())
    } else {
        Err(format!("not leading yet: {:?}", text.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_binds_loopback_makes_a_quorum_of_one_and_sets_the_session_bounds() {
        let options = ZooKeeperOptions {
            tick: Duration::from_millis(200),
            min_session_timeout: Some(Duration::from_millis(400)),
            max_session_timeout: Some(Duration::from_secs(4)),
            ..ZooKeeperOptions::default()
        };
        let peer = PeerPorts {
            quorum: 21_001,
            election: 21_002,
        };
        let text = config_text(Path::new("/d"), 21_000, peer, &options);
        for line in [
            "tickTime=200",
            "dataDir=/d/data",
            "clientPort=21000",
            "clientPortAddress=127.0.0.1",
            "standaloneEnabled=false",
            "server.1=127.0.0.1:21001:21002",
            "admin.enableServer=false",
            "minSessionTimeout=400",
            "maxSessionTimeout=4000",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }
}
