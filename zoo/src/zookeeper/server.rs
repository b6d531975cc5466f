//! The ZooKeeper server: sessions on the server's clock, the latch path's
//! ephemeral sequential children, data watches, zxids.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Duration;

use fenced::LatestNow;

use super::{SessionId, Stat, ZooKeeper, ZooKeeperRequest, ZooKeeperResponse};
use crate::{ClientId, Instant, LockServer, ServerOutput};

#[derive(Clone, Copy, Debug)]
struct Session {
    /// The negotiated timeout.
    timeout: Duration,
    /// Server clock, on a tick boundary (`ExpiryQueue.roundToNextInterval`).
    expires_at: Instant,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    czxid: u64,
    owner: SessionId,
    protection: u64,
    /// The process that made it (ground truth only).
    client: ClientId,
}

/// One ZooKeeper ensemble, seen as one linearizable server. See the
/// [module docs](super).
#[derive(Clone, Debug)]
pub struct ZooKeeperServer {
    tick_time: Duration,
    /// The zxid epoch: +1 at every (re)start.
    epoch: u64,
    /// The counter of the last txn in this epoch.
    counter: u64,
    /// The latch path's `cversion`: names the next sequential child.
    cversion: u64,
    last_session: u64,
    sessions: BTreeMap<SessionId, Session>,
    /// Open sockets: client → (its socket number, the session on it).
    connections: BTreeMap<ClientId, (u64, SessionId)>,
    /// Watch events pushed on each open socket so far (the stream position
    /// TCP would keep; see [`ZooKeeperResponse::Pong`]).
    notified: BTreeMap<ClientId, u64>,
    /// Children of the latch path, by sequence number.
    nodes: BTreeMap<u64, Node>,
    /// Data watches: node → sessions watching it.
    watches: BTreeMap<u64, BTreeSet<SessionId>>,
    reported: Option<(ClientId, u64)>,
    latest_now: LatestNow,
    outputs: VecDeque<ServerOutput<ZooKeeper>>,
}

impl ZooKeeperServer {
    /// An empty tree in epoch 1.
    pub fn new(tick_time: Duration) -> Self {
        assert!(!tick_time.is_zero(), "validated settings");
        ZooKeeperServer {
            tick_time,
            epoch: 1,
            counter: 0,
            cversion: 0,
            last_session: 0,
            sessions: BTreeMap::new(),
            connections: BTreeMap::new(),
            notified: BTreeMap::new(),
            nodes: BTreeMap::new(),
            watches: BTreeMap::new(),
            reported: None,
            latest_now: LatestNow::default(),
            outputs: VecDeque::new(),
        }
    }

    /// The last zxid.
    pub fn zxid(&self) -> u64 {
        (self.epoch << 32) | self.counter
    }

