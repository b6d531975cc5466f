//! `fenced-sim list`: the scenarios of a directory with their one-line
//! descriptions.

use std::path::PathBuf;
use std::process::ExitCode;

use fenced_sim::file::load;
use fenced_sim::{summary, ProtocolSpec};

use super::common::{bad_input, say, Outcome, EXIT_BAD_INPUT};

#[derive(clap::Args, Debug)]
pub(super) struct ListArgs {
    /// The directory to list (default: `scenarios`).
    #[arg(default_value = "scenarios")]
    dir: PathBuf,
}

/// Prints one line per `*.toml` file of the directory: its stem and the
/// first sentence of its description (or why it is invalid), grouped by the
/// lock design it runs under `# <protocol>` headers (when there is more than
/// one), each group sorted by name.
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
    // Grouped by protocol (in `ProtocolSpec::NAMES` order, invalid files
    // last), each group sorted by name; a header per group once the
    // directory holds more than one protocol.
    let loaded: Vec<_> = paths.iter().map(|p| (p, load(p))).collect();
    let group_of = |r: &Result<fenced_sim::Scenario, _>| match r {
        Ok(s) => ProtocolSpec::NAMES
            .iter()
            .position(|&n| n == s.election.protocol.name())
            .unwrap_or(0),
        Err(_) => ProtocolSpec::NAMES.len(),
    };
    let mut order: Vec<usize> = (0..loaded.len()).collect();
    order.sort_by_key(|&i| (group_of(&loaded[i].1), loaded[i].0));
    let groups = {
        let mut g: Vec<usize> = loaded.iter().map(|(_, r)| group_of(r)).collect();
        g.sort_unstable();
        g.dedup();
        g.len()
    };
    let mut bad = 0;
    let mut out = std::io::stdout().lock();
    let width = paths
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.len()))
        .max()
        .unwrap_or(0);
    let mut current = None;
    for i in order {
        let (path, loaded) = &loaded[i];
        let group = group_of(loaded);
        if groups > 1 && current != Some(group) {
            current = Some(group);
            let title = ProtocolSpec::NAMES
                .get(group)
                .copied()
                .unwrap_or("invalid files");
            if !say(&mut out, format_args!("# {title}")) {
                break;
            }
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default();
        match loaded {
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
