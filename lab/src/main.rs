//! The `fenced-lab` binary: `run` a scenario for real, or be one `node` of
//! such a run (the runner starts itself as each node process).

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use fenced_lab::node::{self, NodeArgs, NodeError};
use fenced_lab::runner::{self, RunArgs};

// No doc comment: clap would print it in `--help`.
#[derive(Parser, Debug)]
#[command(
    name = "fenced-lab",
    version,
    about = "Run a fenced-sim scenario for real: node processes, a fault-injecting TCP proxy, \
             libfaketime clocks and PostgreSQL.",
    after_help = "Exit codes: 0 the real run passed the checker; 1 a violation or an unmet \
                  expectation in the real run's histories, a lab failure, or an interrupt; 2 bad \
                  input or a scenario the lab cannot run for real.\n\n\
                  Example:\n  fenced-lab run scenarios/gc-pause-fenced.toml \
                  --postgres postgres://postgres@127.0.0.1:5432/lab --time-scale 0.1"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario's nodes as real processes against PostgreSQL, with its
    /// faults applied at real times; judge their histories with the
    /// simulator's checker and print the simulator's prediction next to it.
    Run(RunArgs),
    /// The lock designs compared for real: every built-in scenario of
    /// `fenced-sim compare` × every design, each cell run for real beside
    /// its simulation (split-brain and stuck, real = simulated), the cells
    /// the lab cannot make real named with the reason.
    Matrix(fenced_lab::matrix::MatrixArgs),
    /// Drop the schemas that runners killed before their clean-up left in
    /// the database (`fenced_lab_<pid>_<n>`, marked by a runner of this
    /// host that is no longer alive); every other schema is kept. `run`
    /// does this first too.
    Clean {
        /// The PostgreSQL the runs used (a URL or key=value string).
        #[arg(long)]
        postgres: String,
    },
    /// One node process (started by `run`; not for direct use).
    #[command(hide = true)]
    Node(Box<NodeArgs>),
    /// Print this process's clocks around a tokio sleep (libfaketime probe).
    #[command(hide = true)]
    ClockProbe {
        /// How long to sleep on the (faked) clock.
        #[arg(long)]
        sleep_ms: u64,
    },
    /// Start a lock-zoo design's real servers on loopback, print where they
    /// are, and stop them on SIGINT or SIGTERM (by hand, and for tests).
    #[command(hide = true)]
    ZooServers(fenced_lab::servers::serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(&args),
        Command::Matrix(args) => matrix(&args),
        Command::Clean { postgres } => clean(&postgres),
        Command::Node(args) => match node::main(*args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("fenced-lab node: {error}");
                ExitCode::from(match error {
                    NodeError::BadInput(_) => 2,
                    NodeError::Infrastructure(_) => 1,
                })
            }
        },
        Command::ZooServers(args) => zoo_servers(&args),
        Command::ClockProbe { sleep_ms } => {
            match fenced_lab::faketime::clock_probe(Duration::from_millis(sleep_ms)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("fenced-lab clock-probe: {error}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

/// One thread: proxies, timers and the supervisor share it, and children
/// started from it die with it (PR_SET_PDEATHSIG follows the thread).
fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("fenced-lab: lab failure: cannot start a runtime: {error}");
            ExitCode::from(1)
        })
}

fn zoo_servers(args: &fenced_lab::servers::serve::ServeArgs) -> ExitCode {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(fenced_lab::servers::serve::serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fenced-lab zoo-servers: {error}");
            ExitCode::from(1)
        }
    }
}

fn matrix(args: &fenced_lab::matrix::MatrixArgs) -> ExitCode {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(fenced_lab::matrix::run(args)) {
        Ok(matrix) => {
            if args.json {
                println!("{:#}", matrix.to_json());
            } else if args.markdown {
                print!("{}", matrix.to_markdown());
            } else {
                print!("{}", matrix.to_text());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fenced-lab matrix: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

fn clean(postgres: &str) -> ExitCode {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(fenced_lab::stale_schemas::remove_stale(postgres)) {
        Ok(cleaned) => {
            println!("{cleaned}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fenced-lab clean: {error}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let runtime = match runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    if let Some(runs) = args.runs {
        return campaign(&runtime, args, runs);
    }
    match runtime.block_on(runner::run(args)) {
        Ok(outcome) => match fenced_lab::output::publish(args, &outcome) {
            Ok(code) => ExitCode::from(code),
            Err(error) => {
                eprintln!("fenced-lab: {error}");
                ExitCode::from(1)
            }
        },
        Err(error) => {
            eprintln!("fenced-lab: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

/// `run --runs N`: the tally on standard output (text or JSON), each run's
/// line on standard error as it ends.
fn campaign(runtime: &tokio::runtime::Runtime, args: &RunArgs, runs: u32) -> ExitCode {
    let base_seed = match args.seed {
        Some(seed) => seed,
        None => match fenced_lab::plan::load(&args.scenario) {
            Ok(scenario) => scenario.seed,
            Err(error) => {
                eprintln!("fenced-lab: {error}");
                return ExitCode::from(2);
            }
        },
    };
    match runtime.block_on(fenced_lab::campaign::run_many(args, runs, base_seed)) {
        Ok((tally, code)) => {
            if args.json {
                println!("{}", tally.to_json());
            } else {
                print!("{tally}");
            }
            ExitCode::from(code)
        }
        Err(error) => {
            eprintln!("fenced-lab: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
