//! Which clock faults the lab cannot make real: judged by the planner,
//! which knows the nodes' drifts, the store's declared clock and what
//! libfaketime can do on this machine.

use fenced_sim::{FaultAction, Resolution, StoreClock};

use super::{ClockTarget, Planner};
use crate::realise;

impl Planner<'_> {
    /// Why the lab cannot make clock fault `fault` real, if it is one it
    /// cannot: a node's slew; a node's step without libfaketime's runtime
    /// steps, or on a node with a drift; a step of a lease store the
    /// scenario declares monotonic.
    pub(super) fn clock_refusal(&self, fault: &Resolution) -> Option<String> {
        let (Resolution::Scheduled(fault) | Resolution::Anchored { fault, .. }) = fault else {
            return None;
        };
        let target = realise::clock_target(&fault.start, &self.servers)?;
        let slew = matches!(fault.start, FaultAction::ClockSlew { .. });
        match target {
            ClockTarget::Node(node) => {
                let spec = &self.scenario.nodes[node];
                if slew {
                    Some(format!(
                        "{}: a slew moves a node's monotonic clock too (Linux slews \
                         CLOCK_MONOTONIC with CLOCK_REALTIME), and libfaketime changes a running \
                         process's rate only with its experimental FAKETIME_XRESET, which the lab \
                         does not trust with the elector's timers",
                        spec.id
                    ))
                } else if spec.clock_drift != 0.0 {
                    Some(format!(
                        "{}: its clock drifts ({}) and a fault steps it — libfaketime fakes a \
                         rate only by faking CLOCK_MONOTONIC, which a step must leave alone",
                        spec.id, spec.clock_drift
                    ))
                } else {
                    self.options.faketime.step_refusal()
                }
            }
            ClockTarget::LeaseStore if !slew => match self.scenario.store_clock {
                StoreClock::Wall => None,
                StoreClock::Monotonic => Some(
                    "[store] clock = \"monotonic\" declares a lease store no step moves (the \
                     in-process store on a monotonic clock); the lab's lease store is PostgreSQL, \
                     which expires leases by its wall clock — run it with [store] clock = \"wall\""
                        .to_string(),
                ),
            },
            // A slew moves both of a host's clocks: PostgreSQL's wall clock
            // too, whatever the store declares.
            ClockTarget::LeaseStore => None,
            // Judged by the design (`design_redlock::refusal`).
            ClockTarget::Redis(_) => None,
        }
    }
}
