//! The unfenced downstream of a node: an append-only table that stores
//! every write, and numbers it (its row id) in the database's order.
//!
//! Its connection is kept as `fenced::postgres` keeps a store's (and as the
//! simulator models both, `sim/src/hosts/session.rs`): opened on first use
//! and bounded by the connect timeout, its statement timeout set and its
//! insert prepared once (so each write is one round trip), writes pipelined
//! on it, each bounded by the query timeout plus its grace, and the session
//! retired when a write outlives that bound or finds it closed. (Its open
//! costs four round trips where the fenced store's costs five — the fenced
//! store prepares two batches of statements; at the lab's loopback
//! latencies the difference is far below a millisecond.)

use std::sync::Arc;
use std::time::Duration;

use fenced::postgres::tokio_postgres::{self, Client, NoTls, Statement};
use fenced::{FencingToken, OwnerId, ResourceId};
use tokio::sync::Mutex;

use super::errors::WriteError;

/// An open connection with its prepared insert; its I/O task is aborted
/// when the session is dropped.
pub(super) struct PlainSession {
    client: Client,
    insert: Statement,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PlainSession {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The unfenced downstream: an append-only table that accepts every write.
pub(super) struct PlainTable {
    pub(super) url: String,
    pub(super) insert: String,
    pub(super) connect_timeout: Duration,
    /// The server's statement timeout.
    pub(super) query_timeout: Duration,
    /// The client's bound on one call: the query timeout plus its grace.
    pub(super) query_bound: Duration,
    pub(super) session: Mutex<Option<Arc<PlainSession>>>,
}

impl PlainTable {
    /// The open session, or a new one (one caller opens; the others wait
    /// for it, as `fenced::postgres`'s connection does).
    async fn session(&self) -> Result<Arc<PlainSession>, WriteError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.client.is_closed()) {
            return Ok(Arc::clone(session));
        }
        *slot = None;
        let connecting = tokio_postgres::connect(&self.url, NoTls);
        let (client, connection) = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| WriteError::ConnectTimedOut)?
            .map_err(WriteError::Connect)?;
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        let millis = self.query_timeout.as_millis().clamp(1, i32::MAX as u128);
        let setup = format!("SET statement_timeout = {millis}");
        tokio::time::timeout(self.query_bound, client.batch_execute(&setup))
            .await
            .map_err(|_| WriteError::InsertTimedOut)?
            .map_err(WriteError::Connect)?;
        let insert = tokio::time::timeout(self.query_bound, client.prepare(&self.insert))
            .await
            .map_err(|_| WriteError::InsertTimedOut)?
            .map_err(WriteError::Connect)?;
        let session = Arc::new(PlainSession {
            client,
            insert,
            task,
        });
        *slot = Some(Arc::clone(&session));
        Ok(session)
    }

    /// Drops `session` if it is still the current one.
    async fn retire(&self, session: &Arc<PlainSession>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
            *slot = None;
        }
    }

    /// Inserts the write; its row id, drawn by the insert itself, is the
    /// database's order of the writes.
    pub(super) async fn write(
        &self,
        resource: &ResourceId,
        token: FencingToken,
        writer: &OwnerId,
        payload: &[u8],
    ) -> Result<u64, WriteError> {
        let token = i64::try_from(token.get()).map_err(|_| WriteError::TokenTooBig)?;
        let session = self.session().await?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&resource.as_str(), &token, &writer.as_str(), &payload];
        let insert = session.client.query_one(&session.insert, &params);
        match tokio::time::timeout(self.query_bound, insert).await {
            // The row's id is the database's order of the inserts: drawn
            // from the table's sequence by the insert itself.
            Ok(Ok(row)) => row
                .try_get::<_, i64>(0)
                .ok()
                .and_then(|id| u64::try_from(id).ok())
                .ok_or(WriteError::NoId),
            Ok(Err(error)) => {
                if error.is_closed() {
                    self.retire(&session).await;
                }
                Err(WriteError::Insert(error))
            }
            Err(_) => {
                self.retire(&session).await;
                Err(WriteError::InsertTimedOut)
            }
        }
    }
}
