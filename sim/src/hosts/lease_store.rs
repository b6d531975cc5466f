//! The `lease-store` host: a [`LeaseStore`] for the role and a
//! [`FleetRegistry`] for membership, on true time (its clock is the arbiter
//! of expiry).
//!
//! Why a `FleetRegistry` (the `NodeRegistry`'s answers, its nodes named by
//! index) and not a `NodeRegistry`: the simulation knows its fleet up
//! front, and a `NodeRegistry` finds each heartbeating node by its id's
//! text — five dependent cache misses per heartbeat in a 10 000-node fleet,
//! a sixth of the run (`perf record`); by index, one row.

use std::time::Duration;

use fenced::{FleetRegistry, Heartbeat, LeaseStore, MembershipChange, ReleaseResult, Role};

use super::messages::{Message, Timer, ToProcess, ToStore};
use super::session::Reply;
use super::FencedHosts;
use crate::engine::{Address, Outbox};
use crate::observation::{Observation, Observer, RegistryAnswer, SimTime};

/// The lease store and the registry, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct LeaseStoreHost {
    pub(crate) role: Role,
    pub(crate) leases: LeaseStore,
    pub(crate) registry: FleetRegistry,
    registry_timer_at: Option<SimTime>,
    pub(super) registry_generation: u32,
    /// Changes of the live set since the registry's listing was last
    /// counted (see [`LISTING_SPREAD`]).
    changes_since_listing: u64,
    /// Its sessions' epoch: one more after each restart, which resets every
    /// session opened before (`hosts/session.rs`).
    pub(crate) epoch: u32,
}

/// The registry's listing (`live_nodes`) costs O(nodes) to count, so it is
/// counted after a change only once the changes since the last count reach
/// `entries / LISTING_SPREAD`: at most `LISTING_SPREAD` entries visited per
/// change, amortised, where counting after every change cost a 10 000-node
/// fleet O(nodes) per pause. A fleet of up to `LISTING_SPREAD` nodes lists
/// after every change. The cheap counts are asked after every change.
const LISTING_SPREAD: u64 = 16;

type Out<'a, 'e, O> = &'a mut Outbox<'e, FencedHosts, O>;

impl LeaseStoreHost {
    pub(crate) fn new(role: Role, leases: LeaseStore, registry: FleetRegistry) -> Self {
        LeaseStoreHost {
            role,
            leases,
            registry,
            registry_timer_at: None,
            registry_generation: 0,
            changes_since_listing: 0,
            epoch: 1,
        }
    }

    /// The store goes down for a restart: every session open to it is
    /// reset. Returns the epoch of those sessions.
    pub(crate) fn went_down(&mut self) -> u32 {
        let before = self.epoch;
        self.epoch = self.epoch.wrapping_add(1).max(1);
        before
    }

    #[inline(always)]
    pub(super) fn receive<O: Observer>(&mut self, msg: ToStore, out: Out<'_, '_, O>) {
        let now = out.local_now();
        if let ToStore::LeaseRequest { tag, .. }
        | ToStore::Release { tag, .. }
        | ToStore::Heartbeat { tag, .. } = msg
        {
            if tag.reset_by(self.epoch) {
                return out.refused(&Message::Store(msg));
            }
        }
        match msg {
            ToStore::LeaseRequest {
                pid,
                incarnation,
                id,
                ttl_ns,
                tag,
            } => {
                let names = out.names;
                let owner = names.owner_at(pid, incarnation);
                let answer = self.leases.try_acquire_or_renew(
                    &self.role,
                    &owner,
                    Duration::from_nanos(ttl_ns),
                    now,
                );
                let to = Address::Process { pid, incarnation };
                let from = names.sender_ref(pid, incarnation, &owner);
                let reply = match answer {
                    Ok(result) => {
                        out.observe(&Observation::LeaseHandled {
                            from,
                            request: id.0,
                            result: &result,
                        });
                        ToProcess::LeaseResponse {
                            result,
                            reply: Reply::answering(tag, id),
                        }
                    }
                    Err(error) => {
                        let text = error.to_string();
                        out.observe(&Observation::LeaseRejected {
                            from,
                            request: id.0,
                            error: &text,
                        });
                        ToProcess::LeaseFailed {
                            reply: Reply::answering(tag, id),
                        }
                    }
                };
                out.send(to, Message::Process(reply));
            }
            ToStore::Release {
                pid,
                incarnation,
                token,
                tag,
            } => {
                let names = out.names;
                let owner = names.owner_at(pid, incarnation);
                let result = self.leases.release(&self.role, &owner, token, now);
                let from = names.sender_ref(pid, incarnation, &owner);
                out.observe(&Observation::ReleaseHandled {
                    from,
                    token,
                    released: result == ReleaseResult::Released,
                });
                if tag.on_session() {
                    let reply = ToProcess::Released { tag };
                    out.send(
                        Address::Process { pid, incarnation },
                        Message::Process(reply),
                    );
                }
            }
            ToStore::Open {
                pid,
                incarnation,
                session,
                conn,
                step,
            } => {
                let reply = ToProcess::Opened {
                    session,
                    conn,
                    step,
                    epoch: self.epoch,
                };
                out.send(
                    Address::Process { pid, incarnation },
                    Message::Process(reply),
                );
            }
            ToStore::Heartbeat {
                pid,
                incarnation,
                node,
                tag,
            } => {
                let joined = self.registry.heartbeat(node, now) == Heartbeat::Joined;
                out.observe(&Observation::HeartbeatHandled {
                    from: out.names.process_ref(pid),
                    joined,
                });
                self.drain_membership(Some((node, joined)), out);
                if tag.on_session() {
                    let reply = ToProcess::HeartbeatAnswered { tag };
                    out.send(
                        Address::Process { pid, incarnation },
                        Message::Process(reply),
                    );
                }
            }
        }
    }

