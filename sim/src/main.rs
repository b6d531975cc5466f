//! `fenced-sim`: run scenarios, validate and list them, explore random fault
//! schedules, replay and shrink what exploration finds.
//!
//! Exit codes (a contract scripts rely on): 0 — no violation and every
//! expectation met; 1 — a violation or an unmet expectation; 2 — bad input
//! (a malformed scenario, a missing file, an unwritable output, bad flags).
//!
//! Limits: a scenario file is a regular file of at most 1 MiB
//! ([`fenced_sim::file::MAX_SCENARIO_FILE_BYTES`]); `--jobs` is 1 to 256;
//! `explore` and `sweep` stream, holding a window of results (not all of
//! them); a sweep's fault mix may expect at most 1,000,000 faults per run.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use fenced_sim::file::{load, LoadError};
use fenced_sim::svg::Window;
use fenced_sim::{summary, RunOptions, Scenario, Simulation};

const EXIT_FAIL: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "fenced-sim",
    version,
    about = "Deterministic simulation of fenced leader election: reproduce split-brain from a seed, \
             or prove fencing rejects the stale write.",
    after_help = "Exit codes: 0 pass, 1 violation or unmet expectation, 2 bad input.\n\
                  Scenario files are regular files of at most 1 MiB.\n\n\
                  Example:\n  fenced-sim run scenarios/gc-pause-unfenced.toml"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario and report what happened.
    #[command(
        after_help = "Examples:\n  fenced-sim run scenarios/gc-pause-fenced.toml\n  \
                            fenced-sim run scenarios/gc-pause-unfenced.toml --seed 7 --json\n  \
                            fenced-sim run scenarios/steady-state.toml --trace run.trace"
    )]
    Run(RunArgs),
    /// Validate scenario files without running them.
    #[command(after_help = "Example:\n  fenced-sim check scenarios/*.toml")]
    Check {
        /// Scenario files to validate.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
    },
    /// List the scenarios of a directory with their one-line descriptions.
    #[command(after_help = "Example:\n  fenced-sim list scenarios")]
    List {
        /// The directory to list (default: `scenarios`).
        #[arg(default_value = "scenarios")]
        dir: PathBuf,
    },
    /// Swarm testing: each seed draws its own fault schedule on top of the
    /// scenario (or the default five-node fleet), then heals everything and
    /// checks that one leader emerges. Reports every failing seed with the
    /// command that replays it.
    #[command(
        after_help = "Examples:\n  fenced-sim explore --seeds 10000 --jobs 2\n  \
                            fenced-sim explore scenarios/fleet-election.toml --seeds 1000000 --shard 3/64 --json > shard-3.jsonl\n\n\
                            Exit codes: 0 no seed failed, 1 some seed failed, 2 bad input."
    )]
    Explore(ExploreArgs),
    /// Re-run one explored seed exactly as `explore` ran it, with the full
    /// summary (and optionally its trace, or the schedule saved as a scenario).
    #[command(
        after_help = "Example:\n  fenced-sim replay --seed 1234 --trace seed-1234.trace --save seed-1234.toml"
    )]
    Replay(ReplayArgs),
    /// Shrink a failing explored seed to the smallest schedule that still
    /// breaks the same invariant, written as a standalone scenario file.
    #[command(
        after_help = "Example:\n  fenced-sim shrink --seed 1234 -o shrunk.toml && fenced-sim run shrunk.toml"
    )]
    Shrink(ShrinkArgs),
    /// The TTL trade-off, measured: run a grid of lease settings (or, with
    /// --membership, of heartbeat settings) over many seeds of one fault mix
    /// and report failover gaps, leader changes, leaderless time and fenced
    /// writes per cell, as CSV (default), JSON and an SVG chart.
    #[command(
        after_help = "Examples:\n  fenced-sim sweep --svg ttl-sweep.svg > ttl-sweep.csv\n  \
                            fenced-sim sweep --ttls 5s,30s --renew-ratios 0.3,0.6 --seeds 8 --json\n  \
                            fenced-sim sweep --membership --svg membership.svg\n\n\
                            Every cell runs the same seeds: each seed's faults depend on the seed alone.\n\
                            Latency spikes are short stalls of the lease store.\n\
                            Exit codes: 0 done, 1 some run broke an invariant, 2 bad input."
    )]
    Sweep(Box<SweepArgs>),
}

