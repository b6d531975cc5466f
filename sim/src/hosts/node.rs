//! A node's process: one life running an [`Elector`] for the role and a
//! heartbeat loop, driving its worker in the hosts' [`WorkerTable`]: the
//! elector's StartWork and StopWork begin and end the worker's terms, and
//! each unit starts only if the elector still answers the term's token. While
//! it holds token `T` it starts a unit of work every `write_interval`; the
//! unit takes `work_duration`, then a write stamped `T` goes to the
//! downstream. A pause inside a unit delays that write until the process
//! resumes — the stalled leader's late write.

use std::time::Duration;

use fenced::{Elector, ElectorOutput, FencingToken, LeaseResult, RequestId};

use super::messages::{Message, StoreSession, Timer, ToProcess, ToStore};
use super::session::{
    Answered, CallBounds, CallTag, ConnectionEvent, Outputs, Session, SessionOutput,
};
use super::workers::WorkerTable;
use super::FencedHosts;
use crate::engine::network::STORE_ENDPOINT;
use crate::engine::{Address, Outbox};
use crate::observation::{FailedCall, Observation, Observer, SessionKind, SimTime};

/// The work loop's timings, shared by every process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkTimings {
    pub(crate) heartbeat_interval: Duration,
    pub(crate) write_interval: Duration,
    pub(crate) work_duration: Duration,
}

impl WorkTimings {
    /// The timings `scenario` sets.
    pub(crate) fn of(scenario: &crate::scenario::Scenario) -> Self {
        WorkTimings {
            heartbeat_interval: scenario.membership.heartbeat_interval,
            write_interval: scenario.work.write_interval,
            work_duration: scenario.work.work_duration,
        }
    }
}

/// One life of a node, as a sans-IO host.
///
/// Laid out in this order from the start of a cache line (`repr(C)`,
/// aligned to 64): the timer's generation (every elector timer is tested
/// against it) and the ids beside the front of the elector, which packs
/// what a follower's inputs read at its own front. The work timings, the
/// same for every process, are the hosts' ([`ProcessSettings`]): kept
/// here, a heartbeat read a cache line of its own for them (measured with
/// cachegrind on a 10 000-node fleet: a miss per heartbeat).
///
/// [`ProcessSettings`]: super::ProcessSettings
#[derive(Debug)]
#[repr(C, align(64))]
pub(crate) struct NodeProcess {
    /// The true time the elector's timer is armed for.
    timer_at: Option<SimTime>,
    pub(super) timer_generation: u32,
    pid: u32,
    node: u32,
    incarnation: u32,
    elector: Elector,
    /// The elector's session to the lease store, and the heartbeat's
    /// (`[client] transport = "sessions"`; untouched otherwise): last, out
    /// of the way of a datagram run's rows.
    lease: Session<LeaseCall>,
    registry: Session<()>,
}

/// A call of the elector's session: a lease request or a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeaseCall {
    /// Acquire or renew (for the elector's `lease_ttl`).
    Request { id: RequestId },
    /// Release the term.
    Release { token: FencingToken },
}

type Out<'a, 'e, O> = &'a mut Outbox<'e, FencedHosts, O>;

impl NodeProcess {
    pub(super) fn new(pid: u32, node: u32, incarnation: u32, elector: Elector) -> Self {
        NodeProcess {
            pid,
            node,
            incarnation,
            elector,
            timer_at: None,
            timer_generation: 0,
            lease: Session::new(),
            registry: Session::new(),
        }
    }

    fn to_store<O: Observer>(&self, msg: ToStore, out: Out<'_, '_, O>) {
        out.send(Address::Server(STORE_ENDPOINT), Message::Store(msg));
    }

    /// The session `which`.
    fn session_generation(&self, which: StoreSession) -> u32 {
        match which {
            StoreSession::Lease => self.lease.timer_generation,
            StoreSession::Registry => self.registry.timer_generation,
        }
    }

