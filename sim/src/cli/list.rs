//! `fenced-sim list`: the scenarios of a directory with their one-line
//! descriptions.

use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::file::load;
use fenced_sim::summary;

use super::common::{bad_input, say, Outcome, EXIT_BAD_INPUT};

#[derive(clap::Args, Debug)]
pub(super) struct ListArgs {
    /// The directory to list (default: `scenarios`).
    #[arg(default_value = "scenarios")]
    dir: PathBuf,
}

/// Prints one line per `*.toml` file of the directory, sorted by name: its
/// stem and the first sentence of its description (or why it is invalid).
pub(super) fn list(args: &ListArgs) -> Outcome {
    let dir = &args.dir;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| bad_input(format!("cannot list {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(bad_input(format!(
            "no scenario files (*.toml) in {}",
            dir.display()
        )));
    }
    let mut bad = 0;
    let mut out = std::io::stdout().lock();
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
                if !say(&mut out, format_args!("{stem:<width$}  {line}")) {
                    break;
                }
            }
            Err(e) => {
                bad += 1;
                if !say(&mut out, format_args!("{stem:<width$}  INVALID: {e}")) {
                    break;
                }
            }
        }
    }
    Ok(if bad > 0 {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}
