//! Hostile input: whatever a user passes, `fenced-sim` ends within a time
//! limit, inside a memory limit, with exit code 0, 1 or 2 and a message —
//! never a panic (101), an abort (134) or an out-of-memory kill (137).
//!
//! Each case runs the real binary under `prlimit --as` (an address-space
//! limit: an allocation beyond it fails, and Rust aborts) and a wall-clock
//! timeout. The inputs are the outside audit's reproducers plus their
//! siblings.

#![allow(clippy::disallowed_methods)] // The timeout of each case is wall-clock time by nature.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{shipped, workspace_root, write_file};

/// The address-space limit of every case: generous for a simulator that
/// needs tens of megabytes, far below what the audit's inputs used to take.
const MEMORY_LIMIT_BYTES: u64 = 3 << 30;

/// One hostile invocation and what must come of it.
struct Case {
    name: &'static str,
    args: Vec<String>,
    /// The exit codes allowed (a subset of 0, 1, 2).
    exits: &'static [i32],
    /// A fragment the output (stdout or stderr) must contain, if any.
    says: Option<&'static str>,
    /// The wall-clock limit.
    within: Duration,
}

fn case(
    name: &'static str,
    args: &[&str],
    exits: &'static [i32],
    says: Option<&'static str>,
) -> Case {
    Case {
        name,
        args: args.iter().map(|a| a.to_string()).collect(),
        exits,
        says,
        within: Duration::from_secs(60),
    }
}

/// Runs `case` under the memory limit and the timeout; returns its output.
fn run(case: &Case) -> (i32, String) {
    let start = Instant::now();
    let mut child = Command::new("prlimit")
        .arg(format!("--as={MEMORY_LIMIT_BYTES}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_fenced-sim"))
        .args(&case.args)
        .current_dir(workspace_root())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs");
    loop {
        if child.try_wait().expect("waitable").is_some() {
            break;
        }
        if start.elapsed() > case.within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}: still running after {:?}", case.name, case.within);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "{}: killed by a signal ({:?}) after {:?}:\n{}",
            case.name,
            out.status,
            start.elapsed(),
            tail(&text)
        )
    });
    (code, text)
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn check(case: &Case) {
    let (code, text) = run(case);
    assert!(
        !text.contains("panicked") && !text.contains("memory allocation"),
        "{}: the binary panicked or ran out of memory (exit {code}):\n{}",
        case.name,
        tail(&text)
    );
    assert!(
        case.exits.contains(&code),
        "{}: exit {code}, expected one of {:?}:\n{}",
        case.name,
        case.exits,
        tail(&text)
    );
    if let Some(fragment) = case.says {
        assert!(
            text.contains(fragment),
            "{}: expected {fragment:?} in:\n{}",
            case.name,
            tail(&text)
        );
    }
}

