//! Shared by the lab's PostgreSQL tests: where the database is, and a loud
//! skip when it is not there (as `tests/postgres_support/` of the root crate).
#![allow(dead_code)] // Each test file uses a different part of it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

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

/// Runs `scenario` for real at `scale`, with `extra` flags and `env` set
/// for the runner (and so its nodes); returns the exit code and the JSON
/// report. Panics on anything but exit 0 or 1 and a JSON report.
pub async fn run_json(
    url: &str,
    scenario: &Path,
    scale: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value) {
    let started = tokio::time::Instant::now();
    let child = tokio::process::Command::new(program())
        .args(["run", "--postgres", url, "--json", "--time-scale", scale])
        .args(extra)
        .arg(scenario)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    // A run lasts 6–12 s at scale 0.1; a three-run campaign under 1 min.
    let output = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("the run ends within three minutes")
        .expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().expect("exited");
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"));
    eprintln!(
        "{}: exit {code} in {:.1} s",
        scenario.display(),
        started.elapsed().as_secs_f64()
    );
    (code, report)
}
