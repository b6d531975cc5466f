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
    /// [`Elector`](crate::Elector): validity is anchored at the answer's
    /// arrival instead of the request's send, so the leader's deadline outlives
    /// the store's lease by a round trip — the lock client that starts the TTL
    /// clock when the reply arrives (the Redlock critique's "the clock starts
    /// before you ask"). Caught by `local-deadline`.
    ElectorAnchorsAtArrival,
    /// [`Elector`](crate::Elector): an answer is matched to the newest request
    /// in flight rather than the one it answers, so a late answer to an old
    /// request is anchored at a later send — a client that pairs pipelined
    /// replies with the wrong request. Caught by `local-deadline`.
    ElectorMatchesNewestRequest,
    /// [`Elector`](crate::Elector): the local deadline is the whole TTL from the
    /// send (the anchor is moved on by the safety margin, up to the arrival),
    /// leaving nothing for clock drift — a lease client without Redlock's
    /// drift factor. Caught by `local-deadline`.
    ElectorDeadlineWithoutMargin,
    /// [`LeaseStore`](crate::LeaseStore): a release frees the role's lease
    /// whoever holds it — a Redis lock unlocked with `DEL` instead of a
    /// compare-and-delete. Caught by `lease-exclusive`.
    StoreReleaseDeletesUnconditionally,
    /// [`LeaseStore`](crate::LeaseStore): an expired lease asked for again by
    /// its old owner is renewed with the old token instead of re-granted with a
    /// new one — a store that treats "same owner" as "same term". Caught by
    /// `token-monotonic`.
    StoreRenewsLapsedLease,
    /// [`LeaseStore`](crate::LeaseStore): expiry is judged on the expiry time
    /// truncated to whole seconds, so a lease ends up to a second early — the
    /// Kubernetes leader-election record whose renew time had second
    /// precision. Caught by `lease-exclusive`.
    StoreTruncatesExpiryToSeconds,
    /// [`LeaseStore`](crate::LeaseStore): the holder is recognized by its host
    /// name (the owner up to `#`), not by its life, so a restarted process
    /// renews the dead one's live lease with the same token — a lock keyed by
    /// host name instead of by session. Caught by `lease-exclusive`.
    StoreKeysLeaseByHost,
    /// [`LeaseStore`](crate::LeaseStore): the token counter lives in the lease
    /// record, so a grant after a release starts again at 1 — a lock whose
    /// counter is kept on the lock key that unlock deletes. Caught by
    /// `token-monotonic`.
    StoreForgetsTokenOnRelease,
    /// [`Elector`](crate::Elector): an answer whose request id is no longer
    /// outstanding (a duplicate, or one overtaken by a later answer) is applied
    /// to the newest request in flight — a client that checks that *a* request
    /// is pending, not that this answer is its. Caught by `local-deadline`.
    ElectorAppliesStaleAnswer,
    /// [`FencedStore`](crate::FencedStore): a lower token is accepted when the
    /// writer runs on the same host (the owner up to `#`) as the highest
    /// token's writer, so a replaced process's zombie writes through — fencing
    /// by host allow-list instead of by token. Caught by `single-writer`.
    DownstreamTrustsSameHost,
    /// The tokio driver ([`LeaseLeaderElector`](crate::tokio::LeaseLeaderElector)):
    /// the elector's `now` is read off the wall clock (`SystemTime`) instead
    /// of `tokio::time::Instant`, so an NTP step of the node moves its
    /// deadlines — a client that times its lease with `time.time()` or
    /// `System.currentTimeMillis()`. The pure [`Elector`](crate::Elector)
    /// is fed `now` and cannot have it, so the simulator never sees it; the
    /// lab catches it for real: a step back of the leader's wall clock keeps
    /// it leading past its lease (`fenced-lab`'s node-wall-clock-steps run).
    DriverReadsWallClock,
}

impl PlantedBug {
    /// Every planted bug, in a fixed order.
    pub const ALL: [PlantedBug; 17] = [
        PlantedBug::StoreSkipsTokenBump,
        PlantedBug::StoreBumpsTokenOnRenewal,
        PlantedBug::StoreLetsSecondOwnerRenew,
        PlantedBug::ElectorIgnoresDeadline,
        PlantedBug::ElectorDropsSlowAnswers,
        PlantedBug::DownstreamAcceptsLowerToken,
        PlantedBug::ElectorAnchorsAtArrival,
        PlantedBug::ElectorMatchesNewestRequest,
        PlantedBug::ElectorDeadlineWithoutMargin,
        PlantedBug::StoreReleaseDeletesUnconditionally,
        PlantedBug::StoreRenewsLapsedLease,
        PlantedBug::StoreTruncatesExpiryToSeconds,
        PlantedBug::StoreKeysLeaseByHost,
        PlantedBug::StoreForgetsTokenOnRelease,
        PlantedBug::ElectorAppliesStaleAnswer,
        PlantedBug::DownstreamTrustsSameHost,
        PlantedBug::DriverReadsWallClock,
    ];

    /// Whether the bug lives in the tokio driver rather than in a pure
    /// state machine: the simulator cannot plant it (it drives the machines
    /// itself), only a real process can.
    pub const fn only_in_driver(self) -> bool {
        matches!(self, PlantedBug::DriverReadsWallClock)
    }

    /// The bug's kebab-case name, as the command line spells it.
    pub const fn name(self) -> &'static str {
        match self {
            PlantedBug::StoreSkipsTokenBump => "store-skips-token-bump",
            PlantedBug::StoreBumpsTokenOnRenewal => "store-bumps-token-on-renewal",
            PlantedBug::StoreLetsSecondOwnerRenew => "store-lets-second-owner-renew",
            PlantedBug::ElectorIgnoresDeadline => "elector-ignores-deadline",
            PlantedBug::ElectorDropsSlowAnswers => "elector-drops-slow-answers",
            PlantedBug::DownstreamAcceptsLowerToken => "downstream-accepts-lower-token",
            PlantedBug::ElectorAnchorsAtArrival => "elector-anchors-at-arrival",
            PlantedBug::ElectorMatchesNewestRequest => "elector-matches-newest-request",
            PlantedBug::ElectorDeadlineWithoutMargin => "elector-deadline-without-margin",
            PlantedBug::StoreReleaseDeletesUnconditionally => {
                "store-release-deletes-unconditionally"
            }
            PlantedBug::StoreRenewsLapsedLease => "store-renews-lapsed-lease",
            PlantedBug::StoreTruncatesExpiryToSeconds => "store-truncates-expiry-to-seconds",
            PlantedBug::StoreKeysLeaseByHost => "store-keys-lease-by-host",
            PlantedBug::StoreForgetsTokenOnRelease => "store-forgets-token-on-release",
            PlantedBug::ElectorAppliesStaleAnswer => "elector-applies-stale-answer",
            PlantedBug::DownstreamTrustsSameHost => "downstream-trusts-same-host",
            PlantedBug::DriverReadsWallClock => "driver-reads-wall-clock",
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
