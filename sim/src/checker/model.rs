//! The checker's one model of the processes and the hosts they run on: the
//! facts several parts need (who is alive, paused, disturbed, which owner
//! and node a process is, which term it believes it leads, when it could
//! act again), and nothing any single part judges.
//!
//! The [`Checker`](super::Checker) updates the model first for each
//! observation ([`Model::observe`]); the parts then read it and never write
//! it. Keeping these facts in one place is what lets the parts be small:
//! the lease check asks whether the previous holder is paused, the fence
//! whether a writer's node runs a newer life, the terms whether a leader was
//! healthy, the deadline when a process could act again — one answer each,
//! from one record.

use std::time::Duration;

use fenced::{FencingToken, OwnerId};

use crate::engine::slew::ServerClock;
use crate::observation::{HostRef, NodeRef, Observation, ProcessId, ProcessRef, SimTime};

/// Record of network disturbances of one endpoint, for spurious failovers.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Disturbance {
    active: u32,
    last: Option<SimTime>,
}

impl Disturbance {
    fn change(&mut self, now: SimTime, start: bool) {
        if start {
            self.active += 1;
        } else {
            self.active = self.active.saturating_sub(1);
        }
        self.last = Some(now);
    }

    /// Whether nothing disturbs the endpoint now and nothing did at or after
    /// `since`.
    fn quiet_since(&self, since: SimTime) -> bool {
        self.active == 0 && self.last.is_none_or(|t| t < since)
    }
}

/// One process slot, as the checker knows it.
#[derive(Clone, Debug)]
struct Life {
    owner: OwnerId,
    node: u32,
    incarnation: u32,
    alive: bool,
    pause_depth: u32,
    last_paused_at: Option<SimTime>,
    /// The last instant it could act again after it could not (resumed
    /// from a pause, or its clock stepped): a step-down due while it could
    /// not act happens then.
    recovered_at: Option<SimTime>,
    /// The token of the term it believes it leads, from `TermStarted` to
    /// `TermEnded` or its crash.
    term: Option<FencingToken>,
}

/// The lease store's host (the first server of another protocol): what
/// disturbs it, and its clock.
#[derive(Clone, Copy, Debug, Default)]
struct Store {
    /// Pauses and network faults of the store side, for spurious failovers.
    disturbance: Disturbance,
    pause_depth: u32,
    /// Its clock (the steps of a `clock-jump`, when it times by its wall
    /// clock, and its slews): its expiry instants are on its own clock.
    clock: ServerClock,
    /// True time at which it last became able to act again after it could
    /// not (a resume, a restart, a clock step): the registry's leaves due
    /// meanwhile happen then.
    recovered_at: Option<SimTime>,
}

/// Every process slot and node the stream has named, and the store.
#[derive(Clone, Debug, Default)]
pub(super) struct Model {
    slots: Vec<Option<Life>>,
    /// Per node: its slots, and its endpoint's disturbances.
    nodes: Vec<(Vec<ProcessId>, Disturbance)>,
    store: Store,
}

impl Model {
    /// Brings the model up to date with `observation` at `now`; the term a
    /// process stopped believing in (a step-down, or the crash of a live
    /// believer), if any. Called by the checker before any part sees the
    /// observation. Inlined: every observation passes here, and all but a
    /// few kinds change nothing.
    #[inline(always)]
    pub(super) fn observe(
        &mut self,
        now: SimTime,
        observation: &Observation<'_>,
    ) -> Option<FencingToken> {
        match *observation {
            Observation::ProcessStarted(p) => self.started(p),
            Observation::ProcessCrashed(p) | Observation::ProcessStopped(p) => {
                return self.ended(p.id)
            }
            Observation::Paused { host, depth } => self.paused(now, host, depth, true),
            Observation::Resumed { host, depth, .. } => {
                if depth == 0 && matches!(host, HostRef::LeaseStore) {
                    self.store.recovered_at = Some(now);
                }
                self.paused(now, host, depth, false)
            }
            Observation::Isolated { host, start } => self.disturb(now, host, start),
            Observation::Cut { from, to, start } => {
                self.disturb(now, from, start);
                self.disturb(now, to, start);
            }
            Observation::Partitioned { start, members, .. } => {
                for &host in members {
                    self.disturb(now, host, start);
                }
            }
            Observation::TermStarted { process, token } => {
                if let Some(life) = self.life_mut(process.id) {
                    debug_assert!(life.term.is_none(), "a process has one term at a time");
                    life.term = Some(token);
                }
            }
            Observation::TermEnded { process, .. } => {
                return self.life_mut(process.id).and_then(|l| l.term.take())
            }
            // A restart of a server or the downstream changes nothing here;
            // any other is the lease store's, which can act again from then.
            Observation::Restarted {
                host: HostRef::Server { .. } | HostRef::Downstream,
                ..
            } => {}
            Observation::Restarted { .. } => self.store.recovered_at = Some(now),
            // A step the host's timing ignores (it times by its monotonic
            // clock) changes nothing the checker judges.
            Observation::ClockJumped { moved: false, .. } => {}
            Observation::ClockJumped {
                host: HostRef::LeaseStore,
                by_nanos,
                ..
            } => {
                self.store.clock.step(by_nanos);
                self.store.recovered_at = Some(now);
            }
            // A slew moves no instant at once: nothing falls due at its start.
            Observation::ClockSlewed {
                host: HostRef::LeaseStore,
                by_nanos,
                over_nanos,
            } => self.store.clock.slew(now, by_nanos, over_nanos),
            Observation::ClockJumped {
                host: HostRef::Node(node),
                ..
            } => self.clock_jumped(now, node),
            _ => {}
        }
        None
    }

