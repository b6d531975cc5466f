//! The network model: which links are up, and how long a message takes.
//!
//! Hosts are *endpoints*: 0 is the lease store, 1 the downstream, then one per
//! node (all processes of a node share its endpoint, as processes on one
//! machine share its network). A link `a → b` is up when neither end is
//! isolated, no cut covers that direction, and no partition separates them.
//! Faults nest: overlapping isolations or cuts of the same link are counted,
//! and the link comes back when the last one heals.

use std::collections::BTreeMap;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use crate::rng::{uniform_inclusive, unit_f64};
use crate::time::{span_nanos, SimTime};

/// The lease store's endpoint.
pub(crate) const STORE_ENDPOINT: u16 = 0;
/// The downstream's endpoint.
pub(crate) const DOWNSTREAM_ENDPOINT: u16 = 1;
/// The first node's endpoint.
pub(crate) const FIRST_NODE_ENDPOINT: u16 = 2;

/// The partition group of a host named in no group: it can reach every
/// group (a bridge), like a host on both sides of a split.
pub(crate) const BRIDGE: u16 = u16::MAX;

/// `TCP_RTO_MAX / TCP_RTO_MIN` (120 s / 200 ms, `include/net/tcp.h`): the
/// longest retransmission timeout, as a multiple of the first.
pub const RTO_MAX_FACTOR: u32 = 600;
/// The most retransmissions of one segment: Linux's `tcp_retries2` default.
/// After them a real connection is reset; the model delivers (a session's
/// own timeouts have long given the call up by then).
pub const MAX_RETRANSMISSIONS: u32 = 15;

/// How long a segment of a TCP stream waits for its retransmissions: while
/// `lost()` says the last transmission was lost, one more retransmission
/// timeout, each twice the last (RFC 6298 §5.5, "back off the timer";
/// Linux's `tcp_retransmit_timer`: `icsk_rto = min(icsk_rto << 1,
/// TCP_RTO_MAX)`), from `rto`, each capped at [`RTO_MAX_FACTOR`] × `rto`, at
/// most [`MAX_RETRANSMISSIONS`] times. So `k` losses in a row cost
/// `rto · (2^k − 1)`. TCP never loses what the application sees: a loss is
/// a delay. The simulator's sessions and `fenced-lab`'s proxy both use this,
/// so a lossy link means the same in both.
pub fn retransmission_penalty(rto: Duration, mut lost: impl FnMut() -> bool) -> Duration {
    let (mut next, mut penalty) = (rto, Duration::ZERO);
    for _ in 0..MAX_RETRANSMISSIONS {
        if !lost() {
            break;
        }
        penalty += next;
        next = (next * 2).min(rto * RTO_MAX_FACTOR);
    }
    penalty
}

/// What the network does with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transit {
    /// Dropped at random.
    Lost,
    /// Delivered once, at this instant.
    Once(SimTime),
    /// Delivered twice, at these instants.
    Twice(SimTime, SimTime),
}

#[derive(Debug)]
pub(crate) struct Network {
    latency_min: u64,
    latency_max: u64,
    loss: f64,
    duplicate: f64,
    /// A stream's first retransmission timeout (`[network]
    /// retransmit_timeout`).
    retransmit_timeout: Duration,
    rng: ChaCha8Rng,
    isolated: Vec<u16>,
    /// Of each endpoint's isolations, how many are its server being down
    /// (a `restart`'s downtime): the process is gone but its machine's
    /// kernel still answers, so a connection's first segment that reaches
    /// it is refused ([`refuses`](Self::refuses)).
    down: Vec<u16>,
    cuts: BTreeMap<(u16, u16), u16>,
    /// Group of each endpoint while a partition is active.
    groups: Option<Vec<u16>>,
    /// No isolation, cut or partition is in effect: every link is up. Kept
    /// by every change, so that the common case costs one test per message.
    quiet: bool,
    /// When set, every latency comes from this script instead of the RNG,
    /// and nothing is lost nor duplicated at random (see [`Script`]).
    script: Option<Script>,
}

