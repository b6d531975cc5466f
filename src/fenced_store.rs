//! The fencing-aware downstream store: the last line of defence.
//!
//! Leases alone cannot prevent split-brain: a leader paused after its last
//! check can wake up and write after its successor has started. The store that
//! receives the writes closes that window by comparing fencing tokens
//! (Kleppmann, "How to do distributed locking"):
//!
//! * per resource, a write is accepted when its token is at least the highest
//!   token accepted so far, and rejected with `(stale, highest)` otherwise;
//! * a token is bound to the first writer that used it: another writer
//!   presenting the same token is rejected and reported, because two owners with
//!   one token means the lease layer is broken;
//! * [`Fencing::Disabled`] accepts everything, like a plain database. That mode
//!   exists to reproduce split-brain, not to be used.

use std::collections::BTreeMap;

use crate::id::{FencingToken, OwnerId, ResourceId};
use crate::planted::{BugSlot, PlantedBug};
use crate::time::Instant;

/// Whether the store checks tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "kebab-case")
)]
pub enum Fencing {
    /// Reject stale tokens and foreign writers (the point of the crate).
    Enforced,
    /// Accept every write (to reproduce split-brain).
    Disabled,
}

/// The outcome of [`FencedStore::write`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum WriteOutcome {
    /// The write is stored.
    Accepted,
    /// The token is below the highest accepted for the resource.
    RejectedStale {
        /// The token presented.
        stale: FencingToken,
        /// The highest token accepted for the resource.
        highest: FencingToken,
    },
    /// The token was first used by another writer.
    RejectedWrongWriter {
        /// The token presented.
        token: FencingToken,
        /// The writer the token is bound to.
        bound_to: OwnerId,
    },
}

/// One resource's state: the value of the last accepted write and the fence.
#[derive(Clone, Debug)]
struct Resource<V> {
    highest: FencingToken,
    highest_writer: OwnerId,
    value: V,
    accepted: u64,
    last_write_at: Instant,
}

/// A key-value store that fences its writers. `V` is the payload type.
#[derive(Clone, Debug)]
pub struct FencedStore<V> {
    fencing: Fencing,
    resources: BTreeMap<ResourceId, Resource<V>>,
    planted: BugSlot,
}

impl<V> FencedStore<V> {
    /// An empty store.
    pub fn new(fencing: Fencing) -> Self {
        FencedStore {
            fencing,
            resources: BTreeMap::new(),
            planted: BugSlot::default(),
        }
    }

    /// Plants a deliberate bug (negative controls only). Bugs that are not the
    /// downstream's have no effect here.
    #[cfg(feature = "planted-bugs")]
    pub fn plant(&mut self, bug: PlantedBug) {
        self.planted.set(bug);
    }

    /// Whether the store checks tokens.
    pub fn fencing(&self) -> Fencing {
        self.fencing
    }

    /// Writes `payload` to `resource` on behalf of `writer` holding `token`.
    /// `now` is the store's clock, kept as the resource's last write time.
    pub fn write(
        &mut self,
        resource: &ResourceId,
        token: FencingToken,
        writer: &OwnerId,
        payload: V,
        now: Instant,
    ) -> WriteOutcome {
        let accepts_lower = self.planted.is(PlantedBug::DownstreamAcceptsLowerToken);
        let Some(state) = self.resources.get_mut(resource.as_str()) else {
            self.resources.insert(
                resource.clone(),
                Resource {
                    highest: token,
                    highest_writer: writer.clone(),
                    value: payload,
                    accepted: 1,
                    last_write_at: now,
                },
            );
            return WriteOutcome::Accepted;
        };
        if self.fencing == Fencing::Enforced {
            let host = |o: &OwnerId| o.as_str().split('#').next().map(str::to_owned);
            let same_host = self.planted.is(PlantedBug::DownstreamTrustsSameHost)
                && host(&state.highest_writer) == host(writer);
            if token < state.highest && !accepts_lower && !same_host {
                return WriteOutcome::RejectedStale {
                    stale: token,
                    highest: state.highest,
                };
            }
            if token == state.highest && state.highest_writer != *writer {
                return WriteOutcome::RejectedWrongWriter {
                    token,
                    bound_to: state.highest_writer.clone(),
                };
            }
        }
        if token > state.highest {
            state.highest = token;
            state.highest_writer = writer.clone();
        }
        state.value = payload;
        state.accepted += 1;
        state.last_write_at = state.last_write_at.max(now);
        WriteOutcome::Accepted
    }

    /// The value of the last accepted write to `resource`.
    pub fn value(&self, resource: &ResourceId) -> Option<&V> {
        self.resources.get(resource.as_str()).map(|r| &r.value)
    }

    /// The highest token accepted for `resource`.
    pub fn highest_token(&self, resource: &ResourceId) -> Option<FencingToken> {
        self.resources.get(resource.as_str()).map(|r| r.highest)
    }

    /// How many writes `resource` has accepted.
    pub fn accepted_count(&self, resource: &ResourceId) -> u64 {
        self.resources
            .get(resource.as_str())
            .map_or(0, |r| r.accepted)
    }

    /// When `resource` last accepted a write (store clock).
    pub fn last_write_at(&self, resource: &ResourceId) -> Option<Instant> {
        self.resources
            .get(resource.as_str())
            .map(|r| r.last_write_at)
    }
}
