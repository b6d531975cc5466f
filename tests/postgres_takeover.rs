#![cfg(feature = "postgres")]
//! Two OS processes (the `pg_elector` example, run twice) elect a leader
//! through PostgreSQL; the leader is frozen with SIGSTOP past its TTL.
//!
//! Needs `FENCED_POSTGRES_URL`; without it the test prints `SKIPPED` and
//! passes, unless `FENCED_REQUIRE_POSTGRES=1`. Needs the example built, which
//! `cargo test` does (it builds every example of the enabled features).
#![allow(clippy::disallowed_methods)] // Real-time tests against a live PostgreSQL: the wall clock is what they measure.

mod postgres_support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use fenced::postgres::PostgresOptions;
use fenced::{FencingToken, OwnerId, ResourceId, Role};
use postgres_support::{admin, database_url, drop_schema, fresh_store, schema_for};

/// Generous: a step waits at most this long for its line (CI machines are
/// slow); the test as a whole takes about five seconds.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The example binary, next to this test's own directory:
/// `target/<profile>/examples/pg_elector`.
fn example_binary() -> PathBuf {
    let test = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from target/<profile>/deps");
    let binary = profile_dir
        .join("examples")
        .join(format!("pg_elector{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} is missing: build it with `cargo build --example pg_elector --features postgres` \
         (a plain `cargo test --features postgres` builds it)",
        binary.display()
    );
    binary
}

/// One `pg_elector` process; killed (after a SIGCONT) if the test fails.
struct Elector {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Elector {
    fn spawn(
        name: &'static str,
        url: &str,
        schema: &str,
        lines: Sender<(&'static str, String)>,
    ) -> Elector {
        let mut child = Command::new(example_binary())
            .args(["--url", url, "--schema", schema, "--owner", name])
            .args(["--ttl-ms", "1500", "--renew-ms", "500", "--retry-ms", "250"])
            .args(["--work-ms", "600"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the example starts");
        // Its logs, through the test harness's capture: shown on failure.
        let stderr = child.stderr.take().expect("piped stderr");
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{name} stderr: {line}");
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                eprintln!("{line}");
                if lines.send((name, line)).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Elector { name, child, stdin }
    }

    /// Sends `signal` (`STOP`, `CONT`) to the process, by its id.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {} failed", self.name);
    }

    /// Closes stdin, which asks the process to stop and release; waits.
    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + STEP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "{} exited with {status}", self.name);
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        panic!("{} did not exit after its stdin closed", self.name);
    }
}

impl Drop for Elector {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(self.child.id().to_string())
                .status();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits for a line of `who` containing `needle`; returns it.
fn expect_line(lines: &Receiver<(&'static str, String)>, who: &str, needle: &str) -> String {
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok((name, line)) if name == who && line.contains(needle) => return line,
            Ok(_) => {}
            Err(RecvTimeoutError::Timeout) => panic!("{who} never said {needle:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("output closed before {who} said {needle:?}")
            }
        }
    }
}

// Proves: two processes elect one leader through PostgreSQL; when the leader
// is frozen (SIGSTOP) between its leadership check and its write for longer
// than its lease, the other process takes over with a higher token and
// writes, and the frozen one's write on resuming (SIGCONT) is rejected by
// the fenced table as stale; it then steps down and follows.
#[test]
fn a_frozen_leader_is_replaced_and_its_late_write_rejected() {
    let Some(url) = database_url("a_frozen_leader_is_replaced_and_its_late_write_rejected") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let schema = schema_for("takeover");
    let store = runtime.block_on(fresh_store(&url, "takeover", PostgresOptions::default()));
    let (sender, lines) = channel();

    let a = Elector::spawn("node-a", &url, &schema, sender.clone());
    expect_line(&lines, "node-a", "LEADING token=1");
    expect_line(&lines, "node-a", "WROTE token=1 unit=1 accepted");
    let b = Elector::spawn("node-b", &url, &schema, sender);
    expect_line(&lines, "node-b", "OBSERVED leader=node-a token=1");

    // Freeze node-a right after it checked its leadership, before its write.
    expect_line(&lines, "node-a", "CHECKED token=1");
    a.signal("STOP");
    let frozen_at = Instant::now();
    expect_line(&lines, "node-b", "LEADING token=2");
    expect_line(&lines, "node-b", "WROTE token=2 unit=1 accepted");
    assert!(
        frozen_at.elapsed() > Duration::from_millis(1_500),
        "node-b led only after node-a's lease (1.5 s) ran out"
    );

    a.signal("CONT");
    let late = expect_line(&lines, "node-a", "REJECTED token=1");
    assert!(late.contains("stale highest=2"), "{late}");
    expect_line(&lines, "node-a", "STOPPED token=1");
    expect_line(&lines, "node-a", "OBSERVED leader=node-b token=2");

    a.stop();
    b.stop();
    let role = Role::new("reports").expect("valid role");
    let resource = ResourceId::new("daily-report").expect("valid resource");
    runtime.block_on(async {
        assert_eq!(
            store.holder(&role).await.expect("an answer"),
            None,
            "node-b released"
        );
        assert_eq!(
            store.highest_token(&role).await.expect("an answer"),
            FencingToken::new(2)
        );
        let record = store
            .fenced_table()
            .read(&resource)
            .await
            .expect("an answer")
            .expect("written");
        assert_eq!(record.highest, FencingToken::new(2).expect("non-zero"));
        assert_eq!(record.writer, OwnerId::new("node-b").expect("valid owner"));
        let last = String::from_utf8_lossy(&record.payload).into_owned();
        assert!(
            last.contains("node-b"),
            "the last accepted write is node-b's: {last}"
        );
        drop_schema(&admin(&url).await, &schema).await;
    });
}