/// A scripted network: the choice interface `fenced-sim verify` drives.
///
/// Every message the network times (a datagram's transit or a stream
/// segment's) is one *draw*, numbered from 0 in the order the run makes
/// them. Under a script, draw `i` meets the fate the script names for it
/// (`deviations`: another latency, lost, or duplicated), or arrives once
/// after `default_nanos`; nothing is lost or duplicated at random and a
/// stream pays no retransmission penalty the script does not name. The
/// script counts the draws, so a search knows how many choice points a run
/// had. Without a script (every ordinary run) the RNG decides exactly as
/// before: the scripted path is one `Option` test per message and draws
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Script {
    default_nanos: u64,
    /// `(draw, fate)`, draws strictly increasing.
    deviations: Vec<(u64, Fate)>,
    /// The next deviation not yet reached.
    next: usize,
    /// Draws made so far.
    draws: u64,
    /// When asked for ([`Script::record_instants`]): the instants timers
    /// fired and messages reached a server, in order, each at most once.
    instants: Option<Instants>,
    /// The order points (see [`Script::reorder`]) at which the second event
    /// is handled first, strictly increasing.
    reorders: Vec<u64>,
    /// The next of `reorders` not yet reached.
    next_reorder: usize,
    /// Order points met so far.
    order_points: u64,
}

/// What a script does with one draw.
///
/// A stream segment (a session's message) is never lost nor seen twice by
/// the application: TCP retransmits and discards duplicates. So on a stream
/// `Lost` is **one** lost transmission — the segment arrives after its
/// latency plus one retransmission timeout ([`retransmission_penalty`] of
/// one loss) — and `Twice` arrives once, after its first latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Arrives once, after this many ns.
    Latency(u64),
    /// A datagram is lost; a stream segment is retransmitted once, and
    /// arrives after this many ns plus one retransmission timeout.
    Lost(u64),
    /// A datagram arrives twice, after each of these many ns.
    Twice(u64, u64),
}

/// The instants a scripted run noted: the protocol's boundaries, for a
/// search to start faults at. At most [`MAX_NOTED_INSTANTS`] of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Instants {
    /// When a timer fired (a deadline), in ns.
    pub(crate) timers: Vec<u64>,
    /// When a message reached a server (a request the store judged), in ns.
    pub(crate) server_inputs: Vec<u64>,
}

/// The most instants of each kind a script notes.
pub(crate) const MAX_NOTED_INSTANTS: usize = 1 << 20;

impl Instants {
    fn push(list: &mut Vec<u64>, at: u64) {
        if list.len() < MAX_NOTED_INSTANTS && list.last() != Some(&at) {
            list.push(at);
        }
    }
}

impl Script {
    /// A script giving every draw `default_nanos`, except the draws
    /// `deviations` names (sorted by draw, each draw at most once).
    pub(crate) fn new(default_nanos: u64, deviations: Vec<(u64, Fate)>) -> Self {
        debug_assert!(deviations.windows(2).all(|w| w[0].0 < w[1].0));
        Script {
            default_nanos,
            deviations,
            next: 0,
            draws: 0,
            instants: None,
            reorders: Vec::new(),
            next_reorder: 0,
            order_points: 0,
        }
    }

    /// The same script, handling the second event first at each of the
    /// order points `reorders` (sorted, each once).
    pub(crate) fn with_reorders(mut self, reorders: Vec<u64>) -> Self {
        debug_assert!(reorders.windows(2).all(|w| w[0] < w[1]));
        self.reorders = reorders;
        self
    }

    /// One *order point* is met — two events of one host due at the same
    /// instant, about to be handled in the queue's order — and whether the
    /// script swaps them. Numbered from 0 in the order the run meets them.
    pub(crate) fn reorder(&mut self) -> bool {
        let index = self.order_points;
        self.order_points += 1;
        match self.reorders.get(self.next_reorder) {
            Some(&at) if at == index => {
                self.next_reorder += 1;
                true
            }
            _ => false,
        }
    }

    /// Note the instants of timers and of servers' inputs from now on.
    pub(crate) fn record_instants(&mut self) {
        self.instants.get_or_insert_with(Instants::default);
    }

    /// The fate of the next draw.
    fn draw(&mut self) -> Fate {
        let index = self.draws;
        self.draws += 1;
        match self.deviations.get(self.next) {
            Some(&(at, fate)) if at == index => {
                self.next += 1;
                fate
            }
            _ => Fate::Latency(self.default_nanos),
        }
    }
}