    /// The live sessions.
    pub fn sessions(&self) -> impl Iterator<Item = SessionId> + '_ {
        self.sessions.keys().copied()
    }

    /// The latch path's children, by sequence number, with the process that
    /// made each (`getChildren`, plus ground truth).
    pub fn children(&self) -> impl Iterator<Item = (u64, ClientId)> + '_ {
        self.nodes
            .iter()
            .map(|(sequence, node)| (*sequence, node.client))
    }

    /// The latch's leader: the owner of the lowest sequence, and its czxid.
    pub fn leader(&self) -> Option<(ClientId, u64)> {
        self.nodes
            .values()
            .next()
            .map(|node| (node.client, node.czxid))
    }

    fn next_zxid(&mut self) -> u64 {
        self.counter += 1;
        self.zxid()
    }

    /// `ExpiryQueue.roundToNextInterval(now + timeout)`.
    fn expiry(&self, now: Instant, timeout: Duration) -> Instant {
        let tick = u64::try_from(self.tick_time.as_nanos()).unwrap_or(u64::MAX);
        let at = (now + timeout).as_nanos();
        Instant::from_nanos(crate::util::round_to_next_interval(at, tick))
    }

    fn touch(&mut self, session: SessionId, now: Instant) -> bool {
        let Some(timeout) = self.sessions.get(&session).map(|s| s.timeout) else {
            return false;
        };
        let expires_at = self.expiry(now, timeout);
        if let Some(state) = self.sessions.get_mut(&session) {
            state.expires_at = expires_at;
        }
        true
    }

    fn reply(&mut self, to: ClientId, response: ZooKeeperResponse) {
        self.outputs.push_back(ServerOutput::Reply { to, response });
    }

    fn report(&mut self) {
        let leader = self.leader();
        if leader != self.reported {
            self.reported = leader;
            self.outputs.push_back(ServerOutput::Holder {
                holder: leader.map(|(client, _)| client),
                token: leader.map(|(_, czxid)| czxid),
            });
        }
    }

    /// Deletes `node` and fires its watches to the watchers' open sockets.
    fn delete_node(&mut self, node: u64) {
        if self.nodes.remove(&node).is_none() {
            return;
        }
        self.cversion += 1;
        for session in self.watches.remove(&node).unwrap_or_default() {
            let sockets: Vec<(ClientId, u64)> = self
                .connections
                .iter()
                .filter(|(_, (_, on))| *on == session)
                .map(|(client, (connection, _))| (*client, *connection))
                .collect();
            for (client, connection) in sockets {
                let notification = self.notified.entry(client).or_default();
                *notification += 1;
                let notification = *notification;
                self.reply(
                    client,
                    ZooKeeperResponse::NodeDeleted {
                        connection,
                        node,
                        notification,
                    },
                );
            }
        }
    }

    /// `closeSession` (asked for, or expiry): one txn deletes its ephemerals;
    /// its socket is closed.
    fn close_session(&mut self, session: SessionId) {
        if self.sessions.remove(&session).is_none() {
            return;
        }
        self.next_zxid();
        let owned: Vec<u64> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.owner == session)
            .map(|(sequence, _)| *sequence)
            .collect();
        for node in owned {
            self.delete_node(node);
        }
        for watchers in self.watches.values_mut() {
            watchers.remove(&session);
        }
        let closed: Vec<(ClientId, u64)> = self
            .connections
            .iter()
            .filter(|(_, (_, on))| *on == session)
            .map(|(client, (connection, _))| (*client, *connection))
            .collect();
        for (client, connection) in closed {
            self.connections.remove(&client);
            self.notified.remove(&client);
            self.reply(client, ZooKeeperResponse::Closed { connection });
        }
    }

    fn connect(
        &mut self,
        from: ClientId,
        connection: u64,
        session: Option<SessionId>,
        timeout: Duration,
        now: Instant,
    ) {
        let (session, timeout) = match session {
            Some(session) => match self.sessions.get(&session) {
                // `reopenSession`: a known session is touched and keeps its timeout.
                Some(state) => (session, state.timeout),
                None => (session, Duration::ZERO),
            },
            None => {
                let timeout = super::negotiated_timeout(timeout, self.tick_time);
                self.last_session += 1;
                let session = SessionId(self.last_session);
                self.next_zxid();
                let expires_at = self.expiry(now, timeout);
                self.sessions.insert(
                    session,
                    Session {
                        timeout,
                        expires_at,
                    },
                );
                (session, timeout)
            }
        };
        self.notified.remove(&from);
        if timeout.is_zero() {
            self.connections.remove(&from);
        } else {
            self.touch(session, now);
            self.connections.insert(from, (connection, session));
        }
        self.reply(
            from,
            ZooKeeperResponse::Connected {
                connection,
                session,
                timeout,
            },
        );
    }

    fn handle(&mut self, from: ClientId, request: ZooKeeperRequest, now: Instant) {
        if let ZooKeeperRequest::Connect {
            connection,
            session,
            timeout,
        } = request
        {
            return self.connect(from, connection, session, timeout, now);
        }
        let connection = request.connection();
        let session = match self.connections.get(&from) {
            Some((open, session)) if *open == connection => *session,
            // A packet on a socket this server does not have: RST.
            _ => return self.reply(from, ZooKeeperResponse::Closed { connection }),
        };
        self.touch(session, now);
        match request {
            ZooKeeperRequest::Connect { .. } => unreachable!("handled above"),
            ZooKeeperRequest::Ping { .. } => {
                let notifications = self.notified.get(&from).copied().unwrap_or(0);
                self.reply(
                    from,
                    ZooKeeperResponse::Pong {
                        connection,
                        notifications,
                    },
                );
            }
            ZooKeeperRequest::Create {
                xid, protection, ..
            } => {
                let existing = self
                    .nodes
                    .iter()
                    .find(|(_, node)| node.protection == protection && node.client == from)
                    .map(|(sequence, _)| *sequence);
                let node = existing.unwrap_or_else(|| {
                    let sequence = self.cversion;
                    self.cversion += 1;
                    let czxid = self.next_zxid();
                    self.nodes.insert(
                        sequence,
                        Node {
                            czxid,
                            owner: session,
                            protection,
                            client: from,
                        },
                    );
                    sequence
                });
                self.reply(
                    from,
                    ZooKeeperResponse::Created {
                        connection,
                        xid,
                        node,
                    },
                );
            }
            ZooKeeperRequest::GetChildren { xid, .. } => {
                let nodes = self.nodes.keys().copied().collect();
                self.reply(
                    from,
                    ZooKeeperResponse::Children {
                        connection,
                        xid,
                        nodes,
                    },
                );
            }
            ZooKeeperRequest::GetData {
                xid, node, watch, ..
            } => {
                let stat = self.nodes.get(&node).map(|node| Stat {
                    czxid: node.czxid,
                    ephemeral_owner: node.owner,
                });
                if watch && stat.is_some() {
                    self.watches.entry(node).or_default().insert(session);
                }
                self.reply(
                    from,
                    ZooKeeperResponse::Data {
                        connection,
                        xid,
                        stat,
                    },
                );
            }
            ZooKeeperRequest::Delete { node, .. } => {
                // A delete takes the next zxid before it is checked, so one
                // of a node already gone (`NONODE`) is an error txn that
                // still uses one: `PrepRequestProcessor.pRequestHelper`,
                // `pRequest2Txn(request.type, zks.getNextZxid(), ...)`, and
                // its `catch (KeeperException e)` keeping the header as an
                // `ErrorTxn`.
                self.next_zxid();
                self.delete_node(node);
                self.reply(from, ZooKeeperResponse::DeleteDone { connection, node });
            }
            ZooKeeperRequest::CloseSession { .. } => self.close_session(session),
        }
    }
}

