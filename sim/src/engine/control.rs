//! What the engine's owner does to hosts between events — start and crash
//! processes, pause and resume them, step and slew clocks, restart
//! servers, cut, isolate and partition links — and the engine's bookkeeping
//! of what each did (deferred events, held messages, the observations).
//! The loop that handles events is in `engine/mod.rs`; these are the small
//! API the [`Simulation`](crate::Simulation) acts through when a
//! [`Control`](super::Control) event comes due.

use super::*;

impl<H: Hosts, O: Observer> Engine<H, O> {
    // ----- process lives -----

    /// Starts a new process (incarnation) of `node`, as a follower. Only a
    /// `replace` fault may start one while another runs: a node has one life
    /// at a time.
    pub(crate) fn spawn(&mut self, node: u32, replacing: bool) -> u32 {
        assert!(
            replacing || !self.lives.node_alive(node),
            "a node runs at most one process unless a `replace` fault starts another"
        );
        let pid = self.lives.spawn(node);
        let process = self.lives.process_ref(pid);
        self.observers
            .observe(self.now, &Observation::ProcessStarted(process));
        let incarnation = self.lives.incarnation_of(pid);
        let owner = self.lives.owner_of(pid).clone();
        let me = Address::Process { pid, incarnation };
        let (hosts, mut out) = self.outbox(me);
        hosts.start_process(pid, node, incarnation, &owner, &mut out);
        pid
    }

    /// Kills every live process of `node`; returns whether there was one.
    pub(crate) fn crash_node(&mut self, node: u32) -> bool {
        let pids = self.lives.alive_pids(node);
        for &pid in &pids {
            let incarnation = self.lives.incarnation_of(pid);
            let (hosts, mut out) = self.outbox(Address::Process { pid, incarnation });
            hosts.crash_process(pid, &mut out);
            self.lives.kill(pid);
            let process = self.lives.process_ref(pid);
            self.observers
                .observe(self.now, &Observation::ProcessCrashed(process));
        }
        !pids.is_empty()
    }

    /// Observes a node fault that found nothing to act on.
    pub(crate) fn skipped(&mut self, node: u32, what: Skipped) {
        let node = self.lives.node_ref(node);
        self.observers
            .observe(self.now, &Observation::Skipped { node, what });
    }

    // ----- clocks and restarts -----

    /// Steps `endpoint`'s wall clock by `by` ns (a server's, or every
    /// process's of a node) and, if the host times by it, has the running
    /// hosts re-arm their timers (a host that times by its monotonic clock
    /// sees nothing).
    pub(crate) fn jump_clock(&mut self, endpoint: u16, by: i64) {
        let moved = self.lives.jump_clock(endpoint, by);
        let host = self.lives.endpoint_ref(endpoint);
        self.observers.observe(
            self.now,
            &Observation::ClockJumped {
                host,
                by_nanos: by,
                moved,
            },
        );
        if moved {
            self.clock_changed(endpoint);
        } else if endpoint >= self.lives.first_node_endpoint() {
            let node = u32::from(endpoint - self.lives.first_node_endpoint());
            for pid in self.lives.alive_pids(node) {
                let paused = self.lives.is_paused(pid);
                let incarnation = self.lives.incarnation_of(pid);
                let to = Address::Process { pid, incarnation };
                let (hosts, mut out) = self.outbox(to);
                hosts.wall_stepped(to, by, paused, &mut out);
            }
        }
    }

    /// Slews both clocks of `endpoint` by `by` ns over `over` ns of true
    /// time from now (a `clock-slew`): every running host on it re-arms its
    /// timers, whichever clock it times by.
    pub(crate) fn slew_clock(&mut self, endpoint: u16, by: i64, over: u64) {
        self.lives.slew_clock(endpoint, self.now, by, over);
        let host = self.lives.endpoint_ref(endpoint);
        self.observers.observe(
            self.now,
            &Observation::ClockSlewed {
                host,
                by_nanos: by,
                over_nanos: over,
            },
        );
        self.clock_changed(endpoint);
    }

