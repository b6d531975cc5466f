//! One server process: started like the supervisor's nodes, signalled, and
//! never outliving its owner.
//!
//! The process gets its own process group (a signal to the group reaches
//! it and any child it forks — Redis forks for AOF rewrites — and a Ctrl-C
//! in the runner's terminal does not), `PR_SET_PDEATHSIG` = SIGKILL before
//! `exec` ([`crate::supervisor::die_with_parent`]), standard input from
//! `/dev/null`, and standard output and error appended to its log file (a
//! restart appends to the same log). [`ServerProcess::kill`] and `Drop`
//! SIGKILL the group and reap the process, bounded; a SIGKILL also ends a
//! paused (SIGSTOPped) process.

use std::ffi::OsString;
use std::fmt;
use std::fs::OpenOptions;
use std::future::Future;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use tokio::time::Instant;

use super::{FailedStart, ServerError};
use crate::supervisor::Signal;

/// How long reaping a SIGKILLed process may take.
const REAP_TIMEOUT: Duration = Duration::from_secs(5);
/// How many bytes of a log's end an error looks at.
const TAIL_BYTES: u64 = 64 * 1024;
/// How many lines of a log's end an error quotes.
const TAIL_LINES: usize = 20;
/// How long one readiness attempt may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause between readiness attempts.
const PROBE_INTERVAL: Duration = Duration::from_millis(50);

/// What to start: one server process.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The instance's name (`redis-0`), for errors.
    pub server: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables added to the environment.
    pub env: Vec<(OsString, OsString)>,
    /// Variables removed from the environment: those starting with one of
    /// these (etcd refuses `ETCD_*` variables that shadow its flags).
    pub env_remove_prefixes: Vec<&'static str>,
    /// Its working directory.
    pub dir: PathBuf,
    /// Its standard output and error (appended).
    pub log: PathBuf,
}

