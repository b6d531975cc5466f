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

/// A scenario written for the lab's tests (`lab/tests/scenarios`).
pub fn lab_scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios")
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

/// Set to `1` (CI does) to make a missing lock-zoo server (etcd, Redis,
/// ZooKeeper) fail its tests instead of skipping them.
pub const ZOO_REQUIRE_VAR: &str = "FENCED_REQUIRE_ZOO_SERVERS";

/// Whether a lock-zoo server `test` needs is installed (`installed` is the
/// servers module's own check, e.g. `servers::redis::program`); `false`
/// after saying loudly that the test is skipped.
///
/// # Panics
/// When it is missing and `FENCED_REQUIRE_ZOO_SERVERS=1`.
pub fn zoo_server<T>(test: &str, installed: Result<T, fenced_lab::servers::ServerError>) -> bool {
    use std::io::Write;
    let Err(missing) = installed else {
        return true;
    };
    let required = std::env::var(ZOO_REQUIRE_VAR).is_ok_and(|v| v.trim() == "1");
    assert!(
        !required,
        "{ZOO_REQUIRE_VAR}=1 but the test `{test}` cannot run: {missing}"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}: {missing} ({ZOO_REQUIRE_VAR}=1 turns this skip into a failure)"
    );
    false
}

/// The pids of live processes whose command line mentions `needle` (a data
/// directory's path): what a failed or stopped server would leave running.
pub fn processes_mentioning(needle: &Path) -> Vec<i32> {
    let needle = needle.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != std::process::id() as i32)
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                String::from_utf8_lossy(&cmdline)
                    .split('\0')
                    .any(|arg| arg.contains(&needle))
            }) && fenced_lab::supervisor::process_running(pid)
        })
        .collect()
}

/// Asserts that nothing of a stopped (or never started) server is left:
/// none of `pids` runs, no process mentions `data`, and `data` is gone.
pub fn assert_nothing_left(what: &str, pids: &[i32], data: &Path) {
    for &pid in pids {
        assert!(
            !fenced_lab::supervisor::process_running(pid),
            "{what}: process {pid} still runs"
        );
    }
    let stray = processes_mentioning(data);
    assert!(
        stray.is_empty(),
        "{what}: processes {stray:?} still mention {}",
        data.display()
    );
    assert!(!data.exists(), "{what}: {} still exists", data.display());
}

/// Runs `fenced-lab zoo-servers --kind KIND --count N` in `dir`, waits for
/// its servers to be ready, SIGKILLs it, and asserts that every server
/// process it started dies within ten seconds (their parent-death signal;
/// no destructor of the owner runs). Returns the servers' pids.
pub async fn servers_die_with_their_owner(kind: &str, count: usize, dir: &Path) -> Vec<i32> {
    use tokio::io::AsyncBufReadExt;
    let mut owner = tokio::process::Command::new(program())
        .args(["zoo-servers", "--kind", kind, "--count", &count.to_string()])
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("starts fenced-lab zoo-servers");
    let owner_pid = owner.id().expect("a pid") as i32;
    let stdout = owner.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut pids = Vec::new();
    let reading = async {
        while let Some(line) = lines.next_line().await.expect("reads stdout") {
            if line == "all ready" {
                return true;
            }
            let pid = line
                .split_whitespace()
                .find_map(|word| word.strip_prefix("pid="))
                .and_then(|pid| pid.parse::<i32>().ok())
                .unwrap_or_else(|| panic!("no pid in {line:?}"));
            pids.push(pid);
        }
        false
    };
    let ready = tokio::time::timeout(Duration::from_secs(120), reading)
        .await
        .expect("the servers are ready within two minutes");
    if !ready {
        let output = owner.wait_with_output().await.expect("output");
        panic!(
            "zoo-servers ended before its servers were ready: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    assert_eq!(pids.len(), count, "{pids:?}");
    for &pid in &pids {
        assert!(
            fenced_lab::supervisor::process_running(pid),
            "{kind} {pid} runs"
        );
        assert_ne!(pid, owner_pid);
    }
    // SAFETY: a plain system call on the child this test started.
    assert_eq!(unsafe { libc::kill(owner_pid, libc::SIGKILL) }, 0);
    let _ = owner.wait().await;
    let gone = eventually(Duration::from_secs(10), || {
        pids.iter()
            .all(|&pid| !fenced_lab::supervisor::process_running(pid))
    })
    .await;
    assert!(
        gone,
        "{kind} servers {pids:?} outlived their SIGKILLed owner"
    );
    pids
}

/// The keepalive timer (seconds left) of the IPv4 socket whose local port
/// is `local` and remote port `remote`, from `/proc/net/tcp`: its `tr`
/// field is 2 for a keepalive timer, `tm->when` in USER_HZ (100) ticks.
pub fn keepalive_timer_secs(local: u16, remote: u16) -> Option<f64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || port(fields[1])? != local || port(fields[2])? != remote {
            return None;
        }
        let (kind, when) = fields[5].split_once(':')?;
        if kind != "02" {
            return None;
        }
        Some(u64::from_str_radix(when, 16).ok()? as f64 / 100.0)
    })
}

