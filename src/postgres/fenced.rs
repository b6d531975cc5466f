//! [`PostgresFencedTable`]: a downstream table that fences its writers.

use std::time::SystemTime;

use super::clock::instant_from_database;
use super::{
    column, identity_from_database, token_from_database, token_to_database, PostgresError,
    PostgresStore,
};
use crate::fenced_store::WriteOutcome;
use crate::history::Event;
use crate::id::{FencingToken, OwnerId, ResourceId};
use crate::time::Instant;

/// What the fenced table holds for one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedRecord {
    /// The highest token accepted.
    pub highest: FencingToken,
    /// The writer that token is bound to.
    pub writer: OwnerId,
    /// The payload of the last accepted write.
    pub payload: Vec<u8>,
    /// How many writes were accepted.
    pub accepted: u64,
    /// When the last accepted write happened (database clock).
    pub last_write_at: Instant,
}

/// A fenced write's outcome and the database's number for the decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Accepted or rejected.
    pub outcome: WriteOutcome,
    /// The decision's number: on one resource, a later decision has a
    /// larger number (drawn from a sequence under the row's lock, in the
    /// write's own statement); numbers skip (a rolled-back write uses one)
    /// and order decisions of different resources only as some valid
    /// serial order.
    pub number: u64,
}

/// The fenced downstream store on PostgreSQL: one row per resource, written
/// only by the holder of the highest token, with the contract of
/// [`FencedStore::write`](crate::FencedStore::write) (fencing enforced).
///
/// The fence is a single `INSERT … ON CONFLICT DO UPDATE … WHERE` statement:
/// the token comparison and the write happen together under the row's lock,
/// so a writer that stalled between its leadership check and its write is
/// rejected however late it wakes. Fence your own tables the same way: keep
/// the highest token in the row and make every write
/// `UPDATE t SET …, token = $token WHERE key = $key AND token <= $token`
/// (plus the writer check, if one token must mean one writer), never a read
/// followed by a write.
#[derive(Clone, Debug)]
pub struct PostgresFencedTable {
    store: PostgresStore,
}

impl PostgresFencedTable {
    pub(crate) fn new(store: PostgresStore) -> PostgresFencedTable {
        PostgresFencedTable { store }
    }

    /// Writes `payload` to `resource` for `writer` holding `token`: accepted
    /// when `token` is at least the highest accepted (and, if equal, `writer`
    /// is the one it is bound to); otherwise rejected, with the highest token
    /// or the writer it is bound to. The first write to a resource is always
    /// accepted. A rejection is an outcome, not an error.
    ///
    /// # Errors
    /// Connection and statement errors; [`PostgresError::TokenOutOfRange`]
    /// for a token above `i64::MAX`.
    pub async fn write(
        &self,
        resource: &ResourceId,
        token: FencingToken,
        writer: &OwnerId,
        payload: &[u8],
    ) -> Result<WriteOutcome, PostgresError> {
        let decided = self.write_decided(resource, token, writer, payload).await?;
        Ok(decided.outcome)
    }

    /// [`write`](Self::write), with the database's number for the decision
    /// (see [`Decision`]). A recorder, if the store has one, records the
    /// number with the answer (`write-handled`'s `decision`), so that
    /// `check-history` orders the decisions as the database made them even
    /// when writers record their answers in another order.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub async fn write_decided(
        &self,
        resource: &ResourceId,
        token: FencingToken,
        writer: &OwnerId,
        payload: &[u8],
    ) -> Result<Decision, PostgresError> {
        let token_value = token_to_database(token)?;
        let now = self.store.now_parameter();
        let row = self
            .store
            .call(|session| async move {
                let statement = &session.statements.fenced_write;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
                    &resource.as_str(),
                    &token_value,
                    &writer.as_str(),
                    &payload,
                    &now,
                ];
                session.client.query_one(statement, &params).await
            })
            .await?;
        let outcome: &str = column(&row, 0)?;
        let highest = token_from_database(column(&row, 1)?, "highest")?;
        let bound_to: &str = column(&row, 2)?;
        let number: i64 = column(&row, 3)?;
        let number = u64::try_from(number).map_err(|_| PostgresError::Corrupt {
            detail: format!("fenced_write_ordered numbered a decision {number}"),
        })?;
        let outcome = match outcome {
            "accepted" => WriteOutcome::Accepted,
            "stale" => {
                tracing::warn!(%resource, %writer, stale = token.get(), highest = highest.get(),
                    "write rejected: stale fencing token");
                WriteOutcome::RejectedStale {
                    stale: token,
                    highest,
                }
            }
            "wrong_writer" => {
                let bound_to = identity_from_database::<OwnerId>(bound_to)?;
                tracing::error!(%resource, %writer, token = token.get(), %bound_to,
                    "write rejected: token bound to another writer (the lease layer is broken)");
                WriteOutcome::RejectedWrongWriter { token, bound_to }
            }
            other => {
                return Err(PostgresError::Corrupt {
                    detail: format!("fenced_write answered {other:?}"),
                })
            }
        };
        self.store
            .options()
            .recorder()
            .record(|| Event::write_handled(writer, token, None, &outcome).with_decision(number));
        Ok(Decision { outcome, number })
    }

    /// What the table holds for `resource`, or `None` before its first write.
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn read(&self, resource: &ResourceId) -> Result<Option<FencedRecord>, PostgresError> {
        let row = self
            .store
            .call(|session| async move {
                let statement = &session.statements.fenced_read;
                session
                    .client
                    .query_opt(statement, &[&resource.as_str()])
                    .await
            })
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let writer: &str = column(&row, 1)?;
        let accepted: i64 = column(&row, 3)?;
        let last_write_at: SystemTime = column(&row, 4)?;
        Ok(Some(FencedRecord {
            highest: token_from_database(column(&row, 0)?, "highest")?,
            writer: identity_from_database::<OwnerId>(writer)?,
            payload: column(&row, 2)?,
            accepted: u64::try_from(accepted).map_err(|_| PostgresError::Corrupt {
                detail: format!("accepted is {accepted}"),
            })?,
            last_write_at: instant_from_database(last_write_at)?,
        }))
    }
}
