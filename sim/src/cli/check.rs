//! `fenced-sim check`: validate scenario files without running them.

use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::file::load;

use super::common::{warn, Outcome, EXIT_BAD_INPUT};

#[derive(clap::Args, Debug)]
pub(super) struct CheckArgs {
    /// Scenario files to validate.
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
}

/// Prints `ok` and the name of each valid file (with its warnings) and the
/// error of each invalid one; bad input if any is invalid.
pub(super) fn check(args: &CheckArgs) -> Outcome {
    let paths = &args.scenarios;
    let mut bad = 0;
    for path in paths {
        match load(path) {
            Ok(s) => {
                let mut out = std::io::stdout().lock();
                // A closed pipe (`| head`) only stops the listing.
                let _ = super::common::say(
                    &mut out,
                    format_args!("ok    {}  ({})", path.display(), s.name),
                );
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
        Err(ExitCode::from(EXIT_BAD_INPUT))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}
