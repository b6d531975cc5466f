//! [`PostgresStore`]: the lease store on PostgreSQL, and the handle the
//! registry and the fenced table share.

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, NoTls, Row};

use super::clock::{instant_from_database, micros_rounded_up};
use super::connection::{Connection, PostgresTls, Session};
use super::schema::{Sql, MIGRATION_LOCK_KEY, SCHEMA_VERSION};
use super::{
    column, identity_from_database, token_from_database, token_to_database, PostgresError,
    PostgresFencedTable, PostgresOptions, PostgresRegistry,
};
use crate::id::{FencingToken, OwnerId, Role};
use crate::lease::{Lease, LeaseError, LeaseResult, ReleaseResult};
use crate::registry::RegistryError;
use crate::time::Instant;
use crate::tokio::{BackendError, LeaseBackend};

struct Shared {
    connection: Connection,
    sql: Sql,
    options: PostgresOptions,
}

/// Leases on PostgreSQL: a [`LeaseBackend`] for
/// [`LeaseLeaderElector`](crate::tokio::LeaseLeaderElector) that every process
/// pointed at the same database and [`Namespace`](super::Namespace) shares.
///
/// It holds one connection, opened on first use and reopened after a
/// failure; cloning is cheap and shares it (the registry and fenced table made
/// from a store share it too). Call [`migrate`](Self::migrate) once before
/// use (every process may: it is idempotent and serialized).
///
/// The answers follow [`LeaseStore`](crate::LeaseStore) exactly, on the
/// database clock; see the [module documentation](super).
#[derive(Clone)]
pub struct PostgresStore {
    shared: Arc<Shared>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// A store on the database at `url` (`postgres://user:password@host:port/db`
    /// or a `key=value` connection string), without TLS. No I/O happens
    /// until the first call.
    ///
    /// # Errors
    /// [`PostgresError::InvalidUrl`] if `url` does not parse;
    /// [`PostgresError::InvalidOptions`] for a zero timeout.
    pub fn new(url: &str, options: PostgresOptions) -> Result<PostgresStore, PostgresError> {
        let config = Config::from_str(url).map_err(PostgresError::InvalidUrl)?;
        PostgresStore::with_tls(config, NoTls, options)
    }

    /// A store on the database `config` describes, connecting through `tls`
    /// (for example a `postgres-native-tls` or `tokio-postgres-rustls`
    /// connector). The options' connect timeout bounds each whole connect
    /// (a `connect_timeout` in `config` still applies to each host).
    ///
    /// # Errors
    /// [`PostgresError::InvalidOptions`] for a zero timeout.
    pub fn with_tls<T: PostgresTls>(
        config: Config,
        tls: T,
        options: PostgresOptions,
    ) -> Result<PostgresStore, PostgresError> {
        if options.connect_timeout().is_zero() {
            return Err(PostgresError::InvalidOptions {
                problem: "the connect timeout must be greater than zero",
            });
        }
        if options.query_timeout().is_zero() {
            return Err(PostgresError::InvalidOptions {
                problem: "the query timeout must be greater than zero",
            });
        }
        let connection = Connection::new(
            config,
            tls,
            options.connect_timeout(),
            options.query_timeout(),
            options.query_timeout_grace(),
        );
        Ok(PostgresStore {
            shared: Arc::new(Shared {
                connection,
                sql: Sql::new(options.namespace()),
                options,
            }),
        })
    }

    /// The options the store was made with.
    pub fn options(&self) -> &PostgresOptions {
        &self.shared.options
    }

    /// Runs one statement on the store's session (see [`Connection::run`]).
    pub(crate) async fn call<T, F, Fut>(&self, call: F) -> Result<T, PostgresError>
    where
        F: FnOnce(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let shared = &self.shared;
        shared.connection.run(&shared.sql, call).await
    }

    pub(crate) fn now_parameter(&self) -> Option<SystemTime> {
        self.shared.options.time_source().now_parameter()
    }

