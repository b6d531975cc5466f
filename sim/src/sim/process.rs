//! A node's processes: the elector, the heartbeat loop and the worker.

use super::*;

impl Simulation {
    // ----- nodes and their processes -----

    /// Starts a new process (incarnation) of `node`. Only a `replace` fault
    /// may start one while another runs: a node has one life at a time.
    pub(super) fn spawn_process(&mut self, node: u32, replacing: bool) -> u32 {
        assert!(
            replacing || !self.node_alive(node),
            "a node runs at most one process unless a `replace` fault starts another"
        );
        let n = &mut self.hosts.nodes[node as usize];
        let incarnation = n.next_incarnation;
        // Every start is an event, and runs are capped below 2^32 events.
        n.next_incarnation = incarnation
            .checked_add(1)
            .expect("fewer than 2^32 processes per run");
        let clock = n.clock;
        // Never renamed: two processes behind one owner id would both lead on
        // one token. Validation keeps node ids short enough for the suffix.
        let owner = OwnerId::new(format!("{}#{incarnation}", n.id))
            .expect("node ids are validated to leave room for `#incarnation`");
        let jitter_seed = self
            .seeds
            .str("elector")
            .str(n.id.as_str())
            .num(u64::from(incarnation))
            .seed();
        let config = ElectorConfig::new(
            owner.clone(),
            self.role.clone(),
            self.scenario.election.timings(jitter_seed),
        )
        .expect("election settings were validated in Simulation::new");
        #[allow(unused_mut)]
        let mut elector = Elector::new(config);
        #[cfg(feature = "planted-bugs")]
        if let Some(bug) = self.planted_bug {
            elector.plant(bug);
        }
        let process = Process {
            node,
            incarnation,
            owner,
            alive: true,
            pause_depth: 0,
            deferred: Vec::new(),
            elector,
            timer_at: None,
            timer_generation: 0,
            work_generation: 0,
            next_unit: 1,
            believed: None,
            clock,
        };
        let reusable = self.hosts.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .find(|&pid| !self.hosts.procs[pid as usize].alive);
        let pid = match reusable {
            Some(pid) => {
                self.hosts.procs[pid as usize] = process;
                pid
            }
            None => {
                self.hosts.procs.push(process);
                let pid = (self.hosts.procs.len() - 1) as u32;
                self.hosts.nodes[node as usize].pids.push(pid);
                pid
            }
        };
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::ProcessStarted(process));
        let local = self.local(pid);
        self.hosts.procs[pid as usize].elector.start(local);
        self.drain_elector(pid);
        self.heartbeat(pid);
        pid
    }

    pub(super) fn heartbeat(&mut self, pid: u32) {
        let p = &self.hosts.procs[pid as usize];
        let (node, incarnation) = (p.node, p.incarnation);
        let endpoint = self.hosts.nodes[node as usize].endpoint;
        self.send(endpoint, Dest::Store, Message::Heartbeat { pid, node });
        let next = self.local(pid) + Duration::from_nanos(self.heartbeat_ns);
        let at = self.true_time(pid, next);
        self.queue
            .push(at, Event::HeartbeatTimer { pid, incarnation });
    }

    pub(super) fn process_receive(&mut self, pid: u32, msg: Message) {
        let local = self.local(pid);
        match msg {
            Message::LeaseResponse { id, result } => {
                // What the trace and the checker need, read before the answer
                // moves into the elector.
                let acquired = result.acquired_token();
                let renewal = matches!(result, LeaseResult::Renewed { .. });
                let p = &mut self.hosts.procs[pid as usize];
                let disposition = p.elector.handle_response(id, result, local);
                self.observers.emit(
                    self.now,
                    &Observation::ResponseHandled {
                        process: self.hosts.process_ref(pid),
                        request: id.0,
                        disposition,
                        acquired,
                        renewal,
                    },
                );
            }
            Message::LeaseFailed { id } => {
                self.hosts.procs[pid as usize]
                    .elector
                    .handle_request_failed(id, local);
                self.observers.emit(
                    self.now,
                    &Observation::RequestFailed {
                        process: self.hosts.process_ref(pid),
                        request: id.0,
                    },
                );
            }
            _ => debug_assert!(false, "processes only receive lease answers"),
        }
        self.drain_elector(pid);
    }

    /// Acts on everything the elector asked for, then re-arms its timer.
    pub(super) fn drain_elector(&mut self, pid: u32) {
        while let Some(output) = self.hosts.procs[pid as usize].elector.poll_output() {
            let p = &self.hosts.procs[pid as usize];
            let endpoint = self.hosts.nodes[p.node as usize].endpoint;
            match output {
                ElectorOutput::SendLeaseRequest { id, ttl } => {
                    let local = p.clock.local(self.now);
                    self.observers.emit(
                        self.now,
                        &Observation::RequestSent {
                            process: self.hosts.process_ref(pid),
                            request: id.0,
                            local,
                        },
                    );
                    let p = &self.hosts.procs[pid as usize];
                    let msg = Message::LeaseRequest {
                        pid,
                        incarnation: p.incarnation,
                        owner: p.owner.clone(),
                        id,
                        ttl,
                    };
                    self.send(endpoint, Dest::Store, msg);
                }
                ElectorOutput::StartWork { token } => self.start_term(pid, token),
                ElectorOutput::StopWork { token, reason } => self.end_term(pid, token, &reason),
                ElectorOutput::Release { token } => {
                    let msg = Message::Release {
                        pid,
                        incarnation: p.incarnation,
                        owner: p.owner.clone(),
                        token,
                    };
                    self.send(endpoint, Dest::Store, msg);
                }
                ElectorOutput::LeaderObserved { .. } => {}
            }
        }
        self.arm_elector_timer(pid);
    }

    pub(super) fn arm_elector_timer(&mut self, pid: u32) {
        let Some(local) = self.hosts.procs[pid as usize].elector.next_timeout() else {
            return;
        };
        let at = self.true_time(pid, local);
        let p = &mut self.hosts.procs[pid as usize];
        if p.timer_at == Some(at) {
            return;
        }
        p.timer_generation = p.timer_generation.wrapping_add(1);
        p.timer_at = Some(at);
        let event = Event::ElectorTimer {
            pid,
            incarnation: p.incarnation,
            generation: p.timer_generation,
        };
        self.queue.push(at, event);
    }

    pub(super) fn start_term(&mut self, pid: u32, token: FencingToken) {
        let p = &mut self.hosts.procs[pid as usize];
        debug_assert!(
            p.believed.is_none(),
            "StopWork comes before the next StartWork"
        );
        p.believed = Some(token);
        p.work_generation = p.work_generation.wrapping_add(1);
        let event = Event::WorkTimer {
            pid,
            incarnation: p.incarnation,
            generation: p.work_generation,
        };
        self.queue.push(self.now, event);
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::TermStarted { process, token });
    }

    pub(super) fn end_term(&mut self, pid: u32, token: FencingToken, reason: &StepDownReason) {
        let p = &mut self.hosts.procs[pid as usize];
        debug_assert_eq!(p.believed, Some(token), "StopWork ends the term in hand");
        p.believed = None;
        p.work_generation = p.work_generation.wrapping_add(1);
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::TermEnded {
                process,
                token,
                reason,
            },
        );
    }

    pub(super) fn work_tick(&mut self, pid: u32) {
        // The unit checks leadership at its start: bring the elector up to
        // date first, so a deadline due now is honoured.
        let local = self.local(pid);
        self.hosts.procs[pid as usize].elector.handle_timeout(local);
        self.drain_elector(pid);
        let p = &mut self.hosts.procs[pid as usize];
        let Some(token) = p.believed else {
            return;
        };
        if p.elector.token_at(local) != Some(token) {
            return;
        }
        let unit = p.next_unit;
        p.next_unit += 1;
        let (incarnation, generation) = (p.incarnation, p.work_generation);
        let done_at = self.true_time(pid, local + self.work_duration);
        self.queue.push(
            done_at,
            Event::WorkDone {
                pid,
                incarnation,
                token,
                unit,
            },
        );
        let next_at = self.true_time(pid, local + self.write_interval);
        self.queue.push(
            next_at,
            Event::WorkTimer {
                pid,
                incarnation,
                generation,
            },
        );
        // The checker judges `local-deadline` from this and its own record
        // of the requests sent and answered.
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::WorkStarted {
                process,
                token,
                unit,
                local,
            },
        );
    }

    pub(super) fn work_done(&mut self, pid: u32, token: FencingToken, unit: u64) {
        let p = &self.hosts.procs[pid as usize];
        if p.believed != Some(token) {
            // The term ended while the unit ran; the worker noticed its
            // cancellation before writing.
            let process = self.hosts.process_ref(pid);
            self.observers.emit(
                self.now,
                &Observation::WorkCancelled {
                    process,
                    token,
                    unit,
                },
            );
            return;
        }
        // No second leadership check here: that is the check-then-act gap a
        // pause falls into, and what fencing exists to close.
        let endpoint = self.hosts.nodes[p.node as usize].endpoint;
        let msg = Message::Write {
            pid,
            incarnation: p.incarnation,
            owner: p.owner.clone(),
            token,
            unit,
        };
        let process = self.hosts.process_ref(pid);
        self.observers.emit(
            self.now,
            &Observation::WriteSent {
                process,
                token,
                unit,
            },
        );
        self.send(endpoint, Dest::Downstream, msg);
    }

    pub(super) fn crash_process(&mut self, pid: u32) {
        let p = &mut self.hosts.procs[pid as usize];
        p.believed = None;
        p.alive = false;
        p.pause_depth = 0;
        p.deferred = Vec::new();
        let process = self.hosts.process_ref(pid);
        self.observers
            .emit(self.now, &Observation::ProcessCrashed(process));
    }
}
