//! `fenced-sim verify`: the bounded exhaustive search of
//! [`fenced_sim::verify`] — its flags, its honest statement of the bounds,
//! the counterexample file and the exit codes (0 proven within the bounds,
//! 1 violation, 2 bad input, 3 incomplete).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use fenced_sim::verify::{
    boundary_lengths, swarm::SwarmPoint, verify_observed, Bounds, DrawFate, FaultKind, Outcome,
    Progress, Verification, SYMMETRY_NOT_ASKED,
};
use fenced_sim::RunOptions;

use super::common::{
    bad_input, load_or_report, parse_duration, parse_jobs, progress_bar, rate, say, shell_word,
    stopwatch, Outcome as CliOutcome, PlantArg, EXIT_FAIL,
};

/// The search stopped on `--max-states` before covering its bounds:
/// nothing is proven beyond the depths it completed. Distinct from a pass.
pub(super) const EXIT_INCOMPLETE: u8 = 3;

#[derive(clap::Args, Debug)]
pub(super) struct VerifyArgs {
    /// The scenario file (TOML). Its own faults stay; verify adds its own.
    scenario: PathBuf,
    /// The most injected faults per schedule (K).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=8))]
    faults: u32,
    /// The kinds of fault injected: pause, isolate, clock-forward,
    /// clock-back (on any node, and with --servers any server); crash,
    /// stop (each restarts after the fault's length), replace (no length;
    /// the zombie case) on the nodes; restart (down for the length, its
    /// state as the scenario declares) on the servers, with --servers.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pause",
        value_name = "LIST"
    )]
    kinds: Vec<FaultKind>,
    /// Strike the servers too (the lease store or the design's servers,
    /// and the downstream) with the kinds that can, not only the nodes.
    #[arg(long)]
    servers: bool,
    /// Faults start on every multiple of this before the scenario's
    /// heal_at (or its end)...
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    grid: Duration,
    /// ...and, unless this is given, at every timer deadline and every
    /// expiry at a server (the store's lease; a design's key, lease or
    /// session) of the run they are added to, at, 1 ns before and 1 ns
    /// after.
    #[arg(long)]
    no_boundaries: bool,
    /// The fault lengths. Default: the boundary lengths — the renew
    /// interval; the validity (lease_ttl - safety_margin), the TTL and the
    /// rejoin delay, each 1 ns below, at and above; for a zoo design, its
    /// own TTLs, timeouts and periods, each 1 ns below, at and above.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, value_name = "LIST")]
    lengths: Option<Vec<Duration>>,
    /// The latency set, each inside the scenario's network.latency; the
    /// first is every message's default. Default: the scenario's minimum
    /// and maximum.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, value_name = "LIST")]
    latencies: Option<Vec<Duration>>,
    /// The most messages per schedule that take a latency other than the
    /// first (D).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=8))]
    deviations: u32,
    /// The most messages per schedule lost (a datagram dropped, a session's
    /// segment retransmitted once). Default: 1 where the scenario's network
    /// loses messages (loss above zero), else 0; above 0 it needs loss.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=8))]
    drops: Option<u32>,
    /// The most datagrams per schedule delivered twice (the copy at any
    /// latency of the set). Default: 1 where the scenario's network
    /// duplicates (duplicate above zero), else 0.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=8))]
    duplicates: Option<u32>,
    /// The most order points per schedule at which two events of one host
    /// (a node or a server) due at the same instant are handled in the
    /// other order (R). Events of different hosts at one instant are never
    /// reordered (a partial-order reduction).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=8))]
    reorders: u32,
    /// The most schedules to run; past it the result is incomplete (exit 3).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    max_states: u64,
    /// Worker threads (the result does not depend on them).
    #[arg(long, default_value = "1", value_parser = parse_jobs)]
    jobs: usize,
    /// Extend every schedule, even one whose whole state right after its
    /// last fault began equals an earlier schedule's (state deduplication,
    /// on by default for searches of two or more faults alone; the verdict
    /// and the counterexample are the same either way).
    #[arg(long)]
    no_dedup: bool,
    /// Compare states up to a renaming of interchangeable nodes (nodes
    /// declared alike but for their ids and start instants): a state and
    /// the same state with two such nodes' names swapped are one. Only
    /// where states are deduplicated, for the fenced protocol, without
    /// faults of the scenario's own or elector jitter; the output says
    /// which nodes, or why none.
    #[arg(long)]
    symmetry: bool,
    /// Override the scenario's seed (its other random draws: jitter,
    /// recurring faults).
    #[arg(long)]
    seed: Option<u64>,
    /// Write the counterexample, if one is found, to this scenario file
    /// (`fenced-sim run FILE` replays it).
    #[arg(long, short = 'o', value_name = "FILE")]
    counterexample: Option<PathBuf>,
    /// After the search, run explore's first N seeds on the same scenario,
    /// for each N listed, and report which fraction of the search's
    /// abstract states each visited (see the README, "How much a swarm
    /// covers").
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    swarm: Option<Vec<u64>>,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    plant: PlantArg,
}