impl Network {
    pub(crate) fn new(
        endpoints: usize,
        latency: (Duration, Duration),
        loss: f64,
        duplicate: f64,
        retransmit_timeout: Duration,
        rng: ChaCha8Rng,
    ) -> Self {
        Network {
            latency_min: span_nanos(latency.0),
            latency_max: span_nanos(latency.1),
            loss,
            duplicate,
            retransmit_timeout,
            rng,
            isolated: vec![0; endpoints],
            down: vec![0; endpoints],
            cuts: BTreeMap::new(),
            groups: None,
            quiet: true,
            script: None,
        }
    }

    /// Writes what of the network decides the rest of a run, for a
    /// state's fingerprint: its settings, its RNG's position (the
    /// generator's own `Debug` hides it), the links' faults, and the
    /// script's choices still to come. The instants a script notes are the
    /// search's record, not state; its counters of draws and order points
    /// decide nothing once no scripted choice is left, and are written
    /// only while one is.
    pub(crate) fn write_state(&self, w: &mut dyn std::fmt::Write) -> std::fmt::Result {
        write!(
            w,
            "latency {}..{} loss {:?} duplicate {:?} rto {:?} rng {:?}/{} isolated {:?} down {:?} \
             cuts {:?} groups {:?} quiet {}",
            self.latency_min,
            self.latency_max,
            self.loss,
            self.duplicate,
            self.retransmit_timeout,
            self.rng.get_seed(),
            self.rng.get_word_pos(),
            self.isolated,
            self.down,
            self.cuts,
            self.groups,
            self.quiet,
        )?;
        if let Some(script) = &self.script {
            let (deviations, reorders) = (
                &script.deviations[script.next..],
                &script.reorders[script.next_reorder..],
            );
            write!(
                w,
                " script {} {deviations:?} {reorders:?}",
                script.default_nanos
            )?;
            if !deviations.is_empty() || !reorders.is_empty() {
                write!(w, " at {} {}", script.draws, script.order_points)?;
            }
        }
        Ok(())
    }

    /// From now on, latencies follow `script` (see [`Script`]).
    pub(crate) fn follow(&mut self, script: Script) {
        self.script = Some(script);
    }

    /// The draws made under the script so far (`None`: no script, the RNG
    /// decides).
    pub(crate) fn scripted_draws(&self) -> Option<u64> {
        self.script.as_ref().map(|s| s.draws)
    }

    /// The order points met under the script so far (`None`: no script).
    pub(crate) fn scripted_order_points(&self) -> Option<u64> {
        self.script.as_ref().map(|s| s.order_points)
    }

    /// Whether a script decides (the engine then asks it at order points).
    #[inline(always)]
    pub(crate) fn is_scripted(&self) -> bool {
        self.script.is_some()
    }

    /// See [`Script::reorder`]; `false` without a script.
    pub(crate) fn reorder(&mut self) -> bool {
        self.script.as_mut().is_some_and(Script::reorder)
    }

    /// Starts noting instants, if a script is followed.
    pub(crate) fn record_instants(&mut self) {
        if let Some(script) = &mut self.script {
            script.record_instants();
        }
    }

    /// The instants noted so far, if a script noted any.
    pub(crate) fn noted_instants(&self) -> Option<&Instants> {
        self.script.as_ref().and_then(|s| s.instants.as_ref())
    }

    /// A host event is handled at `at`: a timer firing (`timer`) or a
    /// message arriving, at a server (`server`) or not. Noted only while a
    /// script records instants; one test otherwise.
    #[inline(always)]
    pub(crate) fn note_event(&mut self, at: SimTime, timer: bool, server: bool) {
        if let Some(Script {
            instants: Some(noted),
            ..
        }) = &mut self.script
        {
            if timer {
                Instants::push(&mut noted.timers, at.as_nanos());
            } else if server {
                Instants::push(&mut noted.server_inputs, at.as_nanos());
            }
        }
    }

    /// Recomputes [`quiet`](Self::quiet) after a change of the faults.
    fn faults_changed(&mut self) {
        self.quiet =
            self.isolated.iter().all(|&n| n == 0) && self.cuts.is_empty() && self.groups.is_none();
    }

    /// Whether a message from `from` can reach `to` now.
    #[inline(always)]
    pub(crate) fn link_up(&self, from: u16, to: u16) -> bool {
        self.quiet || self.link_up_in_faults(from, to)
    }

