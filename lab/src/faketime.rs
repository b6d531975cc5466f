//! Node clocks for real: libfaketime on the node's process.
//!
//! A scenario gives a node a clock `offset` and a `drift` (0.01 = 1% fast).
//! The lab makes them real with libfaketime (Debian package `faketime`),
//! preloaded into the node's process with `LD_PRELOAD` and configured by the
//! `FAKETIME` variable: `"+1.5 x1.01"` is 1.5 s ahead, running 1% fast from
//! the moment the process starts.
//!
//! # What it fakes for a tokio process (verified, not assumed)
//!
//! The elector's timers run on `tokio::time::Instant`, which is
//! `std::time::Instant`, which is `clock_gettime(CLOCK_MONOTONIC)` through
//! glibc — a symbol libfaketime replaces. Tokio then sleeps in `epoll_wait`
//! for the remaining milliseconds, a call libfaketime also wraps, dividing the
//! timeout by the rate. [`probe`] checks all of it on this machine, on every
//! run that needs it, by running `fenced-lab clock-probe` (a tokio current-
//! thread runtime like the node's) under libfaketime with
//! [`PROBE_SPEC`] and timing it from outside:
//!
//! * `SystemTime` (`CLOCK_REALTIME`) is offset: the probe's wall clock reads
//!   the offset ahead of the runner's;
//! * `Instant` (`CLOCK_MONOTONIC`) runs at the rate: a tokio sleep of `S`
//!   measured by the probe's `Instant` takes about `S / rate` of the
//!   runner's real time — so timers fire on the faked clock, not late.
//!
//! Findings on Debian 12 (libfaketime 0.9.10): both hold, for offsets
//! either way and for rates above and below 1 (`x2`, `x0.75`). For a fixed
//! offset and rate the lab does not set `FAKETIME_DONT_FAKE_MONOTONIC`: the
//! monotonic clock is offset too, which nothing reads as an absolute. If the
//! probe finds otherwise (another libfaketime, a static binary), scenarios
//! with node clocks are refused, naming the node.
//!
//! # Steps of a running node's wall clock
//!
//! A node's `clock-jump` or `clock-strobe` is an NTP step: its wall clock
//! moves, its monotonic clock does not. Such a node's processes get
//! [`FaketimeSupport::stepped_environment`]: the offset is read from a file
//! on every wall-clock call (`FAKETIME_TIMESTAMP_FILE`,
//! `FAKETIME_NO_CACHE=1`) that the runner rewrites at each step
//! ([`set_wall_offset`]), and `FAKETIME_DONT_FAKE_MONOTONIC=1` leaves
//! `CLOCK_MONOTONIC` — and with it the elector's timers and tokio's sleeps —
//! alone. [`probe_steps`] verifies exactly that on this machine before such
//! a run: a tokio sleep runs at x1 while the file moves the wall clock from
//! `+0` to `+100` s mid-sleep. (Python's `time.sleep` fails with `EINVAL`
//! under `DONT_FAKE_MONOTONIC` on 0.9.10, because it sleeps with
//! `clock_nanosleep`; tokio sleeps in `epoll_wait`, which is unaffected.)
//! A drifting node cannot also be stepped: libfaketime fakes a rate only by
//! faking the monotonic clock.
//!
//! A drift is a rate, not a duration: `--time-scale` scales offsets, never
//! drifts.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Where Debian's package puts the library.
pub const LIBRARY_PATHS: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// The setting [`probe`] verifies with: 100 s ahead, twice as fast.
pub const PROBE_SPEC: &str = "+100 x2";
const PROBE_OFFSET: Duration = Duration::from_secs(100);
const PROBE_RATE: f64 = 2.0;
/// How long the probe sleeps on its faked clock.
pub const PROBE_SLEEP: Duration = Duration::from_millis(400);

/// A node's clock: offset (ns, signed, already scaled) and drift.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSetting {
    /// Nanoseconds ahead of the machine's clock (negative: behind).
    pub offset_nanos: i64,
    /// 0.01 runs 1% fast; within ±0.5.
    pub drift: f64,
}

impl ClockSetting {
    /// A setting, or `None` for the machine's own clock.
    pub fn new(offset_nanos: i64, drift: f64) -> Option<ClockSetting> {
        (offset_nanos != 0 || drift != 0.0).then_some(ClockSetting {
            offset_nanos,
            drift,
        })
    }

