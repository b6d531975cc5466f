//! Node processes: started, signalled, and always cleaned up.
//!
//! Each node life is an OS process of its own process group (so a signal to
//! the group reaches it and nothing else, and a Ctrl-C in the runner's
//! terminal does not reach it), with its standard output and error in files
//! of the run's log directory. The [`Supervisor`] owns every process it
//! started and makes sure none outlives it:
//!
//! * a normal end: [`Supervisor::shutdown`] SIGKILLs every live process
//!   group and waits for each (bounded);
//! * a panic or an early return: `Drop` does the same synchronously;
//! * the runner killed outright (SIGKILL, no destructor runs): every child
//!   asked the kernel for `PR_SET_PDEATHSIG` = SIGKILL before `exec`, so it
//!   dies with the runner's thread that started it (the runner starts them
//!   from its one runtime thread, which lives as long as the run).
//!
//! A paused (SIGSTOPped) process cannot handle SIGTERM or SIGUSR1 until it
//! is resumed — the kernel holds them — but SIGKILL always works; that is
//! why clean-up uses SIGKILL.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::Instant;

/// A signal the lab sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// Freeze (`pause`).
    Stop,
    /// Resume.
    Continue,
    /// Die now (`crash`).
    Kill,
    /// Stop gracefully (`stop`).
    Terminate,
    /// The work fails (`abdicate`).
    User1,
}

impl Signal {
    /// The signal's number.
    pub fn number(self) -> libc::c_int {
        match self {
            Signal::Stop => libc::SIGSTOP,
            Signal::Continue => libc::SIGCONT,
            Signal::Kill => libc::SIGKILL,
            Signal::Terminate => libc::SIGTERM,
            Signal::User1 => libc::SIGUSR1,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Stop => "SIGSTOP",
            Signal::Continue => "SIGCONT",
            Signal::Kill => "SIGKILL",
            Signal::Terminate => "SIGTERM",
            Signal::User1 => "SIGUSR1",
        }
    }
}

/// What to start: one life of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The node's id.
    pub node: String,
    /// Which life of it (1, 2, ...).
    pub incarnation: u32,
    /// The program's arguments.
    pub args: Vec<OsString>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
}

/// How a process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signalled(i32),
    /// The lab killed it at the end of the run (or on an abort).
    KilledAtEnd,
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::Exited(code) => write!(f, "exited with code {code}"),
            Ending::Signalled(signal) => write!(f, "killed by signal {signal}"),
            Ending::KilledAtEnd => f.write_str("killed at the end of the run"),
        }
    }
}

/// One process the supervisor started.
#[derive(Debug)]
pub struct Process {
    /// Its node.
    pub node: String,
    /// Its life number.
    pub incarnation: u32,
    /// Its pid (also its process group id).
    pub pid: i32,
    /// When it started, from the supervisor's start.
    pub started: Duration,
    /// When and how it ended, once it has.
    pub ended: Option<(Duration, Ending)>,
    /// Its standard output and error files.
    pub logs: (PathBuf, PathBuf),
    child: Option<Child>,
}

impl Process {
    /// Whether it is still running (or stopped), as of the last reap.
    pub fn is_live(&self) -> bool {
        self.ended.is_none()
    }
}

/// Why a process could not be started or signalled.
#[derive(Debug)]
pub enum SupervisorError {
    /// A log file could not be created.
    Log {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The program could not be started.
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// `kill(2)` failed for a reason other than the process being gone.
    Signal {
        /// The signal.
        signal: Signal,
        /// The process.
        pid: i32,
        /// Why.
        error: std::io::Error,
    },
}

impl fmt::Display for SupervisorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupervisorError::Log { path, error } => {
                write!(f, "cannot create the log file {}: {error}", path.display())
            }
            SupervisorError::Spawn { program, error } => {
                write!(f, "cannot start {}: {error}", program.display())
            }
            SupervisorError::Signal { signal, pid, error } => {
                write!(f, "cannot send {} to process {pid}: {error}", signal.name())
            }
        }
    }
}

impl std::error::Error for SupervisorError {}

/// Index of a process in [`Supervisor::processes`].
pub type ProcessIndex = usize;

/// The node processes of one run.
#[derive(Debug)]
pub struct Supervisor {
    program: PathBuf,
    log_dir: PathBuf,
    start: Instant,
    processes: Vec<Process>,
}

/// How long clean-up waits for a killed process to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);

impl Supervisor {
    /// A supervisor that starts `program` and writes logs to `log_dir`
    /// (which must exist).
    pub fn new(program: &Path, log_dir: &Path) -> Supervisor {
        Supervisor {
            program: program.to_path_buf(),
            log_dir: log_dir.to_path_buf(),
            start: Instant::now(),
            processes: Vec::new(),
        }
    }

    /// Every process started so far, in start order.
    pub fn processes(&self) -> &[Process] {
        &self.processes
    }