    /// Creates (or completes) the schema, tables and functions in the
    /// store's namespace. Idempotent, and safe to run from many processes at
    /// once: migrations of one database take turns on an advisory lock, in
    /// one transaction each, on a connection of their own. A schema already
    /// at this crate's version is left untouched.
    ///
    /// # Errors
    /// [`PostgresError::SchemaTooNew`] if a newer crate migrated the schema;
    /// connection and statement errors otherwise (nothing is half-created:
    /// the transaction rolls back).
    pub async fn migrate(&self) -> Result<(), PostgresError> {
        let sql = &self.shared.sql;
        let (mut client, _task) = self.shared.connection.open().await?;
        let transaction = client.transaction().await.map_err(PostgresError::Query)?;
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
            .await
            .map_err(PostgresError::Query)?;
        let exists: Option<String> = transaction
            .query_one("SELECT to_regclass($1)::text", &[&sql.version_table])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(PostgresError::Query)?;
        if exists.is_some() {
            let found: Option<i32> = transaction
                .query_opt(&sql.read_version, &[])
                .await
                .and_then(|row| row.map(|row| row.try_get(0)).transpose())
                .map_err(PostgresError::Query)?;
            match found {
                Some(found) if found > SCHEMA_VERSION => {
                    return Err(PostgresError::SchemaTooNew {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                Some(found) if found == SCHEMA_VERSION => {
                    transaction.commit().await.map_err(PostgresError::Query)?;
                    tracing::debug!(namespace = %self.shared.options.namespace(), "schema up to date");
                    return Ok(());
                }
                _ => {}
            }
        }
        transaction
            .batch_execute(&sql.migration)
            .await
            .map_err(PostgresError::Query)?;
        transaction
            .execute(&sql.write_version, &[&SCHEMA_VERSION])
            .await
            .map_err(PostgresError::Query)?;
        transaction.commit().await.map_err(PostgresError::Query)?;
        tracing::info!(namespace = %self.shared.options.namespace(), version = SCHEMA_VERSION, "schema migrated");
        Ok(())
    }

    /// A node registry in this store's namespace, sharing its connection.
    /// Heartbeats sent through it keep a node live for `liveness_ttl` on the
    /// database clock.
    ///
    /// # Errors
    /// [`RegistryError::ZeroLivenessTtl`] if `liveness_ttl` is zero.
    pub fn registry(&self, liveness_ttl: Duration) -> Result<PostgresRegistry, RegistryError> {
        PostgresRegistry::new(self.clone(), liveness_ttl)
    }

    /// The fenced table of this store's namespace, sharing its connection.
    pub fn fenced_table(&self) -> PostgresFencedTable {
        PostgresFencedTable::new(self.clone())
    }

    /// The live holder of `role` now (database clock), if any; for tests and
    /// dashboards.
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn holder(&self, role: &Role) -> Result<Option<Lease>, PostgresError> {
        let now = self.now_parameter();
        let row = self
            .call(|session| async move {
                let statement = &session.statements.holder;
                session
                    .client
                    .query_opt(statement, &[&role.as_str(), &now])
                    .await
            })
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let owner: &str = column(&row, 0)?;
        Ok(Some(Lease {
            owner: identity_from_database::<OwnerId>(owner)?,
            token: token_from_database(column(&row, 1)?, "token")?,
            expires_at: instant_from_database(column(&row, 2)?)?,
        }))
    }

    /// The highest token `role` has ever been granted, live or not.
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn highest_token(&self, role: &Role) -> Result<Option<FencingToken>, PostgresError> {
        let highest: Option<i64> = self
            .call(|session| async move {
                let statement = &session.statements.highest_token;
                let row = session
                    .client
                    .query_opt(statement, &[&role.as_str()])
                    .await?;
                row.map(|row| row.try_get(0)).transpose()
            })
            .await?;
        match highest {
            None | Some(0) => Ok(None),
            Some(value) => token_from_database(value, "highest").map(Some),
        }
    }

    /// The I/O of [`LeaseBackend::acquire_or_renew`], with bad input and
    /// database failures kept apart.
    async fn try_acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<Result<LeaseResult, LeaseError>, PostgresError> {
        // Bad input is refused before any I/O, in the pure store's order.
        if ttl.is_zero() {
            return Ok(Err(LeaseError::ZeroTtl));
        }
        let max = self.shared.options.lease_config().max_ttl();
        if ttl > max {
            return Ok(Err(LeaseError::TtlAboveMaximum { ttl, max }));
        }
        let Some(ttl_micros) = micros_rounded_up(ttl) else {
            return Ok(Err(LeaseError::TimeOverflow));
        };
        let now = self.now_parameter();
        let row = self
            .call(|session| async move {
                let statement = &session.statements.acquire_or_renew;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&role.as_str(), &owner.as_str(), &ttl_micros, &now];
                session.client.query_one(statement, &params).await
            })
            .await;
        match row {
            Ok(row) => lease_result(&row),
            // `now + ttl` beyond PostgreSQL's timestamps (year 294276).
            Err(PostgresError::Query(error))
                if error.code() == Some(&SqlState::DATETIME_FIELD_OVERFLOW) =>
            {
                Ok(Err(LeaseError::TimeOverflow))
            }
            Err(error) => Err(error),
        }
    }
}

/// Reads the row of the acquire-or-renew function.
fn lease_result(row: &Row) -> Result<Result<LeaseResult, LeaseError>, PostgresError> {
    let outcome: &str = column(row, 0)?;
    if outcome == "exhausted" {
        return Ok(Err(LeaseError::TokensExhausted));
    }
    let holder: &str = column(row, 1)?;
    let token = token_from_database(column(row, 2)?, "token")?;
    let expires_at = instant_from_database(column(row, 3)?)?;
    Ok(Ok(match outcome {
        "granted" => LeaseResult::Granted { token, expires_at },
        "renewed" => LeaseResult::Renewed { token, expires_at },
        "held" => LeaseResult::Held {
            holder: Lease {
                owner: identity_from_database::<OwnerId>(holder)?,
                token,
                expires_at,
            },
        },
        other => {
            return Err(PostgresError::Corrupt {
                detail: format!("acquire_or_renew answered {other:?}"),
            })
        }
    }))
}

impl LeaseBackend for PostgresStore {
    /// One call of the `acquire_or_renew` SQL function: the pure store's
    /// contract on the database clock. TTLs are rounded up to whole
    /// microseconds.
    async fn acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<LeaseResult, BackendError> {
        self.try_acquire_or_renew(role, owner, ttl)
            .await?
            .map_err(BackendError::Rejected)
    }

    /// One call of the `release_dated` SQL function: frees the lease only if
    /// `owner` holds it live with `token`.
    async fn release(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> Result<ReleaseResult, BackendError> {
        Ok(self.release_dated(role, owner, token).await?.0)
    }

    /// [`release`](LeaseBackend::release), dated by the database clock the
    /// function read behind the role's lock — the clock that dates grants
    /// and renewals (`expires_at − ttl`).
    async fn release_dated(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> Result<(ReleaseResult, Option<Instant>), BackendError> {
        let Ok(token) = token_to_database(token) else {
            // The store never issues such a token, so nobody holds it.
            return Ok((ReleaseResult::NotHeld, None));
        };
        let now = self.now_parameter();
        let (released, at): (bool, SystemTime) = self
            .call(|session| async move {
                let statement = &session.statements.release;
                let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                    [&role.as_str(), &owner.as_str(), &token, &now];
                let row = session.client.query_one(statement, &params).await?;
                Ok((row.try_get(0)?, row.try_get(1)?))
            })
            .await?;
        let result = if released {
            ReleaseResult::Released
        } else {
            ReleaseResult::NotHeld
        };
        Ok((result, Some(instant_from_database(at)?)))
    }
}
