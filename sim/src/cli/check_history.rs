//! `fenced-sim check-history`: judge the histories of one real run with the
//! simulator's checker, and report as `run` does.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use fenced_sim::history::{check_paths, CheckOptions};

use super::common::{bad_input, load_or_report, shell_word, warn, Outcome, SvgArgs};
use super::run::publish;

#[derive(clap::Args, Debug)]
pub(super) struct CheckHistoryArgs {
    /// The history files of one run (one per process, plus any lab file).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The scenario the run played: its name, description and `[expect]`
    /// are used, and the histories' settings must agree with it.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Write the merged history (one line per event, in time order) to this
    /// file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    #[command(flatten)]
    svg: SvgArgs,
}

/// Reads, merges and judges the files; prints the summary (or JSON); the
/// exit code is `run`'s: 0 pass, 1 violation, unmet expectation or
/// malformed history line, 2 bad input (no verdict).
pub(super) fn check_history(args: &CheckHistoryArgs) -> Outcome {
    let scenario = match &args.scenario {
        Some(path) => {
            let scenario = load_or_report(path)?;
            warn(&path.display().to_string(), &scenario);
            Some(scenario)
        }
        None => None,
    };
    let options = CheckOptions {
        scenario: scenario.as_ref(),
        timeline: args.svg.is_asked(),
        until_ns: None,
    };
    let judged = check_paths(&args.files, options).map_err(bad_input)?;
    if let Some(path) = &args.trace {
        File::create(path)
            .and_then(|mut f| f.write_all(judged.trace.as_bytes()))
            .map_err(|e| bad_input(format!("cannot write the trace to {}: {e}", path.display())))?;
    }
    let mut replay = "fenced-sim check-history".to_string();
    if let Some(path) = &args.scenario {
        replay.push_str(&format!(
            " --scenario {}",
            shell_word(&path.display().to_string())
        ));
    }
    for file in &args.files {
        replay.push(' ');
        replay.push_str(&shell_word(&file.display().to_string()));
    }
    let picture = args.svg.picture(judged.scenario.duration)?;
    publish(
        &judged.scenario,
        &judged.report,
        judged.timeline.as_ref(),
        &replay,
        args.json,
        picture,
    )
}
