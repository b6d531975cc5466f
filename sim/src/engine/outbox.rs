//! The narrow interface a host acts through: send a message, set a timer,
//! observe — and read its own clock. A host never sees the engine.

use std::time::Duration;

use super::{Address, Event, Hosts, Lives};
use crate::engine::clock::{server_local_or, server_true_time_or, HostClock, SlewingClock};
use crate::engine::network::{Network, Transit};
use crate::engine::queue::EventQueue;
use crate::engine::streams::Streams;
use crate::observation::{DropReason, Observation, Observer, SimTime};

/// The clock a host reads.
///
/// A host whose clocks slewed carries a stand-in ([`HostClock::SLEWED`],
/// [`SLEWED_SERVER_OFFSET`]): its clock and slew are kept in [`Lives`] (a
/// side table, so that the clock every event carries keeps the size, and
/// the common case the code path, it had without slews), read out of line.
///
/// [`SLEWED_SERVER_OFFSET`]: crate::engine::clock::SLEWED_SERVER_OFFSET
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    /// A node's (offset, drift, jumps).
    Node(HostClock),
    /// A server's: true time stepped by this many nanoseconds.
    Server(i64),
}

/// The effects of one input to one host, applied in the order the host
/// produces them (so a run's order of sends, timers and observations — and
/// with it the trace — is the host's).
pub(crate) struct Outbox<'e, H: Hosts, O: Observer> {
    /// True time now.
    pub(crate) now: SimTime,
    /// How observations name nodes and processes (read-only).
    pub(crate) names: &'e Lives<Event<H::Message, H::Timer>>,
    pub(super) queue: &'e mut EventQueue<Event<H::Message, H::Timer>>,
    pub(super) net: &'e mut Network,
    pub(super) streams: &'e mut Streams<Event<H::Message, H::Timer>>,
    pub(super) observers: &'e mut O,
    /// The acting host's endpoint.
    pub(super) from: u16,
    /// The acting host.
    pub(super) me: Address,
    /// The acting host's clock: a process's (its node's), or a server's
    /// step from true time.
    pub(super) clock: Clock,
    /// Set by [`exit`](Self::exit): the acting process ends its life.
    pub(super) exit: bool,
}

