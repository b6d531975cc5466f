//! Shared by the lab's PostgreSQL tests: where the database is, and a loud
//! skip when it is not there (as `tests/postgres_support/` of the root crate).
#![allow(dead_code)] // Each test file uses a different part of it.

use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "../../../tests/postgres_support/url.rs"]
mod url;
#[allow(unused_imports)] // Not every test file needs the database.
pub use url::database_url;

/// The `fenced-lab` binary under test.
pub fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fenced-lab"))
}

/// A shipped scenario file.
pub fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(format!("{name}.toml"))
}

/// The schemas whose names start with `prefix`.
pub async fn schemas_like(url: &str, prefix: &str) -> Vec<String> {
    let client = fenced_lab::schema::connect(url).await.expect("connects");
    client
        .query(
            "SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY 1",
            &[&prefix],
        )
        .await
        .expect("lists schemas")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Polls `condition` every 20 ms for up to `within`.
pub async fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}
