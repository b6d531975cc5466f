//! Bad input never panics and never runs half-way: exit code 2, and an error
//! that names the file, the key (with line and column where the TOML parser
//! gives them), what is wrong and what is allowed.

mod common;

use std::path::Path;

use common::{
    assert_exit, fenced_sim, fenced_sim_traced, shipped, stderr, stdout, write_file, MINIMAL,
};
use fenced_sim::file::{load, parse, LoadError};

/// One malformed scenario and what its error must say.
struct Case {
    /// The file name (without `.toml`).
    name: &'static str,
    /// The whole file.
    text: String,
    /// The key the error names, if any.
    key: Option<&'static str>,
    /// The 1-based line and column, where the file has a place for it.
    at: Option<(usize, usize)>,
    /// Fragments saying what is wrong and what is allowed.
    says: &'static [&'static str],
}

fn case(
    name: &'static str,
    text: impl Into<String>,
    key: Option<&'static str>,
    at: Option<(usize, usize)>,
    says: &'static [&'static str],
) -> Case {
    Case {
        name,
        text: text.into(),
        key,
        at,
        says,
    }
}

/// `MINIMAL` (5 lines) with `more` appended from line 6 on.
fn minimal_plus(more: &str) -> String {
    format!("{MINIMAL}{more}")
}

