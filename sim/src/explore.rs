//! Swarm exploration: each seed draws its own fault schedule on top of a base
//! scenario, runs a fault phase, heals everything, and checks that the cluster
//! converges (the liveness phase).
//!
//! *Swarm testing* (Groce et al., 2012): every fault kind is switched on or off
//! per seed, so campaigns cover varied mixes instead of one fixed blend that
//! dilutes each fault. Fault lengths are biased toward the lease's boundaries —
//! just under, at and just over `lease_ttl - safety_margin`, `lease_ttl`,
//! `renew_interval` and `rejoin_delay` — and clock drifts toward the safety
//! margin's ratio, because that is where off-by-one bugs live and uniform
//! draws almost never land.
//!
//! A generated schedule is *materialized*: [`generate`] returns an ordinary
//! [`Scenario`] whose faults are all scheduled explicitly, so a failing seed
//! can be replayed, shrunk and saved as a standalone scenario file.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use crate::rng::{uniform_inclusive, unit_f64, SeedDeriver};
use crate::scenario::{ClockOffset, FaultSpec, Scenario, DOWNSTREAM, LEASE_STORE};

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
    let rejoin = e
        .rejoin_delay
        .unwrap_or_else(|| e.lease_ttl + e.retry_interval * 2);
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
        stop: false,
        abdicate: false,
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
            Duration::from_nanos(crate::units::nanos(unit).saturating_mul(k))
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
        s.faults.push(FaultSpec::Pause {
            host: node.clone(),
            at: start,
            duration: length,
        });
        s.faults.push(FaultSpec::Replace {
            node,
            at: (start + span(&mut rng, Duration::from_secs(1), base.election.lease_ttl))
                .min(fault_phase.saturating_sub(Duration::from_millis(1))),
        });
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
    if coin(&mut slow, 0.15) {
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
        }
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
    if coin(&mut failures, 0.2) {
        mix.abdicate = true;
        for _ in 0..uniform_inclusive(&mut failures, 1, 3) {
            s.faults.push(FaultSpec::Abdicate {
                node: target(&mut failures),
                at: at(&mut failures),
            });
        }
    }
    // Recurring faults of the base keep running during the fault phase.
    s.heal_at = Some(fault_phase);
    s.duration = fault_phase + liveness_bound(&s);
    // A seed passes when nothing breaks: the base's own expectations (say,
    // "no leader change") describe the base, not a swarm of faults on it.
    // Liveness is checked by the `liveness` invariant of the healed run.
    s.expect = crate::scenario::Expectations::default();
    (s, mix)
}

