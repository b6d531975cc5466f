//! Real servers for the lock zoo: etcd, Redis and ZooKeeper, started on
//! loopback by the lab itself (PostgreSQL, the fourth, is the run's
//! `--postgres`).
//!
//! Each instance gets ports of its own (127.0.0.1 only), a data directory of
//! its own under the run's directory (`<base>/<name>.data`, removed when the
//! instance is stopped or dropped) and a log file beside it
//! (`<base>/<name>.log`, kept with the run's other logs). Every process is
//! started like the supervisor's nodes ([`crate::supervisor`]): its own
//! process group, and `PR_SET_PDEATHSIG` = SIGKILL before `exec`, so it
//! dies with the runner even when the runner is SIGKILLed. A start is done
//! only when a real client round trip succeeds, within a bound; a failed
//! start is a [`ServerError`] naming the server, its command and the tail of
//! its log, and leaves no process and no data directory behind.
//!
//! * [`etcd`]: one member, or three on loopback;
//! * [`redis`]: N independent instances (Redlock's), each with its own
//!   persistence, killed and restarted with or without its data, and its
//!   wall clock steppable ([`wall_clock`]);
//! * [`zookeeper`]: a one-member quorum run with `java` directly;
//! * [`serve`]: `fenced-lab zoo-servers`, which starts some and waits;
//! * shared: [`process`] (one server process, its readiness wait and its
//!   clean-up), [`ports`], [`data_dir`].
//!
//! Contract for callers: start servers from a thread that lives as long as
//! they should (the parent-death signal follows the forking thread: the
//! runner's one runtime thread, a test's thread), and stop them — or drop
//! them — before that thread ends.

pub mod data_dir;
pub mod etcd;
pub mod ports;
pub mod process;
pub mod redis;
pub mod serve;
pub mod wall_clock;
pub mod zookeeper;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a server could not be started, signalled or reached.
#[derive(Debug)]
pub enum ServerError {
    /// The server's program (or the files it needs) is not installed.
    NotInstalled {
        /// The instance.
        server: String,
        /// What was looked for.
        looked_for: String,
        /// How to install it.
        install: &'static str,
    },
    /// A file or directory of the instance could not be made or written.
    Files {
        /// The instance.
        server: String,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// No free loopback port could be found.
    NoPort {
        /// The instance.
        server: String,
        /// Why.
        error: std::io::Error,
    },
    /// The process could not be started at all.
    Spawn {
        /// The instance.
        server: String,
        /// Its command line.
        command: String,
        /// Why.
        error: std::io::Error,
    },
    /// The process ended before it answered a client.
    Exited {
        /// The instance.
        server: String,
        /// How it ended.
        status: String,
        /// Its command and the end of its log.
        start: Box<FailedStart>,
    },
    /// The process did not answer a client within the bound.
    NotReady {
        /// The instance.
        server: String,
        /// How long the lab waited.
        waited: Duration,
        /// What the last attempt said.
        last_error: String,
        /// Its command and the end of its log.
        start: Box<FailedStart>,
    },
    /// A signal could not be sent.
    Signal {
        /// The instance.
        server: String,
        /// The signal's name.
        signal: &'static str,
        /// The process.
        pid: i32,
        /// Why.
        error: std::io::Error,
    },
    /// The operation needs a running process, and the instance has none.
    NotRunning {
        /// The instance.
        server: String,
        /// What was asked.
        what: &'static str,
    },
    /// The operation does not apply to how the instance was started.
    Unsupported {
        /// The instance.
        server: String,
        /// What was asked, and why not.
        what: String,
    },
}

/// What the error of a failed start quotes: the command and its log's end.
#[derive(Debug)]
pub struct FailedStart {
    /// The command line.
    pub command: String,
    /// The log file.
    pub log: PathBuf,
    /// The end of the log ([`process::log_tail`]).
    pub tail: String,
}

impl ServerError {
    /// Whether the start failed because a port was taken (another process
    /// bound it between the lab's check and the server's bind), so that a
    /// start on other free ports may succeed.
    pub fn is_port_clash(&self) -> bool {
        match self {
            ServerError::Exited { start, .. } | ServerError::NotReady { start, .. } => start
                .tail
                .to_ascii_lowercase()
                .contains("address already in use"),
            _ => false,
        }
    }

    /// The instance the error is about.
    pub fn server(&self) -> &str {
        match self {
            ServerError::NotInstalled { server, .. }
            | ServerError::Files { server, .. }
            | ServerError::NoPort { server, .. }
            | ServerError::Spawn { server, .. }
            | ServerError::Exited { server, .. }
            | ServerError::NotReady { server, .. }
            | ServerError::Signal { server, .. }
            | ServerError::NotRunning { server, .. }
            | ServerError::Unsupported { server, .. } => server,
        }
    }
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotInstalled {
                server,
                looked_for,
                install,
            } => write!(f, "{server}: not installed (no {looked_for}; {install})"),
            ServerError::Files {
                server,
                path,
                error,
            } => write!(f, "{server}: cannot prepare {}: {error}", path.display()),
            ServerError::NoPort { server, error } => {
                write!(f, "{server}: no free port on 127.0.0.1: {error}")
            }
            ServerError::Spawn {
                server,
                command,
                error,
            } => write!(f, "{server}: cannot start `{command}`: {error}"),
            ServerError::Exited {
                server,
                status,
                start,
            } => write!(
                f,
                "{server}: `{}` {status} before it answered a client; the end of {}:\n{}",
                start.command,
                start.log.display(),
                start.tail
            ),
            ServerError::NotReady {
                server,
                waited,
                last_error,
                start,
            } => write!(
                f,
                "{server}: `{}` did not answer a client within {} ms (last: {last_error}); \
                 stopped; the end of {}:\n{}",
                start.command,
                waited.as_millis(),
                start.log.display(),
                start.tail
            ),
            ServerError::Signal {
                server,
                signal,
                pid,
                error,
            } => write!(
                f,
                "{server}: cannot send {signal} to process {pid}: {error}"
            ),
            ServerError::NotRunning { server, what } => {
                write!(f, "{server}: cannot {what}: it is not running")
            }
            ServerError::Unsupported { server, what } => write!(f, "{server}: {what}"),
        }
    }
}

impl std::error::Error for ServerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServerError::Files { error, .. }
            | ServerError::NoPort { error, .. }
            | ServerError::Spawn { error, .. }
            | ServerError::Signal { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// How many times a start on automatically chosen ports is tried when a
/// port turns out taken ([`ServerError::is_port_clash`]).
pub const START_ATTEMPTS: usize = 3;

/// The first of `candidates` that is an executable file, else the first
/// `name` on `PATH`.
pub fn find_program(name: &str, candidates: &[&str]) -> Option<PathBuf> {
    let executable = |path: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|path| executable(path))
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|path| executable(path))
            })
        })
}
