//! `[network.script]`: a fixed fate for every message instead of random
//! draws — the schedule of one of `fenced-sim verify`'s searches, which
//! `fenced-sim run` replays.

use std::time::Duration;

use super::ScenarioError;
use crate::units::human;

/// `[network.script]`: one fixed fate per message instead of random draws.
///
/// The network numbers the messages it times from 0, in the order the run
/// sends them (a datagram or a session's segment, each one *draw*). Draw
/// `i` meets the fate of the [`LatencyChoice`] naming `i`, if any, else
/// arrives once after `latency`. Under a script nothing is lost or
/// duplicated at random and a session's segment pays no retransmission
/// penalty the script does not name; links that faults take down still
/// drop (or hold) what crosses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencyScript {
    /// The latency of every draw not named in `choices`.
    pub latency: Duration,
    /// The draws that take another fate, strictly increasing by draw.
    pub choices: Vec<LatencyChoice>,
    /// `reorder`: the *order points* at which the second of two events due
    /// together is handled first, strictly increasing. An order point is an
    /// instant at which two events for one host (a node or a server) are
    /// due — a message and a timer, two timers, two messages — numbered
    /// from 0 in the order the run meets them; the engine otherwise handles
    /// them in the order they were scheduled. Events of different hosts at
    /// one instant are not order points (see `fenced-sim verify`).
    pub reorders: Vec<u64>,
}

/// One draw of a [`LatencyScript`] that takes its own fate: another
/// latency, lost (`lost`), or delivered twice (`duplicate`).
///
/// A session's segment is a TCP stream's: TCP never loses nor duplicates
/// what the application reads, so on a stream `lost` is one lost
/// transmission (the segment arrives after `latency` plus one
/// `retransmit_timeout`) and `duplicate` changes nothing (the receiver
/// discards the copy). A script may lose a message only in a scenario
/// whose `[network] loss` is above zero, and duplicate one only where
/// `duplicate` is: a schedule stays inside the scenario's own space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LatencyChoice {
    /// The draw (0 is the first message the network times).
    pub draw: u64,
    /// Its one-way latency (for a lost datagram, unused).
    pub latency: Duration,
    /// Lost on the way (a datagram), or retransmitted once (a segment).
    pub lost: bool,
    /// A second copy of the datagram, arriving after this latency.
    pub duplicate: Option<Duration>,
}

impl LatencyChoice {
    /// Draw `draw` arrives once, after `latency`.
    pub fn latency(draw: u64, latency: Duration) -> Self {
        LatencyChoice {
            draw,
            latency,
            lost: false,
            duplicate: None,
        }
    }
}

impl LatencyScript {
    /// The script's rules (see [`validate_script`]).
    pub(crate) fn validate(&self, network: &super::Network) -> Result<(), ScenarioError> {
        validate_script(self, network)
    }
}

/// `[network.script]`: every latency inside `[network] latency` (whose rules
/// were checked above), the choices strictly increasing by draw, a loss
/// only where the scenario loses messages and a copy only where it
/// duplicates them (a schedule stays inside the scenario's own space).
fn validate_script(
    script: &super::LatencyScript,
    network: &super::Network,
) -> Result<(), ScenarioError> {
    let range = network.latency;
    let outside = |latency: Duration| latency < range.0 || latency > range.1;
    if outside(script.latency) {
        return Err(ScenarioError::new(
            "network.script.latency",
            format!(
                "{} is outside network.latency [{}, {}]",
                human(script.latency),
                human(range.0),
                human(range.1)
            ),
        ));
    }
    if script.choices.len() > MAX_SCRIPT_CHOICES {
        return Err(ScenarioError::new(
            "network.script.choices",
            format!(
                "{} choices: at most {MAX_SCRIPT_CHOICES} are supported",
                script.choices.len()
            ),
        ));
    }
    if script.reorders.len() > MAX_SCRIPT_CHOICES
        || script.reorders.windows(2).any(|w| w[0] >= w[1])
    {
        return Err(ScenarioError::new(
            "network.script.reorder",
            format!(
                "list each order point once, in increasing order (at most \
                 {MAX_SCRIPT_CHOICES})"
            ),
        ));
    }
    let refuse = |choice: &LatencyChoice, why: String| {
        Err(ScenarioError::new(
            "network.script.choices",
            format!("draw {}: {why}", choice.draw),
        ))
    };
    for (i, choice) in script.choices.iter().enumerate() {
        for latency in std::iter::once(choice.latency).chain(choice.duplicate) {
            if outside(latency) {
                return refuse(
                    choice,
                    format!(
                        "{} is outside network.latency [{}, {}]",
                        human(latency),
                        human(range.0),
                        human(range.1)
                    ),
                );
            }
        }
        if choice.lost && choice.duplicate.is_some() {
            return refuse(
                choice,
                "lost and duplicated at once: choose one".to_string(),
            );
        }
        if choice.lost && network.loss <= 0.0 {
            return refuse(
                choice,
                "lost, but the scenario's network loses nothing (network.loss = 0)".to_string(),
            );
        }
        if choice.duplicate.is_some() && network.duplicate <= 0.0 {
            return refuse(
                choice,
                "duplicated, but the scenario's network duplicates nothing \
                 (network.duplicate = 0)"
                    .to_string(),
            );
        }
        if i > 0 && script.choices[i - 1].draw >= choice.draw {
            return refuse(
                choice,
                format!(
                    "follows draw {}: list each draw once, in increasing order",
                    script.choices[i - 1].draw
                ),
            );
        }
    }
    Ok(())
}

/// The most choices a `[network.script]` may list (a verify counterexample
/// lists a handful).
pub(crate) const MAX_SCRIPT_CHOICES: usize = 100_000;
