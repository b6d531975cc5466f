//! The lease store's clock for real: what a `clock-jump`, `clock-strobe` or
//! `clock-slew` of `lease-store` moves in a real run.
//!
//! The fenced protocol's PostgreSQL backend reads one clock for every
//! decision: `clock_timestamp()`, unqualified, in its SQL functions and
//! statements (`src/postgres/schema.rs`: `coalesce(p_now,
//! clock_timestamp())`). An NTP step of the database host moves that clock.
//! The lab cannot step the machine's clock — the PostgreSQL server and the
//! machine are shared with everything else — so it moves **the clock the
//! store's SQL reads** instead:
//!
//! * the run's schema gets a function `clock_timestamp()` of its own: the
//!   server's `pg_catalog.clock_timestamp()` plus an offset kept in a
//!   one-row table, [`CLOCK_TABLE`] — a constant after a step, a linear ramp
//!   during a slew;
//! * the lease store's connections (each node's lease-store and registry
//!   connection, through its proxy) set `search_path` to the run's schema
//!   *before* `pg_catalog` ([`search_path_option`]), so every unqualified
//!   `clock_timestamp()` the store's SQL calls resolves to that function —
//!   PostgreSQL searches `pg_catalog` first only when the path does not name
//!   it (the `search_path` documentation, "Schemas: the schema search path");
//! * the runner changes the offset at the fault's instant with one `UPDATE`
//!   ([`StoreClock::step`], [`StoreClock::slew`]), timed; the stores see the
//!   new clock on their next statement.
//!
//! So the production SQL runs unchanged and reads a stepped clock, exactly
//! where an NTP step would reach it; what the lab does not move is the rest
//! of the database host's clock (PostgreSQL's own timeouts, the kernel's),
//! which the fenced protocol does not read either. A backward step is
//! clamped per role by the SQL itself (`greatest(clock, latest_now)`), as
//! the simulator's store clamps it. The downstream's connections keep the
//! ordinary path: the fenced table reads no clock.
//!
//! A run without a clock fault of the lease store installs nothing and sets
//! no `search_path`.

use std::fmt;
use std::time::{Duration, Instant};

use fenced::postgres::tokio_postgres::types::ToSql;
use fenced::postgres::tokio_postgres::Client;

use crate::schema::{connect, SchemaError, STATEMENT_TIMEOUT};

/// The one-row table that holds the store clock's offset.
pub const CLOCK_TABLE: &str = "lab_store_clock";

/// The `options` connection parameter that makes the store's SQL read the
/// run's clock function: `-c search_path=<schema>,pg_catalog`.
pub fn search_path_option(schema: &str) -> String {
    format!("-c search_path={schema},pg_catalog")
}

/// The SQL that creates the offset table and the clock function in schema
/// `schema`.
///
/// The offset at server time `t` is `offset_then + (least(greatest(t,
/// since), until) - since) * rate`: constant (`rate` 0) after a step, a ramp
/// from `since` to `until` during a slew, constant again after it.
pub fn install_sql(schema: &str) -> String {
    format!(
        "CREATE TABLE \"{schema}\".{CLOCK_TABLE} (
             only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
             offset_then interval NOT NULL DEFAULT interval '0',
             since timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
             until timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
             rate float8 NOT NULL DEFAULT 0);
         INSERT INTO \"{schema}\".{CLOCK_TABLE} DEFAULT VALUES;
         CREATE FUNCTION \"{schema}\".lab_clock_offset(t timestamptz) RETURNS interval
             LANGUAGE sql VOLATILE AS $$
             SELECT c.offset_then
                 + (least(greatest(t, c.since), c.until) - c.since) * c.rate
             FROM \"{schema}\".{CLOCK_TABLE} c $$;
         CREATE FUNCTION \"{schema}\".clock_timestamp() RETURNS timestamptz
             LANGUAGE sql VOLATILE AS $$
             SELECT n.t + \"{schema}\".lab_clock_offset(n.t)
             FROM (SELECT pg_catalog.clock_timestamp() AS t) n $$;"
    )
}

