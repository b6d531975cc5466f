//! The lock zoo in the simulator: any [`fenced_zoo::Protocol`] — PostgreSQL's
//! connection-bound advisory lock, client-go's Lease election, etcd's
//! `concurrency.Election`, Redlock, Curator's `LeaderLatch` on ZooKeeper, the
//! DynamoDB lock client — as hosts of the same engine, under the same faults,
//! judged by the same checker as the fenced protocol.
//!
//! [`ZooHosts`] is the protocol's servers (endpoint 0 and, for Redlock's
//! instances, the endpoints after the downstream), the downstream (the same
//! [`FencedStore`](fenced::FencedStore), fenced by the protocol's token where
//! it has one and the scenario asks, unfenced otherwise), and one
//! [`ZooProcess`] per node life (the protocol's client), each driving its
//! worker in the same [`WorkerTable`] as the fenced protocol's. The
//! engine, the faults and the checker are those of the fenced protocol:
//! adding a protocol added this module and touched no engine code.
//!
//! What the checker judges for every protocol: belief overlap (two processes
//! whose clients say they lead at once), split-brain writes (an older term's
//! write accepted after a newer term's), single writer per token, failovers,
//! leaderless time, liveness after heal. The lease store's own invariants
//! (`token-monotonic`, `lease-exclusive`) are the fenced store's and are not
//! judged here. The timeline's truth lane shows the protocol's truth as its
//! servers report it: the single server's holder, or for Redlock the client
//! that holds a majority of the instances (none while no one does).

mod bursts;
mod process;
mod server;

use std::fmt::Debug;

use fenced::{FencedStore, Fencing, OwnerId};
use fenced_zoo::{ClientId, Protocol, ServerIndex};

use crate::engine::network::DOWNSTREAM_ENDPOINT;
use crate::engine::{server_index, stream_key, Address, Envelope, Hosts, Outbox, StreamKey};
use crate::hosts::messages::{worker_message_stream, ToDownstream, ToWorker};
use crate::hosts::session::{ClientSettings, ConnectionEvent};
use crate::hosts::workers::{carries, ProcessTable, WorkTimer, WorkerTable};
use crate::hosts::{DownstreamHost, SimHosts, WorkTimings};
use crate::observation::{MessageFacts, MessageKind, Observer};
use crate::rng::SeedDeriver;
use crate::scenario::{ProtocolSpec, ValidScenario};

pub(crate) use process::ZooProcess;
pub(crate) use server::ZooServer;

type Out<'a, 'e, P, O> = &'a mut Outbox<'e, ZooHosts<P>, O>;

/// A zoo protocol the simulator can run: every part printable (traces,
/// `Debug`) and movable to a worker thread (exploration).
pub(crate) trait ZooProtocol:
    Protocol<
        Client: Debug + Send,
        Server: Debug + Send,
        Settings: Send,
        Request: Send,
        Response: Send,
    > + Debug
    + Send
    + 'static
{
    /// This design's settings in `spec`, if `spec` is this design.
    fn settings_in(spec: &ProtocolSpec) -> Option<&Self::Settings>;
}

macro_rules! zoo_protocol {
    ($($design:ty => $variant:ident),* $(,)?) => {$(
        impl ZooProtocol for $design {
            fn settings_in(spec: &ProtocolSpec) -> Option<&Self::Settings> {
                match spec {
                    ProtocolSpec::$variant(s) => Some(s),
                    _ => None,
                }
            }
        }
    )*};
}

zoo_protocol! {
    fenced_zoo::connection_lock::ConnectionLock => ConnectionLock,
    fenced_zoo::client_go::ClientGo => ClientGo,
    fenced_zoo::etcd::Etcd => Etcd,
    fenced_zoo::redlock::Redlock => Redlock,
    fenced_zoo::zookeeper::ZooKeeper => ZooKeeper,
    fenced_zoo::dynamodb::DynamoDb => DynamoDb,
}

