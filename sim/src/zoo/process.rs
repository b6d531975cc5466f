//! One life of a node running another lock protocol's client, driving its
//! worker in the same [`WorkerTable`] as the fenced protocol's process: while
//! the client says it leads, a unit of work every `write_interval`,
//! leadership checked at its start, a write stamped with the term's token
//! after `work_duration`.
//!
//! The term's token is the protocol's own (plus one: client-go's
//! `leaseTransitions` starts at 0 and a fencing token at 1) when the protocol
//! has one; otherwise the simulator numbers the terms of the run in the order
//! they begin, so the checker can tell them apart — and the downstream must
//! then be unfenced, since no real client could send such a number.

use fenced::{FencingToken, StepDownReason};
use fenced_zoo::{ClientId, ClientOutput, LockClient};

use super::{Out, ZooMessage, ZooProtocol, ZooTimer};
use crate::engine::{server_endpoint, Address};
use crate::hosts::workers::WorkerTable;
use crate::observation::{Observer, SimTime};

/// One life of a node, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct ZooProcess<P: ZooProtocol> {
    pid: u32,
    id: ClientId,
    client: P::Client,
    timer_at: Option<SimTime>,
    pub(super) timer_generation: u32,
    /// Steps of the machine's wall clock the client has not been told of
    /// (it times by its monotonic clock; see
    /// [`LockClient::wall_clock_stepped`]): told at its next input.
    wall_pending: i64,
}

/// The downstream token for the protocol's token `t`.
pub(super) fn fencing_token(t: u64) -> FencingToken {
    FencingToken::new(t.saturating_add(1)).expect("t + 1 is at least 1")
}

impl<P: ZooProtocol> ZooProcess<P> {
    pub(super) fn new(pid: u32, id: ClientId, client: P::Client) -> Self {
        ZooProcess {
            pid,
            id,
            client,
            timer_at: None,
            timer_generation: 0,
            wall_pending: 0,
        }
    }

    /// The machine's wall clock stepped by `by` ns: the client is told at
    /// its next input (a paused process reads its clock when it runs again).
    pub(super) fn wall_stepped(&mut self, by: i64) {
        self.wall_pending = self.wall_pending.saturating_add(by);
    }

    /// Tells the client of the wall steps since its last input.
    fn tell_wall(&mut self, local: fenced::Instant) {
        if self.wall_pending != 0 {
            self.client.wall_clock_stepped(self.wall_pending, local);
            self.wall_pending = 0;
        }
    }

    /// The process starts: the client begins contending.
    pub(super) fn start<O: Observer>(
        &mut self,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        let local = out.local_now();
        self.wall_pending = 0;
        self.client.start(local);
        self.drain(next_term, workers, out);
    }

    /// Its client's identity (this life's).
    pub(super) fn id(&self) -> ClientId {
        self.id
    }

    /// A server's answer or push arrived.
    pub(super) fn response<O: Observer>(
        &mut self,
        from: u16,
        response: P::Response,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        let local = out.local_now();
        self.tell_wall(local);
        self.client.handle_response(from, response, local);
        self.drain(next_term, workers, out);
    }

    /// The client's timer fired.
    pub(super) fn timeout<O: Observer>(
        &mut self,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        self.timer_at = None;
        let local = out.local_now();
        self.tell_wall(local);
        self.client.handle_timeout(local);
        self.drain(next_term, workers, out);
    }

    /// A graceful stop: the client releases if its library does, then the
    /// process exits.
    pub(super) fn stop<O: Observer>(
        &mut self,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        let local = out.local_now();
        self.tell_wall(local);
        self.client.stop(local);
        self.drain(next_term, workers, out);
        if let Some(token) = workers.believed(self.pid) {
            // A model that keeps leading through its own stop still stops
            // leading when the process exits.
            self.end_term(token, "stopped", workers, out);
        }
        out.exit();
    }

    /// The process dies on a live machine: its client is told
    /// ([`LockClient::kernel_closed`]) and what its kernel sends goes out.
    /// Nothing else is drained: the process is gone, and the worker table's
    /// crash ends its term.
    pub(super) fn kernel_closed<O: Observer>(&mut self, out: Out<'_, '_, P, O>) {
        let local = out.local_now();
        self.client.kernel_closed(local);
        while let Some(output) = self.client.poll_output() {
            if let ClientOutput::Send { to, request } = output {
                self.send(to, request, out);
            }
        }
    }

    /// Sends the client's `request` to server `to`: the first packet of a
    /// new connection waits for the handshake (a SYN there and its SYN-ACK
    /// back; see `ZooMessage::stream`), then goes by
    /// [`send_opened`](Self::send_opened).
    fn send<O: Observer>(&self, to: u16, request: P::Request, out: Out<'_, '_, P, O>) {
        if !P::opens_connection(&request) {
            return self.send_opened(to, request, out);
        }
        let syn = ZooMessage::Syn {
            index: to,
            from: self.id,
            pid: self.pid,
            request,
        };
        out.send(Address::Server(server_endpoint(to)), syn);
    }

    /// Sends `request` to server `to` on an open connection — also the
    /// first packet of one whose handshake just completed, which goes
    /// whatever the client did meanwhile (gave the attempt up, opened
    /// another): its socket's bytes were written before, as the lab's proxy
    /// forwards a client's first bytes once its handshake is done.
    pub(super) fn send_opened<O: Observer>(
        &self,
        to: u16,
        request: P::Request,
        out: Out<'_, '_, P, O>,
    ) {
        let msg = ZooMessage::ToServer {
            index: to,
            from: self.id,
            pid: self.pid,
            request,
        };
        out.send(Address::Server(server_endpoint(to)), msg);
    }

    fn drain<O: Observer>(
        &mut self,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Send { to, request } => self.send(to, request, out),
                ClientOutput::BecameLeader { token } => {
                    if let Some(old) = workers.believed(self.pid) {
                        self.end_term(old, "new term", workers, out);
                    }
                    let token = match token {
                        Some(t) if P::HAS_TOKEN => fencing_token(t),
                        _ => {
                            *next_term += 1;
                            fencing_token(*next_term - 1)
                        }
                    };
                    workers.start_term(self.pid, token, out);
                }
                ClientOutput::LostLeadership { reason } => {
                    if let Some(token) = workers.believed(self.pid) {
                        self.end_term(token, reason, workers, out);
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

    /// The term ends for the design's own reason `why` (`stopped` is a
    /// graceful stop; anything else a step-down of the process's own).
    fn end_term<O: Observer>(
        &self,
        token: FencingToken,
        why: &str,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        let reason = if why == "stopped" {
            StepDownReason::Stopped
        } else {
            StepDownReason::LocalDeadline
        };
        workers.end_term(self.pid, token, &reason, Some(why), out);
    }

    /// The worker's timer: start a unit if the client still says it leads.
    pub(super) fn work_tick<O: Observer>(
        &mut self,
        next_term: &mut u64,
        workers: &mut WorkerTable,
        out: Out<'_, '_, P, O>,
    ) {
        let local = out.local_now();
        self.tell_wall(local);
        // Bring the client up to date first, so a deadline due now counts.
        self.client.handle_timeout(local);
        self.drain(next_term, workers, out);
        let Some(token) = workers.believed(self.pid) else {
            return;
        };
        if self.client.leadership(local).is_none() {
            return;
        }
        workers.start_unit(self.pid, token, local, out);
    }
}