#[derive(clap::Args, Debug)]
struct SweepArgs {
    /// Sweep the membership settings (liveness TTL × heartbeat interval)
    /// instead of the election's.
    #[arg(long)]
    membership: bool,
    /// Seeds per cell.
    #[arg(long, default_value_t = 32)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Worker threads, 1 to 256 (the output is identical whatever this
    /// is). Default: every core, at most 256.
    #[arg(long, value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Lease TTLs (election grid columns).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "2s,5s,10s,30s,60s")]
    ttls: Vec<Duration>,
    /// renew_interval / lease_ttl (election grid rows).
    #[arg(long, value_delimiter = ',', default_value = "0.2,0.4,0.6,0.8")]
    renew_ratios: Vec<f64>,
    /// safety_margin / lease_ttl (one block of the chart each).
    #[arg(long, value_delimiter = ',', default_value = "0.1")]
    margin_ratios: Vec<f64>,
    /// retry_interval / lease_ttl.
    #[arg(long, default_value_t = 0.1)]
    retry_ratio: f64,
    /// Liveness TTLs (membership grid columns).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "2s,5s,10s,30s")]
    liveness_ttls: Vec<Duration>,
    /// Heartbeat intervals (membership grid rows).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "500ms,1s,2s,5s")]
    heartbeats: Vec<Duration>,
    /// Nodes in the cluster.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Virtual time per run.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    duration: Duration,
    /// Mean interval between GC pauses of each node, or `off`.
    #[arg(long, value_parser = parse_every, default_value = "10m")]
    pause_every: Every,
    /// Pause lengths: `log:LOW..HIGH` (log-uniform), `uniform:LOW..HIGH`, or
    /// one duration.
    #[arg(long, value_parser = fenced_sim::sweep::Lengths::parse, default_value = "log:100ms..60s")]
    pause_length: fenced_sim::sweep::Lengths,
    /// Mean interval between crashes of each node, or `off`.
    #[arg(long, value_parser = parse_every, default_value = "30m")]
    crash_every: Every,
    /// How long a crashed node stays down.
    #[arg(long, value_parser = fenced_sim::sweep::Lengths::parse, default_value = "uniform:10s..60s")]
    restart_after: fenced_sim::sweep::Lengths,
    /// Mean interval between latency spikes (lease-store stalls), or `off`.
    #[arg(long, value_parser = parse_every, default_value = "10m")]
    spike_every: Every,
    /// Spike lengths.
    #[arg(long, value_parser = fenced_sim::sweep::Lengths::parse, default_value = "log:100ms..10s")]
    spike_length: fenced_sim::sweep::Lengths,
    /// Probability that a message is lost.
    #[arg(long, default_value_t = 0.01)]
    loss: f64,
    /// Write the CSV to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Print one JSON object to standard output (instead of the CSV).
    #[arg(long)]
    json: bool,
    /// Draw the chart (heat maps and the trade-off) to this SVG file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// A mean interval, or `off`.
#[derive(Clone, Copy, Debug)]
struct Every(Option<Duration>);

fn parse_every(text: &str) -> Result<Every, String> {
    match text.trim() {
        "off" | "none" | "never" => Ok(Every(None)),
        other => parse_duration(other).map(|d| Every(Some(d))),
    }
}

/// Options of each run besides the scenario: the event budget and, with the
/// `planted-bugs` feature, a deliberate bug (negative controls).
#[derive(clap::Args, Debug, Default)]
struct PlantArg {
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
    fn apply(&self, options: &mut RunOptions) -> Result<String, ExitCode> {
        let mut flags = String::new();
        if let Some(n) = self.max_events {
            options.max_events = Some(n);
            flags.push_str(&format!(" --max-events {n}"));
        }
        #[cfg(feature = "planted-bugs")]
        if let Some(name) = &self.plant {
            match name.parse::<fenced::PlantedBug>() {
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

#[derive(clap::Args, Debug)]
struct ExploreArgs {
    /// The base scenario (default: five nodes, ten minutes, default timings).
    scenario: Option<PathBuf>,
    /// How many seeds (over all shards).
    #[arg(long)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Worker threads, 1 to 256 (the output is identical whatever this is).
    #[arg(long, default_value_t = 1, value_parser = parse_jobs)]
    jobs: usize,
    /// Run only shard I of N (every N-th seed, starting with the I-th; I from 0).
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Print one JSON object per seed (JSON lines), for merging shards.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    plant: PlantArg,
}

#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// The base scenario explored (default: the default fleet).
    scenario: Option<PathBuf>,
    /// The explored seed.
    #[arg(long)]
    seed: u64,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Write the full event trace to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Save the seed's schedule as a standalone scenario file.
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    #[command(flatten)]
    svg: SvgArgs,
    #[command(flatten)]
    plant: PlantArg,
}

#[derive(clap::Args, Debug)]
struct ShrinkArgs {
    /// The base scenario explored (default: the default fleet).
    scenario: Option<PathBuf>,
    /// The failing explored seed.
    #[arg(long)]
    seed: u64,
    /// Where to write the shrunk scenario (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// At most this many simulation runs while shrinking (at least 3; the
    /// last one reruns the result, so what is reported is what the written
    /// file does).
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(3..))]
    budget: u64,
    #[command(flatten)]
    plant: PlantArg,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Write the full event trace (one line per event) to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    svg: SvgArgs,
    #[command(flatten)]
    plant: PlantArg,
}

/// The timeline picture of one run.
#[derive(clap::Args, Debug, Default)]
struct SvgArgs {
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
    /// The file and window, checked against a run of `duration`.
    fn picture(&self, duration: Duration) -> Result<Option<(&Path, Window)>, ExitCode> {
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

/// A `--jobs` flag: 1 to [`fenced_sim::explore::MAX_JOBS`] worker threads.
fn parse_jobs(text: &str) -> Result<usize, String> {
    let max = fenced_sim::explore::MAX_JOBS;
    let jobs: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of threads; use --jobs 1 to {max}"))?;
    if jobs == 0 {
        return Err(format!("--jobs must be at least 1 (and at most {max})"));
    }
    if jobs > max {
        return Err(format!(
            "--jobs must be at most {max}, not {jobs} (runs are CPU-bound: more threads than \
             cores only cost memory)"
        ));
    }
    Ok(jobs)
}

/// A duration flag: `30s`, `1m 30s`, `250ms` (never negative).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!(
            "`{text}` is negative; use a duration such as 30s or 1m30s"
        ));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); use e.g. 30s, 1m30s or 250ms"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(&args),
        Command::Check { scenarios } => check(&scenarios),
        Command::List { dir } => list(&dir),
        Command::Explore(args) => explore(&args),
        Command::Replay(args) => replay(&args),
        Command::Shrink(args) => shrink(&args),
        Command::Sweep(args) => sweep(&args),
    }
}

