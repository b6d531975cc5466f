//! The engine: the event queue, the network, host clocks, process lives,
//! pausing and deferral, the loop and its limits. It knows nothing of leases.
//!
//! The engine routes each message and timer to the [`Hosts`] of a protocol,
//! which react through an [`Outbox`] (send, set a timer, observe) and never
//! see the engine itself. Everything else that happens — a fault starting, a
//! node starting — is a [`Control`] event the engine hands back to its owner
//! (the [`Simulation`](crate::Simulation)), which acts on it through the
//! engine's small API: pause and resume a host, cut links, start and kill
//! processes.

mod calendar;
pub(crate) mod clock;
mod control;
pub mod limits;
mod lives;
pub(crate) mod network;
mod outbox;
mod prefetch;
mod queue;
pub(crate) mod slew;
pub(crate) mod streams;

use std::fmt::{self, Debug};

use fenced::OwnerId;

use crate::engine::limits::{Halt, MAX_DEFERRED_MESSAGES, MAX_PENDING_EVENTS};
use crate::engine::network::Network;
use crate::engine::queue::{EventQueue, Hint};
use crate::observation::{DropReason, HostRef, MessageFacts, Observation, Observer, Skipped};
use crate::time::SimTime;

pub(crate) use lives::{server_endpoint, server_index, HostClocks, Lives};
pub(crate) use outbox::Outbox;
pub(crate) use prefetch::prefetch_lines;
use streams::Streams;
pub(crate) use streams::{stream_key, StreamKey};

/// Where a message or a timer goes: a server host (by endpoint) or one life
/// of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Address {
    /// A server host: endpoint 0 or 1 (the lease store, the downstream).
    Server(u16),
    /// Process slot `pid` while it runs incarnation `incarnation`.
    Process {
        /// The slot.
        pid: u32,
        /// The life; a message to an earlier one is dropped.
        incarnation: u32,
    },
}

/// What the engine needs to know of a protocol's messages: enough to name a
/// lost one.
pub(crate) trait Envelope: Clone + Debug {
    /// What observers are told of it if it is dropped (its hosts decide;
    /// the engine passes it on).
    fn facts(&self) -> MessageFacts;
    /// The process slot that sent it, if a process did.
    fn sender(&self) -> Option<u32>;

    /// Whether the addressee's kernel, not its process, handles it (a TCP
    /// keepalive probe at a client, a SYN at a server): it is handled even
    /// while the process or the server is paused.
    fn answered_while_paused(&self) -> bool {
        false
    }

    /// The TCP stream it travels on when addressed to `to`, if a session
    /// carries it (see [`streams`]): then it is never lost nor duplicated,
    /// arrives in its stream's order, and a down link holds it back. `None`
    /// (the default): a datagram.
    #[inline(always)]
    fn stream(&self, to: Address) -> Option<StreamKey> {
        let _ = to;
        None
    }
}

/// The hosts of one protocol, as sans-IO machines: each input comes with an
/// [`Outbox`] for its effects. Adding a protocol means a new implementation
/// of this trait, not an edit of the loop.
pub(crate) trait Hosts: Sized {
    /// Every message any host sends.
    type Message: Envelope;
    /// Every timer any host sets.
    type Timer: Copy + Debug;

    /// Whether `timer` for `to` was superseded (a re-armed timer): a stale
    /// timer is dropped silently, before it could queue at a paused host.
    fn is_stale(&self, to: Address, timer: &Self::Timer) -> bool;

    /// The next events include one for process `pid`: prefetch what its
    /// handling will read of the hosts' rows (see
    /// [`prefetch_lines`]). Nothing by default; never changes an outcome.
    #[inline(always)]
    fn prefetch(&self, pid: u32) {
        let _ = pid;
    }

    /// The signal that tells the sender of `msg` its connection was
    /// refused, if `msg` is a connection's first segment (its SYN) — sent
    /// to a server that is down, where the machine's kernel answers it
    /// with a reset ([`Network::refuses`](network::Network::refuses)).
    /// `None` (the default): `msg` opens no connection, and a down link
    /// holds it like any other segment.
    fn refusal(msg: &Self::Message) -> Option<Self::Timer> {
        let _ = msg;
        None
    }

    /// A message arrived at `to`.
    fn deliver<O: Observer>(
        &mut self,
        to: Address,
        msg: Self::Message,
        out: &mut Outbox<'_, Self, O>,
    );

