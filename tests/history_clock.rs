#![cfg(all(feature = "history", target_os = "linux"))]
//! The history clock under libfaketime: `faketime -f +100s` moves a
//! process's `SystemTime` and `Instant` (libc's `clock_gettime`, including
//! `CLOCK_MONOTONIC`), but not `fenced::history::clock::now_ns`, which issues
//! the system call itself.
//!
//! The test runs itself again with libfaketime preloaded (as a probe that
//! prints its clocks) and compares with its own readings. It preloads the
//! library itself rather than calling the `faketime` wrapper: the wrapper
//! creates a semaphore named after its own pid (`/dev/shm/sem.faketime_sem_<pid>`,
//! `O_EXCL`) and one left behind by an earlier, killed wrapper makes it exit
//! with `sem_open: File exists` once the pid comes round again (it failed CI
//! so on a machine with `pid_max` 32 768). Without the library (Debian's
//! `libfaketime`, installed with `faketime`) it says so and passes, unless
//! `FENCED_REQUIRE_FAKETIME=1` (CI), where that is a failure.
#![allow(clippy::disallowed_methods)] // The wall clock is what this test measures.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

const PROBE_VAR: &str = "FENCED_HISTORY_CLOCK_PROBE";
const REQUIRE_VAR: &str = "FENCED_REQUIRE_FAKETIME";

/// Where Debian's package puts the library (as `fenced-lab` looks for it).
const LIBRARY_PATHS: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// `tv_sec` of an `Instant`, from its `Debug` form on Linux
/// (`Instant { tv_sec: 1, tv_nsec: 2 }`): the only way to see its raw value.
fn instant_seconds(instant: std::time::Instant) -> Option<u64> {
    let text = format!("{instant:?}");
    let start = text.find("tv_sec: ")? + "tv_sec: ".len();
    let rest = &text[start..];
    rest[..rest.find(',')?].trim().parse().ok()
}

fn readings() -> (u64, u64, u64) {
    let history = fenced::history::clock::now_ns().expect("the history clock reads on Linux");
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let instant = instant_seconds(std::time::Instant::now()).unwrap_or(0);
    (history / 1_000_000_000, wall, instant)
}

#[test]
fn faketime_moves_instant_and_system_time_but_not_the_history_clock() {
    if std::env::var_os(PROBE_VAR).is_some() {
        let (history, wall, instant) = readings();
        println!("\nPROBE {history} {wall} {instant}");
        return;
    }
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let Some(library) = LIBRARY_PATHS
        .iter()
        .map(std::path::Path::new)
        .find(|path| path.is_file())
    else {
        let required = std::env::var(REQUIRE_VAR).is_ok_and(|v| v.trim() == "1");
        assert!(
            !required,
            "{REQUIRE_VAR}=1 but libfaketime is not at any of {LIBRARY_PATHS:?}"
        );
        eprintln!("SKIPPED: no libfaketime (apt-get install faketime)");
        return;
    };
    let before = readings();
    let probe = Command::new(&exe)
        .args([
            "--exact",
            "faketime_moves_instant_and_system_time_but_not_the_history_clock",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_VAR, "1")
        .env("LD_PRELOAD", library)
        .env("FAKETIME", "+100s")
        .output()
        .expect("the test binary runs again as the probe");
    let after = readings();
    let stdout = String::from_utf8_lossy(&probe.stdout);
    let stderr = String::from_utf8_lossy(&probe.stderr);
    let line = stdout
        .lines()
        .find_map(|l| l.split("PROBE ").nth(1))
        .unwrap_or_else(|| {
            panic!(
                "the probe printed no clocks ({}): stdout {stdout:?}, stderr {stderr:?}",
                probe.status
            )
        });
    let values: Vec<u64> = line.split(' ').filter_map(|v| v.parse().ok()).collect();
    let [history, wall, instant] = values[..] else {
        panic!("three readings: {line}");
    };
    // The history clock read the same as ours, between our two readings.
    assert!(
        before.0 <= history && history <= after.0,
        "history clock moved under faketime: {before:?} {history} {after:?}"
    );
    // libfaketime moved the wall clock by 100 s ...
    assert!(
        wall >= before.1 + 99,
        "faketime did not move SystemTime: {wall} vs {before:?}"
    );
    // ... and `Instant` (CLOCK_MONOTONIC through libc) too.
    assert!(
        instant.abs_diff(before.2) >= 99,
        "faketime did not move Instant: {instant} vs {before:?}"
    );
}
