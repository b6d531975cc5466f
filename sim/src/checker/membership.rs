//! The `membership` invariant: the node registry's answers against the
//! part's own model of heartbeats and the liveness TTL
//! ([`RegistryModel`]); and the membership measures (joins, leaves, flaps,
//! leaves of a node that was running).
//!
//! The registry's contract (`fenced::NodeRegistry`): a node is live from a
//! heartbeat at `h` (registry clock) until `h + liveness_ttl`, exclusive; it
//! leaves at that instant (its host's timer fires there), and is reported
//! `Joined` by the first heartbeat that finds it absent. The host reports
//! what the registry *answers* ([`RegistryAnswer`]) after each thing it
//! did, and every answer is checked:
//!
//! * a heartbeat is `Joined` exactly when the node was not a member, and the
//!   node is live right after it;
//! * a node leaves no earlier than its last heartbeat plus the TTL, and no
//!   later — unless the registry could not act then (its host paused,
//!   restarted, or its clock stepped: it leaves in the burst at the instant
//!   the host could act again, which the [model](super::model) records);
//! * a node that left is not live; no member is kept past its expiry;
//! * the counts (`live_count`, `live_nodes`, `len`, `is_empty`) match the
//!   model's member set.
//!
//! A volatile restart of the host empties the registry and the model with
//! it.

use std::collections::BTreeSet;
use std::time::Duration;

use fenced::Instant;

use super::findings::Findings;
use super::model::Model;
use super::registry::RegistryModel;
use crate::engine::slew::ServerClock;
use crate::observation::{NodeRef, RegistryAnswer, SimTime};
use crate::report::{Invariant, MembershipReport};

/// The membership part.
#[derive(Clone, Debug, Default)]
pub(super) struct Membership {
    /// The registry's liveness TTL: the answers are judged only when set.
    ttl: Option<Duration>,
    registry: RegistryModel,
    /// Joins, leaves, flaps and false leaves of the live set as announced.
    report: MembershipReport,
    /// Nodes that left the live set and have not come back.
    left: BTreeSet<u32>,
}

impl Membership {
    /// A part that has seen no answer; judged with `ttl`.
    pub(super) fn new(ttl: Option<Duration>) -> Self {
        Membership {
            ttl,
            ..Membership::default()
        }
    }

    /// The measures (`live_at_end` is the caller's to fill).
    pub(super) fn report(&self) -> &MembershipReport {
        &self.report
    }

    /// Node `node` joined the live set as announced.
    pub(super) fn joined(&mut self, node: u32) {
        self.report.joins += 1;
        if self.left.remove(&node) {
            self.report.flaps += 1;
        }
    }

    /// Node `node` left the live set as announced: a false leave if it runs
    /// a live process that is not paused.
    pub(super) fn left(&mut self, node: u32, model: &Model) {
        self.report.leaves += 1;
        if model.running(node) {
            self.report.false_leaves += 1;
        }
        self.left.insert(node);
    }

    /// The registry's host restarted; unless `durable`, the registry is
    /// empty again.
    pub(super) fn restarted(&mut self, durable: bool) {
        if !durable {
            self.registry.forget();
        }
    }

    /// Judges one registry answer at true time `now` (see the module docs).
    /// Inlined: a heartbeat's answer comes with every heartbeat.
    #[inline]
    pub(super) fn answered(
        &mut self,
        now: SimTime,
        local: Instant,
        answer: RegistryAnswer<'_>,
        model: &Model,
        sink: &mut Findings,
    ) {
        let Some(ttl) = self.ttl else {
            return;
        };
        let local = self.registry.advance(local);
        let judge = Judge { now, local, ttl };
        match answer {
            RegistryAnswer::Heartbeat { node, joined, live } => {
                self.heartbeat(judge, node, joined, live, sink)
            }
            RegistryAnswer::Left { node, live } => {
                let recovered_at = model.store_recovered_at();
                let clock = model.store_clock();
                self.node_left(judge, (node, live), (recovered_at, clock), sink)
            }
            RegistryAnswer::Counts {
                live,
                listed,
                entries,
                empty,
            } => self.counts(judge, (live, listed, entries, empty), sink),
        }
    }