    /// The `FAKETIME` value: `"+1.500000000 x1.01"`.
    pub fn faketime_spec(&self) -> String {
        let mut spec = offset_spec(self.offset_nanos);
        if self.drift != 0.0 {
            spec.push_str(&format!(" x{}", 1.0 + self.drift));
        }
        spec
    }
}

/// A wall-clock offset as libfaketime reads it: `"+1.500000000"`,
/// `"-0.250000000"`.
pub fn offset_spec(offset_nanos: i64) -> String {
    let sign = if offset_nanos < 0 { '-' } else { '+' };
    let abs = offset_nanos.unsigned_abs();
    let (secs, nanos) = (abs / 1_000_000_000, abs % 1_000_000_000);
    format!("{sign}{secs}.{nanos:09}")
}

/// Sets the wall-clock offset of every process reading `file` (a node's
/// `FAKETIME_TIMESTAMP_FILE`) to `offset_nanos`: written beside it and
/// renamed over it, so a process re-reading it on a clock call (libfaketime
/// with `FAKETIME_NO_CACHE=1`) sees the old offset or the new one, never a
/// partial line.
///
/// # Errors
/// The file cannot be written or renamed.
pub fn set_wall_offset(file: &Path, offset_nanos: i64) -> std::io::Result<()> {
    let mut staged = file.as_os_str().to_owned();
    staged.push(".new");
    let staged = PathBuf::from(staged);
    std::fs::write(&staged, format!("{}\n", offset_spec(offset_nanos)))?;
    std::fs::rename(&staged, file)
}

/// What libfaketime was found to do on this machine.
#[derive(Clone, Debug, PartialEq)]
pub enum FaketimeSupport {
    /// Not looked for: the scenario has no node clock.
    NotProbed,
    /// Missing or not working, and why.
    Unavailable {
        /// What the probe found.
        why: String,
    },
    /// Verified: offsets and rates work for a tokio process.
    Verified {
        /// The library preloaded into node processes.
        library: PathBuf,
        /// What the probe measured.
        measured: Measured,
        /// Whether a wall clock can be stepped while the process runs,
        /// leaving its monotonic clock alone.
        steps: StepSupport,
    },
}

/// What [`probe_steps`] found: whether libfaketime can step a running
/// process's wall clock and leave its monotonic clock (and tokio's timers)
/// alone — what an NTP step does, and what the `clock-jump` and
/// `clock-strobe` of a node are.
#[derive(Clone, Debug, PartialEq)]
pub enum StepSupport {
    /// Verified, with what was measured.
    Verified(StepsMeasured),
    /// Not working, and why.
    Unavailable {
        /// What the probe found.
        why: String,
    },
}

/// What [`probe_steps`] measured: the probe's wall clock against the
/// runner's before and after its file was changed from `+0` to
/// [`STEP_PROBE_OFFSET`] mid-sleep, and its monotonic rate over the sleep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepsMeasured {
    /// The probe's wall clock minus the runner's at its start, in seconds.
    pub before_secs: f64,
    /// The same after the step.
    pub after_secs: f64,
    /// The probe's `Instant` elapsed over its tokio sleep, divided by the
    /// runner's real elapsed time for it (1: unfaked).
    pub monotonic_rate: f64,
}

impl fmt::Display for StepsMeasured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a runtime step of +{} s: SystemTime {:+.2} s then {:+.2} s, Instant and tokio timers at \
             x{:.2}",
            STEP_PROBE_OFFSET.as_secs(),
            self.before_secs,
            self.after_secs,
            self.monotonic_rate
        )
    }
}

/// The step [`probe_steps`] makes mid-sleep.
pub const STEP_PROBE_OFFSET: Duration = Duration::from_secs(100);

/// What [`probe`] measured under [`PROBE_SPEC`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The probe's wall clock minus the runner's, in seconds.
    pub realtime_offset_secs: f64,
    /// The probe's `Instant` elapsed over a tokio sleep, divided by the
    /// runner's real elapsed time for it.
    pub monotonic_rate: f64,
}

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "under FAKETIME={PROBE_SPEC:?}: SystemTime {:+.2} s, Instant and tokio timers at x{:.2}",
            self.realtime_offset_secs, self.monotonic_rate
        )
    }
}