impl Launch {
    /// The command line, quoted where needed, for messages.
    pub fn command_line(&self) -> String {
        let mut words = vec![quote(&self.program.to_string_lossy())];
        words.extend(self.args.iter().map(|arg| quote(&arg.to_string_lossy())));
        words.join(" ")
    }
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A running (or ended) server process.
#[derive(Debug)]
pub struct ServerProcess {
    launch: Launch,
    child: Child,
    pid: i32,
    ended: Option<ExitStatus>,
}

impl ServerProcess {
    /// Starts `launch`.
    ///
    /// # Errors
    /// The log cannot be opened, or the process cannot be started.
    pub fn spawn(launch: Launch) -> Result<ServerProcess, ServerError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&launch.log)
            .map_err(|error| ServerError::Files {
                server: launch.server.clone(),
                path: launch.log.clone(),
                error,
            })?;
        let log_err = log.try_clone().map_err(|error| ServerError::Files {
            server: launch.server.clone(),
            path: launch.log.clone(),
            error,
        })?;
        let mut command = Command::new(&launch.program);
        command
            .args(&launch.args)
            .current_dir(&launch.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0);
        for (key, _) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if launch
                .env_remove_prefixes
                .iter()
                .any(|prefix| name.starts_with(prefix))
            {
                command.env_remove(&key);
            }
        }
        command.envs(launch.env.iter().map(|(k, v)| (k, v)));
        let parent = std::process::id();
        // SAFETY: only async-signal-safe system calls (prctl, getppid), no
        // memory of the parent touched; runs in the child before exec.
        unsafe {
            command.pre_exec(move || {
                crate::supervisor::die_with_parent()?;
                // The parent died between fork and prctl: no signal will
                // come, so do not run at all.
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(std::io::Error::other("the lab exited while starting"));
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|error| ServerError::Spawn {
            server: launch.server.clone(),
            command: launch.command_line(),
            error,
        })?;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        Ok(ServerProcess {
            launch,
            child,
            pid,
            ended: None,
        })
    }

    /// What was started.
    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// Its pid (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// How it ended, if it has (reaps it if it just did).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.ended.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.ended = Some(status);
            }
        }
        self.ended
    }

    /// Whether it is still running (or paused).
    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none()
    }

    /// Sends `signal` to its process group: [`Signal::Stop`] pauses it
    /// (a frozen server: connections stay open, nothing is answered),
    /// [`Signal::Continue`] resumes it.
    ///
    /// # Errors
    /// It has ended, or `kill(2)` failed.
    pub fn signal(&mut self, signal: Signal) -> Result<(), ServerError> {
        if !self.is_running() || self.pid <= 0 {
            return Err(ServerError::NotRunning {
                server: self.launch.server.clone(),
                what: signal.name(),
            });
        }
        // SAFETY: a plain system call on a process group this process
        // started and has not reaped (so the id cannot have been reused).
        if unsafe { libc::killpg(self.pid, signal.number()) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::ESRCH) {
                return Err(ServerError::Signal {
                    server: self.launch.server.clone(),
                    signal: signal.name(),
                    pid: self.pid,
                    error,
                });
            }
        }
        Ok(())
    }

    /// SIGKILLs its process group (a crash: no clean-up, no final fsync)
    /// and waits for it, up to a bound. Nothing happens to one that ended.
    pub async fn kill(&mut self) {
        if !self.send_kill() {
            return;
        }
        let deadline = Instant::now() + REAP_TIMEOUT;
        while self.is_running() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// [`ServerProcess::kill`] without a runtime (for `Drop`).
    pub fn kill_blocking(&mut self) {
        if !self.send_kill() {
            return;
        }
        let deadline = std::time::Duration::from_secs(2);
        let step = std::time::Duration::from_millis(5);
        let mut waited = std::time::Duration::ZERO;
        while self.is_running() && waited < deadline {
            std::thread::sleep(step);
            waited += step;
        }
    }

    /// Sends SIGKILL to the group; whether the process was still running.
    fn send_kill(&mut self) -> bool {
        if !self.is_running() || self.pid <= 0 {
            return false;
        }
        // SAFETY: as in `signal`; SIGKILL also ends a stopped process.
        unsafe {
            libc::killpg(self.pid, libc::SIGKILL);
        }
        true
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.launch.log)
    }

    fn failed_start(&self) -> Box<FailedStart> {
        Box::new(FailedStart {
            command: self.launch.command_line(),
            log: self.launch.log.clone(),
            tail: self.log_tail(),
        })
    }

    /// The error for a process that ended before it was ready.
    fn exited_error(&self, status: ExitStatus) -> ServerError {
        ServerError::Exited {
            server: self.launch.server.clone(),
            status: describe(status),
            start: self.failed_start(),
        }
    }

    /// Waits until `probe` — a real client round trip — succeeds, within
    /// `within`, each attempt bounded too. On failure the process is killed
    /// (a start that failed leaves nothing running) and the error names the
    /// server, its command and its log's end.
    ///
    /// # Errors
    /// The process ended first ([`ServerError::Exited`]) or no attempt
    /// succeeded in time ([`ServerError::NotReady`]).
    pub async fn wait_ready<F, Fut, E>(
        &mut self,
        within: Duration,
        mut probe: F,
    ) -> Result<(), ServerError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: fmt::Display,
    {
        let start = Instant::now();
        let deadline = start + within;
        let mut last_error = "no attempt finished".to_string();
        loop {
            if let Some(status) = self.exit_status() {
                return Err(self.exited_error(status));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match tokio::time::timeout(left.min(PROBE_TIMEOUT), probe()).await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(error)) => last_error = error.to_string(),
                Err(_) => {
                    last_error = format!("no answer within {} ms", PROBE_TIMEOUT.as_millis());
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(left.min(PROBE_INTERVAL)).await;
        }
        // One that exited while the last attempt ran says more as Exited.
        self.kill().await;
        match self.exit_status() {
            Some(status) if !killed_by_us(status) => Err(self.exited_error(status)),
            _ => Err(ServerError::NotReady {
                server: self.launch.server.clone(),
                waited: start.elapsed(),
                last_error,
                start: self.failed_start(),
            }),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_blocking();
    }
}

fn killed_by_us(status: ExitStatus) -> bool {
    status.signal() == Some(libc::SIGKILL)
}

/// "exited with code 1", "was killed by signal 6".
pub fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => "ended".to_string(),
    }
}

/// The end of `path` for an error message: its last 20 lines,
/// preceded by the last few earlier lines that look like the cause (etcd
/// prints an unknown flag's error, then 200 lines of usage), or a note
/// saying why there are none. Reads at most 64 KiB of its end.
pub fn log_tail(path: &Path) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = std::fs::File::open(path)?;
        let length = file.metadata()?.len();
        file.seek(SeekFrom::Start(length.saturating_sub(TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) if text.trim().is_empty() => "(the log is empty)".to_string(),
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let split = lines.len().saturating_sub(TAIL_LINES);
            let (earlier, last) = lines.split_at(split);
            let causes: Vec<&str> = earlier
                .iter()
                .copied()
                .filter(|line| looks_like_a_cause(line))
                .collect();
            let causes = &causes[causes.len().saturating_sub(CAUSE_LINES)..];
            let mut quoted: Vec<&str> = causes.to_vec();
            if !causes.is_empty() {
                quoted.push("[…]");
            }
            quoted.extend_from_slice(last);
            quoted.join("\n")
        }
        Err(error) => format!("(cannot read the log: {error})"),
    }
}

