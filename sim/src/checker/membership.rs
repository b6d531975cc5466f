//! The `membership` invariant: the node registry's answers against the
//! checker's own model of heartbeats and the liveness TTL.
//!
//! The registry's contract (`fenced::NodeRegistry`): a node is live from a
//! heartbeat at `h` (registry clock) until `h + liveness_ttl`, exclusive; it
//! leaves at that instant (its host's timer fires there), and is reported
//! `Joined` by the first heartbeat that finds it absent. The model keeps, per
//! node, the last heartbeat the registry accepted and whether it was
//! announced as a member; the host reports what the registry *answers*
//! ([`RegistryAnswer`]) after each thing it did, and every answer is checked:
//!
//! * a heartbeat is `Joined` exactly when the node was not a member, and the
//!   node is live right after it;
//! * a node leaves no earlier than its last heartbeat plus the TTL, and no
//!   later — unless the registry could not act then (its host paused,
//!   restarted, or its clock stepped: it leaves in the burst at the instant
//!   the host could act again);
//! * a node that left is not live; no member is kept past its expiry;
//! * the counts (`live_count`, `live_nodes`, `len`, `is_empty`) match the
//!   model's member set.
//!
//! The registry's clock is its host's: the answers carry it, so the model
//! needs no clock of its own. A volatile restart of the host empties the
//! registry and the model with it.

use std::time::Duration;

use fenced::Instant;

use super::Checker;
use crate::observation::{NodeRef, RegistryAnswer, SimTime};
use crate::report::Invariant;

/// No node: the end of the members' list.
const NONE: u32 = u32::MAX;