pub(super) fn verify_command(args: &VerifyArgs) -> CliOutcome {
    let scenario = load_or_report(&args.scenario)?;
    let mut options = RunOptions::with_seed(args.seed);
    let plant_flag = args.plant.apply(&mut options)?;
    let (low, high) = scenario.network.latency;
    let latencies = args.latencies.clone().unwrap_or_else(|| {
        if low == high {
            vec![low]
        } else {
            vec![low, high]
        }
    });
    let mut kinds = args.kinds.clone();
    kinds.sort();
    kinds.dedup();
    let bounds = Bounds {
        faults: args.faults,
        kinds,
        servers: args.servers,
        grid: args.grid,
        boundaries: !args.no_boundaries,
        lengths: match &args.lengths {
            Some(l) => {
                let mut l = l.clone();
                l.sort();
                l.dedup();
                l
            }
            None => boundary_lengths(&scenario),
        },
        latencies,
        deviations: args.deviations,
        drops: args.drops.unwrap_or(u32::from(scenario.network.loss > 0.0)),
        duplicates: args
            .duplicates
            .unwrap_or(u32::from(scenario.network.duplicate > 0.0)),
        reorders: args.reorders,
        max_states: args.max_states,
        jobs: args.jobs,
        deduplicate: !args.no_dedup,
        symmetry: args.symmetry,
    };
    let origin = args.scenario.display().to_string();
    let started = stopwatch();
    // On a terminal only: the bar runs to --max-states, the bound.
    let bar = progress_bar(
        bounds.max_states,
        "{bar:40} {pos}/{len} schedules (--max-states)  {msg}  {rate}",
    );
    let mut observe = |p: Progress| {
        bar.set_position(p.schedules_run);
        bar.set_message(format!("length {}, {} queued", p.depth, p.queued));
    };
    let result = verify_observed(&scenario, &options, &bounds, &mut observe);
    bar.finish_and_clear();
    let result = result.map_err(|e| bad_input(format!("{origin}: {e}")))?;
    let seconds = started.elapsed().as_secs_f64();
    let per_second = result.schedules_run as f64 / seconds.max(1e-9);
    let swarm = match &args.swarm {
        Some(checkpoints) => Some(
            fenced_sim::verify::swarm::coverage(
                &scenario,
                &options,
                &result.abstract_state_set,
                checkpoints,
                args.jobs,
            )
            .map_err(|e| bad_input(format!("{origin}: {e}")))?,
        ),
        None => None,
    };
    let replay = match (&result.counterexample, &args.counterexample) {
        (Some(found), Some(path)) => {
            std::fs::write(path, fenced_sim::to_toml::to_toml(found)).map_err(|e| {
                bad_input(format!(
                    "cannot write the counterexample to {}: {e}",
                    path.display()
                ))
            })?;
            Some(format!(
                "fenced-sim run {}{plant_flag}",
                shell_word(&path.display().to_string())
            ))
        }
        _ => None,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut value = serde_json::to_value(&result)
            .map_err(|e| bad_input(format!("cannot encode the result: {e}")))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("replay".to_string(), serde_json::json!(replay));
            if let Some(points) = &swarm {
                map.insert("swarm".to_string(), serde_json::json!(points));
            }
            // The one field that depends on the machine: named so.
            map.insert(
                "wall_clock_states_per_second".to_string(),
                serde_json::json!(per_second.round()),
            );
        }
        say(&mut out, format_args!("{value}"));
    } else {
        write_human(&mut out, &result, replay.as_deref(), seconds, per_second);
        if let Some(points) = &swarm {
            write_swarm(&mut out, &result, points);
        }
    }
    let _ = out.flush();
    Ok(match result.outcome {
        Outcome::Proven => ExitCode::SUCCESS,
        Outcome::Violation { .. } => ExitCode::from(EXIT_FAIL),
        Outcome::Incomplete { .. } => ExitCode::from(EXIT_INCOMPLETE),
    })
}

/// The swarm's coverage of the search's abstract states, one line per
/// number of seeds.
fn write_swarm(out: &mut impl Write, r: &Verification, points: &[SwarmPoint]) {
    let mut text = format!(
        "swarm       explore's seeds on the same scenario, against the search's {} abstract \
         states{}:\n",
        r.abstract_states,
        match r.outcome {
            Outcome::Proven => "",
            _ => " (the search did not complete: its space is partial)",
        }
    );
    for p in points {
        text.push_str(&format!(
            "  {:>10} seeds  {:>6} / {} covered ({:.1} %), {} states outside the space\n",
            p.seeds,
            p.covered,
            p.space,
            100.0 * p.fraction(),
            p.outside
        ));
    }
    if let Some(last) = points.last() {
        if !last.missed.is_empty() {
            text.push_str(&format!(
                "  not visited by {} seeds (at most {} listed):\n",
                last.seeds,
                fenced_sim::verify::swarm::MAX_MISSED
            ));
        }
        for &code in &last.missed {
            match fenced_sim::observation::describe_abstract_state(code, &r.nodes) {
                Some(text_of) => text.push_str(&format!("    {text_of}\n")),
                None => text.push_str(&format!("    state {code:#018x}\n")),
            }
        }
    }
    let _ = write!(out, "{text}");
}