/// The wall clock, read only for the elapsed time and rate shown on standard
/// error; no result or report ever depends on it.
#[allow(clippy::disallowed_methods)] // Progress display only: never reaches an output that must be deterministic.
fn stopwatch() -> std::time::Instant {
    std::time::Instant::now()
}

fn bad_input(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_BAD_INPUT)
}

fn load_or_report(path: &Path) -> Result<Scenario, ExitCode> {
    load(path).map_err(|e: LoadError| bad_input(e))
}

/// Quotes a path for the replay command line when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let scenario = match load_or_report(&args.scenario) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut options = RunOptions::with_seed(args.seed);
    let plant_flag = match args.plant.apply(&mut options) {
        Ok(flag) => flag,
        Err(code) => return code,
    };
    let replay = |seed: u64| {
        format!(
            "fenced-sim run {} --seed {seed}{plant_flag}",
            shell_word(&args.scenario.display().to_string())
        )
    };
    let origin = args.scenario.display().to_string();
    let picture = match args.svg.picture(scenario.duration) {
        Ok(p) => p,
        Err(code) => return code,
    };
    execute(
        &scenario,
        options,
        &origin,
        Outputs {
            trace: args.trace.as_deref(),
            json: args.json,
            picture,
        },
        &replay,
    )
}

/// What a run writes besides its summary.
struct Outputs<'a> {
    /// The full event trace.
    trace: Option<&'a Path>,
    /// JSON instead of the human summary.
    json: bool,
    /// The SVG timeline and its window.
    picture: Option<(&'a Path, Window)>,
}

