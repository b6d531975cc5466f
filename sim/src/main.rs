//! `fenced-sim`: run scenarios, validate and list them.
//!
//! Exit codes (a contract scripts rely on): 0 — no violation and every
//! expectation met; 1 — a violation or an unmet expectation; 2 — bad input
//! (a malformed scenario, a missing file, an unwritable output, bad flags).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use fenced_sim::file::{load, LoadError};
use fenced_sim::{summary, RunOptions, Scenario, Simulation};

const EXIT_FAIL: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "fenced-sim",
    version,
    about = "Deterministic simulation of fenced leader election: reproduce split-brain from a seed, \
             or prove fencing rejects the stale write.",
    after_help = "Exit codes: 0 pass, 1 violation or unmet expectation, 2 bad input.\n\n\
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
    /// Plant a deliberate bug (negative controls; see `--plant help`).
    #[cfg(feature = "planted-bugs")]
    #[arg(long, value_name = "BUG")]
    plant: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(&args),
        Command::Check { scenarios } => check(&scenarios),
        Command::List { dir } => list(&dir),
    }
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
    #[allow(unused_mut)]
    let mut options = RunOptions {
        seed: args.seed,
        ..RunOptions::default()
    };
    #[allow(unused_mut)]
    let mut plant_flag = String::new();
    #[cfg(feature = "planted-bugs")]
    if let Some(name) = &args.plant {
        match name.parse::<fenced::PlantedBug>() {
            Ok(bug) => {
                options.planted_bug = Some(bug);
                plant_flag = format!(" --plant {}", bug.name());
            }
            Err(e) => return bad_input(e),
        }
    }
    let mut sim = match Simulation::new(&scenario, options) {
        Ok(sim) => sim,
        Err(e) => return bad_input(format!("{}: {e}", args.scenario.display())),
    };
    if let Some(path) = &args.trace {
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
    let report = sim.report();
    let replay = format!(
        "fenced-sim run {} --seed {}{plant_flag}",
        shell_word(&args.scenario.display().to_string()),
        report.seed
    );
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        match serde_json::to_string(&report) {
            Ok(json) => writeln!(out, "{json}"),
            Err(e) => return bad_input(format!("cannot encode the report: {e}")),
        }
    } else {
        write!(out, "{}", summary::render(&scenario, &report, &replay))
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

fn check(paths: &[PathBuf]) -> ExitCode {
    let mut bad = 0;
    for path in paths {
        match load(path) {
            Ok(s) => println!("ok    {}  ({})", path.display(), s.name),
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
                    .and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
                    .unwrap_or("(no description)");
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
