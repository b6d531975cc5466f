//! The run's report: the checker's verdict plus what only the engine knows
//! (events, the trace hash, writes still in flight, the store's highest token).

use super::*;

impl Simulation {
    // ----- the report -----

    /// The report as of now (normally called after [`run_to_end`](Self::run_to_end)).
    pub fn report(&self) -> Report {
        // The verdict closes the belief measures at `now` on a copy, so that
        // a report can be taken at any time and the run continued.
        let verdict = self
            .observers
            .checker
            .verdict(SimTime::from_nanos(self.now));
        let max_token = self
            .store
            .state
            .leases
            .highest_token(&self.role)
            .map_or(0, FencingToken::get);
        let live_at_end = self
            .store
            .state
            .registry
            .live_count(fenced::Instant::from_nanos(self.now)) as u64;
        let mut report = Report {
            scenario: self.name.clone(),
            seed: self.seed,
            virtual_ms: ms(self.now),
            events: self.events,
            trace_hash: format!("{:016x}", self.observers.tracer.hash()),
            split_brain: verdict.split_brain_total > 0,
            violations: verdict.violations,
            terms: verdict.terms,
            leader_changes: verdict.leader_changes,
            failovers: verdict.failovers,
            writes: verdict.writes,
            expect: Default::default(),
            violations_total: verdict.violations_total,
            fencing: self.scenario.fencing,
            overlap_ms: ms(nanos(verdict.overlap)),
            leaderless_ms: ms(nanos(verdict.leaderless)),
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
            nanos(verdict.max_failover),
            nanos(verdict.overlap),
            verdict.leader_at_end,
        );
        report
    }

    /// The writes on their way when the report is taken: units whose term is
    /// still believed, writes in flight to the downstream, and writes queued
    /// at a paused downstream.
    pub(super) fn unjudged_writes(&self) -> UnjudgedWrites {
        let mut writes = Vec::new();
        let mut note = |event: &Event, queued: bool| match event {
            Event::WorkDone {
                pid,
                incarnation,
                token,
                unit,
            } => {
                let p = &self.hosts.procs[*pid as usize];
                if p.alive && p.incarnation == *incarnation && p.believed == Some(*token) {
                    let state = if p.pause_depth > 0 {
                        "in-progress (paused)"
                    } else {
                        "in-progress"
                    };
                    writes.push(UnjudgedWrite {
                        owner: p.owner.to_string(),
                        token: token.get(),
                        unit: *unit,
                        state: state.to_string(),
                    });
                }
            }
            Event::Deliver {
                to: Dest::Downstream,
                msg: Message::Write {
                    owner, token, unit, ..
                },
                ..
            } => writes.push(UnjudgedWrite {
                owner: owner.to_string(),
                token: token.get(),
                unit: *unit,
                state: if queued { "queued" } else { "in-flight" }.to_string(),
            }),
            _ => {}
        };
        for event in self.queue.pending() {
            note(event, false);
        }
        for event in &self.downstream.deferred {
            note(event, true);
        }
        for p in self.hosts.procs.iter().filter(|p| p.alive) {
            for event in &p.deferred {
                note(event, false);
            }
        }
        writes.sort();
        let total = writes.len() as u64;
        let newest = self.observers.checker.highest_granted();
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
        self.observers
            .checker
            .leader_at(SimTime::from_nanos(self.now))
    }
}