impl FaketimeSupport {
    /// Why `setting` cannot be applied, or `None` when it can.
    pub fn refusal(&self, setting: &ClockSetting) -> Option<String> {
        let what = if setting.drift != 0.0 {
            format!("clock drift {}", setting.drift)
        } else {
            "a clock offset".to_string()
        };
        match self {
            FaketimeSupport::Verified { .. } => None,
            FaketimeSupport::NotProbed => {
                Some(format!("{what} needs libfaketime, which was not probed"))
            }
            FaketimeSupport::Unavailable { why } => {
                Some(format!("{what} needs libfaketime: {why}"))
            }
        }
    }

    /// Why a node's wall clock cannot be stepped while it runs (its
    /// `clock-jump` or `clock-strobe`), or `None` when it can.
    pub fn step_refusal(&self) -> Option<String> {
        match self {
            FaketimeSupport::Verified {
                steps: StepSupport::Verified(_),
                ..
            } => None,
            FaketimeSupport::Verified {
                steps: StepSupport::Unavailable { why },
                ..
            } => Some(format!(
                "a step of a running node's wall clock needs libfaketime to step it and leave \
                 CLOCK_MONOTONIC alone: {why}"
            )),
            FaketimeSupport::NotProbed => {
                Some("a node's clock step needs libfaketime, which was not probed".to_string())
            }
            FaketimeSupport::Unavailable { why } => {
                Some(format!("a node's clock step needs libfaketime: {why}"))
            }
        }
    }

    /// The environment a node process with `setting` gets.
    pub fn environment(&self, setting: &ClockSetting) -> Vec<(String, String)> {
        match self {
            FaketimeSupport::Verified { library, .. } => vec![
                ("LD_PRELOAD".to_string(), library.display().to_string()),
                ("FAKETIME".to_string(), setting.faketime_spec()),
            ],
            _ => Vec::new(),
        }
    }

    /// The environment of a node process whose wall clock the run steps:
    /// libfaketime reads the offset from `file` on every wall-clock call
    /// ([`set_wall_offset`] changes it) and leaves the monotonic clock —
    /// the elector's timers, tokio's sleeps — unfaked, as an NTP step does.
    pub fn stepped_environment(&self, file: &Path) -> Vec<(String, String)> {
        match self {
            FaketimeSupport::Verified { library, .. } => stepped_env(library, file),
            _ => Vec::new(),
        }
    }
}

