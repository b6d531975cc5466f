//! A standalone ZooKeeper on loopback, run with `java` directly.
//!
//! Not through `zkServer.sh` (which daemonises, so the lab would not own
//! the process) nor systemd: `java … -cp <classpath>
//! org.apache.zookeeper.server.ZooKeeperServerMain <data>/zoo.cfg`, the
//! process the lab starts being the server itself. The classpath is Debian's
//! (package `libzookeeper-java`, as `/etc/zookeeper/conf/environment` has
//! it): `/usr/share/java/zookeeper.jar`, whose manifest's `Class-Path` names
//! the jars it needs, plus `slf4j-simple.jar` (`libslf4j-java`, a
//! dependency) when present so the server logs to its stderr — without a
//! binding SLF4J logs nothing. The JVM runs with `-XX:-UsePerfData` (no
//! `/tmp/hsperfdata_*/<pid>` file that a SIGKILL would leave behind) and
//! its temporary directory in the server's data directory.
//!
//! The generated `zoo.cfg`: `tickTime`, `dataDir` (the instance's),
//! `clientPort` on `clientPortAddress=127.0.0.1`, `admin.enableServer=false`
//! (no Jetty on port 8080), `maxClientCnxns=0`, and `minSessionTimeout` /
//! `maxSessionTimeout` when set (the server's defaults are 2 and 20 ticks;
//! a client's requested session timeout is clamped into them). The server
//! expires sessions on its own monotonic clock; a SIGSTOP
//! ([`ZooKeeperServer::pause`]) freezes that clock with everything else.
//! Ready means a session was established and `exists /` answered, through
//! the `zookeeper-client` crate.

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
/// The server's main class (standalone).
pub const MAIN_CLASS: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";

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

/// A running (or killed) standalone server. Dropping it kills the process
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
            let port = match options.port {
                Some(port) => port,
                None => ports::free_port().map_err(|error| ServerError::NoPort {
                    server: name.to_string(),
                    error,
                })?,
            };
            match ZooKeeperServer::start_once(base, name, options, &java, &classpath, port).await {
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
    ) -> Result<ZooKeeperServer, ServerError> {
        let files = |path: &Path, error| ServerError::Files {
            server: name.to_string(),
            path: path.to_path_buf(),
            error,
        };
        let data_path = base.join(format!("{name}.data"));
        let data = DataDir::create(&data_path).map_err(|e| files(&data_path, e))?;
        let config = data.path().join("zoo.cfg");
        std::fs::write(&config, config_text(data.path(), port, options))
            .map_err(|e| files(&config, e))?;
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

    /// Starts the process and waits until a session is established.
    async fn run(&mut self) -> Result<(), ServerError> {
        let mut process = ServerProcess::spawn(self.launch.clone())?;
        let address = self.connect_string();
        process
            .wait_ready(self.ready_within, || exists_root(address.clone()))
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

fn config_text(data: &Path, port: u16, options: &ZooKeeperOptions) -> String {
    let millis = |d: Duration| d.as_millis().max(1);
    let mut lines = vec![
        format!("tickTime={}", millis(options.tick)),
        format!("dataDir={}", data.join("data").display()),
        format!("clientPort={port}"),
        "clientPortAddress=127.0.0.1".to_string(),
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

/// A session through `zookeeper-client` and one `exists /`; the session is
/// closed when the client drops.
async fn exists_root(address: String) -> Result<(), zookeeper_client::Error> {
    let client = zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(10))
        .with_connection_timeout(Duration::from_secs(1))
        .connect(&address)
        .await?;
    client.check_stat("/").await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_binds_loopback_and_sets_the_session_bounds() {
        let options = ZooKeeperOptions {
            tick: Duration::from_millis(200),
            min_session_timeout: Some(Duration::from_millis(400)),
            max_session_timeout: Some(Duration::from_secs(4)),
            ..ZooKeeperOptions::default()
        };
        let text = config_text(Path::new("/d"), 21_000, &options);
        for line in [
            "tickTime=200",
            "dataDir=/d/data",
            "clientPort=21000",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "minSessionTimeout=400",
            "maxSessionTimeout=4000",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }
}
