//! Drawing a seed's fault schedule on top of a base scenario: swarm testing
//! (each fault kind on or off per seed), lengths biased toward the lease's
//! boundaries, every schedule materialized as plain scheduled faults.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use super::base::liveness_bound;
use crate::rng::{uniform_inclusive, unit_f64, SeedDeriver};
use crate::scenario::{
    Anchor, AnchorEvent, ClockOffset, FaultSpec, Scenario, DOWNSTREAM, LEASE_STORE,
};

/// The default mix's base: five nodes, ten virtual minutes of faults, the
/// design's default timings, and 200 ms units of work (so a pause lands inside
/// a unit often enough to exercise the late write).
pub fn default_base() -> Scenario {
    let mut s = Scenario::new("explore-default", Duration::from_secs(600))
        .with_nodes((1..=5).map(|i| format!("node-{i}")));
    s.description = Some(
        "The default exploration fleet: five nodes, one role, ten minutes of swarm faults."
            .to_string(),
    );
    s.election.role = "reports".to_string();
    s.work.work_duration = Duration::from_millis(200);
    // node-1 asks first and leads at the start, so the generator can aim
    // faults at the likely leader.
    for node in s.nodes.iter_mut().skip(1) {
        node.start_at = Duration::from_secs(1);
    }
    s
}

/// Which fault kinds a seed switched on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mix {
    /// GC pauses.
    pub pause: bool,
    /// Whole-host isolation.
    pub isolate: bool,
    /// One-way link cuts.
    pub cut: bool,
    /// Two-sided partitions.
    pub partition: bool,
    /// Crashes (mostly with restarts).
    pub crash: bool,
    /// Zombie replacements (a new incarnation while the old one is paused).
    pub zombie: bool,
    /// The zombie's pause and replacement anchored to the old life's
    /// beginning a unit of work (half the zombies, by a coin of their own
    /// stream).
    pub zombie_anchored: bool,
    /// Clock offsets and drifts.
    pub clock: bool,
    /// Random message loss.
    pub loss: bool,
    /// Random message duplication.
    pub duplicate: bool,
    /// A network whose round trip is longer than `retry_interval`: every
    /// answer arrives after its request was re-sent (the slow-store case).
    /// Drawn from its own stream, so seeds without it are what they were.
    pub slow_network: bool,
    /// Graceful stops (a deploy): the node releases and exits, mostly to
    /// restart. From its own stream.
    pub stop: bool,
    /// Failing work: the leader abdicates. From its own stream.
    pub abdicate: bool,
    /// Restarts of the lease store or the downstream, with the durability
    /// the base declares (`[store]`/`[downstream] durable`); drawn only when
    /// it declares one. From its own stream.
    pub restart: bool,
    /// Jittered renew and retry intervals (the elector's `jitter`, a
    /// fraction drawn in `[0.05, 0.5)`), for a fenced base without jitter of
    /// its own. From its own stream.
    pub jitter: bool,
    /// A GC pause of the lease store itself (and its registry): requests,
    /// heartbeats and its timers wait, then are handled late, in a burst.
    /// From its own stream.
    pub store_pause: bool,
    /// Wall-clock steps (`clock-jump`) of nodes and of the lease store (or
    /// another design's servers), by boundary-biased amounts either way.
    /// From its own stream.
    pub clock_step: bool,
    /// Jepsen's clock strobes (`clock-strobe`) of the same hosts. From its
    /// own stream.
    pub clock_strobe: bool,
    /// NTP slews (`clock-slew`) of the same hosts, at rates from ntpd's
    /// 500 ppm to half speed. From its own stream.
    pub clock_slew: bool,
    /// Pauses anchored to a node's own event (`work-started`, and for the
    /// fenced protocol `renewal-sent` and `term-started`). From its own
    /// stream.
    pub anchored: bool,
    /// A pause of the lease store that begins at a leader's renewal, so the
    /// renewal waits in the paused store while its lease runs out there:
    /// the boundary `verify` finds `store-renews-lapsed-lease` at. The
    /// fenced protocol only; from its own stream.
    pub store_pause_at_renewal: bool,
}

