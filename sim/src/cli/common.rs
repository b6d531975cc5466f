//! What the subcommands share: exit codes and how a failure is reported,
//! flag parsers (`--jobs`, durations), the flags of every run (`PlantArg`)
//! and of its picture (`SvgArgs`), loading a scenario, quoting a path for a
//! command line, warnings, the progress bar and the stopwatch.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use fenced_sim::file::{load, LoadError};
use fenced_sim::svg::Window;
use fenced_sim::units::DurationError;
use fenced_sim::{RunOptions, Scenario};

/// A violation or an unmet expectation.
pub(super) const EXIT_FAIL: u8 = 1;
/// Bad input: a malformed scenario, a missing file, an unwritable output,
/// bad flags.
pub(super) const EXIT_BAD_INPUT: u8 = 2;

/// How a subcommand ends: `Ok` with its exit code, or `Err` with the exit
/// code of a failure already reported on standard error (so `?` can stop a
/// subcommand at its first bad input).
pub(super) type Outcome = Result<ExitCode, ExitCode>;

/// Reports bad input on standard error; returns the exit code that says so.
pub(super) fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

/// The wall clock, read only for the elapsed time and rate shown on standard
/// error; no result or report ever depends on it.
#[allow(clippy::disallowed_methods)] // Progress display only: never reaches an output that must be deterministic.
pub(super) fn stopwatch() -> std::time::Instant {
    std::time::Instant::now()
}

/// A progress bar of `len` steps drawn with `template` on standard error
/// when it is a terminal; hidden otherwise. Besides indicatif's keys, the
/// template may use `{rate}`: steps per second as a person reads it (`1,577/s`,
/// `12/s`, `0.4/s`), where indicatif's `{per_sec}` prints three decimals.
pub(super) fn progress_bar(len: u64, template: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&rate(state.per_sec()));
                },
            ),
    );
    bar
}

/// `per_second` as a person reads it: whole numbers with thousands
/// separators from 10/s up, one decimal below.
pub(super) fn rate(per_second: f64) -> String {
    if !per_second.is_finite() || per_second < 0.0 {
        return "-/s".to_owned();
    }
    if per_second < 10.0 {
        return format!("{per_second:.1}/s");
    }
    let digits = format!("{:.0}", per_second);
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped}/s")
}

/// `count` and `noun`, with the noun's plural unless the count is one
/// (`1 job`, `2 jobs`).
pub(super) fn count_of(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// Loads the scenario at `path`, reporting why it cannot.
pub(super) fn load_or_report(path: &Path) -> Result<Scenario, ExitCode> {
    load(path).map_err(|e: LoadError| bad_input(e))
}

/// Prints what is legal in `scenario` but probably not meant.
pub(super) fn warn(origin: &str, scenario: &Scenario) {
    for w in scenario.warnings() {
        eprintln!("warning: {origin}: `{}`: {}", w.key, w.message);
    }
}

/// Quotes a path for the replay command line when it needs it.
pub(super) fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A `--jobs` flag: 1 to [`fenced_sim::explore::MAX_JOBS`] worker threads.
pub(super) fn parse_jobs(text: &str) -> Result<usize, JobsError> {
    let max = fenced_sim::explore::MAX_JOBS;
    let jobs: usize = text
        .trim()
        .parse()
        .map_err(|_| JobsError::NotANumber(text.to_string()))?;
    if jobs == 0 {
        return Err(JobsError::Zero);
    }
    if jobs > max {
        return Err(JobsError::TooMany(jobs));
    }
    Ok(jobs)
}

/// Why a `--jobs` value is refused (clap prints it after the value).
#[derive(Debug)]
pub(super) enum JobsError {
    /// Not a whole number: the text as given.
    NotANumber(String),
    /// `--jobs 0`.
    Zero,
    /// Over [`fenced_sim::explore::MAX_JOBS`].
    TooMany(usize),
}

impl std::fmt::Display for JobsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = fenced_sim::explore::MAX_JOBS;
        match self {
            JobsError::NotANumber(text) => {
                write!(
                    f,
                    "`{text}` is not a number of threads; use --jobs 1 to {max}"
                )
            }
            JobsError::Zero => write!(f, "--jobs must be at least 1 (and at most {max})"),
            JobsError::TooMany(jobs) => write!(
                f,
                "--jobs must be at most {max}, not {jobs} (runs are CPU-bound: more threads than \
                 cores only cost memory)"
            ),
        }
    }
}

impl std::error::Error for JobsError {}

/// Writes one line to standard output; `false` once the reader has gone (a
/// closed pipe, as in `| head`): stop printing, never panic.
pub(super) fn say(out: &mut impl std::io::Write, line: std::fmt::Arguments<'_>) -> bool {
    writeln!(out, "{line}").is_ok()
}

/// A duration flag: `30s`, `1m 30s`, `250ms` (never negative), read by the
/// crate's one duration parser.
pub(super) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    fenced_sim::units::parse_duration(text)
}

