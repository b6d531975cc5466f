//! `fenced-sim`: run scenarios, validate and list them, explore random fault
//! schedules, replay and shrink what exploration finds.
//!
//! Exit codes (a contract scripts rely on): 0 — no violation and every
//! expectation met; 1 — a violation or an unmet expectation; 2 — bad input
//! (a malformed scenario, a missing file, an unwritable output, bad flags).
//!
//! Limits: a scenario file is a regular file of at most 1 MiB
//! ([`fenced_sim::file::MAX_SCENARIO_FILE_BYTES`]); `--jobs` is 1 to 256;
//! `explore` and `sweep` stream, holding a window of results (not all of
//! them); a sweep's fault mix may expect at most 1,000,000 faults per run.
//!
//! Each subcommand is a module of `cli/` (its flags, and the calls into the
//! library that do its work); this file only parses and dispatches.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::Cli::parse().run()
}
