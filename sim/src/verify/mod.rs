//! Bounded exhaustive search: every schedule of a scenario within stated
//! bounds, run through the **same** hosts, machines and checker as
//! `fenced-sim run` (there is no second model), breadth-first so that the
//! first violation found has a shortest schedule.
//!
//! # What a schedule is
//!
//! A scenario's nondeterminism, in this search, is of three kinds:
//!
//! * **Latencies.** Every message the network times is one numbered *draw*
//!   (`engine/network.rs`, [`LatencyScript`](crate::scenario::LatencyScript)). A schedule gives every draw
//!   the first latency of the set (`--latencies`, by default the scenario's
//!   minimum and maximum), except at most `deviations` draws, each of which
//!   takes another latency of the set. This is *delay-bounded* search
//!   (Emmi, Qadeer, Rakamarić, POPL 2011): exhaustive over every way of
//!   choosing up to D deviating messages among all the messages of the run.
//! * **Losses and copies.** At most `drops` draws lost and `duplicates`
//!   datagrams delivered twice (the copy at any latency of the set), only
//!   where the scenario's network loses or duplicates at all: a schedule
//!   stays inside the scenario's own space. On a session's stream a loss is
//!   one retransmission and a copy is discarded, as TCP does
//!   ([`DrawFate`]).
//! * **Faults.** At most `faults` injected faults of the kinds asked for
//!   ([`FaultKind`]: pause, isolate and clock steps either way on any host;
//!   crash, stop and replace on the nodes; restart on the servers), the
//!   servers only with `servers`, each starting on
//!   every instant of a grid **and** at the protocol's boundary instants of
//!   the run it is added to: every instant a timer fired (a deadline), and
//!   every lease's expiry at the store (a request reaching the lease store,
//!   plus `lease_ttl`), each at, 1 ns before and 1 ns after. Lengths come
//!   from a finite set that includes the boundary lengths (the renew
//!   interval; the validity `lease_ttl − safety_margin`, the TTL and the
//!   rejoin delay, each ±1 ns). A zoo design brings its own expiries and
//!   lengths ([`crate::scenario::ProtocolSpec::boundaries`]).
//!
//! A schedule's *length* is its number of faults plus its number of
//! deviations. Each set of choices is generated once, in a canonical order:
//! faults in increasing `(at, kind, host, length)` — each one starting at a
//! boundary of the run that has the faults before it — then deviations in
//! increasing draw, counted in the run that has the faults and the earlier
//! deviations.
//!
//! # What is and is not deduplicated (stated, not claimed)
//!
//! This is a *replay-based* search: every schedule is run from time zero.
//! A search of faults alone (no deviations, drops, duplicates nor
//! reorders) with room for a fault after a fault **deduplicates states**:
//! each schedule that may be extended has its whole state hashed right
//! after its last fault began (`simulation::fingerprint`: hosts, pending
//! events in order, network, clocks, RNG positions, the checker; 128
//! bits), keyed with what its extensions may still choose — the faults
//! left, and the start instants from there on that the run had noted by
//! then. A schedule whose key an earlier one had, with a last fault no
//! later in the canonical order (the next fault is ordered after the
//! last), is run (its own verdict counts) but not extended: each of its
//! extensions would be, from that state on, the same run as the earlier
//! schedule's extension with the same faults added, which the search runs
//! — and, the earlier coming first, runs first, so the verdict, the first
//! counterexample and the abstract states visited are the same with or
//! without it (`sim/tests/verify_dedup.rs`). With a deviation, a loss, a copy or a
//! reorder allowed, an extension may change a message sent *before* the
//! state compared, and nothing is pruned. `--symmetry` compares states up
//! to renamings of interchangeable nodes (`simulation::symmetry`, which
//! says what is checked and what is assumed).
//! [`Verification::distinct_behaviours`] counts the distinct
//! trace hashes among the runs. The order of events due at the same
//! instant is the engine's `(time, sequence)` order and is explored only
//! within `reorders`; under a script no message is lost or duplicated at
//! random (only the `drops` and `duplicates` the schedule names); the
//! scenario's own faults stay as written. Memory is bounded by
//! `max_states`: the frontier holds at most that many schedules (each a
//! few dozen bytes plus its choices), the distinct-hash and state-key sets
//! at most that many `u64`s and `u128`s.
//!
//! # Counterexamples
//!
//! A violating schedule is written back as an ordinary scenario
//! ([`Verification::counterexample`]): its faults as `[[fault]]` entries and
//! its latencies as `[network.script]`, which `fenced-sim run` honours, so
//! the run replays the same violation.

