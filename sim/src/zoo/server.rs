//! One server of another lock protocol (an etcd cluster, the API server, a
//! Redis instance, PostgreSQL, ZooKeeper, DynamoDB) as a sans-IO host: the
//! zoo's [`LockServer`] behind the engine's [`Outbox`].

use std::time::Duration;

use fenced_zoo::{ClientId, LockServer, ServerIndex, ServerOutput};

use super::bursts::{TxnBursts, Writer};
use super::{Client, Out, ZooMessage, ZooProtocol, ZooTimer};
use crate::engine::{server_endpoint, Address};
use crate::observation::{Observation, Observer, ProcessRef, SimTime};

/// A server host: the model, its armed timer, and its view of the holder.
#[derive(Debug)]
pub(crate) struct ZooServer<P: ZooProtocol> {
    pub(super) index: ServerIndex,
    pub(super) model: P::Server,
    pub(super) timer_generation: u32,
    timer_at: Option<SimTime>,
    /// Who this server says holds the lock, with the protocol's token.
    pub(super) holder: Option<(ClientId, Option<u64>)>,
    /// What the model told its clients when its process died
    /// ([`went_down`](Self::went_down)), each waiting for its client's
    /// process to take it ([`take_resets`](Self::take_resets)).
    resets: Vec<(ClientId, P::Response)>,
    /// The model's transactions in bursts: which tokens raced other
    /// clients' writes (a record, see [`TxnBursts`]).
    pub(super) bursts: TxnBursts,
}

impl<P: ZooProtocol> ZooServer<P> {
    /// Server `index` running `model`; transactions at most `race_window`
    /// apart are one burst ([`TxnBursts`]).
    pub(super) fn new(index: ServerIndex, model: P::Server, race_window: Duration) -> Self {
        let bursts = TxnBursts::new(race_window, model.transactions());
        ZooServer {
            index,
            model,
            timer_generation: 0,
            timer_at: None,
            holder: None,
            resets: Vec::new(),
            bursts,
        }
    }

    /// Notes the model's transactions after `writer`'s input.
    fn note_transactions(&mut self, at: SimTime, writer: Writer) {
        self.bursts.note(self.model.transactions(), at, writer);
    }

    /// A request from `from` arrived.
    pub(super) fn request<O: Observer>(
        &mut self,
        from: ClientId,
        request: P::Request,
        clients: &[Client],
        out: Out<'_, '_, P, O>,
    ) -> bool {
        let now = out.local_now();
        self.model.handle_request(from, request, now);
        self.note_transactions(out.now, Some(from.0));
        self.drain(clients, out)
    }

    /// The server's timer fired.
    pub(super) fn timeout<O: Observer>(
        &mut self,
        clients: &[Client],
        out: Out<'_, '_, P, O>,
    ) -> bool {
        self.timer_at = None;
        let now = out.local_now();
        self.model.handle_timeout(now);
        self.note_transactions(out.now, None);
        self.drain(clients, out)
    }

    /// The server's process dies: the clients its model replies to (the
    /// kernel closing their connections), in the model's order. Their
    /// replies wait here for each client's process to take them.
    pub(super) fn went_down(&mut self) -> Vec<ClientId> {
        self.model.went_down();
        let mut told = Vec::new();
        while let Some(output) = self.model.poll_output() {
            match output {
                ServerOutput::Reply { to, response } => {
                    if !told.contains(&to) {
                        told.push(to);
                    }
                    self.resets.push((to, response));
                }
                ServerOutput::Holder { .. } => {
                    debug_assert!(
                        false,
                        "a server's death changes no holder before it is back"
                    );
                }
            }
        }
        told
    }

    /// The replies waiting for `client` since the server died, in order.
    pub(super) fn take_resets(&mut self, client: ClientId) -> Vec<P::Response> {
        let (taken, kept) = std::mem::take(&mut self.resets)
            .into_iter()
            .partition(|(to, _)| *to == client);
        self.resets = kept;
        taken.into_iter().map(|(_, response)| response).collect()
    }

    /// The server comes back from a restart (durable: its state survives).
    pub(super) fn restart<O: Observer>(
        &mut self,
        durable: bool,
        clients: &[Client],
        out: Out<'_, '_, P, O>,
    ) -> bool {
        self.timer_at = None;
        let now = out.local_now();
        self.model.restart(now, durable);
        self.note_transactions(out.now, None);
        self.drain(clients, out)
    }

    /// Sends the model's replies, notes holder changes, re-arms the timer.
    /// Returns whether the holder changed.
    fn drain<O: Observer>(&mut self, clients: &[Client], out: Out<'_, '_, P, O>) -> bool {
        let mut changed = false;
        while let Some(output) = self.model.poll_output() {
            match output {
                ServerOutput::Reply { to, response } => {
                    let Some(client) = clients.get(to.0 as usize) else {
                        debug_assert!(false, "a server answers only clients that asked");
                        continue;
                    };
                    let (pid, incarnation) = (client.pid, client.incarnation);
                    let msg = ZooMessage::ToClient {
                        from: self.index,
                        client: to,
                        response,
                    };
                    out.send(Address::Process { pid, incarnation }, msg);
                }
                ServerOutput::Holder { holder, token } => {
                    let new = holder.map(|c| (c, token));
                    if new != self.holder {
                        self.holder = new;
                        changed = true;
                        let names = out.names;
                        let server = names.endpoint_ref(server_endpoint(self.index));
                        let holder = holder
                            .and_then(|c| clients.get(c.0 as usize))
                            .map(|c| names.sender_ref(c.pid, c.incarnation, &c.owner));
                        observe_holder(out, Some(server), holder, token);
                    }
                }
            }
        }
        self.arm(out);
        changed
    }

    fn arm<O: Observer>(&mut self, out: Out<'_, '_, P, O>) {
        let Some(local) = self.model.next_timeout() else {
            return;
        };
        let at = out.true_time(local);
        if self.timer_at == Some(at) {
            return;
        }
        self.timer_generation = self.timer_generation.wrapping_add(1);
        self.timer_at = Some(at);
        let (index, generation) = (self.index, self.timer_generation);
        out.set_timer_at(at.max(out.now), ZooTimer::Server { index, generation });
    }
}

/// Observes a holder change.
pub(super) fn observe_holder<P: ZooProtocol, O: Observer>(
    out: Out<'_, '_, P, O>,
    server: Option<crate::observation::HostRef<'_>>,
    holder: Option<ProcessRef<'_>>,
    token: Option<u64>,
) {
    out.observe(&Observation::Holder {
        server,
        holder,
        token,
    });
}