impl Mix {
    /// The names of the kinds switched on, for reports.
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            (self.pause, "pause"),
            (self.isolate, "isolate"),
            (self.cut, "cut"),
            (self.partition, "partition"),
            (self.crash, "crash"),
            (self.zombie, "zombie"),
            (self.clock, "clock"),
            (self.loss, "loss"),
            (self.duplicate, "duplicate"),
            (self.slow_network, "slow-network"),
            (self.stop, "stop"),
            (self.abdicate, "abdicate"),
            (self.restart, "restart"),
            (self.jitter, "jitter"),
            (self.store_pause, "store-pause"),
            (self.clock_step, "clock-step"),
            (self.clock_strobe, "clock-strobe"),
            (self.clock_slew, "clock-slew"),
            (self.anchored, "anchored"),
            (self.zombie_anchored, "zombie-anchored"),
            (self.store_pause_at_renewal, "store-pause-at-renewal"),
        ];
        all.into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| n)
            .collect()
    }
}

fn coin(rng: &mut ChaCha8Rng, p: f64) -> bool {
    unit_f64(rng) < p
}

fn pick<'a, T>(rng: &mut ChaCha8Rng, items: &'a [T]) -> &'a T {
    &items[uniform_inclusive(rng, 0, items.len() as u64 - 1) as usize]
}

fn span(rng: &mut ChaCha8Rng, low: Duration, high: Duration) -> Duration {
    let (low, high) = (low.as_millis() as u64, high.as_millis() as u64);
    Duration::from_millis(uniform_inclusive(rng, low, high.max(low)))
}

/// The spans worth probing for this scenario's timings.
fn boundaries(base: &Scenario) -> Vec<Duration> {
    let e = &base.election;
    let margin = e.effective_safety_margin();
    let rejoin = e.effective_rejoin_delay();
    vec![
        e.lease_ttl.saturating_sub(margin),
        e.lease_ttl,
        e.renew_interval,
        rejoin,
        e.lease_ttl + e.retry_interval,
    ]
}

/// A fault length: half the time just under, at or just over a lease
/// boundary; otherwise uniform up to two TTLs.
fn fault_length(rng: &mut ChaCha8Rng, base: &Scenario) -> Duration {
    if coin(rng, 0.5) {
        let boundary = *pick(rng, &boundaries(base));
        let nudge = Duration::from_millis(*pick(rng, &[0u64, 20, 200, 1000]));
        let length = if coin(rng, 0.5) {
            boundary.saturating_sub(nudge)
        } else {
            boundary + nudge
        };
        length.max(Duration::from_millis(1))
    } else {
        span(rng, Duration::from_millis(100), base.election.lease_ttl * 2)
    }
}

