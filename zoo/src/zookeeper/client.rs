//! The ZooKeeper client: `ClientCnxn`'s connection and session, Curator's
//! connection states, and the `LeaderLatch` recipe on top.

use std::collections::BTreeSet;
use std::time::Duration;

use rand_core::Rng;

use super::{
    CloseMode, ConnectionState, ErrorPolicy, SessionId, ZooKeeper, ZooKeeperRequest,
    ZooKeeperResponse, ZooKeeperSettings,
};
use crate::outbox::Outbox;
use crate::util::earliest_of;
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// `SendThread`'s socket.
#[derive(Clone, Copy, Debug)]
enum Link {
    /// No socket; the next attempt at `at`.
    Down { at: Instant },
    /// `ConnectRequest` sent; `connectTimeout` runs out at `deadline`.
    Connecting { connection: u64, deadline: Instant },
    /// Connected; `last_send` drives the ping.
    Up { connection: u64, last_send: Instant },
}

/// The latch's operation in flight (or waiting for a connection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    None,
    Create {
        xid: u64,
        protection: u64,
    },
    GetChildren {
        xid: u64,
    },
    /// `getData(ourPath)`: the ephemeral-owner check before leading.
    GetOwnData {
        xid: u64,
        node: u64,
    },
    /// `getData(predecessor)` with a watch.
    GetPredecessor {
        xid: u64,
        node: u64,
    },
    /// Waiting for the predecessor's `NodeDeleted`.
    Watching {
        node: u64,
    },
}

/// A ZooKeeper client running a `LeaderLatch`. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct ZooKeeperClient {
    settings: ZooKeeperSettings,
    id: ClientId,
    rng: Box<fenced::SeededRng>,
    /// `LeaderLatch.State.STARTED`.
    started: bool,
    link: Link,
    last_connection: u64,
    /// The handle's session and its (negotiated, else requested) timeout.
    session: Option<SessionId>,
    timeout: Duration,
    /// `lastHeard`: the last byte from the server.
    last_heard: Instant,
    /// Curator has posted `CONNECTED` once.
    connected_once: bool,
    /// The handle has connected a socket (`ClientCnxn`'s `!isFirstConnect`,
    /// which `primeConnection` clears; a session's `Connected` here): every
    /// later connect of the handle first sleeps a random while
    /// ([`ZooKeeperSettings::reconnect_sleep`]). A new handle starts over.
    primed: bool,
    /// Curator's `SUSPENDED` began (`startOfSuspendedEpoch`), on the
    /// monotonic clock the client times by.
    suspended_since: Option<Instant>,
    /// The machine's wall-clock steps so far ([`LockClient::wall_clock_stepped`]):
    /// the wall clock reads the monotonic `now` plus these.
    wall_steps: i64,
    /// `wall_steps` when `SUSPENDED` began.
    suspended_wall_steps: i64,
    /// `ourPath`.
    our_node: Option<u64>,
    op: Op,
    /// When `op`'s request went out on the current socket (`None`: not sent
    /// on it yet, or `op` awaits no answer).
    op_sent: Option<Instant>,
    /// When the pending delete went out on the current socket.
    delete_sent: Option<Instant>,
    /// The watch events heard on the current socket, by their place in its
    /// stream.
    notifications: BTreeSet<u64>,
    /// `hasLeadership`, with the czxid read by the owner check.
    leadership: Option<u64>,
    /// A guaranteed delete not yet acknowledged.
    pending_delete: Option<u64>,
    /// A create that [`latch_reset`](ZooKeeperClient::latch_reset) replaced
    /// while it was in flight: its node, when it is answered, is deleted (as
    /// upstream's next `setNode` deletes the path the earlier callback set).
    superseded_create: Option<u64>,
    /// What Curator last posted (`None` before the first connection).
    state: Option<ConnectionState>,
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<ZooKeeper>>,
}

