//! `fenced-sim shrink`: shrink a failing explored seed to the smallest
//! schedule that still breaks the same invariant, written as a standalone
//! scenario file headed by the commands that made and reproduce it.

use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::shrink::{ShrinkError, Shrunk};

use super::common::{bad_input, Outcome, PlantArg, ProtocolArg, EXIT_FAIL};
use super::explore::Exploring;

#[derive(clap::Args, Debug)]
pub(super) struct ShrinkArgs {
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
    #[command(flatten)]
    protocol: ProtocolArg,
}

pub(super) fn shrink(args: &ShrinkArgs) -> Outcome {
    let setup = Exploring::set_up(args.scenario.as_deref(), &args.plant, &args.protocol)?;
    let (scenario, _) = fenced_sim::explore::generate(&setup.base, args.seed);
    let shrunk = match fenced_sim::shrink::shrink(&scenario, &setup.options, args.budget) {
        Ok(shrunk) => shrunk,
        Err(ShrinkError::Passes) => {
            eprintln!("seed {} passes: nothing to shrink", args.seed);
            return Ok(ExitCode::SUCCESS);
        }
        Err(e @ ShrinkError::NotReproduced { .. }) => {
            eprintln!("error: seed {}: {e}", args.seed);
            return Err(ExitCode::from(EXIT_FAIL));
        }
        Err(e) => return Err(bad_input(e)),
    };
    let exhausted = if shrunk.budget_exhausted {
        format!(
            " (the budget of {} runs ran out: it may shrink further with a larger --budget)",
            args.budget
        )
    } else {
        String::new()
    };
    let text = shrunk_file(&setup, args.seed, &shrunk, &exhausted);
    match &args.output {
        Some(path) => std::fs::write(path, &text)
            .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?,
        None => {
            // A closed pipe (`| head`) is the reader's choice, not an error.
            let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
        }
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
    Ok(ExitCode::SUCCESS)
}

/// The shrunk scenario file of `seed`: a comment header naming the command
/// that made it, what it shrank (`exhausted`: the note on a spent budget)
/// and how to reproduce it, then the scenario.
fn shrunk_file(setup: &Exploring, seed: u64, shrunk: &Shrunk, exhausted: &str) -> String {
    let plant_flag = setup.plant_flag();
    let header = format!(
        "# Shrunk by: {}\n\
         # {} faults -> {} in {} runs{exhausted}. Reproduce: fenced-sim run <this file>{plant_flag}\n",
        setup.shrink_command(seed),
        shrunk.faults_before,
        shrunk.faults_after,
        shrunk.runs
    );
    format!("{header}{}", fenced_sim::to_toml::to_toml(&shrunk.scenario))
}