    /// [`link_up`](Self::link_up) while some fault is in effect.
    #[inline(never)]
    fn link_up_in_faults(&self, from: u16, to: u16) -> bool {
        if self.isolated[usize::from(from)] > 0 || self.isolated[usize::from(to)] > 0 {
            return false;
        }
        if let Some(groups) = &self.groups {
            let (a, b) = (groups[usize::from(from)], groups[usize::from(to)]);
            if a != b && a != BRIDGE && b != BRIDGE {
                return false;
            }
        }
        self.cuts.is_empty() || !self.cuts.contains_key(&(from, to))
    }

    /// Draws the fate of one message sent at `now`: loss, latency,
    /// duplication.
    #[inline(always)]
    pub(crate) fn transit(&mut self, now: SimTime) -> Transit {
        if let Some(script) = &mut self.script {
            return match script.draw() {
                Fate::Latency(nanos) => Transit::Once(now.saturating_add_nanos(nanos)),
                Fate::Lost(_) => Transit::Lost,
                Fate::Twice(first, second) => Transit::Twice(
                    now.saturating_add_nanos(first),
                    now.saturating_add_nanos(second),
                ),
            };
        }
        if self.loss > 0.0 && unit_f64(&mut self.rng) < self.loss {
            return Transit::Lost;
        }
        let first = now.saturating_add_nanos(self.latency_nanos());
        if self.duplicate > 0.0 && unit_f64(&mut self.rng) < self.duplicate {
            return Transit::Twice(first, now.saturating_add_nanos(self.latency_nanos()));
        }
        Transit::Once(first)
    }

    /// When a segment of a TCP stream sent at `now` arrives (a session's
    /// message): after a drawn latency, plus the retransmission penalty of
    /// its losses ([`retransmission_penalty`]). Never lost, never twice (a
    /// receiver discards a duplicate segment).
    pub(crate) fn stream_transit(&mut self, now: SimTime) -> SimTime {
        if let Some(script) = &mut self.script {
            return match script.draw() {
                Fate::Latency(nanos) | Fate::Twice(nanos, _) => now.saturating_add_nanos(nanos),
                Fate::Lost(nanos) => now
                    .saturating_add_nanos(nanos)
                    .saturating_add_nanos(span_nanos(self.retransmit_timeout)),
            };
        }
        let latency = self.latency_nanos();
        let penalty = if self.loss > 0.0 {
            let (loss, rng) = (self.loss, &mut self.rng);
            retransmission_penalty(self.retransmit_timeout, || unit_f64(rng) < loss)
        } else {
            Duration::ZERO
        };
        now.saturating_add_nanos(latency)
            .saturating_add_nanos(span_nanos(penalty))
    }

    /// A latency drawn from the configured range, in nanoseconds.
    #[inline]
    fn latency_nanos(&mut self) -> u64 {
        uniform_inclusive(&mut self.rng, self.latency_min, self.latency_max)
    }

    pub(crate) fn isolate(&mut self, endpoint: u16, start: bool) {
        let count = &mut self.isolated[usize::from(endpoint)];
        if start {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
        }
        self.faults_changed();
    }

    /// Server `endpoint` goes down (`start`) or comes back: every link of
    /// it is down meanwhile (an isolation, counted with the others), and
    /// its kernel refuses new connections ([`refuses`](Self::refuses)).
    pub(crate) fn server_down(&mut self, endpoint: u16, start: bool) {
        let count = &mut self.down[usize::from(endpoint)];
        if start {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
        }
        self.isolate(endpoint, start);
    }

    /// Whether a connection's first segment from `from` to `to` is refused
    /// rather than held: `to` is a server that is down, and nothing but its
    /// being down keeps the segment from it or its kernel's reset from
    /// coming back (no other isolation of either end, no partition between
    /// them, no cut either way). A real machine whose server process died
    /// answers a SYN to the closed port with a RST (and `fenced-lab`'s
    /// proxy, in front of a restarting server, accepts and resets at once),
    /// so the client learns at once that it cannot connect, where a link
    /// that is down leaves it waiting for its bound.
    pub(crate) fn refuses(&self, from: u16, to: u16) -> bool {
        let down = self.down[usize::from(to)];
        if down == 0
            || self.isolated[usize::from(to)] != down
            || self.isolated[usize::from(from)] != 0
        {
            return false;
        }
        if let Some(groups) = &self.groups {
            let (a, b) = (groups[usize::from(from)], groups[usize::from(to)]);
            if a != b && a != BRIDGE && b != BRIDGE {
                return false;
            }
        }
        !self.cuts.contains_key(&(from, to)) && !self.cuts.contains_key(&(to, from))
    }

