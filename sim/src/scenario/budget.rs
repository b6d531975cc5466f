//! The event budget checked before a run starts: a rough estimate of the
//! events a scenario's run handles, held against the budget (the engine
//! enforces the budget itself while running, [`Halt`](crate::limits::Halt)).
//! Public as [`crate::limits::estimated_events`] and
//! [`crate::limits::check_budget`].

use std::time::Duration;

use super::{Scenario, ScenarioError};
use crate::engine::limits::MAX_EVENTS_LIMIT;
use crate::units::human;

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
