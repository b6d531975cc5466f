//! ZooKeeper leader election: Apache Curator's `LeaderLatch` on a ZooKeeper
//! session.
//!
//! # What it mirrors
//!
//! apache/curator at 88dee99 (which builds against ZooKeeper 3.9.4), and
//! apache/zookeeper at `release-3.9.4` (7246445):
//!
//! * `curator-recipes/.../recipes/leader/LeaderLatch.java`: `reset()`
//!   (`setLeadership(false)`, `setNode(null)` = guaranteed delete of the old
//!   node, then `create().creatingParentContainersIfNeeded().withProtection()
//!   .withMode(EPHEMERAL_SEQUENTIAL)` of `latchPath/latch-`, then
//!   `getChildren()`); `checkLeadership(children)`: our node missing →
//!   `reset()`; lowest sequence → `getData(ourPath)` and lead only if its
//!   `ephemeralOwner` is our session id; otherwise `setLeadership(false)` and
//!   `getData().usingWatcher(..)` on the **predecessor**, whose `NodeDeleted`
//!   (or a `NONODE` answer) calls `getChildren()` again;
//!   `handleStateChange`: `RECONNECTED` → `getChildren()`, `SUSPENDED` →
//!   `setLeadership(false)` only if the error policy says so, `LOST` →
//!   `setLeadership(false)`. `close()` = `setNode(null)` + leadership off.
//! * `curator-framework/.../state/StandardConnectionStateErrorPolicy.java`
//!   (`SUSPENDED` and `LOST` are errors; the default of
//!   `CuratorFrameworkFactory.Builder.connectionStateErrorPolicy`) and
//!   `SessionConnectionStateErrorPolicy.java` (only `LOST`):
//!   [`ErrorPolicy`].
//! * `curator-framework/.../imps/CuratorFrameworkImpl.java`
//!   `validateConnection`: ZooKeeper `Disconnected` → `SUSPENDED`, `Expired` →
//!   `LOST`, `SyncConnected` → `RECONNECTED`; `curator-client/.../
//!   ConnectionState.java` `handleExpiredSession`: `Expired` → a new
//!   ZooKeeper handle (a new session).
//! * `curator-framework/.../state/ConnectionStateManager.java`
//!   `processEvents`/`checkSessionExpiration`: the "simulated session
//!   expiration" — once `SUSPENDED` has lasted the (negotiated) session timeout
//!   × `simulatedSessionExpirationPercent` / 100 on the **client's** clock,
//!   Curator injects a session expiration (→ `LOST`); `setToSuspended` posts
//!   `SUSPENDED` only when the state is neither `SUSPENDED` nor `LOST`.
//! * `zookeeper-server/.../ClientCnxn.java` `SendThread.run`: `readTimeout` =
//!   2/3 of the negotiated timeout (no byte heard for that long → the
//!   connection is dropped, `Disconnected`); a ping once `idleSend` reaches
//!   `readTimeout / 2 - 1 s` (or at a wake-up with `idleSend` > 10 s,
//!   `MAX_SEND_PING_INTERVAL`); `connectTimeout` = session timeout / hosts;
//!   `hostProvider.next(1000)`: 1 s before each reconnect to the one host;
//!   `startConnect`'s `Thread.sleep(ThreadLocalRandom.current().nextLong(1000))`
//!   before every connect of a handle but its first (`isFirstConnect`,
//!   cleared by `primeConnection` once a socket of the handle connected):
//!   a further uniformly random 0–999 ms, drawn from the client's seeded
//!   RNG in whole milliseconds (the model takes a session's `Connected` for
//!   `primeConnection`; a new handle — Curator's after `LOST` — starts
//!   first again);
//!   ZOOKEEPER-4508 (in 3.9.3+): nothing heard for `expirationTimeout` = 4/3
//!   of the timeout → the client itself declares the session `Expired`;
//!   `onConnected`: a negotiated timeout of 0 (the server no longer knows the
//!   session) → `Expired`. The client learns of a server-side expiry only
//!   when it reconnects.
//! * The server (`ZooKeeperServer.processConnectRequest`,
//!   `SessionTrackerImpl`, `ExpiryQueue`, `DataTree`): the requested timeout
//!   is clamped to `[2, 20] × tickTime`; every packet of a session touches it;
//!   a session expires at `roundToNextInterval(now + timeout)` (next tick
//!   boundary) on **the server's clock**, and its `closeSession` txn deletes
//!   its ephemeral nodes and fires their watches; sequential names come from
//!   the parent's `cversion`; every txn takes the next zxid, `(epoch << 32) |
//!   counter`, and a new epoch begins at each (re)start. A durable restart
//!   reloads sessions and touches each (`now + timeout`); clients' sockets
//!   are closed.
//!
//! The leader node's `czxid` is the token ([`Leadership::token`](crate::Leadership)).
//!
//! # Defaults
//!
//! Curator: `sessionTimeoutMs` 60 s, `connectionTimeoutMs` 15 s (Curator's
//! wait for a connection before an operation fails; the model's latch
//! re-drives on `RECONNECTED` instead, so it is documented, not modelled),
//! `simulatedSessionExpirationPercent` 100, Standard error policy. ZooKeeper
//! server: `tickTime` 3 s (`ZooKeeperServer.DEFAULT_TICK_TIME`; the sample
//! `zoo.cfg` says 2 s), so 60 s is within `[6 s, 60 s]` and is granted.
//! Derived: read timeout 40 s, ping every 19 s, client-side expiry 80 s,
//! Curator's simulated `LOST` 60 s after `SUSPENDED`.
//!
//! # The transport
//!
//! ZooKeeper runs over TCP: one ordered, reliable byte stream per socket. A
//! single packet is never silently lost — TCP retransmits it, or, if the path
//! stays broken, nothing behind it is delivered either until the connection
//! fails. The driver's network may drop single messages, which TCP never
//! does, so the model reads a dropped message as what it stands for, a
//! connection that stopped delivering, and ends it the way `ClientCnxn`
//! does: the read timeout (`readTimeout` = 2/3 of the negotiated timeout,
//! `ClientCnxn` constructor and `onConnected`; `SendThread.run`: `to =
//! readTimeout - getIdleRecv()`, then "Client connection timed out"), the
//! socket is closed, `SendThread.cleanup` fails every pending request with
//! `CONNECTIONLOSS` (`conLossPacket`), Curator posts `SUSPENDED`, reconnects
//! after the 1 s spin delay and posts `RECONNECTED`; the latch's
//! `handleStateChange` then calls `getChildren()` (at 88dee99; older Curator
//! called `reset()` when not leader), whose `checkLeadership` resets if our
//! node is missing, and a create that failed with `CONNECTIONLOSS` is
//! re-sent with the same protection id (Curator's background retry,
//! `CreateBuilderImpl.pathInBackground`: a retried protected create first
//! runs `findProtectedNodeInForeground`), so it finds a node the server
//! already made. Concretely:
//!
//! * **A request unanswered for `readTimeout` since its send** (the latch's
//!   operation or the guaranteed delete; a lost request or a lost answer
//!   alike) drops the socket. Pongs heard after the send do not keep it
//!   alive: on one TCP stream the server answers in order (a ping goes
//!   through the same request pipeline, and `ClientCnxn.readResponse` closes
//!   the socket on "Xid out of order"), so a pong behind a missing answer
//!   would have been held by TCP, not heard. The bound is the stack's own:
//!   40 s for the default 60 s session, below the server's expiry (60 s), so
//!   the session survives and the latch re-drives within about
//!   `readTimeout + 1 s` of the lost message's send.
//! * **A lost watch event**: each `NodeDeleted` carries its place on the
//!   socket and each `Pong` the number pushed before it (stand-ins for TCP's
//!   sequence numbers, not ZooKeeper fields); a pong behind an event not yet
//!   heard is held, not heard, so the read timeout drops the socket and
//!   `RECONNECTED` re-reads the children.
//! * **A lost ping or pong** breaks nothing TCP would have delivered: it
//!   carries no state, the next ping 19 s later stands in for it, and only
//!   `readTimeout` with nothing heard (two pongs in a row lost) drops the
//!   socket. A lost `ConnectResponse` leaves the attempt to `connectTimeout`.
//!
//! A model socket that loses one message is thus broken, where real TCP
//! would often have recovered within a retransmission: the model is
//! pessimistic about availability, never about what a client learns. The
//! server still reads (and is touched by) packets sent after a lost one,
//! which TCP would hold; the client's read timeout (2/3 T) ends such a socket
//! before the session could expire (T).
//!
//! That is for a driver whose network loses single messages. A driver that
//! models TCP can do better: every packet names its socket
//! ([`Protocol::request_connection`], [`Protocol::response_connection`]),
//! and `Connect` opens one ([`Protocol::opens_connection`]). The simulator
//! (`fenced-sim`) carries each socket as a TCP stream — in order, a loss a
//! retransmission delay, held while its link is down and delivered on heal,
//! a new socket's `ConnectRequest` sent only after a handshake round trip —
//! as `fenced-lab`'s proxy carries the real client's bytes. Two things it
//! changes that matter: a delete and a create the latch sends together
//! reach the server in that order (they did not, on a network that
//! reorders, and the zxids — the tokens — followed); and under a one-way
//! cut towards the client no new socket ever carries its `ConnectRequest`
//! (its SYN-ACK is held), so the reconnecting client stops touching its
//! session, as for real.
//!
//! # Clocks
//!
//! Upstream reads two clocks on the client and one on the server:
//!
//! * **ZooKeeper's handle, monotonic.** `ClientCnxnSocket.updateNow` sets
//!   `now = Time.currentElapsedTime()` (= `System.nanoTime() / 1_000_000`,
//!   `common/Time.java`), and `getIdleRecv` / `getIdleSend` measure from it:
//!   the read timeout (`to = readTimeout - getIdleRecv()`), the ping
//!   (`timeToNextPing = readTimeout / 2 - getIdleSend() - ...`,
//!   `MAX_SEND_PING_INTERVAL`), the connect timeout (`to = connectTimeout -
//!   getIdleSend()`) and ZOOKEEPER-4508's client-side expiry
//!   (`expirationTimeout - getIdleRecv()`), all in `ClientCnxn.SendThread.run`;
//!   the 1 s before a reconnect is `StaticHostProvider.next`'s
//!   `Thread.sleep(spinDelay)` and the random pause `startConnect`'s
//!   `Thread.sleep` (durations).
//! * **Curator's simulated expiration, wall.**
//!   `ConnectionStateManager.setCurrentConnectionState` sets
//!   `startOfSuspendedEpoch = System.currentTimeMillis()` on `SUSPENDED`,
//!   and `checkSessionExpiration` injects the expiration once
//!   `System.currentTimeMillis() - startOfSuspendedEpoch >=
//!   getUseSessionTimeoutMs()`; it runs when `processEvents`'
//!   `eventQueue.poll(pollMaxMs)` times out — a wait on the monotonic clock
//!   for what the wall clock says is left.
//! * **The server, monotonic.** `ExpiryQueue` and `SessionTrackerImpl.run`
//!   read `Time.currentElapsedTime()`.
//! * `LeaderLatch` times nothing.
//!
//! The model's client times by its monotonic clock
//! ([`Protocol::CLIENT_CLOCK`]), as the handle does, and keeps the wall
//! clock as the monotonic one plus the machine's steps
//! ([`LockClient::wall_clock_stepped`](crate::LockClient::wall_clock_stepped); drift and slews move both clocks
//! alike) for Curator's one wall-clock decision: the poll wakes at
//! `SUSPENDED + useSessionTimeoutMs` on the monotonic clock, and expires
//! the session if the wall clock says that much has elapsed — so a forward
//! step meanwhile changes nothing and a backward step of `s` expires it `s`
//! later (`ZooKeeperClient::simulated_expiry_at`). The server times by the
//! monotonic clock.
//!
//! # Left out
//!
//! The ensemble (one linearizable server: no quorum, followers or
//! `sync`), read-only mode (`READ_ONLY`), ACLs and auth, the protected-name
//! search (the server answers a re-sent create with the node already made
//! for the same protection id), Curator's `RetryPolicy` (a failed operation
//! is re-driven by `RECONNECTED`), Curator's `connectionTimeoutMs`, watch
//! re-registration through `SetWatches` (watches live on the session; an
//! event fired while the session has no connection is lost — `RECONNECTED`
//! re-reads the children anyway), the latch path as a container node
//! (`getChildren`'s `NONODE` after the ensemble is wiped, CURATOR-724, is
//! the model's empty children list: `reset()` either way),
//! ZOOKEEPER-4923's brand-new-session deadline.
//!
//! Kept on purpose, and where it can matter:
//!
//! * Curator's poll after several steps. Upstream re-polls after each wake
//!   for what the wall clock then says is left; the model takes the net of
//!   the steps since `SUSPENDED` (a backward step then a forward one within
//!   one wait expire at the net, where upstream wakes at the first wait's
//!   end and polls again). The first step — the only one a scenario with a
//!   single `clock-jump` has — falls exactly where upstream's does.
//! * A create lost with its socket is re-sent on `RECONNECTED` with the same
//!   protection id (Curator's background retry). Upstream also runs the
//!   latch's `RECONNECTED` handler, whose `getChildren` finds `ourPath`
//!   still null and calls `reset()`: a second create races the retried one,
//!   and the later callback's `setNode` deletes the earlier node. One node
//!   remains either way; which sequence it has — the latch's place in line
//!   among contenders that joined meanwhile — can differ.
//! * A superseded create (only reachable through
//!   [`ZooKeeperClient::latch_reset`] while one is in flight) has its node
//!   deleted when answered, one at a time: upstream's callback would first
//!   make it `ourPath` and run `getChildren`, then the later callback
//!   deletes it — the same end state.

