//! The membership part's model of the node registry: per node, the last
//! heartbeat the registry accepted and whether it was announced as a
//! member, the members linked in heartbeat order. The registry's clock is
//! its host's: the answers carry it, so the model needs no clock of its own
//! (only the latest instant answered, see [`RegistryModel::advance`]).

use std::time::Duration;

use fenced::Instant;

/// No node: the end of the members' list.
const NONE: u32 = u32::MAX;

/// The model of one node's membership.
#[derive(Clone, Copy, Debug)]
struct Member {
    /// The last heartbeat the registry accepted (registry clock).
    last: Option<Instant>,
    /// Whether it was announced as a member and has not left since.
    member: bool,
    /// The neighbours in the members' list (see [`RegistryModel`]).
    prev: u32,
    next: u32,
}

impl Default for Member {
    fn default() -> Self {
        Member {
            last: None,
            member: false,
            prev: NONE,
            next: NONE,
        }
    }
}

/// The checker's model of the registry.
///
/// The members are also linked in order of their last heartbeat, oldest
/// first: every heartbeat is stamped with the latest registry time so far
/// (the model's clock never runs backwards), so a refreshed or joining node
/// goes to the back and the list stays sorted. "Is any member past its
/// TTL?" is then a look at the front — O(1) where a scan of every node cost
/// a 10 000-node fleet O(nodes) per change of the live set.
#[derive(Clone, Debug)]
pub(super) struct RegistryModel {
    nodes: Vec<Member>,
    members: u64,
    /// The member with the oldest last heartbeat, and the newest.
    oldest: u32,
    newest: u32,
    /// The latest registry time answered: the registry's clock never runs
    /// backwards inside it, even when its host's clock steps back.
    latest: Option<Instant>,
}

impl Default for RegistryModel {
    fn default() -> Self {
        RegistryModel {
            nodes: Vec::new(),
            members: 0,
            oldest: NONE,
            newest: NONE,
            latest: None,
        }
    }
}

impl RegistryModel {
    fn node(&mut self, index: u32) -> &mut Member {
        let i = index as usize;
        if self.nodes.len() <= i {
            self.nodes.resize(i + 1, Member::default());
        }
        &mut self.nodes[i]
    }

    /// Unlinks member `index` from the list.
    fn unlink(&mut self, index: u32) {
        let Member { prev, next, .. } = self.nodes[index as usize];
        match prev {
            NONE => self.oldest = next,
            prev => self.nodes[prev as usize].next = next,
        }
        match next {
            NONE => self.newest = prev,
            next => self.nodes[next as usize].prev = prev,
        }
    }

    /// Links member `index` at the back (its heartbeat is the newest).
    fn link_newest(&mut self, index: u32) {
        let newest = self.newest;
        let entry = self.node(index);
        entry.prev = newest;
        entry.next = NONE;
        match newest {
            NONE => self.oldest = index,
            newest => self.nodes[newest as usize].next = index,
        }
        self.newest = index;
    }

    /// Node `index` heartbeated at `local` (the latest registry time) and
    /// is a member now.
    pub(super) fn heartbeat(&mut self, index: u32, local: Instant) {
        let m = *self.node(index);
        if m.member {
            self.unlink(index);
        } else {
            self.members += 1;
        }
        self.link_newest(index);
        let entry = &mut self.nodes[index as usize];
        entry.last = Some(local);
        entry.member = true;
    }

    /// Node `index` left.
    pub(super) fn left(&mut self, index: u32) {
        if self.node(index).member {
            self.unlink(index);
            self.members -= 1;
        }
        // A non-member's links are never read (`link_newest` sets both);
        // cleared so that they keep nothing of the order members left in,
        // which a state's fingerprint would otherwise tell apart.
        let entry = &mut self.nodes[index as usize];
        entry.member = false;
        entry.prev = NONE;
        entry.next = NONE;
    }

    /// The lowest-numbered member past its TTL at `local`, if any.
    pub(super) fn stale(&self, local: Instant, ttl: Duration) -> Option<usize> {
        // `NONE` (no member) is past the end of `nodes`.
        let oldest = self.nodes.get(self.oldest as usize)?;
        debug_assert!(oldest.member);
        if oldest.last.is_none_or(|h| h + ttl > local) {
            return None;
        }
        // Rare (a violation): which member, by the lowest index.
        self.nodes
            .iter()
            .position(|m| m.member && m.last.is_some_and(|h| h + ttl <= local))
    }

    /// A volatile restart: the registry is empty again.
    pub(super) fn forget(&mut self) {
        *self = RegistryModel::default();
    }

    /// The model's member of node `index` (not a member if never seen):
    /// its last heartbeat, and whether it is a member.
    #[inline]
    pub(super) fn member(&mut self, index: u32) -> (Option<Instant>, bool) {
        let m = *self.node(index);
        (m.last, m.member)
    }

    /// How many nodes are members.
    #[inline]
    pub(super) fn members(&self) -> u64 {
        self.members
    }

    /// Registry time `local` as the model's clock reads it: never before
    /// the latest answered, so it never runs backwards.
    #[inline]
    pub(super) fn advance(&mut self, local: Instant) -> Instant {
        let local = self.latest.map_or(local, |l| l.max(local));
        self.latest = Some(local);
        local
    }
}
