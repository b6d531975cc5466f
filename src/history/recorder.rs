//! [`Recorder`]: appends one process's history lines to a file.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::clock::{now_ns, ClockError};
use super::event::{Event, Header, Line};

/// The environment variable [`Recorder::from_env`] reads: the path of the
/// history file to write, or unset (or empty) for no history.
pub const ENV_VAR: &str = "FENCED_HISTORY";

/// Why a [`Recorder`] could not start.
#[derive(Debug)]
pub enum HistoryError {
    /// The history clock cannot be read on this platform (or the kernel
    /// refused).
    Clock(ClockError),
    /// The file could not be created or its header written.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The header could not be encoded (never happens for valid types).
    Encode(String),
}

impl fmt::Display for HistoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HistoryError::Clock(error) => write!(f, "cannot record a history: {error}"),
            HistoryError::Io { path, error } => {
                write!(f, "cannot write the history {}: {error}", path.display())
            }
            HistoryError::Encode(error) => write!(f, "cannot encode a history line: {error}"),
        }
    }
}

impl std::error::Error for HistoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HistoryError::Clock(error) => Some(error),
            HistoryError::Io { error, .. } => Some(error),
            HistoryError::Encode(_) => None,
        }
    }
}

struct Inner {
    path: PathBuf,
    file: Mutex<File>,
    /// Lines not written (the file failed, or the lock was poisoned).
    errors: AtomicU64,
}

/// Records one process's history into one file: a cheap, cloneable handle
/// (clones share the file), or [`off`](Recorder::off) (the default), which
/// records nothing and costs one branch per call site.
///
/// A node program turns recording on for a file and hands clones to what it
/// instruments:
///
/// ```no_run
/// use std::time::Duration;
/// use fenced::history::{Event, Header, Recorder, Settings};
/// use fenced::{ElectorTimings, NodeId, OwnerId};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let timings = ElectorTimings::default();
/// let owner = OwnerId::new("node-a#1")?;
/// let header = Header::node(NodeId::new("node-a")?, 1, owner.clone(),
///     Settings::new("reports", &timings, true));
/// // Off unless FENCED_HISTORY names a file (or use Recorder::to_file(path, header)).
/// let recorder = Recorder::from_env(header)?;
/// // With the `tokio` feature, the driver records the elector's events itself:
/// #[cfg(feature = "tokio")]
/// let options = fenced::tokio::ElectorOptions::new(owner)
///     .with_timings(timings)
///     .with_recorder(recorder.clone());
/// // ... run the elector; in the work loop:
/// # let (token, unit, local) = (fenced::FencingToken::FIRST, 1, 0);
/// recorder.record(|| Event::WorkStarted { token, unit, local_ns: local });
/// // ... and at a graceful exit, after the elector's `run` returned:
/// recorder.process_stopped();
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Option<Arc<Inner>>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            None => f.write_str("Recorder(off)"),
            Some(inner) => write!(f, "Recorder({})", inner.path.display()),
        }
    }
}

impl Recorder {
    /// A recorder that records nothing.
    pub fn off() -> Recorder {
        Recorder { inner: None }
    }

    /// Creates (or truncates) `path`, writes `header` and a `process-started`
    /// line, and records every later event there.
    ///
    /// # Errors
    /// [`HistoryError::Clock`] where the history clock cannot be read (not
    /// Linux x86_64/aarch64); [`HistoryError::Io`] if the file cannot be
    /// created or written.
    pub fn to_file(path: impl AsRef<Path>, header: Header) -> Result<Recorder, HistoryError> {
        let path = path.as_ref().to_path_buf();
        now_ns().map_err(HistoryError::Clock)?;
        let io = |error| HistoryError::Io {
            path: path.clone(),
            error,
        };
        // Truncate first, then append: every later write lands at the end
        // even if another handle on the file wrote meanwhile.
        File::create(&path).map_err(io)?;
        let mut file = OpenOptions::new().append(true).open(&path).map_err(io)?;
        let mut text =
            serde_json::to_vec(&header).map_err(|e| HistoryError::Encode(e.to_string()))?;
        text.push(b'\n');
        file.write_all(&text).map_err(io)?;
        let recorder = Recorder {
            inner: Some(Arc::new(Inner {
                path: path.clone(),
                file: Mutex::new(file),
                errors: AtomicU64::new(0),
            })),
        };
        recorder.record(|| Event::ProcessStarted);
        if recorder.write_errors() > 0 {
            return Err(io(std::io::Error::other(
                "the first event could not be written",
            )));
        }
        Ok(recorder)
    }