impl ZooKeeperClient {
    /// An idle client.
    pub fn new(settings: ZooKeeperSettings, id: ClientId, seed: u64) -> Self {
        let timeout = settings.session_timeout;
        ZooKeeperClient {
            settings,
            id,
            rng: Box::new(fenced::SeededRng::seed_from_u64(seed)),
            started: false,
            link: Link::Down {
                at: Instant::from_nanos(0),
            },
            last_connection: 0,
            session: None,
            timeout,
            last_heard: Instant::from_nanos(0),
            connected_once: false,
            primed: false,
            suspended_since: None,
            wall_steps: 0,
            suspended_wall_steps: 0,
            our_node: None,
            op: Op::None,
            op_sent: None,
            delete_sent: None,
            notifications: BTreeSet::new(),
            leadership: None,
            pending_delete: None,
            superseded_create: None,
            state: None,
            outbox: Outbox::new(),
        }
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The session the client believes it has.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    /// Whether Curator's connection state is `SUSPENDED`.
    pub fn is_suspended(&self) -> bool {
        self.suspended_since.is_some()
    }

    /// The connection state Curator last posted (`None` before any).
    pub fn connection_state(&self) -> Option<ConnectionState> {
        self.state
    }

    /// `ourPath`: the sequence number of the latch's node, once created.
    pub fn our_node(&self) -> Option<u64> {
        self.our_node
    }

    /// `LeaderLatch.reset()` (package-private, `@VisibleForTesting`, and
    /// called by upstream's tests from a listener): leadership off, the old
    /// node deleted, a new one created. No-op unless started. A create still
    /// in flight is superseded: the node it makes is deleted when answered.
    pub fn latch_reset(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if !self.started {
            return;
        }
        if let Op::Create { xid, .. } = self.op {
            self.superseded_create = Some(xid);
        }
        self.reset(now);
    }

    /// `LeaderLatch.close(closeMode)` and `CuratorFramework.close()`: as
    /// [`stop`](LockClient::stop), which is `NOTIFY_LEADER`; `SILENT` ends
    /// leadership without telling the application (no `LostLeadership`).
    pub fn close(&mut self, now: Instant, mode: CloseMode) {
        if mode == CloseMode::Silent {
            self.leadership = None;
        }
        self.stop(now);
    }

    /// `ZooKeeper.getTestable().injectSessionExpiration()`: the client
    /// handle alone declares its session `Expired` and drops its socket; the
    /// server still has the session until it expires there. Curator posts
    /// `LOST` and makes a new handle.
    pub fn inject_session_expiration(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if self.started && self.session.is_some() {
            self.expired(now);
        }
    }

    /// `readTimeout` = 2/3 of the session timeout.
    fn read_timeout(&self) -> Duration {
        self.timeout * 2 / 3
    }

    /// When `timeToNextPing` reaches zero: `readTimeout / 2 - idleSend - (idleSend
    /// > 1 s ? 1 s : 0) <= 0`, solved for `idleSend`.
    fn ping_after(&self) -> Duration {
        let half = self.read_timeout() / 2;
        let second = Duration::from_secs(1);
        if half <= second {
            half
        } else {
            (half - second).max(second + Duration::from_millis(1))
        }
    }

    /// ZOOKEEPER-4508: nothing heard for 4/3 of the timeout.
    fn client_expiry_at(&self) -> Option<Instant> {
        (self.settings.client_session_expiry && self.session.is_some())
            .then(|| self.last_heard + self.timeout * 4 / 3)
    }

    /// Curator's simulated expiration while `SUSPENDED`, on the monotonic
    /// clock. `ConnectionStateManager.processEvents` polls its event queue
    /// for `useSessionTimeoutMs - elapsedMs` — a monotonic wait — with
    /// `elapsedMs = System.currentTimeMillis() - startOfSuspendedEpoch`, and
    /// `checkSessionExpiration` injects the expiration when the *wall*
    /// elapsed time reaches `useSessionTimeoutMs` (`negotiated timeout ×
    /// percent / 100`). So a forward step of the wall clock meanwhile
    /// changes nothing (the poll wakes when it would have, and the elapsed
    /// time is then past the timeout), and a backward step of `s` makes the
    /// wake-up find `s` to go: it polls again and expires `s` later.
    fn simulated_expiry_at(&self) -> Option<Instant> {
        let percent = self.settings.simulated_session_expiration_percent;
        self.suspended_since.map(|since| {
            let first = since + self.timeout * percent / 100;
            let back = self.suspended_wall_steps.saturating_sub(self.wall_steps);
            if back > 0 {
                first + Duration::from_nanos(back.unsigned_abs())
            } else {
                first
            }
        })
    }

    /// The send time of the oldest request on the socket still waiting for
    /// its answer (the head of `pendingQueue`).
    fn oldest_unanswered(&self) -> Option<Instant> {
        let op = match self.op {
            Op::Create { .. }
            | Op::GetChildren { .. }
            | Op::GetOwnData { .. }
            | Op::GetPredecessor { .. } => self.op_sent,
            Op::None | Op::Watching { .. } => None,
        };
        earliest_of([op, self.delete_sent])
    }

    /// When the read timeout drops the socket (`SUSPENDED`): `readTimeout`
    /// after the last byte heard, or — TCP delivers in order, so nothing
    /// sent after a missing answer would have been heard either — after the
    /// send of the oldest request still unanswered.
    fn read_deadline(&self) -> Option<Instant> {
        match self.link {
            Link::Up { .. } => {
                let heard = earliest_of([Some(self.last_heard), self.oldest_unanswered()]);
                heard.map(|at| at + self.read_timeout())
            }
            _ => None,
        }
    }

    fn send(&mut self, request: ZooKeeperRequest) {
        self.outbox.push(ClientOutput::Send { to: 0, request });
    }

    /// Sends the latch's operation if a socket is up; otherwise it waits for
    /// `RECONNECTED`.
    fn send_op(&mut self, now: Instant, op: Op) {
        self.op = op;
        self.op_sent = None;
        let Link::Up { connection, .. } = self.link else {
            return;
        };
        let request = match op {
            Op::None | Op::Watching { .. } => return,
            Op::Create { xid, protection } => ZooKeeperRequest::Create {
                connection,
                xid,
                protection,
            },
            Op::GetChildren { xid } => ZooKeeperRequest::GetChildren { connection, xid },
            Op::GetOwnData { xid, node } => ZooKeeperRequest::GetData {
                connection,
                xid,
                node,
                watch: false,
            },
            Op::GetPredecessor { xid, node } => ZooKeeperRequest::GetData {
                connection,
                xid,
                node,
                watch: true,
            },
        };
        self.link = Link::Up {
            connection,
            last_send: now,
        };
        self.op_sent = Some(now);
        self.send(request);
    }

    fn set_leadership(&mut self, leadership: Option<u64>, reason: &'static str) {
        match (self.leadership, leadership) {
            (None, Some(czxid)) => self
                .outbox
                .push(ClientOutput::BecameLeader { token: Some(czxid) }),
            (Some(_), None) => self.outbox.push(ClientOutput::LostLeadership { reason }),
            _ => {}
        }
        self.leadership = leadership;
    }

    /// `setNode(null)`: a guaranteed delete of the old node.
    fn drop_node(&mut self, now: Instant) {
        if let Some(node) = self.our_node.take() {
            self.pending_delete = Some(node);
            self.send_delete(now);
        }
    }

    fn send_delete(&mut self, now: Instant) {
        if let (Some(node), Link::Up { connection, .. }) = (self.pending_delete, self.link) {
            self.link = Link::Up {
                connection,
                last_send: now,
            };
            self.delete_sent = Some(now);
            self.send(ZooKeeperRequest::Delete { connection, node });
        }
    }

    /// `LeaderLatch.reset()`.
    fn reset(&mut self, now: Instant) {
        self.set_leadership(None, "node gone");
        self.drop_node(now);
        let xid = self.outbox.next_request_id();
        let protection = self.rng.next_u64();
        self.send_op(now, Op::Create { xid, protection });
    }

    fn get_children(&mut self, now: Instant) {
        let xid = self.outbox.next_request_id();
        self.send_op(now, Op::GetChildren { xid });
    }

    /// `checkLeadership(children)`.
    fn check_leadership(&mut self, mut children: Vec<u64>, now: Instant) {
        children.sort_unstable();
        let ours = self
            .our_node
            .and_then(|node| children.iter().position(|child| *child == node));
        match ours {
            None => self.reset(now),
            Some(0) => {
                let node = children[0];
                let xid = self.outbox.next_request_id();
                self.send_op(now, Op::GetOwnData { xid, node });
            }
            Some(index) => {
                self.set_leadership(None, "not the lowest node");
                let xid = self.outbox.next_request_id();
                let node = children[index - 1];
                self.send_op(now, Op::GetPredecessor { xid, node });
            }
        }
    }

    /// The socket is gone (`Disconnected`): Curator posts `SUSPENDED`.
    /// `ClientCnxn.SendThread.cleanup` fails every request on it with
    /// `CONNECTIONLOSS` (`conLossPacket`); the latch's operation and the
    /// guaranteed delete are re-driven on `RECONNECTED`. Not after `LOST`:
    /// `ConnectionStateManager.setToSuspended` returns false when the state
    /// is `LOST` or `SUSPENDED` ("Change to SUSPENDED only if not already
    /// suspended and not lost"), so a new handle's failed attempts post
    /// nothing and start no simulated-expiration countdown.
    fn disconnected(&mut self, now: Instant) {
        // `hostProvider.next(1000)`'s spin, then `startConnect`'s random
        // sleep once the handle has connected before.
        let sleep = if self.primed {
            let bound =
                u64::try_from(self.settings.reconnect_sleep.as_millis()).unwrap_or(u64::MAX);
            Duration::from_millis(crate::util::below(&mut self.rng, bound))
        } else {
            Duration::ZERO
        };
        self.link = Link::Down {
            at: now + self.settings.reconnect_spin + sleep,
        };
        self.forget_socket();
        if self.suspended_since.is_none() && self.state != Some(ConnectionState::Lost) {
            self.suspended_since = Some(now);
            self.suspended_wall_steps = self.wall_steps;
            self.state = Some(ConnectionState::Suspended);
            if self.started && self.settings.error_policy == ErrorPolicy::Standard {
                self.set_leadership(None, "connection suspended");
            }
        }
    }

    /// `Expired` (from the server, ZOOKEEPER-4508, or Curator's injection):
    /// Curator posts `LOST` and makes a new handle, which connects at once.
    fn expired(&mut self, now: Instant) {
        self.forget_socket();
        self.primed = false;
        self.session = None;
        self.timeout = self.settings.session_timeout;
        self.suspended_since = None;
        self.link = Link::Down { at: now };
        self.state = Some(ConnectionState::Lost);
        if self.started {
            self.set_leadership(None, "session lost");
        }
    }

    /// What was in flight on the socket is gone with it.
    fn forget_socket(&mut self) {
        self.op_sent = None;
        self.delete_sent = None;
        self.notifications.clear();
    }

    fn connect(&mut self, now: Instant) {
        self.forget_socket();
        self.last_connection += 1;
        let connection = self.last_connection;
        self.link = Link::Connecting {
            connection,
            deadline: now + self.timeout,
        };
        self.send(ZooKeeperRequest::Connect {
            connection,
            session: self.session,
            timeout: self.settings.session_timeout,
        });
    }

    /// `onConnected`: `CONNECTED` the first time, `RECONNECTED` after.
    fn on_connected(
        &mut self,
        connection: u64,
        session: SessionId,
        timeout: Duration,
        now: Instant,
    ) {
        if timeout.is_zero() {
            return self.expired(now);
        }
        self.session = Some(session);
        self.timeout = timeout;
        self.last_heard = now;
        self.primed = true;
        self.link = Link::Up {
            connection,
            last_send: now,
        };
        self.suspended_since = None;
        self.send_delete(now);
        let first = !self.connected_once;
        self.connected_once = true;
        self.state = Some(if first {
            ConnectionState::Connected
        } else {
            ConnectionState::Reconnected
        });
        if !self.started {
            return;
        }
        match self.op {
            // `AfterConnectionEstablished` → `internalStart` → `reset`.
            _ if first => self.reset(now),
            // A create lost with the socket is retried (protected mode).
            Op::Create { .. } => self.send_op(now, self.op),
            _ => self.get_children(now),
        }
    }

    fn on_answer(&mut self, response: ZooKeeperResponse, now: Instant) {
        if let ZooKeeperResponse::Created { xid, node, .. } = response {
            if self.superseded_create == Some(xid) {
                self.superseded_create = None;
                if self.pending_delete.is_none() {
                    self.pending_delete = Some(node);
                    self.send_delete(now);
                }
                return;
            }
        }
        match (self.op, response) {
            (
                Op::Create { xid, .. },
                ZooKeeperResponse::Created {
                    xid: answer, node, ..
                },
            ) if xid == answer => {
                self.our_node = Some(node);
                self.get_children(now);
            }
            (
                Op::GetChildren { xid },
                ZooKeeperResponse::Children {
                    xid: answer, nodes, ..
                },
            ) if xid == answer => {
                self.check_leadership(nodes, now);
            }
            (
                Op::GetOwnData { xid, .. },
                ZooKeeperResponse::Data {
                    xid: answer, stat, ..
                },
            ) if xid == answer => {
                self.op = Op::None;
                match stat {
                    Some(stat) if Some(stat.ephemeral_owner) == self.session => {
                        self.set_leadership(Some(stat.czxid), "");
                    }
                    _ => self.reset(now),
                }
            }
            (
                Op::GetPredecessor { xid, node },
                ZooKeeperResponse::Data {
                    xid: answer, stat, ..
                },
            ) if xid == answer => match stat {
                Some(_) => self.op = Op::Watching { node },
                None => self.get_children(now),
            },
            (Op::Watching { node }, ZooKeeperResponse::NodeDeleted { node: deleted, .. })
                if node == deleted =>
            {
                self.get_children(now);
            }
            (_, ZooKeeperResponse::DeleteDone { node, .. })
                if self.pending_delete == Some(node) =>
            {
                self.pending_delete = None;
                self.delete_sent = None;
            }
            _ => {}
        }
    }
}

impl LockClient<ZooKeeper> for ZooKeeperClient {
    /// `CuratorFramework.start()` + `LeaderLatch.start()`.
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if self.started {
            return;
        }
        self.started = true;
        self.connected_once = false;
        self.state = None;
        if let Link::Down { .. } = self.link {
            self.connect(now);
        }
    }