    /// Whether a timer of session `which` with `generation` was re-armed
    /// since.
    #[inline(always)]
    pub(super) fn is_session_stale(&self, which: StoreSession, generation: u32) -> bool {
        self.session_generation(which) != generation
    }

    /// Whether a restart of the lease store has anything of session
    /// `which` to reset.
    pub(super) fn resettable(&self, which: StoreSession) -> bool {
        match which {
            StoreSession::Lease => self.lease.resettable(),
            StoreSession::Registry => self.registry.resettable(),
        }
    }

    /// Sends a lease call: on the elector's session, or as a datagram.
    fn lease_call<O: Observer>(
        &mut self,
        call: LeaseCall,
        workers: &WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        if !workers.client().sessions {
            return self.send_lease(call, CallTag::NONE, out);
        }
        // The tokio driver tells the elector a request failed at the TTL
        // (`timeout(ttl, ..)`) and a release at the retry interval
        // (`release_lease`), then awaits each one bound more.
        let bounds = match call {
            LeaseCall::Request { .. } => {
                CallBounds::awaited_late(self.elector.config().lease_ttl())
            }
            LeaseCall::Release { .. } => {
                CallBounds::awaited_late(self.elector.config().retry_interval())
            }
        };
        let mut outputs = Outputs::new();
        self.lease.call(call, bounds, out.local_now(), &mut outputs);
        self.apply_lease(&outputs, workers, out);
    }

    fn send_lease<O: Observer>(&self, call: LeaseCall, tag: CallTag, out: Out<'_, '_, O>) {
        let (pid, incarnation) = (self.pid, self.incarnation);
        let msg = match call {
            LeaseCall::Request { id } => ToStore::LeaseRequest {
                pid,
                incarnation,
                id,
                ttl_ns: crate::time::span_nanos(self.elector.config().lease_ttl()),
                tag,
            },
            LeaseCall::Release { token } => ToStore::Release {
                pid,
                incarnation,
                token,
                tag,
            },
        };
        self.to_store(msg, out);
    }

    fn send_open<O: Observer>(
        &self,
        session: StoreSession,
        conn: u32,
        step: u8,
        out: Out<'_, '_, O>,
    ) {
        let msg = ToStore::Open {
            pid: self.pid,
            incarnation: self.incarnation,
            session,
            conn,
            step,
        };
        self.to_store(msg, out);
    }

    /// Acts on what the elector's session asked for (a failed request is
    /// the elector's input: the caller drains the elector after), then
    /// re-arms the session's timer. The outputs by reference, read in
    /// place: moved in, their inline buffer (four outputs) was copied by a
    /// `memcpy` call per input and read through `SmallVec`'s by-value
    /// iterator (≈ 50 instructions an input: 1.5 % of a 500-node fleet's,
    /// callgrind).
    fn apply_lease<O: Observer>(
        &mut self,
        outputs: &Outputs<LeaseCall>,
        workers: &WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        for &output in outputs {
            match output {
                SessionOutput::SendOpen { conn, step } => {
                    self.send_open(StoreSession::Lease, conn, step, out)
                }
                SessionOutput::Send { payload, tag } => self.send_lease(payload, tag, out),
                SessionOutput::Failed { payload, why } => {
                    let process = out.names.process_ref(self.pid);
                    match payload {
                        LeaseCall::Request { id, .. } => {
                            self.elector.handle_request_failed(id, out.local_now());
                            out.observe(&Observation::RequestFailed {
                                process,
                                request: id.0,
                            });
                        }
                        LeaseCall::Release { token } => out.observe(&Observation::CallFailed {
                            process,
                            call: FailedCall::Release { token },
                            why,
                        }),
                    }
                }
                SessionOutput::Opened | SessionOutput::Closed { .. } => {
                    observe_session(self.pid, SessionKind::Lease, output, out)
                }
            }
        }
        let timings = workers.client().timings;
        arm(&mut self.lease, &timings, StoreSession::Lease, out);
    }

