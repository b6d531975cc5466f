//! Faults: the scenario's scheduled and recurring faults, started and ended
//! through the engine's operations (pause and resume a host, cut links, kill
//! and start processes), and the liveness phase that heals them all.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use super::{Core, SimHosts};
use crate::engine::network::BRIDGE;
use crate::engine::{Control, Touched};
use crate::observation::{Observation, Skipped};
use crate::rng::{exponential, uniform_inclusive, SeedDeriver};
use crate::scenario::{DurationRange, FaultSpec, RecurringKind, ScenarioError};
use crate::time::{span_nanos, SimTime};

/// A fault in effect, to undo when it ends.
#[derive(Debug)]
enum ActiveFault {
    /// Paused processes, by slot and life.
    PauseProcesses(Vec<(u32, u32)>),
    /// A paused server, by endpoint.
    PauseServer(u16),
    Isolate(u16),
    Cut(u16, u16),
    Partition {
        text: String,
        members: Vec<u16>,
    },
    /// A server down for a restart (isolated), back with or without its
    /// state when the fault ends.
    Restart {
        endpoint: u16,
        durable: bool,
    },
}

/// A recurring fault on one node, with its own RNG stream.
#[derive(Debug)]
struct Generator {
    kind: RecurringKind,
    node: u32,
    every: Duration,
    duration: DurationRange,
    rng: ChaCha8Rng,
}

/// The faults of a run: those in effect, the recurring generators, and
/// whether the liveness phase has begun.
#[derive(Debug)]
pub(super) struct Faults {
    active: Vec<Option<ActiveFault>>,
    active_free: Vec<u32>,
    generators: Vec<Generator>,
    seeds: SeedDeriver,
    /// Set once the liveness phase has begun (see `Scenario::heal_at`).
    pub(super) healed: bool,
    /// Every recurring fault that fired, as a scheduled fault, when asked for.
    pub(super) recurring_log: Option<Vec<FaultSpec>>,
}

impl Faults {
    pub(super) fn new(seeds: SeedDeriver) -> Self {
        Faults {
            active: Vec::new(),
            active_free: Vec::new(),
            generators: Vec::new(),
            seeds,
            healed: false,
            recurring_log: None,
        }
    }

    /// Whether no fault is in effect now.
    pub(super) fn none_active(&self) -> bool {
        self.active.iter().all(Option::is_none)
    }

    /// The slot the next active fault will take.
    fn next_slot(&self) -> u32 {
        self.active_free
            .last()
            .copied()
            .unwrap_or(self.active.len() as u32)
    }

    fn add_active(&mut self, fault: ActiveFault) -> u32 {
        match self.active_free.pop() {
            Some(slot) => {
                self.active[slot as usize] = Some(fault);
                slot
            }
            None => {
                self.active.push(Some(fault));
                (self.active.len() - 1) as u32
            }
        }
    }
}

impl<H: SimHosts> Core<H> {
    /// Schedules the scenario's fault `index`: its start, or its recurring
    /// generators' first occurrences.
    pub(super) fn schedule_fault(&mut self, index: usize) -> Result<(), ScenarioError> {
        let fault = &self.scenario.faults[index];
        let lives = &self.engine.lives;
        if let FaultSpec::Recurring {
            kind,
            node,
            every,
            duration,
        } = fault
        {
            let targets: Vec<u32> = match node {
                Some(name) => vec![lives.node_index(name).ok_or_else(|| {
                    ScenarioError::new(
                        format!("fault[{index}].node"),
                        format!("unknown node `{name}`"),
                    )
                })?],
                None => (0..lives.node_count() as u32).collect(),
            };
            for node in targets {
                let rng = self
                    .faults
                    .seeds
                    .str("recurring-fault")
                    .num(index as u64)
                    .str(self.engine.lives.node_id(node).as_str())
                    .rng();
                let mut generator = Generator {
                    kind: *kind,
                    node,
                    every: *every,
                    duration: *duration,
                    rng,
                };
                let first = exponential(&mut generator.rng, generator.every);
                let id = self.faults.generators.len() as u32;
                self.faults.generators.push(generator);
                let at = self.engine.now + first;
                self.engine.schedule(at, Control::Recur(id));
            }
        } else if let Some((at, _)) = fault.window() {
            self.engine.schedule(
                SimTime::from_duration(at),
                Control::FaultStart(index as u32),
            );
        }
        Ok(())
    }

