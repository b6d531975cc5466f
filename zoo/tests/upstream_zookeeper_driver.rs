//! The driver shared by `upstream_zookeeper.rs` and
//! `upstream_zookeeper_session.rs` (included there with `#[path]`): one
//! ZooKeeper server and Curator clients on one clock, as upstream's tests run
//! them in one JVM against a `TestingServer`, with the controls those tests
//! use — `server.stop()` / `restart()` / `close()`, `latch.reset()`,
//! `latch.close(mode)`, `injectSessionExpiration()` — and a log of what
//! each client's listeners would see: `isLeader`, `notLeader` and Curator's
//! connection states, in order.
//!
//! A stopped server answers nothing (a connection attempt runs into its
//! `connectTimeout`; real TCP would be refused at once, which changes when a
//! reconnect happens, never what it finds). Stopping closes every socket
//! (the clients see `Disconnected` at once) and starting again is a durable
//! restart: sessions are reloaded and touched, the tree is kept. Each stop
//! and each start begins a new zxid epoch.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fenced_zoo::zookeeper::{
    CloseMode, ConnectionState, ZooKeeper, ZooKeeperClient, ZooKeeperRequest, ZooKeeperResponse,
    ZooKeeperServer, ZooKeeperSettings,
};
use fenced_zoo::{ClientId, ClientOutput, Instant, LockClient, LockServer, Protocol, ServerOutput};

/// What a client's listeners saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// `LeaderLatchListener.isLeader`, with the token.
    IsLeader(u64),
    /// `LeaderLatchListener.notLeader`.
    NotLeader(&'static str),
    /// A `ConnectionStateListener` call.
    State(ConnectionState),
}

enum Message {
    ToServer(ClientId, ZooKeeperRequest),
    ToClient(ClientId, ZooKeeperResponse),
}

/// The server, its clients and the messages between them.
pub struct Zk {
    pub now: Instant,
    pub settings: ZooKeeperSettings,
    pub server: ZooKeeperServer,
    /// The server process runs.
    pub up: bool,
    pub clients: BTreeMap<ClientId, ZooKeeperClient>,
    /// One-way latency of every message.
    pub latency: Duration,
    pub log: Vec<(Instant, ClientId, Note)>,
    pub requests: Vec<(Instant, ClientId, ZooKeeperRequest)>,
    paused_until: BTreeMap<ClientId, Instant>,
    cut: BTreeSet<ClientId>,
    states: BTreeMap<ClientId, Option<ConnectionState>>,
    queue: BTreeMap<(Instant, u64), Message>,
    seq: u64,
}

/// Curator's `Timing`: session 15 s (10 s × 1.5), granted by a 3 s tick.
pub fn timing() -> ZooKeeperSettings {
    ZooKeeperSettings {
        session_timeout: Duration::from_secs(15),
        ..ZooKeeperSettings::default()
    }
}

impl Zk {
    pub fn new(settings: ZooKeeperSettings) -> Zk {
        ZooKeeper::validate(&settings).expect("valid test settings");
        Zk {
            now: Instant::from_nanos(0),
            server: ZooKeeper::new_server(&settings, 0),
            settings,
            up: true,
            clients: BTreeMap::new(),
            latency: Duration::from_millis(1),
            log: Vec::new(),
            requests: Vec::new(),
            paused_until: BTreeMap::new(),
            cut: BTreeSet::new(),
            states: BTreeMap::new(),
            queue: BTreeMap::new(),
            seq: 0,
        }
    }

    /// `CuratorFrameworkFactory.newClient(..).start()` and
    /// `new LeaderLatch(client, path).start()`.
    pub fn start(&mut self, id: u32) -> ClientId {
        let settings = self.settings.clone();
        self.start_with(id, &settings)
    }

    pub fn start_with(&mut self, id: u32, settings: &ZooKeeperSettings) -> ClientId {
        let id = ClientId(id);
        let mut client = ZooKeeper::new_client(settings, id, "", u64::from(id.0));
        client.start(self.now);
        self.clients.insert(id, client);
        self.drain(id);
        id
    }

    pub fn client(&self, id: ClientId) -> &ZooKeeperClient {
        &self.clients[&id]
    }

