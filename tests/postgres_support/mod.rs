//! Shared by the PostgreSQL tests (`tests/postgres_*.rs`): where the database
//! is, a loud skip when it is not there, and a schema of its own per test.
#![allow(dead_code)] // Each test file uses a different part of it.

use fenced::postgres::tokio_postgres::{self, Client, NoTls};
use fenced::postgres::{Namespace, PostgresOptions, PostgresStore};

mod url;
#[allow(unused_imports)] // Not every test file needs each.
pub use url::{database_url, URL_VAR};

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