/// The model of one node's membership.
#[derive(Clone, Copy, Debug)]
struct Member {
    /// The last heartbeat the registry accepted (registry clock).
    last: Option<Instant>,
    /// Whether it was announced as a member and has not left since.
    member: bool,
    /// The neighbours in the members' list (see [`MembershipModel`]).
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
pub(super) struct MembershipModel {
    nodes: Vec<Member>,
    members: u64,
    /// The member with the oldest last heartbeat, and the newest.
    oldest: u32,
    newest: u32,
    /// The latest registry time answered: the registry's clock never runs
    /// backwards inside it, even when its host's clock steps back.
    latest: Option<Instant>,
    /// True time at which the registry's host last became able to act
    /// again after it could not (a resume, a restart, a clock step).
    recovered_at: Option<SimTime>,
}

impl Default for MembershipModel {
    fn default() -> Self {
        MembershipModel {
            nodes: Vec::new(),
            members: 0,
            oldest: NONE,
            newest: NONE,
            latest: None,
            recovered_at: None,
        }
    }
}

impl MembershipModel {
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
    fn heartbeat(&mut self, index: u32, local: Instant) {
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
    fn left(&mut self, index: u32) {
        if self.node(index).member {
            self.unlink(index);
            self.members -= 1;
        }
        self.nodes[index as usize].member = false;
    }

    /// The lowest-numbered member past its TTL at `local`, if any.
    fn stale(&self, local: Instant, ttl: Duration) -> Option<usize> {
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

    /// The registry's host could act again at `now` (resumed, restarted,
    /// or its clock stepped).
    pub(super) fn recovered(&mut self, now: SimTime) {
        self.recovered_at = Some(now);
    }

    /// A volatile restart: the registry is empty again.
    pub(super) fn forget(&mut self, now: SimTime) {
        *self = MembershipModel::default();
        self.recovered(now);
    }
}

impl Checker {
    /// Judges one registry answer at true time `now` (see the module docs).
    /// Inlined: a heartbeat's answer comes with every heartbeat.
    #[inline]
    pub(super) fn on_registry_answer(
        &mut self,
        now: SimTime,
        local: Instant,
        answer: RegistryAnswer<'_>,
    ) {
        let Some(ttl) = self.settings.liveness_ttl else {
            return;
        };
        let local = self.members.latest.map_or(local, |l| l.max(local));
        self.members.latest = Some(local);
        match answer {
            RegistryAnswer::Heartbeat { node, joined, live } => {
                self.on_registry_heartbeat(now, local, ttl, node, joined, live)
            }
            RegistryAnswer::Left { node, live } => {
                self.on_registry_left(now, local, ttl, node, live)
            }
            RegistryAnswer::Counts {
                live,
                listed,
                entries,
                empty,
            } => self.on_registry_counts(now, local, ttl, live, listed, entries, empty),
        }
    }

    #[inline]
    fn on_registry_heartbeat(
        &mut self,
        now: SimTime,
        local: Instant,
        ttl: Duration,
        node: NodeRef<'_>,
        joined: bool,
        live: bool,
    ) {
        let m = *self.members.node(node.index);
        if m.member && !joined && live && m.last.is_none_or(|h| h + ttl > local) {
            // The common case, a refresh that is as it should be: judged and
            // recorded without the rules below.
            self.members.heartbeat(node.index, local);
            return;
        }
        self.judge_registry_heartbeat(now, local, ttl, node, joined, live);
    }

    /// [`on_registry_heartbeat`](Self::on_registry_heartbeat) for a join or
    /// a wrong answer.
    #[inline(never)]
    fn judge_registry_heartbeat(
        &mut self,
        now: SimTime,
        local: Instant,
        ttl: Duration,
        node: NodeRef<'_>,
        joined: bool,
        live: bool,
    ) {
        let m = *self.members.node(node.index);
        if m.member && m.last.is_some_and(|h| h + ttl <= local) {
            self.membership_violation(
                now,
                format!(
                    "{} was still a member at {local} although its last heartbeat was at {} and the liveness TTL is {ttl:?}",
                    node.id,
                    m.last.map_or(local, |h| h),
                ),
            );
        }
        if joined == m.member {
            let said = if joined { "joined" } else { "refreshed" };
            let was = if m.member { "a member" } else { "not a member" };
            self.membership_violation(
                now,
                format!(
                    "the registry said {} {said} with a heartbeat at {local}, but it was {was}",
                    node.id
                ),
            );
        }
        if !live {
            self.membership_violation(
                now,
                format!(
                    "{} is not live right after its heartbeat at {local}",
                    node.id
                ),
            );
        }
        self.members.heartbeat(node.index, local);
    }

    #[inline(never)]
    fn on_registry_left(
        &mut self,
        now: SimTime,
        local: Instant,
        ttl: Duration,
        node: NodeRef<'_>,
        live: bool,
    ) {
        let m = *self.members.node(node.index);
        let expiry = m.last.map(|h| h + ttl);
        if !m.member {
            self.membership_violation(
                now,
                format!("{} left at {local} but was not a member", node.id),
            );
        } else if let Some(expiry) = expiry {
            if local < expiry {
                self.membership_violation(
                    now,
                    format!(
                        "{} left at {local}, before its liveness ran out at {expiry}",
                        node.id
                    ),
                );
            } else if local > expiry && self.members.recovered_at != Some(now) {
                self.membership_violation(
                    now,
                    format!(
                        "{} left at {local}, late: its liveness ran out at {expiry} while the registry could act",
                        node.id
                    ),
                );
            }
        }
        if live {
            self.membership_violation(
                now,
                format!(
                    "{} left at {local} but the registry still calls it live",
                    node.id
                ),
            );
        }
        self.members.left(node.index);
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn on_registry_counts(
        &mut self,
        now: SimTime,
        local: Instant,
        ttl: Duration,
        live: u64,
        listed: Option<u64>,
        entries: u64,
        empty: bool,
    ) {
        if let Some(i) = self.members.stale(local, ttl) {
            self.membership_violation(
                now,
                format!("node #{i} is still a member at {local}, past its liveness TTL"),
            );
        }
        let model = self.members.members;
        let listed_wrong = listed.is_some_and(|listed| listed != model);
        if live != model || listed_wrong || entries != model || empty != (model == 0) {
            let listed = listed.map_or_else(|| "-".to_owned(), |l| l.to_string());
            self.membership_violation(
                now,
                format!(
                    "at {local} the registry counts {live} live, lists {listed}, holds {entries} (empty: {empty}); its heartbeats and TTL say {model}"
                ),
            );
        }
    }

    fn membership_violation(&mut self, now: SimTime, detail: String) {
        self.violate(Invariant::Membership, now, detail, Vec::new());
    }
}
