//! The ZooKeeper node (`fenced-lab node --zookeeper`): leader election by
//! Apache Curator's `LeaderLatch` on a ZooKeeper session — the zoo's
//! `fenced_zoo::zookeeper` model, for real, against a real
//! ZooKeeper.
//!
//! # The model's client, over the real server
//!
//! As the etcd node does (`lab/src/node_etcd.rs`), the node **drives the
//! model's own client** ([`ZooKeeperClient`], sans-IO) on real time and
//! carries each packet it sends to the real server, feeding the server's
//! answers back; so every decision is the model's, one for one, and the
//! model is a port of upstream (its module docs cite each line; the same
//! lines, at apache/curator 88dee99 and apache/zookeeper `release-3.9.4`):
//!
//! * `curator-recipes/.../recipes/leader/LeaderLatch.java`: `reset()`
//!   (leadership off, guaranteed delete of the old node, `create()
//!   .creatingParentContainersIfNeeded().withProtection()
//!   .withMode(EPHEMERAL_SEQUENTIAL)` of `latchPath/latch-`, then
//!   `getChildren()`); `checkLeadership(children)` (our node missing →
//!   `reset()`; lowest → `getData(ourPath)` and lead only if its
//!   `ephemeralOwner` is our session; otherwise `getData().usingWatcher()`
//!   on the predecessor, whose `NodeDeleted` or `NONODE` calls
//!   `getChildren()` again); `handleStateChange` (`RECONNECTED` →
//!   `getChildren()`, `SUSPENDED` → leadership off only if the error policy
//!   says so, `LOST` → leadership off).
//! * `curator-framework/.../state/StandardConnectionStateErrorPolicy.java`
//!   (`SUSPENDED` and `LOST`, the default) and
//!   `SessionConnectionStateErrorPolicy.java` (`LOST` only):
//!   `[election.zookeeper] error_policy`.
//! * `curator-framework/.../imps/CuratorFrameworkImpl.java`
//!   `validateConnection` (`Disconnected` → `SUSPENDED`, `Expired` → `LOST`,
//!   `SyncConnected` → `RECONNECTED`) and `curator-client/.../
//!   ConnectionState.java` `handleExpiredSession` (a new handle, a new
//!   session); `ConnectionStateManager.java` `processEvents` /
//!   `checkSessionExpiration` (the simulated expiration after `SUSPENDED`
//!   has lasted the session timeout × `simulatedSessionExpirationPercent`).
//! * `zookeeper-server/.../ClientCnxn.java` `SendThread.run`: the read
//!   timeout (2/3 of the negotiated timeout), the ping (`readTimeout / 2 -
//!   1 s` of idle send, `MAX_SEND_PING_INTERVAL`), the connect timeout, the
//!   1 s before a reconnect (`hostProvider.next(1000)`), ZOOKEEPER-4508's
//!   client-side expiry at 4/3 of the timeout; `onConnected` (a negotiated
//!   timeout of 0 is `Expired`).
//!
//! # Each packet, for real
//!
//! The node speaks ZooKeeper's wire protocol itself
//! (`lab/src/node_zookeeper_wire.rs`): one TCP socket per model connection,
//! through the node's proxy, so the model decides when to connect, ping,
//! give a socket up and resume its session — which a client library with
//! its own connection manager would decide instead.
//!
//! * `Connect { session }` → a new socket (the old one closed) and a
//!   `ConnectRequest` with the session's id and password (or none); the
//!   `ConnectResponse` is the model's `Connected`, a zero timeout or
//!   session id its `Expired`. The socket's end (the server closed it, a
//!   reset) is the model's `Closed`.
//! * `Ping` → a ping (`xid` -2); its answer a `Pong` carrying how many
//!   watch events the socket delivered before it (TCP keeps them in order,
//!   so this is what the model's stand-in says).
//! * `Create { protection }` → Curator's protected background create: the
//!   first attempt with a protection id is a `create` of
//!   `latchPath/_c_<protection>-latch-` with `EPHEMERAL_SEQUENTIAL`; a
//!   retry (the model re-sends the id after a lost socket) first runs
//!   `getChildren` of the latch path and takes the child named
//!   `_c_<protection>-latch-…` if there is one
//!   (`CreateBuilderImpl.pathInBackground`: `findProtectedNodeInForeground`
//!   only when not `localFirstTime`); its sequence is the model's node.
//! * `GetChildren`, `GetData { watch }`, `Delete` → the same requests
//!   (`NONODE` is the model's empty list, `None` stat, or done delete).
//!   A data watch is left on the socket, and the server's `NodeDeleted`
//!   event is the model's.
//! * `CloseSession` → `closeSession`.
//!
//! A request whose socket goes gives the model nothing, as a lost message
//! does in the simulation: its own read timeout decides.
//!
//! # The token
//!
//! The leader's node's `czxid`, as the model's. The run's server is a
//! one-member quorum (`lab/src/servers/zookeeper.rs`), which, as the
//! model's server, begins epoch 1 at its start and a new epoch at each
//! restart, its counter from 0. In epoch 1 the real server's zxids also
//! count transactions no model server has — the latch path's creation and
//! the session that made it — so the runner reads the server's last zxid
//! after making the latch path, before any node starts (`--zk-zxid-base`),
//! and the node numbers a real epoch-1 `czxid` as the model's zxid of the
//! same transaction: `(1 << 32) + (czxid - base)`. A `czxid` of a later
//! epoch (after a restart: the lab takes no zxid then, its readiness check
//! being `srvr`) is the model's as it is. From there both servers count the
//! same transactions (each `createSession`, `create`, `delete`,
//! `closeSession` and expiry takes the next zxid), so a real term and its
//! simulated twin carry the same number when the same transactions came
//! before it; the term's token is that plus one, as the simulator numbers a
//! design's token (`sim/src/zoo/process.rs`, `fencing_token`). The downstream is the
//! fenced table when the scenario fences and the plain table otherwise.
//! A unit starts only while the model's client says it leads at that
//! instant (`ZooKeeperClient::leadership`, which ends at the read timeout
//! or the expiry the policy gives up on, even before a timer ran).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced::history::Recorder;
use fenced::tokio::{CancellationToken, Clock};
use fenced::{FencingToken, OwnerId};
use fenced_zoo::zookeeper::{
    SessionId, Stat, ZooKeeperClient, ZooKeeperRequest, ZooKeeperResponse,
};
use fenced_zoo::{ClientId, LockClient};
use tokio::sync::{mpsc, watch};

