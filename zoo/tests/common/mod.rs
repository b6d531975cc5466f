//! A tiny deterministic harness for the contract tests: one global time line,
//! per-host clocks (offset + rate), a message queue ordered by
//! `(delivery time, sequence)`, and fault controls named for what they do:
//! `cut`, `heal`, `pause`, `restart_server`, `set_clock`.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fenced_zoo::{
    ClientId, ClientOutput, Instant, Leadership, LockClient, LockServer, Protocol, ServerIndex,
    ServerOutput,
};

/// A host's clock: `local = offset + global × num / den` (nanoseconds).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub offset_ns: u64,
    pub num: u64,
    pub den: u64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            offset_ns: 0,
            num: 1,
            den: 1,
        }
    }
}

impl Clock {
    /// A clock running at `num/den` of real speed.
    pub fn rate(num: u64, den: u64) -> Clock {
        Clock {
            offset_ns: 0,
            num,
            den,
        }
    }

    pub fn local(&self, global_ns: u64) -> Instant {
        let scaled = u128::from(global_ns) * u128::from(self.num) / u128::from(self.den);
        Instant::from_nanos(self.offset_ns + u64::try_from(scaled).expect("fits"))
    }

    /// The first global instant whose local reading is at least `local`.
    pub fn global(&self, local: Instant) -> u64 {
        let since = local.as_nanos().saturating_sub(self.offset_ns);
        let num = u128::from(self.num);
        let global = (u128::from(since) * u128::from(self.den)).div_ceil(num);
        u64::try_from(global).unwrap_or(u64::MAX)
    }
}

pub struct Host<M> {
    pub machine: M,
    pub clock: Clock,
    /// Paused (handles nothing) until this global instant.
    pub paused_until: u64,
}

/// A message in flight.
enum Message<P: Protocol> {
    ToServer {
        from: ClientId,
        to: ServerIndex,
        request: P::Request,
    },
    ToClient {
        from: ServerIndex,
        to: ClientId,
        response: P::Response,
    },
}

/// What happened, for assertions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    BecameLeader {
        client: ClientId,
        token: Option<u64>,
    },
    LostLeadership {
        client: ClientId,
        reason: &'static str,
    },
    Holder {
        server: ServerIndex,
        holder: Option<ClientId>,
        token: Option<u64>,
    },
}

pub struct Sim<P: Protocol> {
    pub settings: P::Settings,
    /// Global time, ns.
    pub now: u64,
    pub servers: Vec<Host<P::Server>>,
    pub clients: BTreeMap<ClientId, Host<P::Client>>,
    queue: BTreeMap<(u64, u64), Message<P>>,
    seq: u64,
    /// One-way latency of every message.
    pub latency: Duration,
    /// One-way latency override per client (both directions).
    pub client_latency: BTreeMap<ClientId, Duration>,
    /// Links that drop everything: (client, server).
    cut_links: BTreeSet<(ClientId, ServerIndex)>,
    /// Every request is delivered twice.
    pub duplicate_requests: bool,
    pub log: Vec<(u64, Event)>,
    /// Requests delivered to servers, for assertions on what was sent.
    pub requests: Vec<(u64, ClientId, ServerIndex, P::Request)>,
    /// Drops a request when it returns true (checked once per send).
    pub drop_request: Option<Box<DropFilter<P::Request>>>,
    /// Drops a response when it returns true (checked once per send).
    pub drop_response: Option<Box<DropFilter<P::Response>>>,
    /// Random loss of single messages, both directions (seeded).
    pub loss: Option<Loss>,
    /// Messages dropped by `drop_request`, `drop_response` or `loss`.
    pub dropped: u64,
}

/// Decides whether to drop one message to or from a client.
pub type DropFilter<M> = dyn FnMut(ClientId, &M) -> bool;

/// Seeded random loss: each message is dropped with probability
/// `permille / 1000` (SplitMix64, no global randomness).
#[derive(Clone, Copy, Debug)]
pub struct Loss {
    pub permille: u64,
    pub state: u64,
}