    /// The registry's timer fired: nodes whose TTL ran out leave.
    pub(super) fn registry_due<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        self.registry_timer_at = None;
        self.registry.handle_timeout(out.local_now());
        self.drain_membership(None, out);
    }

    /// The store's clock jumped: its registry timer is re-armed on the new
    /// clock.
    pub(super) fn clock_changed<O: Observer>(&mut self, out: Out<'_, '_, O>) {
        self.registry_timer_at = None;
        self.drain_membership(None, out);
    }

    /// The store comes back from a restart: with its leases, tokens and
    /// registry (`durable`), or empty — its tokens start again at 1, which
    /// the checker's `token-monotonic` invariant exists to catch.
    pub(super) fn restart<O: Observer>(&mut self, durable: bool, out: Out<'_, '_, O>) {
        if !durable {
            let config = *self.leases.config();
            self.leases = LeaseStore::new(config);
            self.registry = self.registry.emptied();
        }
        self.clock_changed(out);
    }

    /// Announces the registry's changes and asks it the questions the
    /// `membership` invariant judges: after a heartbeat (`heartbeat`: the
    /// node and whether it joined) and after each change.
    fn drain_membership<O: Observer>(
        &mut self,
        heartbeat: Option<(u32, bool)>,
        out: Out<'_, '_, O>,
    ) {
        let names = out.names;
        // The registry's own time, which a clock stepped back does not move
        // backward: the time its heartbeats were recorded at.
        let local = self.registry.time_at(out.local_now());
        // Changes come in batches (a heartbeat prunes, then may re-add the
        // very node it pruned); collected first, so that a node's `Left`
        // answer is asked knowing whether it rejoined in the same batch. No
        // allocation when nothing changed (a heartbeat that refreshed a
        // member, the common case).
        let mut changes = Vec::new();
        if let Some(first) = self.registry.poll_change_indexed() {
            changes.push(first);
            while let Some(change) = self.registry.poll_change_indexed() {
                changes.push(change);
            }
        }
        for (i, &(n, ref change)) in changes.iter().enumerate() {
            match change {
                MembershipChange::Joined { .. } => {
                    out.observe(&Observation::MemberJoined(names.node_ref(n)));
                }
                MembershipChange::Left { .. } => {
                    out.observe(&Observation::MemberLeft(names.node_ref(n)));
                    // The registry's answers are the `membership` invariant's
                    // evidence: asked right at the change.
                    let rejoined = changes[i + 1..]
                        .iter()
                        .any(|&(j, ref c)| j == n && matches!(c, MembershipChange::Joined { .. }));
                    out.observe(&Observation::RegistryAnswered {
                        local,
                        answer: RegistryAnswer::Left {
                            node: names.node_ref(n),
                            live: !rejoined && self.registry.is_live(n, local),
                        },
                    });
                }
            }
        }
        let changed = !changes.is_empty();
        if let Some((node, joined)) = heartbeat {
            // `is_live` is asked when the node joins (a refresh is the
            // common case, and the registry has just refreshed it).
            let live = !joined || self.registry.is_live(node, local);
            out.observe(&Observation::RegistryAnswered {
                local,
                answer: RegistryAnswer::Heartbeat {
                    node: names.node_ref(node),
                    joined,
                    live,
                },
            });
        }
        if changed {
            let entries = self.registry.len() as u64;
            self.changes_since_listing += 1;
            let listed = (self.changes_since_listing * LISTING_SPREAD >= entries).then(|| {
                self.changes_since_listing = 0;
                self.registry.live_nodes(local).count() as u64
            });
            out.observe(&Observation::RegistryAnswered {
                local,
                answer: RegistryAnswer::Counts {
                    live: self.registry.live_count(local) as u64,
                    listed,
                    entries,
                    empty: self.registry.is_empty(),
                },
            });
        }
        if out.wants_pictures() {
            let live = self.registry.live_count(out.local_now());
            out.observe(&Observation::LiveMembers(live as u64));
        }
        let next = self.registry.next_timeout().map(|t| out.true_time(t));
        // Arm only when nothing earlier is armed: a timer that fires before
        // the (since refreshed) earliest expiry just re-arms. Re-arming on
        // every heartbeat instead would leave one stale timer per heartbeat
        // in the queue — thousands in a large fleet.
        let armed = self.registry_timer_at;
        if next.is_some() && (armed.is_none() || next < armed) {
            if let Some(at) = next {
                self.registry_generation += 1;
                self.registry_timer_at = Some(at);
                let generation = self.registry_generation;
                out.set_timer_at(at.max(out.now), Timer::Registry { generation });
            }
        }
    }
}