mod candidates;
mod dedup;
mod schedule;
pub mod swarm;

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::scenario::Scenario;
use crate::simulation::symmetry::Symmetry;
use crate::simulation::{NotedInstants, RunOptions, Simulation, StateFingerprint};
use crate::units::human;

pub use candidates::{boundary_lengths, FaultKind};
pub use dedup::SYMMETRY_NOT_ASKED;
use dedup::{deduplicating, symmetry_of, Recorded, SeenStates, DEDUPLICATION, NO_DEDUPLICATION};
pub use schedule::{scripted, Deviation, DrawFate, FaultChoice, Schedule};

/// The bounds of one search: what [`verify`] enumerates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// The most injected faults per schedule (K).
    pub faults: u32,
    /// The kinds of fault injected, on every node (and, with `servers`,
    /// pauses and isolations of every server).
    pub kinds: Vec<FaultKind>,
    /// Whether the servers (the lease store or the design's servers, and
    /// the downstream) are fault targets too, for pauses and isolations.
    pub servers: bool,
    /// Faults start on every multiple of this before the fault window's end
    /// (`heal_at`, or the scenario's duration).
    pub grid: Duration,
    /// Whether faults also start at the protocol's boundary instants.
    pub boundaries: bool,
    /// The fault lengths (a crash's restart delay).
    pub lengths: Vec<Duration>,
    /// The latency set; the first is every message's default.
    pub latencies: Vec<Duration>,
    /// The most messages per schedule that take a latency other than the
    /// first (D).
    pub deviations: u32,
    /// The most messages per schedule lost (a datagram dropped, a stream
    /// segment retransmitted once). Only where the scenario's network
    /// loses messages (`loss` above zero).
    pub drops: u32,
    /// The most datagrams per schedule delivered twice. Only where the
    /// scenario's network duplicates (`duplicate` above zero).
    pub duplicates: u32,
    /// The most order points per schedule at which two events of one host
    /// due together are handled in the other order (R).
    pub reorders: u32,
    /// The most schedules run (the search's "states"): past it, the result
    /// is incomplete.
    pub max_states: u64,
    /// Threads running schedules (the result does not depend on it).
    pub jobs: usize,
    /// Prune a schedule whose whole state right after its last fault began
    /// equals an earlier one's there (module docs). Searches of faults alone
    /// only; the verdict and the counterexample are the same either way.
    pub deduplicate: bool,
    /// Deduplicate states up to renamings of alike nodes (`simulation::symmetry`).
    pub symmetry: bool,
}

/// Why a search could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The scenario (or the base run) is refused.
    Scenario(String),
    /// A bound is unusable: the flag and why.
    Bound(&'static str, String),
    /// A run stopped on a limit (the event budget): no verdict for it.
    Halted(String),
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::Scenario(why) => write!(f, "{why}"),
            VerifyError::Bound(flag, why) => write!(f, "{flag}: {why}"),
            VerifyError::Halted(why) => write!(f, "a run halted: {why}"),
        }
    }
}

impl std::error::Error for VerifyError {}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum Outcome {
    /// Every schedule within the bounds ran without a violation.
    Proven,
    /// A schedule broke an invariant; it is a shortest one.
    Violation {
        /// The invariants broken, each once, in the order the checker
        /// first found them (`split-brain` for an accepted write of an older
        /// term, which with fencing off is no other invariant's breach).
        invariants: Vec<String>,
        /// The schedule.
        schedule: Schedule,
    },
    /// `max_states` was reached before the bounds were covered: nothing is
    /// proven beyond the depths completed.
    Incomplete {
        /// The schedules left unrun (at least), when the bound stopped it.
        unrun_at_least: u64,
    },
}