/// The statement that begins a new segment at the server's time now: the
/// offset where the current one stands, plus `$1` µs, ramping at `$3` for
/// `$2` µs.
fn update_sql(schema: &str) -> String {
    format!(
        "UPDATE \"{schema}\".{CLOCK_TABLE} c SET
             offset_then = \"{schema}\".lab_clock_offset(n.t) + $1::bigint * interval '1 microsecond',
             since = n.t,
             until = n.t + $2::bigint * interval '1 microsecond',
             rate = $3::float8
         FROM (SELECT pg_catalog.clock_timestamp() AS t) n
         RETURNING extract(epoch FROM \"{schema}\".lab_clock_offset(pg_catalog.clock_timestamp()))::float8"
    )
}

/// The runner's handle on the store's clock: a connection of its own.
pub struct StoreClock {
    client: Client,
    update: String,
}

impl fmt::Debug for StoreClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreClock").finish_non_exhaustive()
    }
}

/// What one change of the store's clock did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockChange {
    /// The clock's offset from the server's own right after, in seconds.
    pub offset_secs: f64,
    /// How long the `UPDATE` took, from the runner's call to its answer.
    pub took: Duration,
}

impl StoreClock {
    /// Connects to `url` (directly, not through a proxy: the runner is not
    /// a node) for schema `schema`, whose clock [`install_sql`] installed.
    ///
    /// # Errors
    /// [`SchemaError::Connect`].
    pub async fn connect(url: &str, schema: &str) -> Result<StoreClock, SchemaError> {
        Ok(StoreClock {
            client: connect(url).await?,
            update: update_sql(schema),
        })
    }

    /// Steps the clock by `by_nanos` (rounded to PostgreSQL's microseconds).
    ///
    /// # Errors
    /// [`SchemaError::Statement`].
    pub async fn step(&self, by_nanos: i64) -> Result<ClockChange, SchemaError> {
        self.change(micros(by_nanos), 0, 0.0).await
    }

    /// Begins to slew the clock by `by_nanos` over `over`, from where it
    /// stands (a slew under way is folded in where it has got to).
    ///
    /// # Errors
    /// [`SchemaError::Statement`].
    pub async fn slew(&self, by_nanos: i64, over: Duration) -> Result<ClockChange, SchemaError> {
        let over_us = i64::try_from(over.as_micros()).unwrap_or(i64::MAX).max(1);
        let rate = by_nanos as f64 / (over_us as f64 * 1_000.0);
        self.change(0, over_us, rate).await
    }

    #[allow(clippy::disallowed_methods)] // Timing the real statement is the point.
    async fn change(
        &self,
        step_us: i64,
        over_us: i64,
        rate: f64,
    ) -> Result<ClockChange, SchemaError> {
        let started = Instant::now();
        let parameters: [&(dyn ToSql + Sync); 3] = [&step_us, &over_us, &rate];
        let query = self.client.query_one(&self.update, &parameters);
        let row = match tokio::time::timeout(STATEMENT_TIMEOUT, query).await {
            Ok(Ok(row)) => row,
            Ok(Err(error)) => {
                return Err(SchemaError::Statement {
                    what: "move the lease store's clock".to_string(),
                    error: error.to_string(),
                })
            }
            Err(_) => {
                return Err(SchemaError::Statement {
                    what: "move the lease store's clock".to_string(),
                    error: format!("no answer within {STATEMENT_TIMEOUT:?}"),
                })
            }
        };
        Ok(ClockChange {
            offset_secs: row.get(0),
            took: started.elapsed(),
        })
    }
}

/// Nanoseconds as whole microseconds, rounded to nearest.
fn micros(nanos: i64) -> i64 {
    let rounded = i128::from(nanos) + if nanos < 0 { -500 } else { 500 };
    i64::try_from(rounded / 1_000).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_to_the_database_s_microseconds() {
        assert_eq!(micros(40_000_000_000), 40_000_000);
        assert_eq!(micros(1_499), 1);
        assert_eq!(micros(1_500), 2);
        assert_eq!(micros(-1_500), -2);
        assert_eq!(micros(-499), 0);
    }

    #[test]
    fn the_search_path_names_the_run_s_schema_before_pg_catalog() {
        // pg_catalog must be named, after the schema: left out, PostgreSQL
        // searches it first and the run's clock function is never found.
        assert_eq!(
            search_path_option("fenced_lab_1_0"),
            "-c search_path=fenced_lab_1_0,pg_catalog"
        );
        let sql = install_sql("fenced_lab_1_0");
        assert!(
            sql.contains("\"fenced_lab_1_0\".clock_timestamp()"),
            "{sql}"
        );
        assert!(sql.contains("pg_catalog.clock_timestamp() AS t"), "{sql}");
    }
}
