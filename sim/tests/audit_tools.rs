//! The tools' audit findings, each proved fixed through the real binary:
//! what used to panic, hang, exhaust memory, misreport or exit with the
//! wrong code now answers with a clear error and the contract's exit code
//! (0 pass, 1 violation or failure, 2 bad input).

mod common;

use std::time::Duration;

use common::{assert_exit, fenced_sim, scenario_files, shipped, stderr, stdout, write_file};

/// `fenced-sim` with `args`, killed after `seconds` (a hang is a failure,
/// not a stuck test run).
fn fenced_sim_within(seconds: u64, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_fenced-sim"))
        .current_dir(common::workspace_root())
        .args(args)
        .timeout(Duration::from_secs(seconds))
        .output()
        .expect("fenced-sim runs")
}

/// Asserts the run ended by itself (not killed by the timeout) with `code`.
fn assert_finished_with(out: &std::process::Output, code: i32) {
    assert!(
        out.status.code().is_some(),
        "killed (a hang, or a signal such as SIGABRT)\n--- stderr\n{}",
        stderr(out)
    );
    assert_exit(out, code);
}

/// Every subcommand that reads a scenario file, with `path` as that file.
fn every_reader(path: &str) -> Vec<Vec<String>> {
    let p = path.to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        s(&["run", &p]),
        s(&["check", &p]),
        s(&["explore", &p, "--seeds", "1"]),
        s(&["replay", &p, "--seed", "1"]),
        s(&["shrink", &p, "--seed", "1"]),
    ]
}

// ----- 11: scenario files are bounded and regular -----