/// The lock design an exploration runs (`explore`, `replay`, `shrink`).
#[derive(clap::Args, Debug, Default)]
pub(super) struct ProtocolArg {
    /// Explore another lock design on the base (unfenced, on the design's
    /// own timescale): connection-lock, client-go, etcd, redlock, zookeeper,
    /// dynamodb (or fenced, the default).
    #[arg(long, value_name = "DESIGN")]
    protocol: Option<String>,
}

impl ProtocolArg {
    /// `base` running the design asked for, and the flag as replay
    /// commands repeat it (empty without one).
    pub(super) fn apply(
        &self,
        base: fenced_sim::Scenario,
    ) -> Result<(fenced_sim::Scenario, String), ExitCode> {
        let Some(name) = &self.protocol else {
            return Ok((base, String::new()));
        };
        let spec = fenced_sim::ProtocolSpec::by_name(name).ok_or_else(|| {
            bad_input(format!(
                "--protocol `{name}` is not a design; known: {}",
                fenced_sim::ProtocolSpec::NAMES.join(", ")
            ))
        })?;
        Ok((
            fenced_sim::explore::for_protocol(&base, &spec),
            format!(" --protocol {name}"),
        ))
    }
}

/// Options of each run besides the scenario: the event budget and, with the
/// `planted-bugs` feature, a deliberate bug (negative controls).
#[derive(clap::Args, Debug, Default)]
pub(super) struct PlantArg {
    /// Plant a deliberate bug in the state machines (negative controls).
    #[cfg(feature = "planted-bugs")]
    #[arg(long, value_name = "BUG")]
    plant: Option<String>,
    /// The most events one run may handle (default 250 000 000, at most
    /// 4 294 967 295): a run that would need more is refused, or stops with
    /// exit 2, instead of running for ever.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=fenced_sim::limits::MAX_EVENTS_LIMIT))]
    max_events: Option<u64>,
}

impl PlantArg {
    /// Applies the flags to `options`; returns them as they must be repeated
    /// in replay commands.
    pub(super) fn apply(&self, options: &mut RunOptions) -> Result<String, ExitCode> {
        let mut flags = String::new();
        if let Some(n) = self.max_events {
            options.max_events = Some(n);
            flags.push_str(&format!(" --max-events {n}"));
        }
        #[cfg(feature = "planted-bugs")]
        if let Some(name) = &self.plant {
            match name.parse::<fenced::PlantedBug>() {
                Ok(bug) if bug.only_in_driver() => {
                    return Err(bad_input(format!(
                        "--plant {}: a bug of the tokio driver, which the simulator does not run \
                         (it feeds the pure machines their `now`); plant it in real processes \
                         with `fenced-lab run --plant {}`",
                        bug.name(),
                        bug.name()
                    )))
                }
                Ok(bug) => {
                    options.planted_bug = Some(bug);
                    flags.push_str(&format!(" --plant {}", bug.name()));
                }
                Err(e) => return Err(bad_input(e)),
            }
        }
        Ok(flags)
    }
}

/// The timeline picture of one run.
#[derive(clap::Args, Debug, Default)]
pub(super) struct SvgArgs {
    /// Draw the run as an SVG timeline (belief vs lease per node, faults,
    /// writes, grants, membership) to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Start the picture at this time into the run (e.g. `40s`, `1m 30s`).
    /// Default: the start, or an automatic window for runs over 5 minutes.
    #[arg(long, value_name = "DURATION", requires = "svg", value_parser = parse_duration)]
    from: Option<Duration>,
    /// End the picture at this time into the run (default: the end).
    #[arg(long, value_name = "DURATION", requires = "svg", value_parser = parse_duration)]
    to: Option<Duration>,
}

impl SvgArgs {
    /// Whether a picture is asked for.
    pub(super) fn is_asked(&self) -> bool {
        self.svg.is_some()
    }

    /// The file and window, checked against a run of `duration`.
    pub(super) fn picture(&self, duration: Duration) -> Result<Option<(&Path, Window)>, ExitCode> {
        let Some(path) = self.svg.as_deref() else {
            return Ok(None);
        };
        let window = Window {
            from: self.from,
            to: self.to,
        };
        window.check(duration).map_err(bad_input)?;
        Ok(Some((path, window)))
    }
}

#[cfg(test)]
mod tests {
    use super::{count_of, rate};

    #[test]
    fn rates_read_as_a_person_reads_them() {
        assert_eq!(rate(1_576.509), "1,577/s");
        assert_eq!(rate(1_234_567.0), "1,234,567/s");
        assert_eq!(rate(999.4), "999/s");
        assert_eq!(rate(12.0), "12/s");
        assert_eq!(rate(0.42), "0.4/s");
        assert_eq!(rate(f64::NAN), "-/s");
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count_of(1, "job"), "1 job");
        assert_eq!(count_of(2, "job"), "2 jobs");
        assert_eq!(count_of(0, "failure"), "0 failures");
    }
}
