//! Redis instances for Redlock: N independent `redis-server`s on loopback.
//!
//! Each instance is `redis-server --port P --bind 127.0.0.1 --dir D --save ''
//! --appendonly yes|no --appendfsync always`: no RDB snapshots ever, and the
//! append-only file (when on) fsynced before every write is answered, so a
//! persisted instance's SIGKILL loses nothing it acknowledged. What the
//! Redlock model's restarts need:
//!
//! * [`RedisServer::kill`]: SIGKILL, a crash;
//! * [`RedisServer::restart`] with [`Restart::KeepData`]: started again on
//!   the same port over the same directory — with [`Persistence::AppendOnly`]
//!   it reloads every acknowledged key (and its TTL, an absolute time);
//!   with [`Persistence::None`] it has nothing to reload and comes back
//!   empty, as a non-persistent instance does;
//! * [`RedisServer::restart`] with [`Restart::Empty`]: the directory is
//!   emptied first — "restarted without its data" whatever its persistence;
//! * [`RedisServer::pause`]/[`RedisServer::resume`]: SIGSTOP/SIGCONT;
//! * a stepped wall clock ([`RedisOptions::stepped_clock`],
//!   [`RedisServer::set_clock_offset`]): Redis expires keys by its wall clock
//!   (`mstime()`), so a forward step expires a key early — Redlock's clock
//!   hazard ([`super::wall_clock`]).
//!
//! Ready means a `PING` answered `PONG` through the `redis` crate (during an
//! AOF load Redis answers `LOADING`, which is not ready).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::data_dir::DataDir;
use super::process::{kill_slot, live_pid, signal_slot, Launch, ServerProcess};
use super::wall_clock::SteppedClock;
use super::{find_program, ports, ServerError, START_ATTEMPTS};
use crate::supervisor::Signal;

/// Where Debian's package puts the server.
pub const PROGRAM_PATHS: [&str; 1] = ["/usr/bin/redis-server"];

/// What an instance keeps across a crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// Nothing (`--appendonly no`, no snapshots): a restart comes back empty.
    None,
    /// Every write (`--appendonly yes --appendfsync always`): a restart
    /// reloads every acknowledged write.
    AppendOnly,
}

/// What a restart starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// The directory as the dead instance left it.
    KeepData,
    /// An empty directory.
    Empty,
}

/// How to start one instance.
#[derive(Clone, Debug)]
pub struct RedisOptions {
    /// Its persistence.
    pub persistence: Persistence,
    /// Its port; `None` picks a free one ([`ports::free_port`]).
    pub port: Option<u16>,
    /// Whether its wall clock can be stepped ([`super::wall_clock`]).
    pub stepped_clock: bool,
    /// More arguments, after the lab's (a later one wins in Redis).
    pub extra_args: Vec<String>,
    /// The server program; `None` looks in [`PROGRAM_PATHS`], then `PATH`.
    pub program: Option<PathBuf>,
    /// How long the start may take.
    pub ready_within: Duration,
    /// Where its data directory goes (`<data_base>/<name>.data`); `None`:
    /// beside its log, in `base`.
    pub data_base: Option<PathBuf>,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            persistence: Persistence::None,
            port: None,
            stepped_clock: false,
            extra_args: Vec::new(),
            program: None,
            ready_within: Duration::from_secs(20),
            data_base: None,
        }
    }
}

/// The server program, or why it cannot be had.
///
/// # Errors
/// Not installed.
pub fn program(server: &str) -> Result<PathBuf, ServerError> {
    find_program("redis-server", &PROGRAM_PATHS).ok_or_else(|| ServerError::NotInstalled {
        server: server.to_string(),
        looked_for: "redis-server".to_string(),
        install: "apt-get install redis-server",
    })
}

/// One running (or killed) instance. Dropping it kills the process and
/// removes its data directory.
#[derive(Debug)]
pub struct RedisServer {
    // Declared first: dropped (killed) before the directory is removed.
    process: Option<ServerProcess>,
    launch: Launch,
    port: u16,
    clock: Option<SteppedClock>,
    ready_within: Duration,
    data: DataDir,
}

