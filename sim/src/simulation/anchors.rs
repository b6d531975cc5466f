//! Watching the observation stream for the events anchored faults wait for
//! (see [`Anchor`](crate::scenario::Anchor)).
//!
//! The watcher is one more consumer of the stream, after the tracer, the
//! checker and the recorder: it sees exactly what they see, in the same
//! order, so an anchor fires on the event the trace shows. When one fires
//! it asks the engine for the driver's attention
//! ([`Observer::wants_attention`]); the engine returns control right after
//! the event being handled, and the run begins the fault then (delay 0) or
//! schedules its start (see `Core::anchors_fired`). Nothing here reads a
//! clock or a map's order: the same seed fires the same anchors at the same
//! instants.

use std::collections::BTreeSet;

use super::{Core, SimHosts};
use crate::engine::Control;
use crate::observation::{Observation, Observer, ProcessRef, SimTime};
use crate::report::AnchoredFault;
use crate::scenario::{AnchorEvent, ResolvedAnchor};

/// An anchored fault, armed until its event happens.
#[derive(Debug)]
struct Armed {
    /// The scenario's fault index.
    fault: u32,
    anchor: ResolvedAnchor,
}

/// The anchored faults of a run still waiting, and those whose event just
/// happened.
#[derive(Debug, Default)]
pub(crate) struct AnchorWatch {
    armed: Vec<Armed>,
    /// The lives (slot, incarnation) that believe they lead, for
    /// `renewal-sent`.
    leading: BTreeSet<(u32, u32)>,
    /// Fired and not yet taken by the run: (fault index, its anchor, when).
    fired: Vec<(u32, ResolvedAnchor, SimTime)>,
    /// Every anchored fault's outcome so far, in the order armed.
    outcomes: Vec<Outcome>,
}

impl AnchorWatch {
    /// Arms `anchor` for the scenario's fault `fault`.
    pub(crate) fn arm(&mut self, fault: u32, anchor: ResolvedAnchor) {
        self.armed.push(Armed { fault, anchor });
    }

    /// The anchors that fired since the last call, in the order they did.
    pub(crate) fn take_fired(&mut self) -> Vec<(u32, ResolvedAnchor, SimTime)> {
        std::mem::take(&mut self.fired)
    }

    /// `event` of `process`, carrying `token`, happened at `at`: fires every
    /// armed anchor it matches (each once).
    fn seen(
        &mut self,
        event: AnchorEvent,
        process: &ProcessRef<'_>,
        token: Option<u64>,
        at: SimTime,
    ) {
        let since_start = at.since_start();
        let node = process.node.index;
        let fired = &mut self.fired;
        self.armed.retain(|armed| {
            let hit = armed.anchor.matches(event, node, token, since_start);
            if hit {
                fired.push((armed.fault, armed.anchor, at));
            }
            !hit
        });
    }
}

impl Observer for AnchorWatch {
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        match observation {
            Observation::TermStarted { process, token } => {
                self.leading.insert((process.id.0, process.incarnation));
                self.seen(AnchorEvent::TermStarted, process, Some(token.get()), at);
            }
            Observation::TermEnded { process, token, .. } => {
                self.leading.remove(&(process.id.0, process.incarnation));
                self.seen(AnchorEvent::TermEnded, process, Some(token.get()), at);
            }
            Observation::ProcessCrashed(process) | Observation::ProcessStopped(process) => {
                self.leading.remove(&(process.id.0, process.incarnation));
            }
            Observation::WorkStarted { process, token, .. } => {
                self.seen(AnchorEvent::WorkStarted, process, Some(token.get()), at);
            }
            Observation::WriteSent { process, token, .. } => {
                self.seen(AnchorEvent::WriteSent, process, Some(token.get()), at);
            }
            Observation::RequestSent { process, .. } => {
                self.seen(AnchorEvent::RequestSent, process, None, at);
                if self.leading.contains(&(process.id.0, process.incarnation)) {
                    self.seen(AnchorEvent::RenewalSent, process, None, at);
                }
            }
            _ => {}
        }
    }

    fn wants_attention(&self) -> bool {
        !self.fired.is_empty()
    }
}

/// What became of one anchored fault, for the report.
#[derive(Debug)]
struct Outcome {
    fault: u32,
    /// The anchor as the scenario wrote it (`work-started of node-a`).
    text: String,
    fired: Option<SimTime>,
    began: Option<SimTime>,
}

impl<H: SimHosts> Core<H> {
    /// Arms the anchor of the scenario's fault `index`.
    pub(super) fn arm_anchor(&mut self, index: usize, anchor: ResolvedAnchor) {
        let text = self.scenario.faults[index]
            .anchor()
            .map(ToString::to_string)
            .unwrap_or_default();
        let watch = self
            .engine
            .observers
            .anchors
            .get_or_insert_with(Box::default);
        watch.arm(index as u32, anchor);
        watch.outcomes.push(Outcome {
            fault: index as u32,
            text,
            fired: None,
            began: None,
        });
    }

    /// Notes that the scenario's fault `index` begins now, if it is
    /// anchored.
    pub(super) fn note_anchored_began(&mut self, index: usize) {
        let now = self.engine.now;
        if let Some(outcome) = self.outcome_mut(index as u32) {
            outcome.began.get_or_insert(now);
        }
    }

    fn outcome_mut(&mut self, fault: u32) -> Option<&mut Outcome> {
        let watch = self.engine.observers.anchors.as_mut()?;
        watch.outcomes.iter_mut().find(|o| o.fault == fault)
    }

    /// Acts on the anchors that fired: each fault begins when
    /// [`ResolvedAnchor::begins`] says — at once for no delay (right after
    /// the event that fired it, before anything else at that instant), else
    /// when its start comes up in the queue; never at or after the heal.
    pub(super) fn anchors_fired(&mut self) {
        let Some(watch) = self.engine.observers.anchors.as_mut() else {
            return;
        };
        let heal_at = self.scenario.heal_at;
        for (fault, anchor, at) in watch.take_fired() {
            if let Some(outcome) = self.outcome_mut(fault) {
                outcome.fired = Some(at);
            }
            match anchor.begins(at.since_start(), heal_at) {
                Some(begins) if begins == at.since_start() => self.start_fault(fault as usize),
                Some(begins) => {
                    let start = SimTime::from_duration(begins);
                    self.engine.schedule(start, Control::FaultStart(fault));
                }
                None => {}
            }
        }
    }

    /// Each anchored fault's outcome for the report, in fault order.
    pub(super) fn anchored_faults(&self) -> Vec<AnchoredFault> {
        let Some(watch) = self.engine.observers.anchors.as_ref() else {
            return Vec::new();
        };
        watch
            .outcomes
            .iter()
            .map(|o| {
                let kind = self.scenario.faults[o.fault as usize].kind_name();
                AnchoredFault {
                    fired_at_ms: o.fired.map(|at| AnchoredFault::ms(at.since_start())),
                    began_at_ms: o.began.map(|at| AnchoredFault::ms(at.since_start())),
                    ..AnchoredFault::waiting(o.fault as usize, kind, &o.text)
                }
            })
            .collect()
    }
}