//! # Known failure mode
//!
//! The server expires a session on its clock; the client learns it only on
//! reconnect, or when one of its own local deadlines passes. With the Session
//! policy a paused or partitioned leader believes until 4/3 of the timeout
//! while its successor leads from the timeout on; the Standard policy gives
//! up at the read timeout (2/3), before the server can expire the session —
//! unless the client's clock is slow. The `czxid` token tells the leaders
//! apart.

mod client;
mod server;

use std::time::Duration;

pub use client::ZooKeeperClient;
pub use server::ZooKeeperServer;

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Protocol, ServerIndex, SettingsError};

/// The ZooKeeper + Curator `LeaderLatch` protocol.
#[derive(Clone, Copy, Debug)]
pub enum ZooKeeper {}

/// A ZooKeeper session id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub u64);

/// Which connection state Curator treats as an error (the recipe gives up
/// leadership on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// `StandardConnectionStateErrorPolicy`: `SUSPENDED` and `LOST`.
    Standard,
    /// `SessionConnectionStateErrorPolicy`: only `LOST`.
    Session,
}

impl ErrorPolicy {
    /// Every policy, as a scenario's `error_policy` names it.
    pub const ALL: [ErrorPolicy; 2] = [ErrorPolicy::Standard, ErrorPolicy::Session];