    #[inline]
    fn heartbeat(
        &mut self,
        judge: Judge,
        node: NodeRef<'_>,
        joined: bool,
        live: bool,
        sink: &mut Findings,
    ) {
        let (last, member) = self.registry.member(node.index);
        if member && !joined && live && last.is_none_or(|h| h + judge.ttl > judge.local) {
            // The common case, a refresh that is as it should be: judged and
            // recorded without the rules below.
            self.registry.heartbeat(node.index, judge.local);
            return;
        }
        self.judge_heartbeat(judge, node, joined, live, sink);
    }

    /// [`heartbeat`](Self::heartbeat) for a join or a wrong answer.
    #[inline(never)]
    fn judge_heartbeat(
        &mut self,
        judge: Judge,
        node: NodeRef<'_>,
        joined: bool,
        live: bool,
        sink: &mut Findings,
    ) {
        let Judge { local, ttl, .. } = judge;
        let (last, member) = self.registry.member(node.index);
        if member && last.is_some_and(|h| h + ttl <= local) {
            judge.violation(
                sink,
                format!(
                    "{} was still a member at {local} although its last heartbeat was at {} and the liveness TTL is {ttl:?}",
                    node.id,
                    last.map_or(local, |h| h),
                ),
            );
        }
        if joined == member {
            let said = if joined { "joined" } else { "refreshed" };
            let was = if member { "a member" } else { "not a member" };
            judge.violation(
                sink,
                format!(
                    "the registry said {} {said} with a heartbeat at {local}, but it was {was}",
                    node.id
                ),
            );
        }
        if !live {
            judge.violation(
                sink,
                format!(
                    "{} is not live right after its heartbeat at {local}",
                    node.id
                ),
            );
        }
        self.registry.heartbeat(node.index, local);
    }

    /// Node `node` left (`live`: whether the registry still calls it so);
    /// `recovered_at`: when the registry's host last could act again;
    /// `clock`: the registry's host's clock, on which a leave is late only
    /// if that clock reached the expiry at an earlier true instant (a clock
    /// running fast — slewing — skips local nanoseconds: its first reading
    /// at or after the expiry may be past it).
    #[inline(never)]
    fn node_left(
        &mut self,
        judge: Judge,
        (node, live): (NodeRef<'_>, bool),
        (recovered_at, clock): (Option<SimTime>, ServerClock),
        sink: &mut Findings,
    ) {
        let Judge {
            now, local, ttl, ..
        } = judge;
        let (last, member) = self.registry.member(node.index);
        let expiry = last.map(|h| h + ttl);
        if !member {
            judge.violation(
                sink,
                format!("{} left at {local} but was not a member", node.id),
            );
        } else if let Some(expiry) = expiry {
            if local < expiry {
                judge.violation(
                    sink,
                    format!(
                        "{} left at {local}, before its liveness ran out at {expiry}",
                        node.id
                    ),
                );
            } else if local > expiry
                && recovered_at != Some(now)
                && clock.true_time_at(expiry, SimTime::ZERO) < now
            {
                judge.violation(
                    sink,
                    format!(
                        "{} left at {local}, late: its liveness ran out at {expiry} while the registry could act",
                        node.id
                    ),
                );
            }
        }
        if live {
            judge.violation(
                sink,
                format!(
                    "{} left at {local} but the registry still calls it live",
                    node.id
                ),
            );
        }
        self.registry.left(node.index);
    }

    /// The counts after a change: `(live, listed, entries, empty)` as the
    /// registry answered them (`listed`: `None` when not counted).
    #[inline(never)]
    fn counts(
        &mut self,
        judge: Judge,
        (live, listed, entries, empty): (u64, Option<u64>, u64, bool),
        sink: &mut Findings,
    ) {
        let Judge { local, ttl, .. } = judge;
        if let Some(i) = self.registry.stale(local, ttl) {
            judge.violation(
                sink,
                format!("node #{i} is still a member at {local}, past its liveness TTL"),
            );
        }
        let model = self.registry.members();
        let listed_wrong = listed.is_some_and(|listed| listed != model);
        if live != model || listed_wrong || entries != model || empty != (model == 0) {
            let listed = listed.map_or_else(|| "-".to_owned(), |l| l.to_string());
            judge.violation(
                sink,
                format!(
                    "at {local} the registry counts {live} live, lists {listed}, holds {entries} (empty: {empty}); its heartbeats and TTL say {model}"
                ),
            );
        }
    }
}

/// What every rule of one answer is judged with.
#[derive(Clone, Copy, Debug)]
struct Judge {
    /// True time of the answer.
    now: SimTime,
    /// Registry time of the answer, never before an earlier answer's.
    local: Instant,
    /// The liveness TTL.
    ttl: Duration,
}

impl Judge {
    fn violation(&self, sink: &mut Findings, detail: String) {
        sink.violate(Invariant::Membership, self.now, detail, Vec::new());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, Cast, S};
    use crate::observation::{HostRef, Observation};