    /// A timer of `to` fired.
    fn fire<O: Observer>(&mut self, to: Address, timer: Self::Timer, out: &mut Outbox<'_, Self, O>);

    /// A new process started in slot `pid` as `owner` (a follower).
    fn start_process<O: Observer>(
        &mut self,
        pid: u32,
        node: u32,
        incarnation: u32,
        owner: &OwnerId,
        out: &mut Outbox<'_, Self, O>,
    );

    /// The process in slot `pid` died: its volatile state is gone. Its
    /// machine lives on (a `kill -9`, an OOM kill), and the kernel closes
    /// the process's connections: what that tells a server goes out through
    /// `out`, from the process's address, before the engine counts it dead.
    fn crash_process<O: Observer>(&mut self, pid: u32, out: &mut Outbox<'_, Self, O>);

    /// `to`'s clock changed its course (a step of the clock it times by, or
    /// a slew): re-arm the timers it set on its clock (a host that is paused
    /// is not told; its timers re-arm when it resumes).
    fn clock_changed<O: Observer>(&mut self, to: Address, out: &mut Outbox<'_, Self, O>);

    /// The wall clock of process `to`'s machine stepped by `by` ns while
    /// the process times by its monotonic clock (a step its timing ignores):
    /// for a client that still reads the wall clock for some decision
    /// (Curator's simulated session expiry). `paused`: the process cannot
    /// act now. Nothing by default.
    fn wall_stepped<O: Observer>(
        &mut self,
        to: Address,
        by: i64,
        paused: bool,
        out: &mut Outbox<'_, Self, O>,
    ) {
        let _ = (to, by, paused, out);
    }

    /// Server `endpoint` comes back from a restart, with its state
    /// (`durable`) or empty.
    fn restart_server<O: Observer>(
        &mut self,
        endpoint: u16,
        durable: bool,
        out: &mut Outbox<'_, Self, O>,
    );
}

/// An event the engine hands back to its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    /// A node's first process is due.
    StartNode(u32),
    /// The restart of `node` that scenario fault `fault` (a crash or a
    /// stop) scheduled is due.
    Restart {
        /// The node.
        node: u32,
        /// The scenario's fault index.
        fault: u32,
    },
    /// Scheduled fault `fault` of the scenario starts.
    FaultStart(u32),
    /// The active fault in slot `slot` ends.
    FaultEnd(u32),
    /// Recurring-fault generator `generator` fires.
    Recur(u32),
    /// The next flip of `clock-strobe` number `.0` (in start order) is due.
    StrobeFlip(u32),
    /// The liveness phase begins.
    Heal,
    /// Not an event: an observer asked for the driver's attention after the
    /// event just handled (see [`Observer::wants_attention`]).
    Attention,
}

/// What a fault touches, for pictures: a host's links (an endpoint: a
/// server or a node) or one process.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Touched {
    /// An endpoint: 0 the lease store, 1 the downstream, then the nodes.
    Endpoint(u16),
    /// The process in this slot.
    Process(u32),
}

/// What the queue holds.
#[derive(Clone, Debug)]
pub(crate) enum Event<M, T> {
    /// A message in flight from endpoint `from`.
    Deliver {
        /// The sender's endpoint.
        from: u16,
        /// The addressee.
        to: Address,
        /// The message.
        msg: M,
    },
    /// A host's timer.
    Timer {
        /// Whose.
        to: Address,
        /// Which.
        timer: T,
    },
    /// For the engine's owner.
    Control(Control),
}

type HostEvent<H> = Event<<H as Hosts>::Message, <H as Hosts>::Timer>;

/// A server host's pause state.
#[derive(Debug)]
struct Pausable<E> {
    depth: u32,
    deferred: Vec<E>,
    /// Its clock changed course while it was paused: it re-arms its timers
    /// when it resumes.
    clock_moved: bool,
}

/// The engine. See the [module documentation](self).
#[derive(Debug)]
pub(crate) struct Engine<H: Hosts, O: Observer> {
    pub(crate) now: SimTime,
    end: SimTime,
    pub(crate) events: u64,
    max_events: u64,
    halt: Option<Halt>,
    queue: EventQueue<HostEvent<H>>,
    pub(crate) net: Network,
    pub(crate) lives: Lives<HostEvent<H>>,
    /// Per server endpoint (every endpoint below the first node's).
    servers: Vec<Pausable<HostEvent<H>>>,
    /// Sessions' streams: their order, and what down links hold.
    streams: Streams<HostEvent<H>>,
    /// An event a script put after the one due with it (see
    /// [`reordered`](Self::reordered)): handled next, at the same instant.
    swapped: Option<HostEvent<H>>,
    pub(crate) hosts: H,
    pub(crate) observers: O,
}

impl<H: Hosts, O: Observer> Engine<H, O> {
    pub(crate) fn new(
        end: SimTime,
        max_events: u64,
        net: Network,
        lives: Lives<HostEvent<H>>,
        hosts: H,
        observers: O,
    ) -> Self {
        let servers = (0..lives.first_node_endpoint())
            .map(|_| Pausable {
                depth: 0,
                deferred: Vec::new(),
                clock_moved: false,
            })
            .collect();
        Engine {
            now: SimTime::ZERO,
            end,
            events: 0,
            max_events,
            halt: None,
            queue: EventQueue::new(),
            net,
            lives,
            servers,
            streams: Streams::new(),
            swapped: None,
            hosts,
            observers,
        }
    }