/// What a search did and found. Everything here is deterministic (it does
/// not depend on `jobs` nor on the machine); the CLI adds the wall time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verification {
    /// The scenario's name.
    pub scenario: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// The hosts faults were injected on: the nodes, then (with
    /// [`Bounds::servers`]) the servers.
    pub hosts: Vec<String>,
    /// The run's horizon (the scenario's duration), ns.
    pub horizon_ns: u64,
    /// Faults start before this (heal_at or the horizon), ns.
    pub fault_window_ns: u64,
    /// The most faults per schedule.
    pub faults_max: u32,
    /// The kinds injected.
    pub kinds: Vec<FaultKind>,
    /// The grid, ns.
    pub grid_ns: u64,
    /// Whether boundary instants were used.
    pub boundaries: bool,
    /// The fault lengths, ns.
    pub lengths_ns: Vec<u64>,
    /// The latency set, ns (the first is the default).
    pub latencies_ns: Vec<u64>,
    /// The most deviating messages per schedule.
    pub deviations_max: u32,
    /// The most lost messages per schedule.
    pub drops_max: u32,
    /// The most duplicated messages per schedule.
    pub duplicates_max: u32,
    /// The most reordered pairs per schedule.
    pub reorders_max: u32,
    /// The base run's order points (two events of one host due together).
    pub base_order_points: u64,
    /// The bound on schedules run.
    pub max_states: u64,
    /// The base run's fault start instants (grid and boundaries).
    pub base_start_instants: u64,
    /// The base run's messages (draws): the deviation choice points.
    pub base_draws: u64,
    /// Schedules run (each a whole run from time zero).
    pub schedules_run: u64,
    /// Distinct trace hashes among them (a measure, not a pruning).
    pub distinct_behaviours: u64,
    /// Whether states were deduplicated: asked for, and the bounds allow it
    /// (faults alone, at least two per schedule).
    pub deduplicating: bool,
    /// States fingerprinted (one per schedule run with a fault, right after
    /// its last fault began), when deduplicating.
    pub states_fingerprinted: u64,
    /// Distinct states among them (the state, with the search's choices
    /// still open after it: see the module docs).
    pub states_distinct: u64,
    /// Schedules not extended because their state equalled an earlier
    /// schedule's whose last fault came no later in the canonical order:
    /// every longer schedule through them is the same run as one through
    /// the earlier, from that state on. (A repeated state reached with an
    /// earlier last fault is extended, and counted in neither.)
    pub states_pruned: u64,
    /// Distinct abstract states visited over all schedules run
    /// (`observation::AbstractStates`: a projection with every time
    /// dropped; a coverage measure, not a pruning).
    pub abstract_states: u64,
    /// Those states, for a swarm to be measured against
    /// ([`swarm::coverage`]).
    #[serde(skip)]
    pub abstract_state_set: BTreeSet<u64>,
    /// Candidate schedules the scenario rules refused (e.g. a fault the
    /// validator rejects), not run.
    pub refused: u64,
    /// Events handled over all runs (the transitions taken).
    pub transitions: u64,
    /// The deepest level (schedule length) every schedule of which ran.
    pub depth_complete: Option<u32>,
    /// What the search does not explore (the output says so).
    pub not_explored: Vec<&'static str>,
    /// What it deduplicates: nothing (see the module docs).
    pub deduplication: &'static str,
    /// Which nodes states are compared up to renamings of, or why none.
    pub symmetry: String,
    /// How it ended.
    pub outcome: Outcome,
    /// The counterexample as a standalone scenario, for a violation.
    #[serde(skip)]
    pub counterexample: Option<Scenario>,
}

/// The nondeterminism no schedule varies, stated in every result.
const NOT_EXPLORED: [&str; 4] = [
    "orders of events due at the same instant beyond --reorders swaps of two events of one host \
     (events of different hosts at one instant keep the engine's order: the partial-order \
     reduction)",
    "loss and duplication beyond --drops and --duplicates (a script draws nothing at random)",
    "fault kinds other than --kinds (cuts, partitions, clock slews and strobes, abdications)",
    "the scenario's own faults, which stay as written",
];

