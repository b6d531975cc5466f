//! The whole checker, fed hand-written observation lists: for every
//! invariant, a list that breaks it and one that almost does but does not.
//! Each part's own tests (the part alone, without the checker) sit at the
//! bottom of its file; the helpers here serve both.

use std::time::Duration;

use fenced::{FencingToken, Instant, Lease, LeaseResult, NodeId, OwnerId, WriteOutcome};

use super::*;
use crate::observation::{NodeRef, ProcessId, ProcessRef, RegistryAnswer};

pub(super) const S: u64 = 1_000_000_000;

pub(super) fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero")
}

/// Two nodes, `a` and `b`, with one process each (`a#1`, `b#1`) and a
/// second life of `a` (`a#2`) for zombie and unique-owner cases.
pub(super) struct Cast {
    nodes: [NodeId; 2],
    owners: [OwnerId; 3],
}

impl Cast {
    pub(super) fn new() -> Self {
        Cast {
            nodes: [NodeId::new("a").unwrap(), NodeId::new("b").unwrap()],
            owners: [
                OwnerId::new("a#1").unwrap(),
                OwnerId::new("b#1").unwrap(),
                OwnerId::new("a#2").unwrap(),
            ],
        }
    }
    pub(super) fn a(&self) -> ProcessRef<'_> {
        self.process(0, 0, 1, 0)
    }
    pub(super) fn b(&self) -> ProcessRef<'_> {
        self.process(1, 1, 1, 1)
    }
    /// `a`'s second life, in a slot of its own.
    pub(super) fn a2(&self) -> ProcessRef<'_> {
        self.process(2, 0, 2, 2)
    }
    pub(super) fn process(
        &self,
        pid: u32,
        node: usize,
        incarnation: u32,
        owner: usize,
    ) -> ProcessRef<'_> {
        ProcessRef {
            id: ProcessId(pid),
            node: NodeRef {
                index: node as u32,
                id: &self.nodes[node],
            },
            incarnation,
            owner: &self.owners[owner],
        }
    }
}

pub(super) fn settings() -> CheckerSettings {
    CheckerSettings::new(true, Duration::from_secs(30), Duration::from_secs(27))
}

pub(super) fn at(seconds: f64) -> SimTime {
    SimTime::from_nanos((seconds * S as f64) as u64)
}

pub(super) fn granted(n: u64, expires_s: u64) -> LeaseResult {
    LeaseResult::Granted {
        token: token(n),
        expires_at: Instant::from_nanos(expires_s * S),
    }
}

pub(super) fn renewed(n: u64, expires_s: u64) -> LeaseResult {
    LeaseResult::Renewed {
        token: token(n),
        expires_at: Instant::from_nanos(expires_s * S),
    }
}

fn invariants(verdict: &Verdict) -> Vec<&str> {
    verdict
        .violations
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

/// The invariants a part wrote into `sink`, in order.
pub(super) fn invariants_of(sink: &findings::Findings) -> Vec<&str> {
    sink.violations()
        .iter()
        .map(|v| v.invariant.as_str())
        .collect()
}

/// Starts both processes at 0 s.
fn started(checker: &mut Checker, cast: &Cast) {
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.a()));
    checker.observe(at(0.0), &Observation::ProcessStarted(cast.b()));
}

fn lease(checker: &mut Checker, seconds: f64, from: ProcessRef<'_>, result: &LeaseResult) {
    checker.observe(
        at(seconds),
        &Observation::LeaseHandled {
            from,
            request: 1,
            result,
        },
    );
}

fn write(
    checker: &mut Checker,
    seconds: f64,
    from: ProcessRef<'_>,
    n: u64,
    outcome: &WriteOutcome,
) {
    checker.observe(
        at(seconds),
        &Observation::WriteHandled {
            from,
            token: token(n),
            unit: 1,
            outcome,
        },
    );
}

mod deadline;
mod fence;
mod lease;
mod lives;
mod membership;