/// Draws seed `seed`'s schedule on top of `base` and returns it as a concrete
/// scenario: the fault phase lasts `base.duration`; then every fault is healed
/// (`heal_at`) and the run goes on for the liveness bound, at the end of which
/// one leader must hold with accepted writes (the `liveness` invariant). Its
/// expectations are the defaults — no violation — whatever the base expects.
pub fn generate(base: &Scenario, seed: u64) -> (Scenario, Mix) {
    let mut rng = SeedDeriver::new(seed, "explore").rng();
    let mut s = base.clone();
    s.seed = seed;
    s.name = format!("{}-seed-{seed}", base.name);
    let fault_phase = base.duration;
    let nodes: Vec<String> = base.nodes.iter().map(|n| n.id.clone()).collect();
    let mut mix = Mix {
        pause: coin(&mut rng, 0.6),
        isolate: coin(&mut rng, 0.4),
        cut: coin(&mut rng, 0.4),
        partition: coin(&mut rng, 0.3),
        crash: coin(&mut rng, 0.4),
        zombie: coin(&mut rng, 0.2),
        clock: coin(&mut rng, 0.3),
        loss: coin(&mut rng, 0.3),
        duplicate: coin(&mut rng, 0.3),
        slow_network: false,
        jitter: false,
        store_pause: false,
        stop: false,
        abdicate: false,
        restart: false,
        clock_step: false,
        clock_strobe: false,
        clock_slew: false,
        anchored: false,
        zombie_anchored: false,
        store_pause_at_renewal: false,
    };
    let at = |rng: &mut ChaCha8Rng| {
        span(
            rng,
            Duration::from_secs(1),
            fault_phase.saturating_sub(Duration::from_secs(1)),
        )
    };
    // Half the time, the first node (the one that leads at the start).
    let target = |rng: &mut ChaCha8Rng| -> String {
        if coin(rng, 0.5) {
            nodes[0].clone()
        } else {
            pick(rng, &nodes).clone()
        }
    };
    // Half the time, the middle of a unit of work of a leader that started at
    // about zero: a pause there delays a write past the pause.
    let unit = base.work.write_interval.max(Duration::from_millis(1));
    let in_unit = |rng: &mut ChaCha8Rng| -> Duration {
        if coin(rng, 0.5) {
            let units = (fault_phase.as_millis() / unit.as_millis()).max(2) as u64;
            let k = uniform_inclusive(rng, 1, units - 1);
            // In nanoseconds: `k` may exceed `u32::MAX` (a long run of short
            // units), which `unit * k as u32` would silently truncate.
            Duration::from_nanos(crate::time::span_nanos(unit).saturating_mul(k))
                .saturating_add(base.work.work_duration / 2)
        } else {
            at(rng)
        }
    };
    if mix.pause {
        for _ in 0..uniform_inclusive(&mut rng, 1, 4) {
            let host = target(&mut rng);
            let (at, duration) = (in_unit(&mut rng), fault_length(&mut rng, base));
            s.faults.push(FaultSpec::Pause { host, at, duration });
        }
    }
    if mix.isolate {
        for _ in 0..uniform_inclusive(&mut rng, 1, 2) {
            let host = target(&mut rng);
            let (at, duration) = (at(&mut rng), fault_length(&mut rng, base));
            s.faults.push(FaultSpec::Isolate { host, at, duration });
        }
    }
    if mix.cut {
        for _ in 0..uniform_inclusive(&mut rng, 1, 3) {
            let node = target(&mut rng);
            let other = if coin(&mut rng, 0.8) {
                LEASE_STORE
            } else {
                DOWNSTREAM
            }
            .to_string();
            let (from, to) = if coin(&mut rng, 0.6) {
                (other, node)
            } else {
                (node, other)
            };
            let (at, duration) = (at(&mut rng), fault_length(&mut rng, base));
            s.faults.push(FaultSpec::Cut {
                from,
                to,
                at,
                duration,
            });
        }
    }
    if mix.partition && nodes.len() > 1 {
        // One partition (they may not overlap): some nodes lose the store;
        // the downstream bridges the split or sides with the store.
        let mut minority: Vec<String> = nodes
            .iter()
            .filter(|_| coin(&mut rng, 0.4))
            .cloned()
            .collect();
        if minority.is_empty() {
            minority.push(pick(&mut rng, &nodes).clone());
        }
        let mut majority = vec![LEASE_STORE.to_string()];
        if coin(&mut rng, 0.3) {
            majority.push(DOWNSTREAM.to_string());
        }
        let (at, duration) = (at(&mut rng), fault_length(&mut rng, base));
        // The base's own partitions keep their windows: fit this one into the
        // time they leave free (unchanged when they leave the draw alone).
        match fit_partition(&partition_windows(base), at, duration, fault_phase) {
            Some((at, duration)) => s.faults.push(FaultSpec::Partition {
                groups: vec![minority, majority],
                at,
                duration,
            }),
            None => mix.partition = false,
        }
    }
    if mix.crash {
        for _ in 0..uniform_inclusive(&mut rng, 1, 2) {
            let node = target(&mut rng);
            let at = at(&mut rng);
            let restart_after = coin(&mut rng, 0.8)
                .then(|| span(&mut rng, Duration::from_secs(1), Duration::from_secs(60)));
            s.faults.push(FaultSpec::Crash {
                node,
                at,
                restart_after,
            });
        }
    }
    if mix.zombie {
        let node = target(&mut rng);
        let start = in_unit(&mut rng);
        let length =
            base.election.lease_ttl * 2 + span(&mut rng, Duration::ZERO, base.election.lease_ttl);
        let later = span(&mut rng, Duration::from_secs(1), base.election.lease_ttl);
        let pause = FaultSpec::Pause {
            host: node.clone(),
            at: start,
            duration: length,
        };
        // Half the time (a coin of its own stream) the old life pauses
        // right after it begins a unit of work (its write still to go) at
        // or after `start`, and the new one starts `later` after that: both
        // anchored to the event, so the pause is mid-unit whatever the
        // latencies (as `in_unit` only aims at). Otherwise both at their
        // instants, which also reach a zombie of a node that does not lead.
        if coin(
            &mut SeedDeriver::new(seed, "explore-zombie-anchor").rng(),
            0.5,
        ) {
            mix.zombie_anchored = true;
            let when = Anchor::on(AnchorEvent::WorkStarted).of_node(node.clone());
            s.faults.push(pause.anchored(when.clone()));
            let replace = FaultSpec::Replace { node, at: start };
            s.faults.push(replace.anchored(when.with_delay(later)));
        } else {
            s.faults.push(pause);
            s.faults.push(FaultSpec::Replace {
                node,
                at: (start + later).min(fault_phase.saturating_sub(Duration::from_millis(1))),
            });
        }
    }
    if mix.clock {
        let ratio = base.election.effective_safety_margin().as_secs_f64()
            / base.election.lease_ttl.as_secs_f64();
        for node in s.nodes.iter_mut() {
            if !coin(&mut rng, 0.4) {
                continue;
            }
            let offset = span(&mut rng, Duration::ZERO, Duration::from_secs(3600));
            node.clock_offset = if coin(&mut rng, 0.5) {
                ClockOffset::ahead(offset)
            } else {
                ClockOffset::behind(offset)
            };
            let drift = if coin(&mut rng, 0.5) {
                // Near the margin's ratio, where safety starts to depend on fencing.
                ratio * *pick(&mut rng, &[0.5, 0.9, 1.0, 1.1, 1.5])
            } else {
                0.2 * unit_f64(&mut rng)
            };
            node.clock_drift = if coin(&mut rng, 0.5) { -drift } else { drift }
                .clamp(-crate::MAX_CLOCK_DRIFT, crate::MAX_CLOCK_DRIFT);
        }
    }
    if mix.loss {
        s.network.loss = 0.3 * unit_f64(&mut rng);
    }
    if mix.duplicate {
        s.network.duplicate = 0.3 * unit_f64(&mut rng);
    }
    // A later dimension of the mix draws from a stream of its own, so adding
    // it left every seed without it as it was.
    let mut slow = SeedDeriver::new(seed, "explore-slow-network").rng();
    // A network slower than the retry interval tests the fenced elector's
    // handling of late answers; another design's clients have timeouts of
    // their own (Redlock's 100 ms per instance), which such a network simply
    // outlasts: not drawn for them.
    let fenced = base.election.protocol == crate::scenario::ProtocolSpec::Fenced;
    if coin(&mut slow, 0.15) && fenced {
        // One-way latency between 0.55 and 1.5 retry intervals: a round trip
        // of 1.1 to 3 retry intervals, within what an elector remembers and
        // well inside the validity of the default timings.
        let retry = base.election.retry_interval;
        let validity = base
            .election
            .lease_ttl
            .saturating_sub(base.election.effective_safety_margin());
        let low = span(&mut slow, retry.mul_f64(0.55), retry.mul_f64(1.0));
        let high = span(&mut slow, low, retry.mul_f64(1.5));
        let hour = Duration::from_secs(3600);
        let (low, high) = (low.min(hour), high.min(hour));
        // Keep the network one that can elect: the shortest round trip
        // inside the validity.
        if low.saturating_mul(2) < validity {
            mix.slow_network = true;
            s.network.latency = (low, high.max(low));
            s.client = super::base::client_for_latency(&s.client, high.max(low));
        }
    }
    // Jittered intervals reach the elector's jitter (off in every shipped
    // scenario but one): a fifth of the seeds of a fenced base that has
    // none of its own.
    let mut jitter = SeedDeriver::new(seed, "explore-jitter").rng();
    if coin(&mut jitter, 0.2) && fenced && base.election.jitter == 0.0 {
        mix.jitter = true;
        s.election.jitter = 0.05 + 0.45 * unit_f64(&mut jitter);
    }
    // A pause of the lease store: what it does late — prune the registry
    // past expiries, answer stale requests — in a tenth of fenced seeds.
    let mut store = SeedDeriver::new(seed, "explore-store-pause").rng();
    if coin(&mut store, 0.1) && fenced {
        mix.store_pause = true;
        let (at, duration) = (at(&mut store), fault_length(&mut store, base));
        s.faults.push(FaultSpec::Pause {
            host: crate::scenario::LEASE_STORE.to_string(),
            at,
            duration,
        });
    }
    // Graceful stops and failing work reach the elector's `stop` and
    // `abdicate` paths; each from a stream of its own, like the slow network.
    let mut stops = SeedDeriver::new(seed, "explore-stop").rng();
    if coin(&mut stops, 0.2) {
        mix.stop = true;
        for _ in 0..uniform_inclusive(&mut stops, 1, 3) {
            let restart_after = coin(&mut stops, 0.8).then(|| {
                span(
                    &mut stops,
                    Duration::from_millis(100),
                    base.election.lease_ttl * 2,
                )
            });
            s.faults.push(FaultSpec::Stop {
                node: target(&mut stops),
                at: at(&mut stops),
                restart_after,
            });
        }
    }
    let mut failures = SeedDeriver::new(seed, "explore-abdicate").rng();
    // Only the fenced elector has a call to give leadership up on failed work.
    let can_abdicate = base.election.protocol == crate::scenario::ProtocolSpec::Fenced;
    if coin(&mut failures, 0.2) && can_abdicate {
        mix.abdicate = true;
        for _ in 0..uniform_inclusive(&mut failures, 1, 3) {
            s.faults.push(FaultSpec::Abdicate {
                node: target(&mut failures),
                at: at(&mut failures),
            });
        }
    }
    // Restarts of a server whose durability the base declares: a durable
    // one must be harmless, a volatile one found out. Their own stream.
    let declared: Vec<&str> = [
        (
            base.durability.store.is_some(),
            crate::scenario::LEASE_STORE,
        ),
        (
            base.durability.downstream.is_some(),
            crate::scenario::DOWNSTREAM,
        ),
    ]
    .into_iter()
    .filter_map(|(declared, host)| declared.then_some(host))
    .collect();
    let mut restarts = SeedDeriver::new(seed, "explore-restart").rng();
    if !declared.is_empty() && coin(&mut restarts, 0.3) {
        mix.restart = true;
        for _ in 0..uniform_inclusive(&mut restarts, 1, 2) {
            let host = (*pick(&mut restarts, &declared)).to_string();
            let duration = span(
                &mut restarts,
                Duration::from_millis(100),
                base.election.retry_interval * 2,
            );
            s.faults.push(FaultSpec::Restart {
                host,
                at: at(&mut restarts),
                duration,
                durable: None,
            });
        }
    }
    // Clock steps, strobes and slews of nodes and servers: a bug that only
    // a stepped or slewed clock exposes is otherwise invisible to the swarm.
    // Each kind from a stream of its own.
    let servers = match base.election.protocol.server_names() {
        names if names.is_empty() => vec![LEASE_STORE.to_string()],
        names => names,
    };
    let clock_host = |rng: &mut ChaCha8Rng| -> String {
        if coin(rng, 0.5) {
            target(rng)
        } else {
            pick(rng, &servers).clone()
        }
    };
    let signed = |rng: &mut ChaCha8Rng, magnitude: Duration| -> ClockOffset {
        if coin(rng, 0.5) {
            ClockOffset::ahead(magnitude)
        } else {
            ClockOffset::behind(magnitude)
        }
    };
    let mut steps = SeedDeriver::new(seed, "explore-clock-step").rng();
    if coin(&mut steps, 0.15) {
        mix.clock_step = true;
        for _ in 0..uniform_inclusive(&mut steps, 1, 3) {
            let host = clock_host(&mut steps);
            let at = at(&mut steps);
            let magnitude = fault_length(&mut steps, base);
            let by = signed(&mut steps, magnitude);
            s.faults.push(FaultSpec::ClockJump { host, at, by });
        }
    }
    let mut strobes = SeedDeriver::new(seed, "explore-clock-strobe").rng();
    if coin(&mut strobes, 0.1) {
        mix.clock_strobe = true;
        let host = clock_host(&mut strobes);
        let at = at(&mut strobes);
        let magnitude = fault_length(&mut strobes, base);
        let by = signed(&mut strobes, magnitude);
        let period = span(
            &mut strobes,
            Duration::from_millis(10),
            base.election.lease_ttl,
        )
        .max(Duration::from_millis(10));
        let duration = period.saturating_mul(uniform_inclusive(&mut strobes, 2, 20) as u32);
        s.faults.push(FaultSpec::ClockStrobe {
            host,
            at,
            by,
            period,
            duration,
        });
    }
    let mut slews = SeedDeriver::new(seed, "explore-clock-slew").rng();
    if coin(&mut slews, 0.1) {
        mix.clock_slew = true;
        for _ in 0..uniform_inclusive(&mut slews, 1, 2) {
            let host = clock_host(&mut slews);
            let at = at(&mut slews);
            let magnitude = fault_length(&mut slews, base);
            let by = signed(&mut slews, magnitude);
            // ntpd's bound, a drifting VM's catch-up, chrony's default
            // maximum (1/12), and faster than any margin.
            let rate = *pick(&mut slews, &[0.000_5, 0.01, 0.083_3, 0.25, 0.5]);
            s.faults.push(FaultSpec::ClockSlew { host, at, by, rate });
        }
    }
    // Anchored pauses: where the pauses above aim at the middle of a unit by
    // arithmetic (right only while the leader's schedule is the one
    // assumed), these wait for the event itself — a unit begun and not yet
    // written, a renewal just sent, a term just begun — so the boundary is
    // hit exactly, whatever the latencies. A sixth of the seeds, from a
    // stream of their own.
    let mut anchored = SeedDeriver::new(seed, "explore-anchored").rng();
    if coin(&mut anchored, 1.0 / 6.0) {
        mix.anchored = true;
        let events: &[AnchorEvent] = if fenced {
            &[
                AnchorEvent::WorkStarted,
                AnchorEvent::RenewalSent,
                AnchorEvent::TermStarted,
            ]
        } else {
            &[AnchorEvent::WorkStarted, AnchorEvent::TermStarted]
        };
        for _ in 0..uniform_inclusive(&mut anchored, 1, 2) {
            let event = *pick(&mut anchored, events);
            // Half the time the first leader; the node pauses on its own
            // event (one that never leads after `after` never fires it:
            // nothing happens, which explore does not count as failing).
            let host = target(&mut anchored);
            let after = at(&mut anchored);
            let duration = fault_length(&mut anchored, base);
            let when = Anchor::on(event).of_node(host.clone());
            let pause = FaultSpec::Pause {
                host,
                at: after,
                duration,
            };
            s.faults.push(pause.anchored(when));
        }
    }
    // A store pause that begins when a leader sends a renewal (whichever
    // node leads then): the request waits in the paused store, and when the
    // pause outlasts the lease's remaining time it is handled after the
    // lease lapsed there — the boundary instant `verify` pauses the store
    // at (README, "How much a swarm covers"), which a store pause at a
    // random instant rarely hits. A tenth of fenced seeds, from a stream of
    // their own.
    let mut at_renewal = SeedDeriver::new(seed, "explore-store-pause-at-renewal").rng();
    if coin(&mut at_renewal, 0.1) && fenced {
        mix.store_pause_at_renewal = true;
        let after = at(&mut at_renewal);
        let duration = fault_length(&mut at_renewal, base);
        let pause = FaultSpec::Pause {
            host: LEASE_STORE.to_string(),
            at: after,
            duration,
        };
        s.faults
            .push(pause.anchored(Anchor::on(AnchorEvent::RenewalSent)));
    }
    // Recurring faults of the base keep running during the fault phase.
    s.heal_at = Some(fault_phase);
    s.duration = fault_phase + liveness_bound(&s);
    // A seed passes when nothing breaks: the base's own expectations (say,
    // "no leader change") describe the base, not a swarm of faults on it.
    // Liveness is checked by the `liveness` invariant of the healed run.
    s.expect = crate::scenario::Expectations::default();
    // A drawn anchor fires only when its node makes its event: one that
    // does not is no failure of the seed.
    if mix.anchored || mix.zombie_anchored || mix.store_pause_at_renewal {
        s.expect.anchors_begin = Some(false);
    }
    (s, mix)
}