/// What one run of a schedule gives the search.
struct RunResult {
    invariants: Vec<String>,
    states: BTreeSet<u64>,
    order_points: u64,
    trace_hash: u64,
    events: u64,
    draws: u64,
    instants: NotedInstants,
    /// The state right after the schedule's last fault began, when the
    /// search deduplicates.
    fingerprint: Option<StateFingerprint>,
}

/// Runs the bounded search of `scenario` with `options` (its seed, a
/// planted bug, the event budget) within `bounds`.
///
/// # Errors
/// A scenario that cannot run, bounds that make no sense (an empty latency
/// set, a latency outside the scenario's range, a zero grid), or a run that
/// halted on its event budget.
pub fn verify(
    scenario: &Scenario,
    options: &RunOptions,
    bounds: &Bounds,
) -> Result<Verification, VerifyError> {
    verify_observed(scenario, options, bounds, &mut |_| {})
}

/// How far a search has come: handed to the observer of
/// [`verify_observed`] after each batch of schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Schedules run so far.
    pub schedules_run: u64,
    /// The schedule length being run.
    pub depth: u32,
    /// Schedules of the next length queued so far.
    pub queued: u64,
}

/// [`verify`], telling `observe` how far it has come after each batch of
/// schedules (a progress display; the result does not depend on it).
///
/// # Errors
/// As [`verify`].
pub fn verify_observed(
    scenario: &Scenario,
    options: &RunOptions,
    bounds: &Bounds,
    observe: &mut dyn FnMut(Progress),
) -> Result<Verification, VerifyError> {
    check_bounds(scenario, bounds)?;
    let (renaming, symmetry) = symmetry_of(scenario, bounds)?;
    let window = scenario.heal_at.unwrap_or(scenario.duration);
    let mut result = Verification {
        scenario: scenario.name.clone(),
        nodes: scenario.nodes.iter().map(|n| n.id.clone()).collect(),
        hosts: hosts(scenario, bounds.servers),
        horizon_ns: nanos(scenario.duration),
        fault_window_ns: nanos(window),
        faults_max: bounds.faults,
        kinds: bounds.kinds.clone(),
        grid_ns: nanos(bounds.grid),
        boundaries: bounds.boundaries,
        lengths_ns: bounds.lengths.iter().map(|&l| nanos(l)).collect(),
        latencies_ns: bounds.latencies.iter().map(|&l| nanos(l)).collect(),
        deviations_max: bounds.deviations,
        drops_max: bounds.drops,
        duplicates_max: bounds.duplicates,
        reorders_max: bounds.reorders,
        base_order_points: 0,
        max_states: bounds.max_states,
        base_start_instants: 0,
        base_draws: 0,
        schedules_run: 0,
        distinct_behaviours: 0,
        deduplicating: deduplicating(bounds),
        states_fingerprinted: 0,
        states_distinct: 0,
        states_pruned: 0,
        abstract_states: 0,
        abstract_state_set: BTreeSet::new(),
        refused: 0,
        transitions: 0,
        depth_complete: None,
        not_explored: NOT_EXPLORED.to_vec(),
        deduplication: if deduplicating(bounds) {
            DEDUPLICATION
        } else {
            NO_DEDUPLICATION
        },
        symmetry,
        outcome: Outcome::Proven,
        counterexample: None,
    };
    let mut distinct = BTreeSet::new();
    let mut seen_states = SeenStates::default();
    let mut level = vec![Schedule::default()];
    // Schedules of the current level left out for `max_states`.
    let mut left_out = 0u64;
    let mut depth = 0u32;
    loop {
        let mut next = Vec::new();
        let mut overflow = 0u64;
        for chunk in level.chunks(bounds.jobs.max(1) * 16) {
            let runs = run_chunk(scenario, options, bounds, renaming.as_ref(), chunk)?;
            for (schedule, run) in chunk.iter().zip(runs) {
                let Some(run) = run else {
                    result.refused += 1;
                    continue;
                };
                result.schedules_run += 1;
                result.transitions += run.events;
                distinct.insert(run.trace_hash);
                result.abstract_state_set.extend(run.states.iter().copied());
                result.abstract_states = result.abstract_state_set.len() as u64;
                if schedule.is_empty() {
                    result.base_draws = run.draws;
                    result.base_order_points = run.order_points;
                    result.base_start_instants =
                        candidates::starts(scenario, bounds, &run.instants, 0).len() as u64;
                }
                if !run.invariants.is_empty() {
                    // Every shorter schedule ran clean: this one is a shortest.
                    result.distinct_behaviours = distinct.len() as u64;
                    result.outcome = Outcome::Violation {
                        invariants: run.invariants,
                        schedule: schedule.clone(),
                    };
                    result.counterexample = Some(scripted(scenario, bounds, schedule));
                    result.depth_complete = depth.checked_sub(1);
                    return Ok(result);
                }
                // The frontier never holds more than the schedules still
                // allowed to run: memory stays bounded by `max_states`.
                let room = bounds
                    .max_states
                    .saturating_sub(result.schedules_run + next.len() as u64);
                let mut frontier = Frontier {
                    next: &mut next,
                    room,
                    overflow: 0,
                };
                let mut extend = true;
                if let Some(recorded) = seen_states.record(scenario, bounds, schedule, &run) {
                    result.states_fingerprinted += 1;
                    match recorded {
                        Recorded::New => result.states_distinct += 1,
                        Recorded::Pruned => {
                            result.states_pruned += 1;
                            extend = false;
                        }
                        Recorded::Extended => {}
                    }
                }
                if extend {
                    children(scenario, bounds, schedule, &run, &mut frontier);
                }
                overflow += frontier.overflow;
            }
            observe(Progress {
                schedules_run: result.schedules_run,
                depth,
                queued: next.len() as u64,
            });
        }
        result.distinct_behaviours = distinct.len() as u64;
        if left_out > 0 {
            // This level ran only in part: nothing at its depth is proven.
            result.depth_complete = depth.checked_sub(1);
            result.outcome = Outcome::Incomplete {
                unrun_at_least: left_out,
            };
            return Ok(result);
        }
        result.depth_complete = Some(depth);
        if next.is_empty() && overflow == 0 {
            return Ok(result);
        }
        if next.is_empty() {
            result.outcome = Outcome::Incomplete {
                unrun_at_least: overflow,
            };
            return Ok(result);
        }
        level = next;
        left_out = overflow;
        depth += 1;
    }
}