/// How many earlier cause-like lines [`log_tail`] quotes.
const CAUSE_LINES: usize = 5;

fn looks_like_a_cause(line: &str) -> bool {
    let line = line.to_ascii_lowercase();
    ["error", "fatal", "exception", "not defined", "invalid"]
        .iter()
        .any(|word| line.contains(word))
}

/// The pid of a server slot's live process, if it has one: what every
/// server kind's `pid()` answers.
pub fn live_pid(process: &mut Option<ServerProcess>) -> Option<i32> {
    let process = process.as_mut()?;
    process.is_running().then(|| process.pid())
}

/// Sends `signal` to a server slot's process: a slot without one (killed,
/// not restarted) is [`ServerError::NotRunning`], named by `launch`.
///
/// # Errors
/// No process, it has ended, or the signal failed.
pub fn signal_slot(
    process: &mut Option<ServerProcess>,
    launch: &Launch,
    signal: Signal,
) -> Result<(), ServerError> {
    match process.as_mut() {
        Some(process) => process.signal(signal),
        None => Err(ServerError::NotRunning {
            server: launch.server.clone(),
            what: signal.name(),
        }),
    }
}

/// SIGKILLs a server slot's process, if it has one, and empties the slot
/// (its data directory stays, for a restart).
pub async fn kill_slot(process: &mut Option<ServerProcess>) {
    if let Some(mut process) = process.take() {
        process.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(dir: &Path, script: &str) -> Launch {
        Launch {
            server: "test-server".to_string(),
            program: PathBuf::from("/bin/sh"),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
            env_remove_prefixes: Vec::new(),
            dir: dir.to_path_buf(),
            log: dir.join("test-server.log"),
        }
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let launch = shell(Path::new("/tmp"), "echo 'hi' there");
        assert_eq!(
            launch.command_line(),
            "/bin/sh -c 'echo '\\''hi'\\'' there'"
        );
    }

    #[tokio::test]
    async fn a_server_that_exits_is_reported_with_its_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let launch = shell(dir.path(), "echo 'bad flag --nope' >&2; exit 3");
        let mut process = ServerProcess::spawn(launch).expect("spawns");
        let error = process
            .wait_ready(Duration::from_secs(5), || async { Err::<(), _>("not yet") })
            .await
            .expect_err("never ready");
        let text = error.to_string();
        assert!(matches!(error, ServerError::Exited { .. }), "{text}");
        assert!(text.contains("test-server"), "{text}");
        assert!(text.contains("exited with code 3"), "{text}");
        assert!(text.contains("bad flag --nope"), "{text}");
    }

    #[test]
    fn a_log_tail_keeps_an_earlier_error_above_a_long_usage_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let usage: Vec<String> = (0..200).map(|i| format!("usage line {i}")).collect();
        let text = format!(
            "starting\nflag provided but not defined: -nope\n{}\n",
            usage.join("\n")
        );
        std::fs::write(&log, text).expect("writes");
        let tail = log_tail(&log);
        assert!(
            tail.starts_with("flag provided but not defined: -nope\n[…]\n"),
            "{tail}"
        );
        assert!(tail.ends_with("usage line 199"), "{tail}");
        assert!(!tail.contains("usage line 100\n"), "{tail}");
        assert!(!tail.contains("starting"), "{tail}");
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_killed_after_the_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut process = ServerProcess::spawn(shell(dir.path(), "exec sleep 60")).expect("spawns");
        let pid = process.pid();
        let error = process
            .wait_ready(Duration::from_millis(300), || async {
                Err::<(), _>("connection refused")
            })
            .await
            .expect_err("never ready");
        assert!(matches!(error, ServerError::NotReady { .. }), "{error}");
        assert!(error.to_string().contains("connection refused"), "{error}");
        assert!(!crate::supervisor::process_running(pid));
    }

    #[tokio::test]
    async fn a_paused_server_is_killed_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut process = ServerProcess::spawn(shell(dir.path(), "exec sleep 60")).expect("spawns");
        let pid = process.pid();
        process.signal(Signal::Stop).expect("pauses");
        drop(process);
        assert!(!crate::supervisor::process_running(pid));
    }
}