/// The windows `[at, end)` of `base`'s scheduled partitions, by start.
fn partition_windows(base: &Scenario) -> Vec<(Duration, Duration)> {
    let mut windows: Vec<(Duration, Duration)> = base
        .faults
        .iter()
        .filter_map(|f| match f {
            FaultSpec::Partition { at, duration, .. } => Some((*at, at.saturating_add(*duration))),
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

/// Why a base scenario cannot host generated schedules, though it is valid
/// on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseError {
    /// The key of the base to change (`duration`, `work.work_duration`, ...).
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for BaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

impl std::error::Error for BaseError {}

/// The most negative clock drift [`generate`] can give a node of `base`
/// (or the base's own, if slower).
fn slowest_generated_drift(base: &Scenario) -> f64 {
    let e = &base.election;
    let ratio = e.effective_safety_margin().as_secs_f64() / e.lease_ttl.as_secs_f64();
    // Drawn drifts are up to 1.5 × the margin's ratio, or up to 0.2.
    let drawn = -(ratio * 1.5).clamp(0.2, crate::MAX_CLOCK_DRIFT);
    base.nodes
        .iter()
        .map(|n| n.clock_drift)
        .fold(drawn, f64::min)
}

/// Checks, before any seed runs, that every schedule [`generate`] can draw
/// on `base` is a valid scenario — that is, that the longest generated run
/// (the base's `duration` as the fault phase, then the liveness phase of
/// [`liveness_bound`] at the slowest clock a seed can draw) is a valid
/// scenario. `base` must itself be valid.
///
/// # Errors
/// A [`BaseError`] naming the base's key to change: the largest term of an
/// overlong run (its `duration`, or the liveness phase's largest part).
pub fn check_base(base: &Scenario) -> Result<(), BaseError> {
    let mut worst = base.clone();
    let slowest = slowest_generated_drift(base);
    for node in worst.nodes.iter_mut() {
        node.clock_drift = slowest;
    }
    // The slowest network a seed may draw (the `slow-network` mix).
    let slow = base
        .election
        .retry_interval
        .mul_f64(1.5)
        .min(Duration::from_secs(3600));
    worst.network.latency.1 = worst.network.latency.1.max(slow);
    worst.heal_at = Some(base.duration);
    let liveness = liveness_bound_checked(&worst);
    let total = liveness.and_then(|l| base.duration.checked_add(l));
    let problem = match total {
        None => "a run that long cannot be counted".to_string(),
        Some(total) => {
            worst.duration = total;
            match worst.validate() {
                Ok(()) => return Ok(()),
                Err(e) if e.key == "duration" => format!(
                    "{} in all, but a run's `duration` {}",
                    rounded(total),
                    e.message
                ),
                // Another key: the generated schedule would be refused for a
                // reason the base does not show (a generator bug, reported as
                // such by the seeds).
                Err(_) => return Ok(()),
            }
        }
    };
    let (key, value) = largest_term(base);
    Err(BaseError {
        key: key.to_string(),
        message: format!(
            "this base cannot host generated schedules: each seed runs the base's `duration` \
             ({}) as its fault phase, then a liveness phase of up to {} (max(lease_ttl, \
             rejoin_delay) + retry_interval + work_duration + write_interval + 8 x the highest \
             latency, scaled up for the slowest clock a seed may draw): {problem}; shorten \
             `{key}` ({}), the largest of these",
            rounded(base.duration),
            liveness.map_or_else(|| "more than can be counted".to_string(), rounded),
            rounded(value)
        ),
    })
}

/// `d` for a message: to the second from a minute up, else to the
/// millisecond (a liveness bound scaled by a drift has nanosecond noise).
fn rounded(d: Duration) -> String {
    let d = if d >= Duration::from_secs(60) {
        Duration::from_secs(d.as_secs())
    } else {
        Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    };
    crate::units::human(d)
}

/// The largest of the spans a generated run's length adds up from, with the
/// key that sets it.
fn largest_term(base: &Scenario) -> (&'static str, Duration) {
    let e = &base.election;
    let terms = [
        ("duration", base.duration),
        ("election.lease_ttl", e.lease_ttl),
        (
            "election.rejoin_delay",
            e.rejoin_delay.unwrap_or(Duration::ZERO),
        ),
        ("election.retry_interval", e.retry_interval),
        ("work.work_duration", base.work.work_duration),
        ("work.write_interval", base.work.write_interval),
        ("network.latency", base.network.latency.1.saturating_mul(8)),
    ];
    terms
        .into_iter()
        .fold(("duration", Duration::ZERO), |best, term| {
            if term.1 > best.1 {
                term
            } else {
                best
            }
        })
}

/// How long after healing one leader must hold with accepted writes.
///
/// `max(lease_ttl, rejoin_delay)`: a lease held by a process that cannot use
/// it lapses within one TTL, and a node that went quiet (the rejoin policy)
/// asks again within `rejoin_delay`; then `retry_interval` for a follower to
/// ask, a unit of work, and latency for the request, the answer and the write
/// (twice, for slack). Scaled up for the slowest clock: its intervals last
/// longer in true time.
///
/// Saturates at [`Duration::MAX`] instead of overflowing; [`check_base`]
/// refuses the bases where that could happen.
pub fn liveness_bound(s: &Scenario) -> Duration {
    liveness_bound_checked(s).unwrap_or(Duration::MAX)
}

/// [`liveness_bound`], or `None` when it does not fit in a [`Duration`].
fn liveness_bound_checked(s: &Scenario) -> Option<Duration> {
    let e = &s.election;
    let rejoin = match e.rejoin_delay {
        Some(rejoin) => rejoin,
        None => e.lease_ttl.checked_add(e.retry_interval.checked_mul(2)?)?,
    };
    let latency = s.network.latency.1;
    let base = e
        .lease_ttl
        .max(rejoin)
        .checked_add(e.retry_interval)?
        .checked_add(s.work.work_duration)?
        .checked_add(s.work.write_interval)?
        .checked_add(latency.checked_mul(8)?)?
        .checked_add(Duration::from_millis(1))?;
    let slowest = s.nodes.iter().map(|n| n.clock_drift).fold(0.0f64, f64::min);
    // `base.mul_f64(1.0 / (1.0 + slowest))`, without its panic on overflow.
    Duration::try_from_secs_f64((1.0 / (1.0 + slowest)) * base.as_secs_f64()).ok()
}

/// What one seed of a campaign found.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// No violation (safety or liveness) and, if checked, deterministic.
    pub ok: bool,
    /// The first violation's invariant (`non-determinism` when two runs of
    /// the seed disagreed).
    pub invariant: Option<String>,
    /// When the first violation happened, ms.
    pub at_ms: Option<u64>,
    /// The first violation in one sentence.
    pub detail: Option<String>,
    /// How many violations the run had.
    pub violations: u64,
    /// The run's trace hash.
    pub trace_hash: String,
    /// Events processed.
    pub events: u64,
    /// Whether this seed was run twice to check determinism.
    pub determinism_checked: bool,
    /// The fault kinds the seed switched on.
    pub mix: Vec<String>,
    /// The interesting things that happened.
    pub coverage: crate::report::Coverage,
}

/// One seed in every this-many is run twice and its hashes compared.
pub const DETERMINISM_SAMPLE: u64 = 16;

/// Runs seed `seed` of a campaign over `base`.
pub fn run_seed(base: &Scenario, seed: u64, options: &crate::RunOptions) -> SeedOutcome {
    let (scenario, mix) = generate(base, seed);
    let run = || -> Result<crate::Report, (&'static str, String)> {
        crate::limits::check_budget(&scenario, options.event_budget())
            .map_err(|e| ("event-budget", e.to_string()))?;
        let mut sim = crate::Simulation::new(&scenario, options.clone()).map_err(|e| {
            // A generated schedule the validator refuses is a generator bug.
            (
                "generator",
                format!("the generated scenario is invalid: {e}"),
            )
        })?;
        sim.run_to_end();
        if let Some(halt) = sim.halted() {
            // Bounded, not judged: the seed needs a larger --max-events.
            return Err(("event-budget", halt.to_string()));
        }
        Ok(sim.report())
    };
    let report = match run() {
        Ok(report) => report,
        Err((invariant, detail)) => {
            return SeedOutcome {
                seed,
                ok: false,
                invariant: Some(invariant.to_string()),
                at_ms: None,
                detail: Some(detail),
                violations: 0,
                trace_hash: String::new(),
                events: 0,
                determinism_checked: false,
                mix: mix.names().iter().map(|s| s.to_string()).collect(),
                coverage: Default::default(),
            };
        }
    };
    let determinism_checked = seed % DETERMINISM_SAMPLE == 0;
    let mismatch =
        determinism_checked && run().map_or(true, |again| again.trace_hash != report.trace_hash);
    let first = report.violations.first();
    let (invariant, at_ms, detail) = if mismatch {
        (
            Some("non-determinism".to_string()),
            None,
            Some("two runs of this seed gave different trace hashes: a simulator bug".to_string()),
        )
    } else {
        (
            first.map(|v| v.invariant.clone()),
            first.map(|v| v.at_ms),
            first.map(|v| v.detail.clone()),
        )
    };
    SeedOutcome {
        seed,
        ok: report.violations_total == 0 && !mismatch,
        invariant,
        at_ms,
        detail,
        violations: report.violations_total,
        trace_hash: report.trace_hash,
        events: report.events,
        determinism_checked,
        mix: mix.names().iter().map(|s| s.to_string()).collect(),
        coverage: report.coverage,
    }
}

pub use crate::parallel::{SpawnError, StreamError, MAX_JOBS, WINDOW_PER_JOB};

/// Which seeds a campaign runs: `count` seeds from `start`, of which this
/// shard takes every `shards`-th, beginning with the `shard`-th.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// The first seed.
    pub start: u64,
    /// How many seeds in all shards together.
    pub count: u64,
    /// This shard's index, `0..shards`.
    pub shard: u64,
    /// How many shards.
    pub shards: u64,
}

impl SeedRange {
    /// Checks the range: at least one shard, the shard among them, and the
    /// last seed (`start + count - 1`) no larger than `u64::MAX`.
    ///
    /// # Errors
    /// One sentence naming the flag (`--shard`, `--start`, `--seeds`).
    pub fn check(&self) -> Result<(), String> {
        if self.shards == 0 || self.shard >= self.shards {
            return Err(format!(
                "--shard {}/{}: I must be in 0..N and N at least 1",
                self.shard, self.shards
            ));
        }
        if self.count > 0 && self.start.checked_add(self.count - 1).is_none() {
            return Err(format!(
                "--start {} with --seeds {} goes past the largest seed, {}: \
                 use at most --seeds {}",
                self.start,
                self.count,
                u64::MAX,
                u64::MAX - self.start + 1
            ));
        }
        Ok(())
    }

    /// How many seeds this shard runs — computed, not counted, so a range of
    /// `u64::MAX` seeds costs nothing.
    pub fn len(&self) -> u64 {
        if self.shards == 0 || self.shard >= self.count {
            0
        } else {
            (self.count - 1 - self.shard) / self.shards + 1
        }
    }

    /// Whether this shard runs no seed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The seeds of this shard, in order, drawn lazily (a step of `shards`
    /// from the `shard`-th; no seed is visited only to be skipped).
    pub fn seeds(&self) -> impl Iterator<Item = u64> + Send + 'static {
        let SeedRange {
            start,
            count,
            shard,
            shards,
        } = *self;
        let mut next = (shards > 0 && shard < count).then_some(shard);
        std::iter::from_fn(move || {
            let i = next?;
            next = i.checked_add(shards).filter(|n| *n < count);
            Some(start.wrapping_add(i))
        })
    }
}

