//! The `fenced-sim` binary, run for real: exit codes, `--json`, `--seed`,
//! `--trace`, the replay line, `check`, `list` and `--help`.

mod common;

use common::{
    assert_exit, edited, fenced_sim, fenced_sim_traced, run_text, scenario_files, shipped, stderr,
    stdout, write_file, MINIMAL,
};
use serde_json::Value;

const UNFENCED: &str = "gc-pause-unfenced";

/// Parses stdout as exactly one JSON object (nothing before or after it but
/// whitespace) and checks it is the report type too.
fn json_report(out: &std::process::Output) -> Value {
    json_value(&stdout(out))
}

/// [`json_report`] of text.
fn json_value(text: &str) -> Value {
    let value: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}):\n{text}"));
    assert!(value.is_object(), "not an object: {text}");
    assert_eq!(text.trim().lines().count(), 1, "one line expected: {text}");
    let _: fenced_sim::Report =
        serde_json::from_value(value.clone()).expect("the JSON is a fenced_sim::Report");
    value
}

#[test]
fn a_passing_scenario_exits_0_and_says_pass() {
    let out = fenced_sim(["run", &shipped("steady-state")]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("Expectations: met"), "{text}");
    assert!(text.contains("\nPASS\n"), "{text}");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn an_unmet_expectation_exits_1_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let impossible = format!("{MINIMAL}\n[expect]\nmin_leader_changes = 100\n");
    let text = run_text(dir.path(), "impossible.toml", &impossible, &[], 1);
    assert!(text.contains("Expectations: NOT met"), "{text}");
    assert!(
        text.contains("min_leader_changes: expected at least 100, got 0"),
        "{text}"
    );
    assert!(text.contains("\nFAIL\n"), "{text}");

    let json = json_value(&run_text(
        dir.path(),
        "impossible.toml",
        &impossible,
        &["--json"],
        1,
    ));
    assert_eq!(json["expect"]["met"], false);
    assert_eq!(
        json["expect"]["unmet"][0],
        "min_leader_changes: expected at least 100, got 0"
    );
}

#[test]
fn gc_pause_unfenced_passes_because_it_expects_split_brain() {
    let out = fenced_sim(["run", &shipped(UNFENCED)]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("[split-brain]"), "{text}");
    assert!(text.contains("fencing OFF"), "{text}");
    assert!(text.contains("Expectations: met"), "{text}");
}

#[test]
fn a_violation_the_scenario_does_not_expect_exits_1() {
    // The same scenario with its expectation flipped: split-brain happens
    // but must not.
    let dir = tempfile::tempdir().unwrap();
    let flipped = edited(UNFENCED, "split_brain = true", "split_brain = false");
    let text = run_text(dir.path(), "flipped.toml", &flipped, &[], 1);
    assert!(text.contains("[split-brain]"), "{text}");
    assert!(
        text.contains("split_brain: expected none, but 1 split-brain write(s) happened"),
        "{text}"
    );

    // Without any `[expect]` a violation still fails the run.
    let text = common::shipped_text(UNFENCED);
    let (without_expect, _) = text.split_once("[expect]").unwrap();
    run_text(dir.path(), "no-expect.toml", without_expect, &[], 1);
}

#[test]
fn expecting_split_brain_where_fencing_prevents_it_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let wishful = edited(
        "gc-pause-fenced",
        "split_brain = false",
        "split_brain = true",
    );
    let text = run_text(dir.path(), "wishful.toml", &wishful, &[], 1);
    assert!(
        text.contains("split_brain: expected a split-brain write, but none happened"),
        "{text}"
    );
}

#[cfg(feature = "planted-bugs")]
#[test]
fn a_planted_bug_is_a_violation_and_exits_1() {
    let out = fenced_sim([
        "run",
        &shipped("gc-pause-fenced"),
        "--plant",
        "downstream-accepts-lower-token",
    ]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("[single-writer]"), "{text}");
    assert!(text.contains("PLANTED BUG: downstream-accepts-lower-token"));
    assert!(
        text.contains("--plant downstream-accepts-lower-token"),
        "{text}"
    );
}