    /// `endpoint`'s clock changed its course: its running hosts re-arm the
    /// timers they set on it.
    ///
    /// A paused host is not told now: it could not act on it. It is told
    /// when its pause ends (see [`resumed`](Self::resumed)), as a paused
    /// process sees a stepped clock when it runs again — its timers due by
    /// the new reading fire then, not when the old reading would have come.
    fn clock_changed(&mut self, endpoint: u16) {
        let targets: Vec<Address> = if endpoint < self.lives.first_node_endpoint() {
            let server = &mut self.servers[usize::from(endpoint)];
            if server.depth > 0 {
                server.clock_moved = true;
            }
            (server.depth == 0)
                .then_some(Address::Server(endpoint))
                .into_iter()
                .collect()
        } else {
            let node = u32::from(endpoint - self.lives.first_node_endpoint());
            let mut running = Vec::new();
            for pid in self.lives.alive_pids(node) {
                if self.lives.is_paused(pid) {
                    self.lives.clock_moved_while_paused(pid);
                } else {
                    running.push(Address::Process {
                        pid,
                        incarnation: self.lives.incarnation_of(pid),
                    });
                }
            }
            running
        };
        for to in targets {
            let (hosts, mut out) = self.outbox(to);
            hosts.clock_changed(to, &mut out);
        }
    }

    /// Server `endpoint` comes back from a restart (its downtime is the
    /// caller's: an isolation).
    pub(crate) fn restart_server(&mut self, endpoint: u16, durable: bool) {
        let host = self.lives.endpoint_ref(endpoint);
        self.observers
            .observe(self.now, &Observation::Restarted { host, durable });
        let to = Address::Server(endpoint);
        let (hosts, mut out) = self.outbox(to);
        hosts.restart_server(endpoint, durable, &mut out);
    }

    // ----- links -----

    /// Whether an observer wants the picture-only observations.
    pub(crate) fn wants_pictures(&self) -> bool {
        self.observers.wants_pictures()
    }

    /// Every link of `endpoint` goes down (`start`) or one isolation ends.
    pub(crate) fn isolate(&mut self, endpoint: u16, start: bool) {
        self.net.isolate(endpoint, start);
        self.isolation_changed(endpoint, start);
    }

    /// Server `endpoint` goes down (`start`) or is back: an isolation, as
    /// [`isolate`](Self::isolate), whose kernel refuses new connections
    /// meanwhile ([`Network::refuses`](super::network::Network::refuses)).
    pub(crate) fn server_down(&mut self, endpoint: u16, start: bool) {
        self.net.server_down(endpoint, start);
        self.isolation_changed(endpoint, start);
    }

    /// What follows any change of `endpoint`'s isolation: it is observed,
    /// and a link that came back releases what it held.
    fn isolation_changed(&mut self, endpoint: u16, start: bool) {
        let host = self.lives.endpoint_ref(endpoint);
        self.observers
            .observe(self.now, &Observation::Isolated { host, start });
        self.release_held();
    }

    /// A link may have come back: what it held goes on, in order, each
    /// after a latency (and its losses' retransmissions) from now — as the
    /// lab's proxy delivers on heal.
    fn release_held(&mut self) {
        if !self.streams.holds_any() {
            return;
        }
        for (stream, event) in self.streams.take_held() {
            let Event::Deliver { from, to, .. } = event else {
                continue;
            };
            if self.net.link_up(from, self.target_endpoint(to)) {
                let at = self.net.stream_transit(self.now);
                let at = self.streams.in_order(stream, at);
                self.queue.push_soon(at, event);
            } else if let Some(Event::Deliver { from, to, msg }) = self.streams.hold(stream, event)
            {
                self.dropped(from, to, &msg, DropReason::QueueFull);
            }
        }
    }

    /// `from`'s messages stop (`start`) or start again reaching `to`.
    pub(crate) fn cut(&mut self, from: u16, to: u16, start: bool) {
        self.net.cut(from, to, start);
        let (from, to) = (self.lives.endpoint_ref(from), self.lives.endpoint_ref(to));
        self.observers
            .observe(self.now, &Observation::Cut { from, to, start });
        self.release_held();
    }

    /// A partition with `group_of` (group per endpoint) begins, or (`None`)
    /// the partition ends; `text` and `members` describe it.
    pub(crate) fn partition(&mut self, group_of: Option<Vec<u16>>, text: &str, members: &[u16]) {
        let start = group_of.is_some();
        let lives = &self.lives;
        let members: Vec<HostRef<'_>> = members.iter().map(|&e| lives.endpoint_ref(e)).collect();
        self.observers.observe(
            self.now,
            &Observation::Partitioned {
                start,
                groups: text,
                members: &members,
                group_of: group_of.as_deref(),
            },
        );
        self.net.partition(group_of);
        self.release_held();
    }