/// Runs every seed of `range` on `jobs` threads and hands the outcomes to
/// `sink` in seed order — identical whatever `jobs` is — holding at most
/// `jobs` × [`WINDOW_PER_JOB`] of them at once. `progress` is called once per
/// finished seed (from any thread).
///
/// # Errors
/// A worker thread could not be started (before any outcome), or the sink's
/// first error (no seed starts after it).
pub fn stream_campaign<E>(
    base: &Scenario,
    range: SeedRange,
    jobs: usize,
    options: &crate::RunOptions,
    progress: &(dyn Fn() + Sync),
    sink: &mut dyn FnMut(SeedOutcome) -> Result<(), E>,
) -> Result<(), StreamError<E>> {
    // No more threads than seeds.
    let jobs = jobs.min(usize::try_from(range.len()).unwrap_or(usize::MAX));
    crate::parallel::stream(
        range.seeds(),
        jobs,
        &|seed| run_seed(base, seed, options),
        progress,
        sink,
    )
}

/// Runs every seed of `range` on `jobs` threads and returns the outcomes in
/// seed order — identical whatever `jobs` is. For small campaigns; large
/// ones use [`stream_campaign`], which holds no more than a window of them.
///
/// # Errors
/// A worker thread could not be started.
pub fn run_campaign(
    base: &Scenario,
    range: SeedRange,
    jobs: usize,
    options: &crate::RunOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<SeedOutcome>, SpawnError> {
    let jobs = jobs.min(usize::try_from(range.len()).unwrap_or(usize::MAX));
    crate::parallel::map(
        range.seeds(),
        jobs,
        &|seed| run_seed(base, seed, options),
        progress,
    )
}

/// Totals over a campaign.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CampaignSummary {
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that failed.
    pub failed: u64,
    /// Seeds run twice for determinism.
    pub determinism_checked: u64,
    /// Events processed in all.
    pub events: u64,
    /// Per-invariant count of failing seeds (by their first violation).
    pub failures_by_invariant: std::collections::BTreeMap<String, u64>,
    /// Coverage summed over all seeds.
    pub coverage: crate::report::Coverage,
    /// How many seeds exercised each coverage item at least once.
    pub seeds_covering: crate::report::Coverage,
}