fn stepped_env(library: &Path, file: &Path) -> Vec<(String, String)> {
    [
        ("LD_PRELOAD", library.display().to_string()),
        ("FAKETIME_TIMESTAMP_FILE", file.display().to_string()),
        ("FAKETIME_NO_CACHE", "1".to_string()),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The first of [`LIBRARY_PATHS`] that exists.
pub fn find_library() -> Option<PathBuf> {
    LIBRARY_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
}

/// Runs `program clock-probe` under libfaketime and says what it fakes.
/// Bounded: the probe is killed after 10 s.
pub async fn probe(program: &Path) -> FaketimeSupport {
    let Some(library) = find_library() else {
        return FaketimeSupport::Unavailable {
            why: format!(
                "not installed (none of {}; apt-get install faketime)",
                LIBRARY_PATHS.join(", ")
            ),
        };
    };
    let measuring = measure(program, &library, PROBE_SPEC);
    match tokio::time::timeout(Duration::from_secs(10), measuring).await {
        Ok(Ok(measured)) => {
            let steps = probe_steps(program, &library).await;
            judge(library, measured, steps)
        }
        Ok(Err(why)) => FaketimeSupport::Unavailable {
            why: why.to_string(),
        },
        Err(_) => FaketimeSupport::Unavailable {
            why: "the clock probe did not finish within 10 s".to_string(),
        },
    }
}

/// Runs `program clock-probe` with its wall clock read from a file that is
/// stepped by [`STEP_PROBE_OFFSET`] mid-sleep, and judges what it saw.
/// Bounded: 10 s.
pub async fn probe_steps(program: &Path, library: &Path) -> StepSupport {
    let measuring = measure_steps(program, library);
    match tokio::time::timeout(Duration::from_secs(10), measuring).await {
        Ok(Ok(measured)) => judge_steps(measured),
        Ok(Err(why)) => StepSupport::Unavailable {
            why: why.to_string(),
        },
        Err(_) => StepSupport::Unavailable {
            why: "the clock-step probe did not finish within 10 s".to_string(),
        },
    }
}

fn judge_steps(measured: StepsMeasured) -> StepSupport {
    let before_ok = measured.before_secs.abs() < 5.0;
    let after_ok = (measured.after_secs - STEP_PROBE_OFFSET.as_secs_f64()).abs() < 5.0;
    let rate_ok = (measured.monotonic_rate - 1.0).abs() < 0.25;
    if before_ok && after_ok && rate_ok {
        StepSupport::Verified(measured)
    } else {
        StepSupport::Unavailable {
            why: format!(
                "it does not step the wall clock alone ({measured}; expected +0 s, then +{} s, x1)",
                STEP_PROBE_OFFSET.as_secs()
            ),
        }
    }
}

/// Runs the clock probe under [`FaketimeSupport::stepped_environment`] with
/// a file reading `+0`, steps the file by [`STEP_PROBE_OFFSET`] once the
/// probe has read its wall clock, and measures both readings and the
/// monotonic rate against this process's clocks.
///
/// # Errors
/// The probe cannot be started or prints something else; the file cannot
/// be written.
#[allow(clippy::disallowed_methods)] // Measuring real time is the point.
pub async fn measure_steps(program: &Path, library: &Path) -> Result<StepsMeasured, ProbeError> {
    let dir = tempfile::Builder::new()
        .prefix("fenced-lab-clock-")
        .tempdir()
        .map_err(ProbeError::File)?;
    let file = dir.path().join("wall.faketime");
    set_wall_offset(&file, 0).map_err(ProbeError::File)?;
    let (mut child, mut lines) = spawn_probe(program, stepped_env(library, &file))?;
    let start_line = next_line(&mut lines).await?;
    let real_start = std::time::Instant::now();
    let wall_before = unix_secs(SystemTime::now());
    let offset = i64::try_from(STEP_PROBE_OFFSET.as_nanos()).unwrap_or(i64::MAX);
    set_wall_offset(&file, offset).map_err(ProbeError::File)?;
    let end_line = next_line(&mut lines).await?;
    let real_elapsed = real_start.elapsed().as_secs_f64();
    let wall_after = unix_secs(SystemTime::now());
    let _ = child.wait().await;
    let fake_elapsed = field(&end_line, "instant_elapsed_secs")?;
    Ok(StepsMeasured {
        before_secs: field(&start_line, "system_secs")? - wall_before,
        after_secs: field(&end_line, "system_secs")? - wall_after,
        monotonic_rate: fake_elapsed / real_elapsed.max(1e-6),
    })
}

fn judge(library: PathBuf, measured: Measured, steps: StepSupport) -> FaketimeSupport {
    let offset_ok = (measured.realtime_offset_secs - PROBE_OFFSET.as_secs_f64()).abs() < 5.0;
    // Generous: process start and pipe latency blur a 400 ms measurement.
    let rate_ok = (measured.monotonic_rate - PROBE_RATE).abs() < 0.5;
    if offset_ok && rate_ok {
        FaketimeSupport::Verified {
            library,
            measured,
            steps,
        }
    } else {
        FaketimeSupport::Unavailable {
            why: format!(
                "{} does not fake what the node's clocks read ({measured}; expected +{} s, x{})",
                library.display(),
                PROBE_OFFSET.as_secs(),
                PROBE_RATE
            ),
        }
    }
}

/// Runs `program clock-probe` with `library` preloaded and `FAKETIME=spec`,
/// and measures its clocks against this process's.
///
/// # Errors
/// The probe cannot be started or prints something else.
#[allow(clippy::disallowed_methods)] // Measuring real time is the point.
pub async fn measure(program: &Path, library: &Path, spec: &str) -> Result<Measured, ProbeError> {
    let env = [
        ("LD_PRELOAD".to_string(), library.display().to_string()),
        ("FAKETIME".to_string(), spec.to_string()),
    ];
    let (mut child, mut lines) = spawn_probe(program, env)?;
    let start_line = next_line(&mut lines).await?;
    let real_start = std::time::Instant::now();
    let runner_wall = unix_secs(SystemTime::now());
    let end_line = next_line(&mut lines).await?;
    let real_elapsed = real_start.elapsed().as_secs_f64();
    let _ = child.wait().await;
    let probe_wall = field(&start_line, "system_secs")?;
    let fake_elapsed = field(&end_line, "instant_elapsed_secs")?;
    Ok(Measured {
        realtime_offset_secs: probe_wall - runner_wall,
        monotonic_rate: fake_elapsed / real_elapsed.max(1e-6),
    })
}

type ProbeLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// Starts `program clock-probe` (a tokio sleep of [`PROBE_SLEEP`]) with
/// `env` added, its standard output piped and read line by line.
fn spawn_probe(
    program: &Path,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(tokio::process::Child, ProbeLines), ProbeError> {
    let mut child = Command::new(program)
        .arg("clock-probe")
        .arg("--sleep-ms")
        .arg(PROBE_SLEEP.as_millis().to_string())
        .envs(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ProbeError::Start {
            program: program.to_path_buf(),
            source,
        })?;
    let stdout = child.stdout.take().ok_or(ProbeError::NoStdout)?;
    Ok((child, BufReader::new(stdout).lines()))
}

async fn next_line(lines: &mut ProbeLines) -> Result<String, ProbeError> {
    lines
        .next_line()
        .await
        .map_err(ProbeError::Read)?
        .ok_or(ProbeError::EndedEarly)
}

fn unix_secs(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn field(line: &str, key: &'static str) -> Result<f64, ProbeError> {
    line.split_whitespace()
        .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| ProbeError::NoField {
            line: line.to_string(),
            key,
        })
}

/// Why the clock probe measured nothing.
#[derive(Debug)]
pub enum ProbeError {
    /// The probe cannot be started.
    Start {
        /// The program run as the probe.
        program: PathBuf,
        /// What starting it said.
        source: std::io::Error,
    },
    /// The probe's standard output is not piped.
    NoStdout,
    /// The probe's standard output cannot be read.
    Read(std::io::Error),
    /// The probe stopped before its second line.
    EndedEarly,
    /// The probe's clock file cannot be written.
    File(std::io::Error),
    /// A line of the probe's lacks a `key=number`.
    NoField {
        /// The line it printed.
        line: String,
        /// The key missing from it.
        key: &'static str,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Start { program, source } => write!(
                f,
                "cannot start the clock probe {}: {source}",
                program.display()
            ),
            ProbeError::NoStdout => f.write_str("the clock probe has no stdout"),
            ProbeError::Read(e) => write!(f, "reading the clock probe: {e}"),
            ProbeError::EndedEarly => f.write_str("the clock probe ended early"),
            ProbeError::File(e) => write!(f, "writing the clock probe's clock file: {e}"),
            ProbeError::NoField { line, key } => {
                write!(f, "the clock probe printed {line:?}, without {key}")
            }
        }
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProbeError::Start { source, .. } => Some(source),
            ProbeError::Read(e) | ProbeError::File(e) => Some(e),
            ProbeError::NoStdout | ProbeError::EndedEarly | ProbeError::NoField { .. } => None,
        }
    }
}