/// A scenario file with `body` after a name and one node, in `dir`.
fn scenario(dir: &Path, name: &str, body: &str) -> String {
    let text = format!("name = \"{name}\"\n{body}");
    write_file(dir, &format!("{name}.toml"), &text)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn hostile_scenarios_end_in_bounded_time_and_memory_with_a_message() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let nodes = "[[node]]\nid = \"a\"\n[[node]]\nid = \"b\"\n";
    let long_id = "x".repeat(254);
    let cases = vec![
        // 1. An id too long for its owner id used to be renamed into a collision.
        case(
            "node-id-collision",
            &["run", &scenario(
                d,
                "collide",
                &format!("duration = \"2m\"\n[[node]]\nid = \"{long_id}\"\n[[node]]\nid = \"n0\"\n"),
            )],
            &[2],
            Some("node ids may be at most 244 bytes"),
        ),
        // 2. Overlapping crashes used to start two processes of one node.
        case(
            "overlapping-crashes",
            &["run", &scenario(
                d,
                "crashes",
                &format!(
                    "duration = \"1m\"\n{nodes}[[fault]]\nkind = \"crash\"\nnode = \"b\"\nat = \"10s\"\n\
                     restart_after = \"20s\"\n[[fault]]\nkind = \"crash\"\nnode = \"b\"\nat = \"15s\"\n\
                     restart_after = \"1s\"\n"
                ),
            )],
            &[0],
            Some("Violations: none"),
        ),
        // 3. A store slower than retry_interval used to elect nobody; one that can never elect is refused.
        case(
            "slow-store",
            &["run", &scenario(d, "slow", &format!("duration = \"10m\"\n[network]\nlatency = \"1100ms\"\n{nodes}"))],
            &[0],
            Some("token 1"),
        ),
        case(
            "hopeless-network",
            &["run", &scenario(d, "hopeless", &format!("duration = \"10m\"\n[network]\nlatency = \"20s\"\n{nodes}"))],
            &[2],
            Some("no node could ever lead"),
        ),
        // 9. Units of work piling up, and durations past any sense.
        case(
            "units-piling-up",
            &["run", &scenario(
                d,
                "pileup",
                &format!("duration = \"10h\"\n[work]\nwrite_interval = \"1ms\"\nwork_duration = \"5h\"\n{nodes}"),
            )],
            &[2],
            Some("work.work_duration"),
        ),
        case(
            "retry-interval-in-eons",
            &["run", &scenario(
                d,
                "eons",
                &format!("duration = \"1h\"\n[election]\nretry_interval = \"300000000000y\"\n{nodes}"),
            )],
            &[2],
            Some("retry_interval"),
        ),
        case(
            "write-interval-in-centuries",
            &["run", &scenario(d, "centuries", &format!("duration = \"1h\"\n[work]\nwrite_interval = \"300y\"\n{nodes}"))],
            &[2],
            Some("work.write_interval"),
        ),
        case(
            "rejoin-delay-in-centuries",
            &["explore", &scenario(d, "rejoin", &format!("duration = \"1h\"\n[election]\nrejoin_delay = \"300y\"\n{nodes}")), "--seeds", "10"],
            &[2],
            Some("rejoin_delay"),
        ),
        // 12. A 29-day store pause of 100 nodes used to queue gigabytes.
        case(
            "month-long-store-pause",
            &["run", &scenario(
                d,
                "store-pause",
                "duration = \"30d\"\n[[node]]\nid = \"n\"\ncount = 100\n[[fault]]\nkind = \"pause\"\n\
                 node = \"lease-store\"\nat = \"1h\"\nduration = \"29d\"\n",
            )],
            &[0, 1, 2],
            None,
        ),
        // A day-long store pause that does run: the queue stays bounded.
        case(
            "day-long-store-pause",
            &["run", &scenario(
                d,
                "store-pause-day",
                "duration = \"2d\"\n[[node]]\nid = \"n\"\ncount = 20\n[[fault]]\nkind = \"pause\"\n\
                 node = \"lease-store\"\nat = \"1h\"\nduration = \"1d\"\n",
            )],
            &[0, 1],
            None,
        ),
        // 14. Heartbeats every nanosecond for a year: refused before running.
        case(
            "heartbeat-every-nanosecond",
            &["run", &scenario(d, "hb", &format!("duration = \"365d\"\n[membership]\nheartbeat_interval = \"1ns\"\n{nodes}"))],
            &[2],
            Some("--max-events"),
        ),
        // Sibling: a recurring fault every millisecond on a thousand nodes for a year.
        case(
            "recurring-fault-storm",
            &["run", &scenario(
                d,
                "storm",
                "duration = \"365d\"\n[[node]]\nid = \"n\"\ncount = 1000\n[[fault]]\nkind = \"pause\"\n\
                 node = \"*\"\nevery = \"1ms\"\nduration = \"1ms\"\n",
            )],
            &[2],
            Some("fault[0].every"),
        ),
        // Sibling: messages in flight for an hour, sent every millisecond: the pending bound.
        case(
            "everything-in-flight",
            &["run", &scenario(
                d,
                "in-flight",
                &format!(
                    "duration = \"3h\"\n[election]\nlease_ttl = \"1d\"\nrenew_interval = \"2h\"\n\
                     retry_interval = \"10m\"\n\
                     [membership]\nheartbeat_interval = \"1ms\"\n[network]\nlatency = \"1h\"\n{nodes}"
                ),
            )],
            &[2],
            Some("events were pending at once"),
        ),
        // A run that reaches its event budget mid-way (above the up-front
        // estimate, below what the run needs), and one refused up front.
        case(
            "event-budget",
            &["run", &shipped("fleet-election"), "--max-events", "35000"],
            &[2],
            Some("used its whole budget of 35000 events"),
        ),
        case(
            "event-budget-up-front",
            &["run", &shipped("fleet-election-50"), "--max-events", "10000"],
            &[2],
            Some("more than the budget of 10000"),
        ),
        case(
            "event-budget-zero",
            &["run", &shipped("steady-state"), "--max-events", "0"],
            &[2],
            Some("--max-events"),
        ),
        // Sibling: the most nodes, for an hour (the estimate refuses it, nothing is allocated first).
        case(
            "sixty-five-thousand-nodes",
            &["run", &scenario(d, "huge", "duration = \"1h\"\n[[node]]\nid = \"n\"\ncount = 65000\n")],
            &[2],
            None,
        ),
        case(
            "a-million-nodes",
            &["run", &scenario(d, "million", "duration = \"1h\"\n[[node]]\nid = \"n\"\ncount = 1000000\n")],
            &[2],
            None,
        ),
        // 11. Not a scenario file at all.
        case("dev-zero", &["run", "/dev/zero"], &[2], None),
        case("a-directory", &["run", "scenarios"], &[2], None),
        // 10. Threads that cannot be had.
        case(
            "three-thousand-jobs",
            &["explore", "--seeds", "100", "--jobs", "3000"],
            &[0, 2],
            None,
        ),
        // 13. Counting a shard of the whole u64 range.
        case(
            "whole-range-shard",
            &["explore", "--seeds", "18446744073709551615", "--shard", "0/18446744073709551615"],
            &[0, 1, 2],
            None,
        ),
        // 8. Campaigns of nothing.
        case("explore-zero-seeds", &["explore", "--seeds", "0"], &[2], None),
        case("sweep-zero-seeds", &["sweep", "--seeds", "0"], &[2], None),
        // 12. A sweep whose fault schedule would be billions of pauses.
        case(
            "sweep-pause-storm",
            &["sweep", "--nodes", "100", "--duration", "30d", "--pause-every", "100ms", "--pause-length", "1ms", "--seeds", "1"],
            &[0, 1, 2],
            None,
        ),
        // Siblings: numbers at and past their types' ends.
        case("seed-past-u64", &["run", &shipped("steady-state"), "--seed", "18446744073709551616"], &[2], None),
        case("negative-seed", &["run", &shipped("steady-state"), "--seed", "-1"], &[2], None),
        case("explore-start-overflow", &["explore", "--seeds", "10", "--start", "18446744073709551615"], &[0, 1, 2], None),
        case("trace-to-a-full-disk", &["run", &shipped("steady-state"), "--trace", "/dev/full"], &[2], None),
        case("svg-to-a-directory", &["run", &shipped("steady-state"), "--svg", "scenarios"], &[2], None),
    ];
    for case in &cases {
        check(case);
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_not_read_forever() {
    // Proves audit item 11's sibling: a named pipe is not a scenario file; reading it would block.
    let dir = tempfile::tempdir().expect("a temp dir");
    let fifo = dir.path().join("scenario.toml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let fifo = fifo.to_string_lossy().into_owned();
    for command in ["run", "check", "explore", "replay"] {
        let mut args = vec![command, fifo.as_str()];
        if command == "explore" {
            args.extend(["--seeds", "1"]);
        }
        if command == "replay" {
            args.extend(["--seed", "1"]);
        }
        let mut c = case("fifo", &args, &[2], None);
        c.within = Duration::from_secs(20);
        check(&c);
    }
}