/// A JSON string field.
fn text(v: &Value) -> bool {
    v.is_string()
}

/// A JSON unsigned-integer field.
fn count(v: &Value) -> bool {
    v.is_u64()
}

/// A field's name and a test of its kind.
type Field<'a> = (&'a str, fn(&Value) -> bool);

/// Asserts `array` is a non-empty array of objects that each have `fields`,
/// each of its kind, and returns the rows.
fn rows<'a>(array: &'a Value, fields: &[Field<'_>]) -> &'a [Value] {
    let rows = array.as_array().expect("an array");
    assert!(!rows.is_empty(), "no rows");
    for row in rows {
        for (field, is_kind) in fields {
            assert!(
                is_kind(&row[*field]),
                "`{field}` is missing or mistyped in {row}"
            );
        }
    }
    rows
}

#[test]
fn json_is_one_object_with_the_design_fields() {
    let out = fenced_sim(["run", &shipped(UNFENCED), "--json"]);
    assert_exit(&out, 0);
    let json = json_report(&out);
    assert_eq!(json["scenario"], UNFENCED);
    assert_eq!(json["seed"], 7);
    assert_eq!(json["virtual_ms"], 120_000);
    assert!(json["events"].as_u64().unwrap() > 0);
    let hash = json["trace_hash"].as_str().unwrap();
    assert!(
        hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert_eq!(json["split_brain"], true);

    let violations = rows(
        &json["violations"],
        &[("invariant", text), ("at_ms", count), ("detail", text)],
    );
    assert!(violations.iter().any(|v| v["invariant"] == "split-brain"));

    let terms = rows(
        &json["terms"],
        &[
            ("node", text),
            ("token", count),
            ("start_ms", count),
            ("end_ms", count),
            ("end_reason", text),
        ],
    );
    assert!(terms.len() >= 2);
    assert_eq!(terms[0]["token"], 1);
    assert_eq!(terms[0]["node"], "node-a");

    assert!(json["leader_changes"].as_u64().unwrap() >= 1);
    rows(
        &json["failovers"],
        &[("from", text), ("to", text), ("gap_ms", count)],
    );
    assert!(json["writes"]["accepted"].as_u64().unwrap() > 0);
    assert_eq!(json["writes"]["rejected_stale"], 0);
    assert_eq!(json["expect"]["met"], true);
    assert_eq!(json["expect"]["unmet"], Value::Array(vec![]));

    // The design's fields come first, in its order (serde_json's map sorts
    // keys, so read the order off the text; each first occurrence is the
    // top-level key).
    let text = stdout(&out);
    let design = [
        "scenario",
        "seed",
        "virtual_ms",
        "events",
        "trace_hash",
        "split_brain",
        "violations",
        "terms",
        "leader_changes",
        "failovers",
        "writes",
        "expect",
    ];
    let positions: Vec<usize> = design
        .iter()
        .map(|key| text.find(&format!("\"{key}\":")).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.starts_with("{\"scenario\":"), "{text}");
}

#[test]
fn seed_overrides_the_scenario_and_is_echoed() {
    let out = fenced_sim(["run", &shipped("steady-state"), "--seed", "4242", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(json_report(&out)["seed"], 4242);

    let out = fenced_sim(["run", &shipped("steady-state"), "--seed", "4242"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("  seed 4242 · "), "{text}");
    assert!(
        text.contains("Replay: fenced-sim run scenarios/steady-state.toml --seed 4242\n"),
        "{text}"
    );
}

#[test]
fn the_summary_ends_with_the_replay_command_and_it_replays() {
    let out = fenced_sim(["run", &shipped("heavy-loss-duplication"), "--seed", "5"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let replay = text
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("Replay: "))
        .unwrap_or_else(|| panic!("no replay line at the end:\n{text}"));
    assert_eq!(
        replay,
        "fenced-sim run scenarios/heavy-loss-duplication.toml --seed 5"
    );
    // Running the replay line gives the very same run.
    let words: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let again = fenced_sim(&words);
    assert_exit(&again, 0);
    assert_eq!(stdout(&again), text);
}

#[test]
fn the_replay_command_quotes_a_path_with_spaces() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "my scenario.toml", MINIMAL);
    let out = fenced_sim(["run".as_ref(), path.as_os_str()]);
    assert_exit(&out, 0);
    let expected = format!("Replay: fenced-sim run '{}' --seed 0\n", path.display());
    assert!(stdout(&out).ends_with(&expected), "{}", stdout(&out));
}

#[test]
fn trace_writes_one_line_per_record_and_is_byte_identical_twice() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.trace");
    let second = dir.path().join("second.trace");
    let mut hashes = Vec::new();
    for path in [&first, &second] {
        let out = fenced_sim_traced("gc-pause-fenced", path, &["--json"]);
        assert_exit(&out, 0);
        hashes.push(json_report(&out)["trace_hash"].clone());
    }
    assert_eq!(hashes[0], hashes[1]);
    let a = std::fs::read(&first).unwrap();
    let b = std::fs::read(&second).unwrap();
    assert!(!a.is_empty());
    assert!(a == b, "the two traces differ");

    // One line per record: `<seconds>.<nanoseconds> <host> <what>`, in time order.
    let text = String::from_utf8(a).unwrap();
    assert!(text.ends_with('\n'));
    let mut previous = 0u128;
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let time = fields.next().unwrap_or_default();
        let (secs, nanos) = time
            .split_once('.')
            .unwrap_or_else(|| panic!("no time: {line}"));
        assert_eq!(nanos.len(), 9, "{line}");
        let t = secs.parse::<u128>().unwrap() * 1_000_000_000 + nanos.parse::<u128>().unwrap();
        assert!(t >= previous, "time went backwards at: {line}");
        previous = t;
        assert!(fields.next().is_some(), "no host: {line}");
        assert!(fields.next().is_some(), "no record: {line}");
    }
    assert!(
        text.contains("LEADS with token 2"),
        "no takeover in the trace"
    );
}

#[test]
fn trace_and_json_go_to_their_own_places() {
    // The trace goes to its file, never to stdout.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.trace");
    let out = fenced_sim_traced("steady-state", &trace, &[]);
    assert_exit(&out, 0);
    assert!(!stdout(&out).contains("LEADS with token"));
    assert!(std::fs::read_to_string(&trace)
        .unwrap()
        .contains("LEADS with token 1"));
}

#[test]
fn check_accepts_every_shipped_scenario() {
    let files = scenario_files();
    let mut args = vec!["check".into()];
    args.extend(files.iter().map(|p| p.clone().into_os_string()));
    let out = fenced_sim(&args);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.lines().count(), files.len(), "{text}");
    for file in &files {
        assert!(
            text.contains(&format!("ok    {}", file.display())),
            "{} not reported ok:\n{text}",
            file.display()
        );
    }
}

#[test]
fn check_exits_2_if_any_file_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write_file(dir.path(), "bad.toml", "name = \"x\"\n");
    let good = shipped("steady-state");
    let out = fenced_sim(["check".as_ref(), good.as_ref(), bad.as_os_str()]);
    assert_exit(&out, 2);
    assert!(stdout(&out).contains("ok    scenarios/steady-state.toml"));
    let err = stderr(&out);
    assert!(err.contains(&bad.display().to_string()), "{err}");
    assert!(err.contains("every scenario needs `duration`"), "{err}");
    assert!(err.contains("1 of 2 scenario files are invalid"), "{err}");
}

