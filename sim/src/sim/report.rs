//! The run's report: the checker's verdict plus what only the engine knows
//! (events, the trace hash, writes still in flight, the store's highest token).

use fenced::FencingToken;

use super::Simulation;
use crate::checker::BeliefTerm;
use crate::clock::server_local;
use crate::engine::{Address, Event};
use crate::expect::evaluate;
use crate::hosts::messages::{Message, Timer, ToDownstream};
use crate::report::{Report, UnjudgedWrite, UnjudgedWrites, MAX_UNJUDGED_LISTED};
use crate::units::ms;

impl Simulation {
    // ----- the report -----

    /// The report as of now (normally called after [`run_to_end`](Self::run_to_end)).
    pub fn report(&self) -> Report {
        // The verdict closes the belief measures at `now` on a copy, so that
        // a report can be taken at any time and the run continued.
        let now = self.engine.now;
        let verdict = self.engine.observers.checker.verdict(now);
        let store = &self.engine.hosts.store;
        let max_token = store
            .leases
            .highest_token(&store.role)
            .map_or(0, FencingToken::get);
        let live_at_end = store.registry.live_count(server_local(now)) as u64;
        let mut report = Report {
            scenario: self.name.clone(),
            seed: self.seed,
            virtual_ms: ms(now),
            events: self.engine.events,
            trace_hash: format!("{:016x}", self.engine.observers.tracer.hash()),
            split_brain: verdict.split_brain_total > 0,
            violations: verdict.violations,
            terms: verdict.terms.iter().map(BeliefTerm::to_report).collect(),
            leader_changes: verdict.leader_changes,
            failovers: verdict.failovers,
            writes: verdict.writes,
            expect: Default::default(),
            violations_total: verdict.violations_total,
            fencing: self.scenario.fencing,
            overlap_ms: ms(verdict.overlap),
            leaderless_ms: ms(verdict.leaderless),
            spurious_failovers: verdict.spurious_failovers,
            max_token,
            membership: crate::report::MembershipReport {
                live_at_end,
                ..verdict.membership
            },
            coverage: verdict.coverage,
            unjudged_writes: self.unjudged_writes(),
            planted_bug: self.planted_bug_name(),
        };
        report.expect = evaluate(
            &self.expect,
            &report,
            verdict.split_brain_total,
            verdict.max_failover,
            verdict.overlap,
            verdict.leader_at_end,
        );
        report
    }

    /// The writes on their way when the report is taken: units whose term is
    /// still believed, writes in flight to the downstream, and writes queued
    /// at a paused downstream.
    pub(super) fn unjudged_writes(&self) -> UnjudgedWrites {
        let mut writes = Vec::new();
        let lives = &self.engine.lives;
        for (event, deferred) in self.engine.pending() {
            match event {
                Event::Timer {
                    to: Address::Process { pid, incarnation },
                    timer: Timer::WorkDone { token, unit },
                } => {
                    let believes = self.engine.hosts.believed(*pid) == Some(*token);
                    if lives.is_alive(*pid, *incarnation) && believes {
                        let state = if lives.is_paused(*pid) {
                            "in-progress (paused)"
                        } else {
                            "in-progress"
                        };
                        writes.push(UnjudgedWrite {
                            owner: lives.owner_of(*pid).to_string(),
                            token: token.get(),
                            unit: *unit,
                            state: state.to_string(),
                        });
                    }
                }
                Event::Deliver {
                    msg:
                        Message::Downstream(ToDownstream::Write {
                            owner, token, unit, ..
                        }),
                    ..
                } => writes.push(UnjudgedWrite {
                    owner: owner.to_string(),
                    token: token.get(),
                    unit: *unit,
                    // Writes queue only at a paused downstream.
                    state: if deferred { "queued" } else { "in-flight" }.to_string(),
                }),
                _ => {}
            }
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
