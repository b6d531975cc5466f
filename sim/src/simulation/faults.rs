//! Faults: the scenario's scheduled and recurring faults, executed in
//! virtual time. What a fault *means* — the hosts it names, a partition's
//! bridges, a restart's durability, `restart_after`, what the heal ends — is
//! decided once by the scenario's resolution ([`FaultSpec::resolve`],
//! [`RecurringKind::occurrence`]); this module applies each resolved
//! [`FaultAction`] through the engine's operations (pause and resume a host,
//! cut links, kill, start and signal processes) and keeps what a fault in
//! effect must undo when it ends.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use super::{Core, SimHosts};
use crate::engine::network::BRIDGE;
use crate::engine::{Control, Touched};
use crate::observation::{Observation, Skipped};
use crate::rng::{exponential, uniform_inclusive, SeedDeriver};
use crate::scenario::{
    DurationRange, FaultAction, FaultSpec, HostId, HostNames, Partition, PlanStep, RecurringKind,
    Resolution, ResolvedFault, ScenarioError, StepCause,
};
use crate::time::{span_nanos, SimTime};

/// A fault in effect: the scenario fault it belongs to, and the action that
/// ends it with what that action must undo.
#[derive(Debug)]
struct ActiveFault {
    /// The scenario's fault index.
    fault: u32,
    end: FaultAction,
    /// The processes a node's pause paused, by slot and life (empty
    /// otherwise): a resume resumes exactly these.
    paused: Vec<(u32, u32)>,
}

/// A recurring fault on one node, with its own RNG stream.
#[derive(Debug)]
struct Generator {
    /// The scenario's fault index.
    fault: u32,
    kind: RecurringKind,
    node: u32,
    every: Duration,
    duration: DurationRange,
    rng: ChaCha8Rng,
}

/// The faults of a run: those scheduled (resolved), those in effect, the
/// recurring generators, and whether the liveness phase has begun.
#[derive(Debug)]
pub(super) struct Faults {
    /// Each scheduled fault of the scenario resolved, by index (`None` for a
    /// recurring one).
    scheduled: Vec<Option<ResolvedFault>>,
    active: Vec<Option<ActiveFault>>,
    active_free: Vec<u32>,
    generators: Vec<Generator>,
    seeds: SeedDeriver,
    /// Set once the liveness phase has begun (see `Scenario::heal_at`).
    pub(super) healed: bool,
    /// Every recurring fault that fired, as a scheduled fault, when asked for.
    pub(super) recurring_log: Option<Vec<FaultSpec>>,
    /// Every fault action executed, in order, when asked for.
    pub(super) action_log: Option<Vec<PlanStep>>,
    /// Each `clock-strobe` begun, in start order: whether its clock stands
    /// `by` off (the heal steps it back).
    strobes: Vec<Strobe>,
}

/// A `clock-strobe` under way.
#[derive(Clone, Copy, Debug)]
struct Strobe {
    endpoint: u16,
    by: i64,
    period: Duration,
    flips: u32,
    /// Flips made so far (the start's included).
    made: u32,
}

impl Faults {
    pub(super) fn new(seeds: SeedDeriver) -> Self {
        Faults {
            scheduled: Vec::new(),
            active: Vec::new(),
            active_free: Vec::new(),
            generators: Vec::new(),
            seeds,
            healed: false,
            recurring_log: None,
            action_log: None,
            strobes: Vec::new(),
        }
    }