    /// Starts the scenario's scheduled fault `index` now.
    pub(super) fn start_fault(&mut self, index: usize) {
        let fault = self.scenario.faults[index].clone();
        let lives = &self.engine.lives;
        match fault {
            FaultSpec::Pause { host, duration, .. } => {
                if let Some(active) = self.pause_host(&host) {
                    self.schedule_end(active, duration);
                }
            }
            FaultSpec::Isolate { host, duration, .. } => {
                if let Some(endpoint) = lives.endpoint_of_host(&host) {
                    let active = self.isolate(endpoint);
                    self.schedule_end(active, duration);
                }
            }
            FaultSpec::Cut {
                from, to, duration, ..
            } => {
                if let (Some(a), Some(b)) =
                    (lives.endpoint_of_host(&from), lives.endpoint_of_host(&to))
                {
                    self.engine.cut(a, b, true);
                    self.schedule_end(ActiveFault::Cut(a, b), duration);
                }
            }
            FaultSpec::Partition {
                groups, duration, ..
            } => {
                let endpoints = lives.endpoint_count();
                // Hosts named in no group bridge the split: they reach everyone.
                let mut group_of = vec![BRIDGE; endpoints];
                for (g, group) in groups.iter().enumerate() {
                    for host in group {
                        if let Some(e) = lives.endpoint_of_host(host) {
                            group_of[usize::from(e)] = g as u16;
                        }
                    }
                }
                let text = groups
                    .iter()
                    .map(|g| format!("[{}]", g.join(", ")))
                    .collect::<Vec<_>>()
                    .join(" | ");
                let members: Vec<u16> = (0..endpoints as u16)
                    .filter(|&e| group_of[usize::from(e)] != BRIDGE)
                    .collect();
                self.engine.partition(Some(group_of), &text, &members);
                self.schedule_end(ActiveFault::Partition { text, members }, duration);
            }
            FaultSpec::Crash {
                node,
                restart_after,
                ..
            } => {
                if let Some(n) = lives.node_index(&node) {
                    self.crash_node(n, restart_after);
                }
            }
            FaultSpec::Replace { node, .. } => {
                if let Some(n) = lives.node_index(&node) {
                    self.engine.spawn(n, true);
                }
            }
            FaultSpec::Stop {
                node,
                restart_after,
                ..
            } => {
                if let Some(n) = lives.node_index(&node) {
                    let now = self.engine.now;
                    if self.engine.signal_node(n, now, H::stop_signal()) == 0 {
                        self.engine.skipped(n, Skipped::StopOfDownNode);
                    } else if let Some(after) = restart_after {
                        let at = now + after;
                        self.engine.schedule(at, Control::Restart(n));
                    }
                }
            }
            FaultSpec::Abdicate { node, .. } => {
                // Validation refuses `abdicate` for a protocol without it.
                if let (Some(n), Some(signal)) = (lives.node_index(&node), H::work_fails_signal()) {
                    let now = self.engine.now;
                    self.engine.signal_node(n, now, signal);
                }
            }
            FaultSpec::Restart {
                host,
                duration,
                durable,
                ..
            } => {
                if let Some(endpoint) = lives.endpoint_of_host(&host) {
                    let durable = durable.unwrap_or(self.scenario.durability.of(&host));
                    // Down: nothing reaches it or leaves it until it is back.
                    self.engine.isolate(endpoint, true);
                    self.schedule_end(ActiveFault::Restart { endpoint, durable }, duration);
                }
            }
            FaultSpec::ClockJump { host, by, .. } => {
                if let Some(endpoint) = lives.endpoint_of_host(&host) {
                    self.engine.jump_clock(endpoint, by.0);
                }
            }
            FaultSpec::Recurring { .. } => {}
        }
    }

    /// Makes `fault` active and schedules its end `duration` from now.
    fn schedule_end(&mut self, fault: ActiveFault, duration: Duration) {
        // Which hosts a fault touches, labelled: only for pictures (it
        // allocates), so only while an observer wants pictures.
        if self.engine.wants_pictures() {
            let slot = self.faults.next_slot();
            let spans: Vec<(Touched, String)> = match &fault {
                ActiveFault::PauseProcesses(pids) => pids
                    .iter()
                    .map(|&(pid, _)| (Touched::Process(pid), "pause".to_string()))
                    .collect(),
                ActiveFault::PauseServer(e) => vec![(Touched::Endpoint(*e), "pause".to_string())],
                ActiveFault::Isolate(e) => vec![(Touched::Endpoint(*e), "isolated".to_string())],
                ActiveFault::Restart { endpoint, durable } => vec![(
                    Touched::Endpoint(*endpoint),
                    format!(
                        "restart ({})",
                        if *durable { "durable" } else { "state lost" }
                    ),
                )],
                ActiveFault::Cut(a, b) => {
                    let lives = &self.engine.lives;
                    let (an, bn) = (lives.endpoint_ref(*a).name(), lives.endpoint_ref(*b).name());
                    vec![
                        (Touched::Endpoint(*a), format!("cut to {bn}")),
                        (Touched::Endpoint(*b), format!("cut from {an}")),
                    ]
                }
                ActiveFault::Partition { members, .. } => members
                    .iter()
                    .map(|&e| (Touched::Endpoint(e), "partition".to_string()))
                    .collect(),
            };
            self.engine.fault_began(slot, &spans);
        }
        let slot = self.faults.add_active(fault);
        let at = self.engine.now + duration;
        self.engine.schedule(at, Control::FaultEnd(slot));
    }