fn check_bounds(scenario: &Scenario, bounds: &Bounds) -> Result<(), VerifyError> {
    if scenario.network.script.is_some() {
        return Err(VerifyError::Scenario(
            "the scenario already has a [network.script]: it is a schedule, not a search space; \
             remove the script to verify it"
                .to_string(),
        ));
    }
    if bounds.latencies.is_empty() {
        return Err(VerifyError::Bound(
            "--latencies",
            "at least one latency".to_string(),
        ));
    }
    let (low, high) = scenario.network.latency;
    for &latency in &bounds.latencies {
        if latency < low || latency > high {
            return Err(VerifyError::Bound(
                "--latencies",
                format!(
                    "{} is outside the scenario's network.latency [{}, {}]",
                    human(latency),
                    human(low),
                    human(high)
                ),
            ));
        }
    }
    let unique: BTreeSet<_> = bounds.latencies.iter().collect();
    if unique.len() != bounds.latencies.len() {
        return Err(VerifyError::Bound(
            "--latencies",
            "a latency is listed twice".to_string(),
        ));
    }
    if bounds.grid.is_zero() {
        return Err(VerifyError::Bound(
            "--grid",
            "must be above zero".to_string(),
        ));
    }
    if bounds.faults > 0 && (bounds.kinds.is_empty() || bounds.lengths.is_empty()) {
        return Err(VerifyError::Bound(
            "--kinds/--lengths",
            "faults need at least one kind and one length".to_string(),
        ));
    }
    if bounds.drops > 0 && scenario.network.loss <= 0.0 {
        return Err(VerifyError::Bound(
            "--drops",
            "the scenario's network loses nothing (network.loss = 0): no schedule of it drops \
             a message"
                .to_string(),
        ));
    }
    if bounds.duplicates > 0 && scenario.network.duplicate <= 0.0 {
        return Err(VerifyError::Bound(
            "--duplicates",
            "the scenario's network duplicates nothing (network.duplicate = 0): no schedule of \
             it delivers a message twice"
                .to_string(),
        ));
    }
    if bounds.max_states == 0 {
        return Err(VerifyError::Bound(
            "--max-states",
            "must be above zero".to_string(),
        ));
    }
    scenario
        .validated()
        .map(|_| ())
        .map_err(|e| VerifyError::Scenario(e.to_string()))
}