/// Runs `scenario` and prints its summary (or JSON); the exit code says
/// whether it passed.
fn execute(
    scenario: &Scenario,
    options: RunOptions,
    origin: &str,
    outputs: Outputs<'_>,
    replay: &dyn Fn(u64) -> String,
) -> ExitCode {
    let Outputs {
        trace,
        json,
        picture,
    } = outputs;
    let mut sim = match Simulation::new(scenario, options) {
        Ok(sim) => sim,
        Err(e) => return bad_input(format!("{origin}: {e}")),
    };
    warn(origin, scenario);
    if picture.is_some() {
        sim.record_timeline();
    }
    if let Some(path) = trace {
        match File::create(path) {
            Ok(file) => sim.set_trace_writer(Box::new(BufWriter::new(file))),
            Err(e) => {
                return bad_input(format!("cannot write the trace to {}: {e}", path.display()))
            }
        }
    }
    sim.run_to_end();
    if let Err(e) = sim.finish_trace() {
        return bad_input(format!("writing the trace failed: {e}"));
    }
    if let Some(halt) = sim.halted() {
        return bad_input(format!("{origin}: {halt}"));
    }
    let report = sim.report();
    let replay = replay(report.seed);
    if let (Some((path, window)), Some(timeline)) = (picture, sim.timeline()) {
        let svg = fenced_sim::svg::render_timeline(scenario, &report, &timeline, &replay, window);
        if let Err(e) = std::fs::write(path, svg) {
            return bad_input(format!(
                "cannot write the picture to {}: {e}",
                path.display()
            ));
        }
    }
    let mut out = std::io::stdout().lock();
    let written = if json {
        match serde_json::to_string(&report) {
            Ok(json) => writeln!(out, "{json}"),
            Err(e) => return bad_input(format!("cannot encode the report: {e}")),
        }
    } else {
        write!(out, "{}", summary::render(scenario, &report, &replay))
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return bad_input(format!("cannot write the report: {e}"));
        }
    }
    if report.expect.met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAIL)
    }
}

/// Prints what is legal in `scenario` but probably not meant.
fn warn(origin: &str, scenario: &Scenario) {
    for w in scenario.warnings() {
        eprintln!("warning: {origin}: `{}`: {}", w.key, w.message);
    }
}