    /// Writes what of the faults decides the rest of a run, for a state's
    /// fingerprint: the faults in effect (what their ends undo), the
    /// recurring generators with their RNGs' positions, the strobes, the
    /// seeds and whether the heal came. Not the resolved schedule: a
    /// fingerprint is taken once the faults it compares have begun (the
    /// scenario's own are the same in every run compared), and the logs
    /// are records.
    pub(super) fn write_state(&self, w: &mut dyn std::fmt::Write) -> std::fmt::Result {
        write!(
            w,
            "active {:?} free {:?} generators [",
            self.active, self.active_free
        )?;
        for g in &self.generators {
            write!(
                w,
                "{} {:?} {} {:?} {:?} {:?}/{};",
                g.fault,
                g.kind,
                g.node,
                g.every,
                g.duration,
                g.rng.get_seed(),
                g.rng.get_word_pos()
            )?;
        }
        write!(
            w,
            "] seeds {:?} healed {} strobes {:?}",
            self.seeds, self.healed, self.strobes
        )
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

    /// Notes `action`, executed now for `cause`, if actions are logged.
    pub(super) fn log(&mut self, now: SimTime, cause: StepCause, action: &FaultAction) {
        if let Some(log) = self.action_log.as_mut() {
            log.push(PlanStep {
                at: now.since_start(),
                cause,
                action: action.clone(),
            });
        }
    }
}

impl<H: SimHosts> Core<H> {
    /// Resolves and schedules the scenario's fault `index`: its start, or
    /// its recurring generators' first occurrences.
    ///
    /// # Errors
    /// A fault naming a host the scenario lacks (validation refuses these).
    pub(super) fn schedule_fault(&mut self, index: usize) -> Result<(), ScenarioError> {
        let fault = &self.scenario.faults[index];
        let hosts = HostNames::of(&self.scenario);
        let resolution = fault.resolve(&self.scenario, &hosts).map_err(|error| {
            ScenarioError::new(format!("fault[{index}].node"), error.to_string())
        })?;
        debug_assert_eq!(
            self.faults.scheduled.len(),
            index,
            "faults resolve in order"
        );
        match resolution {
            Resolution::Scheduled(resolved) => {
                let at = SimTime::from_duration(resolved.at);
                self.faults.scheduled.push(Some(resolved));
                self.engine.schedule(at, Control::FaultStart(index as u32));
            }
            Resolution::Anchored { anchor, fault } => {
                self.faults.scheduled.push(Some(fault));
                self.arm_anchor(index, anchor);
            }
            Resolution::Recurring(recurring) => {
                self.faults.scheduled.push(None);
                for node in recurring.nodes {
                    let rng = self
                        .faults
                        .seeds
                        .str("recurring-fault")
                        .num(index as u64)
                        .str(self.engine.lives.node_id(node).as_str())
                        .rng();
                    let mut generator = Generator {
                        fault: index as u32,
                        kind: recurring.kind,
                        node,
                        every: recurring.every,
                        duration: recurring.duration,
                        rng,
                    };
                    let first = exponential(&mut generator.rng, generator.every);
                    let id = self.faults.generators.len() as u32;
                    self.faults.generators.push(generator);
                    let at = self.engine.now + first;
                    self.engine.schedule(at, Control::Recur(id));
                }
            }
        }
        Ok(())
    }

    /// Starts the scenario's scheduled (or anchored) fault `index` now.
    pub(super) fn start_fault(&mut self, index: usize) {
        let Some(fault) = self.faults.scheduled[index].clone() else {
            return;
        };
        self.note_anchored_began(index);
        self.begin(index as u32, &fault, false);
    }

    /// Executes `fault`'s start action now, for the scenario's fault
    /// `index`, and schedules what follows it. A `drawn` (recurring) pause
    /// that found no live process is no fault in effect; a scheduled one
    /// stays in effect for its duration.
    fn begin(&mut self, index: u32, fault: &ResolvedFault, drawn: bool) {
        let now = self.engine.now;
        self.faults
            .log(now, StepCause::Fault(index as usize), &fault.start);
        let mut paused = Vec::new();
        // Whether the follow-up is due: a restart only after a crash or a
        // stop that found a live process.
        let follows = match fault.start {
            FaultAction::Pause { host } => {
                let endpoint = self.engine.lives.endpoint(host);
                match host {
                    HostId::Server(_) => {
                        self.engine.pause_server(endpoint);
                    }
                    HostId::Node(node) => paused = self.engine.pause_node(node),
                }
                !(drawn && paused.is_empty())
            }
            FaultAction::Isolate { host } => {
                let endpoint = self.engine.lives.endpoint(host);
                self.engine.isolate(endpoint, true);
                true
            }
            FaultAction::Cut { from, to } => {
                let lives = &self.engine.lives;
                let (a, b) = (lives.endpoint(from), lives.endpoint(to));
                self.engine.cut(a, b, true);
                true
            }
            FaultAction::Partition(ref partition) => {
                let (group_of, members) = self.partition_endpoints(partition);
                self.engine
                    .partition(Some(group_of), partition.text(), &members);
                true
            }
            FaultAction::Crash { node } => {
                let found = self.engine.crash_node(node);
                if !found {
                    self.engine.skipped(node, Skipped::CrashOfDownNode);
                }
                found
            }
            FaultAction::Stop { node } => {
                let found = self.engine.signal_node(node, now, H::stop_signal()) > 0;
                if !found {
                    self.engine.skipped(node, Skipped::StopOfDownNode);
                }
                found
            }
            FaultAction::Abdicate { node } => {
                // Validation refuses `abdicate` for a protocol without it.
                if let Some(signal) = H::work_fails_signal() {
                    self.engine.signal_node(node, now, signal);
                }
                true
            }
            FaultAction::Replace { node } => {
                self.engine.spawn(node, true);
                true
            }
            FaultAction::ServerDown { server, .. } => {
                // Down: the sessions open to it are reset, nothing
                // reaches it or leaves it until it is back, and its
                // machine's kernel refuses new connections meanwhile.
                let endpoint = self.engine.lives.endpoint(HostId::Server(server));
                for (pid, reset) in self.engine.hosts.server_went_down(endpoint) {
                    self.engine.signal_process(pid, now, reset);
                }
                self.engine.server_down(endpoint, true);
                true
            }
            FaultAction::ClockJump { host, by } => {
                let endpoint = self.engine.lives.endpoint(host);
                self.engine.jump_clock(endpoint, by.0);
                true
            }
            FaultAction::ClockSlew { host, by, over } => {
                let endpoint = self.engine.lives.endpoint(host);
                let over = u64::try_from(over.as_nanos()).unwrap_or(u64::MAX);
                self.engine.slew_clock(endpoint, by.0, over);
                true
            }
            FaultAction::ClockStrobe {
                host,
                by,
                period,
                flips,
            } => {
                let endpoint = self.engine.lives.endpoint(host);
                self.engine.jump_clock(endpoint, by.0);
                let id = self.faults.strobes.len() as u32;
                self.faults.strobes.push(Strobe {
                    endpoint,
                    by: by.0,
                    period,
                    flips,
                    made: 1,
                });
                self.engine.schedule(now + period, Control::StrobeFlip(id));
                true
            }
            FaultAction::StartNode { .. }
            | FaultAction::Resume { .. }
            | FaultAction::Reconnect { .. }
            | FaultAction::Uncut { .. }
            | FaultAction::EndPartition(_)
            | FaultAction::Restart { .. }
            | FaultAction::ServerUp { .. }
            | FaultAction::Heal => unreachable!("not a fault's start: {:?}", fault.start),
        };
        let Some(follow) = fault.follow_up.as_ref().filter(|_| follows) else {
            return;
        };
        if let FaultAction::Restart { node } = follow.action {
            let restart = Control::Restart { node, fault: index };
            self.engine.schedule(now + follow.after, restart);
        } else {
            let active = ActiveFault {
                fault: index,
                end: follow.action.clone(),
                paused,
            };
            self.schedule_end(&fault.start, active, follow.after);
        }
    }

