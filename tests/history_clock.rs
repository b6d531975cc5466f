#![cfg(all(feature = "history", target_os = "linux"))]
//! The history clock under libfaketime: `faketime -f +100s` moves a
//! process's `SystemTime` and `Instant` (libc's `clock_gettime`, including
//! `CLOCK_MONOTONIC`), but not `fenced::history::clock::now_ns`, which issues
//! the system call itself.
//!
//! The test runs itself again under `faketime` (as a probe that prints its
//! clocks) and compares with its own readings. Without the `faketime`
//! command it says so and passes (`apt-get install faketime`).
#![allow(clippy::disallowed_methods)] // The wall clock is what this test measures.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

const PROBE_VAR: &str = "FENCED_HISTORY_CLOCK_PROBE";

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
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let before = readings();
    let probe = Command::new("faketime")
        .args(["-f", "+100s"])
        .arg(&exe)
        .args([
            "--exact",
            "faketime_moves_instant_and_system_time_but_not_the_history_clock",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_VAR, "1")
        .output();
    let after = readings();
    let Ok(probe) = probe else {
        eprintln!("SKIPPED: no `faketime` command (apt-get install faketime)");
        return;
    };
    let stdout = String::from_utf8_lossy(&probe.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split("PROBE ").nth(1))
        .unwrap_or_else(|| panic!("the probe printed its clocks: {stdout}"));
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
