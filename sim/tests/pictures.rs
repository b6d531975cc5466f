//! Pictures: the SVG timeline of a run (`run --svg`) and the sweep's tables
//! and chart (`sweep`), checked as parsed XML and snapshotted, plus their
//! command-line flags through the binary.

mod common;

use std::time::Duration;

use common::{assert_exit, fenced_sim, shipped, stderr, stdout, workspace_root};
use fenced_sim::svg::{auto_window, render_timeline, Window};
use fenced_sim::sweep::{
    run_election, run_membership, ElectionGrid, FaultMix, Lengths, MembershipGrid, Seeds, Spread,
    SweepResults, ELECTION_CSV_HEADER, MEMBERSHIP_CSV_HEADER,
};
use fenced_sim::timeline::{Timeline, WriteFate};
use fenced_sim::{FaultSpec, Report, RunOptions, Scenario, Simulation};
use roxmltree::{Document, Node};

/// A shipped scenario run with its timeline recorded.
fn recorded(name: &str) -> (Scenario, Report, Timeline) {
    let scenario = fenced_sim::file::load(&workspace_root().join(shipped(name)))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    record(&scenario)
}

fn record(scenario: &Scenario) -> (Scenario, Report, Timeline) {
    let mut sim =
        Simulation::from_scenario(scenario, RunOptions::default()).expect("a valid scenario");
    sim.record_timeline();
    sim.run_to_end();
    let timeline = sim.timeline().expect("recorded");
    (scenario.clone(), sim.report(), timeline)
}

fn picture(name: &str, window: Window) -> String {
    let (scenario, report, timeline) = recorded(name);
    let replay = format!("fenced-sim run {} --seed {}", shipped(name), report.seed);
    render_timeline(&scenario, &report, &timeline, &replay, window)
}

fn parse(svg: &str) -> Document<'_> {
    Document::parse(svg).unwrap_or_else(|e| panic!("not XML ({e}):\n{svg}"))
}

fn has_class(node: &Node<'_, '_>, class: &str) -> bool {
    node.attribute("class")
        .is_some_and(|c| c.split(' ').any(|part| part == class))
}

/// Every element with `class` among its classes.
fn with_class<'a, 'i>(doc: &'a Document<'i>, class: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.is_element() && has_class(n, class))
        .collect()
}