impl CampaignSummary {
    /// Sums `outcomes`.
    pub fn of(outcomes: &[SeedOutcome]) -> Self {
        let mut s = CampaignSummary::default();
        for o in outcomes {
            s.add(o);
        }
        s
    }

    /// Counts one more outcome (campaigns stream: they keep the totals, not
    /// the outcomes).
    pub fn add(&mut self, o: &SeedOutcome) {
        let s = self;
        s.seeds += 1;
        s.events += o.events;
        s.determinism_checked += u64::from(o.determinism_checked);
        if !o.ok {
            s.failed += 1;
            let name = o.invariant.clone().unwrap_or_else(|| "unknown".to_string());
            *s.failures_by_invariant.entry(name).or_insert(0) += 1;
        }
        let c = &o.coverage;
        let (t, n) = (&mut s.coverage, &mut s.seeds_covering);
        t.stale_write_rejected += c.stale_write_rejected;
        t.takeover_during_pause += c.takeover_during_pause;
        t.step_down_on_deadline += c.step_down_on_deadline;
        t.renewal_lost += c.renewal_lost;
        t.zombie_fenced += c.zombie_fenced;
        t.refused += c.refused;
        t.leader_stopped += c.leader_stopped;
        t.leader_abdicated += c.leader_abdicated;
        n.stale_write_rejected += u64::from(c.stale_write_rejected > 0);
        n.takeover_during_pause += u64::from(c.takeover_during_pause > 0);
        n.step_down_on_deadline += u64::from(c.step_down_on_deadline > 0);
        n.renewal_lost += u64::from(c.renewal_lost > 0);
        n.zombie_fenced += u64::from(c.zombie_fenced > 0);
        n.refused += u64::from(c.refused > 0);
        n.leader_stopped += u64::from(c.leader_stopped > 0);
        n.leader_abdicated += u64::from(c.leader_abdicated > 0);
    }

    /// The "sometimes" properties no seed exercised: a campaign on the default
    /// mix where this is non-empty means the generator is too tame.
    pub fn never_exercised(&self) -> Vec<&'static str> {
        let n = &self.seeds_covering;
        [
            (n.stale_write_rejected, "stale write rejected"),
            (n.takeover_during_pause, "takeover during a pause"),
            (n.step_down_on_deadline, "step-down on the local deadline"),
            (n.renewal_lost, "renewal lost"),
            (n.zombie_fenced, "zombie incarnation fenced"),
            (n.leader_stopped, "leader stopped gracefully"),
            (n.leader_abdicated, "leader abdicated"),
        ]
        .into_iter()
        .filter(|(count, _)| *count == 0)
        .map(|(_, name)| name)
        .collect()
    }
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

    #[test]
    fn the_liveness_bound_saturates_instead_of_overflowing() {
        let mut base = default_base();
        base.work.work_duration = Duration::MAX;
        assert_eq!(liveness_bound(&base), Duration::MAX);
        let e = check_base(&base).unwrap_err();
        assert_eq!(e.key, "work.work_duration");
        assert!(check_base(&default_base()).is_ok());
    }
}
