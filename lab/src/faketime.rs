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
//! either way and for rates above and below 1 (`x2`, `x0.75`).
//! `FAKETIME_DONT_FAKE_MONOTONIC=1` with a rate breaks sleeps (`EINVAL`), so
//! the lab never sets it: the monotonic clock is offset too, which nothing
//! reads as an absolute. If the probe finds otherwise (another libfaketime, a
//! static binary), scenarios with node clocks are refused, naming the node.
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
        let sign = if self.offset_nanos < 0 { '-' } else { '+' };
        let abs = self.offset_nanos.unsigned_abs();
        let (secs, nanos) = (abs / 1_000_000_000, abs % 1_000_000_000);
        let mut spec = format!("{sign}{secs}.{nanos:09}");
        if self.drift != 0.0 {
            spec.push_str(&format!(" x{}", 1.0 + self.drift));
        }
        spec
    }
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
    },
}

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
        Ok(Ok(measured)) => judge(library, measured),
        Ok(Err(why)) => FaketimeSupport::Unavailable {
            why: why.to_string(),
        },
        Err(_) => FaketimeSupport::Unavailable {
            why: "the clock probe did not finish within 10 s".to_string(),
        },
    }
}

fn judge(library: PathBuf, measured: Measured) -> FaketimeSupport {
    let offset_ok = (measured.realtime_offset_secs - PROBE_OFFSET.as_secs_f64()).abs() < 5.0;
    // Generous: process start and pipe latency blur a 400 ms measurement.
    let rate_ok = (measured.monotonic_rate - PROBE_RATE).abs() < 0.5;
    if offset_ok && rate_ok {
        FaketimeSupport::Verified { library, measured }
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
    let mut child = Command::new(program)
        .arg("clock-probe")
        .arg("--sleep-ms")
        .arg(PROBE_SLEEP.as_millis().to_string())
        .env("LD_PRELOAD", library)
        .env("FAKETIME", spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| ProbeError::Start {
            program: program.to_path_buf(),
            source,
        })?;
    let stdout = child.stdout.take().ok_or(ProbeError::NoStdout)?;
    let mut lines = BufReader::new(stdout).lines();
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

async fn next_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) -> Result<String, ProbeError> {
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
            ProbeError::Read(e) => Some(e),
            ProbeError::NoStdout | ProbeError::EndedEarly | ProbeError::NoField { .. } => None,
        }
    }
}

/// The `clock-probe` subcommand: prints its wall clock, sleeps `sleep` on
/// tokio, prints how long its `Instant` says that took.
#[allow(clippy::disallowed_methods)] // Reading the (faked) clocks is the point.
pub fn clock_probe(sleep: Duration) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let start = std::time::Instant::now();
        println!("start system_secs={}", unix_secs(SystemTime::now()));
        tokio::time::sleep(sleep).await;
        println!("end instant_elapsed_secs={}", start.elapsed().as_secs_f64());
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
        let support = judge(PathBuf::from("/lib/fake.so"), measured);
        let setting = ClockSetting::new(0, 0.1).expect("a setting");
        let why = support.refusal(&setting).expect("refused");
        assert!(why.contains("clock drift 0.1"), "{why}");
        assert!(why.contains("x1.00"), "{why}");
    }
}
