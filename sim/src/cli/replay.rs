//! `fenced-sim replay`: re-run one explored seed exactly as `explore` ran
//! it, with the full summary, and optionally its trace, its picture, or its
//! schedule saved as a scenario file.

use std::path::PathBuf;

use super::common::{bad_input, Outcome, PlantArg, ProtocolArg, SvgArgs};
use super::explore::Exploring;
use super::run::{execute, Outputs};

#[derive(clap::Args, Debug)]
pub(super) struct ReplayArgs {
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
    #[command(flatten)]
    protocol: ProtocolArg,
}

pub(super) fn replay(args: &ReplayArgs) -> Outcome {
    let setup = Exploring::set_up(args.scenario.as_deref(), &args.plant, &args.protocol)?;
    let (scenario, _) = fenced_sim::explore::generate(&setup.base, args.seed);
    let picture = args.svg.picture(scenario.duration)?;
    if let Some(path) = &args.save {
        std::fs::write(path, fenced_sim::to_toml::to_toml(&scenario))
            .map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
    }
    execute(
        &scenario,
        setup.options.clone(),
        &scenario.name.clone(),
        Outputs {
            trace: args.trace.as_deref(),
            json: args.json,
            picture,
        },
        &|seed| setup.replay_command(seed),
    )
}