fn check(paths: &[PathBuf]) -> ExitCode {
    let mut bad = 0;
    for path in paths {
        match load(path) {
            Ok(s) => {
                println!("ok    {}  ({})", path.display(), s.name);
                warn(&path.display().to_string(), &s);
            }
            Err(e) => {
                bad += 1;
                eprintln!("error: {e}");
            }
        }
    }
    if bad > 0 {
        eprintln!("{bad} of {} scenario files are invalid", paths.len());
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}

fn list(dir: &Path) -> ExitCode {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return bad_input(format!("cannot list {}: {e}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return bad_input(format!("no scenario files (*.toml) in {}", dir.display()));
    }
    let mut bad = 0;
    let width = paths
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.len()))
        .max()
        .unwrap_or(0);
    for path in &paths {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default();
        match load(path) {
            Ok(s) => {
                let line = s
                    .description
                    .as_deref()
                    .map(|d| summary::first_sentence_within(d, 160))
                    .unwrap_or_else(|| "(no description)".to_string());
                println!("{stem:<width$}  {line}");
            }
            Err(e) => {
                bad += 1;
                println!("{stem:<width$}  INVALID: {e}");
            }
        }
    }
    if bad > 0 {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}

/// What `explore`, `replay` and `shrink` share: the validated base, how it
/// is named on a command line, and the run options with any planted bug.
struct Exploring {
    base: Scenario,
    base_arg: String,
    options: RunOptions,
    plant_flag: String,
}

impl Exploring {
    fn set_up(path: Option<&Path>, plant: &PlantArg) -> Result<Self, ExitCode> {
        let (base, base_arg) = explore_base(path)?;
        base.validate().map_err(bad_input)?;
        // A base that validates may still be unable to host the schedules
        // drawn on it (its runs plus their liveness phase would be too
        // long): bad input, found before any seed runs.
        fenced_sim::explore::check_base(&base).map_err(|e| {
            let origin = path.map_or_else(
                || "the default base".to_string(),
                |p| p.display().to_string(),
            );
            bad_input(format!("{origin}: {e}"))
        })?;
        let mut options = RunOptions::default();
        let plant_flag = plant.apply(&mut options)?;
        Ok(Exploring {
            base,
            base_arg,
            options,
            plant_flag,
        })
    }
}

/// The base of an exploration: the scenario given, or the default fleet.
fn explore_base(path: Option<&Path>) -> Result<(Scenario, String), ExitCode> {
    match path {
        Some(path) => Ok((
            load_or_report(path)?,
            format!("{} ", shell_word(&path.display().to_string())),
        )),
        None => Ok((fenced_sim::explore::default_base(), String::new())),
    }
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| format!("--shard `{text}` must be I/N, e.g. 3/64"))?;
    let i: u64 = i
        .trim()
        .parse()
        .map_err(|_| format!("--shard `{text}`: `{i}` is not a number"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard `{text}`: `{n}` is not a number"))?;
    if n == 0 || i >= n {
        return Err(format!(
            "--shard `{text}`: I must be in 0..N and N at least 1"
        ));
    }
    Ok((i, n))
}

fn explore(args: &ExploreArgs) -> ExitCode {
    use fenced_sim::explore::{stream_campaign, CampaignSummary, SeedRange, StreamError};
    use std::io::IsTerminal;
    let Exploring {
        base,
        base_arg,
        options,
        plant_flag,
    } = match Exploring::set_up(args.scenario.as_deref(), &args.plant) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let (shard, shards) = match args.shard.as_deref().map(parse_shard).transpose() {
        Ok(s) => s.unwrap_or((0, 1)),
        Err(e) => return bad_input(e),
    };
    if args.seeds == 0 {
        return bad_input("--seeds must be at least 1");
    }
    let range = SeedRange {
        start: args.start,
        count: args.seeds,
        shard,
        shards,
    };
    if let Err(e) = range.check() {
        return bad_input(e);
    }
    let total = range.len();
    if total == 0 {
        return bad_input(format!(
            "--shard {shard}/{shards} of --seeds {} runs no seed: use at most {} shards",
            args.seeds, args.seeds
        ));
    }
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let replay = |seed: u64| format!("fenced-sim replay {base_arg}--seed {seed}{plant_flag}");
    let shrink = |seed: u64| {
        format!("fenced-sim shrink {base_arg}--seed {seed}{plant_flag} -o seed-{seed}.toml")
    };
    // Each outcome is printed (JSON: every seed; text: the failures) and
    // forgotten as soon as the seeds before it are done: memory holds the
    // totals and a window of outcomes, whatever the number of seeds.
    let mut summary = CampaignSummary::default();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write = |o: &fenced_sim::explore::SeedOutcome| -> std::io::Result<()> {
        if args.json {
            let mut value = serde_json::to_value(o).map_err(std::io::Error::other)?;
            if let Some(map) = value.as_object_mut() {
                map.insert("replay".to_string(), replay(o.seed).into());
            }
            return writeln!(out, "{value}");
        }
        if o.ok {
            return Ok(());
        }
        let at = o
            .at_ms
            .map(|ms| format!(" at {}.{:03}s", ms / 1000, ms % 1000))
            .unwrap_or_default();
        writeln!(
            out,
            "seed {}: {}{at}: {}\n  mix: {}\n  replay: {}\n  shrink: {}",
            o.seed,
            o.invariant.as_deref().unwrap_or("?"),
            o.detail.as_deref().unwrap_or(""),
            o.mix.join(", "),
            replay(o.seed),
            shrink(o.seed)
        )?;
        // Failures are rare and worth seeing at once.
        out.flush()
    };
    let started = stopwatch();
    let streamed = stream_campaign(
        &base,
        range,
        args.jobs,
        &options,
        &|| bar.inc(1),
        &mut |o| {
            summary.add(&o);
            write(&o)
        },
    );
    let written = streamed.and_then(|()| out.flush().map_err(StreamError::Sink));
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    let mut stopped_early = false;
    match written {
        Ok(()) => {}
        Err(StreamError::Spawn(e)) => return bad_input(e),
        Err(StreamError::Sink(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            // The reader has gone (`| head`): no point running on.
            stopped_early = true;
        }
        Err(StreamError::Sink(e)) => return bad_input(format!("cannot write the results: {e}")),
    }
    let never = summary.never_exercised();
    let c = &summary.seeds_covering;
    eprintln!(
        "{} seeds{} in {:.2}s ({:.0} seeds/s, {} jobs): {} failed{}; {} run twice for determinism",
        summary.seeds,
        if shards > 1 {
            format!(" (shard {shard}/{shards})")
        } else {
            String::new()
        },
        elapsed.as_secs_f64(),
        summary.seeds as f64 / elapsed.as_secs_f64().max(1e-9),
        args.jobs,
        summary.failed,
        if summary.failures_by_invariant.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                summary
                    .failures_by_invariant
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        summary.determinism_checked
    );
    if stopped_early {
        eprintln!(
            "standard output was closed: stopped after {} of {total} seeds",
            summary.seeds
        );
    }
    eprintln!(
        "coverage (seeds where it happened): stale write rejected {}, takeover during a pause {}, \
         step-down on the local deadline {}, renewal lost {}, zombie incarnation fenced {}",
        c.stale_write_rejected,
        c.takeover_during_pause,
        c.step_down_on_deadline,
        c.renewal_lost,
        c.zombie_fenced
    );
    if !never.is_empty() && summary.seeds >= 100 {
        eprintln!("warning: never exercised: {}", never.join(", "));
    }
    if summary.failed > 0 {
        ExitCode::from(EXIT_FAIL)
    } else {
        ExitCode::SUCCESS
    }
}

fn replay(args: &ReplayArgs) -> ExitCode {
    let Exploring {
        base,
        base_arg,
        options,
        plant_flag,
    } = match Exploring::set_up(args.scenario.as_deref(), &args.plant) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let (scenario, _) = fenced_sim::explore::generate(&base, args.seed);
    let picture = match args.svg.picture(scenario.duration) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if let Some(path) = &args.save {
        if let Err(e) = std::fs::write(path, fenced_sim::to_toml::to_toml(&scenario)) {
            return bad_input(format!("cannot write {}: {e}", path.display()));
        }
    }
    let replay = |seed: u64| format!("fenced-sim replay {base_arg}--seed {seed}{plant_flag}");
    execute(
        &scenario,
        options,
        &scenario.name.clone(),
        Outputs {
            trace: args.trace.as_deref(),
            json: args.json,
            picture,
        },
        &replay,
    )
}

fn shrink(args: &ShrinkArgs) -> ExitCode {
    let Exploring {
        base,
        base_arg,
        options,
        plant_flag,
    } = match Exploring::set_up(args.scenario.as_deref(), &args.plant) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let (scenario, _) = fenced_sim::explore::generate(&base, args.seed);
    let shrunk = match fenced_sim::shrink::shrink(&scenario, &options, args.budget) {
        Ok(shrunk) => shrunk,
        Err(fenced_sim::shrink::ShrinkError::Passes) => {
            eprintln!("seed {} passes: nothing to shrink", args.seed);
            return ExitCode::SUCCESS;
        }
        Err(e @ fenced_sim::shrink::ShrinkError::NotReproduced { .. }) => {
            eprintln!("error: seed {}: {e}", args.seed);
            return ExitCode::from(EXIT_FAIL);
        }
        Err(e) => return bad_input(e),
    };
    let exhausted = if shrunk.budget_exhausted {
        format!(
            " (the budget of {} runs ran out: it may shrink further with a larger --budget)",
            args.budget
        )
    } else {
        String::new()
    };
    let header = format!(
        "# Shrunk by: fenced-sim shrink {base_arg}--seed {}{plant_flag}\n\
         # {} faults -> {} in {} runs{exhausted}. Reproduce: fenced-sim run <this file>{plant_flag}\n",
        args.seed, shrunk.faults_before, shrunk.faults_after, shrunk.runs
    );
    let text = format!("{header}{}", fenced_sim::to_toml::to_toml(&shrunk.scenario));
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                return bad_input(format!("cannot write {}: {e}", path.display()));
            }
        }
        None => print!("{text}"),
    }
    eprintln!(
        "seed {}: `{}` at {}.{:03}s: {}\nshrunk from {} to {} faults in {} runs{exhausted}{}",
        args.seed,
        shrunk.invariant,
        shrunk.violation.at_ms / 1000,
        shrunk.violation.at_ms % 1000,
        shrunk.violation.detail,
        shrunk.faults_before,
        shrunk.faults_after,
        shrunk.runs,
        args.output
            .as_ref()
            .map(|p| format!("; written to {}", p.display()))
            .unwrap_or_default()
    );
    ExitCode::SUCCESS
}

