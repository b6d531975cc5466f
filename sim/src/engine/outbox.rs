//! The narrow interface a host acts through: send a message, set a timer,
//! observe — and read its own clock. A host never sees the engine.

use std::time::Duration;

use super::{Address, Event, Hosts, Lives};
use crate::engine::clock::{server_local, server_true_time, HostClock, SlewingClock};
use crate::engine::network::{Network, Transit};
use crate::engine::queue::EventQueue;
use crate::engine::slew::ServerClock;
use crate::observation::{DropReason, Observation, Observer, SimTime};

/// The clock a host reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    /// A node's (offset, drift, jumps).
    Node(HostClock),
    /// A server's: true time stepped by this many nanoseconds.
    Server(i64),
}

/// A slewing host's clock, with its slew.
enum Slewed {
    Node(SlewingClock),
    Server(ServerClock),
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
    pub(super) observers: &'e mut O,
    /// The acting host's endpoint.
    pub(super) from: u16,
    /// The acting host.
    pub(super) me: Address,
    /// The acting host's clock: a process's (its node's), or a server's
    /// step from true time. Without its slew, if it has one: slews are
    /// kept in [`Lives`] (a side table, so that the clock every event
    /// carries keeps the size it had without slews) and read out of line
    /// once any clock of the run slewed.
    pub(super) clock: Clock,
    /// Set by [`exit`](Self::exit): the acting process ends its life.
    pub(super) exit: bool,
}

impl<H: Hosts, O: Observer> Outbox<'_, H, O> {
    /// The acting host's clock now (true time for a server).
    pub(crate) fn local_now(&self) -> fenced::Instant {
        if self.names.any_slew() {
            return self.slewed_local_now();
        }
        self.unslewed_local_now()
    }

    #[inline(always)]
    fn unslewed_local_now(&self) -> fenced::Instant {
        match self.clock {
            Clock::Node(clock) => clock.local(self.now),
            Clock::Server(offset) => server_local(self.now, offset),
        }
    }

    /// [`local_now`](Self::local_now) once a clock of the run slewed. Out
    /// of line.
    #[inline(never)]
    fn slewed_local_now(&self) -> fenced::Instant {
        match self.slewed_clock() {
            Some(Slewed::Node(clock)) => clock.local(self.now),
            Some(Slewed::Server(clock)) => clock.local(self.now),
            None => self.unslewed_local_now(),
        }
    }

    /// The acting host's clock with its slew, if it has one.
    fn slewed_clock(&self) -> Option<Slewed> {
        let slew = *self.names.slew(self.from)?;
        Some(match self.clock {
            Clock::Node(clock) => Slewed::Node(clock.slewing(slew)),
            Clock::Server(offset) => Slewed::Server(ServerClock::new(offset, Some(slew))),
        })
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

    /// Sets `timer` of the acting host to fire at true time `at`.
    pub(crate) fn set_timer_at(&mut self, at: SimTime, timer: H::Timer) {
        self.queue.push(at, Event::Timer { to: self.me, timer });
    }

    /// Sets `timer` of the acting host to fire when its clock reads `local`;
    /// returns the true time it will fire at.
    pub(crate) fn set_timer_local(&mut self, local: fenced::Instant, timer: H::Timer) -> SimTime {
        let at = self.true_time(local);
        self.set_timer_at(at, timer);
        at
    }

    /// The true time at which the acting host's clock reads `local`.
    pub(crate) fn true_time(&self, local: fenced::Instant) -> SimTime {
        if self.names.any_slew() {
            return self.slewed_true_time(local);
        }
        self.unslewed_true_time(local)
    }

    #[inline(always)]
    fn unslewed_true_time(&self, local: fenced::Instant) -> SimTime {
        match self.clock {
            Clock::Node(clock) => clock.true_time_at(local, self.now),
            Clock::Server(offset) => server_true_time(local, offset, self.now),
        }
    }

    /// [`true_time`](Self::true_time) once a clock of the run slewed. Out
    /// of line.
    #[inline(never)]
    fn slewed_true_time(&self, local: fenced::Instant) -> SimTime {
        match self.slewed_clock() {
            Some(Slewed::Node(clock)) => clock.true_time_at(local, self.now),
            Some(Slewed::Server(clock)) => clock.true_time_at(local, self.now),
            None => self.unslewed_true_time(local),
        }
    }

    /// Sets `timer` to fire `after` on the acting host's clock.
    pub(crate) fn set_timer_after(&mut self, after: Duration, timer: H::Timer) {
        let local = self.local_now() + after;
        self.set_timer_local(local, timer);
    }
}
