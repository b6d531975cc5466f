//! Shared by the lab's PostgreSQL tests: where the database is, and a loud
//! skip when it is not there (as `tests/postgres_support/` of the root crate).
#![allow(dead_code)] // Each test file uses a different part of it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The connection URL of the database the tests use.
pub const URL_VAR: &str = "FENCED_POSTGRES_URL";
/// Set to `1` (CI does) to make a missing URL fail instead of skip.
pub const REQUIRE_VAR: &str = "FENCED_REQUIRE_POSTGRES";

/// The database URL, or `None` after saying loudly that `test` is skipped.
///
/// # Panics
/// When the URL is missing and `FENCED_REQUIRE_POSTGRES=1`.
pub fn database_url(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1");
            assert!(
                !required,
                "{REQUIRE_VAR}=1 but {URL_VAR} is not set: the PostgreSQL test `{test}` cannot run"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {test}: no PostgreSQL. Set {URL_VAR}=postgres://user@host:port/db \
                 to run the lab's PostgreSQL tests ({REQUIRE_VAR}=1 turns this skip into a failure)."
            );
            None
        }
    }
}

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
