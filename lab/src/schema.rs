//! The run's own PostgreSQL schema: created by the run, dropped by it, and
//! no other schema ever touched.
//!
//! A run's leases, registry, fenced table and plain table live in a schema
//! named `fenced_lab_<runner pid>_<n>`. It is created with a plain
//! `CREATE SCHEMA` — never `IF NOT EXISTS` — so a schema that already exists
//! (another run's, a user's) makes the creation fail and the next `n` is
//! tried: the run only ever drops a schema it created itself. The fenced
//! tables are then migrated into it ([`PostgresStore::migrate`]), and the
//! plain table of unfenced runs, `lab_plain_writes`, and the connection
//! lock's term sequence, `lab_lock_terms`, are added.
//!
//! [`RunSchema::drop_schema`] drops it at the end of the run. If the run
//! panics first, `Drop` drops it from a thread of its own (a destructor
//! cannot await), bounded by [`DROP_TIMEOUT`].

use std::fmt;
use std::time::Duration;

use fenced::postgres::tokio_postgres::{self, Client, NoTls};
use fenced::postgres::{Namespace, PostgresError, PostgresOptions, PostgresStore};

/// How long connecting and each statement of the set-up and clean-up may
/// take.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the destructor's fallback drop may take.
pub const DROP_TIMEOUT: Duration = Duration::from_secs(10);
/// How many names are tried before giving up.
const ATTEMPTS: u32 = 16;
/// The plain (unfenced) table's name.
pub const PLAIN_TABLE: &str = "lab_plain_writes";
/// The sequence that numbers a connection lock's terms: a holder draws the
/// next value in the statement that takes the lock (`lab/src/node_lock.rs`),
/// so terms are numbered in the order the server granted the lock, as the
/// simulator numbers a tokenless design's terms in the order they begin.
pub const LOCK_TERMS: &str = "lab_lock_terms";

/// Why the schema could not be set up or dropped.
#[derive(Debug)]
pub enum SchemaError {
    /// Connecting to PostgreSQL failed or timed out.
    Connect(String),
    /// A statement failed or timed out.
    Statement {
        /// What was being done.
        what: String,
        /// Why it failed.
        error: String,
    },
    /// Every candidate name already exists.
    NoFreeName,
    /// Migrating the fenced tables failed.
    Migrate(PostgresError),
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Connect(error) => write!(f, "cannot connect to PostgreSQL: {error}"),
            SchemaError::Statement { what, error } => write!(f, "{what}: {error}"),
            SchemaError::NoFreeName => write!(
                f,
                "{ATTEMPTS} schema names fenced_lab_{}_* already exist; drop stale ones",
                std::process::id()
            ),
            SchemaError::Migrate(error) => write!(f, "cannot create the fenced tables: {error}"),
        }
    }
}

impl std::error::Error for SchemaError {}

