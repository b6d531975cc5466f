//! The leader's singleton work, the same for every lock design: while its
//! process believes it holds a term with token `T`, a unit of work every
//! `write_interval`, leadership checked at the unit's start; the unit takes
//! `work_duration`, then a write stamped `T` goes to the downstream. A pause
//! inside a unit delays that write until the process resumes — the stalled
//! leader's late write. The fenced protocol's [`NodeProcess`](super::NodeProcess)
//! and the zoo's processes each own one [`Worker`].

use fenced::{FencingToken, OwnerId, StepDownReason};

use super::messages::ToDownstream;
use super::WorkTimings;
use crate::engine::network::DOWNSTREAM_ENDPOINT;
use crate::engine::{Address, Event, Hosts, Lives, Outbox};
use crate::observation::{Observation, Observer};

/// What a worker needs of its protocol's timers and messages.
pub(crate) trait WorkerHosts: Hosts {
    /// The worker's next-unit timer.
    fn work_timer(generation: u32) -> Self::Timer;
    /// A unit's write is due.
    fn work_done_timer(token: FencingToken, unit: u64) -> Self::Timer;
    /// `timer` as a unit's write due, if it is one.
    fn as_work_done(timer: &Self::Timer) -> Option<(FencingToken, u64)>;
    /// A write for the downstream, as a message.
    fn write_message(write: ToDownstream) -> Self::Message;
    /// `msg` as a write for the downstream, if it is one.
    fn as_write(msg: &Self::Message) -> Option<&ToDownstream>;
    /// The token process `pid` believes it leads with, if any.
    fn believed(&self, pid: u32) -> Option<FencingToken>;
}

/// One process's worker.
#[derive(Debug)]
pub(crate) struct Worker {
    pid: u32,
    incarnation: u32,
    owner: OwnerId,
    timings: WorkTimings,
    /// Bumped at every term change: a work timer of an older generation is
    /// stale.
    pub(crate) generation: u32,
    next_unit: u64,
    /// The token of the term the process believes it holds; the worker
    /// writes with it.
    pub(crate) believed: Option<FencingToken>,
}

impl Worker {
    pub(crate) fn new(pid: u32, incarnation: u32, owner: OwnerId, timings: WorkTimings) -> Self {
        Worker {
            pid,
            incarnation,
            owner,
            timings,
            generation: 0,
            next_unit: 1,
            believed: None,
        }
    }