#[test]
fn a_device_is_refused_before_it_is_read() {
    // Proves `/dev/zero` (endless) is refused by name, not read until memory runs out, by every subcommand that reads a scenario.
    for args in every_reader("/dev/zero") {
        let out = fenced_sim_within(20, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_finished_with(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("/dev/zero") && err.contains("not a regular file"),
            "{args:?}: {err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_instead_of_blocking() {
    // Proves a named pipe with no writer is refused at once (opening it would block forever), for every reader and for `list`.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let fifo_arg = fifo.to_str().unwrap().to_string();
    for args in every_reader(&fifo_arg) {
        let out = fenced_sim_within(20, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_finished_with(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("FIFO"), "{args:?}: {err}");
    }
    write_file(dir.path(), "ok.toml", common::MINIMAL);
    let out = fenced_sim_within(20, &["list", dir.path().to_str().unwrap()]);
    assert_finished_with(&out, 2);
    let text = stdout(&out);
    assert!(
        text.contains("pipe  INVALID") && text.contains("FIFO"),
        "{text}"
    );
}

#[test]
fn a_directory_and_an_oversized_file_are_refused_with_the_reason() {
    // Proves a directory named like a scenario and a file past the 1 MiB cap are bad input naming the path and why.
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("dir.toml");
    std::fs::create_dir(&sub).unwrap();
    let out = fenced_sim(["check", sub.to_str().unwrap()]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("a directory"), "{}", stderr(&out));

    // Valid TOML all the way: only its size is wrong.
    let padding = format!("# {}\n", "x".repeat(1000)).repeat(1100);
    let big = write_file(
        dir.path(),
        "big.toml",
        &format!("{}{padding}", common::MINIMAL),
    );
    let out = fenced_sim(["run", big.to_str().unwrap()]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("big.toml") && err.contains("larger than 1024 KiB"),
        "{err}"
    );
}

#[test]
fn a_file_just_under_the_cap_still_loads() {
    // Proves the cap does not refuse legitimate files: a valid scenario padded to just under 1 MiB runs.
    let dir = tempfile::tempdir().unwrap();
    let limit = fenced_sim::file::MAX_SCENARIO_FILE_BYTES as usize;
    let mut text = common::MINIMAL.to_string();
    while text.len() + 1002 < limit {
        text.push_str(&format!("# {}\n", "x".repeat(999)));
    }
    assert!(text.len() <= limit);
    let path = write_file(dir.path(), "padded.toml", &text);
    let out = fenced_sim(["check", path.to_str().unwrap()]);
    assert_exit(&out, 0);
}

// ----- 7: every u64 seed round-trips through a saved scenario -----

#[test]
fn a_saved_schedule_with_a_seed_above_i64_max_reloads_and_runs() {
    // Proves seeds >= 2^63 (written by replay --save) load again: TOML integers stop at i64::MAX, so large seeds are saved as strings and read back to the same u64.
    let dir = tempfile::tempdir().unwrap();
    for seed in [0, i64::MAX as u64, 1u64 << 63, u64::MAX] {
        let saved = dir.path().join(format!("seed-{seed}.toml"));
        let seed_arg = seed.to_string();
        let out = fenced_sim([
            "replay",
            "--seed",
            &seed_arg,
            "--json",
            "--save",
            saved.to_str().unwrap(),
        ]);
        assert!(out.status.code() != Some(2), "{}", stderr(&out));
        let replayed: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let reloaded = fenced_sim(["run", saved.to_str().unwrap(), "--json"]);
        assert!(
            reloaded.status.code() != Some(2),
            "seed {seed}: {}",
            stderr(&reloaded)
        );
        let run: serde_json::Value = serde_json::from_str(&stdout(&reloaded)).unwrap();
        assert_eq!(run["seed"].as_u64(), Some(seed));
        assert_eq!(run["trace_hash"], replayed["trace_hash"], "seed {seed}");
    }
}

// ----- 5: explore draws only valid schedules, on every shipped base -----

#[test]
fn explore_reports_no_generator_failure_on_any_shipped_scenario() {
    // Proves explore over every shipped scenario (those with partitions of their own included) draws no schedule the validator refuses. The big fleets get fewer seeds to keep the test fast; tests/explore.rs checks 1000 seeds of every base without running them.
    for file in scenario_files() {
        let file = file.to_str().unwrap().to_string();
        let seeds = if file.contains("-500") {
            "3"
        } else if file.contains("-50") {
            "20"
        } else {
            "200"
        };
        let out = fenced_sim(["explore", &file, "--seeds", seeds, "--jobs", "2", "--json"]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{file}: {}",
            stderr(&out)
        );
        let generator: Vec<String> = stdout(&out)
            .lines()
            .filter(|l| l.contains("\"invariant\":\"generator\""))
            .map(str::to_string)
            .collect();
        assert!(generator.is_empty(), "{file}: {generator:#?}");
        assert!(
            !stderr(&out).contains("generator"),
            "{file}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn explore_on_a_base_with_a_partition_passes() {
    // Proves the audit's reproduction: 1000 seeds on leader-partitioned-from-store and slow-clock-fenced used to report about 195 generator failures and exit 1.
    for name in ["leader-partitioned-from-store", "slow-clock-fenced"] {
        let out = fenced_sim(["explore", &shipped(name), "--seeds", "1000", "--jobs", "2"]);
        assert_exit(&out, 0);
        assert!(
            stderr(&out).contains("1000 seeds") && stderr(&out).contains(": 0 failed"),
            "{name}: {}",
            stderr(&out)
        );
    }
}

// ----- 8: bases that validate but cannot be explored are bad input -----

#[test]
fn a_base_too_long_to_explore_is_refused_up_front_naming_the_key() {
    // Proves a base whose generated runs would exceed the longest run allowed (huge work_duration or rejoin_delay, a near-year duration) exits 2 naming the key, before running any seed, from explore, replay and shrink alike.
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "work",
            "[work]\nwork_duration = \"400d\"\n",
            "work.work_duration",
        ),
        (
            "rejoin",
            "[election]\nrejoin_delay = \"400d\"\n",
            "election.rejoin_delay",
        ),
        ("year", "", "duration"),
    ];
    for (name, section, key) in cases {
        let duration = if name == "year" {
            "364d 23h 59m 50s"
        } else {
            "2m"
        };
        let text = format!(
            "name = \"{name}\"\nduration = \"{duration}\"\n{section}\n[[node]]\nid = \"a\"\n\n[[node]]\nid = \"b\"\n"
        );
        let path = write_file(dir.path(), &format!("{name}.toml"), &text);
        let path = path.to_str().unwrap();
        // The base itself is valid.
        assert_exit(&fenced_sim(["check", path]), 0);
        for args in [
            vec!["explore", path, "--seeds", "1000"],
            vec!["replay", path, "--seed", "1"],
            vec!["shrink", path, "--seed", "1"],
        ] {
            let out = fenced_sim_within(20, &args);
            assert_finished_with(&out, 2);
            let err = stderr(&out);
            assert!(
                err.contains(&format!("`{key}`"))
                    && err.contains("cannot host generated schedules"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("seeds in"), "no seed may run: {err}");
        }
    }
}

// ----- 6: shrink reports what the written file does -----

/// The first violation of `invariant` in `fenced-sim run <file> --json`, as
/// ("seconds.millis", detail).
fn first_violation(file: &str, invariant: &str) -> (String, String) {
    let out = fenced_sim(["run", file, "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let v = report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["invariant"] == invariant)
        .unwrap_or_else(|| panic!("no {invariant} in {report}"));
    let ms = v["at_ms"].as_u64().unwrap();
    (
        format!("{}.{:03}s", ms / 1000, ms % 1000),
        v["detail"].as_str().unwrap().to_string(),
    )
}

#[test]
fn shrink_describes_the_written_file_even_when_the_budget_runs_out() {
    // Proves the violation shrink reports (on stderr and in the file's description) is the one running the written file shows, also when the budget is spent mid-pass (it used to report the original seed's 52.054s while the file broke at 43.014s).
    let dir = tempfile::tempdir().unwrap();
    for budget in ["3", "14", "40", "5000"] {
        let path = dir.path().join(format!("shrunk-{budget}.toml"));
        let path = path.to_str().unwrap();
        let out = fenced_sim([
            "shrink",
            &shipped("gc-pause-unfenced"),
            "--seed",
            "3",
            "--budget",
            budget,
            "-o",
            path,
        ]);
        assert_exit(&out, 0);
        let (at, detail) = first_violation(path, "split-brain");
        let claim = format!("`split-brain` at {at}: {detail}");
        assert!(
            stderr(&out).contains(&claim),
            "budget {budget}: the run says {claim}\n--- stderr\n{}",
            stderr(&out)
        );
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.contains(&format!("breaks `split-brain` at {at} — {detail}")),
            "budget {budget}:\n{text}"
        );
        let runs: u64 = stderr(&out)
            .split(" runs")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("a run count");
        assert!(runs <= budget.parse().unwrap(), "{runs} runs > {budget}");
        if budget == "14" {
            assert!(stderr(&out).contains("budget of 14 runs ran out"));
        }
    }
}
