//! Deliberate bugs, compiled only with the `planted-bugs` feature.
//!
//! A checker that never fires proves nothing. Each variant breaks exactly one
//! rule of one state machine, and the simulator's tests assert that the
//! invariant named after that rule catches it (negative controls). The bugs are
//! off unless a caller plants one with the machine's `plant` method, so enabling
//! the feature alone changes no behaviour.

use std::fmt;
use std::str::FromStr;

/// A deliberate defect in one of the state machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum PlantedBug {
    /// [`LeaseStore`](crate::LeaseStore): a takeover reuses the role's current
    /// highest token instead of bumping it. Caught by token monotonicity.
    StoreSkipsTokenBump,
    /// [`LeaseStore`](crate::LeaseStore): a same-holder renewal bumps the token.
    /// Caught by token monotonicity (renewals never change the token).
    StoreBumpsTokenOnRenewal,
    /// [`LeaseStore`](crate::LeaseStore): a second owner asking while the lease
    /// is live "renews" it and becomes the holder with the same token. Caught by
    /// lease exclusivity.
    StoreLetsSecondOwnerRenew,
    /// [`Elector`](crate::Elector): a leader never steps down on its local
    /// deadline. Caught as split-brain when the downstream is unfenced.
    ElectorIgnoresDeadline,
    /// [`Elector`](crate::Elector): an answer to a request that was already
    /// re-sent is ignored (the first release's rule), so a store whose round
    /// trip is longer than `retry_interval` elects nobody. Caught by liveness.
    ElectorDropsSlowAnswers,
    /// [`FencedStore`](crate::FencedStore): a write with a token below the
    /// highest accepted one is accepted. Caught by the fenced single-writer
    /// invariant.
    DownstreamAcceptsLowerToken,
}

impl PlantedBug {
    /// Every planted bug, in a fixed order.
    pub const ALL: [PlantedBug; 6] = [
        PlantedBug::StoreSkipsTokenBump,
        PlantedBug::StoreBumpsTokenOnRenewal,
        PlantedBug::StoreLetsSecondOwnerRenew,
        PlantedBug::ElectorIgnoresDeadline,
        PlantedBug::ElectorDropsSlowAnswers,
        PlantedBug::DownstreamAcceptsLowerToken,
    ];

    /// The bug's kebab-case name, as the command line spells it.
    pub const fn name(self) -> &'static str {
        match self {
            PlantedBug::StoreSkipsTokenBump => "store-skips-token-bump",
            PlantedBug::StoreBumpsTokenOnRenewal => "store-bumps-token-on-renewal",
            PlantedBug::StoreLetsSecondOwnerRenew => "store-lets-second-owner-renew",
            PlantedBug::ElectorIgnoresDeadline => "elector-ignores-deadline",
            PlantedBug::ElectorDropsSlowAnswers => "elector-drops-slow-answers",
            PlantedBug::DownstreamAcceptsLowerToken => "downstream-accepts-lower-token",
        }
    }
}

impl fmt::Display for PlantedBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name given to [`PlantedBug::from_str`] is not a planted bug.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPlantedBug(pub String);

impl fmt::Display for UnknownPlantedBug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown planted bug `{}`; known: ", self.0)?;
        for (i, bug) in PlantedBug::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(bug.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownPlantedBug {}

impl FromStr for PlantedBug {
    type Err = UnknownPlantedBug;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PlantedBug::ALL
            .into_iter()
            .find(|bug| bug.name() == s)
            .ok_or_else(|| UnknownPlantedBug(s.to_string()))
    }
}

/// The planted bug a state machine carries, if any. Zero-sized and always
/// empty without the `planted-bugs` feature, so the checks compile away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BugSlot(#[cfg(feature = "planted-bugs")] Option<PlantedBug>);

impl BugSlot {
    /// Whether `bug` is the one planted.
    #[inline]
    pub(crate) fn is(self, bug: PlantedBug) -> bool {
        #[cfg(feature = "planted-bugs")]
        {
            self.0 == Some(bug)
        }
        #[cfg(not(feature = "planted-bugs"))]
        {
            let _ = bug;
            false
        }
    }

    /// Plants `bug`.
    #[cfg(feature = "planted-bugs")]
    pub(crate) fn set(&mut self, bug: PlantedBug) {
        self.0 = Some(bug);
    }
}