    /// Its name in a scenario (`error_policy`) and on `fenced-lab node`'s
    /// command line: `standard` or `session`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorPolicy::Standard => "standard",
            ErrorPolicy::Session => "session",
        }
    }

    /// The policy named `name` ([`name`](Self::name)), if any.
    pub fn from_name(name: &str) -> Option<ErrorPolicy> {
        ErrorPolicy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The connection state Curator last posted to its listeners
/// (`curator-framework/.../state/ConnectionState.java`; `READ_ONLY` is left
/// out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionState {
    /// The first successful connection of the client.
    Connected,
    /// The connection is gone; the session may still live.
    Suspended,
    /// Connected again after `SUSPENDED` or `LOST`.
    Reconnected,
    /// The session is gone (expired on the server, by ZOOKEEPER-4508's
    /// client-side check, or by Curator's simulated expiration).
    Lost,
}

/// `LeaderLatch.CloseMode`: whether closing a leading latch tells its
/// listeners (`notLeader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseMode {
    /// `SILENT` (upstream's default): listeners are cleared first, so no
    /// `notLeader` — the model emits no `LostLeadership`.
    Silent,
    /// `NOTIFY_LEADER`: `notLeader` fires — the model's `stop`.
    NotifyLeader,
}

/// The session timeout a server on `tick` grants for `requested`:
/// `ZooKeeperServer.processConnectRequest` clamps it to
/// `[minSessionTimeout, maxSessionTimeout]`, by default `[2, 20] × tickTime`.
pub fn negotiated_timeout(requested: Duration, tick: Duration) -> Duration {
    requested.clamp(tick * 2, tick * 20)
}

