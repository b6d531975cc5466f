//! `fenced-sim explore`: swarm testing over a range of seeds, streaming
//! each outcome (JSON lines, or the failures as text) and a summary on
//! standard error; and [`Exploring`], the set-up `replay` and `shrink`
//! share with it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fenced_sim::explore::{stream_campaign, CampaignSummary, SeedOutcome, SeedRange, StreamError};
use fenced_sim::merge::{
    CampaignIdentity, Failure, SeedLines, ShardSummary, ShardTiming, FORMAT, MAX_FAILURES_LISTED,
};
use fenced_sim::{RunOptions, Scenario};

use super::common::{
    bad_input, count_of, load_or_report, parse_jobs, progress_bar, shell_word, stopwatch, Outcome,
    PlantArg, ProtocolArg, EXIT_FAIL,
};
use super::shard::{parse_shard, shard_from_env, SHARD_INDEX_VAR};

#[derive(clap::Args, Debug)]
pub(super) struct ExploreArgs {
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
    /// Run the shard whose index is in environment variable VAR (default
    /// JOB_COMPLETION_INDEX, set in each pod of a Kubernetes Indexed Job) of
    /// --shards N. Write it `--shard-from-env` or `--shard-from-env=VAR`.
    #[arg(
        long,
        value_name = "VAR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = SHARD_INDEX_VAR,
        conflicts_with = "shard",
        requires = "shards"
    )]
    shard_from_env: Option<String>,
    /// The number of shards for --shard-from-env (a Job's `completions`).
    #[arg(long, value_name = "N", requires = "shard_from_env")]
    shards: Option<u64>,
    /// Print one JSON object per seed (JSON lines), for merging shards.
    #[arg(long)]
    json: bool,
    /// With --json: each seed line also carries the campaign id, the shard
    /// and the virtual time simulated (and, if it failed, the shrink
    /// command), and a summary line ends the output: what `fenced-sim
    /// merge` reads.
    #[arg(long, requires = "json")]
    summary: bool,
    /// With --summary: write seed lines for failing seeds only (the summary
    /// still counts every seed): small logs for a cluster's log collection.
    #[arg(long, requires = "summary")]
    failures_only: bool,
    #[command(flatten)]
    plant: PlantArg,
    #[command(flatten)]
    protocol: ProtocolArg,
}

/// What `explore`, `replay` and `shrink` share: the validated base, how it
/// is named on a command line, and the run options with any planted bug.
pub(super) struct Exploring {
    pub(super) base: Scenario,
    base_name: Option<String>,
    base_arg: String,
    pub(super) options: RunOptions,
    plant_flag: String,
}