/// A driver error with its causes.
fn chain(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Connects a plain client, bounded.
///
/// # Errors
/// [`SchemaError::Connect`].
pub async fn connect(url: &str) -> Result<Client, SchemaError> {
    let connecting = tokio_postgres::connect(url, NoTls);
    let (client, connection) = tokio::time::timeout(STATEMENT_TIMEOUT, connecting)
        .await
        .map_err(|_| SchemaError::Connect(format!("no connection within {STATEMENT_TIMEOUT:?}")))?
        .map_err(|error| SchemaError::Connect(chain(&error)))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

async fn execute(client: &Client, what: &str, sql: &str) -> Result<(), SchemaError> {
    match tokio::time::timeout(STATEMENT_TIMEOUT, client.batch_execute(sql)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(SchemaError::Statement {
            what: what.to_string(),
            error: chain(&error),
        }),
        Err(_) => Err(SchemaError::Statement {
            what: what.to_string(),
            error: format!("no answer within {STATEMENT_TIMEOUT:?}"),
        }),
    }
}

/// The run's schema. Drop it with [`drop_schema`](Self::drop_schema).
#[derive(Debug)]
pub struct RunSchema {
    url: String,
    namespace: Namespace,
    dropped: bool,
}

impl RunSchema {
    /// Creates a schema of the run's own in the database at `url`, with the
    /// fenced tables and the plain table in it.
    ///
    /// # Errors
    /// Connection, statement and migration errors; a schema created before
    /// the failure is dropped again (by `Drop`).
    pub async fn create(url: &str) -> Result<RunSchema, SchemaError> {
        let client = connect(url).await?;
        let mut created = None;
        for attempt in 0..ATTEMPTS {
            let name = format!("fenced_lab_{}_{attempt}", std::process::id());
            let sql = format!("CREATE SCHEMA \"{name}\"");
            match execute(&client, "create the run's schema", &sql).await {
                Ok(()) => {
                    created = Some(name);
                    break;
                }
                Err(SchemaError::Statement { error, .. }) if error.contains("already exists") => {}
                Err(error) => return Err(error),
            }
        }
        let name = created.ok_or(SchemaError::NoFreeName)?;
        // The runner's mark, so that a later run can tell the schema of a
        // runner that is gone (crate::stale_schemas). Without /proc there is
        // no mark, and the schema is never judged stale.
        if let Ok(me) = crate::stale_schemas::RunnerId::this_process() {
            let marker = me.marker().replace('\'', "''");
            let sql = format!("COMMENT ON SCHEMA \"{name}\" IS '{marker}'");
            if let Err(error) = execute(&client, "mark the run's schema", &sql).await {
                let _ = drop_named(url, &name).await;
                return Err(error);
            }
        }
        let namespace = Namespace::new(&name, "").map_err(|error| SchemaError::Statement {
            what: format!("schema name {name}"),
            error: error.to_string(),
        })?;
        // From here on, the guard drops the schema whatever happens.
        let schema = RunSchema {
            url: url.to_string(),
            namespace,
            dropped: false,
        };
        let options = PostgresOptions::default().with_namespace(schema.namespace.clone());
        let store = PostgresStore::new(url, options).map_err(SchemaError::Migrate)?;
        store.migrate().await.map_err(SchemaError::Migrate)?;
        let plain = format!(
            "CREATE TABLE \"{name}\".{PLAIN_TABLE} (
                 id bigserial PRIMARY KEY,
                 resource text NOT NULL,
                 token bigint NOT NULL,
                 writer text NOT NULL,
                 payload bytea NOT NULL,
                 written_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        );
        execute(&client, "create the plain table", &plain).await?;
        let terms = format!("CREATE SEQUENCE \"{name}\".{LOCK_TERMS}");
        execute(&client, "create the lock's term sequence", &terms).await?;
        Ok(schema)
    }

    /// Installs the lease store's movable clock in the schema
    /// ([`crate::store_clock`]): for runs with a clock fault of the store.
    ///
    /// # Errors
    /// Connection and statement errors.
    pub async fn install_store_clock(&self) -> Result<(), SchemaError> {
        let client = connect(&self.url).await?;
        let sql = crate::store_clock::install_sql(self.name());
        execute(&client, "install the lease store's clock", &sql).await
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        self.namespace.schema()
    }

    /// The schema as a namespace for the fenced stores.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Drops the schema and everything in it.
    ///
    /// # Errors
    /// Connection and statement errors (the destructor tries once more).
    pub async fn drop_schema(mut self) -> Result<(), SchemaError> {
        let result = drop_named(&self.url, self.name()).await;
        self.dropped = result.is_ok();
        result
    }
}

async fn drop_named(url: &str, name: &str) -> Result<(), SchemaError> {
    let client = connect(url).await?;
    let sql = format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE");
    execute(&client, "drop the run's schema", &sql).await
}

impl Drop for RunSchema {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let (url, name) = (self.url.clone(), self.name().to_string());
        // A thread of its own: this may run inside a runtime (a panic in the
        // runner), where blocking on another runtime is not allowed.
        let dropper = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                // The timer must be made inside the runtime it runs on.
                let dropping =
                    async { tokio::time::timeout(DROP_TIMEOUT, drop_named(&url, &name)).await };
                match runtime.block_on(dropping) {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        eprintln!("fenced-lab: could not drop schema {name}: {error}");
                    }
                    Err(_) => eprintln!(
                        "fenced-lab: could not drop schema {name} within {DROP_TIMEOUT:?}"
                    ),
                }
            }
        });
        let _ = dropper.join();
    }
}
