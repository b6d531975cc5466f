//! Helpers shared by the behaviour tests: running the `fenced-sim` binary
//! (command line, bad input, pictures), running scenarios through the library
//! (shipped ones, or ones built here), and reading traces.
#![allow(dead_code)] // each test crate uses its own subset

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced_sim::{summary, FaultSpec, Report, RunOptions, Scenario, Simulation};

/// The smallest valid scenario; tests append sections to it.
pub const MINIMAL: &str = "name = \"minimal\"\nduration = \"1m\"\n\n[[node]]\nid = \"node-a\"\n";

/// The workspace root: `scenarios/` lives here, and the binary runs here so
/// that its replay lines read `fenced-sim run scenarios/…`.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ has a parent")
        .to_path_buf()
}

/// Every shipped scenario file, sorted, as paths relative to the workspace
/// root (`scenarios/steady-state.toml`).
pub fn scenario_files() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios"))
        .expect("scenarios/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.strip_prefix(&root).expect("under the root").to_path_buf())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios shipped");
    files
}

/// The shipped scenario `name` (without `.toml`), relative to the root.
pub fn shipped(name: &str) -> String {
    format!("scenarios/{name}.toml")
}

/// The text of the shipped scenario `name`.
pub fn shipped_text(name: &str) -> String {
    std::fs::read_to_string(workspace_root().join(shipped(name))).expect("a shipped scenario")
}

/// `fenced-sim` with `args`, run from the workspace root.
pub fn fenced_sim<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_fenced-sim"))
        .current_dir(workspace_root())
        .args(args)
        .output()
        .expect("fenced-sim runs")
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8")
}

/// Asserts the exit code, showing both streams when it is wrong.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "expected exit code {code}\n--- stdout\n{}\n--- stderr\n{}",
        stdout(out),
        stderr(out)
    );
}

/// Writes `text` as `dir/file_name` and returns the path.
pub fn write_file(dir: &Path, file_name: &str, text: &str) -> PathBuf {
    let path = dir.join(file_name);
    std::fs::write(&path, text).expect("the temp file is writable");
    path
}

/// Writes `text` as `dir/file_name`, runs `fenced-sim run` on it with
/// `extra` arguments, asserts the exit code and returns stdout.
pub fn run_text(dir: &Path, file_name: &str, text: &str, extra: &[&str], code: i32) -> String {
    let path = write_file(dir, file_name, text);
    let mut args = vec!["run".into(), path.into_os_string()];
    args.extend(extra.iter().map(Into::into));
    let out = fenced_sim(&args);
    assert_exit(&out, code);
    stdout(&out)
}

/// `fenced-sim run scenarios/<name>.toml --trace <trace>` with `extra`
/// arguments.
pub fn fenced_sim_traced(name: &str, trace: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run".into(), shipped(name).into(), "--trace".into()];
    args.push(trace.as_os_str().to_os_string());
    args.extend(extra.iter().map(Into::into));
    fenced_sim(&args)
}

/// A shipped scenario's text with `from` replaced by `to` (which must occur).
pub fn edited(name: &str, from: &str, to: &str) -> String {
    let text = shipped_text(name);
    assert!(text.contains(from), "{name} has no `{from}`");
    text.replace(from, to)
}

/// A trace writer the test can read back: a `Vec<u8>` shared with the
/// simulation, to capture traces in memory.
#[derive(Clone, Default)]
pub struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Everything written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8 trace")
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A finished run of a shipped scenario through the library.
pub struct Run {
    /// The loaded scenario.
    pub scenario: Scenario,
    /// Its report.
    pub report: fenced_sim::Report,
    /// The command line that replays it.
    pub replay: String,
}

impl Run {
    /// The human summary, exactly as `fenced-sim run` prints it.
    pub fn summary(&self) -> String {
        summary::render(&self.scenario, &self.report, &self.replay)
    }
}

/// Loads `path` (relative to the workspace root) and runs it to the end,
/// optionally capturing the text trace.
pub fn run_library(path: &Path, trace: Option<&SharedBuf>) -> Run {
    let scenario = fenced_sim::file::load(&workspace_root().join(path))
        .unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
    let mut sim = Simulation::from_scenario(&scenario, RunOptions::default())
        .unwrap_or_else(|e| panic!("{} is refused: {e}", path.display()));
    if let Some(buf) = trace {
        sim.set_trace_writer(Box::new(buf.clone()));
    }
    sim.run_to_end();
    sim.finish_trace().expect("an in-memory trace cannot fail");
    let report = sim.report();
    let replay = format!("fenced-sim run {} --seed {}", path.display(), report.seed);
    Run {
        scenario,
        report,
        replay,
    }
}

/// `s` seconds.
pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// `m` milliseconds.
pub fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// Three nodes; node-a starts first and leads, node-b and node-c join at 1 s.
pub fn trio(name: &str, duration: Duration) -> Scenario {
    let mut s = Scenario::new(name, duration).with_nodes(["node-a", "node-b", "node-c"]);
    s.nodes[1].start_at = secs(1);
    s.nodes[2].start_at = secs(1);
    s.work.work_duration = ms(200);
    s
}