    /// Writes everything of the engine that decides the rest of the run —
    /// the instant, the pending events in order, the network, the lives,
    /// the servers' pauses, the streams and the hosts — for a state's
    /// fingerprint (`simulation::fingerprint`). Left out: the events
    /// handled so far and the budget (counts, not state), the observers
    /// (the caller writes the checker's part).
    pub(crate) fn write_state(&self, w: &mut dyn fmt::Write) -> fmt::Result
    where
        H: fmt::Debug,
        HostEvent<H>: fmt::Debug,
    {
        write!(
            w,
            "now {:?} end {:?} halt {:?}\nqueue ",
            self.now, self.end, self.halt
        )?;
        self.queue.write_pending(w)?;
        w.write_str("\nnet ")?;
        self.net.write_state(w)?;
        write!(
            w,
            "\nlives {:?}\nservers {:?}\nstreams {:?}\nswapped {:?}\nhosts {:?}\n",
            self.lives, self.servers, self.streams, self.swapped, self.hosts
        )
    }

    /// The run's end.
    pub(crate) fn end(&self) -> SimTime {
        self.end
    }

    /// Why the run stopped early, if it did.
    pub(crate) fn halted(&self) -> Option<&Halt> {
        self.halt.as_ref()
    }

    /// Events scheduled and not yet processed.
    pub(crate) fn pending_len(&self) -> usize {
        self.queue.len()
    }

    /// Every event still to happen: queued, or deferred at a paused host
    /// (with `true`), in no particular order. For reports.
    pub(crate) fn pending(&self) -> impl Iterator<Item = (&HostEvent<H>, bool)> {
        let queued = self.queue.pending().map(|e| (e, false));
        let servers = self
            .servers
            .iter()
            .flat_map(|s| s.deferred.iter().map(|e| (e, true)));
        let procs = self.lives.deferred().map(|e| (e, true));
        // Held back by a down link: in flight still.
        let held = self.streams.held().map(|e| (e, false));
        let swapped = self.swapped.iter().map(|e| (e, false));
        queued
            .chain(servers)
            .chain(procs)
            .chain(held)
            .chain(swapped)
    }

    /// Schedules `control` at `at` (not before now).
    pub(crate) fn schedule(&mut self, at: SimTime, control: Control) {
        self.queue.push(at.max(self.now), Event::Control(control));
    }

    /// Hands `observation` to the observers, at now.
    pub(crate) fn observe(&mut self, observation: &Observation<'_>) {
        self.observers.observe(self.now, observation);
    }

    /// Runs host events before `until` (capped at the run's end) and returns
    /// the first control event, counted as handled; `None` once nothing is
    /// left before `until` or the run halted. The clock then reads `until`
    /// (unless halted).
    pub(crate) fn next_control(&mut self, until: SimTime) -> Option<Control> {
        if self.halt.is_some() {
            return None;
        }
        let until = until.min(self.end);
        if let Some(event) = self.swapped.take() {
            if let Some(control) = self.dispatch_swapped(event) {
                return Some(control);
            }
        }
        while let Some(time) = self.queue.peek_time() {
            if time >= until {
                break;
            }
            if self.events >= self.max_events {
                self.halt = Some(Halt::EventBudget {
                    max_events: self.max_events,
                    at: self.now.since_start(),
                    duration: self.end.since_start(),
                });
                return None;
            }
            let (time, slot) = self.queue.pop_slot()?;
            debug_assert!(time >= self.now, "time never runs backwards");
            self.now = time;
            if self.queue.is_large() {
                self.prefetch_upcoming();
            }
            let mut event = self.queue.take(slot)?;
            if self.net.is_scripted() {
                event = self.reordered(time, event);
            }
            let mut control = self.dispatch(event);
            if control.is_none() && self.observers.wants_attention() {
                control = Some(Control::Attention);
            }
            if control.is_none() {
                if let Some(event) = self.swapped.take() {
                    control = self.dispatch_swapped(event);
                }
            }
            if self.queue.len() > MAX_PENDING_EVENTS {
                self.halt = Some(Halt::TooManyPending {
                    pending: self.queue.len(),
                    at: self.now.since_start(),
                });
                return None;
            }
            if control.is_some() {
                return control;
            }
        }
        self.now = self.now.max(until);
        None
    }