    /// [`to_file`](Self::to_file) at the path in the environment variable
    /// [`ENV_VAR`] (`FENCED_HISTORY`), or [`off`](Self::off) when it is unset
    /// or empty.
    ///
    /// # Errors
    /// As [`to_file`](Self::to_file).
    pub fn from_env(header: Header) -> Result<Recorder, HistoryError> {
        match std::env::var_os(ENV_VAR) {
            Some(path) if !path.is_empty() => Recorder::to_file(PathBuf::from(path), header),
            _ => Ok(Recorder::off()),
        }
    }

    /// Whether this recorder writes anything.
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// The file it writes, if on.
    pub fn path(&self) -> Option<&Path> {
        self.inner.as_ref().map(|inner| inner.path.as_path())
    }

    /// Records the event `event` builds, stamped with the history clock; does
    /// nothing (and does not call `event`) when off. The stamp is taken under
    /// the file's lock, so the lines of one file are in time order. Never
    /// fails: a line that cannot be written is counted
    /// ([`write_errors`](Self::write_errors)).
    #[inline]
    pub fn record(&self, event: impl FnOnce() -> Event) {
        if let Some(inner) = &self.inner {
            inner.write(event());
        }
    }

    /// Records `process-stopped`: call it once at a graceful exit, after the
    /// elector's `run` has returned (its term ended and its lease released).
    pub fn process_stopped(&self) {
        self.record(|| Event::ProcessStopped);
    }

    /// How many lines could not be written.
    pub fn write_errors(&self) -> u64 {
        self.inner
            .as_ref()
            .map_or(0, |inner| inner.errors.load(Ordering::Relaxed))
    }
}

impl Inner {
    fn write(&self, event: Event) {
        let Ok(mut file) = self.file.lock() else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let Ok(at_ns) = now_ns() else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let line = Line { at_ns, event };
        let written = serde_json::to_vec(&line).map(|mut text| {
            text.push(b'\n');
            // One `write` per line on an append-mode file: a kill leaves
            // whole lines and at most the last one cut short.
            file.write_all(&text)
        });
        if !matches!(written, Ok(Ok(()))) {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    use super::*;
    use crate::history::{Kind, Line};

    #[test]
    fn a_recorder_writes_the_header_then_time_ordered_lines_and_off_writes_nothing() {
        // Proves the file layout (header, process-started, events in clock
        // order) and that an off recorder never builds its events.
        let dir = std::env::temp_dir().join(format!("fenced-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("a.jsonl");
        let recorder = Recorder::to_file(&path, Header::of_kind(Kind::Lab)).expect("opens");
        recorder.record(|| Event::Fault {
            host: "node-a#1".to_string(),
            label: "pause".to_string(),
            start: true,
        });
        recorder.process_stopped();
        assert_eq!(recorder.write_errors(), 0);
        let text = std::fs::read_to_string(&path).expect("reads");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        let header: Header = serde_json::from_str(lines[0]).expect("header");
        assert_eq!(header.kind, Kind::Lab);
        let events: Vec<Line> = lines[1..]
            .iter()
            .map(|l| serde_json::from_str(l).expect("line"))
            .collect();
        assert_eq!(events[0].event, Event::ProcessStarted);
        assert!(events.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
        let off = Recorder::off();
        off.record(|| unreachable!("an off recorder builds no event"));
        assert!(!off.is_on());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