/// A message of a zoo run.
#[derive(Debug)]
pub(crate) enum ZooMessage<P: ZooProtocol> {
    /// Client `from` (in slot `pid`) asks server `index`.
    ToServer {
        index: ServerIndex,
        from: ClientId,
        pid: u32,
        request: P::Request,
    },
    /// Server `from` answers or pushes to client `client`.
    ToClient {
        from: ServerIndex,
        client: ClientId,
        response: P::Response,
    },
    /// The handshake of a new connection (see [`ZooMessage::stream`]):
    /// client `from`'s SYN to server `index`, carrying the request that
    /// opens the connection, which goes out when the SYN-ACK is back.
    Syn {
        index: ServerIndex,
        from: ClientId,
        pid: u32,
        request: P::Request,
    },
    /// Server `from`'s SYN-ACK to client `client`, handing back the request
    /// its host now sends.
    SynAck {
        from: ServerIndex,
        client: ClientId,
        request: P::Request,
    },
    /// A unit of work's write.
    Downstream(ToDownstream),
    /// The downstream's answer on a worker's session.
    Worker(ToWorker),
}

// Derived `Clone` would ask `P: Clone`; the messages are what must clone.
impl<P: ZooProtocol> Clone for ZooMessage<P> {
    fn clone(&self) -> Self {
        match self {
            ZooMessage::ToServer {
                index,
                from,
                pid,
                request,
            } => ZooMessage::ToServer {
                index: *index,
                from: *from,
                pid: *pid,
                request: request.clone(),
            },
            ZooMessage::ToClient {
                from,
                client,
                response,
            } => ZooMessage::ToClient {
                from: *from,
                client: *client,
                response: response.clone(),
            },
            ZooMessage::Syn {
                index,
                from,
                pid,
                request,
            } => ZooMessage::Syn {
                index: *index,
                from: *from,
                pid: *pid,
                request: request.clone(),
            },
            ZooMessage::SynAck {
                from,
                client,
                request,
            } => ZooMessage::SynAck {
                from: *from,
                client: *client,
                request: request.clone(),
            },
            ZooMessage::Downstream(w) => ZooMessage::Downstream(w.clone()),
            ZooMessage::Worker(w) => ZooMessage::Worker(*w),
        }
    }
}

impl<P: ZooProtocol> Envelope for ZooMessage<P> {
    fn facts(&self) -> MessageFacts {
        MessageFacts {
            kind: self.kind(),
            renewal_answer: false,
        }
    }

    fn sender(&self) -> Option<u32> {
        match self {
            ZooMessage::ToServer { pid, .. } | ZooMessage::Syn { pid, .. } => Some(*pid),
            ZooMessage::Downstream(ToDownstream::Write { pid, .. })
            | ZooMessage::Downstream(ToDownstream::Open { pid, .. }) => Some(*pid),
            ZooMessage::ToClient { .. } | ZooMessage::SynAck { .. } | ZooMessage::Worker(_) => None,
        }
    }

    /// A keepalive probe the design's model says the client's kernel
    /// answers, and a SYN, which the server machine's kernel answers while
    /// the server process is stopped (the listen backlog).
    fn answered_while_paused(&self) -> bool {
        match self {
            ZooMessage::ToClient { response, .. } => P::answered_by_kernel(response),
            ZooMessage::Syn { .. } => true,
            _ => false,
        }
    }

    /// The worker's session to the downstream, and a design's traffic on
    /// the TCP connections its model numbers
    /// ([`Protocol::request_connection`]): each connection is a stream of
    /// its own, as `fenced-lab`'s proxy carries it for real — in order, a
    /// loss a retransmission delay, held (not lost) while its link is down,
    /// and opened by a handshake round trip ([`ZooMessage::Syn`], as the
    /// proxy's `handshake`) — so a one-way cut towards the client keeps a
    /// new connection from ever carrying its first packet, as a lost
    /// SYN-ACK does. A design whose model numbers no connections keeps its
    /// messages standing alone (its client copes with loss and reordering).
    fn stream(&self, to: Address) -> Option<StreamKey> {
        match self {
            ZooMessage::Downstream(msg) => worker_message_stream(Some(msg), None, to),
            ZooMessage::Worker(msg) => worker_message_stream(None, Some(msg), to),
            ZooMessage::ToServer {
                from, pid, request, ..
            }
            | ZooMessage::Syn {
                from, pid, request, ..
            } => {
                let connection = P::request_connection(request)?;
                Some(design_stream(*pid, *from, connection, true))
            }
            ZooMessage::ToClient {
                client, response, ..
            } => answer_stream(*client, P::response_connection(response)?, to),
            ZooMessage::SynAck {
                client, request, ..
            } => answer_stream(*client, P::request_connection(request)?, to),
        }
    }
}