/// Settings; `Default` = Curator's and ZooKeeper's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZooKeeperSettings {
    /// The session timeout the client asks for (`sessionTimeoutMs`, 60 s).
    pub session_timeout: Duration,
    /// `connectionStateErrorPolicy` (Standard).
    pub error_policy: ErrorPolicy,
    /// `simulatedSessionExpirationPercent`, `1..=100` (100).
    pub simulated_session_expiration_percent: u32,
    /// ZOOKEEPER-4508's client-side expiry at 4/3 of the timeout (ZooKeeper
    /// 3.9.3+; Curator 5.9 builds against 3.9.4): `true`.
    pub client_session_expiry: bool,
    /// The server's `tickTime` (3 s): session timeouts are clamped to
    /// `[2, 20]` ticks and expire on tick boundaries.
    pub tick_time: Duration,
    /// `ClientCnxn`'s `hostProvider.next(1000)`: the pause before connecting
    /// to the one host again after a socket closed or a connect failed
    /// (1 s). A constant upstream; a setting here so that a driver on a
    /// scaled clock (`fenced-lab --time-scale`) scales it with the rest.
    pub reconnect_spin: Duration,
    /// `ClientCnxn.SendThread.startConnect`'s
    /// `Thread.sleep(ThreadLocalRandom.current().nextLong(1000))`: before
    /// each connect of a handle but its first, a pause drawn uniformly in
    /// whole milliseconds below this (1 s; zero: none). A constant
    /// upstream; a setting for the same reason.
    pub reconnect_sleep: Duration,
    /// `ClientCnxn.MAX_SEND_PING_INTERVAL`: a wake-up with more idle send
    /// time than this pings (10 s). A constant upstream; a setting for the
    /// same reason.
    pub max_send_ping_interval: Duration,
}

