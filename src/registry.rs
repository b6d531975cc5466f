//! The node registry: cluster membership from heartbeats.
//!
//! A node is live while `now < last_heartbeat + liveness_ttl`. Entries are
//! pruned as they expire, so memory follows the live set, not the history of
//! every node that ever joined. Joins and departures are queued as
//! [`MembershipChange`]s for dashboards and rebalancing; a departure is stamped
//! with the exact instant the node expired, not with whenever the registry
//! happened to notice.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::Duration;

use crate::id::NodeId;
use crate::time::{Instant, LatestNow};

/// A node's place in the [`ExpiryQueue`], by id. The one hash map of the
/// library, allowed because it is only looked up, never iterated (its order
/// reaches no output), and its hasher is unkeyed (the same in every run).
#[allow(clippy::disallowed_types)]
type IdIndex = std::collections::HashMap<NodeId, u32, rustc_hash::FxBuildHasher>;

/// Why a registry could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// A zero liveness TTL would make every node dead on arrival.
    ZeroLivenessTtl,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::ZeroLivenessTtl => f.write_str("liveness_ttl must be greater than zero"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// A node joining or leaving the live set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum MembershipChange {
    /// The node heartbeated while not live.
    Joined {
        /// The node.
        node: NodeId,
        /// The heartbeat's instant.
        at: Instant,
    },
    /// The node's liveness TTL ran out.
    Left {
        /// The node.
        node: NodeId,
        /// The instant it expired (`last heartbeat + liveness_ttl`).
        at: Instant,
    },
}

/// What a heartbeat did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Heartbeat {
    /// The node was not live and now is.
    Joined,
    /// The node was live; its liveness is extended.
    Refreshed,
}

/// Live nodes, by heartbeat. A pure state machine: every call says what time
/// it is (registry clock), and time never runs backwards inside it.
#[derive(Clone, Debug)]
pub struct NodeRegistry {
    liveness_ttl: Duration,
    /// Each node not yet pruned, by id (for listing in id order), with its
    /// place in `by_expiry`. Touched only when a node joins or leaves.
    by_id: BTreeMap<NodeId, u32>,
    /// The same entries for lookup: a heartbeat finds its node here. A
    /// B-tree walk compared a dozen cold id strings per heartbeat (measured:
    /// the most expensive part of a 10 000-node fleet's heartbeat); a hash
    /// lookup reads the id once. Never iterated, so its order never reaches
    /// an output; the hasher (rustc's Fx: a multiply per word, where SipHash
    /// measured 4 % of a fleet's run) is unkeyed, so it is deterministic too.
    index: IdIndex,
    /// The same entries ordered by expiry (each expiry is the node's last
    /// heartbeat plus the TTL), for pruning in order.
    by_expiry: ExpiryQueue,
    changes: VecDeque<MembershipChange>,
    latest_now: LatestNow,
}

impl NodeRegistry {
    /// An empty registry.
    ///
    /// # Errors
    /// [`RegistryError::ZeroLivenessTtl`] if `liveness_ttl` is zero.
    pub fn new(liveness_ttl: Duration) -> Result<Self, RegistryError> {
        if liveness_ttl.is_zero() {
            return Err(RegistryError::ZeroLivenessTtl);
        }
        Ok(NodeRegistry {
            liveness_ttl,
            by_id: BTreeMap::new(),
            index: IdIndex::default(),
            by_expiry: ExpiryQueue::default(),
            changes: VecDeque::new(),
            latest_now: LatestNow::default(),
        })
    }

    /// The TTL after which a silent node is dropped.
    pub fn liveness_ttl(&self) -> Duration {
        self.liveness_ttl
    }

    /// Records a heartbeat from `node` at `now`, after pruning what expired.
    pub fn heartbeat(&mut self, node: &NodeId, now: Instant) -> Heartbeat {
        let now = self.latest_now.observe(now);
        self.prune(now);
        let expires_at = now + self.liveness_ttl;
        match self.index.get(node) {
            Some(&slot) => {
                // The clock never runs backwards and every node has the same
                // TTL, so the new expiry is the latest: the node moves to the
                // back and the queue stays sorted.
                self.by_expiry.move_to_back(slot, expires_at);
                Heartbeat::Refreshed
            }
            None => {
                let slot = self.by_expiry.push_back(node.clone(), expires_at);
                self.index.insert(node.clone(), slot);
                self.by_id.insert(node.clone(), slot);
                self.changes.push_back(MembershipChange::Joined {
                    node: node.clone(),
                    at: now,
                });
                Heartbeat::Joined
            }
        }
    }