/// The stream back to `client` (at `to`) of its connection `connection`.
fn answer_stream(client: ClientId, connection: u64, to: Address) -> Option<StreamKey> {
    match to {
        Address::Process { pid, .. } => Some(design_stream(pid, client, connection, false)),
        Address::Server(_) => None,
    }
}

impl<P: ZooProtocol> ZooMessage<P> {
    /// Its kind, for drop observations.
    fn kind(&self) -> MessageKind {
        match self {
            ZooMessage::ToServer { .. } | ZooMessage::Syn { .. } => MessageKind::ProtocolRequest,
            ZooMessage::ToClient { .. } | ZooMessage::SynAck { .. } => {
                MessageKind::ProtocolResponse
            }
            ZooMessage::Downstream(ToDownstream::Write { .. }) => MessageKind::Write,
            ZooMessage::Downstream(ToDownstream::Open { .. }) => MessageKind::SessionOpen,
            ZooMessage::Worker(ToWorker::Opened { .. }) => MessageKind::SessionOpened,
            ZooMessage::Worker(ToWorker::WriteAnswered { .. }) => MessageKind::CallAnswer,
        }
    }
}

/// The session lane of a design's connections (the lease store's lanes,
/// which no zoo run uses; the worker's are its own).
const DESIGN_SESSION: u8 = 0;

/// The stream of `client`'s connection `connection` (in process slot
/// `pid`), one way. A slot's later lives are later clients, so the key's
/// connection number (the client's id above its own 16-bit socket number)
/// grows along a slot, as [`StreamKey`]'s ordering of a session's latest
/// connection wants — until a run's 65 536th client or a client's 65 536th
/// socket, where it wraps: a wrapped key is a connection the lane takes for
/// retired, whose packets keep their own times (held on a down link still,
/// never lost), so only their order is given up.
fn design_stream(pid: u32, client: ClientId, connection: u64, up: bool) -> StreamKey {
    let conn = (client.0 << 16) | (connection & 0xFFFF) as u32;
    stream_key(pid, DESIGN_SESSION, conn, up)
}

/// A timer of a zoo run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ZooTimer {
    /// A client's `next_timeout`.
    Client { generation: u32 },
    /// A server's `next_timeout`.
    Server { index: ServerIndex, generation: u32 },
    /// The worker: its next unit, or a unit's write.
    Work(WorkTimer),
    /// A `stop` fault.
    Stop,
    /// Server `index`'s process died and its kernel closed this process's
    /// connections to it: the replies its model gave (`went_down`) are
    /// this process's to hear.
    ServerGone { index: ServerIndex },
    /// Server `index` was down when this process's client opened its
    /// connection `connection`: the machine's kernel refused the SYN
    /// (`Protocol::refused` says what the client hears).
    Refused { index: ServerIndex, connection: u64 },
}

/// A client's identity: the life it belongs to.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    pid: u32,
    incarnation: u32,
    owner: OwnerId,
}

/// The hosts of one run of protocol `P`.
#[derive(Debug)]
pub(crate) struct ZooHosts<P: ZooProtocol> {
    settings: P::Settings,
    /// A node's own settings, where it has them (by node index).
    node_settings: Vec<Option<P::Settings>>,
    servers: Vec<ZooServer<P>>,
    downstream: DownstreamHost,
    /// The node processes and their workers.
    procs: ProcessTable<ZooProcess<P>>,
    /// Every client of the run, by `ClientId` (one per process life).
    clients: Vec<Client>,
    seeds: SeedDeriver,
    /// Terms begun so far: the token of a protocol without one.
    next_term: u64,
    /// The protocol's truth: the holder of a majority of servers.
    truth: Option<(ClientId, Option<u64>)>,
    /// The highest token a server reported a holder with.
    max_token: u64,
}