/// What a zoo design's real run and its simulation must agree on: the
/// verdicts, the number of terms and the highest token.
pub const MUST_AGREE: [&str; 4] = ["violations", "split_brain", "term_count", "max_token"];

/// Asserts that `report`'s real and simulated runs agree on each of `keys`:
/// equal, or — the highest token — inside the span of the burst of
/// concurrent writes the simulated one raced (`max_token_race`: a real
/// server numbers those writes in its own scheduler's order, and the lab's
/// comparison lets such a token differ).
pub fn assert_same(report: &Value, keys: &[&str]) {
    let comparison = &report["comparison"];
    let (real, simulated) = (&comparison["real"], &comparison["simulated"]);
    for key in keys {
        if *key == "max_token" && raced_within(&real[*key], &simulated["max_token_race"]) {
            continue;
        }
        assert_eq!(real[key], simulated[key], "{key}: {comparison:#}");
    }
}

/// Whether `token` lies in the burst `race` (`{low, high}`, or null).
fn raced_within(token: &Value, race: &Value) -> bool {
    match (token.as_u64(), race["low"].as_u64(), race["high"].as_u64()) {
        (Some(token), Some(low), Some(high)) => (low..=high).contains(&token),
        _ => false,
    }
}

/// Whether the lab applied a step whose effect mentions `needle`.
pub fn applied(report: &Value, needle: &str) -> bool {
    report["applied"]
        .as_array()
        .expect("applied")
        .iter()
        .any(|a| a["effect"].as_str().is_some_and(|e| e.contains(needle)))
}

/// `fenced-lab run` of `scenario` (a shipped one's name) interrupted with
/// SIGINT once a node leads: exit 1, and the server's data directory
/// `data_name` (under the run's directory), the server and every node
/// process are gone — for a zoo design's real server.
pub async fn ctrl_c_removes_the_server_and_its_data(
    url: &str,
    scenario: &str,
    data_name: &str,
    lead_within: Duration,
) {
    let logs = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(program())
        .args(["run", "--postgres", url, "--time-scale", "0.1", "--keep"])
        .arg(logs.path())
        .arg(self::scenario(scenario))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let dir = logs.path().to_path_buf();
    let leading = move || {
        std::fs::read_dir(&dir).is_ok_and(|entries| {
            entries
                .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
                .any(|text| text.contains("leading token="))
        })
    };
    assert!(eventually(lead_within, leading).await, "no node led");
    let data = logs.path().join(data_name);
    assert!(data.exists(), "{data_name} while the server runs");
    assert!(!processes_mentioning(&data).is_empty());
    interrupt(&mut child).await;
    assert!(!data.exists(), "{} left on disk", data.display());
    assert_eq!(processes_mentioning(logs.path()), Vec::<i32>::new());
}

/// Ctrl-C to the runner `child`: it must exit 1 ("interrupted") within 30 s.
pub async fn interrupt(child: &mut tokio::process::Child) {
    let runner = i32::try_from(child.id().expect("a running child")).expect("pid");
    // SAFETY: a plain system call on our own child.
    unsafe {
        libc::kill(runner, libc::SIGINT);
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the runner exits")
        .expect("status");
    assert_eq!(status.code(), Some(1));
}