impl Exploring {
    /// Loads and checks the base at `path` (the default fleet without
    /// one) and applies the run flags.
    pub(super) fn set_up(
        path: Option<&Path>,
        plant: &PlantArg,
        protocol: &ProtocolArg,
    ) -> Result<Self, ExitCode> {
        let (base, mut base_arg) = explore_base(path)?;
        let (base, protocol_flag) = protocol.apply(base)?;
        // Replay commands repeat the design before the seed.
        if !protocol_flag.is_empty() {
            base_arg.push_str(protocol_flag.trim_start());
            base_arg.push(' ');
        }
        let base_name = path.map(|p| p.display().to_string());
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
            base_name,
            base_arg,
            options,
            plant_flag,
        })
    }

    /// The command that replays explored seed `seed`.
    pub(super) fn replay_command(&self, seed: u64) -> String {
        let (base, plant) = (&self.base_arg, &self.plant_flag);
        format!("fenced-sim replay {base}--seed {seed}{plant}")
    }

    /// The command that shrinks explored seed `seed` (to standard output).
    pub(super) fn shrink_command(&self, seed: u64) -> String {
        let (base, plant) = (&self.base_arg, &self.plant_flag);
        format!("fenced-sim shrink {base}--seed {seed}{plant}")
    }

    /// The shrink command as a failure lists it, saving to `seed-N.toml`.
    fn shrink_to_file(&self, seed: u64) -> String {
        format!("{} -o seed-{seed}.toml", self.shrink_command(seed))
    }

    /// The flags a run of a shrunk scenario needs, as repeated on its
    /// command line (empty without any).
    pub(super) fn plant_flag(&self) -> &str {
        &self.plant_flag
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

/// The seeds of this run of `explore`: its shard of `--start`/`--seeds`.
fn seed_range(args: &ExploreArgs) -> Result<SeedRange, ExitCode> {
    let (shard, shards) = match &args.shard_from_env {
        Some(var) => shard_from_env(var, args.shards).map_err(bad_input)?,
        None => args
            .shard
            .as_deref()
            .map(parse_shard)
            .transpose()
            .map_err(bad_input)?
            .unwrap_or((0, 1)),
    };
    if args.seeds == 0 {
        return Err(bad_input("--seeds must be at least 1"));
    }
    let range = SeedRange {
        start: args.start,
        count: args.seeds,
        shard,
        shards,
    };
    range.check().map_err(bad_input)?;
    let total = range.len();
    if total == 0 {
        return Err(bad_input(format!(
            "--shard {shard}/{shards} of --seeds {} runs no seed: use at most {} shards",
            args.seeds, args.seeds
        )));
    }
    Ok(range)
}

/// What `--summary` adds to the output: the campaign and shard on every
/// seed line, and the summary line, with the first failures.
struct ShardOutput {
    identity: CampaignIdentity,
    id: String,
    range: SeedRange,
    failures_only: bool,
    failures: Vec<Failure>,
}

impl ShardOutput {
    fn new(args: &ExploreArgs, setup: &Exploring, range: SeedRange) -> Option<Self> {
        if !args.summary {
            return None;
        }
        let identity = CampaignIdentity::new(
            setup.base_name.as_deref(),
            &setup.base,
            &setup.plant_flag,
            range.start,
            range.count,
        );
        Some(ShardOutput {
            id: identity.id(),
            identity,
            range,
            failures_only: args.failures_only,
            failures: Vec::new(),
        })
    }

    /// Keeps `o` for the summary if it is one of the first failures.
    fn record(&mut self, o: &SeedOutcome, setup: &Exploring) {
        if o.ok || self.failures.len() >= MAX_FAILURES_LISTED {
            return;
        }
        self.failures.push(Failure {
            seed: o.seed,
            invariant: o.invariant.clone().unwrap_or_else(|| "unknown".to_string()),
            at_ms: o.at_ms,
            detail: o.detail.clone().unwrap_or_default(),
            mix: o.mix.clone(),
            replay: setup.replay_command(o.seed),
            shrink: setup.shrink_to_file(o.seed),
        });
    }

    /// The summary line of the shard, totalled in `totals`.
    fn summary(self, totals: &CampaignSummary, wall: std::time::Duration, jobs: usize) -> String {
        ShardSummary {
            format: FORMAT,
            campaign: self.id,
            identity: self.identity,
            shard: self.range.shard,
            shards: self.range.shards,
            seed_lines: if self.failures_only {
                SeedLines::Failures
            } else {
                SeedLines::All
            },
            totals: totals.clone(),
            failures: self.failures,
            timing: ShardTiming {
                wall_ms: u64::try_from(wall.as_millis()).unwrap_or(u64::MAX),
                jobs: jobs as u64,
            },
        }
        .to_line()
    }
}

pub(super) fn explore(args: &ExploreArgs) -> Outcome {
    let setup = Exploring::set_up(args.scenario.as_deref(), &args.plant, &args.protocol)?;
    let range = seed_range(args)?;
    let total = range.len();
    let bar = progress_bar(
        total,
        "{bar:40} {pos}/{len} seeds  {msg}  {rate}  eta {eta}",
    );
    bar.set_message("0 failed");
    // Each outcome is printed (JSON: every seed; text: the failures) and
    // forgotten as soon as the seeds before it are done: memory holds the
    // totals and a window of outcomes, whatever the number of seeds.
    let mut summary = CampaignSummary::default();
    let mut shard_output = ShardOutput::new(args, &setup, range);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let started = stopwatch();
    let streamed = stream_campaign(
        &setup.base,
        range,
        args.jobs,
        &setup.options,
        &|| bar.inc(1),
        &mut |o| {
            summary.add(&o);
            if !o.ok {
                // Failures show in the bar as they happen.
                bar.set_message(format!("{} failed", summary.failed));
            }
            if let Some(shard) = shard_output.as_mut() {
                shard.record(&o, &setup);
            }
            write_outcome(&mut out, &o, args.json, &setup, shard_output.as_ref())
        },
    );
    let written = streamed.and_then(|()| out.flush().map_err(StreamError::Sink));
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    // The summary line, once every seed is written: a shard without one did
    // not finish.
    let written = written.and_then(|()| match shard_output {
        Some(shard) => {
            let line = shard.summary(&summary, elapsed, range.jobs(args.jobs));
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(StreamError::Sink)
        }
        None => Ok(()),
    });
    let mut stopped_early = false;
    match written {
        Ok(()) => {}
        Err(StreamError::Spawn(e)) => return Err(bad_input(e)),
        Err(StreamError::Sink(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            // The reader has gone (`| head`): no point running on.
            stopped_early = true;
        }
        Err(StreamError::Sink(e)) => {
            return Err(bad_input(format!("cannot write the results: {e}")))
        }
    }
    report_campaign(&summary, &range, args.jobs, elapsed.as_secs_f64());
    if stopped_early {
        eprintln!(
            "standard output was closed: stopped after {} of {total} seeds",
            summary.seeds
        );
    }
    report_coverage(&summary);
    Ok(if summary.failed > 0 {
        ExitCode::from(EXIT_FAIL)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes one seed's outcome: every seed as a JSON line (with the command
/// that replays it) with `json`, else only a failure, as text, at once.
/// With `shard` (`--summary`), JSON lines also carry the campaign, the
/// shard, the virtual time and, when failed, the shrink command; with
/// `--failures-only`, passing seeds are not written.
fn write_outcome(
    out: &mut impl Write,
    o: &SeedOutcome,
    json: bool,
    setup: &Exploring,
    shard: Option<&ShardOutput>,
) -> std::io::Result<()> {
    if json {
        if shard.is_some_and(|s| s.failures_only) && o.ok {
            return Ok(());
        }
        let mut value = serde_json::to_value(o).map_err(std::io::Error::other)?;
        if let Some(map) = value.as_object_mut() {
            map.insert("replay".to_string(), setup.replay_command(o.seed).into());
            if let Some(shard) = shard {
                map.insert("campaign".to_string(), shard.id.clone().into());
                map.insert("shard".to_string(), shard.range.shard.into());
                map.insert("shards".to_string(), shard.range.shards.into());
                map.insert("virtual_ms".to_string(), o.virtual_ms.into());
                if !o.ok {
                    map.insert("shrink".to_string(), setup.shrink_to_file(o.seed).into());
                }
            }
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
        setup.replay_command(o.seed),
        setup.shrink_to_file(o.seed),
    )?;
    // Failures are rare and worth seeing at once.
    out.flush()
}

/// The campaign's line on standard error: seeds, time, rate, failures by
/// invariant, and the seeds run twice.
fn report_campaign(summary: &CampaignSummary, range: &SeedRange, jobs: usize, seconds: f64) {
    let (shard, shards) = (range.shard, range.shards);
    eprintln!(
        "{} seeds{} in {:.2}s ({:.0} seeds/s, {}): {} failed{}; {} run twice for determinism",
        summary.seeds,
        if shards > 1 {
            format!(" (shard {shard}/{shards})")
        } else {
            String::new()
        },
        seconds,
        summary.seeds as f64 / seconds.max(1e-9),
        count_of(jobs as u64, "job"),
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
}

/// How many seeds exercised each path worth exercising, and a warning for
/// those none did (over 100 seeds or more).
fn report_coverage(summary: &CampaignSummary) {
    let counts: Vec<String> = summary
        .sometimes()
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    eprintln!("coverage (seeds where it happened): {}", counts.join(", "));
    let never = summary.never_exercised();
    if !never.is_empty() && summary.seeds >= 100 {
        eprintln!("warning: never exercised: {}", never.join(", "));
    }
}