    /// `latch.close(mode)` with the client's close.
    pub fn close(&mut self, id: ClientId, mode: CloseMode) {
        let now = self.now;
        self.clients.get_mut(&id).unwrap().close(now, mode);
        self.drain(id);
    }

    /// `latch.reset()`.
    pub fn reset(&mut self, id: ClientId) {
        let now = self.now;
        self.clients.get_mut(&id).unwrap().latch_reset(now);
        self.drain(id);
    }

    /// `getTestable().injectSessionExpiration()`.
    pub fn inject_session_expiration(&mut self, id: ClientId) {
        let now = self.now;
        self.clients
            .get_mut(&id)
            .unwrap()
            .inject_session_expiration(now);
        self.drain(id);
    }

    /// The client process dies without closing its session (`zk.disconnect()`
    /// and no `closeSession`): its packets in flight still arrive, nothing
    /// reaches it any more, and the server keeps the session until it
    /// expires.
    pub fn crash(&mut self, id: ClientId) {
        self.clients.remove(&id);
    }

    /// `server.stop()`: the process ends, its sockets close.
    pub fn stop_server(&mut self) {
        self.server.restart(self.now, true);
        self.drain_server();
        self.up = false;
    }

    /// `server.restart()`: a durable restart.
    pub fn restart_server(&mut self) {
        self.server.restart(self.now, true);
        self.up = true;
        self.drain_server();
    }

    /// `server.close(); server = new TestingServer(port)`: a new, empty
    /// server in its place.
    pub fn recreate_server(&mut self) {
        self.server.restart(self.now, false);
        self.up = true;
        self.drain_server();
    }

    /// The client's process handles nothing until `now + duration`.
    pub fn pause(&mut self, id: ClientId, duration: Duration) {
        self.paused_until.insert(id, self.now + duration);
    }

    /// Every packet to or from the client is lost.
    pub fn cut(&mut self, id: ClientId) {
        self.cut.insert(id);
    }

    pub fn heal(&mut self, id: ClientId) {
        self.cut.remove(&id);
    }

    /// Who has leadership now.
    pub fn leaders(&self) -> Vec<ClientId> {
        self.clients
            .iter()
            .filter(|(_, client)| client.leadership(self.now).is_some())
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn has_leadership(&self, id: ClientId) -> bool {
        self.clients
            .get(&id)
            .is_some_and(|client| client.leadership(self.now).is_some())
    }

    /// The notes of one client, in order.
    pub fn notes(&self, id: ClientId) -> Vec<Note> {
        self.log
            .iter()
            .filter(|(_, client, _)| *client == id)
            .map(|(_, _, note)| *note)
            .collect()
    }

    /// The notes of one client as upstream's tests queue them: `"true"`,
    /// `"false"` and connection state names.
    pub fn states(&self, id: ClientId) -> Vec<&'static str> {
        self.notes(id)
            .into_iter()
            .map(|note| match note {
                Note::IsLeader(_) => "true",
                Note::NotLeader(_) => "false",
                Note::State(ConnectionState::Connected) => "CONNECTED",
                Note::State(ConnectionState::Suspended) => "SUSPENDED",
                Note::State(ConnectionState::Reconnected) => "RECONNECTED",
                Note::State(ConnectionState::Lost) => "LOST",
            })
            .collect()
    }

    pub fn count(&self, id: ClientId, what: fn(&Note) -> bool) -> usize {
        self.notes(id).iter().filter(|note| what(note)).count()
    }

    /// The latch path's children, in sequence order, by maker.
    pub fn children(&self) -> Vec<ClientId> {
        self.server.children().map(|(_, client)| client).collect()
    }

    fn push(&mut self, at: Instant, message: Message) {
        self.seq += 1;
        self.queue.insert((at, self.seq), message);
    }