    /// Time since the supervisor was made.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Starts one life of a node.
    ///
    /// # Errors
    /// The log files or the process cannot be created.
    pub fn spawn(&mut self, launch: Launch) -> Result<ProcessIndex, SupervisorError> {
        let stem = format!("{}#{}", launch.node, launch.incarnation);
        let stdout_path = self.log_dir.join(format!("{stem}.stdout"));
        let stderr_path = self.log_dir.join(format!("{stem}.stderr"));
        let create = |path: &Path| {
            File::create(path).map_err(|error| SupervisorError::Log {
                path: path.to_path_buf(),
                error,
            })
        };
        let (stdout, stderr) = (create(&stdout_path)?, create(&stderr_path)?);
        let mut command = Command::new(&self.program);
        command
            .args(&launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: `die_with_parent` only makes async-signal-safe system
        // calls and touches no memory of the parent; it runs in the child
        // between fork and exec.
        unsafe {
            command.pre_exec(die_with_parent);
        }
        let child = command.spawn().map_err(|error| SupervisorError::Spawn {
            program: self.program.clone(),
            error,
        })?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or(0);
        self.processes.push(Process {
            node: launch.node,
            incarnation: launch.incarnation,
            pid,
            started: self.elapsed(),
            ended: None,
            logs: (stdout_path, stderr_path),
            child: Some(child),
        });
        Ok(self.processes.len() - 1)
    }

    /// The live processes of `node`, as of now.
    pub fn live(&mut self, node: &str) -> Vec<ProcessIndex> {
        self.reap();
        (0..self.processes.len())
            .filter(|&i| self.processes[i].node == node && self.processes[i].is_live())
            .collect()
    }

    /// Sends `signal` to process `index`'s group. A process that has ended
    /// is left alone.
    ///
    /// # Errors
    /// `kill(2)` failed for another reason than the process being gone.
    pub fn signal(&mut self, index: ProcessIndex, signal: Signal) -> Result<(), SupervisorError> {
        self.reap();
        let Some(process) = self.processes.get(index) else {
            return Ok(());
        };
        if !process.is_live() || process.pid <= 0 {
            return Ok(());
        }
        // SAFETY: a plain system call on a process group this supervisor
        // started and has not reaped (so the id cannot have been reused).
        let result = unsafe { libc::killpg(process.pid, signal.number()) };
        if result != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::ESRCH) {
                return Err(SupervisorError::Signal {
                    signal,
                    pid: process.pid,
                    error,
                });
            }
        }
        Ok(())
    }

    /// Notes every process that has ended since the last call; returns the
    /// indexes of those that ended now.
    pub fn reap(&mut self) -> Vec<ProcessIndex> {
        let now = self.elapsed();
        let mut ended = Vec::new();
        for (index, process) in self.processes.iter_mut().enumerate() {
            if process.ended.is_some() {
                continue;
            }
            let Some(child) = process.child.as_mut() else {
                continue;
            };
            if let Ok(Some(status)) = child.try_wait() {
                process.ended = Some((now, ending(status)));
                process.child = None;
                ended.push(index);
            }
        }
        ended
    }

    /// Kills every live process (SIGKILL to its group) and waits for each,
    /// up to a bound.
    pub async fn shutdown(&mut self) {
        self.kill_all();
        let deadline = Instant::now() + REAP_TIMEOUT;
        for process in &mut self.processes {
            if let Some(mut child) = process.child.take() {
                let _ = tokio::time::timeout_at(deadline, child.wait()).await;
            }
        }
        self.mark_killed_at_end();
    }

    fn kill_all(&mut self) {
        self.reap();
        for process in &self.processes {
            if process.is_live() && process.pid > 0 {
                // SAFETY: as in `signal`; SIGKILL works on stopped processes.
                unsafe {
                    libc::killpg(process.pid, libc::SIGKILL);
                }
            }
        }
    }

    fn mark_killed_at_end(&mut self) {
        let now = self.elapsed();
        for process in &mut self.processes {
            if process.ended.is_none() {
                process.ended = Some((now, Ending::KilledAtEnd));
            }
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // A panic or an early return: nothing may outlive the run. Kill, then
        // reap without a runtime (try_wait is synchronous), bounded.
        self.kill_all();
        let deadline = std::time::Duration::from_secs(2);
        let step = std::time::Duration::from_millis(10);
        let mut waited = std::time::Duration::ZERO;
        for process in &mut self.processes {
            if let Some(child) = process.child.as_mut() {
                while !matches!(child.try_wait(), Ok(Some(_)) | Err(_)) && waited < deadline {
                    std::thread::sleep(step);
                    waited += step;
                }
            }
        }
        self.mark_killed_at_end();
    }
}

fn ending(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signalled(signal),
        (None, None) => Ending::Exited(-1),
    }
}

/// Asks the kernel to SIGKILL the calling process when the thread that
/// forked it dies (`PR_SET_PDEATHSIG`): run in a child between fork and
/// exec (`pre_exec`), it makes the child die with the runner even when the
/// runner is SIGKILLed and no destructor runs. The setting survives `exec`
/// (but not a set-user-id one).
///
/// The signal follows the forking *thread*: start children from a thread
/// that lives as long as they should (the runner's one runtime thread).
///
/// # Errors
/// `prctl` failed.
pub fn die_with_parent() -> std::io::Result<()> {
    // SAFETY: a plain system call with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether process `pid` exists and is not a zombie (for tests and checks).
pub fn process_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

#[cfg(test)]
#[path = "supervisor_tests.rs"]
mod tests;