fn sweep(args: &SweepArgs) -> ExitCode {
    use fenced_sim::sweep::{
        run_election, run_membership, ElectionGrid, FaultMix, MembershipGrid, Seeds, SweepResults,
    };
    use std::io::IsTerminal;
    let mix = FaultMix {
        nodes: args.nodes,
        duration: args.duration,
        pause_every: args.pause_every.0,
        pause_length: args.pause_length,
        crash_every: args.crash_every.0,
        restart_after: args.restart_after,
        spike_every: args.spike_every.0,
        spike_length: args.spike_length,
        loss: args.loss,
    };
    if let Err(e) = mix.validate() {
        return bad_input(e);
    }
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(fenced_sim::explore::MAX_JOBS)
    });
    let seeds = Seeds {
        start: args.start,
        count: args.seeds,
    };
    if let Err(e) = seeds.check() {
        return bad_input(e);
    }
    let election = ElectionGrid {
        ttls: args.ttls.clone(),
        renew_ratios: args.renew_ratios.clone(),
        margin_ratios: args.margin_ratios.clone(),
        retry_ratio: args.retry_ratio,
    };
    let membership = MembershipGrid {
        liveness_ttls: args.liveness_ttls.clone(),
        heartbeats: args.heartbeats.clone(),
    };
    let grid_check = if args.membership {
        membership.validate()
    } else {
        election.validate()
    };
    if let Err(e) = grid_check {
        return bad_input(e);
    }
    let cells = if args.membership {
        membership.cells().len()
    } else {
        election.cells().len()
    } as u64;
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(cells.saturating_mul(args.seeds));
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs  eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let started = stopwatch();
    let command = sweep_command(args);
    let result: Result<Box<dyn SweepResults>, String> = if args.membership {
        run_membership(&mix, &membership, seeds, jobs, &|| bar.inc(1))
            .map(|s| Box::new(s) as Box<dyn SweepResults>)
    } else {
        run_election(&mix, &election, seeds, jobs, &|| bar.inc(1))
            .map(|s| Box::new(s) as Box<dyn SweepResults>)
    };
    let sweep = match result {
        Ok(sweep) => sweep,
        Err(e) => return bad_input(e),
    };
    bar.finish_and_clear();
    for s in sweep.skipped() {
        eprintln!("skipped {}: {}", s.cell, s.reason);
    }
    if let Some(path) = &args.svg {
        if let Err(e) = std::fs::write(path, sweep.to_svg(&command)) {
            return bad_input(format!("cannot write the chart to {}: {e}", path.display()));
        }
    }
    let csv = sweep.to_csv();
    if let Some(path) = &args.csv {
        if let Err(e) = std::fs::write(path, &csv) {
            return bad_input(format!("cannot write the CSV to {}: {e}", path.display()));
        }
    }
    let text = if args.json {
        Some(format!("{}\n", sweep.to_json()))
    } else if args.csv.is_none() {
        Some(csv)
    } else {
        None
    };
    if let Some(text) = text {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                return bad_input(format!("cannot write the results: {e}"));
            }
        }
    }
    let runs = sweep.runs();
    eprintln!(
        "{runs} runs ({} cells × {} seeds × {} each) in {:.1}s with {jobs} jobs",
        runs / args.seeds.max(1),
        args.seeds,
        humantime::format_duration(args.duration),
        started.elapsed().as_secs_f64()
    );
    let violations = sweep.violations();
    if violations > 0 {
        eprintln!("{violations} invariant violations: replay a cell's seed with `fenced-sim run` on its scenario");
        ExitCode::from(EXIT_FAIL)
    } else {
        ExitCode::SUCCESS
    }
}

/// The command line that reproduces a sweep, for the chart's title.
fn sweep_command(args: &SweepArgs) -> String {
    let list = |v: &[Duration]| {
        v.iter()
            .map(|d| humantime::format_duration(*d).to_string().replace(' ', ""))
            .collect::<Vec<_>>()
            .join(",")
    };
    let ratios = |v: &[f64]| v.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
    let mut cmd = String::from("fenced-sim sweep");
    if args.membership {
        cmd.push_str(&format!(
            " --membership --liveness-ttls {} --heartbeats {}",
            list(&args.liveness_ttls),
            list(&args.heartbeats)
        ));
    } else {
        cmd.push_str(&format!(
            " --ttls {} --renew-ratios {}",
            list(&args.ttls),
            ratios(&args.renew_ratios)
        ));
        if args.margin_ratios != [0.1] {
            cmd.push_str(&format!(" --margin-ratios {}", ratios(&args.margin_ratios)));
        }
    }
    cmd.push_str(&format!(" --seeds {}", args.seeds));
    if args.start != 0 {
        cmd.push_str(&format!(" --start {}", args.start));
    }
    cmd
}