    pub(crate) fn cut(&mut self, from: u16, to: u16, start: bool) {
        if start {
            *self.cuts.entry((from, to)).or_insert(0) += 1;
        } else if let Some(count) = self.cuts.get_mut(&(from, to)) {
            *count -= 1;
            if *count == 0 {
                self.cuts.remove(&(from, to));
            }
        }
        self.faults_changed();
    }

    /// Stops random loss and duplication (the liveness phase: every fault
    /// healed, the network reliable).
    pub(crate) fn stop_loss_and_duplication(&mut self) {
        self.loss = 0.0;
        self.duplicate = 0.0;
    }

    /// Starts a partition (`Some(group of each endpoint)`) or heals it (`None`).
    pub(crate) fn partition(&mut self, groups: Option<Vec<u16>>) {
        self.groups = groups;
        self.faults_changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedDeriver;

    fn ns(n: u64) -> Duration {
        Duration::from_nanos(n)
    }

    fn net() -> Network {
        Network::new(
            4,
            (ns(1), ns(5)),
            0.0,
            0.0,
            ns(200),
            SeedDeriver::new(1, "net").rng(),
        )
    }

    #[test]
    fn cuts_are_one_way_and_nest() {
        let mut n = net();
        n.cut(2, 0, true);
        n.cut(2, 0, true);
        assert!(!n.link_up(2, 0));
        assert!(n.link_up(0, 2));
        n.cut(2, 0, false);
        assert!(!n.link_up(2, 0));
        n.cut(2, 0, false);
        assert!(n.link_up(2, 0));
    }

    #[test]
    fn isolation_cuts_both_directions_of_every_link() {
        let mut n = net();
        n.isolate(3, true);
        assert!(!n.link_up(3, 0) && !n.link_up(0, 3) && !n.link_up(2, 3));
        assert!(n.link_up(2, 0));
        n.isolate(3, false);
        assert!(n.link_up(3, 0));
    }

    #[test]
    fn a_down_server_refuses_only_what_nothing_else_keeps_from_it() {
        let mut n = net();
        assert!(!n.refuses(2, 0), "a server that is up refuses nothing");
        n.server_down(0, true);
        assert!(!n.link_up(2, 0) && !n.link_up(0, 2), "down is an isolation");
        assert!(n.refuses(2, 0));
        // Isolated besides (either end), cut either way, or partitioned
        // off: the SYN or its reset is kept, so nothing is refused.
        n.isolate(0, true);
        assert!(!n.refuses(2, 0));
        n.isolate(0, false);
        n.isolate(2, true);
        assert!(!n.refuses(2, 0));
        n.isolate(2, false);
        for (from, to) in [(2, 0), (0, 2)] {
            n.cut(from, to, true);
            assert!(!n.refuses(2, 0));
            n.cut(from, to, false);
        }
        n.partition(Some(vec![0, 0, 1, 1]));
        assert!(!n.refuses(2, 0));
        n.partition(None);
        assert!(n.refuses(2, 0) && !n.refuses(3, 1));
        n.server_down(0, false);
        assert!(!n.refuses(2, 0) && n.link_up(2, 0));
    }

    #[test]
    fn partitions_separate_groups() {
        let mut n = net();
        n.partition(Some(vec![0, 1, 0, 1]));
        assert!(n.link_up(0, 2) && n.link_up(1, 3));
        assert!(!n.link_up(0, 1) && !n.link_up(3, 2));
        n.partition(Some(vec![0, BRIDGE, 1, 1]));
        assert!(n.link_up(1, 0) && n.link_up(2, 1) && !n.link_up(0, 2));
        n.partition(None);
        assert!(n.link_up(0, 1));
    }

    #[test]
    fn latency_stays_in_range_and_loss_one_loses_everything() {
        let mut n = net();
        for _ in 0..1000 {
            match n.transit(SimTime::from_nanos(10)) {
                Transit::Once(at) => assert!((11..=15).contains(&at.as_nanos())),
                other => panic!("{other:?}"),
            }
        }
        let rng = SeedDeriver::new(1, "n").rng();
        let mut lossy = Network::new(2, (ns(1), ns(1)), 1.0, 0.0, ns(200), rng);
        assert_eq!(lossy.transit(SimTime::ZERO), Transit::Lost);
    }

    #[test]
    fn a_script_decides_every_latency_and_counts_its_draws() {
        let mut n = net();
        n.follow(Script::new(
            2,
            vec![(1, Fate::Latency(5)), (3, Fate::Latency(4))],
        ));
        let at = |t: Transit| match t {
            Transit::Once(at) => at.as_nanos(),
            other => panic!("{other:?}"),
        };
        let t0 = SimTime::from_nanos(100);
        assert_eq!(at(n.transit(t0)), 102);
        assert_eq!(at(n.transit(t0)), 105);
        assert_eq!(n.stream_transit(t0).as_nanos(), 102);
        assert_eq!(at(n.transit(t0)), 104);
        assert_eq!(at(n.transit(t0)), 102);
        assert_eq!(n.scripted_draws(), Some(5));
        // A script overrides loss and duplication: nothing is drawn at random.
        let rng = SeedDeriver::new(1, "n").rng();
        let mut lossy = Network::new(2, (ns(1), ns(9)), 1.0, 1.0, ns(200), rng);
        assert_eq!(lossy.scripted_draws(), None);
        lossy.follow(Script::new(7, Vec::new()));
        assert_eq!(at(lossy.transit(SimTime::ZERO)), 7);
        assert_eq!(lossy.stream_transit(SimTime::ZERO).as_nanos(), 7);
    }

    #[test]
    fn a_script_loses_and_duplicates_the_draws_it_names() {
        // A datagram named lost is lost and one named twice arrives twice; a
        // stream segment named lost pays one retransmission timeout, and one
        // named twice arrives once (TCP discards the copy).
        let mut n = net();
        n.follow(Script::new(
            2,
            vec![
                (0, Fate::Lost(3)),
                (1, Fate::Twice(4, 9)),
                (2, Fate::Lost(3)),
                (3, Fate::Twice(4, 9)),
            ],
        ));
        let t0 = SimTime::from_nanos(100);
        assert_eq!(n.transit(t0), Transit::Lost);
        assert_eq!(
            n.transit(t0),
            Transit::Twice(SimTime::from_nanos(104), SimTime::from_nanos(109))
        );
        assert_eq!(n.stream_transit(t0).as_nanos(), 100 + 3 + 200);
        assert_eq!(n.stream_transit(t0).as_nanos(), 104);
        assert_eq!(n.transit(t0), Transit::Once(SimTime::from_nanos(102)));
        assert_eq!(n.scripted_draws(), Some(5));
    }

    #[test]
    fn a_script_numbers_order_points_and_swaps_the_ones_it_names() {
        let mut n = net();
        assert!(!n.reorder(), "no script: never");
        assert_eq!(n.scripted_order_points(), None);
        n.follow(Script::new(1, Vec::new()).with_reorders(vec![1, 3]));
        let swaps: Vec<bool> = (0..5).map(|_| n.reorder()).collect();
        assert_eq!(swaps, [false, true, false, true, false]);
        assert_eq!(n.scripted_order_points(), Some(5));
    }

    #[test]
    fn a_stream_turns_loss_into_doubling_retransmission_delays() {
        // k losses cost rto * (2^k - 1).
        for k in 0..6u32 {
            let mut losses = k;
            let penalty = retransmission_penalty(ns(200), || {
                let lost = losses > 0;
                losses = losses.saturating_sub(1);
                lost
            });
            assert_eq!(penalty, ns(200 * (2u64.pow(k) - 1)), "{k} losses");
        }
        // Always lost: capped per step and in count, and still delivered.
        let capped = retransmission_penalty(ns(1), || true);
        let expected: u64 = (0..MAX_RETRANSMISSIONS)
            .map(|i| (1u64 << i).min(u64::from(RTO_MAX_FACTOR)))
            .sum();
        assert_eq!(capped, ns(expected));
        let rng = SeedDeriver::new(1, "n").rng();
        let mut lossy = Network::new(2, (ns(1), ns(1)), 1.0, 0.0, ns(200), rng);
        assert_eq!(
            lossy.stream_transit(SimTime::ZERO),
            SimTime::from_nanos(1 + expected * 200)
        );
    }
}
