//! Faults: scheduled and recurring, started and ended through the engine's
//! pause, network and process-life operations.

use super::*;

/// A fault in effect, to undo when it ends.
#[derive(Debug)]
pub(super) enum ActiveFault {
    PauseProcesses(Vec<(u32, u32)>),
    PauseStore,
    PauseDownstream,
    Isolate(u16),
    Cut(u16, u16),
    Partition { text: String, members: Vec<u16> },
}

/// A recurring fault on one node, with its own RNG stream.
#[derive(Debug)]
pub(super) struct Generator {
    kind: RecurringKind,
    node: u32,
    every: u64,
    duration: DurationRange,
    rng: ChaCha8Rng,
}

impl Simulation {
    pub(super) fn schedule_fault(&mut self, index: usize) -> Result<(), ScenarioError> {
        let fault = &self.scenario.faults[index];
        if let FaultSpec::Recurring {
            kind,
            node,
            every,
            duration,
        } = fault
        {
            let targets: Vec<u32> = match node {
                Some(name) => vec![self.hosts.node_index(name).ok_or_else(|| {
                    ScenarioError::new(
                        format!("fault[{index}].node"),
                        format!("unknown node `{name}`"),
                    )
                })?],
                None => (0..self.hosts.nodes.len() as u32).collect(),
            };
            for node in targets {
                let rng = self
                    .seeds
                    .str("recurring-fault")
                    .num(index as u64)
                    .str(self.hosts.nodes[node as usize].id.as_str())
                    .rng();
                let generator = Generator {
                    kind: *kind,
                    node,
                    every: nanos(*every),
                    duration: *duration,
                    rng,
                };
                let id = self.generators.len() as u32;
                self.generators.push(generator);
                let g = &mut self.generators[id as usize];
                let first = exponential_nanos(&mut g.rng, g.every);
                self.queue.push(
                    self.now.saturating_add(first),
                    Event::Recur { generator: id },
                );
            }
        } else if let Some((at, _)) = fault.window() {
            self.queue.push(
                nanos(at).max(self.now),
                Event::FaultStart {
                    fault: index as u32,
                },
            );
        }
        Ok(())
    }

    // ----- faults -----