    fn drain(&mut self, id: ClientId) {
        while let Some(output) = self.clients.get_mut(&id).and_then(|c| c.poll_output()) {
            match output {
                ClientOutput::Send { request, .. } => {
                    self.requests.push((self.now, id, request.clone()));
                    if !self.cut.contains(&id) {
                        let at = self.now + self.latency;
                        self.push(at, Message::ToServer(id, request));
                    }
                }
                ClientOutput::BecameLeader { token } => {
                    let token = token.expect("ZooKeeper has a token");
                    self.log.push((self.now, id, Note::IsLeader(token)));
                }
                ClientOutput::LostLeadership { reason } => {
                    self.log.push((self.now, id, Note::NotLeader(reason)));
                }
            }
        }
        let state = self.clients.get(&id).and_then(|c| c.connection_state());
        if self.states.get(&id).copied().flatten() != state {
            self.states.insert(id, state);
            if let Some(state) = state {
                self.log.push((self.now, id, Note::State(state)));
            }
        }
    }

    fn drain_server(&mut self) {
        while let Some(output) = self.server.poll_output() {
            if let ServerOutput::Reply { to, response } = output {
                if !self.cut.contains(&to) {
                    let at = self.now + self.latency;
                    self.push(at, Message::ToClient(to, response));
                }
            }
        }
    }

    fn paused(&self, id: ClientId) -> Option<Instant> {
        self.paused_until
            .get(&id)
            .copied()
            .filter(|until| *until > self.now)
    }

    fn next_event(&self, end: Instant) -> Option<Instant> {
        let server = self.up.then(|| self.server.next_timeout()).flatten();
        let clients = self.clients.iter().filter_map(|(id, client)| {
            let at = client.next_timeout()?;
            Some(self.paused(*id).map_or(at, |until| at.max(until)))
        });
        let queue = self.queue.keys().next().map(|(at, _)| *at);
        queue
            .into_iter()
            .chain(server)
            .chain(clients)
            .min()
            .map(|at| at.max(self.now))
            .filter(|at| *at <= end)
    }

    fn step(&mut self) {
        while let Some((&(at, seq), _)) = self.queue.iter().next() {
            if at > self.now {
                break;
            }
            match self.queue.remove(&(at, seq)).unwrap() {
                Message::ToServer(from, request) => {
                    if self.up {
                        self.server.handle_request(from, request, self.now);
                        self.drain_server();
                    }
                }
                Message::ToClient(to, response) => {
                    if let Some(until) = self.paused(to) {
                        self.push(until, Message::ToClient(to, response));
                        continue;
                    }
                    let now = self.now;
                    if let Some(client) = self.clients.get_mut(&to) {
                        client.handle_response(0, response, now);
                        self.drain(to);
                    }
                }
            }
        }
        if self.up && self.server.next_timeout().is_some_and(|at| at <= self.now) {
            self.server.handle_timeout(self.now);
            self.drain_server();
        }
        let ids: Vec<ClientId> = self.clients.keys().copied().collect();
        for id in ids {
            if self.paused(id).is_some() {
                continue;
            }
            let now = self.now;
            let client = self.clients.get_mut(&id).unwrap();
            if client.next_timeout().is_some_and(|at| at <= now) {
                client.handle_timeout(now);
                self.drain(id);
            }
        }
    }

    pub fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration;
        self.run_until_cond(duration, |_| false);
        self.now = self.now.max(end);
    }

    /// Runs until `cond` holds (checked after every step), at most `limit`;
    /// returns whether it held.
    pub fn run_until_cond(&mut self, limit: Duration, mut cond: impl FnMut(&Zk) -> bool) -> bool {
        let end = self.now + limit;
        for _ in 0..1_000_000 {
            if cond(self) {
                return true;
            }
            let Some(at) = self.next_event(end) else {
                self.now = end;
                return cond(self);
            };
            self.now = at;
            self.step();
        }
        panic!("the driver did not converge");
    }

    /// `waitForALeader`: up to five `sleepABit`s (2.5 s each) for someone to
    /// lead; the leaders found.
    pub fn wait_for_a_leader(&mut self) -> Vec<ClientId> {
        self.run_until_cond(Duration::from_millis(12_500), |zk| !zk.leaders().is_empty());
        self.leaders()
    }
}

/// The driver delivers a client's first packets in order: it connects,
/// creates its node and leads.
#[test]
fn driver_smoke() {
    let mut zk = Zk::new(timing());
    let a = zk.start(1);
    assert_eq!(zk.wait_for_a_leader(), vec![a]);
    assert_eq!(zk.states(a), ["CONNECTED", "true"]);
}
