//! The leader's singleton work, the same for every lock design: while its
//! process believes it holds a term with token `T`, a unit of work every
//! `write_interval`, leadership checked at the unit's start; the unit takes
//! `work_duration`, then a write stamped `T` goes to the downstream. A pause
//! inside a unit delays that write until the process resumes — the stalled
//! leader's late write.
//!
//! One [`ProcessTable`] holds a run's processes by slot, and beside them,
//! in its [`WorkerTable`], every process's worker; the fenced protocol's
//! [`FencedHosts`](super::FencedHosts) and the zoo's
//! [`ZooHosts`](crate::zoo::ZooHosts) each own one. The process (its
//! elector or its client) tells the workers when a term starts and ends and
//! whether it still leads at a unit's start; the workers do the rest, and
//! find the writes on their way for the report. A protocol's timer enum carries the
//! worker's [`WorkTimer`] in one variant and its message enum the
//! downstream's [`ToDownstream`] in one: [`carries!`] says which.

use fenced::{FencingToken, StepDownReason};

use super::messages::{ToDownstream, ToWorker};
use super::session::{
    Answered, CallBounds, CallTag, ClientSettings, ConnectionEvent, Outputs, Session, SessionOutput,
};
use super::WorkTimings;
use crate::engine::network::DOWNSTREAM_ENDPOINT;
use crate::engine::{Address, Event, Hosts, Lives, Outbox};
use crate::observation::{FailedCall, Observation, Observer, SessionKind};

/// The worker's timers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum WorkTimer {
    /// The next unit starts (`generation`: per term).
    Unit { generation: u32 },
    /// A unit of work is done and writes with `token`.
    Done { token: FencingToken, unit: u64 },
    /// The worker's session to the downstream is due (`generation`: a
    /// re-armed one is stale).
    Session { generation: u32 },
    /// The downstream restarted while at `epoch`: the worker's session to
    /// it is reset.
    SessionReset { epoch: u32 },
    /// The connect of the worker's connection `conn` was refused: the
    /// downstream is down ([`worker_refusal`]).
    SessionRefused { conn: u32 },
}

/// The signal a worker's `msg` to the downstream gets if the downstream is
/// down and refuses it (see `Hosts::refusal`): only the first segment of a
/// connection's open is refused; the rest travels on a connection the
/// server's going down already reset.
pub(crate) fn worker_refusal(msg: &ToDownstream) -> Option<WorkTimer> {
    match *msg {
        ToDownstream::Open { conn, step: 1, .. } => Some(WorkTimer::SessionRefused { conn }),
        _ => None,
    }
}

/// A unit's write as a call of the worker's session: sent again (a higher
/// `attempt`) when its connection was lost, up to `[work] write_retries`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WriteCall {
    token: FencingToken,
    unit: u64,
    attempt: u32,
}

/// A protocol's timer or message enum, one of whose variants carries `T`.
pub(crate) trait Carries<T> {
    /// `inner` in its variant.
    fn wrap(inner: T) -> Self;
    /// What the variant carries, if `self` is that variant.
    fn carried(&self) -> Option<&T>;
}