/// A pause of node-a appended to `MINIMAL`, with the given fields: `kind`
/// on line 7, the next field on line 8, and so on.
fn fault(fields: &str) -> String {
    minimal_plus(&format!("[[fault]]\n{fields}"))
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "not-toml",
            "this is = = not toml\n",
            None,
            Some((1, 6)),
            &["not valid TOML", "expected `=`"],
        ),
        case(
            "empty",
            "",
            None,
            None,
            &["the file is empty", "`name`, `duration` and one [[node]]"],
        ),
        case(
            "blank",
            "\n   \n# only a comment\n",
            None,
            None,
            &[
                "the file has nothing but comments",
                "a scenario needs at least `name`, `duration` and one [[node]]",
            ],
        ),
        case(
            "missing-name",
            "duration = \"1m\"\n[[node]]\nid = \"node-a\"\n",
            Some("name"),
            None,
            &["missing key `name`", "every scenario needs `name`"],
        ),
        case(
            "missing-duration",
            "name = \"x\"\n[[node]]\nid = \"node-a\"\n",
            Some("duration"),
            None,
            &["missing key `duration`", "every scenario needs `duration`"],
        ),
        case(
            "unknown-top-level-key",
            "name = \"x\"\nfencing = false\nduration = \"1m\"\n[[node]]\nid = \"node-a\"\n",
            Some("fencing"),
            Some((2, 1)),
            &[
                "unknown key `fencing`",
                "the keys allowed here are `name`, `description`, `seed`, `duration`",
                "`downstream`",
            ],
        ),
        case(
            "unknown-election-key",
            minimal_plus("[election]\nlease_tll = \"30s\"\n"),
            Some("election.lease_tll"),
            Some((7, 1)),
            &["unknown key `lease_tll`", "`lease_ttl`", "`renew_interval`"],
        ),
        case(
            // After a [[node]] header a key belongs to that node.
            "unknown-node-key",
            minimal_plus("drift = 0.1\n"),
            Some("node[0].drift"),
            Some((6, 1)),
            &["unknown key `drift`", "`clock_drift`"],
        ),
        case(
            "unknown-fault-key",
            fault("kind = \"crash\"\nnode = \"node-a\"\nat = \"5s\"\nrestart = \"1s\"\n"),
            Some("fault[0].restart"),
            Some((10, 1)),
            &["unknown key `restart`", "`restart_after`"],
        ),
        case(
            "unknown-expect-key",
            minimal_plus("[expect]\nsplit_brian = true\n"),
            Some("expect.split_brian"),
            Some((7, 1)),
            &["unknown key `split_brian`", "`split_brain`"],
        ),
        case(
            "no-nodes",
            "name = \"x\"\nduration = \"1m\"\n",
            Some("node"),
            None,
            &["at least one [[node]] is required"],
        ),
        case(
            "duplicate-node-ids",
            minimal_plus("[[node]]\nid = \"node-a\"\n"),
            Some("node[1].id"),
            Some((7, 6)),
            &["duplicate node id `node-a`", "also node[0]", "must be unique"],
        ),
        case(
            "node-named-like-a-host",
            "name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"lease-store\"\n",
            Some("node[0].id"),
            Some((4, 6)),
            &["`lease-store` is the name of a built-in host", "pick another"],
        ),
        case(
            "fault-on-unknown-host",
            fault("kind = \"pause\"\nnode = \"node-z\"\nat = \"5s\"\nduration = \"1s\"\n"),
            Some("fault[0].node"),
            Some((8, 8)),
            &[
                "unknown host `node-z`",
                "known hosts: downstream, lease-store, node-a",
            ],
        ),
        case(
            "cut-from-unknown-host",
            fault("kind = \"cut\"\nfrom = \"store\"\nto = \"node-a\"\nat = \"5s\"\nduration = \"1s\"\n"),
            Some("fault[0].from"),
            Some((8, 8)),
            &["unknown host `store`", "known hosts: downstream, lease-store, node-a"],
        ),
        case(
            "partition-with-unknown-host",
            fault(
                "kind = \"partition\"\ngroups = [[\"node-a\"], [\"nobody\"]]\nat = \"5s\"\nduration = \"1s\"\n",
            ),
            Some("fault[0].groups[1]"),
            Some((8, 10)),
            &["unknown host `nobody`", "known hosts: downstream, lease-store, node-a"],
        ),
        case(
            "unknown-fault-kind",
            fault("kind = \"explode\"\nnode = \"node-a\"\nat = \"5s\"\n"),
            Some("fault[0].kind"),
            Some((7, 8)),
            &[
                "unknown fault kind `explode`",
                "known kinds: pause, isolate, cut, partition, crash, replace",
            ],
        ),
        case(
            "fault-without-kind",
            fault("node = \"node-a\"\nat = \"5s\"\nduration = \"1s\"\n"),
            Some("fault[0].kind"),
            Some((6, 1)),
            &[
                "missing key `kind`",
                "every [[fault]] needs `kind`, one of: pause, isolate, cut, partition, crash, replace",
            ],
        ),
        case(
            "node-without-id",
            minimal_plus("[[node]]\nclock_drift = 0.1\n"),
            Some("node[1].id"),
            Some((6, 1)),
            &["missing key `id`", "every [[node]] needs `id`"],
        ),
        case(
            "malformed-duration",
            "name = \"x\"\nduration = \"1 fortnight\"\n[[node]]\nid = \"node-a\"\n",
            Some("duration"),
            Some((2, 12)),
            &[
                "`1 fortnight` is not a duration",
                "unknown time unit \"fortnight\"",
                "use a duration such as \"30s\", \"1m 30s\" or \"250ms\"",
            ],
        ),
        case(
            "duration-not-a-string",
            "name = \"x\"\nduration = 60\n[[node]]\nid = \"node-a\"\n",
            Some("duration"),
            Some((2, 12)),
            &[
                "expected a string, found integer `60`",
                "use a duration such as \"30s\"",
            ],
        ),
        case(
            "negative-duration",
            minimal_plus("[election]\nlease_ttl = \"-30s\"\n"),
            Some("election.lease_ttl"),
            Some((7, 13)),
            &["`-30s` is negative", "durations must be zero or more"],
        ),
        case(
            "negative-fault-duration",
            fault("kind = \"pause\"\nnode = \"node-a\"\nat = \"5s\"\nduration = \"-1s\"\n"),
            Some("fault[0].duration"),
            Some((10, 12)),
            &["`-1s` is negative", "durations must be zero or more"],
        ),
        case(
            "zero-run-duration",
            "name = \"x\"\nduration = \"0s\"\n[[node]]\nid = \"node-a\"\n",
            Some("duration"),
            Some((2, 12)),
            &["must be greater than zero"],
        ),
        case(
            "loss-above-one",
            minimal_plus("[network]\nloss = 1.5\n"),
            Some("network.loss"),
            Some((7, 8)),
            &["1.5 is not a probability", "it must be in [0, 1]"],
        ),
        case(
            "duplicate-below-zero",
            minimal_plus("[network]\nduplicate = -0.1\n"),
            Some("network.duplicate"),
            Some((7, 13)),
            &["-0.1 is not a probability", "it must be in [0, 1]"],
        ),
        case(
            "loss-not-a-number",
            minimal_plus("[network]\nloss = \"often\"\n"),
            Some("network.loss"),
            Some((7, 8)),
            &["expected a number, found string \"often\""],
        ),
        case(
            "inverted-latency",
            minimal_plus("[network]\nlatency = [\"5ms\", \"1ms\"]\n"),
            Some("network.latency"),
            Some((7, 11)),
            &[
                "the range is inverted: minimum 5ms is above maximum 1ms",
                "write [min, max]",
            ],
        ),
        case(
            "latency-of-three",
            minimal_plus("[network]\nlatency = [\"1ms\", \"2ms\", \"3ms\"]\n"),
            Some("network.latency"),
            Some((7, 11)),
            &["a range needs exactly two durations, [min, max]; got 3"],
        ),
        case(
            "latency-not-a-duration",
            minimal_plus("[network]\nlatency = 5\n"),
            Some("network.latency"),
            Some((7, 11)),
            &["expected one duration or a [min, max] range", "[\"1ms\", \"5ms\"]"],
        ),
        case(
            "zero-ttl",
            minimal_plus("[election]\nlease_ttl = \"0s\"\n"),
            Some("election.lease_ttl"),
            Some((7, 13)),
            &["must be greater than zero"],
        ),
        case(
            "renew-past-the-margin",
            minimal_plus("[election]\nlease_ttl = \"30s\"\nrenew_interval = \"28s\"\n"),
            Some("election.renew_interval"),
            Some((8, 18)),
            &[
                "renew_interval (28s) must be less than lease_ttl - safety_margin (30s - 3s = 27s)",
                "or the leader steps down before it renews",
            ],
        ),
        case(
            "renew-equal-to-ttl-minus-margin",
            minimal_plus(
                "[election]\nlease_ttl = \"10s\"\nsafety_margin = \"2s\"\nrenew_interval = \"8s\"\n",
            ),
            Some("election.renew_interval"),
            Some((9, 18)),
            &["renew_interval (8s) must be less than lease_ttl - safety_margin (10s - 2s = 8s)"],
        ),
        case(
            "fault-after-the-run",
            fault("kind = \"pause\"\nnode = \"node-a\"\nat = \"2m\"\nduration = \"1s\"\n"),
            Some("fault[0].at"),
            Some((9, 6)),
            &["2m is not inside the run's duration of 1m"],
        ),
        case(
            "crash-at-the-very-end",
            fault("kind = \"crash\"\nnode = \"node-a\"\nat = \"1m\"\n"),
            Some("fault[0].at"),
            Some((9, 6)),
            &["1m is not inside the run's duration of 1m"],
        ),
        case(
            "seed-not-an-integer",
            "name = \"x\"\nseed = \"lucky\"\nduration = \"1m\"\n[[node]]\nid = \"node-a\"\n",
            Some("seed"),
            Some((2, 8)),
            &["expected an integer, found string \"lucky\""],
        ),
        case(
            "negative-seed",
            "name = \"x\"\nseed = -1\nduration = \"1m\"\n[[node]]\nid = \"node-a\"\n",
            Some("seed"),
            Some((2, 8)),
            &["the seed must be 0 or more"],
        ),
        case(
            "node-id-too-long-for-an-owner-id",
            format!(
                "name = \"x\"\nduration = \"1m\"\n[[node]]\nid = \"{}\"\n",
                "x".repeat(fenced_sim::MAX_NODE_ID_LEN + 1)
            ),
            Some("node[0].id"),
            Some((4, 6)),
            &["is 245 bytes long; node ids may be at most 244 bytes"],
        ),
        case(
            "retry-interval-over-a-year",
            minimal_plus("[election]\nretry_interval = \"400d\"\n"),
            Some("election.retry_interval"),
            Some((7, 18)),
            &["longer than the limit of one year"],
        ),
        case(
            "network-too-slow-to-elect",
            minimal_plus("[network]\nlatency = [\"14s\", \"15s\"]\n"),
            Some("network.latency"),
            Some((7, 11)),
            &["no node could ever lead"],
        ),
        case(
            "units-of-work-piling-up",
            minimal_plus("[work]\nwrite_interval = \"1ms\"\nwork_duration = \"5h\"\n"),
            Some("work.work_duration"),
            Some((8, 17)),
            &["keeps 18000000 units in progress at once; at most 10000"],
        ),
        case(
            "duplicate-key",
            minimal_plus("[election]\nrole = \"a\"\nrole = \"b\"\n"),
            None,
            Some((8, 1)),
            &["not valid TOML", "duplicate key `role`"],
        ),
    ]
}