    /// Acts on what the heartbeat's session asked for, then re-arms its
    /// timer.
    fn apply_registry<O: Observer>(
        &mut self,
        outputs: &Outputs<()>,
        workers: &WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        for &output in outputs {
            match output {
                SessionOutput::SendOpen { conn, step } => {
                    self.send_open(StoreSession::Registry, conn, step, out)
                }
                SessionOutput::Send { tag, .. } => self.send_heartbeat(tag, out),
                SessionOutput::Failed { why, .. } => {
                    let process = out.names.process_ref(self.pid);
                    out.observe(&Observation::CallFailed {
                        process,
                        call: FailedCall::Heartbeat,
                        why,
                    });
                }
                SessionOutput::Opened | SessionOutput::Closed { .. } => {
                    observe_session(self.pid, SessionKind::Registry, output, out)
                }
            }
        }
        let timings = workers.client().timings;
        arm(&mut self.registry, &timings, StoreSession::Registry, out);
    }

    fn send_heartbeat<O: Observer>(&self, tag: CallTag, out: Out<'_, '_, O>) {
        let msg = ToStore::Heartbeat {
            pid: self.pid,
            incarnation: self.incarnation,
            node: self.node,
            tag,
        };
        self.to_store(msg, out);
    }

    /// A session's timer fired.
    pub(super) fn session_due<O: Observer>(
        &mut self,
        which: StoreSession,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        let timings = workers.client().timings;
        let now = out.local_now();
        match which {
            StoreSession::Lease => {
                let mut outputs = Outputs::new();
                self.lease.timer_at = None;
                self.lease.handle_timeout(now, &timings, &mut outputs);
                self.apply_lease(&outputs, workers, out);
                self.drain_elector(workers, out);
            }
            StoreSession::Registry => {
                let mut outputs = Outputs::new();
                self.registry.timer_at = None;
                self.registry.handle_timeout(now, &timings, &mut outputs);
                self.apply_registry(&outputs, workers, out);
            }
        }
    }

    /// The network tells session `which` of its connection (the lease
    /// store's restart reset it, or refused its connect).
    pub(super) fn session_event<O: Observer>(
        &mut self,
        which: StoreSession,
        event: ConnectionEvent,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        let now = out.local_now();
        match which {
            StoreSession::Lease => {
                let mut outputs = Outputs::new();
                self.lease.connection_event(event, now, &mut outputs);
                self.apply_lease(&outputs, workers, out);
                self.drain_elector(workers, out);
            }
            StoreSession::Registry => {
                let mut outputs = Outputs::new();
                self.registry.connection_event(event, now, &mut outputs);
                self.apply_registry(&outputs, workers, out);
            }
        }
    }

    /// The process starts as a follower: the elector asks, the heartbeat
    /// loop (every `heartbeat_interval`) begins.
    pub(super) fn start<O: Observer>(
        &mut self,
        heartbeat_interval: Duration,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        let local = out.local_now();
        self.elector.start(local);
        self.drain_elector(workers, out);
        self.heartbeat(heartbeat_interval, workers, out);
    }

    /// A graceful stop: the elector ends the work and releases the lease,
    /// then the process exits (a grant answering a request still in flight
    /// is lost with it; that lease lapses at its TTL).
    pub(super) fn stop<O: Observer>(&mut self, workers: &mut WorkerTable, out: Out<'_, '_, O>) {
        let local = out.local_now();
        self.elector.stop(local);
        self.drain_elector(workers, out);
        out.exit();
    }

