//! Campaigns beyond one machine: `explore --shard-from-env`, the shard lines
//! of `explore --json --summary`, `fenced-sim merge`, and the Kubernetes
//! Indexed Job in `deploy/kubernetes/` (validated against the Kubernetes
//! schema with `kubernetes-validate`).

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{assert_exit, shipped, stderr, stdout, workspace_root};
use fenced_sim::explore::{CampaignSummary, SeedRange};
use fenced_sim::merge::{
    CampaignIdentity, SeedLines, ShardSummary, ShardTiming, FORMAT, SUMMARY_KEY,
};

const BIN: &str = env!("CARGO_BIN_EXE_fenced-sim");

/// A base on which about half of the seeds fail (split-brain, fencing
/// off), and fast: failures, with their replay commands, get merged too.
const UNFENCED: &str = "gc-pause-unfenced";

/// `fenced-sim args` from the workspace root, with `env` set (and
/// `JOB_COMPLETION_INDEX` unset unless given), killed after 120 s.
fn sim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = assert_cmd::Command::new(BIN);
    cmd.current_dir(workspace_root())
        .env_remove("JOB_COMPLETION_INDEX")
        .args(args)
        .timeout(Duration::from_secs(120));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("fenced-sim runs")
}

/// `fenced-sim merge args` with `input` on standard input.
fn merge_stdin(args: &[&str], input: &str) -> Output {
    assert_cmd::Command::new(BIN)
        .current_dir(workspace_root())
        .arg("merge")
        .args(args)
        .write_stdin(input.as_bytes().to_vec())
        .timeout(Duration::from_secs(120))
        .output()
        .expect("fenced-sim runs")
}

/// Runs shards `0..n` of `explore BASE --seeds SEEDS --json --summary
/// EXTRA` as `n` processes at once, each told its index by
/// `JOB_COMPLETION_INDEX` like a pod of an Indexed Job; returns their
/// outputs in shard order.
fn run_shards(base: Option<&str>, seeds: u64, n: u64, extra: &[&str]) -> Vec<String> {
    let seeds = seeds.to_string();
    let shards = n.to_string();
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut cmd = Command::new(BIN);
            cmd.current_dir(workspace_root())
                .arg("explore")
                .args(base)
                .args(["--seeds", &seeds, "--json", "--summary"])
                .args(["--shard-from-env", "--shards", &shards])
                .args(extra)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            cmd.spawn().expect("fenced-sim starts")
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("fenced-sim runs");
            assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
            stdout(&out)
        })
        .collect()
}

/// Writes each text as a file in `dir`; returns their paths as strings.
fn files(dir: &Path, prefix: &str, texts: &[String]) -> Vec<String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let path: PathBuf = dir.join(format!("{prefix}-{i}.jsonl"));
            std::fs::write(&path, text).expect("writable");
            path.display().to_string()
        })
        .collect()
}

/// `fenced-sim merge FILES ARGS`.
fn merge(files: &[String], args: &[&str]) -> Output {
    let mut all: Vec<&str> = vec!["merge"];
    all.extend(files.iter().map(String::as_str));
    all.extend(args);
    sim(&all, &[])
}

/// The lines of all `texts`, interleaved one by one (as the logs of pods
/// running at once might be).
fn interleaved(texts: &[String]) -> String {
    let mut lines: Vec<std::str::Lines> = texts.iter().map(|t| t.lines()).collect();
    let mut out = String::new();
    loop {
        let mut any = false;
        for l in &mut lines {
            if let Some(line) = l.next() {
                out.push_str(line);
                out.push('\n');
                any = true;
            }
        }
        if !any {
            return out;
        }
    }
}