use super::driver::{Carry, Driver, ModelClock};
use super::errors::{bad, NodeError};
use super::{say, watch_signals, work_context, Believed, Downstream, NodeConfig};

#[path = "node_zookeeper_args.rs"]
pub(super) mod args;
#[path = "node_zookeeper_wire.rs"]
mod wire;

use args::ZooKeeperNode;
use wire::{op, Heard, Out, Socket};

/// The model's zxid of real `czxid`, the run's base being `base` (see
/// "The token"): shifted in the base's epoch, as it is in a later one.
fn model_zxid(czxid: i64, base: u64) -> u64 {
    let czxid = u64::try_from(czxid).unwrap_or(0);
    if czxid >> 32 > base >> 32 {
        return czxid;
    }
    (1_u64 << 32).saturating_add(czxid.saturating_sub(base))
}

/// The downstream token of model zxid `czxid`.
fn token_of(czxid: u64) -> Option<FencingToken> {
    FencingToken::new(czxid.saturating_add(1))
}

/// The protected name's prefix for `protection` (Curator's
/// `ZKPaths.PROTECTED_PREFIX` `_c_`, an id, `-`, then the node's name).
fn protected_prefix(protection: u64) -> String {
    format!("_c_{protection:016x}-latch-")
}

/// The seed of the model's protection ids: the process's owner id (node
/// and incarnation), so no two processes share one — a protected create
/// that found another latch's node as its own would take that node over.
fn protection_seed(owner: &OwnerId) -> u64 {
    owner
        .to_string()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// What a unit's leadership check reads: the term, while the model's
/// client still says it leads.
pub(super) struct Belief {
    term: watch::Receiver<Option<FencingToken>>,
    client: Arc<Mutex<ZooKeeperClient>>,
    clock: ModelClock,
}

impl Belief {
    pub(super) fn token(&self) -> Option<FencingToken> {
        let term = *self.term.borrow();
        let leads = self
            .client
            .lock()
            .is_ok_and(|client| client.leadership(self.clock.now()).is_some());
        term.filter(|_| leads)
    }
}

/// The current socket and the model's number for it.
type Current = Option<(u64, Arc<Socket>)>;

/// The real server's side of the model's packets.
#[derive(Clone)]
struct Io {
    /// The server's address through the node's proxy (`host:port`).
    address: String,
    latch: String,
    zxid_base: u64,
    /// The node's data (upstream: the latch's id).
    value: String,
    answers: mpsc::UnboundedSender<ZooKeeperResponse>,
    /// The current socket and the model's number for it.
    socket: Arc<Mutex<Current>>,
    /// The model's newest connection: a socket opened for an older one
    /// (the model gave up on it while it was being opened) is closed.
    newest: Arc<AtomicU64>,
    /// Each session's password, from its `ConnectResponse`.
    passwords: Arc<Mutex<BTreeMap<u64, Vec<u8>>>>,
    /// Each sequence's full name under the latch path, as listed.
    names: Arc<Mutex<BTreeMap<u64, String>>>,
    /// The highest zxid any reply carried (`ConnectRequest.lastZxidSeen`).
    last_zxid: Arc<Mutex<i64>>,
    /// The protection id of the last create sent: the model re-sends a
    /// create lost with its socket under the same id (a new create draws a
    /// new one), and only such a retry looks for the node first (see
    /// [`Io::create`]).
    last_create: Arc<Mutex<Option<u64>>>,
}

impl Carry<ZooKeeperRequest> for Io {
    fn carry(
        self,
        request: ZooKeeperRequest,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.carry_now(request)
    }
}

impl Io {
    fn answer(&self, response: ZooKeeperResponse) {
        let _ = self.answers.send(response);
    }

    fn socket(&self, connection: u64) -> Option<Arc<Socket>> {
        let slot = self.socket.lock().ok()?;
        match slot.as_ref() {
            Some((on, socket)) if *on == connection => Some(Arc::clone(socket)),
            _ => None,
        }
    }

    fn learn(&self, name: &str) -> Option<u64> {
        let sequence = wire::sequence_of(name)?;
        if let Ok(mut names) = self.names.lock() {
            names.insert(sequence, name.to_string());
        }
        Some(sequence)
    }

    fn path_of(&self, node: u64) -> Option<String> {
        let names = self.names.lock().ok()?;
        Some(format!("{}/{}", self.latch, names.get(&node)?))
    }

    /// Carries `request` to the server; answers, if any, go to the driver.
    async fn carry_now(self, request: ZooKeeperRequest) {
        match request {
            ZooKeeperRequest::Connect {
                connection,
                session,
                timeout,
            } => self.connect(connection, session, timeout).await,
            ZooKeeperRequest::Ping { connection } => {
                if let Some(socket) = self.socket(connection) {
                    socket.ping();
                }
            }
            ZooKeeperRequest::Create {
                connection,
                xid,
                protection,
            } => {
                if let Some(socket) = self.socket(connection) {
                    self.create(&socket, connection, xid, protection).await;
                }
            }
            ZooKeeperRequest::GetChildren { connection, xid } => {
                if let Some(socket) = self.socket(connection) {
                    if let Some(nodes) = self.children(&socket).await {
                        self.answer(ZooKeeperResponse::Children {
                            connection,
                            xid,
                            nodes: nodes.into_keys().collect(),
                        });
                    }
                }
            }
            ZooKeeperRequest::GetData {
                connection,
                xid,
                node,
                watch,
            } => {
                if let Some(socket) = self.socket(connection) {
                    self.get_data(&socket, connection, xid, node, watch).await;
                }
            }
            ZooKeeperRequest::Delete { connection, node } => {
                if let Some(socket) = self.socket(connection) {
                    self.delete(&socket, connection, node).await;
                }
            }
            ZooKeeperRequest::CloseSession { connection } => {
                if let Some(socket) = self.socket(connection) {
                    let _ = socket.call(op::CLOSE_SESSION, Out::default()).await;
                }
            }
        }
    }

    async fn connect(&self, connection: u64, session: Option<SessionId>, asked: Duration) {
        // The old socket is given up: closed, its tasks ended.
        self.newest.fetch_max(connection, Ordering::SeqCst);
        if let Ok(mut slot) = self.socket.lock() {
            slot.take();
        }
        let id = session.map_or(0, |s| s.0);
        let password = self
            .passwords
            .lock()
            .ok()
            .and_then(|p| p.get(&id).cloned())
            .unwrap_or_else(|| vec![0; 16]);
        let last_zxid = self.last_zxid.lock().map_or(0, |z| *z);
        let request = Out::default()
            .int(0)
            .long(last_zxid)
            .int(i32::try_from(asked.as_millis()).unwrap_or(i32::MAX))
            .long(i64::try_from(id).unwrap_or(0))
            .buffer(&password)
            .boolean(false);
        let (heard, mut hearing) = mpsc::unbounded_channel();
        let opened = Socket::open(
            &self.address,
            request.into_bytes(),
            heard,
            Arc::clone(&self.last_zxid),
        )
        .await;
        let Ok(socket) = opened else {
            return; // The model's connect timeout decides.
        };
        match self.socket.lock() {
            Ok(mut slot) if self.newest.load(Ordering::SeqCst) == connection => {
                *slot = Some((connection, Arc::new(socket)));
            }
            _ => return,
        }
        let io = self.clone();
        tokio::spawn(async move {
            while let Some(heard) = hearing.recv().await {
                let closed = matches!(heard, Heard::Closed);
                io.heard(connection, heard);
                if closed {
                    break;
                }
            }
        });
    }

    fn heard(&self, connection: u64, heard: Heard) {
        let response = match heard {
            Heard::Connected(c) => {
                let session = u64::try_from(c.session).unwrap_or(0);
                let timeout = match u64::try_from(c.timeout_ms) {
                    Ok(ms) if session != 0 => Duration::from_millis(ms),
                    _ => Duration::ZERO,
                };
                if let Ok(mut passwords) = self.passwords.lock() {
                    passwords.insert(session, c.password);
                }
                ZooKeeperResponse::Connected {
                    connection,
                    session: SessionId(session),
                    timeout,
                }
            }
            Heard::Pong { events } => ZooKeeperResponse::Pong {
                connection,
                notifications: events,
            },
            Heard::Deleted { path, n } => {
                let Some(node) = path.rsplit('/').next().and_then(wire::sequence_of) else {
                    return;
                };
                ZooKeeperResponse::NodeDeleted {
                    connection,
                    node,
                    notification: n,
                }
            }
            Heard::Closed => ZooKeeperResponse::Closed { connection },
        };
        self.answer(response);
    }

    /// The latch's children by sequence (`NONODE`: none).
    async fn children(&self, socket: &Socket) -> Option<BTreeMap<u64, String>> {
        let body = Out::default().string(&self.latch).boolean(false);
        let (err, bytes) = socket.call(op::GET_CHILDREN, body).await?;
        let mut nodes = BTreeMap::new();
        if err == wire::NO_NODE {
            return Some(nodes);
        }
        if err != 0 {
            return None;
        }
        let mut record = wire::In::new(&bytes);
        let count = record.int()?;
        for _ in 0..count.max(0) {
            let name = record.string()?;
            if let Some(sequence) = self.learn(&name) {
                nodes.insert(sequence, name);
            }
        }
        Some(nodes)
    }

    /// Curator's protected background create
    /// (`CreateBuilderImpl.pathInBackground`, at 88dee99): the first attempt
    /// is a plain `create` (`localFirstTime`), and only a retry — the same
    /// protection id again, after a `CONNECTIONLOSS` — first runs
    /// `findProtectedNodeInForeground` (a `getChildren` of the latch path).
    /// The extra round trip on every first attempt delayed each create
    /// behind the same client's guaranteed delete of its old node.
    async fn create(&self, socket: &Socket, connection: u64, xid: u64, protection: u64) {
        let prefix = protected_prefix(protection);
        let retry = self
            .last_create
            .lock()
            .map(|mut last| last.replace(protection) == Some(protection))
            .unwrap_or(true);
        let found = if retry {
            let Some(children) = self.children(socket).await else {
                return;
            };
            children
                .into_iter()
                .find(|(_, name)| name.starts_with(&prefix))
        } else {
            None
        };
        let node = match found {
            Some((node, _)) => node,
            None => {
                let body = Out::default()
                    .string(&format!("{}/{prefix}", self.latch))
                    .buffer(self.value.as_bytes())
                    .open_acl()
                    .int(wire::EPHEMERAL_SEQUENTIAL);
                let Some((0, bytes)) = socket.call(op::CREATE, body).await else {
                    return;
                };
                let Some(path) = wire::In::new(&bytes).string() else {
                    return;
                };
                let Some(node) = path.rsplit('/').next().and_then(|n| self.learn(n)) else {
                    return;
                };
                node
            }
        };
        self.answer(ZooKeeperResponse::Created {
            connection,
            xid,
            node,
        });
    }

    async fn get_data(&self, socket: &Socket, connection: u64, xid: u64, node: u64, watch: bool) {
        let stat = match self.path_of(node) {
            None => None,
            Some(path) => {
                let body = Out::default().string(&path).boolean(watch);
                match socket.call(op::GET_DATA, body).await {
                    Some((0, bytes)) => {
                        let mut record = wire::In::new(&bytes);
                        let _data = record.buffer();
                        let Some((czxid, owner)) = record.stat() else {
                            return;
                        };
                        Some(Stat {
                            czxid: model_zxid(czxid, self.zxid_base),
                            ephemeral_owner: SessionId(u64::try_from(owner).unwrap_or(0)),
                        })
                    }
                    Some((wire::NO_NODE, _)) => None,
                    _ => return,
                }
            }
        };
        self.answer(ZooKeeperResponse::Data {
            connection,
            xid,
            stat,
        });
    }

    async fn delete(&self, socket: &Socket, connection: u64, node: u64) {
        if let Some(path) = self.path_of(node) {
            let body = Out::default().string(&path).int(-1);
            match socket.call(op::DELETE, body).await {
                Some((0 | wire::NO_NODE, _)) => {}
                _ => return,
            }
        }
        self.answer(ZooKeeperResponse::DeleteDone { connection, node });
    }
}

/// Runs a ZooKeeper node until SIGTERM: no elector and no heartbeats (the
/// design has neither), the same work and history as a fenced node's.
pub(super) async fn run_node(
    config: &NodeConfig,
    node: ZooKeeperNode,
    owner: &OwnerId,
    recorder: &Recorder,
    downstream: Downstream,
) -> Result<(), NodeError> {
    if config.lease_url.contains("://") || !config.lease_url.contains(':') {
        return Err(bad(format!(
            "--zookeeper: --lease-url must be ZooKeeper's host:port, not {:?}",
            config.lease_url
        )));
    }
    let clock = ModelClock::starting_now();
    let model = Arc::new(Mutex::new(ZooKeeperClient::new(
        node.settings.clone(),
        ClientId(config.incarnation),
        protection_seed(owner),
    )));
    let (believed, watching) = watch::channel(None);
    let belief = Belief {
        term: watching,
        client: Arc::clone(&model),
        clock,
    };
    let context = work_context(
        config,
        owner,
        downstream,
        recorder,
        Clock::new(),
        Believed::ZooKeeper(belief),
    )?;
    let (answers, receiver) = mpsc::unbounded_channel();
    let io = Io {
        address: config.lease_url.clone(),
        latch: node.latch_path.clone(),
        zxid_base: node.zxid_base,
        value: owner.to_string(),
        answers,
        socket: Arc::default(),
        newest: Arc::default(),
        passwords: Arc::default(),
        names: Arc::default(),
        last_zxid: Arc::default(),
        last_create: Arc::default(),
    };
    let shutdown = CancellationToken::new();
    let signals = watch_signals(shutdown.clone(), context.clone())?;
    say(owner, format_args!("start pid={}", std::process::id()));
    let driver: Driver<fenced_zoo::zookeeper::ZooKeeper, Io> = Driver {
        design: "zookeeper",
        token_of,
        model,
        clock,
        io,
        answers: receiver,
        context: context.clone(),
        believed,
        stop_bound: config.write_interval + config.work_duration,
        term: None,
    };
    driver.run(shutdown).await;
    signals.abort();
    context.cancel_in_flight();
    recorder.process_stopped();
    say(owner, format_args!("exit"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_czxid_is_numbered_as_the_models_zxid_of_the_same_transaction() {
        // Proves "The token": the first transaction after the base is the
        // model's first of epoch 1, and the term's token is one more.
        assert_eq!(model_zxid(0x12, 0x10), (1 << 32) + 2);
        assert_eq!(model_zxid(0x5, 0x10), 1 << 32);
        // A one-member quorum's first epoch is 1: the base is epoch 1's
        // last zxid, and a zxid of epoch 2 (after a restart) is the model's.
        assert_eq!(model_zxid(0x1_0000_0009, 0x1_0000_0004), (1 << 32) + 5);
        assert_eq!(model_zxid(0x2_0000_0002, 0x1_0000_0004), 0x2_0000_0002);
        assert_eq!(
            token_of(model_zxid(0x12, 0x10)).map(FencingToken::get),
            Some((1 << 32) + 3)
        );
        assert_eq!(protected_prefix(255), "_c_00000000000000ff-latch-");
    }
}