fn assert_says(error: &str, case: &Case, file: &Path) {
    assert!(
        !error.contains("panicked"),
        "{}: the binary panicked:\n{error}",
        case.name
    );
    let file = file.display().to_string();
    let place = match case.at {
        Some((line, column)) => format!("{file}:{line}:{column}: "),
        None => format!("{file}: "),
    };
    assert!(
        error.contains(&format!("error: {place}")),
        "{}: expected `{place}` in:\n{error}",
        case.name
    );
    if let Some(key) = case.key {
        assert!(
            error.contains(&format!("{place}`{key}`: ")),
            "{}: the key `{key}` is not named in:\n{error}",
            case.name
        );
    }
    for fragment in case.says {
        assert!(
            error.contains(fragment),
            "{}: expected {fragment:?} in:\n{error}",
            case.name
        );
    }
}

#[test]
fn every_bad_scenario_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    for case in cases() {
        let path = write_file(dir.path(), &format!("{}.toml", case.name), &case.text);
        for command in ["run", "check"] {
            let out = fenced_sim([command.as_ref(), path.as_os_str()]);
            assert_exit(&out, 2);
            assert_says(&stderr(&out), &case, &path);
            if command == "run" {
                assert!(
                    stdout(&out).is_empty(),
                    "{}: a bad scenario must not run:\n{}",
                    case.name,
                    stdout(&out)
                );
            }
        }
    }
}

