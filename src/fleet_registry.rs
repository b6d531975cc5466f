//! A node registry over a fleet known up front: the [`NodeRegistry`]'s
//! answers and changes, with each node named by its index in the fleet.
//!
//! Why a second registry: a [`NodeRegistry`] finds a heartbeating node by its
//! id — it reads the id's text to hash it, probes a hash map, and moves the
//! node's entry in a doubly linked list of expiries — five dependent memory
//! reads per heartbeat, each a cache miss in a fleet of 10 000 nodes (the
//! simulator's lease store spent a sixth of a 10 000-node run there,
//! measured with `perf record`). A fleet whose members are known in advance
//! (a simulation, a static cluster) can name them by index: a heartbeat then
//! reads the node's row, appends to a queue of expiries, and marks the
//! node's previous entry there dead; nothing else.
//!
//! Its answers are the [`NodeRegistry`]'s for the same heartbeats and times
//! (the tests drive both side by side): the same [`Heartbeat`]s, the same
//! [`MembershipChange`]s in the same order, the same liveness, counts and
//! listings.

use std::collections::VecDeque;
use std::time::Duration;

use crate::id::NodeId;
use crate::registry::{Heartbeat, MembershipChange, RegistryError};
use crate::time::{Instant, LatestNow};

#[allow(unused_imports)] // For the documentation's links.
use crate::registry::NodeRegistry;

/// A row's `entry` while its node is not a member.
const ABSENT: u64 = u64::MAX;

/// One node of the fleet: 16 bytes, four to a cache line.
#[derive(Clone, Copy, Debug)]
struct Row {
    /// When it expires (meaningful while a member).
    expires_at: Instant,
    /// The position in the queue (counted from the queue's first push) of
    /// its live entry, or [`ABSENT`].
    entry: u64,
}

/// One heartbeat's expiry in the queue.
#[derive(Clone, Copy, Debug)]
struct Entry {
    expires_at: Instant,
    node: u32,
    /// Whether it is still its node's latest entry (a later heartbeat
    /// marks it dead).
    live: bool,
}

/// Live nodes of a fleet known up front, by heartbeat; each node is named by
/// its index in the list the registry was built from. A pure state machine:
/// every call says what time it is (registry clock), and time never runs
/// backwards inside it. See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct FleetRegistry {
    liveness_ttl: Duration,
    ids: Vec<NodeId>,
    /// Each node's place in id order (departures at one instant leave in
    /// id order, as a [`NodeRegistry`]'s do).
    rank: Vec<u32>,
    /// The node indices in id order (for listing).
    by_id: Vec<u32>,
    rows: Vec<Row>,
    /// Every heartbeat's expiry not yet pruned, oldest first: a node's
    /// latest entry is live, its earlier ones dead. Expiries are appended
    /// in order (the clock never runs backwards and every node has the same
    /// TTL), so the queue is sorted; the front entry is always live.
    queue: VecDeque<Entry>,
    /// The position of the queue's front entry.
    front: u64,
    /// How many nodes are members (live, or expired and not yet pruned).
    members: usize,
    changes: VecDeque<(u32, MembershipChange)>,
    latest_now: LatestNow,
}

impl FleetRegistry {
    /// An empty registry over the fleet `nodes` (node `i` is the `i`-th).
    ///
    /// # Errors
    /// [`RegistryError::ZeroLivenessTtl`] if `liveness_ttl` is zero.
    ///
    /// # Panics
    /// If two nodes share an id, or there are 2^32 nodes or more.
    pub fn new(
        nodes: impl IntoIterator<Item = NodeId>,
        liveness_ttl: Duration,
    ) -> Result<Self, RegistryError> {
        if liveness_ttl.is_zero() {
            return Err(RegistryError::ZeroLivenessTtl);
        }
        let ids: Vec<NodeId> = nodes.into_iter().collect();
        let count = u32::try_from(ids.len()).expect("fewer than 2^32 nodes");
        let mut by_id: Vec<u32> = (0..count).collect();
        by_id.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        assert!(
            by_id
                .windows(2)
                .all(|w| ids[w[0] as usize] != ids[w[1] as usize]),
            "the nodes of a fleet have distinct ids"
        );
        let mut rank = vec![0; ids.len()];
        for (place, &node) in by_id.iter().enumerate() {
            rank[node as usize] = place as u32;
        }
        let rows = vec![
            Row {
                expires_at: Instant::ZERO,
                entry: ABSENT,
            };
            ids.len()
        ];
        Ok(FleetRegistry {
            liveness_ttl,
            ids,
            rank,
            by_id,
            rows,
            queue: VecDeque::new(),
            front: 0,
            members: 0,
            changes: VecDeque::new(),
            latest_now: LatestNow::default(),
        })
    }

