//! The unfenced downstream of a node: an append-only table that stores
//! every write, and numbers it (its row id) in the database's order.

use std::time::Duration;

use fenced::postgres::tokio_postgres::{self, Client, NoTls};
use fenced::{FencingToken, OwnerId, ResourceId};
use tokio::sync::Mutex;

use super::errors::WriteError;

/// The unfenced downstream: an append-only table that accepts every write.
pub(super) struct PlainTable {
    pub(super) url: String,
    pub(super) insert: String,
    pub(super) timeout: Duration,
    pub(super) client: Mutex<Option<Client>>,
}

impl PlainTable {
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
        let mut client = self.client.lock().await;
        if client.as_ref().is_none_or(Client::is_closed) {
            let connecting = tokio_postgres::connect(&self.url, NoTls);
            let (fresh, connection) = tokio::time::timeout(self.timeout, connecting)
                .await
                .map_err(|_| WriteError::ConnectTimedOut)?
                .map_err(WriteError::Connect)?;
            tokio::spawn(connection);
            *client = Some(fresh);
        }
        let Some(connected) = client.as_ref() else {
            return Err(WriteError::NoConnection);
        };
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&resource.as_str(), &token, &writer.as_str(), &payload];
        let result = tokio::time::timeout(self.timeout, connected.query_one(&self.insert, &params));
        match result.await {
            // The row's id is the database's order of the inserts: drawn
            // from the table's sequence by the insert itself.
            Ok(Ok(row)) => row
                .try_get::<_, i64>(0)
                .ok()
                .and_then(|id| u64::try_from(id).ok())
                .ok_or(WriteError::NoId),
            Ok(Err(error)) => {
                *client = None;
                Err(WriteError::Insert(error))
            }
            Err(_) => {
                *client = None;
                Err(WriteError::InsertTimedOut)
            }
        }
    }
}