impl Loss {
    pub fn new(permille: u64, seed: u64) -> Loss {
        Loss {
            permille,
            state: seed,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Whether to drop the next message.
    pub fn drop_next(&mut self) -> bool {
        self.next() % 1000 < self.permille
    }
}

pub fn secs(s: u64) -> u64 {
    s * 1_000_000_000
}

pub fn millis(ms: u64) -> u64 {
    ms * 1_000_000
}

impl<P: Protocol> Sim<P> {
    pub fn new(settings: P::Settings) -> Self {
        P::validate(&settings).expect("test settings are valid");
        let servers = (0..P::servers(&settings))
            .map(|index| Host {
                machine: P::new_server(&settings, index),
                clock: Clock::default(),
                paused_until: 0,
            })
            .collect();
        Sim {
            settings,
            now: 0,
            servers,
            clients: BTreeMap::new(),
            queue: BTreeMap::new(),
            seq: 0,
            latency: Duration::from_millis(1),
            client_latency: BTreeMap::new(),
            cut_links: BTreeSet::new(),
            duplicate_requests: false,
            log: Vec::new(),
            requests: Vec::new(),
            drop_request: None,
            drop_response: None,
            loss: None,
            dropped: 0,
        }
    }

    /// Whether the random loss (if any) drops the next message.
    fn lost(&mut self) -> bool {
        let lost = self.loss.as_mut().is_some_and(Loss::drop_next);
        self.dropped += u64::from(lost);
        lost
    }

    /// Adds a client with a clock and starts it now.
    pub fn add_client(&mut self, id: u32, clock: Clock) -> ClientId {
        let settings = self.settings.clone();
        self.add_client_with(id, clock, &settings)
    }

    /// Adds a client with its own settings (mixed configurations).
    pub fn add_client_with(&mut self, id: u32, clock: Clock, settings: &P::Settings) -> ClientId {
        P::validate(settings).expect("test settings are valid");
        let id = ClientId(id);
        let name = format!("client-{}", id.0);
        let machine = P::new_client(settings, id, &name, u64::from(id.0));
        self.clients.insert(
            id,
            Host {
                machine,
                clock,
                paused_until: 0,
            },
        );
        let now = self.client_now(id);
        self.clients.get_mut(&id).unwrap().machine.start(now);
        self.drain_client(id);
        id
    }

    pub fn client_now(&self, id: ClientId) -> Instant {
        self.clients[&id].clock.local(self.now)
    }

    pub fn server_now(&self, index: ServerIndex) -> Instant {
        self.servers[usize::from(index)].clock.local(self.now)
    }

    pub fn client(&self, id: ClientId) -> &P::Client {
        &self.clients[&id].machine
    }

    pub fn server(&self, index: ServerIndex) -> &P::Server {
        &self.servers[usize::from(index)].machine
    }

    /// Who believes it leads right now (each on its own clock).
    pub fn leaders(&self) -> Vec<(ClientId, Leadership)> {
        self.clients
            .iter()
            .filter_map(|(id, host)| {
                host.machine
                    .leadership(host.clock.local(self.now))
                    .map(|leadership| (*id, leadership))
            })
            .collect()
    }

    pub fn leader_ids(&self) -> Vec<ClientId> {
        self.leaders().into_iter().map(|(id, _)| id).collect()
    }

    pub fn cut(&mut self, client: ClientId) {
        for server in 0..P::servers(&self.settings) {
            self.cut_links.insert((client, server));
        }
    }

    pub fn cut_link(&mut self, client: ClientId, server: ServerIndex) {
        self.cut_links.insert((client, server));
    }

    pub fn heal(&mut self, client: ClientId) {
        self.cut_links.retain(|(c, _)| *c != client);
    }

    pub fn pause(&mut self, client: ClientId, duration: Duration) {
        let until = self.now + duration.as_nanos() as u64;
        self.clients.get_mut(&client).unwrap().paused_until = until;
    }

    pub fn set_client_clock(&mut self, client: ClientId, clock: Clock) {
        self.clients.get_mut(&client).unwrap().clock = clock;
    }

    pub fn set_server_clock(&mut self, index: ServerIndex, clock: Clock) {
        self.servers[usize::from(index)].clock = clock;
    }

    pub fn stop(&mut self, client: ClientId) {
        let now = self.client_now(client);
        self.clients.get_mut(&client).unwrap().machine.stop(now);
        self.drain_client(client);
    }

    pub fn restart_server(&mut self, index: ServerIndex, durable: bool) {
        let now = self.server_now(index);
        self.servers[usize::from(index)]
            .machine
            .restart(now, durable);
        self.drain_server(index);
    }

    /// Removes a client process (it crashed): its messages in flight still arrive
    /// at servers, answers to it are dropped.
    pub fn crash(&mut self, client: ClientId) {
        self.clients.remove(&client);
    }

    /// The client's process is killed on a live machine: its kernel closes
    /// its connections (`LockClient::kernel_closed`), what that sends goes
    /// out, then the client is gone.
    pub fn kill(&mut self, client: ClientId) {
        let host = self.clients.get_mut(&client).expect("a live client");
        let local = host.clock.local(self.now);
        host.machine.kernel_closed(local);
        self.drain_client(client);
        self.clients.remove(&client);
    }

    fn latency_of(&self, client: ClientId) -> u64 {
        self.client_latency
            .get(&client)
            .copied()
            .unwrap_or(self.latency)
            .as_nanos() as u64
    }

    fn push(&mut self, at: u64, message: Message<P>) {
        self.seq += 1;
        self.queue.insert((at, self.seq), message);
    }

    fn drain_client(&mut self, id: ClientId) {
        let latency = self.latency_of(id);
        loop {
            let Some(host) = self.clients.get_mut(&id) else {
                return;
            };
            let Some(output) = host.machine.poll_output() else {
                return;
            };
            match output {
                ClientOutput::Send { to, request } => {
                    if self.cut_links.contains(&(id, to)) {
                        continue;
                    }
                    if let Some(filter) = self.drop_request.as_mut() {
                        if filter(id, &request) {
                            self.dropped += 1;
                            continue;
                        }
                    }
                    if self.lost() {
                        continue;
                    }
                    if self.duplicate_requests {
                        self.push(
                            self.now + latency,
                            Message::ToServer {
                                from: id,
                                to,
                                request: request.clone(),
                            },
                        );
                    }
                    self.push(
                        self.now + latency,
                        Message::ToServer {
                            from: id,
                            to,
                            request,
                        },
                    );
                }
                ClientOutput::BecameLeader { token } => self
                    .log
                    .push((self.now, Event::BecameLeader { client: id, token })),
                ClientOutput::LostLeadership { reason } => self
                    .log
                    .push((self.now, Event::LostLeadership { client: id, reason })),
            }
        }
    }

    fn drain_server(&mut self, index: ServerIndex) {
        while let Some(output) = self.servers[usize::from(index)].machine.poll_output() {
            match output {
                ServerOutput::Reply { to, response } => {
                    if self.cut_links.contains(&(to, index)) {
                        continue;
                    }
                    if let Some(filter) = self.drop_response.as_mut() {
                        if filter(to, &response) {
                            self.dropped += 1;
                            continue;
                        }
                    }
                    if self.lost() {
                        continue;
                    }
                    let at = self.now + self.latency_of(to);
                    self.push(
                        at,
                        Message::ToClient {
                            from: index,
                            to,
                            response,
                        },
                    );
                }
                ServerOutput::Holder { holder, token } => self.log.push((
                    self.now,
                    Event::Holder {
                        server: index,
                        holder,
                        token,
                    },
                )),
            }
        }
    }

    /// The next thing to happen, if at or before `end`.
    fn next_event(&self, end: u64) -> Option<u64> {
        let mut next = self.queue.keys().next().map(|(at, _)| *at);
        let mut consider = |at: u64| {
            next = Some(next.map_or(at, |n: u64| n.min(at)));
        };
        for host in &self.servers {
            if let Some(t) = host.machine.next_timeout() {
                consider(host.clock.global(t).max(host.paused_until).max(self.now));
            }
        }
        for host in self.clients.values() {
            if let Some(t) = host.machine.next_timeout() {
                consider(host.clock.global(t).max(host.paused_until).max(self.now));
            }
        }
        next.filter(|at| *at <= end)
    }

    /// Runs the world for `duration`.
    pub fn run_for(&mut self, duration: Duration) {
        let end = self.now + duration.as_nanos() as u64;
        self.run_until(end);
    }

    pub fn run_until(&mut self, end: u64) {
        for _ in 0..2_000_000 {
            let Some(at) = self.next_event(end) else {
                self.now = self.now.max(end);
                return;
            };
            self.now = at;
            self.step();
        }
        panic!("the harness did not converge: a machine keeps asking for a timeout in the past");
    }

    fn step(&mut self) {
        // Messages due now.
        while let Some((&(at, seq), _)) = self.queue.iter().next() {
            if at > self.now {
                break;
            }
            let message = self.queue.remove(&(at, seq)).unwrap();
            match message {
                Message::ToServer { from, to, request } => {
                    let host = &mut self.servers[usize::from(to)];
                    if host.paused_until > self.now {
                        let until = host.paused_until;
                        self.push(until, Message::ToServer { from, to, request });
                        continue;
                    }
                    let now = host.clock.local(self.now);
                    self.requests.push((self.now, from, to, request.clone()));
                    host.machine.handle_request(from, request, now);
                    self.drain_server(to);
                }
                Message::ToClient { from, to, response } => {
                    let Some(host) = self.clients.get_mut(&to) else {
                        continue;
                    };
                    if host.paused_until > self.now {
                        let until = host.paused_until;
                        self.push(until, Message::ToClient { from, to, response });
                        continue;
                    }
                    let now = host.clock.local(self.now);
                    host.machine.handle_response(from, response, now);
                    self.drain_client(to);
                }
            }
        }
        // Timers due now.
        for index in 0..self.servers.len() {
            let host = &mut self.servers[index];
            if host.paused_until > self.now {
                continue;
            }
            let local = host.clock.local(self.now);
            if host.machine.next_timeout().is_some_and(|t| t <= local) {
                host.machine.handle_timeout(local);
                self.drain_server(index as ServerIndex);
            }
        }
        let ids: Vec<ClientId> = self.clients.keys().copied().collect();
        for id in ids {
            let host = self.clients.get_mut(&id).unwrap();
            if host.paused_until > self.now {
                continue;
            }
            let local = host.clock.local(self.now);
            if host.machine.next_timeout().is_some_and(|t| t <= local) {
                host.machine.handle_timeout(local);
                self.drain_client(id);
            }
        }
    }

    /// Runs until `cond` holds (checked after every event), at most `limit`.
    pub fn run_until_cond(&mut self, limit: Duration, mut cond: impl FnMut(&Self) -> bool) -> bool {
        let end = self.now + limit.as_nanos() as u64;
        for _ in 0..2_000_000 {
            if cond(self) {
                return true;
            }
            let Some(at) = self.next_event(end) else {
                self.now = self.now.max(end);
                return cond(self);
            };
            self.now = at;
            self.step();
        }
        panic!("the harness did not converge");
    }

    /// Events of one kind for one client, as (global time, event).
    pub fn events_of(&self, client: ClientId) -> Vec<(u64, Event)> {
        self.log
            .iter()
            .filter(|(_, event)| match event {
                Event::BecameLeader { client: c, .. } | Event::LostLeadership { client: c, .. } => {
                    *c == client
                }
                Event::Holder { .. } => false,
            })
            .cloned()
            .collect()
    }

    /// When `client` first became leader (global ns).
    pub fn became_leader_at(&self, client: ClientId) -> Option<u64> {
        self.log.iter().find_map(|(at, event)| match event {
            Event::BecameLeader { client: c, .. } if *c == client => Some(*at),
            _ => None,
        })
    }

    pub fn lost_leadership(&self, client: ClientId) -> Option<(u64, &'static str)> {
        self.log.iter().find_map(|(at, event)| match event {
            Event::LostLeadership { client: c, reason } if *c == client => Some((*at, *reason)),
            _ => None,
        })
    }

    /// The last holder server `index` reported.
    pub fn holder(&self, index: ServerIndex) -> Option<(Option<ClientId>, Option<u64>)> {
        self.log.iter().rev().find_map(|(_, event)| match event {
            Event::Holder {
                server,
                holder,
                token,
            } if *server == index => Some((*holder, *token)),
            _ => None,
        })
    }
}
