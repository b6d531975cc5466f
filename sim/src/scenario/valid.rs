//! A scenario that is known to be valid: parse, don't validate.
//!
//! [`Scenario`] is the editable form (a TOML file, or code that builds one).
//! [`Scenario::validated`] checks every rule once and returns a
//! [`ValidScenario`], which also holds what the checks parsed — the role, the
//! downstream resource, each node's id and the core's [`ElectorTimings`] — so
//! nothing downstream parses or defaults them a second time.
//! [`Simulation::new`](crate::Simulation::new) takes a `ValidScenario` and so
//! cannot fail on a scenario rule.

use std::ops::Deref;

use fenced::{ElectorTimings, Jitter, NodeId, ResourceId, Role};

use super::{Scenario, ScenarioError};

/// A [`Scenario`] that passed [`Scenario::validate`], with its parsed parts.
/// Only [`Scenario::validated`] makes one. It reads as the scenario it wraps
/// (it dereferences to it); change a copy of [`scenario`](Self::scenario) and
/// validate again to change it.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidScenario {
    scenario: Scenario,
    role: Role,
    resource: ResourceId,
    node_ids: Vec<NodeId>,
    timings: ElectorTimings,
}

impl Scenario {
    /// Checks every rule ([`validate`](Self::validate)) and returns the
    /// scenario with what the checks parsed.
    ///
    /// # Errors
    /// The first rule broken, naming its key.
    pub fn validated(&self) -> Result<ValidScenario, ScenarioError> {
        self.validate()?;
        let node_ids = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                NodeId::new(&spec.id)
                    .map_err(|e| ScenarioError::new(format!("node[{i}].id"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ValidScenario {
            role: self.role()?,
            resource: self.resource()?,
            node_ids,
            timings: self.election.timings(0),
            scenario: self.clone(),
        })
    }
}

impl ValidScenario {
    /// The scenario itself.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// The scenario, to edit (validate it again to run it).
    pub fn into_scenario(self) -> Scenario {
        self.scenario
    }

    /// The role every elector contends for.
    pub fn role(&self) -> &Role {
        &self.role
    }

    /// The downstream's resource.
    pub fn resource(&self) -> &ResourceId {
        &self.resource
    }

    /// Each node's id, in scenario order.
    pub fn node_ids(&self) -> &[NodeId] {
        &self.node_ids
    }

    /// The core's elector timings for a process whose jitter RNG is seeded
    /// with `jitter_seed` (every default resolved by the core, none here).
    pub fn elector_timings(&self, jitter_seed: u64) -> ElectorTimings {
        with_jitter_seed(self.timings, jitter_seed)
    }
}

/// `timings` for a process whose jitter RNG is seeded with `jitter_seed`.
pub(crate) fn with_jitter_seed(timings: ElectorTimings, jitter_seed: u64) -> ElectorTimings {
    ElectorTimings {
        jitter: timings.jitter.map(|j| Jitter {
            seed: jitter_seed,
            ..j
        }),
        ..timings
    }
}

impl Deref for ValidScenario {
    type Target = Scenario;

    fn deref(&self) -> &Scenario {
        &self.scenario
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn validation_parses_what_it_checked() {
        let scenario = Scenario::new("v", Duration::from_secs(60)).with_nodes(["a", "b"]);
        let valid = scenario.validated().expect("a valid scenario");
        assert_eq!(valid.role().as_str(), "leader");
        assert_eq!(valid.resource().as_str(), "leader");
        let ids: Vec<&str> = valid.node_ids().iter().map(NodeId::as_str).collect();
        assert_eq!(ids, ["a", "b"]);
        // The core's defaults, not a copy: an unset margin stays unset.
        let timings = valid.elector_timings(7);
        assert_eq!(timings, ElectorTimings::default());
        assert_eq!(valid.scenario(), &scenario);
        assert_eq!(valid.into_scenario(), scenario);
    }

    #[test]
    fn each_process_gets_its_own_jitter_seed() {
        let mut scenario = Scenario::new("j", Duration::from_secs(60)).with_nodes(["a"]);
        scenario.election.jitter = 0.2;
        let valid = scenario.validated().expect("a valid scenario");
        let jitter = valid.elector_timings(42).jitter.expect("jitter is on");
        assert_eq!((jitter.fraction, jitter.seed), (0.2, 42));
    }

    #[test]
    fn an_invalid_scenario_gets_no_valid_form() {
        let scenario = Scenario::new("", Duration::from_secs(60)).with_nodes(["a"]);
        let err = scenario.validated().expect_err("an empty name is refused");
        assert_eq!(err.key, "name");
    }
}