impl RedisServer {
    /// Starts instance `name` with its data in `<base>/<name>.data` and its
    /// log in `<base>/<name>.log`, and waits until it answers.
    ///
    /// # Errors
    /// Not installed, files, ports, or the start failed (nothing is left
    /// running and the data directory is removed).
    pub async fn start(
        base: &Path,
        name: &str,
        options: &RedisOptions,
    ) -> Result<RedisServer, ServerError> {
        let program = match &options.program {
            Some(program) => program.clone(),
            None => program(name)?,
        };
        let files = |path: &Path, error| ServerError::Files {
            server: name.to_string(),
            path: path.to_path_buf(),
            error,
        };
        let data_path = options
            .data_base
            .as_deref()
            .unwrap_or(base)
            .join(format!("{name}.data"));
        let mut data = DataDir::create(&data_path).map_err(|e| files(&data_path, e))?;
        let clock = if options.stepped_clock {
            Some(SteppedClock::prepare(base, name).map_err(|e| files(base, e))?)
        } else {
            None
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
            let launch = Launch {
                server: name.to_string(),
                program: program.clone(),
                args: arguments(port, data.path(), options),
                env: clock
                    .as_ref()
                    .map(SteppedClock::environment)
                    .unwrap_or_default(),
                env_remove_prefixes: Vec::new(),
                dir: data.path().to_path_buf(),
                log: base.join(format!("{name}.log")),
            };
            let mut server = RedisServer {
                process: None,
                launch,
                port,
                clock: clock.clone(),
                ready_within: options.ready_within,
                data,
            };
            match server.run().await {
                Ok(()) => return Ok(server),
                Err(error)
                    if error.is_port_clash()
                        && options.port.is_none()
                        && attempt < START_ATTEMPTS =>
                {
                    server.data.wipe().map_err(|e| files(&data_path, e))?;
                    data = server.into_data();
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Gives up the data directory of a server whose start failed (its
    /// process is gone: `run` keeps one only when it is ready).
    fn into_data(self) -> DataDir {
        self.data
    }

    /// Starts the process and waits until it answers `PING`.
    async fn run(&mut self) -> Result<(), ServerError> {
        let mut process = ServerProcess::spawn(self.launch.clone())?;
        let url = self.url();
        process
            .wait_ready(self.ready_within, || ping(url.clone()))
            .await?;
        if let Some(clock) = &self.clock {
            if !clock.check_loaded(process.pid()) {
                process.kill().await;
                return Err(ServerError::Unsupported {
                    server: self.launch.server.clone(),
                    what: format!(
                        "the wall-clock shim was not loaded (is {} on a noexec mount?); the end \
                         of its log:\n{}",
                        clock.file().display(),
                        process.log_tail()
                    ),
                });
            }
        }
        self.process = Some(process);
        Ok(())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.launch.server
    }

    /// Its port on 127.0.0.1 (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL, for the `redis` crate: `redis://127.0.0.1:P/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
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

    /// Freezes it (SIGSTOP): connections stay open, nothing is answered,
    /// keys do not expire while it is frozen (but do, by its wall clock, on
    /// resume).
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

    /// SIGKILLs it (a crash); its directory stays for a restart.
    pub async fn kill(&mut self) {
        kill_slot(&mut self.process).await;
    }

    /// Kills it if it runs, then starts it again on the same port, from its
    /// directory as left or emptied, and waits until it answers.
    ///
    /// # Errors
    /// The directory cannot be emptied, or the start failed (a port taken
    /// meanwhile is not retried elsewhere: its clients know this port).
    pub async fn restart(&mut self, from: Restart) -> Result<(), ServerError> {
        self.kill().await;
        if from == Restart::Empty {
            self.data.wipe().map_err(|error| ServerError::Files {
                server: self.launch.server.clone(),
                path: self.data.path().to_path_buf(),
                error,
            })?;
        }
        self.run().await
    }

    /// Sets its wall clock to the machine's plus `offset_nanos`, from its
    /// next clock read on.
    ///
    /// # Errors
    /// Started without [`RedisOptions::stepped_clock`], or the offset file
    /// cannot be written.
    pub fn set_clock_offset(&self, offset_nanos: i64) -> Result<(), ServerError> {
        let Some(clock) = &self.clock else {
            return Err(ServerError::Unsupported {
                server: self.launch.server.clone(),
                what: "its wall clock cannot be stepped: started without stepped_clock".to_string(),
            });
        };
        clock
            .set_offset(offset_nanos)
            .map_err(|error| ServerError::Files {
                server: self.launch.server.clone(),
                path: clock.file().to_path_buf(),
                error,
            })
    }

    /// Kills it and removes its data directory (as dropping it does).
    pub async fn stop(mut self) {
        self.kill().await;
    }
}

/// Starts `count` instances named `redis-0`, `redis-1`, ... with the
/// options `options(i)` gives, one after another; on a failure the ones
/// started are stopped.
///
/// # Errors
/// The first instance that failed to start.
pub async fn start_many(
    base: &Path,
    count: usize,
    options: impl Fn(usize) -> RedisOptions,
) -> Result<Vec<RedisServer>, ServerError> {
    let mut servers = Vec::with_capacity(count);
    for i in 0..count {
        // On `?` the started ones drop: killed, directories removed.
        servers.push(RedisServer::start(base, &format!("redis-{i}"), &options(i)).await?);
    }
    Ok(servers)
}

fn arguments(port: u16, dir: &Path, options: &RedisOptions) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--port".into(),
        port.to_string().into(),
        "--bind".into(),
        "127.0.0.1".into(),
        "--dir".into(),
        dir.as_os_str().to_owned(),
        "--save".into(),
        "".into(),
        "--daemonize".into(),
        "no".into(),
        "--logfile".into(),
        "".into(),
    ];
    match options.persistence {
        Persistence::None => args.extend(["--appendonly".into(), "no".into()]),
        Persistence::AppendOnly => args.extend([
            "--appendonly".into(),
            "yes".into(),
            "--appendfsync".into(),
            "always".into(),
        ]),
    }
    args.extend(options.extra_args.iter().map(OsString::from));
    args
}

/// One `PING` through the `redis` crate, on a new connection.
async fn ping(url: String) -> Result<(), redis::RedisError> {
    let client = redis::Client::open(url.as_str())?;
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(Duration::from_secs(1)));
    let mut connection = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let _: String = redis::cmd("PING").query_async(&mut connection).await?;
    Ok(())
}