    /// Strobe `id`'s next flip is due: its clock steps back (after an odd
    /// number of flips) or off again, and the next is scheduled until the
    /// last (an even number: the clock ends where it began). Nothing after
    /// the heal, which ended it.
    pub(super) fn strobe_flip(&mut self, id: u32) {
        let strobe = &mut self.faults.strobes[id as usize];
        if strobe.made >= strobe.flips {
            return;
        }
        let by = if strobe.made % 2 == 1 {
            -strobe.by
        } else {
            strobe.by
        };
        strobe.made += 1;
        let (endpoint, more, period) = (strobe.endpoint, strobe.made < strobe.flips, strobe.period);
        self.engine.jump_clock(endpoint, by);
        if more {
            let at = self.engine.now + period;
            self.engine.schedule(at, Control::StrobeFlip(id));
        }
    }

    /// A partition's group per endpoint ([`BRIDGE`] for a host in no group)
    /// and the endpoints in a group, in endpoint order.
    fn partition_endpoints(&self, partition: &Partition) -> (Vec<u16>, Vec<u16>) {
        let lives = &self.engine.lives;
        let endpoints = lives.endpoint_count();
        let mut group_of = vec![BRIDGE; endpoints];
        for (g, group) in partition.groups().iter().enumerate() {
            for &host in group {
                group_of[usize::from(lives.endpoint(host))] = g as u16;
            }
        }
        let members: Vec<u16> = (0..endpoints as u16)
            .filter(|&e| group_of[usize::from(e)] != BRIDGE)
            .collect();
        (group_of, members)
    }

    /// Makes `fault` (begun by `start`) active and schedules its end
    /// `duration` from now.
    fn schedule_end(&mut self, start: &FaultAction, fault: ActiveFault, duration: Duration) {
        // Which hosts a fault touches, labelled: only for pictures (it
        // allocates), so only while an observer wants pictures.
        if self.engine.wants_pictures() {
            let slot = self.faults.next_slot();
            let spans = self.spans(start, &fault.paused);
            self.engine.fault_began(slot, &spans);
        }
        let slot = self.faults.add_active(fault);
        let at = self.engine.now + duration;
        self.engine.schedule(at, Control::FaultEnd(slot));
    }