#[test]
fn n_local_shards_merge_to_the_single_process_verdict() {
    // Proves the first test: N processes with JOB_COMPLETION_INDEX = 0..N-1, merged, give byte for byte the verdict of one process over the same seeds (JSON and text, timing left out), whatever N, from files, from one interleaved stream mixed with non-JSON log lines, and with --failures-only; the failures (over the listing cap) keep their replay and shrink commands.
    let dir = tempfile::tempdir().unwrap();
    let base = shipped(UNFENCED);
    let seeds = 300;
    let one = run_shards(Some(&base), seeds, 1, &[]);
    let one_files = files(dir.path(), "one", &one);
    let reference = merge(&one_files, &["--json", "--no-timing"]);
    assert_exit(&reference, 1);
    let reference = stdout(&reference);
    let text_reference = stdout(&merge(&one_files, &["--no-timing"]));
    let verdict: serde_json::Value = serde_json::from_str(&reference).unwrap();
    assert_eq!(verdict["totals"]["seeds"], seeds);
    assert!(verdict["timing"].is_null(), "{reference}");
    let failed = verdict["totals"]["failed"].as_u64().unwrap();
    assert!(failed > 100, "the listing cap is exercised: {failed}");
    let failures = verdict["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 100);
    assert_eq!(verdict["failures_omitted"], failed - 100);
    let first = &failures[0];
    let seed = first["seed"].as_u64().unwrap();
    assert_eq!(
        first["replay"],
        format!("fenced-sim replay {base} --seed {seed}")
    );
    assert_eq!(
        first["shrink"],
        format!("fenced-sim shrink {base} --seed {seed} -o seed-{seed}.toml")
    );
    assert!(text_reference.contains(&format!("replay: fenced-sim replay {base} --seed {seed}")));
    assert!(text_reference.contains("run twice for determinism, all deterministic"));
    assert!(!text_reference.contains("timing:"));

    for n in [2, 3, 7] {
        let shards = run_shards(Some(&base), seeds, n, &[]);
        let paths = files(dir.path(), &format!("n{n}"), &shards);
        let merged = merge(&paths, &["--json", "--no-timing"]);
        assert_exit(&merged, 1);
        assert_eq!(stdout(&merged), reference, "N = {n}");
        assert_eq!(
            stdout(&merge(&paths, &["--no-timing"])),
            text_reference,
            "N = {n}"
        );
        // One stream, the shards' lines interleaved, with a log's other
        // output in between.
        let mut stream = interleaved(&shards);
        stream.insert_str(0, "300 seeds (shard 0/3) in 0.10s\nwarning: something\n");
        let merged = merge_stdin(&["--json", "--no-timing", "-"], &stream);
        assert_exit(&merged, 1);
        assert_eq!(stdout(&merged), reference, "N = {n}, one stream");
        assert!(stderr(&merged).contains("skipped 2 lines that are not JSON"));
    }
    // Failing seeds only: the same verdict from much smaller logs.
    let small = run_shards(Some(&base), seeds, 3, &["--failures-only"]);
    assert!(small.iter().all(|s| !s.contains("\"ok\":true")));
    let merged = merge(
        &files(dir.path(), "small", &small),
        &["--json", "--no-timing"],
    );
    assert_eq!(stdout(&merged), reference);
    // With timing: seeds/s and the time acceleration, apart.
    let timed = merge(&one_files, &["--json"]);
    let timed: serde_json::Value = serde_json::from_str(&stdout(&timed)).unwrap();
    assert_eq!(timed["timing"]["shards"], 1);
    assert!(timed["timing"]["shard_wall_s"].as_f64().unwrap() >= 0.0);
    let text = stdout(&merge(&one_files, &[]));
    assert!(text.contains("time acceleration"), "{text}");
}

#[test]
fn a_passing_campaign_merges_to_exit_0_and_summary_lines_only_add_fields() {
    // Proves exit 0 for a campaign without failure (the default fleet), N = 1 and 4 agreeing, and that --summary only adds fields to the seed lines of --json: removing campaign, shard, shards, virtual_ms and shrink gives the plain lines back, byte for byte.
    let dir = tempfile::tempdir().unwrap();
    let one = run_shards(None, 40, 1, &[]);
    let four = run_shards(None, 40, 4, &[]);
    let a = merge(&files(dir.path(), "a", &one), &["--json", "--no-timing"]);
    let b = merge(&files(dir.path(), "b", &four), &["--json", "--no-timing"]);
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    assert_eq!(stdout(&a), stdout(&b));
    let verdict: serde_json::Value = serde_json::from_str(&stdout(&a)).unwrap();
    assert_eq!(verdict["ok"], true);
    assert!(verdict["totals"]["virtual_ms"].as_u64().unwrap() > 40 * 600_000);

    let unfenced = shipped(UNFENCED);
    for (args, summary_args) in [
        (
            vec!["explore", "--seeds", "40", "--json"],
            vec!["explore", "--seeds", "40", "--json", "--summary"],
        ),
        (
            vec![
                "explore", &unfenced, "--seeds", "20", "--json", "--shard", "1/3",
            ],
            vec![
                "explore",
                &unfenced,
                "--seeds",
                "20",
                "--json",
                "--summary",
                "--shard",
                "1/3",
            ],
        ),
    ] {
        let plain = stdout(&sim(&args, &[]));
        let rich = stdout(&sim(&summary_args, &[]));
        let mut rich_lines: Vec<&str> = rich.lines().collect();
        let last = rich_lines.pop().unwrap();
        assert!(last.starts_with(&format!("{{\"{SUMMARY_KEY}\":")), "{last}");
        let stripped: Vec<String> = rich_lines
            .iter()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                let map = v.as_object_mut().unwrap();
                for key in ["campaign", "shard", "shards", "virtual_ms", "shrink"] {
                    map.remove(key);
                }
                v.to_string()
            })
            .collect();
        assert_eq!(stripped, plain.lines().collect::<Vec<_>>());
    }
}