    /// Under a script: when the next event is due at `time` too and is for
    /// the same host as `first` (an *order point*, see
    /// [`Script::reorder`](network::Script::reorder)), the script may swap
    /// them — the second is returned, to be handled now, and `first` waits
    /// in [`swapped`](Self::swapped), handled right after. Events of
    /// different hosts at one instant commute (neither reads the other's
    /// state) and are never offered: the partial-order reduction.
    #[cold]
    fn reordered(&mut self, time: SimTime, first: HostEvent<H>) -> HostEvent<H> {
        let Some((next_time, second)) = self.queue.peek() else {
            return first;
        };
        if next_time != time {
            return first;
        }
        let same_host = match (host_address(&first), host_address(second)) {
            (Some(a), Some(b)) => self.target_endpoint(a) == self.target_endpoint(b),
            _ => false,
        };
        if !same_host || !self.net.reorder() {
            return first;
        }
        let Some((_, slot)) = self.queue.pop_slot() else {
            return first;
        };
        match self.queue.take(slot) {
            Some(second) => {
                self.swapped = Some(first);
                second
            }
            None => first,
        }
    }

    /// Handles the event a script swapped behind another, as the loop
    /// handles any.
    #[cold]
    fn dispatch_swapped(&mut self, event: HostEvent<H>) -> Option<Control> {
        let control = self.dispatch(event);
        if control.is_none() && self.observers.wants_attention() {
            return Some(Control::Attention);
        }
        control
    }

    fn is_stale(&self, event: &HostEvent<H>) -> bool {
        match event {
            Event::Timer { to, timer } => self.hosts.is_stale(*to, timer),
            _ => false,
        }
    }

    fn target_endpoint(&self, to: Address) -> u16 {
        match to {
            Address::Server(endpoint) => endpoint,
            Address::Process { pid, .. } => self.lives.endpoint_of(pid),
        }
    }

    /// Routes one event: stale timers vanish, messages on a link that went
    /// down are lost, events of a paused host queue, events of a dead life
    /// are dropped; control events are returned.
    fn dispatch(&mut self, event: HostEvent<H>) -> Option<Control> {
        // A superseded timer is dropped silently: it is not an event.
        if self.is_stale(&event) {
            return None;
        }
        // A message whose link went down while it was in flight is lost —
        // or, on a session, held back until the link is up again.
        if let Event::Deliver { from, to, ref msg } = event {
            if !self.net.link_up(from, self.target_endpoint(to)) {
                match msg.stream(to) {
                    Some(stream) => {
                        if let Some(Event::Deliver { from, to, msg }) =
                            self.streams.hold(stream, event)
                        {
                            self.dropped(from, to, &msg, DropReason::QueueFull);
                        }
                    }
                    None => self.dropped(from, to, msg, DropReason::LinkDown),
                }
                return None;
            }
        }
        let to = match &event {
            Event::Deliver { to, .. } | Event::Timer { to, .. } => *to,
            Event::Control(control) => {
                self.events += 1;
                return Some(*control);
            }
        };
        match to {
            Address::Server(e)
                if self.servers[usize::from(e)].depth > 0
                    && !matches!(&event, Event::Deliver { msg, .. } if msg.answered_while_paused()) =>
            {
                if let Some(event) = defer(&mut self.servers[usize::from(e)].deferred, event) {
                    self.drop_deferred(event);
                }
            }
            Address::Process { pid, incarnation } => {
                if !self.lives.is_alive(pid, incarnation) {
                    if let Event::Deliver { from, to, ref msg } = event {
                        self.dropped(from, to, msg, DropReason::ProcessGone);
                    }
                } else if matches!(&event, Event::Deliver { msg, .. } if msg.answered_while_paused())
                {
                    self.handle(event);
                } else if let Some(deferred) = self.lives.paused_queue(pid) {
                    if let Some(event) = defer(deferred, event) {
                        self.drop_deferred(event);
                    }
                } else {
                    self.handle(event);
                }
            }
            Address::Server(_) => self.handle(event),
        }
        None
    }

    /// Drops a message that a paused host had no room to queue.
    fn drop_deferred(&mut self, event: HostEvent<H>) {
        if let Event::Deliver { from, to, ref msg } = event {
            self.dropped(from, to, msg, DropReason::QueueFull);
        }
    }