    /// The hosts the fault begun by `start` touches, each with its label
    /// (`paused`: the processes a node's pause paused).
    fn spans(&self, start: &FaultAction, paused: &[(u32, u32)]) -> Vec<(Touched, String)> {
        let lives = &self.engine.lives;
        let endpoint = |host| Touched::Endpoint(lives.endpoint(host));
        match start {
            FaultAction::Pause {
                host: HostId::Node(_),
            } => paused
                .iter()
                .map(|&(pid, _)| (Touched::Process(pid), "pause".to_string()))
                .collect(),
            FaultAction::Pause { host } => vec![(endpoint(*host), "pause".to_string())],
            FaultAction::Isolate { host } => vec![(endpoint(*host), "isolated".to_string())],
            FaultAction::ServerDown { server, durable } => vec![(
                endpoint(HostId::Server(*server)),
                format!(
                    "restart ({})",
                    if *durable { "durable" } else { "state lost" }
                ),
            )],
            FaultAction::Cut { from, to } => {
                let (a, b) = (lives.endpoint(*from), lives.endpoint(*to));
                let (an, bn) = (lives.endpoint_ref(a).name(), lives.endpoint_ref(b).name());
                vec![
                    (Touched::Endpoint(a), format!("cut to {bn}")),
                    (Touched::Endpoint(b), format!("cut from {an}")),
                ]
            }
            FaultAction::Partition(partition) => self
                .partition_endpoints(partition)
                .1
                .into_iter()
                .map(|e| (Touched::Endpoint(e), "partition".to_string()))
                .collect(),
            other => unreachable!("a fault without an end: {other:?}"),
        }
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
        let now = self.engine.now;
        self.faults.log(now, StepCause::Heal, &FaultAction::Heal);
        self.engine.observe(&Observation::Healed);
        for slot in 0..self.faults.active.len() as u32 {
            self.end_fault(slot);
        }
        for id in 0..self.faults.strobes.len() {
            let strobe = &mut self.faults.strobes[id];
            if strobe.made < strobe.flips {
                let off = strobe.made % 2 == 1;
                strobe.made = strobe.flips;
                let (endpoint, by) = (strobe.endpoint, strobe.by);
                if off {
                    self.engine.jump_clock(endpoint, -by);
                }
            }
        }
        self.engine.net.stop_loss_and_duplication();
        for node in 0..self.engine.lives.node_count() as u32 {
            if !self.engine.lives.node_alive(node) {
                self.engine.spawn(node, false);
            }
        }
    }

    /// The end of the active fault in `slot` is due (nothing if it already
    /// ended): logs its end action and ends it.
    pub(super) fn fault_end_due(&mut self, slot: u32) {
        if let Some(Some(active)) = self.faults.active.get(slot as usize) {
            let cause = StepCause::Fault(active.fault as usize);
            let end = active.end.clone();
            self.faults.log(self.engine.now, cause, &end);
        }
        self.end_fault(slot);
    }

    /// Ends the active fault in `slot` (nothing if it already ended): its
    /// end action undoes what its start did.
    fn end_fault(&mut self, slot: u32) {
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
        let lives = &self.engine.lives;
        match fault.end {
            FaultAction::Resume {
                host: HostId::Node(_),
            } => {
                for (pid, incarnation) in fault.paused {
                    self.engine.resume_process(pid, incarnation);
                }
            }
            FaultAction::Resume { host } => {
                let endpoint = lives.endpoint(host);
                self.engine.resume_server(endpoint);
            }
            FaultAction::Reconnect { host } => {
                let endpoint = lives.endpoint(host);
                self.engine.isolate(endpoint, false);
            }
            FaultAction::ServerUp { server, durable } => {
                let endpoint = lives.endpoint(HostId::Server(server));
                self.engine.server_down(endpoint, false);
                self.engine.restart_server(endpoint, durable);
            }
            FaultAction::Uncut { from, to } => {
                let (a, b) = (lives.endpoint(from), lives.endpoint(to));
                self.engine.cut(a, b, false);
            }
            FaultAction::EndPartition(partition) => {
                let (_, members) = self.partition_endpoints(&partition);
                self.engine.partition(None, partition.text(), &members);
            }
            other => unreachable!("not a fault's end: {other:?}"),
        }
    }

    /// Recurring-fault generator `id` fires: draw this occurrence's length
    /// and the next gap, then act.
    pub(super) fn recur(&mut self, id: u32) {
        let g = &mut self.faults.generators[id as usize];
        let (low, high) = (span_nanos(g.duration.low), span_nanos(g.duration.high));
        let duration = Duration::from_nanos(uniform_inclusive(&mut g.rng, low, high));
        let gap = exponential(&mut g.rng, g.every);
        let (fault, kind, node) = (g.fault, g.kind, g.node);
        let now = self.engine.now;
        self.engine.schedule(now + gap, Control::Recur(id));
        if let Some(log) = self.faults.recurring_log.as_mut() {
            let host = self.engine.lives.node_id(node).to_string();
            log.push(kind.scheduled(host, now.since_start(), duration));
        }
        let occurrence = kind.occurrence(node, now.since_start(), duration);
        self.begin(fault, &occurrence, true);
    }
}
