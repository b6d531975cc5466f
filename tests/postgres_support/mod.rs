//! Shared by the PostgreSQL tests (`tests/postgres_*.rs`): where the database
//! is, a loud skip when it is not there, and a schema of its own per test.
#![allow(dead_code)] // Each test file uses a different part of it.

use std::io::Write;

use fenced::postgres::tokio_postgres::{self, Client, NoTls};
use fenced::postgres::{Namespace, PostgresOptions, PostgresStore};

/// The connection URL of the database the tests use.
pub const URL_VAR: &str = "FENCED_POSTGRES_URL";
/// Set to `1` (CI does) to make a missing URL fail instead of skip.
pub const REQUIRE_VAR: &str = "FENCED_REQUIRE_POSTGRES";

/// The database URL, or `None` after saying loudly that `test` is skipped.
///
/// # Panics
/// When the URL is missing and `FENCED_REQUIRE_POSTGRES=1`: CI must never
/// pass with these tests silently skipped.
pub fn database_url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1");
            assert!(
                !required,
                "{REQUIRE_VAR}=1 but {URL_VAR} is not set: the PostgreSQL test `{test}` cannot run"
            );
            // Straight to the process's stderr: the test harness captures
            // `eprintln!` of passing tests, and a skip must not go unseen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {test}: no PostgreSQL. Set {URL_VAR}=postgres://user@host:port/db \
                 to run the PostgreSQL tests ({REQUIRE_VAR}=1 turns this skip into a failure)."
            );
            None
        }
    }
}

/// A schema name of its own for the test `tag` in this process, so tests
/// running in parallel (and test runs on one database) never meet.
pub fn schema_for(tag: &str) -> String {
    format!("fenced_t_{tag}_{}", std::process::id())
}

/// A plain client for the test's own SQL (inspection, sabotage, cleanup).
pub async fn admin(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("the test database accepts connections");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Drops `schema` and everything in it, if it exists.
pub async fn drop_schema(client: &Client, schema: &str) {
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await
        .expect("the test schema can be dropped");
}

/// A migrated store in a fresh schema for the test `tag`, with `options`
/// (whose namespace is replaced).
pub async fn fresh_store(url: &str, tag: &str, options: PostgresOptions) -> PostgresStore {
    let schema = schema_for(tag);
    drop_schema(&admin(url).await, &schema).await;
    let namespace = Namespace::new(&schema, "").expect("a valid test schema name");
    let store = PostgresStore::new(url, options.with_namespace(namespace))
        .expect("a valid URL and options");
    store.migrate().await.expect("the migration runs");
    store
}