    /// The membership part alone over a hand-written list (the model first,
    /// as the checker does), liveness TTL 10 s.
    fn judge(list: &[(f64, Observation<'_>)]) -> (Membership, Findings) {
        let (mut model, mut sink) = (Model::default(), Findings::default());
        let mut part = Membership::new(Some(Duration::from_secs(10)));
        for (seconds, o) in list {
            let now = at(*seconds);
            model.observe(now, o);
            match *o {
                Observation::RegistryAnswered { local, answer } => {
                    part.answered(now, local, answer, &model, &mut sink)
                }
                Observation::Restarted { durable, .. } => part.restarted(durable),
                Observation::MemberJoined(node) => part.joined(node.index),
                Observation::MemberLeft(node) => part.left(node.index, &model),
                _ => {}
            }
        }
        (part, sink)
    }

    /// The registry's answer at `seconds` on both clocks.
    fn answered(seconds: f64, answer: RegistryAnswer<'_>) -> (f64, Observation<'_>) {
        let local = Instant::from_nanos((seconds * S as f64) as u64);
        (seconds, Observation::RegistryAnswered { local, answer })
    }

    /// Proves the part alone: a node that leaves a second after its TTL ran
    /// out while the registry could act breaks it; the same leave at the
    /// instant the registry's host resumed (the near miss) does not.
    #[test]
    fn a_late_leave_breaks_it_unless_the_registry_just_resumed() {
        let cast = Cast::new();
        let node = cast.a().node;
        let joined = RegistryAnswer::Heartbeat {
            node,
            joined: true,
            live: true,
        };
        let left = RegistryAnswer::Left { node, live: false };
        let host = HostRef::LeaseStore;
        let list = |resumed_at: f64| {
            [
                answered(1.0, joined),
                (8.0, Observation::Paused { host, depth: 1 }),
                (
                    resumed_at,
                    Observation::Resumed {
                        host,
                        depth: 0,
                        deferred: 3,
                    },
                ),
                answered(12.0, left),
            ]
        };
        let (_, sink) = judge(&list(12.0));
        assert!(invariants_of(&sink).is_empty());
        let (_, sink) = judge(&list(11.5));
        assert_eq!(invariants_of(&sink), ["membership"]);
    }

    /// Proves a volatile restart of the registry's host empties the model
    /// (a join is right again), a durable one does not; and the measures
    /// count a node that left and came back as a flap, a leave of a running
    /// node as false.
    #[test]
    fn a_volatile_restart_forgets_the_members_a_durable_one_keeps_them() {
        let cast = Cast::new();
        let node = cast.a().node;
        let heartbeat = |joined| RegistryAnswer::Heartbeat {
            node,
            joined,
            live: true,
        };
        let restart = |durable| Observation::Restarted {
            host: HostRef::LeaseStore,
            durable,
        };
        let (_, sink) = judge(&[
            answered(1.0, heartbeat(true)),
            (2.0, restart(false)),
            answered(3.0, heartbeat(true)),
        ]);
        assert!(invariants_of(&sink).is_empty());
        let (_, sink) = judge(&[
            answered(1.0, heartbeat(true)),
            (2.0, restart(true)),
            answered(3.0, heartbeat(true)),
        ]);
        assert_eq!(invariants_of(&sink), ["membership"]);
        let (part, _) = judge(&[
            (0.0, Observation::ProcessStarted(cast.a())),
            (1.0, Observation::MemberJoined(node)),
            (2.0, Observation::MemberLeft(node)),
            (3.0, Observation::MemberJoined(node)),
        ]);
        let report = part.report();
        assert_eq!((report.joins, report.leaves), (2, 1));
        assert_eq!((report.flaps, report.false_leaves), (1, 1));
    }
}
