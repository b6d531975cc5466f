//! Every bound the simulator puts on its input and on a run, in one place.
//!
//! A scenario is user input: whatever it says, a run must end in bounded
//! time and memory with a result or a clear error, never a panic, an
//! overflow or an allocation failure. Three kinds of bound keep that promise:
//!
//! 1. **Each duration** is at most [`MAX_SPAN`] (one year), so sums of a few
//!    of them never overflow nanoseconds in `u64` (a year is 2^55 ns).
//! 2. **Products** of durations that set how much is in flight at once are
//!    refused up front when they are absurd ([`MAX_UNITS_IN_PROGRESS`]), and
//!    the run's work is estimated against the event budget before it starts
//!    ([`estimated_events`]).
//! 3. **The engine** stops a run cleanly ([`Halt`]) when it would exceed the
//!    event budget or hold more than [`MAX_PENDING_EVENTS`] events at once,
//!    and a paused host keeps at most [`MAX_DEFERRED_MESSAGES`] messages
//!    (more are dropped, like a full socket buffer).

use std::fmt;
use std::time::Duration;

use crate::scenario::{Scenario, ScenarioError};
use crate::units::{human, secs};

/// The longest any duration of a scenario may be: one year.
pub const MAX_SPAN: Duration = Duration::from_secs(365 * 24 * 3600);

/// The most units of work one leader may have in progress at once
/// (`work_duration / write_interval`): each is a pending event.
pub const MAX_UNITS_IN_PROGRESS: u128 = 10_000;

/// The most events the engine holds at once (messages in flight, timers,
/// units of work, faults). A 500-node fleet holds about two thousand; a
/// scenario that needs millions is halted with [`Halt::TooManyPending`].
pub const MAX_PENDING_EVENTS: usize = 1 << 22;

/// The most messages a paused host queues; later ones are dropped (traced as
/// `receiver paused with a full queue`), as a frozen process's full socket
/// buffer would. Timers are not capped: a paused host has at most a few.
pub const MAX_DEFERRED_MESSAGES: usize = 1 << 16;

/// The event budget of a run unless `--max-events` says otherwise: about a
/// minute of simulation on one core, and thirty times a 500-node fleet's
/// virtual hour.
pub const DEFAULT_MAX_EVENTS: u64 = 250_000_000;

/// The largest event budget that may be asked for. Process incarnations are
/// counted in `u32`, and every start is an event.
pub const MAX_EVENTS_LIMIT: u64 = u32::MAX as u64;

/// Why the engine stopped a run before its end. The run's report up to that
/// point is still available, but its verdict covers only the time simulated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Halt {
    /// The run handled its whole event budget.
    EventBudget {
        /// The budget.
        max_events: u64,
        /// The virtual time reached.
        at: Duration,
        /// The run's planned duration.
        duration: Duration,
    },
    /// More than [`MAX_PENDING_EVENTS`] events were pending at once.
    TooManyPending {
        /// How many.
        pending: usize,
        /// The virtual time reached.
        at: Duration,
    },
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Halt::EventBudget {
                max_events,
                at,
                duration,
            } => write!(
                f,
                "the run used its whole budget of {max_events} events at {} of {}; \
                 raise it with --max-events (at most {MAX_EVENTS_LIMIT}), shorten `duration`, \
                 or lengthen the busiest interval (membership.heartbeat_interval, \
                 work.write_interval, election.retry_interval, a recurring fault's `every`)",
                secs(nanos_of(*at)),
                human(*duration)
            ),
            Halt::TooManyPending { pending, at } => write!(
                f,
                "more than {MAX_PENDING_EVENTS} events were pending at once ({pending} at {}): \
                 the scenario keeps too much in flight; shorten network.latency or \
                 work.work_duration, lengthen work.write_interval, \
                 membership.heartbeat_interval or election.retry_interval, or use fewer nodes",
                secs(nanos_of(*at))
            ),
        }
    }
}

fn nanos_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A rough lower estimate of the events a run of `scenario` handles, and the
/// key most responsible: every live process heartbeats (a timer and a
/// delivery each) and asks for the lease every `retry_interval` while it
/// follows, and the leader runs a unit every `write_interval` (a timer, the
/// unit's end and the write's delivery), and each recurring fault fires
/// every `every` on average. Crashes and pauses only lower it a
/// little; it exists to refuse, before running, a scenario that could never
/// finish within the budget.
pub fn estimated_events(scenario: &Scenario) -> (u128, String) {
    let per = |span: Duration, every: Duration| span.as_nanos() / every.as_nanos().max(1);
    let mut heartbeats = 0u128;
    let mut requests = 0u128;
    for node in &scenario.nodes {
        let span = scenario.duration.saturating_sub(node.start_at);
        heartbeats += 2 * per(span, scenario.membership.heartbeat_interval);
        // Followers ask every retry_interval; one node leads and renews.
        requests += 2 * per(span, scenario.election.retry_interval);
    }
    let leader = scenario.nodes.len().max(1) as u128;
    requests = requests.saturating_sub(requests / leader);
    let work = 3 * per(scenario.duration, scenario.work.write_interval);
    // Each occurrence of a recurring fault is at least its own event and its
    // end, on one node or on each.
    let mut recurring = 0u128;
    let mut busiest_fault = (0u128, String::new());
    for (i, fault) in scenario.faults.iter().enumerate() {
        if let crate::scenario::FaultSpec::Recurring { node, every, .. } = fault {
            let nodes = if node.is_some() {
                1
            } else {
                scenario.nodes.len() as u128
            };
            let events = 2 * nodes * per(scenario.duration, *every);
            recurring += events;
            if events > busiest_fault.0 {
                busiest_fault = (events, format!("fault[{i}].every"));
            }
        }
    }
    let largest = heartbeats.max(requests).max(work).max(recurring);
    let key = if largest == heartbeats {
        "membership.heartbeat_interval".to_string()
    } else if largest == requests {
        "election.retry_interval".to_string()
    } else if largest == work {
        "work.write_interval".to_string()
    } else {
        busiest_fault.1
    };
    (heartbeats + requests + work + recurring, key)
}

/// Refuses an event budget outside `1..=`[`MAX_EVENTS_LIMIT`] (key
/// `--max-events`), and a scenario whose [`estimated_events`] already exceed
/// `max_events`, naming the key most responsible.
///
/// # Errors
/// The [`ScenarioError`] that says which.
pub fn check_budget(scenario: &Scenario, max_events: u64) -> Result<(), ScenarioError> {
    if max_events == 0 || max_events > MAX_EVENTS_LIMIT {
        return Err(ScenarioError::new(
            "--max-events",
            format!("{max_events} is outside 1..={MAX_EVENTS_LIMIT}"),
        ));
    }
    let (estimate, key) = estimated_events(scenario);
    if estimate > u128::from(max_events) {
        return Err(ScenarioError::new(
            key.clone(),
            format!(
                "this run would handle at least about {estimate} events ({} node{} over {}), \
                 more than the budget of {max_events}; lengthen {key}, shorten `duration`, \
                 or raise the budget with --max-events (at most {MAX_EVENTS_LIMIT})",
                scenario.nodes.len(),
                if scenario.nodes.len() == 1 { "" } else { "s" },
                human(scenario.duration)
            ),
        ));
    }
    Ok(())
}