#[test]
fn the_library_reports_file_key_line_and_column() {
    let origin = Path::new("bad.toml");
    for case in cases() {
        let e: LoadError = parse(&case.text, origin)
            .err()
            .unwrap_or_else(|| panic!("{} was accepted", case.name));
        assert_eq!(e.file, origin, "{}", case.name);
        assert_eq!(e.key.as_deref(), case.key, "{}: {e}", case.name);
        if let Some((line, column)) = case.at {
            assert_eq!(e.line, Some(line), "{}: {e}", case.name);
            assert_eq!(e.column, Some(column), "{}: {e}", case.name);
        }
        for fragment in case.says {
            assert!(e.message.contains(fragment), "{}: {e}", case.name);
        }
        // The message is the text after the place and the key.
        assert!(e.to_string().ends_with(&e.message), "{e}");
    }
}

#[test]
fn a_load_error_displays_as_file_line_column_key_message() {
    let e = parse(
        &minimal_plus("[election]\nlease_tll = \"30s\"\n"),
        Path::new("scenarios/typo.toml"),
    )
    .unwrap_err();
    assert_eq!(
        e,
        LoadError {
            file: "scenarios/typo.toml".into(),
            line: Some(7),
            column: Some(1),
            key: Some("election.lease_tll".to_string()),
            message: e.message.clone(),
        }
    );
    assert!(
        e.to_string().starts_with(
            "scenarios/typo.toml:7:1: `election.lease_tll`: unknown key `lease_tll`; \
             the keys allowed here are `role`, `lease_ttl`,"
        ),
        "{e}"
    );

    // A second [[fault]] is `fault[1]`, and its line is its own.
    let e = parse(
        &minimal_plus(
            "[[fault]]\nkind = \"pause\"\nnode = \"node-a\"\nat = \"5s\"\nduration = \"1s\"\n\
             [[fault]]\nkind = \"isolate\"\nnode = \"ghost\"\nat = \"5s\"\nduration = \"1s\"\n",
        ),
        Path::new("t.toml"),
    )
    .unwrap_err();
    assert_eq!(e.key.as_deref(), Some("fault[1].node"));
    assert_eq!((e.line, e.column), (Some(13), Some(8)));
}

