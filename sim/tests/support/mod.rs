//! Shared builders for the simulator's behaviour tests.
#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced_sim::{FaultSpec, Report, RunOptions, Scenario, Simulation};

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

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

/// A `Write` that appends to a shared buffer, to capture traces in memory.
#[derive(Clone, Default)]
pub struct SharedBuffer(pub Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuffer {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

pub fn run(scenario: &Scenario, options: RunOptions) -> Report {
    let mut sim = Simulation::new(scenario, options).expect("valid scenario");
    sim.run_to_end();
    sim.report()
}

pub fn run_seed(scenario: &Scenario, seed: u64) -> Report {
    run(scenario, RunOptions::with_seed(Some(seed)))
}

/// Runs with a text trace captured; returns the report and the trace.
pub fn run_traced(scenario: &Scenario, seed: u64) -> (Report, String) {
    let mut sim =
        Simulation::new(scenario, RunOptions::with_seed(Some(seed))).expect("valid scenario");
    let buffer = SharedBuffer::default();
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