/// A span as a person reads it (`30s`, `29s 999ms 999ns`), exact to the
/// nanosecond as the counterexample file writes it.
fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn list(nanos: &[u64]) -> String {
    nanos
        .iter()
        .map(|&n| human(Duration::from_nanos(n)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_human(
    out: &mut impl Write,
    r: &Verification,
    replay: Option<&str>,
    seconds: f64,
    per_second: f64,
) {
    let kinds: Vec<&str> = r.kinds.iter().map(|k| k.name()).collect();
    let mut text = format!(
        "verify {}: {} nodes ({})\n\
         bounds:\n  \
         faults      <= {} of [{}] on any of [{}], starting before {} on a {} grid{} ({} start instants in the base run)\n  \
         lengths     [{}]\n  \
         latencies   [{}] (the first is the default); <= {} deviating messages per schedule ({} messages in the base run)\n  \
         loss        <= {} lost and <= {} duplicated messages per schedule\n  \
         order       <= {} pairs of one host's events due together handled the other way round ({} such instants in the base run)\n  \
         horizon     {}\n  \
         not explored: {}\n  \
         dedup       {}\n\
         {}\
         schedules   {} run ({} distinct behaviours, {} abstract states), {} refused by the scenario rules; {} transitions (events)\n\
         {}\
         depth       {}\n",
        r.scenario,
        r.nodes.len(),
        r.nodes.join(", "),
        r.faults_max,
        kinds.join(", "),
        r.hosts.join(", "),
        human(Duration::from_nanos(r.fault_window_ns)),
        human(Duration::from_nanos(r.grid_ns)),
        if r.boundaries {
            " and at every timer deadline and lease expiry, ±1 ns"
        } else {
            ""
        },
        r.base_start_instants,
        list(&r.lengths_ns),
        list(&r.latencies_ns),
        r.deviations_max,
        r.base_draws,
        r.drops_max,
        r.duplicates_max,
        r.reorders_max,
        r.base_order_points,
        human(Duration::from_nanos(r.horizon_ns)),
        r.not_explored.join("; "),
        r.deduplication,
        if r.symmetry == SYMMETRY_NOT_ASKED {
            String::new()
        } else {
            format!("  symmetry    {}\n", r.symmetry)
        },
        r.schedules_run,
        r.distinct_behaviours,
        r.abstract_states,
        r.refused,
        r.transitions,
        if r.deduplicating {
            format!(
                "states      {} distinct of {} fingerprinted (right after a schedule's last fault \
                 began); {} schedules not extended, their state an earlier one's\n",
                r.states_distinct, r.states_fingerprinted, r.states_pruned
            )
        } else {
            String::new()
        },
        match r.depth_complete {
            Some(d) => format!("every schedule of length <= {d} ran"),
            None => "no level completed".to_string(),
        },
    );
    match &r.outcome {
        Outcome::Proven => {
            text.push_str("result      no violation in any schedule within these bounds\n")
        }
        Outcome::Violation {
            invariants,
            schedule,
        } => {
            text.push_str(&format!(
                "result      VIOLATION ({}) with a shortest schedule: length {}\n",
                invariants.join(", "),
                schedule.len()
            ));
            for f in &schedule.faults {
                let length = if f.kind.has_length() {
                    format!(" for {}", human(Duration::from_nanos(f.length_ns)))
                } else {
                    String::new()
                };
                text.push_str(&format!(
                    "  fault     {} {} at {}{length}\n",
                    f.kind,
                    r.hosts[f.host as usize],
                    human(Duration::from_nanos(f.at_ns)),
                ));
            }
            let latency = |i: u32| human(Duration::from_nanos(r.latencies_ns[i as usize]));
            for d in &schedule.deviations {
                let fate = match d.fate {
                    DrawFate::Delayed => format!("takes {}", latency(d.latency)),
                    DrawFate::Lost => "is lost".to_string(),
                    DrawFate::Duplicated => format!(
                        "arrives twice: after {} and after {}",
                        latency(0),
                        latency(d.copy)
                    ),
                };
                text.push_str(&format!("  message   #{} {fate}\n", d.draw));
            }
            for k in &schedule.reorders {
                text.push_str(&format!(
                    "  order     at order point #{k}, the second event is handled first\n"
                ));
            }
            match replay {
                Some(cmd) => text.push_str(&format!("  replay    {cmd}\n")),
                None => text.push_str("  (write it as a scenario with -o FILE)\n"),
            }
        }
        Outcome::Incomplete { unrun_at_least } => text.push_str(&format!(
            "result      INCOMPLETE: --max-states {} reached with at least {} schedules unrun; \
             nothing is proven beyond the depth above\n",
            r.max_states, unrun_at_least
        )),
    }
    text.push_str(&format!(
        "time        {seconds:.2}s, {} schedules (states) per second on this machine's wall clock\n",
        rate(per_second)
    ));
    let _ = write!(out, "{text}");
}