/// The windows `[at, end)` of `base`'s scheduled partitions, by start.
fn partition_windows(base: &Scenario) -> Vec<(Duration, Duration)> {
    let mut windows: Vec<(Duration, Duration)> = base
        .faults
        .iter()
        .filter_map(|f| match f.unanchored() {
            // An anchored partition may begin any time from its `at` on.
            FaultSpec::Partition { .. } => f.window(),
            _ => None,
        })
        .collect();
    windows.sort();
    windows
}

/// Places a drawn partition `[at, at + duration)` where it overlaps none of
/// the `busy` windows: at most one partition may be active at a time (each
/// replaces the groups of the last), so on a base that has partitions of its
/// own a generated one must fit between them. The draw is kept when it
/// already fits; otherwise it moves to the first free gap that ends after
/// `at` (starting no earlier than `at`, and shortened to the gap), or else to
/// the end of the last gap before `at`. It must start inside the fault phase
/// (`phase`); `None` when no gap allows that.
fn fit_partition(
    busy: &[(Duration, Duration)],
    at: Duration,
    duration: Duration,
    phase: Duration,
) -> Option<(Duration, Duration)> {
    // The free gaps, in order; the last one is open-ended.
    let mut gaps = Vec::new();
    let mut cursor = Duration::ZERO;
    for &(start, end) in busy {
        if start > cursor {
            gaps.push((cursor, start));
        }
        cursor = cursor.max(end);
    }
    gaps.push((cursor, Duration::MAX));
    let fitted = |start: Duration, gap_end: Duration| {
        let length = duration.min(gap_end.saturating_sub(start));
        (start < phase && !length.is_zero()).then_some((start, length))
    };
    gaps.iter()
        .filter(|(_, end)| *end > at)
        .find_map(|&(start, end)| fitted(at.max(start), end))
        .or_else(|| {
            gaps.iter()
                .rev()
                .filter(|(_, end)| *end <= at)
                .find_map(|&(start, end)| fitted(start.max(end.saturating_sub(duration)), end))
        })
}

