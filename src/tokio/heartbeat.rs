//! Cluster membership on tokio: the [`RegistryBackend`] trait, its in-process
//! implementation, and the [`HeartbeatTask`] that keeps a node live.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::tokio::sync::broadcast;
use ::tokio::time::{interval, timeout, MissedTickBehavior};
use tracing::Instrument;

use super::{lock, BackendError, Clock, SharedStateError};
use crate::history::{Event, Recorder};
use crate::id::NodeId;
use crate::registry::{Heartbeat, MembershipChange, NodeRegistry};

/// A node registry the heartbeat task can reach: the I/O half of
/// [`NodeRegistry`]. As with leases, the registry decides `now`.
pub trait RegistryBackend: Send + Sync + 'static {
    /// Records a heartbeat from `node`, with the contract of
    /// [`NodeRegistry::heartbeat`].
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when no answer could be had.
    fn heartbeat(
        &self,
        node: &NodeId,
    ) -> impl Future<Output = Result<Heartbeat, BackendError>> + Send;

    /// The nodes live now, sorted by id.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when no answer could be had.
    fn live_nodes(&self) -> impl Future<Output = Result<Vec<NodeId>, BackendError>> + Send;
}

/// How many membership changes a slow subscriber may fall behind before it
/// misses some (it is told how many, by `RecvError::Lagged`).
const CHANGES_CAPACITY: usize = 64;

const NODE_REGISTRY: &str = "node registry";

/// A [`RegistryBackend`] over one [`NodeRegistry`] shared in the process.
///
/// Membership changes are drained from the registry on every call, logged
/// (`tracing`, info) and broadcast to subscribers
/// ([`subscribe`](InProcessRegistry::subscribe)), so the registry's queue never
/// grows. A departure is noticed at the next
/// call to the registry (any node's heartbeat, or `live_nodes`), and is stamped
/// with the instant the node actually expired.
#[derive(Clone, Debug)]
pub struct InProcessRegistry {
    registry: Arc<Mutex<NodeRegistry>>,
    changes: broadcast::Sender<MembershipChange>,
    clock: Clock,
    recorder: Recorder,
}

impl InProcessRegistry {
    /// Shares `registry`, reading time from `clock`.
    pub fn new(registry: NodeRegistry, clock: Clock) -> Self {
        InProcessRegistry {
            registry: Arc::new(Mutex::new(registry)),
            changes: broadcast::channel(CHANGES_CAPACITY).0,
            clock,
            recorder: Recorder::off(),
        }
    }

    /// Records every join and departure the registry reports
    /// (`member-joined`, `member-left`) into `recorder`. Off by default.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// The clock the registry reads.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Joins and departures from now on, in order.
    pub fn subscribe(&self) -> broadcast::Receiver<MembershipChange> {
        self.changes.subscribe()
    }

    /// Runs `call` on the registry at the clock's now, then publishes the
    /// changes it queued.
    fn with_registry<R>(
        &self,
        call: impl FnOnce(&mut NodeRegistry, crate::Instant) -> R,
    ) -> Result<R, SharedStateError> {
        let now = self.clock.now();
        let mut registry = lock(&self.registry, NODE_REGISTRY)?;
        let result = call(&mut registry, now);
        while let Some(change) = registry.poll_change() {
            match &change {
                MembershipChange::Joined { node, at } => {
                    tracing::info!(%node, %at, "node joined");
                    self.recorder
                        .record(|| Event::MemberJoined { node: node.clone() });
                }
                MembershipChange::Left { node, at } => {
                    tracing::info!(%node, %at, "node left");
                    self.recorder
                        .record(|| Event::MemberLeft { node: node.clone() });
                }
            }
            // No subscriber is fine: the change is logged and dropped.
            let _ = self.changes.send(change);
        }
        Ok(result)
    }
}

impl RegistryBackend for InProcessRegistry {
    async fn heartbeat(&self, node: &NodeId) -> Result<Heartbeat, BackendError> {
        Ok(self.with_registry(|registry, now| registry.heartbeat(node, now))?)
    }

    async fn live_nodes(&self) -> Result<Vec<NodeId>, BackendError> {
        Ok(self.with_registry(|registry, now| {
            registry.handle_timeout(now);
            registry.live_nodes(now).cloned().collect()
        })?)
    }
}

/// Why a [`HeartbeatTask`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeartbeatError {
    /// A zero interval would heartbeat in a busy loop.
    ZeroInterval,
}

impl fmt::Display for HeartbeatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeartbeatError::ZeroInterval => {
                f.write_str("heartbeat interval must be greater than zero")
            }
        }
    }
}

impl std::error::Error for HeartbeatError {}

/// Keeps one node live in a registry: heartbeats at once, then every
/// `interval`, until shut down.
///
/// Pick `interval` well below the registry's liveness TTL (a third of it
/// survives one lost heartbeat). A heartbeat that fails or takes longer than
/// `interval` is logged (`tracing`, warn) and the next one goes out on
/// schedule; the task itself never gives up.
#[derive(Debug)]
pub struct HeartbeatTask<B> {
    backend: B,
    node: NodeId,
    interval: Duration,
    recorder: Recorder,
}

impl<B: RegistryBackend> HeartbeatTask<B> {
    /// A task heartbeating `node` to `backend` every `interval`.
    ///
    /// # Errors
    /// [`HeartbeatError::ZeroInterval`] if `interval` is zero.
    pub fn new(backend: B, node: NodeId, interval: Duration) -> Result<Self, HeartbeatError> {
        if interval.is_zero() {
            return Err(HeartbeatError::ZeroInterval);
        }
        Ok(HeartbeatTask {
            backend,
            node,
            interval,
            recorder: Recorder::off(),
        })
    }

    /// Records each answered heartbeat (`heartbeat-handled`) into
    /// `recorder`. Off by default.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Heartbeats until `shutdown` completes, then returns at once (a
    /// heartbeat in flight is dropped). The node then leaves the registry when
    /// its liveness TTL runs out.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let span = tracing::info_span!("heartbeat", node = %self.node);
        self.beat_until(shutdown).instrument(span).await;
    }

    async fn beat_until(self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = pin!(shutdown);
        let mut ticks = interval(self.interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            let beat = async {
                ticks.tick().await;
                timeout(self.interval, self.backend.heartbeat(&self.node)).await
            };
            let beat = ::tokio::select! {
                biased;
                () = &mut shutdown => return,
                beat = beat => beat,
            };
            if let Ok(Ok(answer)) = &beat {
                let joined = *answer == Heartbeat::Joined;
                self.recorder.record(|| Event::HeartbeatHandled {
                    node: self.node.clone(),
                    joined,
                });
            }
            match beat {
                Ok(Ok(Heartbeat::Joined)) => tracing::debug!("heartbeat: joined"),
                Ok(Ok(Heartbeat::Refreshed)) => tracing::trace!("heartbeat: refreshed"),
                Ok(Err(error)) => tracing::warn!(%error, "heartbeat failed"),
                Err(_) => tracing::warn!(interval = ?self.interval, "heartbeat timed out"),
            }
        }
    }
}