    /// The registry's time at `now`: `now`, or the latest instant it was
    /// handed if that is later. It never runs backward — a clock stepped
    /// back holds it until the clock catches up — so this is the time its
    /// heartbeats are recorded at and its answers hold for.
    pub fn time_at(&self, now: Instant) -> Instant {
        self.latest_now.at(now)
    }

    /// Prunes every node expired at `now`, queueing a
    /// [`MembershipChange::Left`] for each, in expiry order.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        self.prune(now);
    }

    fn prune(&mut self, now: Instant) {
        if self.by_expiry.front().is_none_or(|at| at > now) {
            return;
        }
        // Nodes expiring at one instant leave in id order.
        let mut expired = Vec::new();
        while self.by_expiry.front().is_some_and(|at| at <= now) {
            if let Some(entry) = self.by_expiry.pop_front() {
                expired.push(entry);
            }
        }
        expired.sort();
        for (at, node) in expired {
            self.index.remove(&node);
            self.by_id.remove(&node);
            self.changes.push_back(MembershipChange::Left { node, at });
        }
        debug_assert_eq!(self.by_expiry.len(), self.by_id.len());
        debug_assert_eq!(self.index.len(), self.by_id.len());
    }

    /// When the next node expires if nobody heartbeats (call
    /// [`handle_timeout`](NodeRegistry::handle_timeout) then), or `None`.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.by_expiry.front()
    }

    /// Whether `node` is live at `now`.
    pub fn is_live(&self, node: &NodeId, now: Instant) -> bool {
        let now = self.latest_now.at(now);
        self.index
            .get(node)
            .is_some_and(|&slot| now < self.by_expiry.expires_at(slot))
    }

    /// The nodes live at `now`, sorted by id.
    pub fn live_nodes(&self, now: Instant) -> impl Iterator<Item = &NodeId> + '_ {
        let now = self.latest_now.at(now);
        self.by_id
            .iter()
            .filter(move |(_, &slot)| now < self.by_expiry.expires_at(slot))
            .map(|(node, _)| node)
    }

    /// How many nodes are live at `now`.
    ///
    /// O(expired entries not yet pruned), not O(nodes): entries are held in
    /// expiry order, so the ones `now` has outlived are at the front — none
    /// after any call that pruned at `now` or later.
    pub fn live_count(&self, now: Instant) -> usize {
        let now = self.latest_now.at(now);
        self.by_id.len() - self.by_expiry.expired_at(now)
    }

    /// How many entries the registry holds (live, or expired and not yet
    /// pruned). Bounded by the live set after each call.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the registry holds no entries.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The next membership change, or `None` when drained. Drain after every
    /// input; the queue holds whatever is not drained.
    pub fn poll_change(&mut self) -> Option<MembershipChange> {
        self.changes.pop_front()
    }
}

/// No slot.
const NIL: u32 = u32::MAX;

/// One node's place in the [`ExpiryQueue`].
#[derive(Clone, Debug)]
struct Slot {
    node: Option<NodeId>,
    expires_at: Instant,
    prev: u32,
    next: u32,
}