    /// The process began to believe it leads with `token`: the first unit
    /// starts now.
    #[inline]
    pub(crate) fn start_term<H: WorkerHosts, O: Observer>(
        &mut self,
        token: FencingToken,
        out: &mut Outbox<'_, H, O>,
    ) {
        debug_assert!(
            self.believed.is_none(),
            "a term ends before the next begins"
        );
        self.believed = Some(token);
        self.generation = self.generation.wrapping_add(1);
        out.set_timer_at(out.now, H::work_timer(self.generation));
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::TermStarted { process, token });
    }

    /// The process stopped believing it leads with `token`, for `reason`
    /// (and another design's own words `why`).
    #[inline]
    pub(crate) fn end_term<H: WorkerHosts, O: Observer>(
        &mut self,
        token: FencingToken,
        reason: &StepDownReason,
        why: Option<&str>,
        out: &mut Outbox<'_, H, O>,
    ) {
        debug_assert_eq!(self.believed, Some(token), "a term ends once");
        self.believed = None;
        self.generation = self.generation.wrapping_add(1);
        let process = out.names.process_ref(self.pid);
        let local = Some(out.local_now());
        out.observe(&Observation::TermEnded {
            process,
            token,
            reason,
            why,
            local,
        });
    }

    /// The process died: it believes nothing any more.
    pub(crate) fn crash(&mut self) {
        self.believed = None;
    }

    /// Starts a unit under `token` at `local` on the worker's clock (the
    /// caller has just checked leadership), and the next tick.
    #[inline]
    pub(crate) fn start_unit<H: WorkerHosts, O: Observer>(
        &mut self,
        token: FencingToken,
        local: fenced::Instant,
        out: &mut Outbox<'_, H, O>,
    ) {
        let unit = self.next_unit;
        self.next_unit += 1;
        out.set_timer_local(
            local + self.timings.work_duration,
            H::work_done_timer(token, unit),
        );
        out.set_timer_local(
            local + self.timings.write_interval,
            H::work_timer(self.generation),
        );
        // The checker judges `local-deadline` from this and its own record
        // of the requests sent and answered.
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::WorkStarted {
            process,
            token,
            unit,
            local,
        });
    }

    /// A unit is done: write, unless its term ended meanwhile.
    #[inline]
    pub(crate) fn work_done<H: WorkerHosts, O: Observer>(
        &mut self,
        token: FencingToken,
        unit: u64,
        out: &mut Outbox<'_, H, O>,
    ) {
        let process = out.names.process_ref(self.pid);
        if self.believed != Some(token) {
            // The term ended while the unit ran; the worker noticed its
            // cancellation before writing.
            out.observe(&Observation::WorkCancelled {
                process,
                token,
                unit,
            });
            return;
        }
        // No second leadership check here: that is the check-then-act gap a
        // pause falls into, and what fencing exists to close.
        out.observe(&Observation::WriteSent {
            process,
            token,
            unit,
        });
        let msg = ToDownstream::Write {
            pid: self.pid,
            incarnation: self.incarnation,
            owner: self.owner.clone(),
            token,
            unit,
        };
        out.send(Address::Server(DOWNSTREAM_ENDPOINT), H::write_message(msg));
    }
}

/// A write on its way when a report is taken: the report lists it among the
/// `unjudged_writes`.
#[derive(Debug)]
pub(crate) struct PendingWrite {
    /// The writer (node and incarnation).
    pub(crate) owner: String,
    /// The token the write carries.
    pub(crate) token: u64,
    /// The writer's unit-of-work number.
    pub(crate) unit: u64,
    /// Where the write is.
    pub(crate) state: WriteState,
}

/// Where a [`PendingWrite`] is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WriteState {
    /// The unit has not sent its write yet.
    InProgress,
    /// Its process is paused mid-unit.
    InProgressPaused,
    /// Sent, not yet delivered.
    InFlight,
    /// Delivered to a paused downstream, queued there.
    Queued,
}

/// `event` as a write on its way, for the report's `unjudged_writes`: a unit
/// in progress whose term is still believed, or a write in flight to (or
/// queued at, when `deferred`) the downstream.
pub(crate) fn pending_write<H: WorkerHosts>(
    hosts: &H,
    lives: &Lives<Event<H::Message, H::Timer>>,
    event: &Event<H::Message, H::Timer>,
    deferred: bool,
) -> Option<PendingWrite> {
    match event {
        Event::Timer {
            to: Address::Process { pid, incarnation },
            timer,
        } => {
            let (token, unit) = H::as_work_done(timer)?;
            let believes = hosts.believed(*pid) == Some(token);
            (lives.is_alive(*pid, *incarnation) && believes).then(|| PendingWrite {
                owner: lives.owner_of(*pid).to_string(),
                token: token.get(),
                unit,
                state: if lives.is_paused(*pid) {
                    WriteState::InProgressPaused
                } else {
                    WriteState::InProgress
                },
            })
        }
        Event::Deliver { msg, .. } => {
            let ToDownstream::Write {
                owner, token, unit, ..
            } = H::as_write(msg)?;
            Some(PendingWrite {
                owner: owner.to_string(),
                token: token.get(),
                unit: *unit,
                // Writes queue only at a paused downstream.
                state: if deferred {
                    WriteState::Queued
                } else {
                    WriteState::InFlight
                },
            })
        }
        Event::Timer { .. } | Event::Control(_) => None,
    }
}