impl<H: Hosts, O: Observer> Outbox<'_, H, O> {
    /// The acting host's clock now (true time for a server).
    ///
    /// Always inlined, as [`true_time`](Self::true_time) and
    /// [`set_timer_local`](Self::set_timer_local): a reading with its
    /// hand-over to the slewing path had grown past what the optimiser
    /// inlines by itself, and these run for nearly every input.
    #[inline(always)]
    pub(crate) fn local_now(&self) -> fenced::Instant {
        match self.clock {
            Clock::Node(clock) => clock.local_or(self.now, || self.slewed_local_now()),
            Clock::Server(offset) => server_local_or(self.now, offset, || self.slewed_local_now()),
        }
    }

    /// [`local_now`](Self::local_now) of a host whose clocks slewed (its
    /// outbox carries a stand-in). Out of line.
    #[inline(never)]
    fn slewed_local_now(&self) -> fenced::Instant {
        match self.me {
            Address::Process { pid, .. } => self.slewing_clock_of(pid).local(self.now),
            Address::Server(endpoint) => self.names.server_clock(endpoint).local(self.now),
        }
    }

    /// The clock of process `pid`, whose outbox carries
    /// [`HostClock::SLEWED`].
    fn slewing_clock_of(&self, pid: u32) -> SlewingClock {
        self.names
            .slewing_clock_of(pid)
            .expect("a node's clock is the stand-in only once it slewed")
    }

    /// The acting process exits (gracefully) once this input is handled:
    /// the engine ends its life and observes it. Ignored for a server.
    pub(crate) fn exit(&mut self) {
        self.exit = true;
    }

    /// Whether an observer wants the picture-only observations.
    pub(crate) fn wants_pictures(&self) -> bool {
        self.observers.wants_pictures()
    }

    /// Hands `observation` to every observer.
    #[inline(always)]
    pub(crate) fn observe(&mut self, observation: &Observation<'_>) {
        self.observers.observe(self.now, observation);
    }

    /// Sends `msg` to `to` through the network: lost when the link is down
    /// or at random, delivered once or twice after a drawn latency.
    pub(crate) fn send(&mut self, to: Address, msg: H::Message) {
        let to_endpoint = match to {
            Address::Server(endpoint) => endpoint,
            Address::Process { pid, .. } => self.names.endpoint_of(pid),
        };
        let from = self.from;
        if let Some(stream) = super::Envelope::stream(&msg, to) {
            return self.send_on_stream(stream, from, to, to_endpoint, msg);
        }
        if !self.net.link_up(from, to_endpoint) {
            self.dropped(to, &msg, DropReason::LinkDown);
            return;
        }
        match self.net.transit(self.now) {
            Transit::Lost => self.dropped(to, &msg, DropReason::Lost),
            Transit::Once(at) => self.queue.push_soon(at, Event::Deliver { from, to, msg }),
            Transit::Twice(first, second) => {
                let copy = msg.clone();
                self.queue.push_soon(
                    first,
                    Event::Deliver {
                        from,
                        to,
                        msg: copy,
                    },
                );
                self.queue
                    .push_soon(second, Event::Deliver { from, to, msg });
            }
        }
    }

    /// [`send`](Self::send) of a session's message: held back while its
    /// link is down, else delivered in its stream's order, a loss costing
    /// retransmissions (see `engine/streams.rs`). Out of line: a datagram
    /// run never takes it.
    ///
    /// A connection's first segment to a server that is down is refused
    /// instead ([`Hosts::refusal`]): the sender hears it one round trip
    /// later, at the drawn latency there and the same back. Whether it is
    /// refused is decided when it is sent: a SYN already in flight when
    /// its server goes down is held until the server is back, as every
    /// segment is, and one sent less than a latency before the server
    /// comes back is refused all the same — a window of one latency at
    /// each end of the downtime.
    #[inline(never)]
    fn send_on_stream(
        &mut self,
        stream: super::StreamKey,
        from: u16,
        to: Address,
        to_endpoint: u16,
        msg: H::Message,
    ) {
        if !self.net.link_up(from, to_endpoint) {
            if self.net.refuses(from, to_endpoint) {
                if let Some(signal) = H::refusal(&msg) {
                    return self.refuse(to, &msg, signal);
                }
            }
            let held = self.streams.hold(stream, Event::Deliver { from, to, msg });
            if let Some(Event::Deliver { msg, .. }) = held {
                self.dropped(to, &msg, DropReason::QueueFull);
            }
            return;
        }
        let at = self.net.stream_transit(self.now);
        let at = self.streams.in_order(stream, at);
        self.queue.push_soon(at, Event::Deliver { from, to, msg });
    }

    /// The acting process's connection-opening `msg` to `to`, a server
    /// that is down, is refused: observed as dropped
    /// ([`DropReason::ConnectionRefused`]), and `signal` reaches the sender
    /// after the segment's trip there and its reset's back.
    #[cold]
    fn refuse(&mut self, to: Address, msg: &H::Message, signal: H::Timer) {
        self.dropped(to, msg, DropReason::ConnectionRefused);
        let there = self.net.stream_transit(self.now);
        let back = there.saturating_add_nanos(there.as_nanos() - self.now.as_nanos());
        self.queue.push_soon(
            back,
            Event::Timer {
                to: self.me,
                timer: signal,
            },
        );
    }

    fn dropped(&mut self, to: Address, msg: &H::Message, reason: DropReason) {
        use super::Envelope;
        let names = self.names;
        self.observers.observe(
            self.now,
            &msg.facts().dropped(
                names.endpoint_ref(self.from),
                names.address_ref(to),
                reason,
                msg.sender().map(|pid| names.process_ref(pid)),
            ),
        );
    }

    /// The acting server received `msg` on a session its restart reset: it
    /// never reads it (for real, the connection is gone). Observed as a
    /// message dropped for [`DropReason::ConnectionReset`].
    pub(crate) fn refused(&mut self, msg: &H::Message) {
        use super::Envelope;
        let names = self.names;
        let sender = msg.sender();
        let from = sender.map_or(self.from, |pid| names.endpoint_of(pid));
        self.observers.observe(
            self.now,
            &msg.facts().dropped(
                names.endpoint_ref(from),
                names.address_ref(self.me),
                DropReason::ConnectionReset,
                sender.map(|pid| names.process_ref(pid)),
            ),
        );
    }

    /// Sets `timer` of the acting host to fire at true time `at`.
    pub(crate) fn set_timer_at(&mut self, at: SimTime, timer: H::Timer) {
        self.queue.push(at, Event::Timer { to: self.me, timer });
    }

    /// Sets `timer` of the acting host to fire when its clock reads `local`;
    /// returns the true time it will fire at.
    #[inline(always)]
    pub(crate) fn set_timer_local(&mut self, local: fenced::Instant, timer: H::Timer) -> SimTime {
        let at = self.true_time(local);
        self.set_timer_at(at, timer);
        at
    }

    /// The true time at which the acting host's clock reads `local`.
    #[inline(always)]
    pub(crate) fn true_time(&self, local: fenced::Instant) -> SimTime {
        let slewed = || self.slewed_true_time(local);
        match self.clock {
            Clock::Node(clock) => clock.true_time_at_or(local, self.now, slewed),
            Clock::Server(offset) => server_true_time_or(local, offset, self.now, slewed),
        }
    }

    /// [`true_time`](Self::true_time) of a host whose clocks slewed (its
    /// outbox carries a stand-in). Out of line.
    #[inline(never)]
    fn slewed_true_time(&self, local: fenced::Instant) -> SimTime {
        match self.me {
            Address::Process { pid, .. } => {
                self.slewing_clock_of(pid).true_time_at(local, self.now)
            }
            Address::Server(endpoint) => self
                .names
                .server_clock(endpoint)
                .true_time_at(local, self.now),
        }
    }

    /// Sets `timer` to fire `after` on the acting host's clock.
    pub(crate) fn set_timer_after(&mut self, after: Duration, timer: H::Timer) {
        let local = self.local_now() + after;
        self.set_timer_local(local, timer);
    }
}
