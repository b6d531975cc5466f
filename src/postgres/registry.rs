//! [`PostgresRegistry`]: cluster membership from heartbeats in a table.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{column, identity_from_database, PostgresError, PostgresStore};
use crate::history::Event;
use crate::id::NodeId;
use crate::registry::{Heartbeat, RegistryError};
use crate::tokio::{BackendError, RegistryBackend};

/// A node registry on PostgreSQL: a [`RegistryBackend`] for
/// [`HeartbeatTask`](crate::tokio::HeartbeatTask).
///
/// A heartbeat stores `expires_at = now + liveness_ttl` (database clock) for
/// its node; a node is live while the database clock is before that, as in
/// [`NodeRegistry`](crate::NodeRegistry). Each heartbeat also deletes nodes
/// that expired, so the table stays the size of the live set. Give every
/// process the same liveness TTL: each heartbeat uses its sender's.
///
/// One difference from the pure registry: its clock never runs backwards as
/// a whole; here each *node's* last heartbeat never moves backwards (a
/// registry-wide high-water mark would make every heartbeat of the cluster
/// update one row). Membership changes are not queued; compare successive
/// [`live_nodes`](RegistryBackend::live_nodes) answers for joins and
/// departures.
#[derive(Clone, Debug)]
pub struct PostgresRegistry {
    store: PostgresStore,
    liveness_ttl: Duration,
    /// The TTL in whole microseconds (rounded up, saturated).
    ttl_micros: i64,
    /// The last answer of `live_nodes`, when a history is recorded: joins
    /// and departures are the differences between successive answers.
    last_live: Arc<Mutex<Option<BTreeSet<NodeId>>>>,
}

impl PostgresRegistry {
    pub(crate) fn new(
        store: PostgresStore,
        liveness_ttl: Duration,
    ) -> Result<PostgresRegistry, RegistryError> {
        if liveness_ttl.is_zero() {
            return Err(RegistryError::ZeroLivenessTtl);
        }
        let ttl_micros = super::clock::micros_rounded_up(liveness_ttl).unwrap_or(i64::MAX);
        Ok(PostgresRegistry {
            store,
            liveness_ttl,
            ttl_micros,
            last_live: Arc::new(Mutex::new(None)),
        })
    }

    /// How long a heartbeat keeps its node live.
    pub fn liveness_ttl(&self) -> Duration {
        self.liveness_ttl
    }

    /// Records a heartbeat from `node` (see [`RegistryBackend::heartbeat`]).
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn try_heartbeat(&self, node: &NodeId) -> Result<Heartbeat, PostgresError> {
        let now = self.store.now_parameter();
        let ttl_micros = self.ttl_micros;
        let joined: bool = self
            .store
            .call(|session| async move {
                let statement = &session.statements.heartbeat;
                session
                    .client
                    .query_one(statement, &[&node.as_str(), &ttl_micros, &now])
                    .await?
                    .try_get(0)
            })
            .await?;
        if joined {
            let recorder = self.store.options().recorder();
            recorder.record(|| Event::MemberJoined { node: node.clone() });
        }
        Ok(if joined {
            Heartbeat::Joined
        } else {
            Heartbeat::Refreshed
        })
    }

    /// The nodes live now (database clock), sorted by id (byte order, like
    /// [`NodeId`]'s `Ord`: the columns use the `C` collation).
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn try_live_nodes(&self) -> Result<Vec<NodeId>, PostgresError> {
        let now = self.store.now_parameter();
        let rows = self
            .store
            .call(|session| async move {
                let statement = &session.statements.live_nodes;
                session.client.query(statement, &[&now]).await
            })
            .await?;
        let live: Vec<NodeId> = rows
            .iter()
            .map(|row| {
                let node: &str = column(row, 0)?;
                identity_from_database::<NodeId>(node)
            })
            .collect::<Result<_, _>>()?;
        self.record_changes(&live);
        Ok(live)
    }

    /// With a history recorded: `member-joined` and `member-left` for the
    /// differences from the previous answer (none for the first).
    fn record_changes(&self, live: &[NodeId]) {
        let recorder = self.store.options().recorder();
        if !recorder.is_on() {
            return;
        }
        let Ok(mut last) = self.last_live.lock() else {
            return;
        };
        let now: BTreeSet<NodeId> = live.iter().cloned().collect();
        if let Some(before) = last.as_ref() {
            for node in before.difference(&now) {
                recorder.record(|| Event::MemberLeft { node: node.clone() });
            }
            for node in now.difference(before) {
                recorder.record(|| Event::MemberJoined { node: node.clone() });
            }
        }
        *last = Some(now);
    }
}

impl RegistryBackend for PostgresRegistry {
    async fn heartbeat(&self, node: &NodeId) -> Result<Heartbeat, BackendError> {
        Ok(self.try_heartbeat(node).await?)
    }

    async fn live_nodes(&self) -> Result<Vec<NodeId>, BackendError> {
        Ok(self.try_live_nodes().await?)
    }
}