#[test]
fn a_missing_file_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.toml");
    let e = load(&path).unwrap_err();
    assert_eq!(e.file, path);
    assert_eq!((e.line, e.column, e.key.as_deref()), (None, None, None));
    assert_eq!(e.message, "no such file");

    for command in ["run", "check"] {
        let out = fenced_sim([command.as_ref(), path.as_os_str()]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains(&format!("error: {}: no such file", path.display())),
            "{err}"
        );
    }
}

#[test]
fn an_unwritable_trace_path_is_bad_input_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let into_missing_dir = dir.path().join("no-such-dir").join("run.trace");
    let onto_a_directory = dir.path().to_path_buf();
    for trace in [into_missing_dir, onto_a_directory] {
        let out = fenced_sim_traced("steady-state", &trace, &[]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains(&format!("cannot write the trace to {}: ", trace.display())),
            "{err}"
        );
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
}

#[test]
fn bad_flags_are_bad_input() {
    let steady = shipped("steady-state");
    for args in [
        vec!["run"],
        vec!["run", steady.as_str(), "--seed", "lucky"],
        vec!["run", steady.as_str(), "--seed", "-1"],
        vec!["run", steady.as_str(), "--frobnicate"],
        vec!["check"],
        vec!["explode"],
        vec![],
    ] {
        let out = fenced_sim(&args);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") || err.contains("Usage:"),
            "{args:?}: {err}"
        );
    }
}

#[cfg(feature = "planted-bugs")]
#[test]
fn an_unknown_planted_bug_is_bad_input() {
    let out = fenced_sim(["run", &shipped("steady-state"), "--plant", "nope"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("unknown planted bug `nope`"), "{err}");
    assert!(err.contains("downstream-accepts-lower-token"), "{err}");
}

#[cfg(feature = "planted-bugs")]
#[test]
fn a_bug_of_the_tokio_driver_cannot_be_planted_in_the_simulator() {
    // The simulator drives the pure machines and feeds them `now`: a driver
    // that reads the wall clock does not exist here, so planting it would
    // test nothing. Refused, naming where it can be planted.
    let out = fenced_sim([
        "run",
        &shipped("node-wall-clock-steps"),
        "--plant",
        "driver-reads-wall-clock",
    ]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("a bug of the tokio driver"), "{err}");
    assert!(err.contains("fenced-lab run --plant"), "{err}");
}

#[test]
fn a_run_beyond_the_event_budget_is_refused_by_the_binary() {
    // Proves audit item 14 through the binary: heartbeats every nanosecond for a year exit 2 at
    // once, naming the key and the flag, instead of running for ever.
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "busy.toml",
        "name = \"busy\"\nduration = \"365d\"\n[membership]\nheartbeat_interval = \"1ns\"\n\
         [[node]]\nid = \"node-a\"\n",
    );
    let out = fenced_sim([std::ffi::OsStr::new("run"), path.as_os_str()]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("`membership.heartbeat_interval`"), "{err}");
    assert!(err.contains("--max-events"), "{err}");
}
