//! `fenced-sim sweep`: the TTL trade-off, measured. The flags build a
//! fault mix and a grid of [`fenced_sim::sweep`]; it runs them and writes
//! the CSV, the JSON and the chart.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fenced_sim::sweep::{
    run_election, run_membership, ElectionGrid, FaultMix, GridError, Lengths, MembershipGrid,
    Seeds, SweepError, SweepResults,
};
use fenced_sim::units::DurationError;

use super::common::{
    bad_input, count_of, parse_duration, parse_jobs, progress_bar, stopwatch, Outcome, EXIT_FAIL,
};

#[derive(clap::Args, Debug)]
pub(super) struct SweepArgs {
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
    #[arg(long, value_parser = Lengths::parse, default_value = "log:100ms..60s")]
    pause_length: Lengths,
    /// Mean interval between crashes of each node, or `off`.
    #[arg(long, value_parser = parse_every, default_value = "30m")]
    crash_every: Every,
    /// How long a crashed node stays down.
    #[arg(long, value_parser = Lengths::parse, default_value = "uniform:10s..60s")]
    restart_after: Lengths,
    /// Mean interval between latency spikes (lease-store stalls), or `off`.
    #[arg(long, value_parser = parse_every, default_value = "10m")]
    spike_every: Every,
    /// Spike lengths.
    #[arg(long, value_parser = Lengths::parse, default_value = "log:100ms..10s")]
    spike_length: Lengths,
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

fn parse_every(text: &str) -> Result<Every, DurationError> {
    match text.trim() {
        "off" | "none" | "never" => Ok(Every(None)),
        other => parse_duration(other).map(|d| Every(Some(d))),
    }
}

/// The grid a sweep runs: the election's, or with `--membership` the
/// membership's.
enum Chosen {
    Election(ElectionGrid),
    Membership(MembershipGrid),
}

impl Chosen {
    /// The grid the flags choose.
    fn of(args: &SweepArgs) -> Self {
        if args.membership {
            Chosen::Membership(MembershipGrid {
                liveness_ttls: args.liveness_ttls.clone(),
                heartbeats: args.heartbeats.clone(),
            })
        } else {
            Chosen::Election(ElectionGrid {
                ttls: args.ttls.clone(),
                renew_ratios: args.renew_ratios.clone(),
                margin_ratios: args.margin_ratios.clone(),
                retry_ratio: args.retry_ratio,
            })
        }
    }

    /// Checks the grid; returns how many cells it has.
    fn validate(&self) -> Result<u64, GridError> {
        let cells = match self {
            Chosen::Election(grid) => grid.validate().map(|()| grid.cells().len()),
            Chosen::Membership(grid) => grid.validate().map(|()| grid.cells().len()),
        }?;
        Ok(cells as u64)
    }

    /// Runs every cell over `seeds` of `mix`.
    fn run(
        &self,
        mix: &FaultMix,
        seeds: Seeds,
        jobs: usize,
        progress: &(dyn Fn() + Sync),
    ) -> Result<Box<dyn SweepResults>, SweepError> {
        match self {
            Chosen::Election(grid) => run_election(mix, grid, seeds, jobs, progress)
                .map(|s| Box::new(s) as Box<dyn SweepResults>),
            Chosen::Membership(grid) => run_membership(mix, grid, seeds, jobs, progress)
                .map(|s| Box::new(s) as Box<dyn SweepResults>),
        }
    }
}

/// The fault mix the flags describe.
fn fault_mix(args: &SweepArgs) -> FaultMix {
    FaultMix {
        nodes: args.nodes,
        duration: args.duration,
        pause_every: args.pause_every.0,
        pause_length: args.pause_length,
        crash_every: args.crash_every.0,
        restart_after: args.restart_after,
        spike_every: args.spike_every.0,
        spike_length: args.spike_length,
        loss: args.loss,
    }
}

pub(super) fn sweep(args: &SweepArgs) -> Outcome {
    let mix = fault_mix(args);
    mix.validate().map_err(bad_input)?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(fenced_sim::explore::MAX_JOBS)
    });
    let seeds = Seeds {
        start: args.start,
        count: args.seeds,
    };
    seeds.check().map_err(bad_input)?;
    let grid = Chosen::of(args);
    let cells = grid.validate().map_err(bad_input)?;
    let bar = progress_bar(
        cells.saturating_mul(args.seeds),
        "{bar:40} {pos}/{len} runs  {rate}  eta {eta}",
    );
    let started = stopwatch();
    let sweep = grid
        .run(&mix, seeds, jobs, &|| bar.inc(1))
        .map_err(bad_input)?;
    bar.finish_and_clear();
    for s in sweep.skipped() {
        eprintln!("skipped {}: {}", s.cell, s.reason);
    }
    write_results(args, sweep.as_ref())?;
    let runs = sweep.runs();
    eprintln!(
        "{runs} runs ({} cells × {} seeds × {} each) in {:.1}s with {}",
        runs / args.seeds.max(1),
        args.seeds,
        humantime::format_duration(args.duration),
        started.elapsed().as_secs_f64(),
        count_of(jobs as u64, "job"),
    );
    let violations = sweep.violations();
    if violations > 0 {
        eprintln!("{violations} invariant violations: replay a cell's seed with `fenced-sim run` on its scenario");
        Ok(ExitCode::from(EXIT_FAIL))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

/// Writes the chart (`--svg`), the CSV (`--csv`, else standard output) or
/// the JSON (`--json`, to standard output).
fn write_results(args: &SweepArgs, sweep: &dyn SweepResults) -> Result<(), ExitCode> {
    if let Some(path) = &args.svg {
        std::fs::write(path, sweep.to_svg(&sweep_command(args)))
            .map_err(|e| bad_input(format!("cannot write the chart to {}: {e}", path.display())))?;
    }
    let csv = sweep.to_csv();
    if let Some(path) = &args.csv {
        std::fs::write(path, &csv)
            .map_err(|e| bad_input(format!("cannot write the CSV to {}: {e}", path.display())))?;
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
                return Err(bad_input(format!("cannot write the results: {e}")));
            }
        }
    }
    Ok(())
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