/// `carries!(Enum::Variant(Inner))`: `Enum` carries `Inner` in `Variant`
/// (`carries!(impl<P: Bound> Enum<P>::Variant(Inner))` for a generic enum).
macro_rules! carries {
    (impl<$g:ident: $bound:path> $outer:ident<$p:ident>::$variant:ident($inner:ty)) => {
        $crate::hosts::workers::carries!(@impl [$g: $bound] [$outer<$p>] $outer::$variant($inner));
    };
    ($outer:ident::$variant:ident($inner:ty)) => {
        $crate::hosts::workers::carries!(@impl [] [$outer] $outer::$variant($inner));
    };
    (@impl [$($generics:tt)*] [$ty:ty] $outer:ident::$variant:ident($inner:ty)) => {
        impl<$($generics)*> $crate::hosts::workers::Carries<$inner> for $ty {
            #[inline(always)]
            fn wrap(inner: $inner) -> Self {
                $outer::$variant(inner)
            }

            #[inline(always)]
            fn carried(&self) -> Option<&$inner> {
                match self {
                    $outer::$variant(inner) => Some(inner),
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use carries;

/// Hosts whose timers carry the worker's and whose messages its writes:
/// any whose two enums say so with [`carries!`] (no host set implements it).
pub(crate) trait CarriesWork:
    Hosts<Timer: Carries<WorkTimer>, Message: Carries<ToDownstream> + Carries<ToWorker>>
{
}

impl<H> CarriesWork for H where
    H: Hosts<Timer: Carries<WorkTimer>, Message: Carries<ToDownstream> + Carries<ToWorker>>
{
}

/// One process's worker.
#[derive(Debug)]
struct Worker {
    incarnation: u32,
    /// Bumped at every term change: a unit timer of an older generation is
    /// stale.
    generation: u32,
    next_unit: u64,
    /// The token of the term the process believes it holds; the worker
    /// writes with it.
    believed: Option<FencingToken>,
    /// Its session to the downstream (`[client] transport = "sessions"`;
    /// untouched otherwise).
    session: Session<WriteCall>,
}

/// A host set's processes (its `NodeProcess`es or `ZooProcess`es), by
/// process slot (a dead life stays until its slot is reused), each beside
/// its worker in the [`WorkerTable`].
#[derive(Debug)]
pub(crate) struct ProcessTable<P> {
    procs: Vec<Option<P>>,
    workers: WorkerTable,
}

impl<P> ProcessTable<P> {
    pub(crate) fn new(timings: WorkTimings, client: ClientSettings) -> Self {
        ProcessTable {
            procs: Vec::new(),
            workers: WorkerTable {
                timings,
                client,
                slots: Vec::new(),
            },
        }
    }

    /// `process` is a new life in slot `pid`, beside its worker
    /// (it leads nothing yet): the process, and the workers it drives.
    pub(crate) fn start(
        &mut self,
        pid: u32,
        incarnation: u32,
        process: P,
    ) -> (&mut P, &mut WorkerTable) {
        let i = pid as usize;
        if self.procs.len() <= i {
            self.procs.resize_with(i + 1, || None);
        }
        self.procs[i] = Some(process);
        self.workers.start_life(pid, incarnation);
        self.life(pid)
    }

    /// The process in slot `pid`, once one started there.
    #[inline(always)]
    pub(crate) fn get(&self, pid: u32) -> Option<&P> {
        self.procs[pid as usize].as_ref()
    }

    /// Prefetches the cache lines `lines` (indices from its start) of
    /// process `pid`'s row (a hint; a slot not yet used is skipped).
    #[inline(always)]
    pub(crate) fn prefetch(&self, pid: u32, lines: &[usize]) {
        if let Some(process) = self.procs.get(pid as usize) {
            let row = std::ptr::from_ref(process).cast::<u8>();
            for &line in lines {
                // `wrapping_add`: the address is only a hint.
                crate::engine::prefetch_lines(row.wrapping_add(line * 64), 1);
            }
        }
    }

    /// Every process started so far, with its slot (the latest life of
    /// each slot, alive or not).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &P)> {
        self.procs
            .iter()
            .enumerate()
            .filter_map(|(pid, p)| p.as_ref().map(|p| (pid as u32, p)))
    }

    /// Process `pid`, and the workers it drives.
    #[inline(always)]
    pub(crate) fn life(&mut self, pid: u32) -> (&mut P, &mut WorkerTable) {
        let process = self.procs[pid as usize]
            .as_mut()
            .expect("the engine routes only to started processes");
        (process, &mut self.workers)
    }

    /// Every process's worker.
    #[inline(always)]
    pub(crate) fn workers(&self) -> &WorkerTable {
        &self.workers
    }

    /// Every process's worker, to act on.
    #[inline(always)]
    pub(crate) fn workers_mut(&mut self) -> &mut WorkerTable {
        &mut self.workers
    }

    /// The process in slot `pid` died: its worker believes nothing any more
    /// (the rest of a dead life's state is never read again).
    pub(crate) fn crash(&mut self, pid: u32) {
        self.workers.crash(pid);
    }
}

/// Every process's worker, by the slots of its [`ProcessTable`].
#[derive(Debug)]
pub(crate) struct WorkerTable {
    timings: WorkTimings,
    /// How every process connects (one copy for the run).
    client: ClientSettings,
    slots: Vec<Option<Worker>>,
}

impl WorkerTable {
    /// A new life in slot `pid` (its writes name it by slot and life): it
    /// leads nothing yet.
    fn start_life(&mut self, pid: u32, incarnation: u32) {
        let i = pid as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Worker {
            incarnation,
            generation: 0,
            next_unit: 1,
            believed: None,
            session: Session::new(),
        });
    }

    /// How every process connects.
    #[inline(always)]
    pub(crate) fn client(&self) -> &ClientSettings {
        &self.client
    }

    #[inline(always)]
    fn worker(&mut self, pid: u32) -> &mut Worker {
        self.slots[pid as usize]
            .as_mut()
            .expect("the engine routes only to started processes")
    }

    /// The process in slot `pid` died: it believes nothing any more.
    fn crash(&mut self, pid: u32) {
        if let Some(w) = self.slots.get_mut(pid as usize).and_then(Option::as_mut) {
            w.believed = None;
        }
    }

    /// The token process `pid` believes it leads with, if any.
    #[inline(always)]
    pub(crate) fn believed(&self, pid: u32) -> Option<FencingToken> {
        self.slots
            .get(pid as usize)
            .and_then(Option::as_ref)
            .and_then(|w| w.believed)
    }

    /// Whether a unit timer of `generation` for process `pid` is from an
    /// older term.
    #[inline(always)]
    pub(crate) fn is_stale(&self, pid: u32, generation: u32) -> bool {
        self.slots[pid as usize]
            .as_ref()
            .is_some_and(|w| w.generation != generation)
    }

    /// Process `pid` began to believe it leads with `token`: the first unit
    /// starts now.
    #[inline]
    pub(crate) fn start_term<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        token: FencingToken,
        out: &mut Outbox<'_, H, O>,
    ) {
        let w = self.worker(pid);
        debug_assert!(w.believed.is_none(), "a term ends before the next begins");
        w.believed = Some(token);
        w.generation = w.generation.wrapping_add(1);
        let generation = w.generation;
        out.set_timer_at(out.now, H::Timer::wrap(WorkTimer::Unit { generation }));
        let process = out.names.process_ref(pid);
        out.observe(&Observation::TermStarted { process, token });
    }

    /// Process `pid` stopped believing it leads with `token`, for `reason`
    /// (and another design's own words `why`).
    #[inline]
    pub(crate) fn end_term<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        token: FencingToken,
        reason: &StepDownReason,
        why: Option<&str>,
        out: &mut Outbox<'_, H, O>,
    ) {
        let w = self.worker(pid);
        debug_assert_eq!(w.believed, Some(token), "a term ends once");
        w.believed = None;
        w.generation = w.generation.wrapping_add(1);
        let process = out.names.process_ref(pid);
        let local = Some(out.local_now());
        out.observe(&Observation::TermEnded {
            process,
            token,
            reason,
            why,
            local,
        });
    }

    /// Process `pid` starts a unit under `token` at `local` on its clock
    /// (the caller has just checked leadership), and the next tick.
    #[inline]
    pub(crate) fn start_unit<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        token: FencingToken,
        local: fenced::Instant,
        out: &mut Outbox<'_, H, O>,
    ) {
        let timings = self.timings;
        let w = self.worker(pid);
        let unit = w.next_unit;
        w.next_unit += 1;
        let generation = w.generation;
        out.set_timer_local(
            local + timings.work_duration,
            H::Timer::wrap(WorkTimer::Done { token, unit }),
        );
        out.set_timer_local(
            local + timings.write_interval,
            H::Timer::wrap(WorkTimer::Unit { generation }),
        );
        // The checker judges `local-deadline` from this and its own record
        // of the requests sent and answered.
        let process = out.names.process_ref(pid);
        out.observe(&Observation::WorkStarted {
            process,
            token,
            unit,
            local,
        });
    }

    /// Process `pid`'s unit is done: write, unless its term ended meanwhile.
    #[inline]
    pub(crate) fn work_done<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        token: FencingToken,
        unit: u64,
        out: &mut Outbox<'_, H, O>,
    ) {
        let w = self.worker(pid);
        let process = out.names.process_ref(pid);
        if w.believed != Some(token) {
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
        let call = WriteCall {
            token,
            unit,
            attempt: 0,
        };
        if !self.client.sessions {
            return self.send_write(pid, call, CallTag::NONE, out);
        }
        self.call(pid, call, out);
    }

    /// Sends `call` to the downstream, tagged.
    fn send_write<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        call: WriteCall,
        tag: CallTag,
        out: &mut Outbox<'_, H, O>,
    ) {
        let w = self.worker(pid);
        let msg = ToDownstream::Write {
            pid,
            incarnation: w.incarnation,
            token: call.token,
            unit: call.unit,
            tag,
        };
        out.send(Address::Server(DOWNSTREAM_ENDPOINT), H::Message::wrap(msg));
    }

    /// `call` begins on process `pid`'s session (a write waits for no one:
    /// only the session's own bounds end it).
    fn call<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        call: WriteCall,
        out: &mut Outbox<'_, H, O>,
    ) {
        let now = out.local_now();
        let mut outputs = Outputs::new();
        self.worker(pid)
            .session
            .call(call, CallBounds::UNBOUNDED, now, &mut outputs);
        self.apply(pid, outputs, out);
    }

    /// The downstream answered process `pid`'s session.
    pub(crate) fn receive<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        msg: ToWorker,
        out: &mut Outbox<'_, H, O>,
    ) {
        let mut outputs = Outputs::new();
        let now = out.local_now();
        let session = &mut self.worker(pid).session;
        match msg {
            ToWorker::Opened { conn, step, epoch } => {
                session.opened(conn, step, epoch, now, &mut outputs)
            }
            // The worker learns nothing from the answer itself (the
            // downstream's decision is observed where it is made): it only
            // ends the call.
            ToWorker::WriteAnswered { tag } => match session.answered(tag.call) {
                Answered::ToCaller(_) | Answered::Late | Answered::Unknown => {}
            },
        }
        self.apply(pid, outputs, out);
    }

    /// Process `pid`'s session timer fired.
    pub(crate) fn session_due<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        out: &mut Outbox<'_, H, O>,
    ) {
        let timings = self.client.timings;
        let w = self.worker(pid);
        w.session.timer_at = None;
        let mut outputs = Outputs::new();
        w.session
            .handle_timeout(out.local_now(), &timings, &mut outputs);
        self.apply(pid, outputs, out);
    }

    /// The network tells process `pid`'s session of its connection (the
    /// downstream's restart reset it, or refused its connect).
    pub(crate) fn session_event<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        event: ConnectionEvent,
        out: &mut Outbox<'_, H, O>,
    ) {
        let mut outputs = Outputs::new();
        let now = out.local_now();
        self.worker(pid)
            .session
            .connection_event(event, now, &mut outputs);
        self.apply(pid, outputs, out);
    }

    /// Whether a session timer of `generation` for process `pid` was
    /// re-armed since.
    #[inline(always)]
    pub(crate) fn is_session_stale(&self, pid: u32, generation: u32) -> bool {
        self.slots[pid as usize]
            .as_ref()
            .is_some_and(|w| w.session.timer_generation != generation)
    }

    /// The slots of the processes whose session a restart of the
    /// downstream resets.
    pub(crate) fn connected(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().enumerate().filter_map(|(pid, w)| {
            w.as_ref()
                .filter(|w| w.session.resettable())
                .map(|_| pid as u32)
        })
    }

    /// Acts on what process `pid`'s session asked for, then re-arms its
    /// timer.
    fn apply<H: CarriesWork, O: Observer>(
        &mut self,
        pid: u32,
        outputs: Outputs<WriteCall>,
        out: &mut Outbox<'_, H, O>,
    ) {
        for output in outputs {
            match output {
                SessionOutput::SendOpen { conn, step } => {
                    let incarnation = self.worker(pid).incarnation;
                    let msg = ToDownstream::Open {
                        pid,
                        incarnation,
                        conn,
                        step,
                    };
                    out.send(Address::Server(DOWNSTREAM_ENDPOINT), H::Message::wrap(msg));
                }
                SessionOutput::Send { payload, tag } => self.send_write(pid, payload, tag, out),
                SessionOutput::Failed { payload, why } => {
                    let retried = why.retryable() && payload.attempt < self.client.write_retries;
                    let process = out.names.process_ref(pid);
                    out.observe(&Observation::CallFailed {
                        process,
                        call: FailedCall::Write {
                            token: payload.token,
                            unit: payload.unit,
                            retried,
                        },
                        why,
                    });
                    if retried {
                        out.observe(&Observation::WriteSent {
                            process,
                            token: payload.token,
                            unit: payload.unit,
                        });
                        let again = WriteCall {
                            attempt: payload.attempt + 1,
                            ..payload
                        };
                        // Its outputs are acted on before the rest of these
                        // (a retry opens a session the next call then waits
                        // for, as a real retry would take the lock first).
                        self.call(pid, again, out);
                    }
                }
                SessionOutput::Opened => {
                    let process = out.names.process_ref(pid);
                    out.observe(&Observation::SessionOpened {
                        process,
                        session: SessionKind::Downstream,
                    });
                }
                SessionOutput::Closed { why } => {
                    let process = out.names.process_ref(pid);
                    out.observe(&Observation::SessionClosed {
                        process,
                        session: SessionKind::Downstream,
                        why,
                    });
                }
            }
        }
        let timings = self.client.timings;
        if let Some((generation, at)) = self.worker(pid).session.rearm(&timings) {
            out.set_timer_local(at, H::Timer::wrap(WorkTimer::Session { generation }));
        }
    }

    /// `event` as a write on its way, for the report's `unjudged_writes`: a
    /// unit in progress whose term is still believed, or a write in flight
    /// to (or queued at, when `deferred`) the downstream.
    pub(crate) fn pending_write<M: Carries<ToDownstream>, T: Carries<WorkTimer>>(
        &self,
        lives: &Lives<Event<M, T>>,
        event: &Event<M, T>,
        deferred: bool,
    ) -> Option<PendingWrite> {
        match event {
            Event::Timer {
                to: Address::Process { pid, incarnation },
                timer,
            } => {
                let WorkTimer::Done { token, unit } = *timer.carried()? else {
                    return None;
                };
                let believes = self.believed(*pid) == Some(token);
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
                    pid,
                    incarnation,
                    token,
                    unit,
                    ..
                } = msg.carried()?
                else {
                    return None;
                };
                Some(PendingWrite {
                    owner: lives.owner_at(*pid, *incarnation).to_string(),
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