/// Three shards of 30 seeds of the unfenced base, as files.
fn three_shards(dir: &Path) -> (Vec<String>, Vec<String>) {
    let texts = run_shards(Some(&shipped(UNFENCED)), 30, 3, &[]);
    let paths = files(dir, "shard", &texts);
    (texts, paths)
}

/// Asserts a merge is refused (exit 2, no verdict on standard output)
/// with every one of `needles` in its message.
fn refused(out: &Output, needles: &[&str]) {
    assert_exit(out, 2);
    assert!(stdout(out).is_empty(), "{}", stdout(out));
    let err = stderr(out);
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` not in:\n{err}");
    }
}

/// The lines of `text` rewritten as those of a campaign of another
/// fenced-sim version: a consistent campaign, only not the same one.
fn as_version(text: &str, version: &str) -> String {
    let mut out = String::new();
    let mut id = String::new();
    let lines: Vec<&str> = text.lines().collect();
    // The summary first: it gives the new id.
    let last: serde_json::Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    let mut summary: ShardSummary = serde_json::from_value(last[SUMMARY_KEY].clone()).unwrap();
    summary.identity.fenced_sim = version.to_string();
    summary.campaign = summary.identity.id();
    id.push_str(&summary.campaign);
    for line in &lines[..lines.len() - 1] {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["campaign"] = id.clone().into();
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out.push_str(&summary.to_line());
    out.push('\n');
    out
}

#[test]
fn missing_repeated_truncated_unfinished_or_mixed_shards_are_refused() {
    // Proves the second test: a missing shard, a duplicated shard, a truncated line, a pod that died midway, campaigns of different bases, starts or versions mixed, shards of two splits, an edited summary, plain --json lines, empty or unreadable input: each exit 2, no verdict, and a message naming the problem and the seeds.
    let dir = tempfile::tempdir().unwrap();
    let (texts, paths) = three_shards(dir.path());
    assert_exit(&merge(&paths, &[]), 1);

    // Shard 1/3 missing: its seeds are named.
    let out = merge(&[paths[0].clone(), paths[2].clone()], &[]);
    refused(
        &out,
        &[
            "shard 1/3 wrote nothing",
            "seeds 1, 4, …, 28 (10 seeds)",
            "10 of the campaign's 30 seeds are unaccounted for",
        ],
    );
    // Shard 1/3 given twice.
    let mut twice = paths.clone();
    twice.push(paths[1].clone());
    refused(
        &merge(&twice, &[]),
        &[
            "a second summary of shard 1/3",
            "10 seed lines repeat seeds already seen",
        ],
    );
    // The summary line cut in half (a pod killed while writing it).
    let last = texts[2].trim_end().rfind('\n').unwrap() + 1;
    let cut = &texts[2][..last + 40];
    let cut_path = files(dir.path(), "cut", &[cut.to_string()]).remove(0);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), cut_path.clone()], &[]),
        &[
            &format!("{cut_path}:11: not a complete JSON line (truncated?)"),
            "shard 2/3 did not finish",
        ],
    );
    // A seed line cut in the middle of the stream.
    let mut lines: Vec<String> = texts[0].lines().map(str::to_string).collect();
    lines[3].truncate(25);
    let broken = files(dir.path(), "broken", &[lines.join("\n") + "\n"]).remove(0);
    refused(
        &merge(&[broken.clone(), paths[1].clone(), paths[2].clone()], &[]),
        &[&format!("{broken}:4: not a complete JSON line")],
    );
    // A pod that died after 4 of its 10 seeds: no summary line.
    let head: String = texts[2].lines().take(4).map(|l| format!("{l}\n")).collect();
    let head = files(dir.path(), "died", &[head]).remove(0);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), head], &[]),
        &[
            "shard 2/3 did not finish (no summary line",
            "4 of its 10 seeds accounted for; missing: 14, 17, …, 29 (6 seeds)",
            "6 of the campaign's 30 seeds are unaccounted for",
        ],
    );
    // Another base, another start, another version.
    let default_base = run_shards(None, 30, 3, &[]);
    let other = files(dir.path(), "default", &default_base);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), other[2].clone()], &[]),
        &["the input mixes 2 campaigns", "base", "default"],
    );
    let moved = run_shards(Some(&shipped(UNFENCED)), 30, 3, &["--start", "1"]);
    let moved = files(dir.path(), "moved", &moved);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), moved[2].clone()], &[]),
        &["the input mixes 2 campaigns", "start 0 vs 1"],
    );
    let old = files(dir.path(), "old", &[as_version(&texts[2], "0.0.1")]).remove(0);
    let version = env!("CARGO_PKG_VERSION");
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), old], &[]),
        &[
            "the input mixes 2 campaigns",
            &format!("fenced_sim {version} vs 0.0.1"),
        ],
    );
    // Shards of two splits of the same campaign.
    let two = run_shards(Some(&shipped(UNFENCED)), 30, 2, &[]);
    let two = files(dir.path(), "two", &two);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), two[1].clone()], &[]),
        &["shards of different shard counts mixed: 2", "and 3"],
    );
    // A summary whose settings were edited (its id no longer matches).
    let edited = texts[2].replace("\"seeds\":30,\"start\"", "\"seeds\":31,\"start\"");
    assert_ne!(edited, texts[2]);
    let edited = files(dir.path(), "edited", &[edited]).remove(0);
    refused(
        &merge(&[paths[0].clone(), paths[1].clone(), edited], &[]),
        &["edited or corrupted", "shard 2/3 did not finish"],
    );
    // Plain --json lines (no --summary).
    let plain = stdout(&sim(&["explore", "--seeds", "3", "--json"], &[]));
    refused(
        &merge_stdin(&["-"], &plain),
        &["-:1: 3 seed lines without `campaign`", "--summary"],
    );
    // Nothing, or nothing readable.
    refused(&merge_stdin(&["-"], ""), &["no campaign in the input"]);
    refused(
        &merge_stdin(&["-"], "just a log line\n"),
        &["no campaign in the input"],
    );
    refused(
        &merge(&["no-such-file.jsonl".to_string()], &[]),
        &["cannot read no-such-file.jsonl"],
    );
    refused(&merge_stdin(&["-", "-"], ""), &["given twice"]);
    refused(
        &merge_stdin(&["-"], "{\"seed\":\"x\"}\n{}\n"),
        &[
            "-:1: not a line of `explore --json --summary`",
            "-:2: neither a seed line nor a summary line",
        ],
    );
}

/// A crafted summary of shard `i` of `n` of a campaign of `seeds` seeds on
/// the default base: every count consistent with its plan.
fn crafted_summary(seeds: u64, i: u64, n: u64) -> String {
    let identity = CampaignIdentity::new(None, &fenced_sim::explore::default_base(), "", 0, seeds);
    let plan = identity.plan(i, n);
    ShardSummary {
        format: FORMAT,
        campaign: identity.id(),
        identity,
        shard: i,
        shards: n,
        seed_lines: SeedLines::Failures,
        totals: CampaignSummary {
            seeds: plan.len(),
            virtual_ms: plan.len() * 700_000,
            events: plan.len() * 7000,
            ..CampaignSummary::default()
        },
        failures: Vec::new(),
        timing: ShardTiming {
            wall_ms: 1000,
            jobs: 2,
        },
    }
    .to_line()
}

#[test]
fn a_ten_million_seed_plan_is_computed_not_counted() {
    // Proves the third test: a 10^7-seed shard's plan is arithmetic (its length, k-th and last seed, membership), and merge checks shards of a 10^7-seed campaign — and of a u64::MAX-seed one — against their plans at once, naming the missing seeds as a progression.
    let plan = SeedRange {
        start: 5,
        count: 10_000_000,
        shard: 3,
        shards: 7,
    };
    assert_eq!(plan.len(), 1_428_571);
    assert_eq!(plan.nth(0), Some(8));
    assert_eq!(plan.last(), Some(5 + 3 + 7 * 1_428_570));
    assert!(plan.contains(8 + 7 * 1000) && !plan.contains(9) && !plan.contains(4));
    assert_eq!(plan.nth(1_428_571), None);

    let seeds = 10_000_000;
    let lines: Vec<String> = (0..4).map(|i| crafted_summary(seeds, i, 4)).collect();
    let all = merge_stdin(&["--json", "-"], &(lines.join("\n") + "\n"));
    assert_exit(&all, 0);
    let verdict: serde_json::Value = serde_json::from_str(&stdout(&all)).unwrap();
    assert_eq!(verdict["totals"]["seeds"], seeds);
    assert_eq!(verdict["timing"]["seeds_per_s_per_shard"], 2_500_000.0);
    assert_eq!(verdict["timing"]["seeds_per_s_per_thread"], 1_250_000.0);
    assert_eq!(verdict["timing"]["acceleration_per_thread"], 875_000_000.0);
    let missing = [&lines[0], &lines[1], &lines[3]]
        .map(|l| format!("{l}\n"))
        .concat();
    refused(
        &merge_stdin(&["-"], &missing),
        &[
            "shard 2/4 wrote nothing",
            "seeds 2, 6, …, 9999998 (2 500 000 seeds)",
            "2 500 000 of the campaign's 10 000 000 seeds are unaccounted for",
        ],
    );
    // u64::MAX seeds in u64::MAX shards, one of them given.
    let huge = crafted_summary(u64::MAX, 5, u64::MAX);
    refused(
        &merge_stdin(&["-"], &(huge + "\n")),
        &[
            "shard 0/18446744073709551615 wrote nothing",
            "more shards wrote nothing",
            "18 446 744 073 709 551 614 of the campaign's",
        ],
    );
}

#[test]
fn explore_takes_its_shard_from_the_environment() {
    // Proves --shard-from-env runs the shard named by JOB_COMPLETION_INDEX (or --shard-from-env=VAR), the same lines as --shard I/N, and that a missing, malformed or out-of-range index, or a missing --shards, is bad input naming the variable.
    let by_flag = sim(
        &["explore", "--seeds", "9", "--json", "--shard", "2/3"],
        &[],
    );
    assert_exit(&by_flag, 0);
    let by_env = sim(
        &[
            "explore",
            "--seeds",
            "9",
            "--json",
            "--shard-from-env",
            "--shards",
            "3",
        ],
        &[("JOB_COMPLETION_INDEX", "2")],
    );
    assert_exit(&by_env, 0);
    assert_eq!(stdout(&by_flag), stdout(&by_env));
    let by_var = sim(
        &[
            "explore",
            "--seeds",
            "9",
            "--json",
            "--shard-from-env=MY_INDEX",
            "--shards",
            "3",
        ],
        &[("MY_INDEX", "2")],
    );
    assert_eq!(stdout(&by_flag), stdout(&by_var));
    let base = [
        "explore",
        "--seeds",
        "9",
        "--shard-from-env",
        "--shards",
        "3",
    ];
    for (env, needle) in [
        (None, "JOB_COMPLETION_INDEX is not set"),
        (Some("x"), "JOB_COMPLETION_INDEX `x` is not a shard index"),
        (Some("-1"), "JOB_COMPLETION_INDEX `-1` is not a shard index"),
        (Some("3"), "JOB_COMPLETION_INDEX 3 is not below --shards 3"),
    ] {
        let env: Vec<(&str, &str)> = env
            .map(|v| ("JOB_COMPLETION_INDEX", v))
            .into_iter()
            .collect();
        let out = sim(&base, &env);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
    }
    for (args, needle) in [
        (
            vec!["explore", "--seeds", "9", "--shard-from-env"],
            "--shards",
        ),
        (
            vec!["explore", "--seeds", "9", "--shards", "3"],
            "--shard-from-env",
        ),
        (
            vec![
                "explore",
                "--seeds",
                "9",
                "--shard-from-env",
                "--shards",
                "3",
                "--shard",
                "1/3",
            ],
            "--shard",
        ),
        (
            vec![
                "explore",
                "--seeds",
                "9",
                "--shard-from-env",
                "--shards",
                "0",
            ],
            "--shards must be at least 1",
        ),
        (
            vec![
                "explore",
                "--seeds",
                "2",
                "--shard-from-env",
                "--shards",
                "3",
            ],
            "runs no seed",
        ),
        (vec!["explore", "--seeds", "9", "--summary"], "--json"),
        (
            vec!["explore", "--seeds", "9", "--json", "--failures-only"],
            "--summary",
        ),
    ] {
        let out = sim(&args, &[("JOB_COMPLETION_INDEX", "2")]);
        assert_exit(&out, 2);
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

/// Peak resident memory of process `pid` so far, KiB.
#[cfg(target_os = "linux")]
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(target_os = "linux")]
#[test]
fn a_shard_and_its_merge_stream_in_flat_memory() {
    // Proves a shard with --summary keeps no more than explore did (a 10^9-seed shard runs in a few MiB), and that merge keeps counts, not lines: its peak memory after 200 000 seed lines is that after 20 000.
    let mut child = Command::new(BIN)
        .current_dir(workspace_root())
        .args([
            "explore",
            "--seeds",
            "1000000000",
            "--jobs",
            "2",
            "--json",
            "--summary",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let peak = peak_rss_kib(child.id()).unwrap_or(u64::MAX);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(running && peak < 100 * 1024, "peak RSS {peak} KiB");

    let identity =
        CampaignIdentity::new(None, &fenced_sim::explore::default_base(), "", 0, 1_000_000);
    let id = identity.id();
    let mut merge = Command::new(BIN)
        .args(["merge", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = merge.id();
    let mut input = std::io::BufWriter::new(merge.stdin.take().unwrap());
    let mut peaks = Vec::new();
    for seed in 0..200_000u64 {
        writeln!(
            input,
            "{{\"seed\":{seed},\"ok\":true,\"campaign\":\"{id}\",\"shard\":0,\"shards\":1,\
             \"events\":7000,\"virtual_ms\":700000,\"determinism_checked\":false,\
             \"mix\":[\"pause\"],\"coverage\":{{}},\"replay\":\"fenced-sim replay --seed {seed}\"}}"
        )
        .unwrap();
        if seed == 20_000 || seed == 199_999 {
            input.flush().unwrap();
            // Let merge catch up with what was written.
            std::thread::sleep(Duration::from_millis(1500));
            peaks.push(peak_rss_kib(pid).unwrap_or(u64::MAX));
        }
    }
    drop(input);
    let status = merge.wait().unwrap();
    // No summary line: the shard did not finish, and merge says so.
    assert_eq!(status.code(), Some(2));
    assert!(
        peaks[1] <= peaks[0] + 1024,
        "merge grew from {} KiB to {} KiB",
        peaks[0],
        peaks[1]
    );
}

/// The Kubernetes manifest.
fn manifest() -> PathBuf {
    workspace_root().join("deploy/kubernetes/explore-job.yaml")
}

/// Python with `kubernetes-validate`, or `None` (which fails the test when
/// `FENCED_REQUIRE_K8S_VALIDATE=1`, as in `.ci/run`).
fn python_with_validator() -> Option<String> {
    let python = std::env::var("FENCED_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let found = Command::new(&python)
        .args(["-m", "kubernetes_validate", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(python);
    }
    let required = std::env::var("FENCED_REQUIRE_K8S_VALIDATE").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "FENCED_REQUIRE_K8S_VALIDATE=1 but `{python} -m kubernetes_validate` does not run: \
         `{python} -m pip install kubernetes-validate` (.ci/run does)"
    );
    eprintln!(
        "SKIPPED: the manifest's schema check needs `{python} -m pip install \
         kubernetes-validate` (set FENCED_REQUIRE_K8S_VALIDATE=1 to make this a failure)"
    );
    None
}

#[test]
fn the_kubernetes_indexed_job_is_valid_and_its_command_line_runs() {
    // Proves deploy/kubernetes/explore-job.yaml is a valid batch/v1 Job under the Kubernetes 1.33 schema (strict: no unknown field), an Indexed Job with per-index retries, and that its container's command line is one fenced-sim accepts, with --shards equal to the Job's completions.
    let Some(python) = python_with_validator() else {
        return;
    };
    let path = manifest();
    for version in ["1.33.0", "1.37.0"] {
        let out = Command::new(&python)
            .args(["-m", "kubernetes_validate", "--strict", "-k", version])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "kubernetes {version}:\n{}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    // The Job, as JSON (kubernetes-validate brings PyYAML).
    let out = Command::new(&python)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let docs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(docs.len(), 1);
    let job = &docs[0];
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert!(spec["backoffLimitPerIndex"].as_u64().is_some());
    let completions = spec["completions"].as_u64().unwrap();
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    assert!(container["resources"]["requests"]["memory"].is_string());
    let command: Vec<String> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .chain(container["args"].as_array().unwrap())
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(command[0].ends_with("fenced-sim"), "{command:?}");
    let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
    for flag in ["--shard-from-env", "--json", "--summary"] {
        assert!(args.contains(&flag), "{args:?}");
    }
    // Run by a pod one past the last: every flag parses, and the index is
    // checked against --shards, which must be the Job's completions.
    let out = sim(&args, &[("JOB_COMPLETION_INDEX", &completions.to_string())]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!(
            "JOB_COMPLETION_INDEX {completions} is not below --shards {completions}"
        )),
        "{}",
        stderr(&out)
    );
}
