//! The run's schedule: the plan's timed steps, and each anchored fault's
//! actions put in place when its event appears in a node's history
//! ([`crate::anchor_watch`]), applied in time order.

use std::time::Duration;

use tokio::time::Instant;

use super::{infra, Interrupts, Lab, RunError};
use fenced_sim::AnchoredFault;

use crate::plan::{AnchoredStep, Cause, Step};
use crate::report::Applied;

/// A step due: one of the plan's, or an anchored fault's put in place when
/// its event appeared.
struct Due {
    step: Step,
    anchored: bool,
}

impl Lab<'_> {
    pub(super) async fn drive(&mut self, interrupts: &mut Interrupts) -> Result<(), RunError> {
        self.start_proxies().await?;
        let start = Instant::now();
        // Anchors' events are stamped with the history clock; the run's
        // time is `start`'s. Both are read here, back to back.
        let start_ns = fenced::history::clock::now_ns().map_err(infra)?;
        let plan = self.plan;
        // What is due, in order: the plan's timed steps, then each fired
        // anchored fault's actions, put in place as they fire.
        let mut due: Vec<Due> = plan
            .steps
            .iter()
            .map(|step| Due {
                step: step.clone(),
                anchored: false,
            })
            .collect();
        let mut armed: Vec<usize> = (0..plan.anchored.len()).collect();
        let heal_at = plan.heal_at;
        loop {
            let next = due.first().map_or(plan.end, |d| d.step.at.min(plan.end));
            let fired = self
                .wait_watching(start + next, interrupts, !armed.is_empty())
                .await?;
            for seen in fired {
                let since_start = Duration::from_nanos(seen.at_ns.saturating_sub(start_ns));
                // One event fires *every* armed anchor it matches, in fault
                // order, as the simulator's `AnchorWatch::seen` does
                // (sim/src/simulation/anchors.rs). Firing only the first
                // left the others waiting for the next such event: the five
                // cuts of `cut-from-servers` on Redlock, one anchor each,
                // began a unit of work (200 ms) apart for real and together
                // in the simulation (found by `fenced-lab matrix --keep`).
                let mut hit = Vec::new();
                armed.retain(|&i| {
                    let fires =
                        crate::anchor_watch::fires(&plan.anchored[i].anchor, &seen, since_start);
                    if fires {
                        hit.push(i);
                    }
                    !fires
                });
                for anchored in hit.into_iter().map(|i| &plan.anchored[i]) {
                    if let Some(outcome) = self.anchors.get_mut(&anchored.fault) {
                        outcome.fired_at_ms = Some(AnchoredFault::ms(since_start));
                    }
                    // The simulator's rules: no fault begins at or after the
                    // heal, and an end due then is the heal's.
                    let Some(begins) = anchored.anchor.begins(since_start, heal_at) else {
                        continue;
                    };
                    for AnchoredStep {
                        step,
                        ended_by_heal,
                    } in &anchored.steps
                    {
                        let at = begins + step.at;
                        let superseded = *ended_by_heal && heal_at.is_some_and(|heal| at >= heal);
                        if superseded || at >= plan.end {
                            continue;
                        }
                        let place = due.partition_point(|d| d.step.at <= at);
                        let step = Step { at, ..step.clone() };
                        due.insert(
                            place,
                            Due {
                                step,
                                anchored: true,
                            },
                        );
                    }
                }
            }
            let now = start.elapsed();
            if due.first().is_none_or(|d| d.step.at > now) {
                if now >= plan.end {
                    break;
                }
                continue;
            }
            let Due { step, anchored } = due.remove(0);
            let effect = self.apply(step.cause, &step.action).await?;
            let real = start.elapsed();
            if let (true, Cause::Fault(index)) = (anchored, step.cause) {
                if let Some(outcome) = self.anchors.get_mut(&index) {
                    outcome.began_at_ms.get_or_insert(AnchoredFault::ms(real));
                }
            }
            let applied = Applied {
                planned: step.at,
                real,
                cause: step.cause,
                action: step.action.to_string(),
                effect,
                reaction: anchored.then(|| real.saturating_sub(step.at)),
            };
            if self.verbose {
                eprintln!("{applied}");
            }
            self.applied.push(applied);
        }
        self.ended_ns = fenced::history::clock::now_ns().ok();
        Ok(())
    }

    /// [`wait_until`](Self::wait_until) `deadline`, or, when `watching`,
    /// until an anchor's event appears in a history: returns the events
    /// seen (none when the deadline came).
    async fn wait_watching(
        &mut self,
        deadline: Instant,
        interrupts: &mut Interrupts,
        watching: bool,
    ) -> Result<Vec<crate::anchor_watch::Seen>, RunError> {
        if !watching {
            self.wait_until(deadline, interrupts).await?;
            return Ok(Vec::new());
        }
        loop {
            let seen = self.tails.poll();
            if !seen.is_empty() {
                return Ok(seen);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            let poll = (now + crate::anchor_watch::POLL_INTERVAL).min(deadline);
            self.wait_until(poll, interrupts).await?;
        }
    }
}