/// The `clock-probe` subcommand: prints its wall clock, sleeps `sleep` on
/// tokio, prints how long its `Instant` says that took and its wall clock
/// again.
#[allow(clippy::disallowed_methods)] // Reading the (faked) clocks is the point.
pub fn clock_probe(sleep: Duration) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let start = std::time::Instant::now();
        println!("start system_secs={}", unix_secs(SystemTime::now()));
        tokio::time::sleep(sleep).await;
        println!(
            "end instant_elapsed_secs={} system_secs={}",
            start.elapsed().as_secs_f64(),
            unix_secs(SystemTime::now())
        );
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_spell_offsets_and_rates_as_libfaketime_reads_them() {
        // The spec is what libfaketime parses: signed seconds, then a rate.
        let ahead = ClockSetting::new(1_500_000_000, 0.01).expect("a setting");
        assert_eq!(ahead.faketime_spec(), "+1.500000000 x1.01");
        let behind = ClockSetting::new(-250_000_000, 0.0).expect("a setting");
        assert_eq!(behind.faketime_spec(), "-0.250000000");
        let slow = ClockSetting::new(0, -0.25).expect("a setting");
        assert_eq!(slow.faketime_spec(), "+0.000000000 x0.75");
        assert_eq!(ClockSetting::new(0, 0.0), None);
    }

    #[test]
    fn a_probe_that_finds_the_clocks_unfaked_refuses_node_clocks() {
        // A library that fakes only the wall clock must not be trusted with
        // the elector's timers.
        let measured = Measured {
            realtime_offset_secs: 100.0,
            monotonic_rate: 1.0,
        };
        let steps = StepSupport::Unavailable {
            why: "not probed".to_string(),
        };
        let support = judge(PathBuf::from("/lib/fake.so"), measured, steps);
        let setting = ClockSetting::new(0, 0.1).expect("a setting");
        let why = support.refusal(&setting).expect("refused");
        assert!(why.contains("clock drift 0.1"), "{why}");
        assert!(why.contains("x1.00"), "{why}");
    }
}