    /// Begins the liveness phase: ends every active fault (paused hosts
    /// resume and handle what queued), stops random loss and duplication,
    /// restarts every node that has no live process, and stops scheduled and
    /// recurring faults from starting. Clock offsets and drifts stay: they are
    /// properties of the hosts, not faults.
    /// Idempotent.
    pub fn heal_all(&mut self) {
        if self.faults.healed {
            return;
        }
        self.faults.healed = true;
        self.engine.observe(&Observation::Healed);
        for slot in 0..self.faults.active.len() as u32 {
            self.end_fault(slot);
        }
        self.engine.net.stop_loss_and_duplication();
        for node in 0..self.engine.lives.node_count() as u32 {
            if !self.engine.lives.node_alive(node) {
                self.engine.spawn(node, false);
            }
        }
    }

    /// Kills every live process of `node` and, when `restart_after` is
    /// given, schedules one new process that much later. A crash that finds
    /// no live process (the node is down already, or has not started) does
    /// nothing and schedules nothing: a restart belongs to the crash that
    /// took the node down.
    fn crash_node(&mut self, node: u32, restart_after: Option<Duration>) {
        if !self.engine.crash_node(node) {
            self.engine.skipped(node, Skipped::CrashOfDownNode);
            return;
        }
        if let Some(after) = restart_after {
            let at = self.engine.now + after;
            self.engine.schedule(at, Control::Restart(node));
        }
    }

    fn isolate(&mut self, endpoint: u16) -> ActiveFault {
        self.engine.isolate(endpoint, true);
        ActiveFault::Isolate(endpoint)
    }

    fn pause_host(&mut self, host: &str) -> Option<ActiveFault> {
        let lives = &self.engine.lives;
        let endpoint = lives.endpoint_of_host(host)?;
        if endpoint < lives.first_node_endpoint() {
            self.engine.pause_server(endpoint);
            return Some(ActiveFault::PauseServer(endpoint));
        }
        let node = lives.node_index(host)?;
        Some(ActiveFault::PauseProcesses(self.engine.pause_node(node)))
    }

    /// Ends the active fault in `slot` (nothing if it already ended).
    pub(super) fn end_fault(&mut self, slot: u32) {
        let Some(fault) = self
            .faults
            .active
            .get_mut(slot as usize)
            .and_then(Option::take)
        else {
            return;
        };
        self.faults.active_free.push(slot);
        self.engine.observe(&Observation::FaultEnded { slot });
        match fault {
            ActiveFault::PauseProcesses(pids) => {
                for (pid, incarnation) in pids {
                    self.engine.resume_process(pid, incarnation);
                }
            }
            ActiveFault::PauseServer(endpoint) => self.engine.resume_server(endpoint),
            ActiveFault::Isolate(endpoint) => self.engine.isolate(endpoint, false),
            ActiveFault::Restart { endpoint, durable } => {
                self.engine.isolate(endpoint, false);
                self.engine.restart_server(endpoint, durable);
            }
            ActiveFault::Cut(a, b) => self.engine.cut(a, b, false),
            ActiveFault::Partition { text, members } => {
                self.engine.partition(None, &text, &members)
            }
        }
    }

    /// Recurring-fault generator `id` fires: draw this occurrence's length
    /// and the next gap, then act.
    pub(super) fn recur(&mut self, id: u32) {
        let g = &mut self.faults.generators[id as usize];
        let (low, high) = (span_nanos(g.duration.low), span_nanos(g.duration.high));
        let duration = Duration::from_nanos(uniform_inclusive(&mut g.rng, low, high));
        let gap = exponential(&mut g.rng, g.every);
        let (kind, node) = (g.kind, g.node);
        let now = self.engine.now;
        self.engine.schedule(now + gap, Control::Recur(id));
        if let Some(log) = self.faults.recurring_log.as_mut() {
            let host = self.engine.lives.node_id(node).to_string();
            let (at, length) = (now.since_start(), duration);
            log.push(match kind {
                RecurringKind::Pause => FaultSpec::Pause {
                    host,
                    at,
                    duration: length,
                },
                RecurringKind::Isolate => FaultSpec::Isolate {
                    host,
                    at,
                    duration: length,
                },
                RecurringKind::Crash => FaultSpec::Crash {
                    node: host,
                    at,
                    restart_after: Some(length),
                },
            });
        }
        match kind {
            RecurringKind::Pause => {
                let paused = self.engine.pause_node(node);
                if !paused.is_empty() {
                    self.schedule_end(ActiveFault::PauseProcesses(paused), duration);
                }
            }
            RecurringKind::Isolate => {
                let endpoint = self.engine.lives.node_endpoint(node);
                let active = self.isolate(endpoint);
                self.schedule_end(active, duration);
            }
            RecurringKind::Crash => self.crash_node(node, Some(duration)),
        }
    }
}