impl<P: ZooProtocol> ZooHosts<P> {
    /// Recomputes the truth after a server's holder changed.
    fn update_truth<O: Observer>(&mut self, out: Out<'_, '_, P, O>) {
        let needed = self.servers.len() / 2 + 1;
        let mut truth = None;
        for server in &self.servers {
            let Some((client, token)) = server.holder else {
                continue;
            };
            if let Some(t) = token {
                self.max_token = self.max_token.max(t);
            }
            let held = self
                .servers
                .iter()
                .filter(|s| s.holder.is_some_and(|(c, _)| c == client))
                .count();
            if held >= needed {
                truth = Some((client, token));
                break;
            }
        }
        if truth != self.truth {
            self.truth = truth;
            let names = out.names;
            let holder = truth
                .and_then(|(c, _)| self.clients.get(c.0 as usize))
                .map(|c| names.sender_ref(c.pid, c.incarnation, &c.owner));
            server::observe_holder(out, None, holder, truth.and_then(|(_, t)| t));
        }
    }
}

impl<P: ZooProtocol> Hosts for ZooHosts<P> {
    type Message = ZooMessage<P>;
    type Timer = ZooTimer;

    /// A worker's first open segment to the downstream, and a design
    /// client's SYN (ZooKeeper's, the connection lock's), are refused while
    /// their server is down — the SYN only if the design says what its
    /// client hears of a refusal (`Protocol::refused`): one that does not
    /// has its SYN held, as before refusals, rather than refused unheard.
    fn refusal(msg: &ZooMessage<P>) -> Option<ZooTimer> {
        match msg {
            ZooMessage::Downstream(write) => {
                crate::hosts::workers::worker_refusal(write).map(ZooTimer::Work)
            }
            ZooMessage::Syn { index, request, .. } => {
                let connection = P::request_connection(request)?;
                P::refused(connection)?;
                Some(ZooTimer::Refused {
                    index: *index,
                    connection,
                })
            }
            _ => None,
        }
    }