impl Default for ZooKeeperSettings {
    fn default() -> Self {
        ZooKeeperSettings {
            session_timeout: Duration::from_secs(60),
            error_policy: ErrorPolicy::Standard,
            simulated_session_expiration_percent: 100,
            client_session_expiry: true,
            tick_time: Duration::from_secs(3),
            reconnect_spin: Duration::from_secs(1),
            reconnect_sleep: Duration::from_secs(1),
            max_send_ping_interval: Duration::from_secs(10),
        }
    }
}

/// Node metadata (`Stat`) the latch reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The zxid of the txn that created the node.
    pub czxid: u64,
    /// The session owning the ephemeral node.
    pub ephemeral_owner: SessionId,
}

/// A client's packet. Every packet but `Connect` names the connection (TCP
/// socket) it travels on; a packet on a socket the server has closed is
/// answered with [`ZooKeeperResponse::Closed`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZooKeeperRequest {
    /// `ConnectRequest` on a new socket: `session` `None` asks for a new one.
    Connect {
        /// The client's socket number.
        connection: u64,
        /// The session to resume.
        session: Option<SessionId>,
        /// The requested timeout.
        timeout: Duration,
    },
    /// A ping (`xid` -2).
    Ping {
        /// The socket.
        connection: u64,
    },
    /// `create -e -s latchPath/latch-` (with a protection id).
    Create {
        /// The socket.
        connection: u64,
        /// Matches the answer.
        xid: u64,
        /// `withProtection`'s id: a re-sent create finds the node already made.
        protection: u64,
    },
    /// `getChildren(latchPath)`.
    GetChildren {
        /// The socket.
        connection: u64,
        /// Matches the answer.
        xid: u64,
    },
    /// `getData(latchPath/latch-<node>)`, leaving a data watch if `watch`.
    GetData {
        /// The socket.
        connection: u64,
        /// Matches the answer.
        xid: u64,
        /// The node's sequence number.
        node: u64,
        /// Leave a watch (only if the node exists).
        watch: bool,
    },
    /// `delete(latchPath/latch-<node>)`.
    Delete {
        /// The socket.
        connection: u64,
        /// The node.
        node: u64,
    },
    /// `closeSession`.
    CloseSession {
        /// The socket.
        connection: u64,
    },
}

