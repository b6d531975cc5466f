//! The shipped scenario library: every file in `scenarios/` loads, runs to
//! its end through the library, meets its own `[expect]` block, and its
//! human summary is snapshotted, so a change of behaviour shows in review.
//! Also snapshotted: the full text trace of `gc-pause-fenced` and the
//! `--json` report of `gc-pause-unfenced`.

mod common;

use std::path::PathBuf;

use fenced_sim::Transport;

use common::{
    assert_exit, fenced_sim, run_library, scenario_files, shipped, stdout, Run, SharedBuf,
};

/// Runs every shipped scenario, in file order.
fn run_all() -> Vec<(PathBuf, Run)> {
    scenario_files()
        .into_iter()
        .map(|file| {
            let run = run_library(&file, None);
            (file, run)
        })
        .collect()
}

#[test]
fn every_shipped_scenario_meets_its_expectations_and_matches_its_summary() {
    let runs = run_all();
    let mut unmet = Vec::new();
    for (file, run) in &runs {
        if !run.report.expect.met {
            unmet.push(format!(
                "{}: {}\n{}",
                file.display(),
                run.report.expect.unmet.join("; "),
                run.summary()
            ));
        }
    }
    assert!(
        unmet.is_empty(),
        "{} scenario(s) miss their expectations:\n\n{}",
        unmet.len(),
        unmet.join("\n\n")
    );
    for (file, run) in &runs {
        let name = file.file_stem().unwrap().to_str().unwrap();
        assert_eq!(
            run.report.scenario, run.scenario.name,
            "{name}: the report names another scenario"
        );
        assert_eq!(
            run.scenario.name,
            name,
            "{}: a scenario's name should be its file name",
            file.display()
        );
        insta::assert_snapshot!(name, run.summary());
    }
}

#[test]
fn the_gc_pause_fenced_trace() {
    let trace = SharedBuf::default();
    let run = run_library(&PathBuf::from(shipped("gc-pause-fenced")), Some(&trace));
    assert!(run.report.expect.met, "{:?}", run.report.expect.unmet);
    let text = trace.text();
    // The story the scenario tells is in its trace.
    for line in [
        "LEADS with token 1",
        "LEADS with token 2",
        "from node-a#1 with token 1: REJECTED, stale (highest 2)",
    ] {
        assert!(text.contains(line), "no `{line}` in the trace");
    }
    insta::assert_snapshot!("gc-pause-fenced.trace", text);
}

#[test]
fn the_gc_pause_unfenced_json_report() {
    let run = run_library(&PathBuf::from(shipped("gc-pause-unfenced")), None);
    // The binary prints the very report the library makes.
    let out = fenced_sim(["run", &shipped("gc-pause-unfenced"), "--json"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        format!("{}\n", serde_json::to_string(&run.report).unwrap())
    );
    insta::assert_snapshot!(
        "gc-pause-unfenced.json",
        serde_json::to_string_pretty(&run.report).unwrap()
    );
}

#[test]
fn the_performance_sections_large_fleets_load_and_differ_only_in_their_transport() {
    // The README's "Large fleets" times these two files with the release
    // binary; nothing else runs them. This keeps them loadable as the format
    // moves, and keeps the datagram twin the same workload as the default
    // one but for how calls travel (its figure is compared with issue 22's).
    let benches = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches");
    let load = |file: &str| {
        let scenario =
            fenced_sim::file::load(&benches.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        scenario
            .validate()
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        scenario
    };
    let sessions = load("fleet-election-10000.toml");
    let mut datagrams = load("fleet-election-10000-datagrams.toml");
    assert_eq!(sessions.nodes.len(), 10_000);
    assert_eq!(sessions.client.transport, Transport::Sessions);
    assert_eq!(datagrams.client.transport, Transport::Datagrams);
    datagrams.name.clone_from(&sessions.name);
    datagrams.description.clone_from(&sessions.description);
    datagrams.client.transport = sessions.client.transport;
    assert_eq!(datagrams, sessions);
}