    fn handle_response(&mut self, _from: ServerIndex, response: ZooKeeperResponse, now: Instant) {
        let now = self.outbox.observe(now);
        match (self.link, response) {
            (
                Link::Connecting { connection, .. },
                ZooKeeperResponse::Connected {
                    connection: answer,
                    session,
                    timeout,
                },
            ) if connection == answer => self.on_connected(connection, session, timeout, now),
            // The socket closed (or the connect was refused) before its
            // `ConnectResponse`: `ClientCnxn.SendThread.run` catches the
            // exception, cleans up and connects again after
            // `hostProvider.next(1000)` and `startConnect`'s random sleep
            // (`disconnected`), not after the connect timeout.
            (
                Link::Connecting { connection, .. },
                ZooKeeperResponse::Closed { connection: closed },
            ) if connection == closed => self.disconnected(now),
            (
                Link::Up {
                    connection,
                    last_send,
                },
                response,
            ) => {
                if response.connection() != connection {
                    return;
                }
                match response {
                    ZooKeeperResponse::Closed { .. } => return self.disconnected(now),
                    // A pong behind a watch event not heard: TCP would hold
                    // it until the event arrives, so it is not heard yet.
                    ZooKeeperResponse::Pong { notifications, .. }
                        if (self.notifications.range(1..=notifications).count() as u64)
                            < notifications =>
                    {
                        return;
                    }
                    ZooKeeperResponse::NodeDeleted { notification, .. } => {
                        self.notifications.insert(notification);
                    }
                    _ => {}
                }
                self.last_heard = now;
                if now.saturating_duration_since(last_send) > self.settings.max_send_ping_interval {
                    self.link = Link::Up {
                        connection,
                        last_send: now,
                    };
                    self.send(ZooKeeperRequest::Ping { connection });
                }
                if self.started {
                    self.on_answer(response, now);
                } else if let ZooKeeperResponse::DeleteDone { .. } = response {
                    self.on_answer(response, now);
                }
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if !self.started && self.session.is_none() {
            return;
        }
        let expiry = earliest_of([self.client_expiry_at(), self.simulated_expiry_at()]);
        if expiry.is_some_and(|at| now >= at) {
            self.expired(now);
        }
        match self.link {
            Link::Up { .. } if self.read_deadline().is_some_and(|at| now >= at) => {
                self.disconnected(now);
            }
            Link::Up {
                connection,
                last_send,
            } if now >= last_send + self.ping_after() => {
                self.link = Link::Up {
                    connection,
                    last_send: now,
                };
                self.send(ZooKeeperRequest::Ping { connection });
            }
            Link::Connecting { deadline, .. } if now >= deadline => self.disconnected(now),
            _ => {}
        }
        if let Link::Down { at } = self.link {
            if now >= at && self.started {
                self.connect(now);
            }
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        if !self.started {
            return None;
        }
        let link = match self.link {
            Link::Down { at } => Some(at),
            Link::Connecting { deadline, .. } => Some(deadline),
            Link::Up { last_send, .. } => {
                earliest_of([self.read_deadline(), Some(last_send + self.ping_after())])
            }
        };
        earliest_of([link, self.client_expiry_at(), self.simulated_expiry_at()])
    }

    fn poll_output(&mut self) -> Option<ClientOutput<ZooKeeper>> {
        self.outbox.pop()
    }

    fn wall_clock_stepped(&mut self, by_nanos: i64, now: Instant) {
        self.outbox.observe(now);
        self.wall_steps = self.wall_steps.saturating_add(by_nanos);
    }

    /// `LeaderLatch.close()` (the node is deleted) and `CuratorFramework.close()`
    /// (`closeSession`), fire and forget.
    fn stop(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if !self.started {
            return;
        }
        self.set_leadership(None, "stopped");
        self.drop_node(now);
        if let Link::Up { connection, .. } = self.link {
            self.send(ZooKeeperRequest::CloseSession { connection });
        }
        self.started = false;
        self.op = Op::None;
        self.session = None;
        self.suspended_since = None;
        self.pending_delete = None;
        self.superseded_create = None;
        self.forget_socket();
        self.link = Link::Down { at: now };
    }

    /// `hasLeadership`, ending where the connection-state event that clears
    /// it would have fired even if no timer ran yet (a paused process):
    /// Standard — the read timeout (`SUSPENDED`); Session — the client's own
    /// expiry or Curator's simulated one (`LOST`).
    fn leadership(&self, now: Instant) -> Option<Leadership> {
        let now = self.outbox.at(now);
        let czxid = self.leadership?;
        let lost_at = match self.settings.error_policy {
            ErrorPolicy::Standard => earliest_of([self.read_deadline(), self.client_expiry_at()]),
            ErrorPolicy::Session => {
                let percent = self.settings.simulated_session_expiration_percent;
                let simulated = self
                    .read_deadline()
                    .map(|suspended| suspended + self.timeout * percent / 100);
                earliest_of([
                    simulated,
                    self.simulated_expiry_at(),
                    self.client_expiry_at(),
                ])
            }
        };
        match lost_at {
            Some(at) if now >= at => None,
            _ => Some(Leadership { token: Some(czxid) }),
        }
    }
}
