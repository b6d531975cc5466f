//! The run's report: the checker's verdict plus what only the engine knows
//! (events, the trace hash, writes still in flight, the store's highest token).

use super::{Core, SimHosts};
use crate::checker::assemble;
use crate::engine::limits::Halt;
use crate::hosts::workers::{PendingWrite, WriteState};
use crate::report::{
    Figures, HaltReason, Halted, Report, TokenRace, UnjudgedWrite, UnjudgedWrites,
    MAX_UNJUDGED_LISTED,
};
use crate::units::ms;

impl<H: SimHosts> Core<H> {
    // ----- the report -----

    /// See [`Simulation::report`](super::Simulation::report).
    pub fn report(&self) -> Report {
        // The verdict closes the belief measures at `now` on a copy, so that
        // a report can be taken at any time and the run continued.
        let now = self.engine.now;
        let verdict = self.engine.observers.checker.verdict(now);
        let max_token = self.engine.hosts.max_token();
        let store_now = self.engine.lives.server_clock(0).local(now);
        let live_at_end = self.engine.hosts.live_members(store_now);
        let figures = Figures {
            scenario: self.name.clone(),
            seed: self.seed,
            virtual_ms: ms(now),
            events: self.engine.events,
            trace_hash: format!("{:016x}", self.engine.observers.tracer.hash()),
            fencing: self.scenario.fencing,
            max_token,
            live_at_end,
            unjudged_writes: self.unjudged_writes(),
            planted_bug: self.planted_bug_name(),
            history: None,
        };
        let mut report = assemble(figures, verdict, &self.expect);
        report.halted = self.engine.halted().map(Halted::from);
        report.max_token_race = self
            .engine
            .hosts
            .max_token_race()
            .map(|(low, high)| TokenRace { low, high });
        report.record_anchors(self.anchored_faults(), &self.expect);
        report
    }

    /// The writes on their way when the report is taken: units whose term is
    /// still believed, writes in flight to the downstream, and writes queued
    /// at a paused downstream.
    pub(super) fn unjudged_writes(&self) -> UnjudgedWrites {
        let mut writes = Vec::new();
        let (workers, lives) = (self.engine.hosts.workers(), &self.engine.lives);
        for (event, deferred) in self.engine.pending() {
            writes.extend(
                workers
                    .pending_write(lives, event, deferred)
                    .map(UnjudgedWrite::from),
            );
        }
        writes.sort();
        let total = writes.len() as u64;
        let newest = self.engine.observers.checker.highest_granted();
        let older_term = writes.iter().filter(|w| w.token < newest).count() as u64;
        writes.truncate(MAX_UNJUDGED_LISTED);
        UnjudgedWrites {
            total,
            older_term,
            writes,
        }
    }

    pub(super) fn planted_bug_name(&self) -> Option<String> {
        #[cfg(feature = "planted-bugs")]
        {
            self.planted_bug.map(|b| b.name().to_string())
        }
        #[cfg(not(feature = "planted-bugs"))]
        {
            None
        }
    }

    pub(super) fn leader_at_end(&self) -> bool {
        self.engine.observers.checker.leader_at(self.engine.now)
    }
}

impl From<PendingWrite> for UnjudgedWrite {
    /// The report's entry for a write its hosts found on its way, its state
    /// in the report's words.
    fn from(write: PendingWrite) -> Self {
        UnjudgedWrite {
            owner: write.owner,
            token: write.token,
            unit: write.unit,
            state: match write.state {
                WriteState::InProgress => "in-progress",
                WriteState::InProgressPaused => "in-progress (paused)",
                WriteState::InFlight => "in-flight",
                WriteState::Queued => "queued",
            }
            .to_string(),
        }
    }
}

impl From<&Halt> for Halted {
    /// The report's account of the engine's halt.
    fn from(halt: &Halt) -> Self {
        let (reason, at) = match halt {
            Halt::EventBudget { at, .. } => (HaltReason::EventBudget, at),
            Halt::TooManyPending { at, .. } => (HaltReason::TooManyPending, at),
        };
        Halted {
            reason,
            at_ms: ms(*at),
            detail: halt.to_string(),
        }
    }
}
