//! One life of a node running another lock protocol's client, and the same
//! worker as the fenced protocol's process: while the client says it leads,
//! a unit of work every `write_interval`, leadership checked at its start, a
//! write stamped with the term's token after `work_duration`.
//!
//! The term's token is the protocol's own (plus one: client-go's
//! `leaseTransitions` starts at 0 and a fencing token at 1) when the protocol
//! has one; otherwise the simulator numbers the terms of the run in the order
//! they begin, so the checker can tell them apart — and the downstream must
//! then be unfenced, since no real client could send such a number.

use fenced::{FencingToken, OwnerId, StepDownReason};
use fenced_zoo::{ClientId, ClientOutput, LockClient};

use super::{Out, ZooMessage, ZooProtocol, ZooTimer};
use crate::engine::{server_endpoint, Address};
use crate::hosts::messages::ToDownstream;
use crate::hosts::WorkTimings;
use crate::network::DOWNSTREAM_ENDPOINT;
use crate::observation::{Observation, Observer, SimTime};

/// One life of a node, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct ZooProcess<P: ZooProtocol> {
    pid: u32,
    incarnation: u32,
    id: ClientId,
    owner: OwnerId,
    client: P::Client,
    timings: WorkTimings,
    timer_at: Option<SimTime>,
    pub(super) timer_generation: u32,
    pub(super) work_generation: u32,
    next_unit: u64,
    /// The token of the term the process believes it holds.
    pub(super) believed: Option<FencingToken>,
}

/// The downstream token for the protocol's token `t`.
pub(super) fn fencing_token(t: u64) -> FencingToken {
    FencingToken::new(t.saturating_add(1)).expect("t + 1 is at least 1")
}

impl<P: ZooProtocol> ZooProcess<P> {
    pub(super) fn new(
        pid: u32,
        incarnation: u32,
        id: ClientId,
        owner: OwnerId,
        client: P::Client,
        timings: WorkTimings,
    ) -> Self {
        ZooProcess {
            pid,
            incarnation,
            id,
            owner,
            client,
            timings,
            timer_at: None,
            timer_generation: 0,
            work_generation: 0,
            next_unit: 1,
            believed: None,
        }
    }

    /// The process starts: the client begins contending.
    pub(super) fn start<O: Observer>(&mut self, next_term: &mut u64, out: Out<'_, '_, P, O>) {
        let local = out.local_now();
        self.client.start(local);
        self.drain(next_term, out);
    }

    /// A server's answer or push arrived.
    pub(super) fn response<O: Observer>(
        &mut self,
        from: u16,
        response: P::Response,
        next_term: &mut u64,
        out: Out<'_, '_, P, O>,
    ) {
        let local = out.local_now();
        self.client.handle_response(from, response, local);
        self.drain(next_term, out);
    }

    /// The client's timer fired.
    pub(super) fn timeout<O: Observer>(&mut self, next_term: &mut u64, out: Out<'_, '_, P, O>) {
        self.timer_at = None;
        let local = out.local_now();
        self.client.handle_timeout(local);
        self.drain(next_term, out);
    }

    /// A graceful stop: the client releases if its library does, then the
    /// process exits.
    pub(super) fn stop<O: Observer>(&mut self, next_term: &mut u64, out: Out<'_, '_, P, O>) {
        let local = out.local_now();
        self.client.stop(local);
        self.drain(next_term, out);
        if let Some(token) = self.believed {
            // A model that keeps leading through its own stop still stops
            // leading when the process exits.
            self.end_term(token, "stopped", out);
        }
        out.exit();
    }

    /// The process died.
    pub(super) fn crash(&mut self) {
        self.believed = None;
    }

    fn drain<O: Observer>(&mut self, next_term: &mut u64, out: Out<'_, '_, P, O>) {
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Send { to, request } => {
                    let msg = ZooMessage::ToServer {
                        index: to,
                        from: self.id,
                        pid: self.pid,
                        request,
                    };
                    out.send(Address::Server(server_endpoint(to)), msg);
                }
                ClientOutput::BecameLeader { token } => {
                    if let Some(old) = self.believed {
                        self.end_term(old, "new term", out);
                    }
                    let token = match token {
                        Some(t) if P::HAS_TOKEN => fencing_token(t),
                        _ => {
                            *next_term += 1;
                            fencing_token(*next_term - 1)
                        }
                    };
                    self.start_term(token, out);
                }
                ClientOutput::LostLeadership { reason } => {
                    if let Some(token) = self.believed {
                        self.end_term(token, reason, out);
                    }
                }
            }
        }
        self.arm(out);
    }

    fn arm<O: Observer>(&mut self, out: Out<'_, '_, P, O>) {
        let Some(local) = self.client.next_timeout() else {
            return;
        };
        let at = out.true_time(local);
        if self.timer_at == Some(at) {
            return;
        }
        self.timer_generation = self.timer_generation.wrapping_add(1);
        self.timer_at = Some(at);
        let generation = self.timer_generation;
        out.set_timer_at(at, ZooTimer::Client { generation });
    }

    fn start_term<O: Observer>(&mut self, token: FencingToken, out: Out<'_, '_, P, O>) {
        self.believed = Some(token);
        self.work_generation = self.work_generation.wrapping_add(1);
        let generation = self.work_generation;
        out.set_timer_at(out.now, ZooTimer::Work { generation });
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::TermStarted { process, token });
    }

    fn end_term<O: Observer>(&mut self, token: FencingToken, why: &str, out: Out<'_, '_, P, O>) {
        debug_assert_eq!(self.believed, Some(token), "a term ends once");
        self.believed = None;
        self.work_generation = self.work_generation.wrapping_add(1);
        let reason = if why == "stopped" {
            StepDownReason::Stopped
        } else {
            StepDownReason::LocalDeadline
        };
        let process = out.names.process_ref(self.pid);
        out.observe(&Observation::TermEnded {
            process,
            token,
            reason: &reason,
            why: Some(why),
        });
    }

    /// The worker's timer: start a unit if the client still says it leads.
    pub(super) fn work_tick<O: Observer>(&mut self, next_term: &mut u64, out: Out<'_, '_, P, O>) {
        let local = out.local_now();
        // Bring the client up to date first, so a deadline due now counts.
        self.client.handle_timeout(local);
        self.drain(next_term, out);
        let Some(token) = self.believed else {
            return;
        };
        if self.client.leadership(local).is_none() {
            return;
        }
        let unit = self.next_unit;
        self.next_unit += 1;
        let generation = self.work_generation;
        out.set_timer_local(
            local + self.timings.work_duration,
            ZooTimer::WorkDone { token, unit },
        );
        out.set_timer_local(
            local + self.timings.write_interval,
            ZooTimer::Work { generation },
        );
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
        out: Out<'_, '_, P, O>,
    ) {
        let process = out.names.process_ref(self.pid);
        if self.believed != Some(token) {
            out.observe(&Observation::WorkCancelled {
                process,
                token,
                unit,
            });
            return;
        }
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
            ZooMessage::Downstream(msg),
        );
    }
}
