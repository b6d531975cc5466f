//! A node's process: one life running an [`Elector`] for the role and a
//! heartbeat loop, driving its worker in the hosts' [`WorkerTable`]: the
//! elector's StartWork and StopWork begin and end the worker's terms, and
//! each unit starts only if the elector still answers the term's token. While
//! it holds token `T` it starts a unit of work every `write_interval`; the
//! unit takes `work_duration`, then a write stamped `T` goes to the
//! downstream. A pause inside a unit delays that write until the process
//! resumes — the stalled leader's late write.

use std::time::Duration;

use fenced::{Elector, ElectorOutput, LeaseResult};

use super::messages::{Message, Timer, ToProcess, ToStore};
use super::workers::WorkerTable;
use super::FencedHosts;
use crate::engine::network::STORE_ENDPOINT;
use crate::engine::{Address, Outbox};
use crate::observation::{Observation, Observer, SimTime};

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
        }
    }

    fn to_store<O: Observer>(&self, msg: ToStore, out: Out<'_, '_, O>) {
        out.send(Address::Server(STORE_ENDPOINT), Message::Store(msg));
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
        self.heartbeat(heartbeat_interval, out);
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
    pub(super) fn heartbeat<O: Observer>(&mut self, interval: Duration, out: Out<'_, '_, O>) {
        let (pid, node) = (self.pid, self.node);
        self.to_store(ToStore::Heartbeat { pid, node }, out);
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
        match msg {
            ToProcess::LeaseResponse { id, result } => {
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
            ToProcess::LeaseFailed { id } => {
                self.elector.handle_request_failed(id, local);
                let process = out.names.process_ref(self.pid);
                out.observe(&Observation::RequestFailed {
                    process,
                    request: id.0,
                });
            }
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
                    let msg = ToStore::LeaseRequest {
                        pid: self.pid,
                        incarnation: self.incarnation,
                        id,
                        ttl,
                    };
                    self.to_store(msg, out);
                }
                ElectorOutput::StartWork { token } => workers.start_term(self.pid, token, out),
                ElectorOutput::StopWork { token, reason } => {
                    workers.end_term(self.pid, token, &reason, None, out)
                }
                ElectorOutput::Release { token } => {
                    let msg = ToStore::Release {
                        pid: self.pid,
                        incarnation: self.incarnation,
                        token,
                    };
                    self.to_store(msg, out);
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