    fn life(&self, pid: ProcessId) -> Option<&Life> {
        self.slots.get(pid.0 as usize).and_then(Option::as_ref)
    }

    fn life_mut(&mut self, pid: ProcessId) -> Option<&mut Life> {
        self.slots.get_mut(pid.0 as usize).and_then(Option::as_mut)
    }

    fn node(&mut self, index: u32) -> &mut (Vec<ProcessId>, Disturbance) {
        let i = index as usize;
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, Default::default);
        }
        &mut self.nodes[i]
    }

    /// A process of `p.node` started in slot `p.id`: a new life there,
    /// whatever the slot held before.
    fn started(&mut self, p: ProcessRef<'_>) {
        let i = p.id.0 as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Life {
            owner: p.owner.clone(),
            node: p.node.index,
            incarnation: p.incarnation,
            alive: true,
            pause_depth: 0,
            last_paused_at: None,
            recovered_at: None,
            term: None,
        });
        let slots = &mut self.node(p.node.index).0;
        if !slots.contains(&p.id) {
            slots.push(p.id);
        }
    }

    /// Process `pid` died (crashed or stopped): a live believer's term ends
    /// with it (returned).
    fn ended(&mut self, pid: ProcessId) -> Option<FencingToken> {
        let life = self.life_mut(pid)?;
        let ended = if life.alive { life.term.take() } else { None };
        life.alive = false;
        life.pause_depth = 0;
        ended
    }

    /// A pause of `host` began (`start`) or ended, `depth` now in effect.
    fn paused(&mut self, now: SimTime, host: HostRef<'_>, depth: u32, start: bool) {
        match host {
            HostRef::LeaseStore | HostRef::Server { endpoint: 0, .. } => {
                self.store.pause_depth = depth;
                self.store.disturbance.change(now, start);
            }
            // Another server of a multi-server protocol: a disturbance of
            // the store side, not the pause the depth tracks.
            HostRef::Server { .. } => self.store.disturbance.change(now, start),
            HostRef::Process(p) => {
                if let Some(life) = self.life_mut(p.id) {
                    life.pause_depth = depth;
                    life.last_paused_at = Some(now);
                    if !start && depth == 0 {
                        life.recovered_at = Some(now);
                    }
                }
            }
            HostRef::Downstream | HostRef::Node(_) => {}
        }
    }

    /// A network fault touching `host` began or ended.
    fn disturb(&mut self, now: SimTime, host: HostRef<'_>, start: bool) {
        match host {
            HostRef::LeaseStore | HostRef::Server { .. } => {
                self.store.disturbance.change(now, start)
            }
            HostRef::Node(node) => self.node(node.index).1.change(now, start),
            HostRef::Process(p) => self.node(p.node.index).1.change(now, start),
            HostRef::Downstream => {}
        }
    }

    /// Node `node`'s clock stepped at `now`: its processes' step-downs due
    /// meanwhile happen now.
    fn clock_jumped(&mut self, now: SimTime, node: NodeRef<'_>) {
        let pids = self.node(node.index).0.clone();
        for pid in pids {
            if let Some(life) = self.life_mut(pid) {
                life.recovered_at = Some(now);
            }
        }
    }

    /// Whether slot `pid` has held a process (alive or dead).
    pub(super) fn known(&self, pid: ProcessId) -> bool {
        self.life(pid).is_some()
    }

    /// The token process `pid` believes it leads with, if alive and leading.
    #[inline]
    pub(super) fn believes(&self, pid: ProcessId) -> Option<FencingToken> {
        self.life(pid).filter(|l| l.alive).and_then(|l| l.term)
    }

    /// The term slot `pid` believes in, alive or not (a dead process's term
    /// stays open if it started after the process died).
    #[inline]
    pub(super) fn term(&self, pid: ProcessId) -> Option<FencingToken> {
        self.life(pid).and_then(|l| l.term)
    }

    /// The tokens of every live process that believes it leads.
    pub(super) fn believers(&self) -> impl Iterator<Item = FencingToken> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(|l| l.alive)
            .filter_map(|l| l.term)
    }

    /// Owner and token of every live believer, in slot order.
    pub(super) fn alive_believers(&self) -> impl Iterator<Item = (&OwnerId, FencingToken)> + '_ {
        self.slots
            .iter()
            .flatten()
            .filter(|l| l.alive)
            .filter_map(|l| l.term.map(|t| (&l.owner, t)))
    }

    /// Whether `pid` is alive and paused.
    pub(super) fn paused_alive(&self, pid: ProcessId) -> bool {
        self.life(pid).is_some_and(|l| l.alive && l.pause_depth > 0)
    }

    /// When `pid` last could act again after it could not (resumed, or its
    /// node's clock stepped).
    #[inline]
    pub(super) fn recovered_at(&self, pid: ProcessId) -> Option<SimTime> {
        self.life(pid).and_then(|l| l.recovered_at)
    }

    /// Whether node `node` runs a process newer than `incarnation`.
    pub(super) fn replaced(&self, node: u32, incarnation: u32) -> bool {
        self.nodes.get(node as usize).is_some_and(|(pids, _)| {
            pids.iter()
                .filter_map(|&p| self.life(p))
                .any(|l| l.alive && l.incarnation > incarnation)
        })
    }

    /// Whether node `node` runs a process that is alive and not paused.
    pub(super) fn running(&self, node: u32) -> bool {
        self.nodes.get(node as usize).is_some_and(|(pids, _)| {
            pids.iter()
                .filter_map(|&p| self.life(p))
                .any(|l| l.alive && l.pause_depth == 0)
        })
    }

    /// Whether no fault touched process `pid`, its node's links, or the
    /// lease store within `window` before `now` (and none does now).
    pub(super) fn healthy(&self, now: SimTime, pid: ProcessId, window: Duration) -> bool {
        let since = now.saturating_sub(window);
        let Some(life) = self.life(pid) else {
            return false;
        };
        let node_quiet = self
            .nodes
            .get(life.node as usize)
            .is_none_or(|(_, d)| d.quiet_since(since));
        life.pause_depth == 0
            && life.last_paused_at.is_none_or(|t| t < since)
            && node_quiet
            && self.store.disturbance.quiet_since(since)
            && self.store.pause_depth == 0
    }

    /// The lease store's clock, as the observations so far moved it.
    pub(super) fn store_clock(&self) -> ServerClock {
        self.store.clock
    }

    /// When the lease store last could act again after it could not.
    #[inline]
    pub(super) fn store_recovered_at(&self) -> Option<SimTime> {
        self.store.recovered_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, token, Cast};

    fn run<'a>(model: &mut Model, list: &[(f64, Observation<'a>)]) -> Vec<Option<FencingToken>> {
        list.iter()
            .map(|(seconds, o)| model.observe(at(*seconds), o))
            .collect()
    }

    /// Proves the model returns the term an observation ended — a step-down,
    /// or the crash of a live believer — and keeps a dead process's late
    /// term open; and that a new life on a node marks the old one replaced.
    #[test]
    fn a_crash_ends_a_live_believers_term_only() {
        let cast = Cast::new();
        let term = |n| Observation::TermStarted {
            process: cast.a(),
            token: token(n),
        };
        let mut model = Model::default();
        let ended = run(
            &mut model,
            &[
                (0.0, Observation::ProcessStarted(cast.a())),
                (1.0, term(1)),
                (2.0, Observation::ProcessCrashed(cast.a())),
                (3.0, term(2)),
                (4.0, Observation::ProcessCrashed(cast.a())),
            ],
        );
        assert_eq!(ended, [None, None, Some(token(1)), None, None]);
        assert_eq!(model.term(cast.a().id), Some(token(2)));
        assert_eq!(model.believes(cast.a().id), None);
        assert!(!model.replaced(0, 1));
        run(&mut model, &[(5.0, Observation::ProcessStarted(cast.a2()))]);
        assert!(model.replaced(0, 1));
        assert!(model.running(0) && !model.running(1));
    }

    /// Proves a process is healthy only when nothing touched it, its node's
    /// links or the store within the window: a pause or a cut inside it
    /// makes it unhealthy, one just outside does not.
    #[test]
    fn a_fault_within_the_window_makes_it_unhealthy_one_before_does_not() {
        let cast = Cast::new();
        let window = Duration::from_secs(30);
        let a = cast.a();
        let cut = |seconds, start| {
            let o = Observation::Cut {
                from: HostRef::Node(a.node),
                to: HostRef::LeaseStore,
                start,
            };
            (seconds, o)
        };
        let mut model = Model::default();
        run(
            &mut model,
            &[
                (0.0, Observation::ProcessStarted(a)),
                cut(5.0, true),
                cut(9.0, false),
            ],
        );
        assert!(!model.healthy(at(39.0), a.id, window));
        assert!(model.healthy(at(39.1), a.id, window));
        let host = HostRef::Process(a);
        run(
            &mut model,
            &[(50.0, Observation::Paused { host, depth: 1 })],
        );
        assert!(model.paused_alive(a.id) && !model.healthy(at(90.0), a.id, window));
        let resumed = Observation::Resumed {
            host,
            depth: 0,
            deferred: 0,
        };
        run(&mut model, &[(60.0, resumed)]);
        assert_eq!(model.recovered_at(a.id), Some(at(60.0)));
        assert!(!model.healthy(at(90.0), a.id, window));
        assert!(model.healthy(at(90.1), a.id, window));
        // An unknown slot is never healthy.
        assert!(!model.healthy(at(90.1), cast.b().id, window));
    }
}