#[test]
fn list_shows_every_scenario_with_its_description() {
    let out = fenced_sim(["list"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let files = scenario_files();
    let entries = text.lines().filter(|l| !l.starts_with("# ")).count();
    assert_eq!(entries, files.len(), "{text}");
    // Grouped by protocol: the fenced protocol's first, then the zoo's.
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(headers.first(), Some(&"# fenced"), "{text}");
    for name in [
        "client-go",
        "etcd",
        "redlock",
        "connection-lock",
        "zookeeper",
        "dynamodb",
    ] {
        assert!(
            headers.contains(&format!("# {name}").as_str()),
            "{name}: {text}"
        );
    }
    for file in &files {
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let scenario = fenced_sim::file::load(&common::workspace_root().join(file)).unwrap();
        let description = scenario
            .description
            .expect("every shipped scenario is described");
        let words: Vec<&str> = description.split_whitespace().collect();
        assert!(!words.is_empty(), "{stem}: empty description");
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(stem))
            .unwrap_or_else(|| panic!("{stem} not listed:\n{text}"));
        // One line: the description's first sentence.
        let listed = line[stem.len()..].trim().trim_end_matches('…');
        assert!(
            words.join(" ").starts_with(listed),
            "{stem}: `{listed}` is not the start of its description"
        );
        assert!(
            listed.len() >= 20 && listed.len() <= 200,
            "{stem}: {listed}"
        );
    }
    // An explicit directory lists the same.
    let explicit = fenced_sim(["list", "scenarios"]);
    assert_exit(&explicit, 0);
    assert_eq!(stdout(&explicit), text);
}

#[test]
fn list_flags_invalid_files_and_empty_directories() {
    let dir = tempfile::tempdir().unwrap();
    let out = fenced_sim(["list".as_ref(), dir.path().as_os_str()]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("no scenario files"),
        "{}",
        stderr(&out)
    );

    write_file(dir.path(), "good.toml", MINIMAL);
    write_file(dir.path(), "broken.toml", "name = \n");
    let out = fenced_sim(["list".as_ref(), dir.path().as_os_str()]);
    assert_exit(&out, 2);
    let text = stdout(&out);
    assert!(text.contains("good    (no description)"), "{text}");
    assert!(text.contains("broken  INVALID: "), "{text}");

    let missing = dir.path().join("nowhere");
    let out = fenced_sim(["list".as_ref(), missing.as_os_str()]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("cannot list"), "{}", stderr(&out));
}

#[test]
fn help_on_every_subcommand_shows_an_example() {
    for sub in ["run", "check", "list"] {
        let out = fenced_sim([sub, "--help"]);
        assert_exit(&out, 0);
        let text = stdout(&out);
        assert!(text.contains("Example"), "{sub} --help:\n{text}");
        assert!(
            text.contains(&format!("fenced-sim {sub} ")),
            "{sub} --help has no example command line:\n{text}"
        );
    }
    let out = fenced_sim(["--help"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for sub in ["run", "check", "list"] {
        assert!(text.contains(sub), "{text}");
    }
    assert!(text.contains("Exit codes"), "{text}");
}

#[test]
fn printing_into_a_closed_pipe_stops_quietly_instead_of_panicking() {
    // Proves `fenced-sim list | head` (and `check`, `shrink` to stdout) end without a panic when
    // the reader has gone: the pipe is closed before the first line is written, so every write
    // fails with EPIPE (which `println!` turned into exit 101).
    use std::process::{Command, Stdio};
    let commands = [
        vec!["list", "scenarios"],
        vec![
            "check",
            "scenarios/steady-state.toml",
            "scenarios/leader-crash.toml",
        ],
        vec![
            "shrink",
            "scenarios/gc-pause-unfenced.toml",
            "--seed",
            "0",
            "--budget",
            "3",
        ],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fenced-sim"))
            .current_dir(common::workspace_root())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fenced-sim starts");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("it ends");
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "{args:?} ended with {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