/// Runs every schedule of `chunk`, on up to `bounds.jobs` threads; `None`
/// for a schedule the scenario rules refuse. In `chunk`'s order.
fn run_chunk(
    scenario: &Scenario,
    options: &RunOptions,
    bounds: &Bounds,
    symmetry: Option<&Symmetry>,
    chunk: &[Schedule],
) -> Result<Vec<Option<RunResult>>, VerifyError> {
    let jobs = bounds.jobs.clamp(1, chunk.len().max(1));
    if jobs == 1 {
        return chunk
            .iter()
            .map(|s| run_schedule(scenario, options, bounds, symmetry, s))
            .collect();
    }
    let per = chunk.len().div_ceil(jobs);
    let parts: Vec<Result<Vec<Option<RunResult>>, VerifyError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunk
            .chunks(per)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|s| run_schedule(scenario, options, bounds, symmetry, s))
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(VerifyError::Halted("a search thread panicked".to_string()))
                })
            })
            .collect()
    });
    let mut out = Vec::with_capacity(chunk.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// One schedule, run to the end with its instants noted.
fn run_schedule(
    scenario: &Scenario,
    options: &RunOptions,
    bounds: &Bounds,
    symmetry: Option<&Symmetry>,
    schedule: &Schedule,
) -> Result<Option<RunResult>, VerifyError> {
    let scripted = scripted(scenario, bounds, schedule);
    let Ok(valid) = scripted.validated() else {
        return Ok(None);
    };
    let mut sim = Simulation::new(&valid, options.clone())
        .map_err(|e| VerifyError::Scenario(e.to_string()))?;
    sim.record_instants();
    sim.record_abstract_states();
    let extended = (schedule.faults.len() as u32) < bounds.faults;
    if deduplicating(bounds) && extended && !schedule.faults.is_empty() {
        let last = scenario.faults.len() + schedule.faults.len() - 1;
        sim.fingerprint_after_fault(last as u32, symmetry.cloned());
    }
    sim.run_to_end();
    if let Some(halt) = sim.halted() {
        return Err(VerifyError::Halted(format!("{halt}")));
    }
    let report = sim.report();
    // Each invariant once, in the order the checker first found it.
    let mut invariants: Vec<String> = Vec::new();
    let found = report.violations.iter().map(|v| v.invariant.as_str());
    let split_brain = report.split_brain.then_some("split-brain");
    for invariant in found.chain(split_brain) {
        if !invariants.iter().any(|i| i == invariant) {
            invariants.push(invariant.to_string());
        }
    }
    Ok(Some(RunResult {
        invariants,
        states: sim.take_abstract_states().unwrap_or_default(),
        order_points: sim.scripted_order_points().unwrap_or(0),
        trace_hash: sim.trace_hash(),
        events: sim.events(),
        draws: sim.scripted_draws().unwrap_or(0),
        instants: sim.noted_instants().unwrap_or_default(),
        fingerprint: match sim.taken_fingerprint() {
            Some(Err(e)) => return Err(VerifyError::Bound("--symmetry", e.to_string())),
            taken => taken.and_then(Result::ok).cloned(),
        },
    }))
}

/// Where the next level's schedules go: at most `room` of them are kept
/// (each cloned only then), the others only counted, so memory never
/// holds more than the schedules still allowed to run.
struct Frontier<'a> {
    next: &'a mut Vec<Schedule>,
    room: u64,
    overflow: u64,
}