    /// Observes fault `slot` beginning on `spans` (a host and a label each),
    /// for pictures.
    pub(crate) fn fault_began(&mut self, slot: u32, spans: &[(Touched, String)]) {
        let lives = &self.lives;
        let spans: Vec<(HostRef<'_>, String)> = spans
            .iter()
            .map(|(touched, label)| {
                let host = match *touched {
                    Touched::Endpoint(e) => lives.endpoint_ref(e),
                    Touched::Process(pid) => HostRef::Process(lives.process_ref(pid)),
                };
                (host, label.clone())
            })
            .collect();
        self.observers.observe(
            self.now,
            &Observation::FaultBegan {
                slot,
                spans: &spans,
            },
        );
    }

    // ----- pausing -----

    /// Pauses server `endpoint` (nested); returns the depth now.
    pub(crate) fn pause_server(&mut self, endpoint: u16) -> u32 {
        let server = &mut self.servers[usize::from(endpoint)];
        server.depth += 1;
        let depth = server.depth;
        let host = self.lives.endpoint_ref(endpoint);
        self.observers
            .observe(self.now, &Observation::Paused { host, depth });
        depth
    }

    /// Ends one pause of server `endpoint`; at depth 0 it handles what queued.
    pub(crate) fn resume_server(&mut self, endpoint: u16) {
        let server = &mut self.servers[usize::from(endpoint)];
        server.depth -= 1;
        let depth = server.depth;
        let (deferred, clock_moved) = if depth == 0 {
            (
                std::mem::take(&mut server.deferred),
                std::mem::take(&mut server.clock_moved),
            )
        } else {
            (Vec::new(), false)
        };
        self.resumed(Address::Server(endpoint), depth, deferred, clock_moved);
    }

    /// Pauses every live process of `node`; returns them (slot, life).
    pub(crate) fn pause_node(&mut self, node: u32) -> Vec<(u32, u32)> {
        let mut paused = Vec::new();
        for pid in self.lives.alive_pids(node) {
            let depth = self.lives.pause(pid);
            paused.push((pid, self.lives.incarnation_of(pid)));
            let host = HostRef::Process(self.lives.process_ref(pid));
            self.observers
                .observe(self.now, &Observation::Paused { host, depth });
        }
        paused
    }

    /// Ends one pause of process `pid` if it still runs life `incarnation`.
    pub(crate) fn resume_process(&mut self, pid: u32, incarnation: u32) {
        let Some((depth, deferred, clock_moved)) = self.lives.resume(pid, incarnation) else {
            return;
        };
        let who = Address::Process { pid, incarnation };
        self.resumed(who, depth, deferred, clock_moved);
    }

    /// Observes a pause of `who` ending, `depth` pauses still in effect; at
    /// depth 0 the host handles what queued while it was paused, in order,
    /// then, if its clock changed course meanwhile (`clock_moved`), re-arms
    /// the timers it set on it.
    fn resumed(
        &mut self,
        who: Address,
        depth: u32,
        deferred: Vec<HostEvent<H>>,
        clock_moved: bool,
    ) {
        let host = self.lives.address_ref(who);
        let observation = Observation::Resumed {
            host,
            depth,
            deferred: deferred.len() as u64,
        };
        self.observers.observe(self.now, &observation);
        for event in deferred {
            // A process may have crashed, or a timer been superseded, since.
            if let Event::Deliver {
                to: Address::Process { pid, incarnation },
                ..
            }
            | Event::Timer {
                to: Address::Process { pid, incarnation },
                ..
            } = event
            {
                if !self.lives.is_alive(pid, incarnation) {
                    continue;
                }
            }
            if self.is_stale(&event) {
                continue;
            }
            self.handle_deferred(event);
        }
        let still_here = match who {
            Address::Process { pid, incarnation } => {
                self.lives.is_alive(pid, incarnation) && !self.lives.is_paused(pid)
            }
            Address::Server(endpoint) => self.servers[usize::from(endpoint)].depth == 0,
        };
        if clock_moved && still_here {
            let (hosts, mut out) = self.outbox(who);
            hosts.clock_changed(who, &mut out);
        }
    }
}
