//! An anchored fault in the plan: its anchor with times scaled, and its
//! actions (start, then end or restart) realised with their times from its
//! start — what the runner puts in its schedule when the event appears.

use std::time::Duration;

use fenced_sim::{FaultPlan, Resolution};

use super::{Cause, Planner, Step};
use crate::realise::Realised;

/// An anchored fault of the plan: what it waits for (times scaled), and
/// its actions with their times from its start.
#[derive(Clone, Debug, PartialEq)]
pub struct LabAnchored {
    /// The scenario's fault index.
    pub fault: usize,
    /// The anchor, its `not_before` and `delay` scaled.
    pub anchor: fenced_sim::ResolvedAnchor,
    /// The anchor as the scenario writes it, for reports.
    pub text: String,
    /// The fault's kind (`pause`, ...).
    pub kind: String,
    /// The fault's actions, `at` from its start (scaled): its start, then
    /// its end or restart.
    pub steps: Vec<AnchoredStep>,
}

/// One action of an anchored fault.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchoredStep {
    /// The action, `at` from the fault's start.
    pub step: Step,
    /// Whether the heal supersedes it when due at or after `heal_at`
    /// ([`fenced_sim::FaultAction::ended_by_heal`]; never the start).
    pub ended_by_heal: bool,
}

impl Planner<'_> {
    /// The anchored faults of `fault_plan` made real: each one's actions
    /// from its start, realised and scaled as the timed steps are.
    pub(super) fn anchored(
        &self,
        fault_plan: &FaultPlan,
        notes: &mut Vec<String>,
    ) -> Vec<LabAnchored> {
        let mut anchored = Vec::new();
        for (index, fault) in fault_plan.faults().iter().enumerate() {
            let Resolution::Anchored { anchor, fault } = fault else {
                continue;
            };
            let label = self.fault_label(index);
            let mut actions = vec![(Duration::ZERO, &fault.start, false)];
            if let Some(follow) = &fault.follow_up {
                let ended_by_heal = follow.action.ended_by_heal();
                actions.push((follow.after, &follow.action, ended_by_heal));
            }
            let mut steps = Vec::new();
            for (after, action, ended_by_heal) in actions {
                let at = self.scale.scale(after);
                let cause = Cause::Fault(index);
                let realised = self.realise(fault_plan, Some((index, label.as_str())), action);
                match realised {
                    Realised::Actions(list) => {
                        steps.extend(list.into_iter().map(|action| AnchoredStep {
                            step: Step {
                                at,
                                cause,
                                action: self.scaled(action),
                                planned: usize::MAX,
                                flip: 0,
                            },
                            ended_by_heal,
                        }))
                    }
                    Realised::Nothing(note) => notes.extend(note),
                }
            }
            let text = self.scenario.faults[index]
                .anchor()
                .map(ToString::to_string)
                .unwrap_or_default();
            anchored.push(LabAnchored {
                fault: index,
                anchor: fenced_sim::ResolvedAnchor {
                    not_before: self.scale.scale(anchor.not_before),
                    delay: self.scale.scale(anchor.delay),
                    ..*anchor
                },
                text,
                kind: self.scenario.faults[index].kind_name().to_string(),
                steps,
            });
        }
        anchored
    }
}