/// The server's packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZooKeeperResponse {
    /// `ConnectResponse`: `timeout` zero = the session is gone (`Expired`).
    Connected {
        /// The socket.
        connection: u64,
        /// The session.
        session: SessionId,
        /// The negotiated timeout, or zero.
        timeout: Duration,
    },
    /// The server closed the socket (restart, session closed or expired,
    /// unknown socket): the client sees `Disconnected`.
    Closed {
        /// The socket.
        connection: u64,
    },
    /// Ping answer.
    Pong {
        /// The socket.
        connection: u64,
        /// How many watch events the server has pushed on this socket before
        /// this answer. Not a ZooKeeper field: it stands for TCP's byte
        /// order, which the model's message-dropping network lacks — a client
        /// that has not heard them all holds the pong as TCP would (see
        /// "The transport" in the module docs).
        notifications: u64,
    },
    /// The created node's sequence number.
    Created {
        /// The socket.
        connection: u64,
        /// The request.
        xid: u64,
        /// The node.
        node: u64,
    },
    /// The children's sequence numbers.
    Children {
        /// The socket.
        connection: u64,
        /// The request.
        xid: u64,
        /// The children.
        nodes: Vec<u64>,
    },
    /// `getData`'s stat, `None` = `NONODE`.
    Data {
        /// The socket.
        connection: u64,
        /// The request.
        xid: u64,
        /// The node's stat.
        stat: Option<Stat>,
    },
    /// A delete was applied (or the node was already gone).
    DeleteDone {
        /// The socket.
        connection: u64,
        /// The node.
        node: u64,
    },
    /// A watch event: `NodeDeleted` of `node`.
    NodeDeleted {
        /// The socket.
        connection: u64,
        /// The node.
        node: u64,
        /// Its place among the events pushed on this socket, from 1 (TCP
        /// order; see [`ZooKeeperResponse::Pong`]).
        notification: u64,
    },
}

impl ZooKeeperRequest {
    /// The socket it travels on: every packet names one (TCP's).
    pub fn connection(&self) -> u64 {
        match self {
            ZooKeeperRequest::Connect { connection, .. }
            | ZooKeeperRequest::Ping { connection }
            | ZooKeeperRequest::Create { connection, .. }
            | ZooKeeperRequest::GetChildren { connection, .. }
            | ZooKeeperRequest::GetData { connection, .. }
            | ZooKeeperRequest::Delete { connection, .. }
            | ZooKeeperRequest::CloseSession { connection } => *connection,
        }
    }
}

impl ZooKeeperResponse {
    /// The socket it travels on.
    pub fn connection(&self) -> u64 {
        match self {
            ZooKeeperResponse::Connected { connection, .. }
            | ZooKeeperResponse::Closed { connection }
            | ZooKeeperResponse::Pong { connection, .. }
            | ZooKeeperResponse::Created { connection, .. }
            | ZooKeeperResponse::Children { connection, .. }
            | ZooKeeperResponse::Data { connection, .. }
            | ZooKeeperResponse::DeleteDone { connection, .. }
            | ZooKeeperResponse::NodeDeleted { connection, .. } => *connection,
        }
    }
}

impl Protocol for ZooKeeper {
    const NAME: &'static str = "zookeeper";
    type Settings = ZooKeeperSettings;
    type Request = ZooKeeperRequest;
    type Response = ZooKeeperResponse;
    type Client = ZooKeeperClient;
    type Server = ZooKeeperServer;
    const HAS_TOKEN: bool = true;
    /// The ZooKeeper handle times its read timeout, pings, connect timeout
    /// and ZOOKEEPER-4508 expiry by `Time.currentElapsedTime()` =
    /// `System.nanoTime()` (`ClientCnxn.SendThread.run`), and Curator's
    /// `processEvents` waits on `eventQueue.poll` — monotonic. Curator's
    /// simulated expiration also compares `System.currentTimeMillis()`
    /// (`ConnectionStateManager.checkSessionExpiration`), which the client
    /// keeps as this clock plus the machine's steps (see "Clocks" in the
    /// module docs).
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// The server expires sessions by `Time.currentElapsedTime()`, i.e.
    /// `System.nanoTime()` — monotonic
    /// (`zookeeper-server/.../server/SessionTrackerImpl.java`, `run`).
    const SERVER_CLOCK: ClockKind = ClockKind::Monotonic;

