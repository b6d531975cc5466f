//! The lab's own history file (`kind: lab`, `<run dir>/lab.jsonl`): each
//! fault as it was applied (`fault` start and end, with its host and label)
//! and each SIGKILL (`process-killed`), on the same history clock as the
//! node processes' files, so the checker knows which terms were lost to a
//! fault and that a killed process ended at its kill.
//!
//! Hosts are what the checker understands: a paused process by its owner id
//! (`node-a#1`, label `pause`); a link fault by the node id whose links it
//! disturbs (label: the fault's kind, `cut`, `isolate`, `partition`); a
//! fault of a whole server by `lease-store` or `downstream`.

use std::collections::BTreeMap;
use std::path::Path;

use fenced::history::{Event, Header, HistoryError, Kind, Recorder};
use fenced::OwnerId;
use fenced_sim::{FaultSpec, Scenario};
use fenced_sim::{DOWNSTREAM, LEASE_STORE};

/// The lab's history: a recorder and the faults it has said started.
pub struct LabHistory {
    recorder: Recorder,
    /// Per scenario fault: its label, and the server it names, if any.
    faults: Vec<(&'static str, Option<String>)>,
    /// Per fault, the hosts whose start was recorded (in order, no repeat).
    open: BTreeMap<usize, Vec<String>>,
}

impl LabHistory {
    /// Creates `path` with a lab header naming the run `run`.
    ///
    /// # Errors
    /// The file cannot be written, or the history clock cannot be read.
    pub fn create(path: &Path, run: &str, scenario: &Scenario) -> Result<LabHistory, HistoryError> {
        let recorder = Recorder::to_file(path, Header::of_kind(Kind::Lab).with_run(run))?;
        let faults = scenario
            .faults
            .iter()
            .map(|fault| {
                let server = match fault.unanchored() {
                    FaultSpec::Pause { host, .. }
                    | FaultSpec::Isolate { host, .. }
                    | FaultSpec::Restart { host, .. }
                        if host == LEASE_STORE || host == DOWNSTREAM =>
                    {
                        Some(host.clone())
                    }
                    _ => None,
                };
                (fault.kind_name(), server)
            })
            .collect();
        Ok(LabHistory {
            recorder,
            faults,
            open: BTreeMap::new(),
        })
    }

    /// The recorder, for others that write into the lab's history (the
    /// membership watcher).
    pub fn recorder(&self) -> Recorder {
        self.recorder.clone()
    }

    /// A history that records nothing (tests of the runner's plumbing).
    pub fn off() -> LabHistory {
        LabHistory {
            recorder: Recorder::off(),
            faults: Vec::new(),
            open: BTreeMap::new(),
        }
    }

    /// The label of fault `fault`.
    fn label(&self, fault: usize) -> &'static str {
        self.faults.get(fault).map_or("fault", |(label, _)| label)
    }

    /// Fault `fault` disturbs the links of node `node` (or, for a fault of a
    /// whole server, that server): records its start once per host.
    pub fn link_fault(&mut self, fault: usize, node: &str) {
        let host = match self.faults.get(fault) {
            Some((_, Some(server))) => server.clone(),
            _ => node.to_string(),
        };
        self.started(fault, host);
    }

    /// Fault `fault` took server `server` down (a durable restart).
    pub fn server_fault(&mut self, fault: usize, server: &str) {
        self.started(fault, server.to_string());
    }

    /// Fault `fault` paused (SIGSTOP) the process `owner`.
    pub fn paused(&mut self, fault: usize, owner: &str) {
        self.started(fault, owner.to_string());
    }

    fn started(&mut self, fault: usize, host: String) {
        let label = self.label(fault);
        let hosts = self.open.entry(fault).or_default();
        if hosts.contains(&host) {
            return;
        }
        hosts.push(host.clone());
        let label = label.to_string();
        self.recorder.record(|| Event::Fault {
            host,
            label,
            start: true,
        });
    }

    /// Fault `fault` ended: records the end of each host it started on.
    pub fn ended(&mut self, fault: usize) {
        let label = self.label(fault).to_string();
        for host in self.open.remove(&fault).unwrap_or_default() {
            let label = label.clone();
            self.recorder.record(|| Event::Fault {
                host,
                label,
                start: false,
            });
        }
    }

    /// `heal_at`: every fault still open ends.
    pub fn heal(&mut self) {
        let open: Vec<usize> = self.open.keys().copied().collect();
        for fault in open {
            self.ended(fault);
        }
    }

    /// The process `owner` was sent SIGKILL.
    pub fn killed(&self, owner: &OwnerId) {
        self.recorder.record(|| Event::ProcessKilled {
            owner: owner.clone(),
        });
    }

    /// Lines that could not be written.
    pub fn write_errors(&self) -> u64 {
        self.recorder.write_errors()
    }
}
