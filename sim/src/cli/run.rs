//! `fenced-sim run`: run one scenario file and report what happened; and
//! [`execute`], which runs a scenario and writes its outputs for `run` and
//! `replay` alike.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use fenced_sim::svg::Window;
use fenced_sim::timeline::Timeline;
use fenced_sim::{summary, Recording, Report, RunOptions, Scenario, Simulation};

use super::common::{
    bad_input, load_or_report, shell_word, warn, Outcome, PlantArg, SvgArgs, EXIT_FAIL,
};

#[derive(clap::Args, Debug)]
pub(super) struct RunArgs {
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

pub(super) fn run(args: &RunArgs) -> Outcome {
    let scenario = load_or_report(&args.scenario)?;
    let mut options = RunOptions::with_seed(args.seed);
    let plant_flag = args.plant.apply(&mut options)?;
    let replay = |seed: u64| {
        format!(
            "fenced-sim run {} --seed {seed}{plant_flag}",
            shell_word(&args.scenario.display().to_string())
        )
    };
    let origin = args.scenario.display().to_string();
    let picture = args.svg.picture(scenario.duration)?;
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
pub(super) struct Outputs<'a> {
    /// The full event trace.
    pub(super) trace: Option<&'a Path>,
    /// JSON instead of the human summary.
    pub(super) json: bool,
    /// The SVG timeline and its window.
    pub(super) picture: Option<(&'a Path, Window)>,
}

/// Runs `scenario` and prints its summary (or JSON); the exit code says
/// whether it passed. `origin` names the scenario in messages; `replay`
/// gives the command that reproduces the run of a seed.
pub(super) fn execute(
    scenario: &Scenario,
    options: RunOptions,
    origin: &str,
    outputs: Outputs<'_>,
    replay: &dyn Fn(u64) -> String,
) -> Outcome {
    let Outputs {
        trace,
        json,
        picture,
    } = outputs;
    let sim = Simulation::from_scenario(scenario, options)
        .map_err(|e| bad_input(format!("{origin}: {e}")))?;
    warn(origin, scenario);
    let trace = match trace {
        Some(path) => {
            let file = File::create(path).map_err(|e| {
                bad_input(format!("cannot write the trace to {}: {e}", path.display()))
            })?;
            Some(Box::new(BufWriter::new(file)) as Box<dyn Write + Send>)
        }
        None => None,
    };
    let finished = sim
        .finish(Recording {
            trace,
            timeline: picture.is_some(),
            recurring_faults: false,
        })
        .map_err(|e| bad_input(format!("writing the trace failed: {e}")))?;
    let report = finished.report;
    let replay = replay(report.seed);
    let timeline = finished.timeline;
    let outcome = publish(scenario, &report, timeline.as_ref(), &replay, json, picture)?;
    // A halted run's report (its `halted` says so) covers only the time
    // simulated: shown, then refused as bad input.
    match &report.halted {
        Some(halt) => Err(bad_input(format!("{origin}: {halt}"))),
        None => Ok(outcome),
    }
}

/// Writes the outputs of a judged run — the picture (when asked for and a
/// timeline was recorded), then the JSON report or the human summary — and
/// returns the exit code its expectations give: the one path of `run`,
/// `replay` and `check-history`.
pub(super) fn publish(
    scenario: &Scenario,
    report: &Report,
    timeline: Option<&Timeline>,
    replay: &str,
    json: bool,
    picture: Option<(&Path, Window)>,
) -> Outcome {
    if let (Some((path, window)), Some(timeline)) = (picture, timeline) {
        let svg = fenced_sim::svg::render_timeline(scenario, report, timeline, replay, window);
        std::fs::write(path, svg).map_err(|e| {
            bad_input(format!(
                "cannot write the picture to {}: {e}",
                path.display()
            ))
        })?;
    }
    let mut out = std::io::stdout().lock();
    let written = if json {
        let json = serde_json::to_string(report)
            .map_err(|e| bad_input(format!("cannot encode the report: {e}")))?;
        writeln!(out, "{json}")
    } else {
        write!(out, "{}", summary::render(scenario, report, replay))
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(bad_input(format!("cannot write the report: {e}")));
        }
    }
    Ok(if report.expect.met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAIL)
    })
}