    /// Zero durations are rejected; the percent must be in `1..=100`
    /// (`Builder.simulatedSessionExpirationPercent`'s precondition). Upstream
    /// passes a zero session timeout to the server, which raises it to 2
    /// ticks; the model rejects it instead.
    fn validate(settings: &ZooKeeperSettings) -> Result<(), SettingsError> {
        nonzero("session_timeout", settings.session_timeout)?;
        nonzero("tick_time", settings.tick_time)?;
        nonzero("reconnect_spin", settings.reconnect_spin)?;
        nonzero("max_send_ping_interval", settings.max_send_ping_interval)?;
        if !(1..=100).contains(&settings.simulated_session_expiration_percent) {
            return Err(SettingsError::Invalid {
                setting: "simulated_session_expiration_percent",
                reason: "must be > 0 and <= 100",
            });
        }
        Ok(())
    }

    fn servers(_settings: &ZooKeeperSettings) -> u16 {
        1
    }

    /// The server negotiates the session timeout into `[2, 20]` ticks
    /// (`server.rs`, on `Connect`) and expires a session that long after its
    /// last packet, rounded up to the next tick (`server.rs`, `expiry`:
    /// `ExpiryQueue.roundToNextInterval`). Lengths: the negotiated timeout;
    /// the client's read timeout, 2/3 of it (`client.rs`, `read_timeout`);
    /// with ZOOKEEPER-4508's client-side expiry, 4/3 of it (`client.rs`);
    /// and Curator's simulated expiration, `percent` of it where that is not
    /// all of it (`client.rs`).
    fn boundaries(settings: &ZooKeeperSettings) -> Boundaries {
        let tick = settings.tick_time;
        let timeout = negotiated_timeout(settings.session_timeout, tick);
        let mut lengths = vec![timeout, timeout * 2 / 3];
        if settings.client_session_expiry {
            lengths.push(timeout * 4 / 3);
        }
        let percent = settings.simulated_session_expiration_percent;
        if percent != 100 {
            lengths.push(timeout * percent / 100);
        }
        Boundaries {
            expiries: vec![timeout],
            expiry_tick: Some(tick),
            lengths,
        }
    }

    fn new_server(settings: &ZooKeeperSettings, _index: ServerIndex) -> ZooKeeperServer {
        ZooKeeperServer::new(settings.tick_time)
    }

    fn new_client(
        settings: &ZooKeeperSettings,
        id: ClientId,
        _name: &str,
        seed: u64,
    ) -> ZooKeeperClient {
        ZooKeeperClient::new(settings.clone(), id, seed)
    }

    /// Every packet names its socket (see "The transport").
    fn request_connection(request: &ZooKeeperRequest) -> Option<u64> {
        Some(request.connection())
    }

    /// `ConnectRequest` is the first packet of each socket
    /// (`ClientCnxnSocketNIO.connect`, then `primeConnection`).
    fn opens_connection(request: &ZooKeeperRequest) -> bool {
        matches!(request, ZooKeeperRequest::Connect { .. })
    }

    fn response_connection(response: &ZooKeeperResponse) -> Option<u64> {
        Some(response.connection())
    }

    /// A refused connect is the socket closing before its
    /// `ConnectResponse`: `ClientCnxnSocketNIO.doTransport` finishes the
    /// connect with a `ConnectException`, which `SendThread.run` catches as
    /// it does a closed socket (the client's `Connecting` arm for
    /// `Closed`).
    fn refused(connection: u64) -> Option<ZooKeeperResponse> {
        Some(ZooKeeperResponse::Closed { connection })
    }
}
