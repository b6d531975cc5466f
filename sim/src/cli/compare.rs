//! `fenced-sim compare`: the lock designs under the same faults. The flags
//! choose the rows (the built-in scenarios of [`fenced_sim::compare`], or
//! scenario files), the designs and the seeds; the library runs the matrix
//! and writes it as text, JSON, CSV or an SVG heat map.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::compare::{builtin, Matrix, Plan, Subject};
use fenced_sim::sweep::Seeds;
use fenced_sim::ProtocolSpec;

use super::common::{
    bad_input, count_of, load_or_report, parse_jobs, progress_bar, stopwatch, Outcome,
};

#[derive(clap::Args, Debug)]
pub(super) struct CompareArgs {
    /// Scenario files to run instead of the built-in set; each runs as
    /// written, its `[election] protocol` replaced per design.
    #[arg(value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// The designs, comma-separated (default: all of them).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    protocols: Vec<String>,
    /// Only these built-in scenarios, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "LIST",
        conflicts_with = "scenarios"
    )]
    only: Vec<String>,
    /// Seeds per cell.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Worker threads, 1 to 256 (the output is identical whatever this
    /// is). Default: every core, at most 256.
    #[arg(long, value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Fence the downstream by each design's own token, where it has one
    /// (designs without one stay unfenced).
    #[arg(long)]
    fenced: bool,
    /// Print one JSON object instead of the text.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV (one line per cell) instead of the text.
    #[arg(long)]
    csv: bool,
    /// Draw the matrix as an SVG heat map to this file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// The designs `--protocols` names (every one by default), in its order,
/// once each.
fn protocols(names: &[String]) -> Result<Vec<ProtocolSpec>, UnknownProtocol> {
    if names.is_empty() {
        return Ok(ProtocolSpec::NAMES
            .iter()
            .filter_map(|n| ProtocolSpec::by_name(n))
            .collect());
    }
    let mut chosen: Vec<ProtocolSpec> = Vec::new();
    for name in names {
        let name = name.trim();
        let spec = ProtocolSpec::by_name(name).ok_or_else(|| UnknownProtocol(name.to_string()))?;
        if !chosen.iter().any(|p| p.name() == spec.name()) {
            chosen.push(spec);
        }
    }
    Ok(chosen)
}

/// A `--protocols` name that is no design.
#[derive(Debug)]
struct UnknownProtocol(String);

impl std::fmt::Display for UnknownProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--protocols: unknown protocol `{}`; the known ones are {}",
            self.0,
            ProtocolSpec::NAMES.join(", ")
        )
    }
}

impl std::error::Error for UnknownProtocol {}

/// The rows: the files given, else the built-in set (or the part `--only`
/// names).
fn rows(args: &CompareArgs) -> Result<Vec<Subject>, ExitCode> {
    if !args.scenarios.is_empty() {
        return args
            .scenarios
            .iter()
            .map(|path| {
                let scenario = load_or_report(path)?;
                Ok(Subject::File {
                    label: scenario.name.clone(),
                    scenario: Box::new(scenario),
                })
            })
            .collect();
    }
    let all = builtin();
    if args.only.is_empty() {
        return Ok(all.into_iter().map(Subject::Builtin).collect());
    }
    let mut chosen = Vec::new();
    for name in &args.only {
        let name = name.trim();
        let Some(n) = all.iter().find(|n| n.name == name) else {
            let known: Vec<&str> = all.iter().map(|n| n.name).collect();
            return Err(bad_input(format!(
                "--only: unknown scenario `{name}`; the built-in ones are {}",
                known.join(", ")
            )));
        };
        chosen.push(Subject::Builtin(n.clone()));
    }
    Ok(chosen)
}

pub(super) fn compare(args: &CompareArgs) -> Outcome {
    let protocols = protocols(&args.protocols).map_err(bad_input)?;
    let plan = Plan {
        rows: rows(args)?,
        protocols,
        seeds: Seeds {
            start: args.start,
            count: args.seeds,
        },
        fenced: args.fenced,
    };
    plan.validate().map_err(bad_input)?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(fenced_sim::explore::MAX_JOBS)
    });
    let runs = (plan.rows.len() * plan.protocols.len()) as u64 * args.seeds;
    let bar = progress_bar(runs, "{bar:40} {pos}/{len} runs  {rate}  eta {eta}");
    let started = stopwatch();
    let matrix = plan.run(jobs, &|| bar.inc(1)).map_err(bad_input)?;
    bar.finish_and_clear();
    write_results(args, &matrix)?;
    eprintln!(
        "{runs} runs, {} events, in {:.1}s with {}",
        matrix.events,
        started.elapsed().as_secs_f64(),
        count_of(jobs as u64, "job"),
    );
    let other = matrix.other_violations();
    if other > 0 {
        eprintln!(
            "{other} violations other than split-brain writes: see the last column, and replay a \
             cell's seed with `fenced-sim run`"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the chart (`--svg`) and the text, JSON or CSV to standard output.
fn write_results(args: &CompareArgs, matrix: &Matrix) -> Result<(), ExitCode> {
    if let Some(path) = &args.svg {
        std::fs::write(path, matrix.to_svg(&command(args)))
            .map_err(|e| bad_input(format!("cannot write the chart to {}: {e}", path.display())))?;
    }
    let text = if args.json {
        format!("{}\n", matrix.to_json())
    } else if args.csv {
        matrix.to_csv()
    } else {
        matrix.to_text()
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(bad_input(format!("cannot write the results: {e}")));
        }
    }
    Ok(())
}

/// The command line that reproduces the matrix, for the chart's header.
fn command(args: &CompareArgs) -> String {
    let mut cmd = String::from("fenced-sim compare");
    for path in &args.scenarios {
        cmd.push(' ');
        cmd.push_str(&super::common::shell_word(&path.display().to_string()));
    }
    if !args.protocols.is_empty() {
        cmd.push_str(&format!(" --protocols {}", args.protocols.join(",")));
    }
    if !args.only.is_empty() {
        cmd.push_str(&format!(" --only {}", args.only.join(",")));
    }
    cmd.push_str(&format!(" --seeds {}", args.seeds));
    if args.start != 0 {
        cmd.push_str(&format!(" --start {}", args.start));
    }
    if args.fenced {
        cmd.push_str(" --fenced");
    }
    cmd
}