    fn is_stale(&self, to: Address, timer: &ZooTimer) -> bool {
        match (to, *timer) {
            (Address::Process { pid, .. }, ZooTimer::Client { generation }) => {
                let process = self.procs.get(pid);
                process.is_some_and(|p| p.timer_generation != generation)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::Unit { generation })) => {
                self.procs.workers().is_stale(pid, generation)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::Session { generation })) => {
                self.procs.workers().is_session_stale(pid, generation)
            }
            (_, ZooTimer::Server { index, generation }) => {
                self.servers[usize::from(index)].timer_generation != generation
            }
            _ => false,
        }
    }

    fn deliver<O: Observer>(&mut self, to: Address, msg: ZooMessage<P>, out: Out<'_, '_, P, O>) {
        match (to, msg) {
            (_, ZooMessage::Downstream(write)) => self.downstream.receive(write, out),
            (Address::Process { pid, .. }, ZooMessage::Worker(msg)) => {
                self.procs.workers_mut().receive(pid, msg, out)
            }
            (Address::Server(endpoint), ZooMessage::ToServer { from, request, .. }) => {
                let index = usize::from(server_index(endpoint));
                if self.servers[index].request(from, request, &self.clients, out) {
                    self.update_truth(out);
                }
            }
            (
                Address::Server(_),
                ZooMessage::Syn {
                    index,
                    from,
                    request,
                    ..
                },
            ) => {
                // The server machine's kernel completes the handshake.
                let Some(client) = self.clients.get(from.0 as usize) else {
                    return debug_assert!(false, "a SYN comes from a client of the run");
                };
                let to = Address::Process {
                    pid: client.pid,
                    incarnation: client.incarnation,
                };
                let ack = ZooMessage::SynAck {
                    from: index,
                    client: from,
                    request,
                };
                out.send(to, ack);
            }
            (Address::Process { pid, .. }, ZooMessage::SynAck { from, request, .. }) => {
                self.procs.life(pid).0.send_opened(from, request, out);
            }
            (Address::Process { pid, .. }, ZooMessage::ToClient { from, response, .. }) => {
                let mut next_term = self.next_term;
                let (process, workers) = self.procs.life(pid);
                process.response(from, response, &mut next_term, workers, out);
                self.next_term = next_term;
            }
            (to, msg) => unreachable!("{msg:?} is never addressed to {to:?}"),
        }
    }

    fn fire<O: Observer>(&mut self, to: Address, timer: ZooTimer, out: Out<'_, '_, P, O>) {
        let mut next_term = self.next_term;
        match (to, timer) {
            (Address::Server(_), ZooTimer::Server { index, .. }) => {
                if self.servers[usize::from(index)].timeout(&self.clients, out) {
                    self.update_truth(out);
                }
            }
            (Address::Process { pid, .. }, ZooTimer::Client { .. }) => {
                let (process, workers) = self.procs.life(pid);
                process.timeout(&mut next_term, workers, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::Unit { .. })) => {
                let (process, workers) = self.procs.life(pid);
                process.work_tick(&mut next_term, workers, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::Done { token, unit })) => {
                self.procs.workers_mut().work_done(pid, token, unit, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::Session { .. })) => {
                self.procs.workers_mut().session_due(pid, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::SessionReset { epoch })) => {
                let event = ConnectionEvent::Reset { epoch };
                self.procs.workers_mut().session_event(pid, event, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Work(WorkTimer::SessionRefused { conn })) => {
                let event = ConnectionEvent::Refused { conn };
                self.procs.workers_mut().session_event(pid, event, out)
            }
            (Address::Process { pid, .. }, ZooTimer::Refused { index, connection }) => {
                if let Some(response) = P::refused(connection) {
                    let (process, workers) = self.procs.life(pid);
                    process.response(index, response, &mut next_term, workers, out);
                }
            }
            (Address::Process { pid, .. }, ZooTimer::Stop) => {
                let (process, workers) = self.procs.life(pid);
                process.stop(&mut next_term, workers, out)
            }
            (Address::Process { pid, .. }, ZooTimer::ServerGone { index }) => {
                let client = self.procs.life(pid).0.id();
                let resets = self.servers[usize::from(index)].take_resets(client);
                for response in resets {
                    let (process, workers) = self.procs.life(pid);
                    process.response(index, response, &mut next_term, workers, out);
                }
            }
            (to, timer) => unreachable!("{timer:?} is never set for {to:?}"),
        }
        self.next_term = next_term;
    }

    fn start_process<O: Observer>(
        &mut self,
        pid: u32,
        node: u32,
        incarnation: u32,
        owner: &OwnerId,
        out: Out<'_, '_, P, O>,
    ) {
        let id = ClientId(self.clients.len() as u32);
        self.clients.push(Client {
            pid,
            incarnation,
            owner: owner.clone(),
        });
        let seed = self
            .seeds
            .str("zoo-client")
            .str(out.names.node_id(node).as_str())
            .num(u64::from(incarnation))
            .seed();
        let settings = self.node_settings[node as usize]
            .as_ref()
            .unwrap_or(&self.settings);
        let client = P::new_client(settings, id, owner.as_str(), seed);
        let process = ZooProcess::new(pid, id, client);
        let mut next_term = self.next_term;
        let (process, workers) = self.procs.start(pid, incarnation, process);
        process.start(&mut next_term, workers, out);
        self.next_term = next_term;
    }

    /// The client is told its process died on a live machine
    /// ([`LockClient::kernel_closed`](fenced_zoo::LockClient::kernel_closed)):
    /// what its kernel's closing of the connections sends goes out, then
    /// the process is gone.
    fn crash_process<O: Observer>(&mut self, pid: u32, out: Out<'_, '_, P, O>) {
        self.procs.life(pid).0.kernel_closed(out);
        self.procs.crash(pid);
    }

    /// A running client is told at once (and re-arms, by a spurious
    /// `handle_timeout`); a paused one at its next input.
    fn wall_stepped<O: Observer>(
        &mut self,
        to: Address,
        by: i64,
        paused: bool,
        out: Out<'_, '_, P, O>,
    ) {
        let Address::Process { pid, .. } = to else {
            return;
        };
        let mut next_term = self.next_term;
        let (process, workers) = self.procs.life(pid);
        process.wall_stepped(by);
        if !paused {
            process.timeout(&mut next_term, workers, out);
        }
        self.next_term = next_term;
    }

    /// The models take a spurious `handle_timeout` as harmless: it makes
    /// them re-read their clock and re-arm.
    fn clock_changed<O: Observer>(&mut self, to: Address, out: Out<'_, '_, P, O>) {
        match to {
            Address::Server(DOWNSTREAM_ENDPOINT) => {}
            Address::Server(endpoint) => {
                let index = usize::from(server_index(endpoint));
                if self.servers[index].timeout(&self.clients, out) {
                    self.update_truth(out);
                }
            }
            Address::Process { pid, .. } => {
                let mut next_term = self.next_term;
                let (process, workers) = self.procs.life(pid);
                process.timeout(&mut next_term, workers, out);
                self.next_term = next_term;
            }
        }
    }

    fn restart_server<O: Observer>(
        &mut self,
        endpoint: u16,
        durable: bool,
        out: Out<'_, '_, P, O>,
    ) {
        if endpoint == DOWNSTREAM_ENDPOINT {
            self.downstream.restart(durable);
            return;
        }
        let index = usize::from(server_index(endpoint));
        if self.servers[index].restart(durable, &self.clients, out) {
            self.update_truth(out);
        }
    }
}

