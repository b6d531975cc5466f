//! A node's process: one life running an [`Elector`] for the role, a
//! heartbeat loop, and the worker. While it holds token `T` it starts a unit
//! of work every `write_interval`, checking leadership at the start; the unit
//! takes `work_duration`, then a write stamped `T` goes to the downstream. A
//! pause inside a unit delays that write until the process resumes — the
//! stalled leader's late write.

use std::time::Duration;

use fenced::{Elector, ElectorOutput, FencingToken, LeaseResult, OwnerId, StepDownReason};

use super::messages::{Message, Timer, ToDownstream, ToProcess, ToStore};
use super::FencedHosts;
use crate::engine::{Address, Outbox};
use crate::network::{DOWNSTREAM_ENDPOINT, STORE_ENDPOINT};
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
#[derive(Debug)]
pub(crate) struct NodeProcess {
    pid: u32,
    node: u32,
    incarnation: u32,
    owner: OwnerId,
    elector: Elector,
    timings: WorkTimings,
    /// The true time the elector's timer is armed for.
    timer_at: Option<SimTime>,
    pub(super) timer_generation: u32,
    pub(super) work_generation: u32,
    next_unit: u64,
    /// The token of the term the process believes it holds (from StartWork
    /// to StopWork); the worker writes with it.
    pub(crate) believed: Option<FencingToken>,
}

type Out<'a, 'e, O> = &'a mut Outbox<'e, FencedHosts, O>;

impl NodeProcess {
    pub(super) fn new(
        pid: u32,
        node: u32,
        incarnation: u32,
        owner: OwnerId,
        elector: Elector,
        timings: WorkTimings,
    ) -> Self {
        NodeProcess {
            pid,
            node,
            incarnation,
            owner,
            elector,
            timings,
            timer_at: None,
            timer_generation: 0,
            work_generation: 0,
            next_unit: 1,
            believed: None,
        }
    }

    fn to_store<O: Observer>(&self, msg: ToStore, out: Out<'_, '_, O>) {
        out.send(Address::Server(STORE_ENDPOINT), Message::Store(msg));
    }

    /// The process starts as a follower: the elector asks, the heartbeat
    /// loop begins.
    pub(super) fn start<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        let local = out.local_now();
        self.elector.start(local);
        self.drain_elector(out);
        self.heartbeat(out);
    }

    /// A graceful stop: the elector ends the work and releases the lease,
    /// then the process exits (a grant answering a request still in flight
    /// is lost with it; that lease lapses at its TTL).
    pub(super) fn stop<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        let local = out.local_now();
        self.elector.stop(local);
        self.drain_elector(out);
        out.exit();
    }

    /// The work failed: a leader abdicates (ends the work, releases, stays
    /// quiet for `rejoin_delay`); a follower has no work to fail.
    pub(super) fn work_fails<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        let led = self.believed.is_some();
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::WorkFailed { process, led });
        let local = out.local_now();
        self.elector.abdicate(local);
        self.drain_elector(out);
    }

    /// The process died: it believes nothing any more.
    pub(super) fn crash(&mut self) {
        self.believed = None;
    }

    pub(super) fn heartbeat<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        let (pid, node) = (self.pid, self.node);
        self.to_store(ToStore::Heartbeat { pid, node }, out);
        out.set_timer_after(self.timings.heartbeat_interval, Timer::Heartbeat);
    }

    pub(super) fn receive<O: Observer>(&mut self, msg: ToProcess, out: Out<'_, '_, O>) {
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
        self.drain_elector(out);
    }

    /// The elector's timer fired.
    pub(super) fn elector_due<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        self.timer_at = None;
        let local = out.local_now();
        self.elector.handle_timeout(local);
        self.drain_elector(out);
    }

    /// Acts on everything the elector asked for, then re-arms its timer.
    fn drain_elector<O: Observer>(&mut self, out: Out<'_, '_, O>) {
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
                        owner: self.owner.clone(),
                        id,
                        ttl,
                    };
                    self.to_store(msg, out);
                }
                ElectorOutput::StartWork { token } => self.start_term(token, out),
                ElectorOutput::StopWork { token, reason } => self.end_term(token, &reason, out),
                ElectorOutput::Release { token } => {
                    let msg = ToStore::Release {
                        pid: self.pid,
                        incarnation: self.incarnation,
                        owner: self.owner.clone(),
                        token,
                    };
                    self.to_store(msg, out);
                }
                ElectorOutput::LeaderObserved { .. } => {}
            }
        }
        self.arm_elector_timer(out);
    }

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

    fn start_term<O: Observer>(&mut self, token: FencingToken, out: Out<'_, '_, O>) {
        debug_assert!(
            self.believed.is_none(),
            "StopWork comes before the next StartWork"
        );
        self.believed = Some(token);
        self.work_generation = self.work_generation.wrapping_add(1);
        let generation = self.work_generation;
        out.set_timer_at(out.now, Timer::Work { generation });
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::TermStarted { process, token });
    }

    fn end_term<O: Observer>(
        &mut self,
        token: FencingToken,
        reason: &StepDownReason,
        out: Out<'_, '_, O>,
    ) {
        debug_assert_eq!(self.believed, Some(token), "StopWork ends the term in hand");
        self.believed = None;
        self.work_generation = self.work_generation.wrapping_add(1);
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::TermEnded {
            process,
            token,
            reason,
            why: None,
        });
    }

    /// The worker's timer: start a unit if still leading.
    pub(super) fn work_tick<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        // The unit checks leadership at its start: bring the elector up to
        // date first, so a deadline due now is honoured.
        let local = out.local_now();
        self.elector.handle_timeout(local);
        self.drain_elector(out);
        let Some(token) = self.believed else {
            return;
        };
        if self.elector.token_at(local) != Some(token) {
            return;
        }
        let unit = self.next_unit;
        self.next_unit += 1;
        let generation = self.work_generation;
        out.set_timer_local(
            local + self.timings.work_duration,
            Timer::WorkDone { token, unit },
        );
        out.set_timer_local(
            local + self.timings.write_interval,
            Timer::Work { generation },
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
    pub(super) fn work_done<O: Observer>(
        &mut self,
        token: FencingToken,
        unit: u64,
        out: Out<'_, '_, O>,
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
        out.send(
            Address::Server(DOWNSTREAM_ENDPOINT),
            Message::Downstream(msg),
        );
    }
}