    pub(super) fn add_active(&mut self, fault: ActiveFault) -> u32 {
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

    pub(super) fn schedule_end(&mut self, fault: ActiveFault, duration: u64) {
        // Which hosts a fault touches, labelled: only for pictures (it
        // allocates), so only while a timeline is recorded.
        if self.observers.timeline.is_some() {
            let slot = self
                .active_free
                .last()
                .copied()
                .unwrap_or(self.active.len() as u32);
            let h = &self.hosts;
            let label = |text: &str| text.to_string();
            let spans: Vec<(HostRef<'_>, String)> = match &fault {
                ActiveFault::PauseProcesses(pids) => pids
                    .iter()
                    .map(|(pid, _)| (HostRef::Process(h.process_ref(*pid)), label("pause")))
                    .collect(),
                ActiveFault::PauseStore => vec![(HostRef::LeaseStore, label("pause"))],
                ActiveFault::PauseDownstream => vec![(HostRef::Downstream, label("pause"))],
                ActiveFault::Isolate(e) => vec![(h.endpoint_ref(*e), label("isolated"))],
                ActiveFault::Cut(a, b) => {
                    let (a, b) = (h.endpoint_ref(*a), h.endpoint_ref(*b));
                    vec![
                        (a, format!("cut to {}", b.name())),
                        (b, format!("cut from {}", a.name())),
                    ]
                }
                ActiveFault::Partition { members, .. } => members
                    .iter()
                    .map(|e| (h.endpoint_ref(*e), label("partition")))
                    .collect(),
            };
            self.observers.emit(
                self.now,
                &Observation::FaultBegan {
                    slot,
                    spans: &spans,
                },
            );
        }
        let slot = self.add_active(fault);
        self.queue.push(
            self.now.saturating_add(duration),
            Event::FaultEnd { active: slot },
        );
    }

    pub(super) fn start_fault(&mut self, index: usize) {
        let fault = self.scenario.faults[index].clone();
        match fault {
            FaultSpec::Pause { host, duration, .. } => {
                if let Some(active) = self.pause_host(&host) {
                    self.schedule_end(active, nanos(duration));
                }
            }
            FaultSpec::Isolate { host, duration, .. } => {
                if let Some(endpoint) = self.hosts.endpoint_of_host(&host) {
                    let active = self.isolate(endpoint);
                    self.schedule_end(active, nanos(duration));
                }
            }
            FaultSpec::Cut {
                from, to, duration, ..
            } => {
                if let (Some(a), Some(b)) = (
                    self.hosts.endpoint_of_host(&from),
                    self.hosts.endpoint_of_host(&to),
                ) {
                    self.net.cut(a, b, true);
                    self.observe_cut(a, b, true);
                    self.schedule_end(ActiveFault::Cut(a, b), nanos(duration));
                }
            }
            FaultSpec::Partition {
                groups, duration, ..
            } => {
                let endpoints = usize::from(FIRST_NODE_ENDPOINT) + self.hosts.nodes.len();
                // Hosts named in no group bridge the split: they reach everyone.
                let mut group_of = vec![BRIDGE; endpoints];
                for (g, group) in groups.iter().enumerate() {
                    for host in group {
                        if let Some(e) = self.hosts.endpoint_of_host(host) {
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
                self.net.partition(Some(group_of));
                self.observe_partition(&text, &members, true);
                self.schedule_end(ActiveFault::Partition { text, members }, nanos(duration));
            }
            FaultSpec::Crash {
                node,
                restart_after,
                ..
            } => {
                if let Some(n) = self.hosts.node_index(&node) {
                    self.crash_node(n, restart_after.map(nanos));
                }
            }
            FaultSpec::Replace { node, .. } => {
                if let Some(n) = self.hosts.node_index(&node) {
                    self.spawn_process(n, true);
                }
            }
            FaultSpec::Recurring { .. } => {}
        }
    }

    pub(super) fn observe_cut(&mut self, from: u16, to: u16, start: bool) {
        let h = &self.hosts;
        let (from, to) = (h.endpoint_ref(from), h.endpoint_ref(to));
        self.observers
            .emit(self.now, &Observation::Cut { from, to, start });
    }

    pub(super) fn observe_partition(&mut self, groups: &str, members: &[u16], start: bool) {
        let h = &self.hosts;
        let members: Vec<HostRef<'_>> = members.iter().map(|&e| h.endpoint_ref(e)).collect();
        self.observers.emit(
            self.now,
            &Observation::Partitioned {
                start,
                groups,
                members: &members,
            },
        );
    }

    pub(super) fn node_alive(&self, node: u32) -> bool {
        self.hosts.nodes[node as usize]
            .pids
            .iter()
            .any(|&pid| self.hosts.procs[pid as usize].alive)
    }

    /// Begins the liveness phase: ends every active fault (paused hosts
    /// resume and handle what queued), stops random loss and duplication,
    /// restarts every node that has no live process, and stops scheduled and
    /// recurring faults from starting. Clock offsets and drifts stay: they are
    /// properties of the hosts, not faults.
    /// Idempotent.
    pub fn heal_all(&mut self) {
        if self.healed {
            return;
        }
        self.healed = true;
        self.observers.emit(self.now, &Observation::Healed);
        for slot in 0..self.active.len() as u32 {
            self.end_fault(slot);
        }
        self.net.stop_loss_and_duplication();
        for node in 0..self.hosts.nodes.len() as u32 {
            if !self.node_alive(node) {
                self.spawn_process(node, false);
            }
        }
    }

    /// Kills every live process of `node` and, when `restart_after` is
    /// given, schedules one new process that much later. A crash that finds
    /// no live process (the node is down already, or has not started) does
    /// nothing and schedules nothing: a restart belongs to the crash that
    /// took the node down.
    pub(super) fn crash_node(&mut self, node: u32, restart_after: Option<u64>) {
        let pids: Vec<u32> = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .filter(|&pid| self.hosts.procs[pid as usize].alive)
            .collect();
        if pids.is_empty() {
            self.skipped(node, Skipped::CrashOfDownNode);
            return;
        }
        for pid in pids {
            self.crash_process(pid);
        }
        if let Some(after) = restart_after {
            self.queue
                .push(self.now.saturating_add(after), Event::Restart { node });
        }
    }

    /// Traces a node fault that found nothing to act on.
    pub(super) fn skipped(&mut self, node: u32, what: Skipped) {
        let node = self.hosts.node_ref(node);
        self.observers
            .emit(self.now, &Observation::Skipped { node, what });
    }

    pub(super) fn observe_isolation(&mut self, endpoint: u16, start: bool) {
        let host = self.hosts.endpoint_ref(endpoint);
        self.observers
            .emit(self.now, &Observation::Isolated { host, start });
    }

    pub(super) fn isolate(&mut self, endpoint: u16) -> ActiveFault {
        self.net.isolate(endpoint, true);
        self.observe_isolation(endpoint, true);
        ActiveFault::Isolate(endpoint)
    }

    pub(super) fn pause_host(&mut self, host: &str) -> Option<ActiveFault> {
        match host {
            LEASE_STORE => {
                self.store.pause_depth += 1;
                let depth = self.store.pause_depth;
                self.observers.emit(
                    self.now,
                    &Observation::Paused {
                        host: HostRef::LeaseStore,
                        depth,
                    },
                );
                Some(ActiveFault::PauseStore)
            }
            DOWNSTREAM => {
                self.downstream.pause_depth += 1;
                let depth = self.downstream.pause_depth;
                self.observers.emit(
                    self.now,
                    &Observation::Paused {
                        host: HostRef::Downstream,
                        depth,
                    },
                );
                Some(ActiveFault::PauseDownstream)
            }
            name => {
                let node = self.hosts.node_index(name)?;
                Some(self.pause_node(node))
            }
        }
    }

    pub(super) fn pause_node(&mut self, node: u32) -> ActiveFault {
        let pids: Vec<u32> = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .filter(|&pid| self.hosts.procs[pid as usize].alive)
            .collect();
        let mut paused = Vec::with_capacity(pids.len());
        for pid in pids {
            let p = &mut self.hosts.procs[pid as usize];
            p.pause_depth += 1;
            let depth = p.pause_depth;
            paused.push((pid, p.incarnation));
            let host = HostRef::Process(self.hosts.process_ref(pid));
            self.observers
                .emit(self.now, &Observation::Paused { host, depth });
        }
        ActiveFault::PauseProcesses(paused)
    }

    pub(super) fn end_fault(&mut self, slot: u32) {
        let Some(fault) = self.active.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        self.active_free.push(slot);
        self.observers
            .emit(self.now, &Observation::FaultEnded { slot });
        match fault {
            ActiveFault::PauseProcesses(pids) => {
                for (pid, incarnation) in pids {
                    let p = &mut self.hosts.procs[pid as usize];
                    if !p.alive || p.incarnation != incarnation || p.pause_depth == 0 {
                        continue;
                    }
                    p.pause_depth -= 1;
                    let depth = p.pause_depth;
                    let deferred = if depth == 0 {
                        mem::take(&mut p.deferred)
                    } else {
                        Vec::new()
                    };
                    self.resumed(Target::Process { pid, incarnation }, depth, deferred);
                }
            }
            ActiveFault::PauseStore => {
                self.store.pause_depth -= 1;
                let depth = self.store.pause_depth;
                let deferred = if depth == 0 {
                    mem::take(&mut self.store.deferred)
                } else {
                    Vec::new()
                };
                self.resumed(Target::Store, depth, deferred);
            }
            ActiveFault::PauseDownstream => {
                self.downstream.pause_depth -= 1;
                let depth = self.downstream.pause_depth;
                let deferred = if depth == 0 {
                    mem::take(&mut self.downstream.deferred)
                } else {
                    Vec::new()
                };
                self.resumed(Target::Downstream, depth, deferred);
            }
            ActiveFault::Isolate(endpoint) => {
                self.net.isolate(endpoint, false);
                self.observe_isolation(endpoint, false);
            }
            ActiveFault::Cut(a, b) => {
                self.net.cut(a, b, false);
                self.observe_cut(a, b, false);
            }
            ActiveFault::Partition { text, members } => {
                self.net.partition(None);
                self.observe_partition(&text, &members, false);
            }
        }
    }

    /// Observes a pause of `host` ending, `depth` pauses still in effect; at
    /// depth 0 the host handles what queued while it was paused.
    pub(super) fn resumed(&mut self, host: Target, depth: u32, deferred: Vec<Event>) {
        let host = match host {
            Target::Store => HostRef::LeaseStore,
            Target::Downstream => HostRef::Downstream,
            Target::Process { pid, .. } => HostRef::Process(self.hosts.process_ref(pid)),
            Target::Engine => unreachable!("only hosts pause"),
        };
        self.observers.emit(
            self.now,
            &Observation::Resumed {
                host,
                depth,
                deferred: deferred.len() as u64,
            },
        );
        self.replay(deferred);
    }

    /// Handles events that queued while their host was paused, in order, now.
    pub(super) fn replay(&mut self, deferred: Vec<Event>) {
        for event in deferred {
            // A process may have crashed, or a timer been superseded, since.
            if let Target::Process { pid, incarnation } = event.target() {
                let p = &self.hosts.procs[pid as usize];
                if !p.alive || p.incarnation != incarnation {
                    continue;
                }
            }
            if self.is_stale(&event) {
                continue;
            }
            self.handle(event);
        }
    }

    pub(super) fn recur(&mut self, id: u32) {
        let g = &mut self.generators[id as usize];
        let (low, high) = (nanos(g.duration.low), nanos(g.duration.high));
        let duration = uniform_inclusive(&mut g.rng, low, high);
        let gap = exponential_nanos(&mut g.rng, g.every);
        let (kind, node) = (g.kind, g.node);
        self.queue
            .push(self.now.saturating_add(gap), Event::Recur { generator: id });
        if let Some(log) = self.recurring_log.as_mut() {
            let host = self.hosts.nodes[node as usize].id.to_string();
            let (at, length) = (
                Duration::from_nanos(self.now),
                Duration::from_nanos(duration),
            );
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
                let active = self.pause_node(node);
                if matches!(&active, ActiveFault::PauseProcesses(p) if !p.is_empty()) {
                    self.schedule_end(active, duration);
                }
            }
            RecurringKind::Isolate => {
                let endpoint = self.hosts.nodes[node as usize].endpoint;
                let active = self.isolate(endpoint);
                self.schedule_end(active, duration);
            }
            RecurringKind::Crash => self.crash_node(node, Some(duration)),
        }
    }
}
