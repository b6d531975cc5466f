//! Where the PostgreSQL tests' database is, and a loud skip when it is not
//! there. Shared by the root crate's `tests/postgres_support/` and the lab's
//! `lab/tests/support/` (included by path): one rule for every PostgreSQL
//! test of the workspace.

use std::io::Write;

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