fn attr_f64(node: &Node<'_, '_>, name: &str) -> f64 {
    node.attribute(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric `{name}` on {node:?}"))
}

fn text_of(doc: &Document<'_>) -> String {
    doc.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_fenced_gc_pause_shows_lanes_terms_and_the_rejected_write() {
    let svg = picture("gc-pause-fenced", Window::auto());
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let lanes: Vec<&str> = with_class(&doc, "lane-label")
        .iter()
        .filter_map(|n| n.attribute("data-lane"))
        .collect();
    assert_eq!(
        lanes,
        [
            "node-a",
            "node-b",
            "node-c",
            "lease-store",
            "downstream",
            "membership"
        ]
    );
    let beliefs: Vec<(&str, &str)> = with_class(&doc, "belief")
        .iter()
        .map(|n| {
            (
                n.attribute("data-node").unwrap_or(""),
                n.attribute("data-token").unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(beliefs, [("node-a", "1"), ("node-c", "2")]);
    let truths = with_class(&doc, "truth");
    assert_eq!(truths.len(), 2, "one lease band per term");
    // node-a believes past its lease: the no-lease stripes and the window
    // where two processes believe they lead.
    assert_eq!(with_class(&doc, "no-lease").len(), 1);
    assert_eq!(with_class(&doc, "overlap").len(), 1);
    let rejected = with_class(&doc, "rejected");
    assert_eq!(rejected.len(), 1, "one stale write rejected");
    assert_eq!(rejected[0].attribute("stroke"), Some("#d62728"));
    assert_eq!(rejected[0].attribute("data-token"), Some("1"));
    assert!(with_class(&doc, "split-brain").is_empty());
    assert!(with_class(&doc, "split-brain-marker").is_empty());
    let pauses = with_class(&doc, "pause");
    assert_eq!(pauses.len(), 1);
    assert_eq!(pauses[0].attribute("data-host"), Some("node-a#1"));
    assert_eq!(
        pauses[0].attribute("fill"),
        Some("url(#hatch-pause)"),
        "pauses are hatched with a pattern"
    );
    assert!(doc
        .descendants()
        .any(|n| n.has_tag_name("pattern") && n.attribute("id") == Some("hatch-pause")));
    let grants: Vec<&str> = with_class(&doc, "grant")
        .iter()
        .filter_map(|n| n.attribute("data-token"))
        .collect();
    assert_eq!(grants, ["1", "2"]);
    assert!(!with_class(&doc, "refusal").is_empty());
    assert_eq!(with_class(&doc, "live").len(), 1);
    let text = text_of(&doc);
    assert!(text.contains("gc-pause-fenced · seed 7"), "{text}");
    assert!(
        text.contains("$ fenced-sim run scenarios/gc-pause-fenced.toml --seed 7"),
        "{text}"
    );
    assert!(text.contains("rejected: token 1 < 2"), "{text}");
    assert!(text.contains("Fenced: 1 stale write rejected"), "{text}");
}

#[test]
fn the_split_brain_marker_appears_without_fencing_only() {
    let svg = picture("gc-pause-unfenced", Window::auto());
    let doc = parse(&svg);
    let split = with_class(&doc, "split-brain");
    assert_eq!(split.len(), 1, "one split-brain write");
    assert_eq!(split[0].attribute("data-token"), Some("1"));
    assert_eq!(with_class(&doc, "split-brain-marker").len(), 1);
    assert!(with_class(&doc, "rejected").is_empty());
    let text = text_of(&doc);
    assert!(
        text.contains("SPLIT-BRAIN: node-a#1 wrote with token 1"),
        "{text}"
    );
    assert!(
        text.contains("split-brain write: token 1 accepted after token 2"),
        "{text}"
    );
    assert!(text.contains("two leaders · 11.03s"), "{text}");

    let fenced = picture("gc-pause-fenced", Window::auto());
    let doc = parse(&fenced);
    assert!(with_class(&doc, "split-brain").is_empty());
    assert!(with_class(&doc, "split-brain-marker").is_empty());
    assert!(!text_of(&doc).contains("SPLIT-BRAIN"));
}

#[test]
fn from_and_to_clip_the_picture() {
    let (scenario, report, timeline) = recorded("gc-pause-fenced");
    let window = Window {
        from: Some(Duration::from_secs(45)),
        to: Some(Duration::from_secs(60)),
    };
    let svg = render_timeline(&scenario, &report, &timeline, "replay", window);
    let doc = parse(&svg);
    let in_window = |ns: u64| (45_000_000_000..=60_000_000_000).contains(&ns);
    let accepted = timeline
        .writes
        .iter()
        .filter(|w| w.fate == WriteFate::Accepted && in_window(w.at_ns))
        .count();
    assert!(accepted > 10);
    assert_eq!(with_class(&doc, "accepted").len(), accepted);
    // The grant of token 2 (41 s) is outside; node-a's late write (52 s) in.
    assert!(with_class(&doc, "grant").is_empty());
    assert_eq!(with_class(&doc, "rejected").len(), 1);
    // Everything drawn stays inside the plot.
    let (left, right) = (132.0, 1200.0 - 28.0);
    for rect in with_class(&doc, "belief")
        .iter()
        .chain(&with_class(&doc, "truth"))
    {
        let x = attr_f64(rect, "x");
        let w = attr_f64(rect, "width");
        assert!(x >= left - 0.01 && x + w <= right + 0.01, "{rect:?}");
    }
    for line in with_class(&doc, "write") {
        let x = attr_f64(&line, "x1");
        assert!((left..=right).contains(&x), "{line:?}");
    }
    let ticks: Vec<String> = with_class(&doc, "tick")
        .iter()
        .filter_map(|n| n.text())
        .map(str::to_string)
        .collect();
    assert_eq!(ticks.first().map(String::as_str), Some("46s"), "{ticks:?}");
    assert_eq!(ticks.last().map(String::as_str), Some("1m"), "{ticks:?}");
    assert!(text_of(&doc).contains("showing 45s–1m of 2m"));

    // Only `to`: from the start.
    let early = render_timeline(
        &scenario,
        &report,
        &timeline,
        "replay",
        Window {
            from: None,
            to: Some(Duration::from_secs(30)),
        },
    );
    let doc = parse(&early);
    assert!(with_class(&doc, "rejected").is_empty());
    assert_eq!(with_class(&doc, "belief").len(), 1, "only token 1 by 30s");
}

#[test]
fn windows_are_checked() {
    let two_minutes = Duration::from_secs(120);
    let w = |from: Option<u64>, to: Option<u64>| Window {
        from: from.map(Duration::from_secs),
        to: to.map(Duration::from_secs),
    };
    assert!(w(None, None).check(two_minutes).is_ok());
    assert!(w(Some(10), Some(20)).check(two_minutes).is_ok());
    assert!(w(None, Some(500)).check(two_minutes).is_ok(), "`to` clamps");
    let e = w(Some(20), Some(20))
        .check(two_minutes)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--from 20s must be before --to 20s"), "{e}");
    let e = w(Some(130), None)
        .check(two_minutes)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not inside the run"), "{e}");
}

fn long_run() -> Scenario {
    let mut s =
        Scenario::new("long-one-pause", Duration::from_secs(1800)).with_nodes(["node-a", "node-b"]);
    s.nodes[1].start_at = Duration::from_secs(1);
    s.work.work_duration = Duration::from_millis(200);
    s.with_fault(FaultSpec::Pause {
        host: "node-a".into(),
        at: Duration::from_secs(720),
        duration: Duration::from_secs(45),
    })
}

#[test]
fn long_runs_zoom_on_what_happened() {
    let (scenario, report, timeline) = record(&long_run());
    let (from, to) = auto_window(&scenario, &timeline).expect("a long run zooms");
    // The pause starts at 12m; the margin is one lease TTL (30 s).
    assert_eq!(from, 690_000_000_000);
    assert!(to > 765_000_000_000 && to < 900_000_000_000, "{to}");
    let svg = render_timeline(&scenario, &report, &timeline, "replay", Window::auto());
    let doc = parse(&svg);
    assert!(
        text_of(&doc).contains("showing 11m30s–"),
        "{}",
        text_of(&doc)
    );
    assert!(text_of(&doc).contains("auto-zoom"));
    // A short run is drawn whole.
    let (scenario, _, timeline) = recorded("gc-pause-fenced");
    assert_eq!(auto_window(&scenario, &timeline), None);
}

#[test]
fn zombies_get_a_lane_per_incarnation() {
    let svg = picture("zombie-replacement", Window::auto());
    let doc = parse(&svg);
    let lanes: Vec<&str> = with_class(&doc, "lane-label")
        .iter()
        .filter_map(|n| n.attribute("data-lane"))
        .take(2)
        .collect();
    assert_eq!(lanes, ["node-a#1", "node-a#2"]);
}

#[test]
fn big_clusters_show_at_most_sixteen_node_lanes() {
    let mut s = Scenario::new("twenty", Duration::from_secs(60))
        .with_nodes((1..=20).map(|i| format!("node-{i:02}")));
    s.nodes[19].start_at = Duration::ZERO;
    for node in s.nodes.iter_mut().take(19) {
        node.start_at = Duration::from_secs(1);
    }
    let (scenario, report, timeline) = record(&s);
    let svg = render_timeline(&scenario, &report, &timeline, "replay", Window::auto());
    let doc = parse(&svg);
    let nodes: Vec<&str> = with_class(&doc, "lane-label")
        .iter()
        .filter(|n| n.attribute("data-kind") == Some("node"))
        .filter_map(|n| n.attribute("data-lane"))
        .collect();
    assert_eq!(nodes.len(), 16);
    assert!(nodes.contains(&"node-20"), "the leader is always shown");
    assert!(text_of(&doc).contains("4 quiet nodes not shown"));
}

#[test]
fn the_timeline_is_deterministic_and_snapshotted() {
    let svg = picture("gc-pause-unfenced", Window::auto());
    assert_eq!(svg, picture("gc-pause-unfenced", Window::auto()));
    assert!(!svg.contains("<script"));
    assert!(!svg.contains("@import") && !svg.contains("url(http"));
    insta::assert_snapshot!("gc-pause-unfenced.svg", svg);
}

// ----- the sweep -----

/// Crashes only: every failover waits for the lease to lapse.
fn crash_mix() -> FaultMix {
    FaultMix {
        duration: Duration::from_secs(1800),
        pause_every: None,
        spike_every: None,
        loss: 0.0,
        crash_every: Some(Duration::from_secs(300)),
        restart_after: Lengths {
            low: Duration::from_secs(5),
            high: Duration::from_secs(20),
            spread: Spread::Uniform,
        },
        ..FaultMix::default()
    }
}

fn tiny_grid() -> ElectionGrid {
    ElectionGrid {
        ttls: vec![Duration::from_secs(2), Duration::from_secs(10)],
        renew_ratios: vec![0.2, 0.5],
        ..ElectionGrid::default()
    }
}

const SEEDS: Seeds = Seeds { start: 0, count: 3 };

#[test]
fn a_longer_ttl_never_fails_over_faster_under_crashes() {
    let sweep = run_election(&crash_mix(), &tiny_grid(), SEEDS, 2, &|| {}).expect("runs");
    assert_eq!(sweep.rows.len(), 4);
    assert!(sweep.skipped.is_empty());
    assert_eq!(sweep.violations(), 0);
    for ratio in [0.2, 0.5] {
        let at = |ttl: f64| {
            sweep
                .rows
                .iter()
                .find(|r| r.lease_ttl_s == ttl && r.renew_ratio == ratio)
                .expect("a row")
        };
        let (short, long) = (at(2.0), at(10.0));
        assert!(short.failovers > 3 && long.failovers > 3, "{sweep:?}");
        // A crashed leader's lease must lapse: at least (1 - ratio) × TTL
        // of gap, at most TTL plus a retry.
        let (s50, l50) = (
            short.gap_p50_s.expect("failovers"),
            long.gap_p50_s.expect("failovers"),
        );
        assert!(l50 >= s50, "ratio {ratio}: {l50} < {s50}");
        assert!(
            long.gap_p99_s.expect("failovers") > short.gap_p99_s.expect("failovers"),
            "{sweep:?}"
        );
        assert!(long.leaderless_fraction > short.leaderless_fraction);
        assert!(s50 <= 2.0 * 1.2 + 0.5, "{s50}");
        assert!(l50 >= 10.0 * (1.0 - ratio) - 0.5, "{l50}");
    }
}

#[test]
fn the_sweep_writes_csv_json_and_a_chart() {
    let sweep = run_election(&crash_mix(), &tiny_grid(), SEEDS, 1, &|| {}).expect("runs");
    let csv = sweep.to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], ELECTION_CSV_HEADER);
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    let columns = ELECTION_CSV_HEADER.split(',').count();
    for line in &lines[1..] {
        assert_eq!(line.split(',').count(), columns, "{line}");
        // Every column names a field: none is empty when there were failovers.
        assert!(line.split(',').all(|cell| !cell.is_empty()), "{line}");
    }
    assert!(
        lines[1].starts_with("2.0,0.2,0.1,0.4,0.2,0.2,3,1.5,"),
        "{}",
        lines[1]
    );

    let json: serde_json::Value =
        serde_json::from_str(&sweep.to_json().to_string()).expect("JSON parses");
    assert_eq!(json["sweep"], "election");
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(4));
    assert_eq!(json["grid"]["lease_ttls_s"], serde_json::json!([2.0, 10.0]));
    assert_eq!(json["mix"]["pause_every_ms"], serde_json::Value::Null);
    let row: fenced_sim::sweep::ElectionRow =
        serde_json::from_value(json["rows"][0].clone()).expect("a row");
    assert_eq!(row, sweep.rows[0]);

    let svg = sweep.to_svg("fenced-sim sweep --tiny");
    let doc = parse(&svg);
    let panels: Vec<&str> = doc
        .descendants()
        .filter(|n| has_class(n, "panel"))
        .filter_map(|n| n.attribute("data-metric"))
        .collect();
    assert_eq!(
        panels,
        [
            "gap-p50",
            "gap-p99",
            "leader-changes",
            "spurious",
            "leaderless",
            "rejected"
        ]
    );
    assert_eq!(with_class(&doc, "cell").len(), 6 * 4);
    assert_eq!(with_class(&doc, "point").len(), 4);
    assert_eq!(with_class(&doc, "ratio-line").len(), 2);
    assert!(text_of(&doc).contains("$ fenced-sim sweep --tiny"));

    // The same seeds give the same results whatever the threads.
    let again = run_election(&crash_mix(), &tiny_grid(), SEEDS, 3, &|| {}).expect("runs");
    assert_eq!(again.to_csv(), csv);
    assert_eq!(again.to_svg("fenced-sim sweep --tiny"), svg);
}

#[test]
fn cells_the_elector_refuses_are_skipped() {
    let grid = ElectionGrid {
        ttls: vec![Duration::from_secs(5)],
        renew_ratios: vec![0.3, 0.85],
        margin_ratios: vec![0.2],
        retry_ratio: 0.1,
    };
    let mix = FaultMix {
        duration: Duration::from_secs(300),
        ..crash_mix()
    };
    let sweep = run_election(&mix, &grid, Seeds { start: 0, count: 1 }, 1, &|| {}).expect("runs");
    assert_eq!(sweep.rows.len(), 1);
    assert_eq!(sweep.skipped.len(), 1);
    assert!(
        sweep.skipped[0].reason.contains("renew_interval"),
        "{:?}",
        sweep.skipped
    );
}

#[test]
fn every_cell_sees_the_same_faults_for_a_seed() {
    let mix = FaultMix::default();
    let a = mix.schedule(7);
    assert_eq!(a, mix.schedule(7));
    assert_ne!(a, mix.schedule(8));
    assert!(a
        .iter()
        .any(|f| matches!(f, FaultSpec::Pause { host, .. } if host == "lease-store")));
    assert!(a.iter().any(|f| matches!(f, FaultSpec::Crash { .. })));
    // Pauses of one node never overlap.
    let mut ends: std::collections::BTreeMap<&str, Duration> = Default::default();
    for f in &a {
        if let FaultSpec::Pause { host, at, duration } = f {
            let end = ends.entry(host.as_str()).or_default();
            assert!(*at >= *end, "{f:?}");
            *end = *at + *duration;
        }
    }
    let mut scenario = mix.scenario(7);
    assert_eq!(scenario.faults, a);
    tiny_grid().cells()[3].apply(&mut scenario);
    assert_eq!(scenario.election.lease_ttl, Duration::from_secs(10));
    assert_eq!(scenario.election.renew_interval, Duration::from_secs(5));
    assert!(scenario.validate().is_ok());
}

#[test]
fn fault_lengths_parse() {
    let l = Lengths::parse("log:100ms..60s").expect("parses");
    assert_eq!(
        (l.low, l.high, l.spread),
        (
            Duration::from_millis(100),
            Duration::from_secs(60),
            Spread::LogUniform
        )
    );
    assert_eq!(
        Lengths::parse("uniform:1s..5s").map(|l| l.spread),
        Ok(Spread::Uniform)
    );
    assert_eq!(
        Lengths::parse("2s").map(|l| (l.low, l.high)),
        Ok((Duration::from_secs(2), Duration::from_secs(2)))
    );
    for bad in [
        "log:0s..5s",
        "5s..1s",
        "weird:1s..2s",
        "abc",
        "uniform:0s..0s",
    ] {
        assert!(Lengths::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_membership_sweep_counts_false_node_downs() {
    let grid = MembershipGrid {
        liveness_ttls: vec![Duration::from_secs(2), Duration::from_secs(30)],
        heartbeats: vec![Duration::from_millis(500), Duration::from_secs(5)],
    };
    let mix = FaultMix {
        duration: Duration::from_secs(1800),
        ..FaultMix::default()
    };
    let sweep = run_membership(&mix, &grid, SEEDS, 2, &|| {}).expect("runs");
    // 2 s with a 5 s heartbeat makes no sense: skipped.
    assert_eq!(sweep.rows.len(), 3);
    assert_eq!(sweep.skipped.len(), 1);
    let csv = sweep.to_csv();
    assert_eq!(csv.lines().next(), Some(MEMBERSHIP_CSV_HEADER));
    assert_eq!(csv.lines().count(), 4);
    let short = &sweep.rows[0];
    let long = &sweep.rows[1];
    assert_eq!((short.liveness_ttl_s, long.liveness_ttl_s), (2.0, 30.0));
    assert!(
        short.false_leaves_per_node_hour > long.false_leaves_per_node_hour,
        "{sweep:?}"
    );
    let doc_text = sweep.to_svg("fenced-sim sweep --membership");
    let doc = parse(&doc_text);
    assert_eq!(with_class(&doc, "cell").len(), 3 * 4);
    let json: serde_json::Value =
        serde_json::from_str(&sweep.to_json().to_string()).expect("JSON parses");
    assert_eq!(json["sweep"], "membership");
}

// ----- the command line -----

#[test]
fn run_and_replay_write_the_svg() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("t.svg");
    let out = fenced_sim([
        "run",
        &shipped("gc-pause-unfenced"),
        "--svg",
        path.to_str().expect("UTF-8"),
        "--from",
        "30s",
        "--to",
        "1m 10s",
    ]);
    assert_exit(&out, 0);
    let svg = std::fs::read_to_string(&path).expect("written");
    let doc = parse(&svg);
    assert_eq!(with_class(&doc, "split-brain").len(), 1);
    assert!(text_of(&doc).contains("showing 30s–1m10s of 2m"));
    assert!(stdout(&out).contains("PASS"), "the summary is unchanged");

    let out = fenced_sim([
        "replay",
        "--seed",
        "3",
        "--svg",
        path.to_str().expect("UTF-8"),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&path).expect("written");
    let doc = parse(&svg);
    assert!(text_of(&doc).contains("$ fenced-sim replay --seed 3"));
}

/// Runs `fenced-sim` with `base` then `extra`; asserts exit code 2, nothing
/// on standard output and `message` on standard error.
fn assert_bad_input(base: &[&str], extra: &[&str], message: &str) {
    let args: Vec<&str> = base.iter().chain(extra).copied().collect();
    let out = fenced_sim(&args);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(message),
        "{extra:?}: expected `{message}` in:\n{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty(), "{extra:?}");
}

#[test]
fn bad_windows_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let svg = dir.path().join("t.svg");
    let svg = svg.to_str().expect("UTF-8");
    let scenario = shipped("gc-pause-fenced");
    let cases: [(&[&str], &str); 6] = [
        (
            &["--svg", svg, "--from", "50s", "--to", "40s"],
            "--from 50s must be before --to 40s",
        ),
        (
            &["--svg", svg, "--from", "40s", "--to", "40s"],
            "must be before",
        ),
        (&["--svg", svg, "--from", "soon"], "is not a duration"),
        (&["--svg", svg, "--to=-5s"], "is negative"),
        (&["--svg", svg, "--from", "5m"], "not inside the run"),
        (&["--from", "10s"], "--svg"),
    ];
    for (extra, message) in cases {
        assert_bad_input(&["run", scenario.as_str()], extra, message);
        assert!(
            !std::path::Path::new(svg).exists(),
            "{extra:?} wrote a picture"
        );
    }
    let out = fenced_sim(["run", &scenario, "--svg", "/nonexistent-dir/t.svg"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("cannot write the picture"),
        "{}",
        stderr(&out)
    );
}

const TINY: [&str; 10] = [
    "--ttls",
    "2s,10s",
    "--renew-ratios",
    "0.2,0.5",
    "--seeds",
    "2",
    "--duration",
    "10m",
    "--jobs",
    "2",
];

#[test]
fn sweep_prints_csv_json_and_draws_a_chart() {
    let out = fenced_sim(std::iter::once("sweep").chain(TINY));
    assert_exit(&out, 0);
    let csv = stdout(&out);
    assert_eq!(csv.lines().next(), Some(ELECTION_CSV_HEADER));
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(
        stderr(&out).contains("8 runs (4 cells × 2 seeds × 10m each)"),
        "{}",
        stderr(&out)
    );

    let dir = tempfile::tempdir().expect("a temp dir");
    let (csv_path, svg_path) = (dir.path().join("s.csv"), dir.path().join("s.svg"));
    let mut args = vec!["sweep", "--json"];
    args.extend(TINY);
    args.extend([
        "--csv",
        csv_path.to_str().expect("UTF-8"),
        "--svg",
        svg_path.to_str().expect("UTF-8"),
    ]);
    let out = fenced_sim(&args);
    assert_exit(&out, 0);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        std::fs::read_to_string(&csv_path).expect("CSV written"),
        csv
    );
    let svg = std::fs::read_to_string(&svg_path).expect("SVG written");
    let doc = parse(&svg);
    assert_eq!(with_class(&doc, "point").len(), 4);
    assert!(
        text_of(&doc).contains("fenced-sim sweep --ttls 2s,10s --renew-ratios 0.2,0.5 --seeds 2")
    );

    let out = fenced_sim([
        "sweep",
        "--membership",
        "--liveness-ttls",
        "5s,30s",
        "--heartbeats",
        "1s",
        "--seeds",
        "1",
        "--duration",
        "10m",
    ]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).lines().next(), Some(MEMBERSHIP_CSV_HEADER));
    assert_eq!(stdout(&out).lines().count(), 3);
}

#[test]
fn bad_sweep_flags_exit_2() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["--renew-ratios", "1.5"],
            "--renew-ratios: 1.5 must be between 0 and 1",
        ),
        (&["--seeds", "0"], "--seeds must be at least 1"),
        (&["--jobs", "0"], "--jobs must be at least 1"),
        (&["--ttls", "fast"], "is not a duration"),
        (&["--pause-length", "log:0s..5s"], "lower bound above zero"),
        (&["--loss", "1.5"], "--loss 1.5 must be in [0, 1)"),
        (
            &["--pause-every", "1ms"],
            "--pause-every must be at least 100ms",
        ),
        (
            &[
                "--membership",
                "--liveness-ttls",
                "1s",
                "--heartbeats",
                "2s",
            ],
            "no cell to run",
        ),
    ];
    for (extra, message) in cases {
        assert_bad_input(&["sweep"], extra, message);
    }
}