    /// The work failed: a leader abdicates (ends the work, releases, stays
    /// quiet for `rejoin_delay`); a follower has no work to fail.
    pub(super) fn work_fails<O: Observer>(
        &mut self,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        let led = workers.believed(self.pid).is_some();
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::WorkFailed { process, led });
        let local = out.local_now();
        self.elector.abdicate(local);
        self.drain_elector(workers, out);
    }

    /// Heartbeats, and sets the timer for the next one `interval` later.
    #[inline(always)]
    pub(super) fn heartbeat<O: Observer>(
        &mut self,
        interval: Duration,
        workers: &WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        if workers.client().sessions {
            // The heartbeat task gives a beat up at its interval
            // (`timeout(self.interval, ..)`), dropping it.
            let bounds = CallBounds::dropped_at(interval);
            let mut outputs = Outputs::new();
            self.registry
                .call((), bounds, out.local_now(), &mut outputs);
            self.apply_registry(&outputs, workers, out);
        } else {
            self.send_heartbeat(CallTag::NONE, out);
        }
        out.set_timer_after(interval, Timer::Heartbeat);
    }

    #[inline(always)]
    pub(super) fn receive<O: Observer>(
        &mut self,
        msg: ToProcess,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        let local = out.local_now();
        // On a session, an answer reaches the elector only while its call
        // waits for it (the tokio driver drops a late one).
        let reply = match msg {
            ToProcess::LeaseResponse { reply, .. } | ToProcess::LeaseFailed { reply } => reply,
            ToProcess::Released { tag } => {
                self.lease.answered(tag.call);
                let timings = workers.client().timings;
                arm(&mut self.lease, &timings, StoreSession::Lease, out);
                return;
            }
            ToProcess::HeartbeatAnswered { tag } => {
                self.registry.answered(tag.call);
                let timings = workers.client().timings;
                arm(&mut self.registry, &timings, StoreSession::Registry, out);
                return;
            }
            ToProcess::Opened {
                session,
                conn,
                step,
                epoch,
            } => {
                let mut lease = Outputs::new();
                let mut registry = Outputs::new();
                match session {
                    StoreSession::Lease => self.lease.opened(conn, step, epoch, local, &mut lease),
                    StoreSession::Registry => {
                        self.registry
                            .opened(conn, step, epoch, local, &mut registry)
                    }
                }
                self.apply_lease(&lease, workers, out);
                self.apply_registry(&registry, workers, out);
                return;
            }
        };
        // The request answered: named by the answer without a session, by
        // the session's call on one.
        let id = if reply.on_session() {
            let answered = self.lease.answered(reply.call());
            let timings = workers.client().timings;
            arm(&mut self.lease, &timings, StoreSession::Lease, out);
            match answered {
                Answered::ToCaller(LeaseCall::Request { id }) => id,
                Answered::ToCaller(LeaseCall::Release { .. })
                | Answered::Late
                | Answered::Unknown => return,
            }
        } else {
            reply.request()
        };
        match msg {
            ToProcess::LeaseResponse { result, .. } => {
                // What the observers need, read before the answer moves into
                // the elector.
                let acquired = result.acquired_token();
                let renewal = matches!(result, LeaseResult::Renewed { .. });
                let disposition = self.elector.handle_response(id, result, local);
                let process = out.names.process_ref(self.pid);
                out.observe(&Observation::ResponseHandled {
                    process,
                    request: id.0,
                    disposition,
                    acquired,
                    renewal,
                });
            }
            ToProcess::LeaseFailed { .. } => {
                self.elector.handle_request_failed(id, local);
                let process = out.names.process_ref(self.pid);
                out.observe(&Observation::RequestFailed {
                    process,
                    request: id.0,
                });
            }
            ToProcess::Released { .. }
            | ToProcess::HeartbeatAnswered { .. }
            | ToProcess::Opened { .. } => unreachable!("handled above"),
        }
        self.drain_elector(workers, out);
    }

    /// The elector's timer fired.
    #[inline(always)]
    pub(super) fn elector_due<O: Observer>(
        &mut self,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        self.timer_at = None;
        let local = out.local_now();
        self.elector.handle_timeout(local);
        self.drain_elector(workers, out);
    }

    /// Acts on everything the elector asked for, then re-arms its timer.
    fn drain_elector<O: Observer>(&mut self, workers: &mut WorkerTable, out: Out<'_, '_, O>) {
        while let Some(output) = self.elector.poll_output() {
            match output {
                ElectorOutput::SendLeaseRequest { id, ttl } => {
                    let local = out.local_now();
                    let process = out.names.process_ref(self.pid);
                    out.observe(&Observation::RequestSent {
                        process,
                        request: id.0,
                        local,
                    });
                    debug_assert_eq!(ttl, self.elector.config().lease_ttl());
                    self.lease_call(LeaseCall::Request { id }, workers, out);
                }
                ElectorOutput::StartWork { token } => workers.start_term(self.pid, token, out),
                ElectorOutput::StopWork { token, reason } => {
                    workers.end_term(self.pid, token, &reason, None, out)
                }
                ElectorOutput::Release { token } => {
                    self.lease_call(LeaseCall::Release { token }, workers, out)
                }
                ElectorOutput::LeaderObserved { .. } => {}
            }
        }
        self.arm_elector_timer(out);
    }

    /// The node's clock changed its course (a slew; no step reaches a
    /// node's monotonic clock): the elector's timer is re-armed on it (the
    /// worker's unit timers keep their true-time lengths).
    pub(super) fn clock_changed<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        self.timer_at = None;
        self.arm_elector_timer(out);
    }

    /// Arms the elector's timer for its next deadline (unless armed for
    /// it). Always inlined: with a second (cold) caller,
    /// [`clock_changed`](Self::clock_changed), the optimiser had kept it
    /// out of line of [`drain_elector`](Self::drain_elector), once per
    /// input of every node.
    #[inline(always)]
    fn arm_elector_timer<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        let Some(local) = self.elector.next_timeout() else {
            return;
        };
        let at = out.true_time(local);
        if self.timer_at == Some(at) {
            return;
        }
        self.timer_generation = self.timer_generation.wrapping_add(1);
        self.timer_at = Some(at);
        let generation = self.timer_generation;
        out.set_timer_at(at, Timer::Elector { generation });
    }

    /// The worker's timer: start a unit if still leading.
    #[inline(always)]
    pub(super) fn work_tick<O: Observer>(
        &mut self,
        workers: &mut WorkerTable,
        out: Out<'_, '_, O>,
    ) {
        // The unit checks leadership at its start. First the query a real
        // driver makes between inputs, judged by the checker (trace-silent):
        // `token_at` must honour a deadline whose timer is not handled yet.
        let local = out.local_now();
        if workers.believed(self.pid).is_some() {
            let process = out.names.process_ref(self.pid);
            out.observe(&Observation::TokenAnswered {
                process,
                local,
                token: self.elector.token_at(local),
            });
        }
        // Then bring the elector up to date, so a deadline due now is
        // honoured by the trace as well.
        self.elector.handle_timeout(local);
        self.drain_elector(workers, out);
        let Some(token) = workers.believed(self.pid) else {
            return;
        };
        if self.elector.token_at(local) != Some(token) {
            return;
        }
        workers.start_unit(self.pid, token, local, out);
    }
}

/// Observes a session's opening or end.
fn observe_session<C, O: Observer>(
    pid: u32,
    session: SessionKind,
    output: SessionOutput<C>,
    out: Out<'_, '_, O>,
) {
    let process = out.names.process_ref(pid);
    match output {
        SessionOutput::Opened => out.observe(&Observation::SessionOpened { process, session }),
        SessionOutput::Closed { why } => out.observe(&Observation::SessionClosed {
            process,
            session,
            why,
        }),
        _ => {}
    }
}

/// Sets a timer for session `which` of the acting process if its next bound
/// asks for one ([`Session::rearm`]).
fn arm<C: Copy, O: Observer>(
    session: &mut Session<C>,
    timings: &super::session::SessionTimings,
    which: StoreSession,
    out: Out<'_, '_, O>,
) {
    if let Some((generation, at)) = session.rearm(timings) {
        let timer = Timer::Session {
            session: which,
            generation,
        };
        out.set_timer_local(at, timer);
    }
}