    /// The same fleet, with no member and nothing seen (a registry that
    /// restarts with no state).
    pub fn emptied(&self) -> Self {
        FleetRegistry {
            liveness_ttl: self.liveness_ttl,
            ids: self.ids.clone(),
            rank: self.rank.clone(),
            by_id: self.by_id.clone(),
            rows: vec![
                Row {
                    expires_at: Instant::ZERO,
                    entry: ABSENT,
                };
                self.rows.len()
            ],
            queue: VecDeque::new(),
            front: 0,
            members: 0,
            changes: VecDeque::new(),
            latest_now: LatestNow::default(),
        }
    }

    /// The TTL after which a silent node is dropped.
    pub fn liveness_ttl(&self) -> Duration {
        self.liveness_ttl
    }

    /// How many nodes the fleet has.
    pub fn fleet_len(&self) -> usize {
        self.ids.len()
    }

    /// Node `node`'s id.
    ///
    /// # Panics
    /// If `node` is not an index of the fleet.
    pub fn node_id(&self, node: u32) -> &NodeId {
        &self.ids[node as usize]
    }

    /// Records a heartbeat from node `node` at `now`, after pruning what
    /// expired.
    ///
    /// # Panics
    /// If `node` is not an index of the fleet.
    pub fn heartbeat(&mut self, node: u32, now: Instant) -> Heartbeat {
        let now = self.latest_now.observe(now);
        self.prune(now);
        let expires_at = now + self.liveness_ttl;
        let at = self.front + self.queue.len() as u64;
        let row = &mut self.rows[node as usize];
        let previous = row.entry;
        row.entry = at;
        row.expires_at = expires_at;
        self.queue.push_back(Entry {
            expires_at,
            node,
            live: true,
        });
        if previous == ABSENT {
            self.members += 1;
            let joined = MembershipChange::Joined {
                node: self.ids[node as usize].clone(),
                at: now,
            };
            self.changes.push_back((node, joined));
            return Heartbeat::Joined;
        }
        // The clock never runs backwards and every node has the same TTL,
        // so the new expiry is the latest: the node's earlier entry dies
        // and the queue stays sorted.
        self.queue[(previous - self.front) as usize].live = false;
        self.drop_dead_front();
        Heartbeat::Refreshed
    }

    /// The registry's time at `now`: `now`, or the latest instant it was
    /// handed if that is later (see [`NodeRegistry::time_at`]).
    pub fn time_at(&self, now: Instant) -> Instant {
        self.latest_now.at(now)
    }