impl LockServer<ZooKeeper> for ZooKeeperServer {
    fn handle_request(&mut self, from: ClientId, request: ZooKeeperRequest, now: Instant) {
        let now = self.latest_now.observe(now);
        self.handle_timeout(now);
        self.handle(from, request, now);
        self.report();
        debug_assert!(self.nodes.values().all(|node| node.czxid <= self.zxid()));
        debug_assert!(self
            .nodes
            .values()
            .all(|node| self.sessions.contains_key(&node.owner)));
    }

    /// Expires sessions whose timeout ran out on the server's clock.
    fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        let expired: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, session)| session.expires_at <= now)
            .map(|(id, _)| *id)
            .collect();
        for session in expired {
            self.close_session(session);
        }
        self.report();
    }

    fn next_timeout(&self) -> Option<Instant> {
        self.sessions.values().map(|s| s.expires_at).min()
    }

    fn poll_output(&mut self) -> Option<ServerOutput<ZooKeeper>> {
        self.outputs.pop_front()
    }

    /// The zxid: every write of every client (a session created or closed,
    /// a node created, a failed delete's error txn) takes the next one, and
    /// the latch's token is the lowest node's czxid. A restart begins a new
    /// epoch (the upper 32 bits), which numbers no transaction.
    fn transactions(&self) -> Option<u64> {
        Some(self.zxid())
    }

    /// The JVM dies: the kernel closes every socket, and each client hears
    /// `Closed` at once (its `ClientCnxn` reads end-of-stream: Disconnected,
    /// Curator's `SUSPENDED`) — not when the server is back.
    fn went_down(&mut self) {
        for (client, (connection, _)) in std::mem::take(&mut self.connections) {
            self.reply(client, ZooKeeperResponse::Closed { connection });
        }
    }

    /// Every socket still open is closed (clients see `Disconnected` at
    /// once; none is, after [`went_down`](LockServer::went_down)) and a new
    /// zxid epoch begins. Durable (ZooKeeper's normal case: txn log and
    /// snapshots): sessions are reloaded and touched to `now + timeout`, the
    /// tree and watches stay. Not durable: the tree and sessions are gone;
    /// the epoch still advances so tokens stay comparable (a wiped ensemble
    /// would start over at epoch 1).
    fn restart(&mut self, now: Instant, durable: bool) {
        let now = self.latest_now.observe(now);
        self.notified.clear();
        for (client, (connection, _)) in std::mem::take(&mut self.connections) {
            self.reply(client, ZooKeeperResponse::Closed { connection });
        }
        self.epoch += 1;
        self.counter = 0;
        if durable {
            let sessions: Vec<SessionId> = self.sessions.keys().copied().collect();
            for session in sessions {
                self.touch(session, now);
            }
        } else {
            self.sessions.clear();
            self.nodes.clear();
            self.watches.clear();
        }
        self.report();
    }
}
