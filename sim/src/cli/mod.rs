//! The command line: the subcommands (this file), one module per
//! subcommand with its flags and what it does, and `common` for what they
//! share (exit codes, flag parsers, the run and picture flags).
//!
//! A subcommand returns an [`Outcome`](common::Outcome): its exit code, or
//! the exit code of a failure it has already reported on standard error.

mod check;
mod check_history;
mod common;
mod compare;
mod explore;
mod list;
mod merge;
mod replay;
mod run;
mod shard;
mod shrink;
mod sweep;
mod verify;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

// No doc comment: clap would print it in `--help`.
#[derive(Parser, Debug)]
#[command(
    name = "fenced-sim",
    version,
    about = "Deterministic simulation of fenced leader election: reproduce split-brain from a seed, \
             or prove fencing rejects the stale write.",
    after_help = "Exit codes: 0 pass, 1 violation or unmet expectation, 2 bad input;\n\
                  verify: 3 incomplete (a bound was reached before the search space was covered).\n\
                  Scenario files are regular files of at most 1 MiB.\n\n\
                  Example:\n  fenced-sim run scenarios/gc-pause-unfenced.toml"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario and report what happened.
    #[command(
        after_help = "Examples:\n  fenced-sim run scenarios/gc-pause-fenced.toml\n  \
                            fenced-sim run scenarios/gc-pause-unfenced.toml --seed 7 --json\n  \
                            fenced-sim run scenarios/steady-state.toml --trace run.trace"
    )]
    Run(run::RunArgs),
    /// Judge the histories of a real run (one file per process, recorded
    /// by `fenced::history`) with the simulator's checker: the same summary,
    /// --json report, --svg timeline and exit codes as `run`.
    #[command(after_help = "Examples:\n  fenced-sim check-history run-7/*.jsonl\n  \
                            fenced-sim check-history --scenario scenarios/gc-pause-fenced.toml --svg run.svg run-7/*.jsonl\n\n\
                            Files are merged by their timestamps (one clock for every process of the machine);\n\
                            ties keep the order of the files, then of their lines. A file's cut-short last line\n\
                            (a process killed mid-write) is a warning; any other malformed line is an error, listed,\n\
                            and fails the run. Files over 256 MiB, lines over 64 KiB are refused.\n\
                            Exit codes: 0 pass, 1 violation, unmet expectation or malformed line, 2 bad input (no verdict).")]
    CheckHistory(check_history::CheckHistoryArgs),
    /// Validate scenario files without running them.
    #[command(after_help = "Example:\n  fenced-sim check scenarios/*.toml")]
    Check(check::CheckArgs),
    /// List the scenarios of a directory with their one-line descriptions.
    #[command(after_help = "Example:\n  fenced-sim list scenarios")]
    List(list::ListArgs),
    /// Swarm testing: each seed draws its own fault schedule on top of the
    /// scenario (or the default five-node fleet), then heals everything and
    /// checks that one leader emerges. Reports every failing seed with the
    /// command that replays it.
    #[command(
        after_help = "Examples:\n  fenced-sim explore --seeds 10000 --jobs 2\n  \
                            fenced-sim explore scenarios/fleet-election.toml --seeds 1000000 --shard 3/64 --json > shard-3.jsonl\n  \
                            JOB_COMPLETION_INDEX=3 fenced-sim explore --seeds 1000000 --shard-from-env --shards 64 --json --summary > shard-3.jsonl\n\n\
                            Exit codes: 0 no seed failed, 1 some seed failed, 2 bad input."
    )]
    Explore(explore::ExploreArgs),
    /// Join the shards of a campaign (the output of `explore --json
    /// --summary`, one file per shard or interleaved) into one verdict:
    /// seeds run, failures with their replay and shrink commands,
    /// determinism checks, coverage, seeds/s and time acceleration.
    #[command(after_help = "Examples:\n  fenced-sim merge shard-*.jsonl\n  \
                            cat shard-*.jsonl | fenced-sim merge --json -\n\n\
                            Shards are checked against the campaign's plan: a missing, repeated, truncated or\n\
                            unfinished shard, or shards of different campaigns, are bad input, naming the seeds.\n\
                            Exit codes: 0 no seed failed, 1 some seed failed, 2 bad input (no verdict).")]
    Merge(merge::MergeArgs),
    /// Re-run one explored seed exactly as `explore` ran it, with the full
    /// summary (and optionally its trace, or the schedule saved as a scenario).
    #[command(
        after_help = "Example:\n  fenced-sim replay --seed 1234 --trace seed-1234.trace --save seed-1234.toml"
    )]
    Replay(replay::ReplayArgs),
    /// Shrink a failing explored seed to the smallest schedule that still
    /// breaks the same invariant, written as a standalone scenario file.
    #[command(
        after_help = "Example:\n  fenced-sim shrink --seed 1234 -o shrunk.toml && fenced-sim run shrunk.toml"
    )]
    Shrink(shrink::ShrinkArgs),
    /// The TTL trade-off, measured: run a grid of lease settings (or, with
    /// --membership, of heartbeat settings) over many seeds of one fault mix
    /// and report failover gaps, leader changes, leaderless time and fenced
    /// writes per cell, as CSV (default), JSON and an SVG chart.
    #[command(
        after_help = "Examples:\n  fenced-sim sweep --svg ttl-sweep.svg > ttl-sweep.csv\n  \
                            fenced-sim sweep --ttls 5s,30s --renew-ratios 0.3,0.6 --seeds 8 --json\n  \
                            fenced-sim sweep --membership --svg membership.svg\n\n\
                            Every cell runs the same seeds: each seed's faults depend on the seed alone.\n\
                            Latency spikes are short stalls of the lease store.\n\
                            Exit codes: 0 done, 1 some run broke an invariant, 2 bad input."
    )]
    Sweep(Box<sweep::SweepArgs>),
    /// The lock designs under the same faults: run protocol-neutral fault
    /// scenarios (or scenario files) against every design over many seeds
    /// and report per cell the split-brain rate, the belief overlap, the
    /// failover gap p50/p99 and how often no failover happened (stuck).
    #[command(
        after_help = "Examples:\n  fenced-sim compare --seeds 50 --svg compare.svg\n  \
                            fenced-sim compare --protocols fenced,etcd,redlock --only stalled-leader --seeds 8 --json\n  \
                            fenced-sim compare scenarios/gc-pause-unfenced.toml --fenced --csv\n\n\
                            E is each design's expiry (its lease, TTL or session timeout; PostgreSQL's keepalive verdict);\n\
                            fault lengths are relative to it (2 × E) or fixed (40s). Runs last at most 8h of virtual time.\n\
                            Exit codes: 0 done (it measures; it does not judge), 2 bad input."
    )]
    Compare(Box<compare::CompareArgs>),
    /// Bounded exhaustive search: every schedule within the bounds (up to K
    /// injected faults starting on a grid and at the protocol's boundary
    /// instants, with boundary lengths; up to D messages at another latency
    /// of the set), run breadth-first through the same hosts, machines and
    /// checker as `run`, so the first violation has a shortest schedule,
    /// written as a scenario file that `run` replays.
    #[command(
        after_help = "Examples:\n  fenced-sim verify scenarios/gc-pause-fenced.toml --faults 1 --deviations 0\n  \
                            fenced-sim verify small.toml --plant elector-ignores-deadline -o found.toml && fenced-sim run found.toml --plant elector-ignores-deadline\n\n\
                            The output states the bounds searched and what was not explored.\n\
                            Exit codes: 0 no violation in any schedule within the bounds, 1 violation (a shortest\n\
                            schedule), 2 bad input, 3 incomplete (--max-states reached: nothing proven beyond the depth shown)."
    )]
    Verify(Box<verify::VerifyArgs>),
}

impl Cli {
    /// Runs the subcommand; returns the process's exit code.
    pub(super) fn run(&self) -> ExitCode {
        let outcome = match &self.command {
            Command::Run(args) => run::run(args),
            Command::Check(args) => check::check(args),
            Command::CheckHistory(args) => check_history::check_history(args),
            Command::List(args) => list::list(args),
            Command::Explore(args) => explore::explore(args),
            Command::Merge(args) => merge::merge(args),
            Command::Replay(args) => replay::replay(args),
            Command::Shrink(args) => shrink::shrink(args),
            Command::Sweep(args) => sweep::sweep(args),
            Command::Compare(args) => compare::compare(args),
            Command::Verify(args) => verify::verify_command(args),
        };
        outcome.unwrap_or_else(|code| code)
    }
}