impl<P: ZooProtocol> SimHosts for ZooHosts<P> {
    fn stop_signal() -> ZooTimer {
        ZooTimer::Stop
    }

    fn work_fails_signal() -> Option<ZooTimer> {
        None
    }

    fn max_token(&self) -> u64 {
        self.max_token
    }

    /// The span of the burst of writes the highest token raced in, at the
    /// first server that numbered it so (`bursts`).
    fn max_token_race(&self) -> Option<(u64, u64)> {
        self.servers
            .iter()
            .find_map(|server| server.bursts.race(self.max_token))
    }

    fn live_members(&self, _store_now: fenced::Instant) -> u64 {
        0
    }

    fn workers(&self) -> &WorkerTable {
        self.procs.workers()
    }

    /// The downstream's sessions are the worker's; a design's own server
    /// is reached by its client, whose model says what the server's death
    /// does to it (`LockServer::went_down`: ZooKeeper's kernel closes its
    /// sockets, and each client hears `Closed` at once — a signal, past the
    /// server's own downtime, as the kernel's reset is, not a message of the
    /// dead process; a paused client hears it on resume).
    fn server_went_down(&mut self, endpoint: u16) -> Vec<(u32, ZooTimer)> {
        if endpoint == DOWNSTREAM_ENDPOINT {
            let epoch = self.downstream.went_down();
            return crate::hosts::worker_resets(self.procs.workers(), epoch);
        }
        let index = server_index(endpoint);
        let told = self.servers[usize::from(index)].went_down();
        told.into_iter()
            .filter_map(|client| self.clients.get(client.0 as usize))
            .map(|client| (client.pid, ZooTimer::ServerGone { index }))
            .collect()
    }
}

carries!(ZooTimer::Work(WorkTimer));
carries!(impl<P: ZooProtocol> ZooMessage<P>::Downstream(ToDownstream));
carries!(impl<P: ZooProtocol> ZooMessage<P>::Worker(ToWorker));

impl<P: ZooProtocol> ZooHosts<P> {
    /// The hosts of a run of protocol `P` with `settings` (validated with
    /// the scenario), drawing their randomness from `seeds`.
    pub(crate) fn new(valid: &ValidScenario, settings: &P::Settings, seeds: SeedDeriver) -> Self {
        let scenario = valid.scenario();
        // Fence by the protocol's token only where it has one (validation
        // refuses `fencing = true` otherwise).
        let fencing = if scenario.fencing && P::HAS_TOKEN {
            Fencing::Enforced
        } else {
            Fencing::Disabled
        };
        // Two clients' writes within one round trip at the highest latency
        // may reach a real server in either order (`bursts`).
        let race_window = scenario.network.latency.1.saturating_mul(2);
        ZooHosts {
            settings: settings.clone(),
            node_settings: scenario
                .nodes
                .iter()
                .map(|n| n.protocol.as_ref().and_then(P::settings_in).cloned())
                .collect(),
            servers: (0..P::servers(settings))
                .map(|i| ZooServer::new(i, P::new_server(settings, i), race_window))
                .collect(),
            downstream: DownstreamHost::new(valid.resource().clone(), FencedStore::new(fencing)),
            procs: ProcessTable::new(WorkTimings::of(scenario), ClientSettings::of(scenario)),
            clients: Vec::new(),
            seeds,
            next_term: 0,
            truth: None,
            max_token: 0,
        }
    }
}

impl From<fenced_zoo::ClockKind> for crate::engine::clock::ClockKind {
    fn from(kind: fenced_zoo::ClockKind) -> Self {
        match kind {
            fenced_zoo::ClockKind::Monotonic => crate::engine::clock::ClockKind::Monotonic,
            fenced_zoo::ClockKind::Wall => crate::engine::clock::ClockKind::Wall,
        }
    }
}