/// Nodes in order of expiry, as a doubly linked list in a slab. A heartbeat
/// moves its node to the back in O(1): with a clock that never runs
/// backwards and one TTL for every node, the new expiry is the latest, so the
/// list stays sorted — where a sorted set would pay a removal and an
/// insertion of O(log n) each per heartbeat. Ties keep insertion order;
/// [`NodeRegistry`] sorts a batch of departures itself.
#[derive(Clone, Debug)]
struct ExpiryQueue {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for ExpiryQueue {
    fn default() -> Self {
        ExpiryQueue {
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

impl ExpiryQueue {
    fn len(&self) -> usize {
        self.len
    }

    /// The earliest expiry.
    fn front(&self) -> Option<Instant> {
        (self.head != NIL).then(|| self.slots[self.head as usize].expires_at)
    }

    fn link_back(&mut self, slot: u32) {
        debug_assert!(
            self.tail == NIL
                || self.slots[self.tail as usize].expires_at
                    <= self.slots[slot as usize].expires_at,
            "expiries are appended in order"
        );
        self.slots[slot as usize].prev = self.tail;
        self.slots[slot as usize].next = NIL;
        if self.tail == NIL {
            self.head = slot;
        } else {
            self.slots[self.tail as usize].next = slot;
        }
        self.tail = slot;
    }

    fn unlink(&mut self, slot: u32) {
        let Slot { prev, next, .. } = self.slots[slot as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    /// Appends `node` expiring at `expires_at` (the latest so far).
    fn push_back(&mut self, node: NodeId, expires_at: Instant) -> u32 {
        let entry = Slot {
            node: Some(node),
            expires_at,
            prev: NIL,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.link_back(slot);
        self.len += 1;
        slot
    }

    /// When the node in `slot` expires.
    fn expires_at(&self, slot: u32) -> Instant {
        self.slots[slot as usize].expires_at
    }

    /// Moves `slot` to the back with a new (latest) expiry.
    fn move_to_back(&mut self, slot: u32, expires_at: Instant) {
        self.unlink(slot);
        self.slots[slot as usize].expires_at = expires_at;
        self.link_back(slot);
    }

    /// How many entries, from the front, expire at or before `now`.
    fn expired_at(&self, now: Instant) -> usize {
        let mut count = 0;
        let mut slot = self.head;
        while slot != NIL && self.slots[slot as usize].expires_at <= now {
            count += 1;
            slot = self.slots[slot as usize].next;
        }
        count
    }

    /// Removes and returns the earliest entry.
    fn pop_front(&mut self) -> Option<(Instant, NodeId)> {
        let slot = self.head;
        if slot == NIL {
            return None;
        }
        self.unlink(slot);
        self.free.push(slot);
        self.len -= 1;
        let entry = &mut self.slots[slot as usize];
        entry.node.take().map(|node| (entry.expires_at, node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_liveness_ttl_is_rejected() {
        assert_eq!(
            NodeRegistry::new(Duration::ZERO).unwrap_err(),
            RegistryError::ZeroLivenessTtl
        );
    }

    /// The registry's time holds at the latest instant it was handed — by
    /// a heartbeat or a timeout that changed nothing — so a clock stepped
    /// back reads that instant, and a heartbeat then is recorded there.
    #[test]
    fn its_time_never_runs_backward_whatever_handed_it() {
        let mut reg = NodeRegistry::new(Duration::from_secs(10)).unwrap();
        let a = NodeId::new("a").unwrap();
        assert_eq!(reg.time_at(Instant::from_secs(3)), Instant::from_secs(3));
        reg.heartbeat(&a, Instant::from_secs(5));
        reg.handle_timeout(Instant::from_secs(7));
        assert!(reg.poll_change().is_some(), "a joined");
        assert!(reg.poll_change().is_none(), "the timeout changed nothing");
        assert_eq!(reg.time_at(Instant::from_secs(2)), Instant::from_secs(7));
        assert_eq!(reg.time_at(Instant::from_secs(9)), Instant::from_secs(9));
        // Stepped back to 2: the heartbeat counts at 7, expiring at 17.
        reg.heartbeat(&a, Instant::from_secs(2));
        assert_eq!(reg.next_timeout(), Some(Instant::from_secs(17)));
    }

    #[test]
    fn departures_are_stamped_with_the_expiry_instant_in_order() {
        let mut reg = NodeRegistry::new(Duration::from_secs(10)).unwrap();
        let a = NodeId::new("a").unwrap();
        let b = NodeId::new("b").unwrap();
        reg.heartbeat(&b, Instant::from_secs(1));
        reg.heartbeat(&a, Instant::from_secs(2));
        reg.handle_timeout(Instant::from_secs(100));
        let changes: Vec<_> = std::iter::from_fn(|| reg.poll_change()).collect();
        assert_eq!(
            changes,
            vec![
                MembershipChange::Joined {
                    node: b.clone(),
                    at: Instant::from_secs(1)
                },
                MembershipChange::Joined {
                    node: a.clone(),
                    at: Instant::from_secs(2)
                },
                MembershipChange::Left {
                    node: b,
                    at: Instant::from_secs(11)
                },
                MembershipChange::Left {
                    node: a,
                    at: Instant::from_secs(12)
                },
            ]
        );
        assert!(reg.is_empty());
        assert_eq!(reg.next_timeout(), None);
    }
}