    /// Prunes every node expired at `now`, queueing a
    /// [`MembershipChange::Left`] for each, in expiry order (nodes expiring
    /// at one instant in id order).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        self.prune(now);
    }

    fn prune(&mut self, now: Instant) {
        if self.queue.front().is_none_or(|e| e.expires_at > now) {
            return;
        }
        // (expiry, place in id order, node): one instant's in id order.
        let mut expired = Vec::new();
        while let Some(&entry) = self.queue.front() {
            if entry.live {
                if entry.expires_at > now {
                    break;
                }
                let node = entry.node;
                expired.push((entry.expires_at, self.rank[node as usize], node));
                self.rows[node as usize].entry = ABSENT;
                self.members -= 1;
            }
            self.queue.pop_front();
            self.front += 1;
        }
        expired.sort_unstable();
        for (at, _, node) in expired {
            let left = MembershipChange::Left {
                node: self.ids[node as usize].clone(),
                at,
            };
            self.changes.push_back((node, left));
        }
    }

    /// Pops the dead entries at the front: the front entry is live.
    fn drop_dead_front(&mut self) {
        while self.queue.front().is_some_and(|e| !e.live) {
            self.queue.pop_front();
            self.front += 1;
        }
    }

    /// When the next node expires if nobody heartbeats (call
    /// [`handle_timeout`](Self::handle_timeout) then), or `None`.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.queue.front().map(|e| e.expires_at)
    }

    /// Whether node `node` is live at `now`.
    ///
    /// # Panics
    /// If `node` is not an index of the fleet.
    pub fn is_live(&self, node: u32, now: Instant) -> bool {
        let now = self.latest_now.at(now);
        let row = &self.rows[node as usize];
        row.entry != ABSENT && now < row.expires_at
    }

    /// The nodes live at `now`, sorted by id.
    pub fn live_nodes(&self, now: Instant) -> impl Iterator<Item = &NodeId> + '_ {
        let now = self.latest_now.at(now);
        self.by_id
            .iter()
            .map(|&node| node as usize)
            .filter(move |&node| {
                let row = &self.rows[node];
                row.entry != ABSENT && now < row.expires_at
            })
            .map(|node| &self.ids[node])
    }

    /// How many nodes are live at `now`: O(expired members not yet pruned
    /// and the dead entries among them), as a [`NodeRegistry`]'s count.
    pub fn live_count(&self, now: Instant) -> usize {
        let now = self.latest_now.at(now);
        let expired = self
            .queue
            .iter()
            .filter(|e| e.live)
            .take_while(|e| e.expires_at <= now)
            .count();
        self.members - expired
    }

    /// How many members the registry holds (live, or expired and not yet
    /// pruned). Bounded by the live set after each call.
    pub fn len(&self) -> usize {
        self.members
    }

    /// Whether the registry holds no member.
    pub fn is_empty(&self) -> bool {
        self.members == 0
    }

    /// The next membership change, or `None` when drained. Drain after every
    /// input; the queue holds whatever is not drained.
    pub fn poll_change(&mut self) -> Option<MembershipChange> {
        self.changes.pop_front().map(|(_, change)| change)
    }

    /// [`poll_change`](Self::poll_change) with the index of the node that
    /// joined or left.
    pub fn poll_change_indexed(&mut self) -> Option<(u32, MembershipChange)> {
        self.changes.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::NodeRegistry;

    fn fleet(n: usize) -> Vec<NodeId> {
        // Ids out of index order, so that id order and index order differ.
        (0..n)
            .map(|i| NodeId::new(format!("n{}", (i * 7) % n)).expect("a valid id"))
            .collect()
    }

    /// Both registries, driven alike by a pseudo-random stream of
    /// heartbeats, timeouts and clock steps back, answer alike.
    #[test]
    fn answers_as_a_node_registry_does() {
        let ttl = Duration::from_secs(10);
        let ids = fleet(13);
        let mut fleet_reg = FleetRegistry::new(ids.clone(), ttl).unwrap();
        let mut reg = NodeRegistry::new(ttl).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut now = 0u64;
        let (mut joins, mut leaves) = (0, 0);
        for round in 0..20_000 {
            // Mostly forward by up to 2 s, sometimes a step back, sometimes
            // the same instant (ties).
            match next() % 10 {
                0 => now = now.saturating_sub(next() % 3_000_000_000),
                1 => {}
                _ => now += next() % 2_000_000_000,
            }
            let at = Instant::from_nanos(now);
            if next() % 4 == 0 {
                fleet_reg.handle_timeout(at);
                reg.handle_timeout(at);
            } else {
                let node = (next() % ids.len() as u64) as u32;
                assert_eq!(
                    fleet_reg.heartbeat(node, at),
                    reg.heartbeat(&ids[node as usize], at),
                    "round {round}"
                );
            }
            loop {
                let change = fleet_reg.poll_change_indexed();
                let expected = reg.poll_change();
                assert_eq!(change.as_ref().map(|(_, c)| c), expected.as_ref());
                let id = match change {
                    Some((node, MembershipChange::Joined { node: id, .. })) => {
                        joins += 1;
                        (node, id)
                    }
                    Some((node, MembershipChange::Left { node: id, .. })) => {
                        leaves += 1;
                        (node, id)
                    }
                    None => break,
                };
                assert_eq!(id.1, ids[id.0 as usize]);
            }
            let probe = Instant::from_nanos(now + next() % 4_000_000_000);
            assert_eq!(fleet_reg.next_timeout(), reg.next_timeout());
            assert_eq!(fleet_reg.len(), reg.len());
            assert_eq!(fleet_reg.is_empty(), reg.is_empty());
            assert_eq!(fleet_reg.live_count(probe), reg.live_count(probe));
            assert_eq!(fleet_reg.time_at(probe), reg.time_at(probe));
            assert!(fleet_reg.live_nodes(probe).eq(reg.live_nodes(probe)));
            for (node, id) in ids.iter().enumerate() {
                assert_eq!(
                    fleet_reg.is_live(node as u32, probe),
                    reg.is_live(id, probe)
                );
            }
        }
        assert!(
            joins > 1000 && leaves > 1000,
            "{joins} joins, {leaves} leaves"
        );
    }

    #[test]
    fn emptied_forgets_every_member() {
        let ids = fleet(3);
        let mut reg = FleetRegistry::new(ids, Duration::from_secs(10)).unwrap();
        reg.heartbeat(1, Instant::from_secs(5));
        let empty = reg.emptied();
        assert!(empty.is_empty() && empty.next_timeout().is_none());
        assert_eq!(empty.time_at(Instant::from_secs(1)), Instant::from_secs(1));
        assert_eq!(empty.fleet_len(), 3);
    }

    #[test]
    fn a_zero_liveness_ttl_is_rejected() {
        assert_eq!(
            FleetRegistry::new(fleet(2), Duration::ZERO).unwrap_err(),
            RegistryError::ZeroLivenessTtl
        );
    }
}