    /// [`handle`](Self::handle), out of line: for the events that queued at
    /// a paused host (the loop's own calls are inlined).
    #[inline(never)]
    fn handle_deferred(&mut self, event: HostEvent<H>) {
        self.handle(event);
    }

    /// Hands a host event to its host; ends the life of a process that
    /// asked to exit.
    #[inline(always)]
    fn handle(&mut self, event: HostEvent<H>) {
        self.events += 1;
        let (to, exit) = match event {
            Event::Deliver { to, msg, .. } => {
                let server = matches!(to, Address::Server(_));
                self.net.note_event(self.now, false, server);
                let (hosts, mut out) = self.outbox(to);
                hosts.deliver(to, msg, &mut out);
                (to, out.exit)
            }
            Event::Timer { to, timer } => {
                self.net.note_event(self.now, true, false);
                let (hosts, mut out) = self.outbox(to);
                hosts.fire(to, timer, &mut out);
                (to, out.exit)
            }
            Event::Control(_) => unreachable!("control events are returned, not handled"),
        };
        if let (true, Address::Process { pid, .. }) = (exit, to) {
            self.lives.kill(pid);
            let process = self.lives.process_ref(pid);
            self.observers
                .observe(self.now, &Observation::ProcessStopped(process));
        }
    }

    /// Schedules `timer` for every live process of `node` at `at`: an input
    /// from outside (a stop, a failing unit of work) that honours pauses (it
    /// waits, like every event, for a paused process to resume). Returns how
    /// many processes it was scheduled for.
    pub(crate) fn signal_node(&mut self, node: u32, at: SimTime, timer: H::Timer) -> usize {
        let pids = self.lives.alive_pids(node);
        for &pid in &pids {
            let incarnation = self.lives.incarnation_of(pid);
            let to = Address::Process { pid, incarnation };
            self.queue
                .push(at.max(self.now), Event::Timer { to, timer });
        }
        pids.len()
    }

    /// Schedules `timer` for process `pid` at `at`, if it is alive: an
    /// input from outside (a connection reset by a server's restart) that
    /// honours pauses, as [`signal_node`](Self::signal_node)'s do.
    pub(crate) fn signal_process(&mut self, pid: u32, at: SimTime, timer: H::Timer) {
        let incarnation = self.lives.incarnation_of(pid);
        if !self.lives.is_alive(pid, incarnation) {
            return;
        }
        let to = Address::Process { pid, incarnation };
        self.queue
            .push(at.max(self.now), Event::Timer { to, timer });
    }

    /// The hosts, and an outbox for effects of host `me`.
    #[inline(always)]
    fn outbox(&mut self, me: Address) -> (&mut H, Outbox<'_, H, O>) {
        let (from, clock) = match me {
            Address::Server(endpoint) => (
                endpoint,
                outbox::Clock::Server(self.lives.server_record(endpoint)),
            ),
            Address::Process { pid, .. } => (
                self.lives.endpoint_of(pid),
                outbox::Clock::Node(self.lives.clock_of(pid)),
            ),
        };
        (
            &mut self.hosts,
            Outbox {
                now: self.now,
                names: &self.lives,
                queue: &mut self.queue,
                net: &mut self.net,
                streams: &mut self.streams,
                observers: &mut self.observers,
                from,
                me,
                clock,
                exit: false,
            },
        )
    }

    /// Observes a message that never arrived.
    fn dropped(&mut self, from: u16, to: Address, msg: &H::Message, reason: DropReason) {
        let names = &self.lives;
        let observation = msg.facts().dropped(
            names.endpoint_ref(from),
            names.address_ref(to),
            reason,
            msg.sender().map(|pid| names.process_ref(pid)),
        );
        self.observers.observe(self.now, &observation);
    }
}

/// Queues `event` at a paused host; hands a message back when the host
/// already holds [`MAX_DEFERRED_MESSAGES`] (timers always queue: a paused
/// host has only a few).
fn defer<M, T>(deferred: &mut Vec<Event<M, T>>, event: Event<M, T>) -> Option<Event<M, T>> {
    if matches!(event, Event::Deliver { .. }) && deferred.len() >= MAX_DEFERRED_MESSAGES {
        return Some(event);
    }
    deferred.push(event);
    None
}

/// The host an event is for (`None`: the owner's control events).
fn host_address<M, T>(event: &Event<M, T>) -> Option<Address> {
    match event {
        Event::Deliver { to, .. } | Event::Timer { to, .. } => Some(*to),
        Event::Control(_) => None,
    }
}