/// The fleet workload's recurring pauses: every node, a Poisson process with
/// a mean interval of ten minutes, each pause uniform in 0–60 s.
pub fn fleet_like_pauses() -> FaultSpec {
    FaultSpec::Recurring {
        kind: crate::RecurringKind::Pause,
        node: None,
        every: Duration::from_secs(600),
        duration: crate::DurationRange {
            low: Duration::ZERO,
            high: Duration::from_secs(60),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn a_partition_that_fits_is_left_alone() {
        assert_eq!(fit_partition(&[], s(10), s(5), s(60)), Some((s(10), s(5))));
        let busy = [(s(15), s(75))];
        assert_eq!(
            fit_partition(&busy, s(1), s(14), s(120)),
            Some((s(1), s(14)))
        );
        assert_eq!(
            fit_partition(&busy, s(75), s(30), s(120)),
            Some((s(75), s(30)))
        );
    }

    #[test]
    fn an_overlapping_partition_moves_into_a_free_gap_and_never_overlaps() {
        let busy = [(s(15), s(75))];
        // Starts inside the base's partition: moved to its end.
        assert_eq!(
            fit_partition(&busy, s(20), s(40), s(120)),
            Some((s(75), s(40)))
        );
        // Starts before it but would run into it: shortened.
        assert_eq!(
            fit_partition(&busy, s(10), s(40), s(120)),
            Some((s(10), s(5)))
        );
        // The base's partition lasts past the fault phase: the gap before.
        assert_eq!(
            fit_partition(&[(s(15), s(200))], s(20), s(10), s(120)),
            Some((s(5), s(10)))
        );
        // No free time inside the fault phase.
        assert_eq!(fit_partition(&[(s(0), s(200))], s(20), s(10), s(120)), None);
        // Exhaustively: whatever the draw, the result overlaps nothing.
        let busy = [(s(5), s(20)), (s(20), s(30)), (s(40), s(41))];
        for at in 0..80 {
            for length in 1..50 {
                if let Some((a, d)) = fit_partition(&busy, s(at), s(length), s(60)) {
                    assert!(a < s(60) && !d.is_zero() && d <= s(length));
                    assert!(
                        busy.iter().all(|&(b, e)| a + d <= b || e <= a),
                        "{at} {length}"
                    );
                }
            }
        }
    }
}