impl Frontier<'_> {
    fn offer(&mut self, make: impl FnOnce() -> Schedule) {
        if self.room > 0 {
            self.room -= 1;
            self.next.push(make());
        } else {
            self.overflow += 1;
        }
    }
}

/// The schedules one choice longer than `schedule`, in canonical order,
/// offered to `out`.
fn children(
    scenario: &Scenario,
    bounds: &Bounds,
    schedule: &Schedule,
    run: &RunResult,
    out: &mut Frontier<'_>,
) {
    let no_later_choice = schedule.deviations.is_empty() && schedule.reorders.is_empty();
    if no_later_choice && (schedule.faults.len() as u32) < bounds.faults {
        let after = schedule.faults.last().copied();
        let from_ns = after.map_or(0, |f| f.at_ns);
        let (nodes, hosts) = (
            scenario.nodes.len() as u32,
            hosts(scenario, bounds.servers).len() as u32,
        );
        let lengths: Vec<u64> = bounds.lengths.iter().map(|&l| nanos(l)).collect();
        for at_ns in candidates::starts(scenario, bounds, &run.instants, from_ns) {
            for &kind in &bounds.kinds {
                let (on_nodes, on_servers) = kind.targets();
                let targets = (0..hosts).filter(|&h| if h < nodes { on_nodes } else { on_servers });
                let lengths: &[u64] = if kind.has_length() { &lengths } else { &[0] };
                for host in targets {
                    for &length_ns in lengths {
                        let fault = FaultChoice {
                            at_ns,
                            kind,
                            host,
                            length_ns,
                        };
                        if after.is_some_and(|a| fault <= a) {
                            continue;
                        }
                        out.offer(|| {
                            let mut child = schedule.clone();
                            child.faults.push(fault);
                            child
                        });
                    }
                }
            }
        }
    }
    if (schedule.reorders.len() as u32) < bounds.reorders {
        let from = schedule.reorders.last().map_or(0, |&k| k + 1);
        for point in from..run.order_points {
            out.offer(|| {
                let mut child = schedule.clone();
                child.reorders.push(point);
                child
            });
        }
    }
    if !schedule.reorders.is_empty() {
        return;
    }
    let spent = |fate| {
        schedule
            .deviations
            .iter()
            .filter(|d| d.fate == fate)
            .count() as u32
    };
    let (delays, drops, duplicates) = (
        spent(DrawFate::Delayed) < bounds.deviations,
        spent(DrawFate::Lost) < bounds.drops,
        spent(DrawFate::Duplicated) < bounds.duplicates,
    );
    let from = schedule.deviations.last().map_or(0, |d| d.draw + 1);
    let set = bounds.latencies.len() as u32;
    for draw in from..run.draws {
        if delays {
            for latency in 1..set {
                out.offer(|| with_deviation(schedule, Deviation::delayed(draw, latency)));
            }
        }
        if drops {
            let lost = Deviation {
                draw,
                latency: 0,
                fate: DrawFate::Lost,
                copy: 0,
            };
            out.offer(|| with_deviation(schedule, lost));
        }
        if duplicates {
            for copy in 0..set {
                let twice = Deviation {
                    draw,
                    latency: 0,
                    fate: DrawFate::Duplicated,
                    copy,
                };
                out.offer(|| with_deviation(schedule, twice));
            }
        }
    }
}

/// `schedule` with one more deviation (after all of its own).
fn with_deviation(schedule: &Schedule, deviation: Deviation) -> Schedule {
    let mut child = schedule.clone();
    child.deviations.push(deviation);
    child
}

/// The fault targets: the nodes in scenario order, then (with `servers`)
/// the protocol's servers and the downstream.
fn hosts(scenario: &Scenario, servers: bool) -> Vec<String> {
    let mut hosts: Vec<String> = scenario.nodes.iter().map(|n| n.id.clone()).collect();
    if servers {
        match scenario.election.protocol.server_names() {
            names if names.is_empty() => hosts.push(crate::scenario::LEASE_STORE.to_string()),
            names => hosts.extend(names),
        }
        hosts.push(crate::scenario::DOWNSTREAM.to_string());
    }
    hosts
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