/// node-a stalls for `length` in the unit of work it started at about 12 s.
pub fn pause_a(length: Duration) -> FaultSpec {
    FaultSpec::Pause {
        host: "node-a".into(),
        at: ms(12_050),
        duration: length,
    }
}

/// Runs `scenario` to its end through the library and returns its report.
pub fn run(scenario: &Scenario, options: RunOptions) -> Report {
    let mut sim = Simulation::from_scenario(scenario, options).expect("valid scenario");
    sim.run_to_end();
    sim.report()
}

/// [`run`] with the seed `seed`.
pub fn run_seed(scenario: &Scenario, seed: u64) -> Report {
    run(scenario, RunOptions::with_seed(Some(seed)))
}

/// Runs with a text trace captured; returns the report and the trace.
pub fn run_traced(scenario: &Scenario, seed: u64) -> (Report, String) {
    let mut sim = Simulation::from_scenario(scenario, RunOptions::with_seed(Some(seed)))
        .expect("valid scenario");
    let buffer = SharedBuf::default();
    sim.set_trace_writer(Box::new(buffer.clone()));
    sim.run_to_end();
    sim.finish_trace().unwrap();
    (sim.report(), buffer.text())
}

/// The trace lines of `host` that contain `needle`.
pub fn lines<'a>(trace: &'a str, host: &str, needle: &str) -> Vec<&'a str> {
    trace
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(host) && l.contains(needle))
        .collect()
}

/// The true time (seconds) at the start of a trace line.
pub fn time_of(line: &str) -> f64 {
    line.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .expect("a trace line starts with its time")
}

/// Runs `fenced-sim run` on `head` + each case's tail (written as
/// `dir/<name>.toml`) and asserts exit 2 with every fragment in stderr.
pub fn assert_refused(dir: &Path, head: &str, cases: &[(&str, &str, &[&str])]) {
    for (name, tail, says) in cases {
        let path = write_file(dir, &format!("{name}.toml"), &format!("{head}{tail}"));
        let out = fenced_sim(["run".as_ref(), path.as_os_str()]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        for fragment in *says {
            assert!(err.contains(fragment), "{name}: {fragment:?} not in {err}");
        }
    }
}

/// What a user reads of a run, without what a clock fault itself adds (its
/// events, a different trace hash) or the scenario's name.
pub fn seen(report: &Report) -> serde_json::Value {
    let mut value = serde_json::to_value(report).expect("a report serialises");
    let object = value.as_object_mut().expect("a report is an object");
    for field in ["events", "trace_hash", "scenario"] {
        object.remove(field);
    }
    value
}

/// The lock designs whose clients and servers time by monotonic clocks (a
/// wall step reaches none of their timing; Curator's one wall-clock
/// decision only while SUSPENDED).
pub const MONOTONIC_DESIGNS: [&str; 5] = [
    "client-go",
    "etcd",
    "zookeeper",
    "dynamodb",
    "connection-lock",
];

/// [`trio`] on the lock design `name`, fenced by its token where it has one.
pub fn zoo(name: &str) -> Scenario {
    let mut s = trio(name, secs(150));
    s.election.protocol = fenced_sim::ProtocolSpec::by_name(name).expect("a design");
    // Designs without a token write to a plain table.
    s.fencing = s.election.protocol.has_token();
    s
}

/// `verify`'s bounds of one pause on any node: a 1 s grid and the
/// boundaries, `lengths`, every message at 1 ms (5 ms the other latency),
/// no deviations, one job.
pub fn one_pause_bounds(lengths: Vec<Duration>) -> fenced_sim::verify::Bounds {
    fenced_sim::verify::Bounds {
        faults: 1,
        kinds: vec![fenced_sim::verify::FaultKind::Pause],
        servers: false,
        grid: Duration::from_secs(1),
        boundaries: true,
        lengths,
        latencies: vec![ms(1), ms(5)],
        deviations: 0,
        drops: 0,
        duplicates: 0,
        reorders: 0,
        max_states: 1_000_000,
        jobs: 1,
        deduplicate: true,
        symmetry: false,
    }
}

/// `fenced-sim verify SOURCE --deviations 0 -o DIR/found.toml --json`,
/// which must find a violation (exit 1), then `fenced-sim run` of the
/// counterexample, which must fail on it too (exit 1): the search's JSON,
/// the replay's report and the counterexample's path.
pub fn verify_and_replay(
    dir: &Path,
    source: &Path,
) -> (serde_json::Value, serde_json::Value, PathBuf) {
    let file = dir.join("found.toml");
    let file_arg = file.display().to_string();
    let source = source.display().to_string();
    let out = fenced_sim([
        "verify",
        &source,
        "--deviations",
        "0",
        "-o",
        &file_arg,
        "--json",
    ]);
    assert_exit(&out, 1);
    let result = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    let replayed = fenced_sim(["run", &file_arg, "--json"]);
    assert_exit(&replayed, 1);
    let report = serde_json::from_str(&stdout(&replayed)).expect("a report");
    (result, report, file)
}
