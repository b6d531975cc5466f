//! What one schedule is — its injected faults and its deviating messages —
//! and how it is written back as an ordinary scenario that `fenced-sim run`
//! replays.

use std::time::Duration;

use serde::Serialize;

use super::{hosts, Bounds, FaultKind};
use crate::scenario::{
    ClockOffset, Expectations, FaultSpec, LatencyChoice, LatencyScript, Scenario,
};
use crate::units::human;

/// One injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FaultChoice {
    /// When it starts, ns of true time.
    pub at_ns: u64,
    /// What it is.
    pub kind: FaultKind,
    /// The host: an index in [`Verification::hosts`](super::Verification::hosts) (the nodes in
    /// scenario order, then the servers).
    pub host: u32,
    /// How long it lasts (a crash: when the node restarts), ns.
    pub length_ns: u64,
}

/// What a deviating message meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrawFate {
    /// It arrives once, after another latency of the set.
    Delayed,
    /// It is lost (a stream's segment: retransmitted once).
    Lost,
    /// It arrives twice: after the default latency, and its copy after
    /// [`Deviation::copy`].
    Duplicated,
}

/// One message that meets another fate than the default (arriving once,
/// after the first latency of the set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Deviation {
    /// The draw (the message's number in the run).
    pub draw: u64,
    /// Index in the latency set: a delayed message's latency (never 0, the
    /// default); 0 for a lost or duplicated one.
    pub latency: u32,
    /// What it meets.
    pub fate: DrawFate,
    /// A duplicated message's copy: its index in the latency set (any,
    /// the default included: a copy arriving with the original is a real
    /// duplicate). 0 otherwise.
    pub copy: u32,
}

impl Deviation {
    /// Draw `draw` arrives once, after latency `latency` of the set.
    pub const fn delayed(draw: u64, latency: u32) -> Self {
        Deviation {
            draw,
            latency,
            fate: DrawFate::Delayed,
            copy: 0,
        }
    }
}

/// One schedule: its faults, then its deviations, then its reorders.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Schedule {
    /// The injected faults, in increasing order.
    pub faults: Vec<FaultChoice>,
    /// The deviating draws, in increasing order.
    pub deviations: Vec<Deviation>,
    /// The order points at which the second of two events of one host due
    /// together is handled first, in increasing order (counted in the run
    /// that has the faults and deviations).
    pub reorders: Vec<u64>,
}

impl Schedule {
    /// Faults plus deviations plus reorders: the breadth-first search's
    /// depth.
    pub fn len(&self) -> usize {
        self.faults.len() + self.deviations.len() + self.reorders.len()
    }

    /// Whether it is the base run (no choice made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `scenario` with `schedule` written in: its faults appended, its
/// latencies as a `[network.script]`, its expectations the defaults (no
/// violation, no split-brain), so `run` fails on what the search found.
pub fn scripted(scenario: &Scenario, bounds: &Bounds, schedule: &Schedule) -> Scenario {
    let mut s = scenario.clone();
    let hosts = hosts(scenario, bounds.servers);
    let node = |i: u32| hosts[i as usize].clone();
    for f in &schedule.faults {
        let (at, length) = (
            Duration::from_nanos(f.at_ns),
            Duration::from_nanos(f.length_ns),
        );
        let (host, node) = (node(f.host), node(f.host));
        s.faults.push(match f.kind {
            FaultKind::Pause => FaultSpec::Pause {
                host,
                at,
                duration: length,
            },
            FaultKind::Isolate => FaultSpec::Isolate {
                host,
                at,
                duration: length,
            },
            FaultKind::Crash => FaultSpec::Crash {
                node,
                at,
                restart_after: Some(length),
            },
            FaultKind::Replace => FaultSpec::Replace { node, at },
            FaultKind::Stop => FaultSpec::Stop {
                node,
                at,
                restart_after: Some(length),
            },
            FaultKind::Restart => FaultSpec::Restart {
                host,
                at,
                duration: length,
                durable: None,
            },
            FaultKind::ClockForward => FaultSpec::ClockJump {
                host,
                at,
                by: ClockOffset::ahead(length),
            },
            FaultKind::ClockBack => FaultSpec::ClockJump {
                host,
                at,
                by: ClockOffset::behind(length),
            },
        });
    }
    let latency = |i: u32| bounds.latencies[i as usize];
    s.network.script = Some(LatencyScript {
        latency: bounds.latencies[0],
        choices: schedule
            .deviations
            .iter()
            .map(|d| LatencyChoice {
                draw: d.draw,
                latency: latency(d.latency),
                lost: d.fate == DrawFate::Lost,
                duplicate: (d.fate == DrawFate::Duplicated).then(|| latency(d.copy)),
            })
            .collect(),
        reorders: schedule.reorders.clone(),
    });
    s.expect = Expectations::default();
    s.description = Some(describe(scenario, bounds, schedule));
    s
}

/// The counterexample's description: where it comes from and its choices.
fn describe(scenario: &Scenario, bounds: &Bounds, schedule: &Schedule) -> String {
    let mut text = format!(
        "A schedule of `{}` found by fenced-sim verify (length {}: {} injected fault(s), {} \
         message(s) delayed, lost or duplicated instead of arriving once after {}, {} pair(s) \
         of events due together handled in the other order). Its expectations are the \
         defaults: no violation, no split-brain.",
        scenario.name,
        schedule.len(),
        schedule.faults.len(),
        schedule.deviations.len(),
        human(bounds.latencies[0]),
        schedule.reorders.len(),
    );
    if let Some(original) = &scenario.description {
        text.push_str(" The scenario: ");
        text.push_str(original);
    }
    text
}
