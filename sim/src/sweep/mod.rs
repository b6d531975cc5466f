//! The TTL trade-off, measured: "a short TTL fails over fast but is twitchy;
//! a long TTL is stable but slow to recover".
//!
//! A sweep runs every cell of a grid of settings over the same seeds of one
//! fault mix and reports, per cell, what an operator weighs:
//!
//! * **Election grid** ([`ElectionGrid`]): `lease_ttl` × `renew_interval /
//!   lease_ttl` (× `safety_margin / lease_ttl`, optionally). Per cell: the
//!   failover gap (last accepted write of the old leader to the first of the
//!   new) at p50 and p99, leader changes and spurious failovers per hour,
//!   the leaderless fraction of time, and the writes fencing rejected.
//! * **Membership grid** ([`MembershipGrid`]): `liveness_ttl` ×
//!   `heartbeat_interval`. Per cell: false "node down" verdicts (the
//!   registry drops a node whose process is running) per node-hour.
//!
//! **The fault mix** ([`FaultMix`]) is drawn once per seed, from the seed
//! alone, and materialized as scheduled faults, so every cell of a grid sees
//! exactly the same pauses, crashes and stalls for a given seed (common
//! random numbers: differences between cells are the settings', not the
//! dice's). Per node: GC pauses as a Poisson process with a chosen length
//! distribution, and crashes with a restart delay. Per run: random message
//! loss, and **latency spikes, modelled as short stalls of the lease store**
//! (a [`FaultSpec::Pause`] of `lease-store`: every renewal, acquisition and
//! heartbeat in flight waits for the stall to end, as behind a slow disk or a
//! saturated database). The network's own latency range is left alone.
//!
//! Runs are independent and parallel ([`run_election`], [`run_membership`]
//! with `jobs` threads); results come back in grid order whatever the
//! number of threads.

use crate::units::{human, nanos};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::rng::{exponential_nanos, unit_f64, SeedDeriver};
use crate::scenario::{FaultSpec, Scenario, LEASE_STORE};
use crate::svg::{esc, num, text_width, wrap, Doc, MONO};
use crate::{RunOptions, Simulation};

/// How fault lengths are spread between their bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Uniform between the bounds.
    Uniform,
    /// Log-uniform: every factor of ten between the bounds is equally
    /// likely, so most pauses are short and a few are very long (the shape of
    /// real GC pause distributions).
    LogUniform,
}

/// A distribution of fault lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lengths {
    /// The shortest.
    pub low: Duration,
    /// The longest.
    pub high: Duration,
    /// How lengths spread between them.
    pub spread: Spread,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("`{text}` is negative"));
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); use e.g. 30s, 1m30s or 250ms"))
}

impl Lengths {
    /// Parses `LOW..HIGH` (log-uniform), `log:LOW..HIGH`, `uniform:LOW..HIGH`
    /// or one fixed duration: `log:100ms..60s`, `uniform:1s..5s`, `2s`.
    ///
    /// # Errors
    /// One sentence on what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (spread, range) = match text.split_once(':') {
            Some(("log", r)) => (Spread::LogUniform, r),
            Some(("uniform", r)) => (Spread::Uniform, r),
            Some((other, _)) => {
                return Err(format!(
                    "`{other}` is not a spread; use log:LOW..HIGH or uniform:LOW..HIGH"
                ))
            }
            None => (Spread::LogUniform, text),
        };
        let (low, high) = match range.split_once("..") {
            Some((a, b)) => (parse_duration(a)?, parse_duration(b)?),
            None => {
                let d = parse_duration(range)?;
                (d, d)
            }
        };
        if low > high {
            return Err(format!("`{text}`: the range is inverted; write LOW..HIGH"));
        }
        if high.is_zero() {
            return Err(format!("`{text}`: lengths must be greater than zero"));
        }
        if spread == Spread::LogUniform && low.is_zero() {
            return Err(format!(
                "`{text}`: a log-uniform range needs a lower bound above zero"
            ));
        }
        Ok(Lengths { low, high, spread })
    }

    /// Draws one length.
    fn draw(&self, rng: &mut ChaCha8Rng) -> Duration {
        let (low, high) = (self.low.as_nanos() as f64, self.high.as_nanos() as f64);
        let u = unit_f64(rng);
        let ns = match self.spread {
            Spread::Uniform => low + u * (high - low),
            Spread::LogUniform => low * libm::pow(high / low, u),
        };
        Duration::from_nanos((ns as u64).max(1))
    }

    fn describe(&self) -> String {
        if self.low == self.high {
            return human(self.low);
        }
        format!(
            "{}–{}{}",
            human(self.low),
            human(self.high),
            match self.spread {
                Spread::Uniform => "",
                Spread::LogUniform => ", log-uniform",
            }
        )
    }
}

impl std::fmt::Display for Lengths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spread = match self.spread {
            Spread::Uniform => "uniform",
            Spread::LogUniform => "log",
        };
        write!(f, "{spread}:{}..{}", human(self.low), human(self.high))
    }
}

/// The most faults one run of a sweep may be expected to draw (the mean of
/// its Poisson processes, [`FaultMix::expected_faults`]): a run's faults are
/// all drawn, and held, before it starts, so this bounds the memory of each
/// run in flight. Mixes above it are refused ([`FaultMix::validate`]).
pub const MAX_FAULTS_PER_RUN: u64 = 1_000_000;

/// The faults every run of a sweep suffers (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultMix {
    /// Nodes in the cluster.
    pub nodes: usize,
    /// Virtual time per run.
    pub duration: Duration,
    /// Mean interval between GC pauses of each node (`None`: no pauses).
    pub pause_every: Option<Duration>,
    /// How long a pause lasts.
    pub pause_length: Lengths,
    /// Mean interval between crashes of each node (`None`: no crashes).
    pub crash_every: Option<Duration>,
    /// How long a crashed node stays down before it restarts.
    pub restart_after: Lengths,
    /// Mean interval between latency spikes (lease-store stalls).
    pub spike_every: Option<Duration>,
    /// How long a spike lasts.
    pub spike_length: Lengths,
    /// Probability that any message is lost.
    pub loss: f64,
}

impl Default for FaultMix {
    /// Three nodes for an hour each; per node a GC pause every 10 minutes on
    /// average (100 ms – 60 s, log-uniform: median about 2.5 s, one in ten
    /// over 30 s) and a crash every 30 minutes (down 10–60 s); a lease-store
    /// stall every 10 minutes (100 ms – 10 s, log-uniform); 1% message loss.
    fn default() -> Self {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        FaultMix {
            nodes: 3,
            duration: s(3600),
            pause_every: Some(s(600)),
            pause_length: Lengths {
                low: ms(100),
                high: s(60),
                spread: Spread::LogUniform,
            },
            crash_every: Some(s(1800)),
            restart_after: Lengths {
                low: s(10),
                high: s(60),
                spread: Spread::Uniform,
            },
            spike_every: Some(s(600)),
            spike_length: Lengths {
                low: ms(100),
                high: s(10),
                spread: Spread::LogUniform,
            },
            loss: 0.01,
        }
    }
}

impl FaultMix {
    /// Checks the mix.
    ///
    /// # Errors
    /// One sentence naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.nodes == 0 || self.nodes > 100 {
            return Err("--nodes must be between 1 and 100".to_string());
        }
        if self.duration < Duration::from_secs(1) {
            return Err("--duration must be at least 1s".to_string());
        }
        if self.duration > Duration::from_secs(30 * 24 * 3600) {
            return Err("--duration must be at most 30 days".to_string());
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(format!("--loss {} must be in [0, 1)", self.loss));
        }
        for (flag, every) in [
            ("--pause-every", self.pause_every),
            ("--crash-every", self.crash_every),
            ("--spike-every", self.spike_every),
        ] {
            if every.is_some_and(|e| e < Duration::from_millis(100)) {
                return Err(format!("{flag} must be at least 100ms (or `off`)"));
            }
        }
        let expected = self.expected_faults();
        if expected > MAX_FAULTS_PER_RUN as f64 {
            let (flag, every, _) = self.expected_faults_by_flag().into_iter().fold(
                ("--pause-every", None, -1.0),
                |best, next| {
                    if next.2 > best.2 {
                        next
                    } else {
                        best
                    }
                },
            );
            return Err(format!(
                "the fault mix draws about {expected:.0} faults per run ({} nodes over {}), \
                 more than the {MAX_FAULTS_PER_RUN} a run may hold (a run's faults are drawn \
                 before it starts, and each costs memory): raise {flag} (now {}), or lower \
                 --duration or --nodes",
                self.nodes,
                human(self.duration),
                every.map_or_else(|| "off".to_string(), human)
            ));
        }
        Ok(())
    }

    /// The mean number of faults one run draws: per node, the duration over
    /// the mean interval of pauses and of crashes; once, that of spikes.
    pub fn expected_faults(&self) -> f64 {
        self.expected_faults_by_flag()
            .iter()
            .map(|(_, _, count)| count)
            .sum()
    }

    /// [`Self::expected_faults`] per flag, with the flag's interval.
    fn expected_faults_by_flag(&self) -> [(&'static str, Option<Duration>, f64); 3] {
        let per = |every: Option<Duration>| {
            every.map_or(0.0, |e| {
                self.duration.as_secs_f64() / e.as_secs_f64().max(f64::MIN_POSITIVE)
            })
        };
        let nodes = self.nodes as f64;
        [
            (
                "--pause-every",
                self.pause_every,
                nodes * per(self.pause_every),
            ),
            (
                "--crash-every",
                self.crash_every,
                nodes * per(self.crash_every),
            ),
            ("--spike-every", self.spike_every, per(self.spike_every)),
        ]
    }

    /// One line describing the mix, for charts and summaries.
    pub fn describe(&self) -> String {
        let mut node = Vec::new();
        if let Some(every) = self.pause_every {
            node.push(format!(
                "a GC pause every {} ({})",
                human(every),
                self.pause_length.describe()
            ));
        }
        if let Some(every) = self.crash_every {
            node.push(format!(
                "a crash every {} (down {})",
                human(every),
                self.restart_after.describe()
            ));
        }
        let mut parts = Vec::new();
        if !node.is_empty() {
            parts.push(format!("per node {}", node.join(" and ")));
        }
        if let Some(every) = self.spike_every {
            parts.push(format!(
                "a latency spike (lease-store stall) every {} ({})",
                human(every),
                self.spike_length.describe()
            ));
        }
        parts.push(format!("{}% message loss", self.loss * 100.0));
        parts.join("; ")
    }

    /// The node ids of a run.
    fn node_ids(&self) -> Vec<String> {
        (1..=self.nodes).map(|i| format!("node-{i}")).collect()
    }

    /// Seed `seed`'s faults, as scheduled faults. Depends on the seed and the
    /// mix only (never on the grid cell). Per node, pauses never overlap each
    /// other and a crash waits for the previous restart.
    pub fn schedule(&self, seed: u64) -> Vec<FaultSpec> {
        let end = nanos(self.duration);
        let root = SeedDeriver::new(seed, "sweep");
        let mut faults = Vec::new();
        let mut poisson =
            |rng: &mut ChaCha8Rng,
             every: Duration,
             lengths: &Lengths,
             make: &mut dyn FnMut(Duration, Duration) -> FaultSpec| {
                let mut t = 0u64;
                loop {
                    t = t.saturating_add(exponential_nanos(rng, nanos(every)));
                    if t >= end {
                        break;
                    }
                    let length = lengths.draw(rng);
                    faults.push(make(Duration::from_nanos(t), length));
                    t = t.saturating_add(nanos(length));
                }
            };
        for node in self.node_ids() {
            if let Some(every) = self.pause_every {
                let mut rng = root.str("pause").str(&node).rng();
                poisson(&mut rng, every, &self.pause_length, &mut |at, duration| {
                    FaultSpec::Pause {
                        host: node.clone(),
                        at,
                        duration,
                    }
                });
            }
            if let Some(every) = self.crash_every {
                let mut rng = root.str("crash").str(&node).rng();
                poisson(&mut rng, every, &self.restart_after, &mut |at, after| {
                    FaultSpec::Crash {
                        node: node.clone(),
                        at,
                        restart_after: Some(after),
                    }
                });
            }
        }
        if let Some(every) = self.spike_every {
            let mut rng = root.str("spike").rng();
            poisson(&mut rng, every, &self.spike_length, &mut |at, duration| {
                FaultSpec::Pause {
                    host: LEASE_STORE.to_string(),
                    at,
                    duration,
                }
            });
        }
        faults
    }

    /// The scenario of one run: the mix's cluster and faults with default
    /// settings (the grids override the election or membership ones). Work:
    /// a 200 ms unit every second, so a pause often lands inside one and its
    /// late write meets the fence.
    pub fn scenario(&self, seed: u64) -> Scenario {
        let mut s = self.scenario_without_faults(seed);
        s.faults = self.schedule(seed);
        s
    }

    /// [`Self::scenario`] without its faults (cheap: for checking settings).
    pub fn scenario_without_faults(&self, seed: u64) -> Scenario {
        let mut s =
            Scenario::new(format!("sweep-seed-{seed}"), self.duration).with_nodes(self.node_ids());
        s.seed = seed;
        s.election.role = "sweep".to_string();
        s.work.work_duration = Duration::from_millis(200);
        s.network.loss = self.loss;
        // node-1 asks first; the others join a second later.
        for node in s.nodes.iter_mut().skip(1) {
            node.start_at = Duration::from_secs(1).min(self.duration / 2);
        }
        s
    }
}

/// The election settings swept.
#[derive(Clone, Debug, PartialEq)]
pub struct ElectionGrid {
    /// Lease TTLs (the columns).
    pub ttls: Vec<Duration>,
    /// `renew_interval / lease_ttl` (the rows).
    pub renew_ratios: Vec<f64>,
    /// `safety_margin / lease_ttl` (one chart row of panels each).
    pub margin_ratios: Vec<f64>,
    /// `retry_interval / lease_ttl`, for every cell.
    pub retry_ratio: f64,
}

impl Default for ElectionGrid {
    /// TTLs 2 s, 5 s, 10 s, 30 s, 60 s × renew ratios 0.2, 0.4, 0.6, 0.8;
    /// the default margin (TTL / 10); retry every TTL / 10.
    fn default() -> Self {
        ElectionGrid {
            ttls: [2, 5, 10, 30, 60].map(Duration::from_secs).to_vec(),
            renew_ratios: vec![0.2, 0.4, 0.6, 0.8],
            margin_ratios: vec![0.1],
            retry_ratio: 0.1,
        }
    }
}

/// One election setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ElectionCell {
    /// The lease TTL.
    pub lease_ttl: Duration,
    /// `renew_interval / lease_ttl`.
    pub renew_ratio: f64,
    /// `safety_margin / lease_ttl`.
    pub margin_ratio: f64,
    /// `retry_interval / lease_ttl`.
    pub retry_ratio: f64,
}

impl ElectionCell {
    /// `scenario` with this cell's election settings.
    pub fn apply(&self, scenario: &mut Scenario) {
        let e = &mut scenario.election;
        e.lease_ttl = self.lease_ttl;
        e.renew_interval = self.lease_ttl.mul_f64(self.renew_ratio);
        e.safety_margin = Some(self.lease_ttl.mul_f64(self.margin_ratio));
        e.retry_interval = self
            .lease_ttl
            .mul_f64(self.retry_ratio)
            .max(Duration::from_millis(10));
    }
}

impl ElectionGrid {
    /// Checks the grid.
    ///
    /// # Errors
    /// One sentence naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.ttls.is_empty() || self.renew_ratios.is_empty() || self.margin_ratios.is_empty() {
            return Err("the grid needs at least one TTL, renew ratio and margin ratio".into());
        }
        if self
            .ttls
            .len()
            .saturating_mul(self.renew_ratios.len())
            .saturating_mul(self.margin_ratios.len())
            > 400
        {
            return Err("the grid has more than 400 cells".into());
        }
        for ttl in &self.ttls {
            if *ttl < Duration::from_millis(100) || *ttl > Duration::from_secs(3600) {
                return Err(format!(
                    "--ttls: {} must be between 100ms and 1h",
                    human(*ttl)
                ));
            }
        }
        for (flag, values) in [
            ("--renew-ratios", &self.renew_ratios),
            ("--margin-ratios", &self.margin_ratios),
            ("--retry-ratio", &vec![self.retry_ratio]),
        ] {
            if let Some(bad) = values.iter().find(|r| !(**r > 0.0 && **r < 1.0)) {
                return Err(format!("{flag}: {bad} must be between 0 and 1 (exclusive)"));
            }
        }
        Ok(())
    }

    /// Every cell, margin-major, then TTL, then renew ratio.
    pub fn cells(&self) -> Vec<ElectionCell> {
        let mut cells = Vec::new();
        for &margin_ratio in &self.margin_ratios {
            for &lease_ttl in &self.ttls {
                for &renew_ratio in &self.renew_ratios {
                    cells.push(ElectionCell {
                        lease_ttl,
                        renew_ratio,
                        margin_ratio,
                        retry_ratio: self.retry_ratio,
                    });
                }
            }
        }
        cells
    }
}

/// The membership settings swept.
#[derive(Clone, Debug, PartialEq)]
pub struct MembershipGrid {
    /// Liveness TTLs (the columns).
    pub liveness_ttls: Vec<Duration>,
    /// Heartbeat intervals (the rows). Cells whose heartbeat is not below
    /// the liveness TTL are skipped: every node would flap.
    pub heartbeats: Vec<Duration>,
}

impl Default for MembershipGrid {
    /// Liveness TTLs 2 s, 5 s, 10 s, 30 s × heartbeats 500 ms, 1 s, 2 s, 5 s.
    fn default() -> Self {
        MembershipGrid {
            liveness_ttls: [2, 5, 10, 30].map(Duration::from_secs).to_vec(),
            heartbeats: [500, 1000, 2000, 5000].map(Duration::from_millis).to_vec(),
        }
    }
}

impl MembershipGrid {
    /// Checks the grid.
    ///
    /// # Errors
    /// One sentence naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.liveness_ttls.is_empty() || self.heartbeats.is_empty() {
            return Err("the grid needs at least one liveness TTL and heartbeat".into());
        }
        if self
            .liveness_ttls
            .len()
            .saturating_mul(self.heartbeats.len())
            > 400
        {
            return Err("the grid has more than 400 cells".into());
        }
        for d in self.liveness_ttls.iter().chain(&self.heartbeats) {
            if *d < Duration::from_millis(10) || *d > Duration::from_secs(3600) {
                return Err(format!(
                    "--liveness-ttls/--heartbeats: {} must be between 10ms and 1h",
                    human(*d)
                ));
            }
        }
        if self.cells().is_empty() {
            return Err("every heartbeat is at or above every liveness TTL: no cell to run".into());
        }
        Ok(())
    }

    /// The cells `(liveness_ttl, heartbeat)` with the heartbeat below the TTL,
    /// TTL-major.
    pub fn cells(&self) -> Vec<(Duration, Duration)> {
        let mut cells = Vec::new();
        for &ttl in &self.liveness_ttls {
            for &hb in &self.heartbeats {
                if hb < ttl {
                    cells.push((ttl, hb));
                }
            }
        }
        cells
    }
}

/// Which seeds and how many threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// The first seed.
    pub start: u64,
    /// How many.
    pub count: u64,
}

impl Seeds {
    /// The seeds, in order (a vector: for small counts).
    pub fn list(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The seeds, in order, drawn lazily.
    pub fn iter(&self) -> impl Iterator<Item = u64> + Clone + Send + 'static {
        let start = self.start;
        (0..self.count).map(move |i| start.wrapping_add(i))
    }

    /// Checks that there is a seed and that the last one (`start + count -
    /// 1`) is no larger than `u64::MAX`.
    ///
    /// # Errors
    /// One sentence naming `--seeds` or `--start`.
    pub fn check(&self) -> Result<(), String> {
        if self.count == 0 {
            return Err("--seeds must be at least 1".to_string());
        }
        if self.start.checked_add(self.count - 1).is_none() {
            return Err(format!(
                "--start {} with --seeds {} goes past the largest seed, {}: use at most --seeds {}",
                self.start,
                self.count,
                u64::MAX,
                u64::MAX - self.start + 1
            ));
        }
        Ok(())
    }
}

// ----- running -----

/// What one run contributes to its cell.
#[derive(Clone, Debug, Default)]
struct RunStats {
    virtual_ms: u64,
    gaps_ms: Vec<u64>,
    leader_changes: u64,
    spurious: u64,
    leaderless_ms: u64,
    overlap_ms: u64,
    rejected: u64,
    accepted: u64,
    violations: u64,
    leaves: u64,
    false_leaves: u64,
    flaps: u64,
}

fn run_one(scenario: &Scenario) -> Result<RunStats, String> {
    let mut sim = Simulation::new(scenario, RunOptions::default()).map_err(|e| e.to_string())?;
    sim.run_to_end();
    let r = sim.report();
    Ok(RunStats {
        virtual_ms: r.virtual_ms,
        gaps_ms: r.failovers.iter().map(|f| f.gap_ms).collect(),
        leader_changes: r.leader_changes,
        spurious: r.spurious_failovers,
        leaderless_ms: r.leaderless_ms,
        overlap_ms: r.overlap_ms,
        rejected: r.writes.rejected_stale + r.writes.rejected_wrong_writer,
        accepted: r.writes.accepted,
        violations: r.violations_total,
        leaves: r.membership.leaves,
        false_leaves: r.membership.false_leaves,
        flaps: r.membership.flaps,
    })
}

/// What every run of one cell adds up to. Sweeps stream: each run's
/// statistics are folded in here as it finishes, in seed order, and
/// forgotten — the failover gaps as a count per distinct millisecond value,
/// which gives the exact percentiles of the full list in bounded memory.
#[derive(Clone, Debug, Default)]
struct CellTotals {
    runs: u64,
    virtual_ms: u64,
    /// Failover gaps: value (ms) → how many.
    gaps_ms: BTreeMap<u64, u64>,
    failovers: u64,
    leader_changes: u64,
    spurious: u64,
    leaderless_ms: u64,
    overlap_ms: u64,
    rejected: u64,
    accepted: u64,
    violations: u64,
    leaves: u64,
    false_leaves: u64,
    flaps: u64,
}

impl CellTotals {
    fn add(&mut self, r: RunStats) {
        self.runs += 1;
        self.virtual_ms = self.virtual_ms.saturating_add(r.virtual_ms);
        for gap in r.gaps_ms {
            *self.gaps_ms.entry(gap).or_insert(0) += 1;
            self.failovers += 1;
        }
        let sums = [
            (&mut self.leader_changes, r.leader_changes),
            (&mut self.spurious, r.spurious),
            (&mut self.leaderless_ms, r.leaderless_ms),
            (&mut self.overlap_ms, r.overlap_ms),
            (&mut self.rejected, r.rejected),
            (&mut self.accepted, r.accepted),
            (&mut self.violations, r.violations),
            (&mut self.leaves, r.leaves),
            (&mut self.false_leaves, r.false_leaves),
            (&mut self.flaps, r.flaps),
        ];
        for (total, value) in sums {
            *total = total.saturating_add(value);
        }
    }

    /// The nearest-rank percentile `p` (0–100) of the gaps: the same value
    /// as indexing the sorted list of every gap.
    fn gap_percentile(&self, p: f64) -> Option<u64> {
        percentile(&self.gaps_ms, self.failovers, p)
    }
}

/// The nearest-rank percentile `p` (0–100) of `n` values, given as a count
/// per distinct value.
fn percentile(counts: &BTreeMap<u64, u64>, n: u64, p: f64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = (((p / 100.0) * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0u64;
    counts.iter().find_map(|(&value, &count)| {
        seen += count;
        (seen >= rank).then_some(value)
    })
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One cell of the election grid, measured over every seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElectionRow {
    /// The lease TTL, s.
    pub lease_ttl_s: f64,
    /// `renew_interval / lease_ttl`.
    pub renew_ratio: f64,
    /// `safety_margin / lease_ttl`.
    pub margin_ratio: f64,
    /// The renew interval, s.
    pub renew_interval_s: f64,
    /// The safety margin, s.
    pub safety_margin_s: f64,
    /// The retry interval, s.
    pub retry_interval_s: f64,
    /// Seeds run.
    pub seeds: u64,
    /// Virtual hours simulated in all.
    pub hours: f64,
    /// Hand-overs of the writes from one process to another.
    pub failovers: u64,
    /// Median failover gap (last accepted write of the old leader to the
    /// first of the new), s; `None` without failovers.
    pub gap_p50_s: Option<f64>,
    /// 99th-percentile failover gap, s.
    pub gap_p99_s: Option<f64>,
    /// Leader changes per hour: how twitchy the setting is.
    pub leader_changes_per_hour: f64,
    /// Terms lost while the leader and the store were healthy (no fault
    /// within one TTL; loss only), per hour.
    pub spurious_per_hour: f64,
    /// Fraction of the time no process believed it led.
    pub leaderless_fraction: f64,
    /// Fraction of the time two processes believed they led.
    pub overlap_fraction: f64,
    /// Writes the downstream rejected (stale tokens fencing caught: each
    /// would have been a split-brain write without fencing).
    pub rejected_writes: u64,
    /// The same, per hour.
    pub rejected_per_hour: f64,
    /// Accepted writes over the writes a never-failing leader would make.
    pub write_availability: f64,
    /// Invariant violations (must be 0).
    pub violations: u64,
}

/// A cell left out of a sweep, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The cell, as `lease_ttl=…, renew_ratio=…` or similar.
    pub cell: String,
    /// Why it was skipped.
    pub reason: String,
}

/// A sweep's results: the faults, the grid, one row per cell run (in grid
/// order) and the cells left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep<G: Grid> {
    /// The faults.
    pub mix: FaultMix,
    /// The grid.
    pub grid: G,
    /// The seeds every cell ran.
    pub seeds: Seeds,
    /// One row per cell run, in grid order.
    pub rows: Vec<G::Row>,
    /// Cells left out, and why.
    pub skipped: Vec<Skipped>,
}

/// The election sweep's results.
pub type ElectionSweep = Sweep<ElectionGrid>;
/// The membership sweep's results.
pub type MembershipSweep = Sweep<MembershipGrid>;

/// A grid of settings, as far as the outputs of its sweep are concerned.
pub trait Grid: Sized {
    /// One measured cell.
    type Row: Serialize + std::fmt::Debug + Clone + PartialEq;
    /// `election` or `membership`.
    const KIND: &'static str;
    /// The CSV header: field names of [`Self::Row`].
    const CSV_HEADER: &'static str;
    /// The grid, for the JSON output.
    fn to_json(&self) -> serde_json::Value;
    /// The chart of a sweep over this grid.
    fn chart(sweep: &Sweep<Self>, command: &str) -> String;
    /// A row's invariant violations.
    fn violations(row: &Self::Row) -> u64;
}

/// What every sweep's results can be turned into.
pub trait SweepResults {
    /// One header line and one line per row.
    fn to_csv(&self) -> String;
    /// One JSON object: the mix, the grid, the rows and the skipped cells.
    fn to_json(&self) -> serde_json::Value;
    /// The chart; `command` is the command line shown in its title.
    fn to_svg(&self, command: &str) -> String;
    /// Invariant violations over every run (0 unless something is broken).
    fn violations(&self) -> u64;
    /// The cells left out.
    fn skipped(&self) -> &[Skipped];
    /// Runs made (rows × seeds).
    fn runs(&self) -> u64;
}

/// How a sweep runs: the faults, the seeds, the threads.
struct Run<'a> {
    mix: &'a FaultMix,
    seeds: Seeds,
    jobs: usize,
    progress: &'a (dyn Fn() + Sync),
}

impl Run<'_> {
    /// Runs every seed of every cell (`configure` sets a cell's settings on
    /// the mix's scenario) with `jobs` threads, and measures each cell over
    /// its seeds with `row`. Runs are generated lazily and folded into their
    /// cell's totals as they finish, so memory does not grow with the number
    /// of seeds.
    fn sweep<G: Grid + Clone, C: Sync>(
        &self,
        grid: &G,
        cells: &[C],
        skipped: Vec<Skipped>,
        configure: &(dyn Fn(&C, &mut Scenario) + Sync),
        row: &dyn Fn(&C, &CellTotals) -> G::Row,
    ) -> Result<Sweep<G>, String> {
        self.seeds.check()?;
        let seeds = self.seeds.iter();
        let runs = (0..cells.len()).flat_map(move |c| seeds.clone().map(move |s| (c, s)));
        let mut totals: Vec<CellTotals> = vec![CellTotals::default(); cells.len()];
        // No more threads than runs.
        let total = (cells.len() as u64).saturating_mul(self.seeds.count);
        let jobs = self.jobs.min(usize::try_from(total).unwrap_or(usize::MAX));
        crate::parallel::stream(
            runs,
            jobs,
            &|(c, seed)| {
                let mut scenario = self.mix.scenario(seed);
                configure(&cells[c], &mut scenario);
                (c, run_one(&scenario))
            },
            self.progress,
            &mut |(c, stats)| {
                totals[c].add(stats?);
                Ok(())
            },
        )
        .map_err(|e| match e {
            crate::parallel::StreamError::Spawn(e) => e.to_string(),
            crate::parallel::StreamError::Sink(e) => e,
        })?;
        Ok(Sweep {
            mix: self.mix.clone(),
            grid: grid.clone(),
            seeds: self.seeds,
            rows: cells.iter().zip(&totals).map(|(c, t)| row(c, t)).collect(),
            skipped,
        })
    }
}

/// Runs every valid cell of `grid` over `seeds` of `mix` with `jobs`
/// threads, calling `progress` after each run. Cells whose settings the
/// elector refuses are skipped.
///
/// # Errors
/// The mix or grid is invalid.
pub fn run_election(
    mix: &FaultMix,
    grid: &ElectionGrid,
    seeds: Seeds,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<ElectionSweep, String> {
    mix.validate()?;
    grid.validate()?;
    let mut cells = Vec::new();
    let mut skipped = Vec::new();
    for cell in grid.cells() {
        // The cell's settings are checked without the faults: they do not
        // depend on them, and a long schedule is costly to draw per cell.
        let mut probe = mix.scenario_without_faults(seeds.start);
        cell.apply(&mut probe);
        match probe.validate() {
            Ok(()) => cells.push(cell),
            Err(e) => skipped.push(Skipped {
                cell: format!(
                    "lease_ttl={}, renew_ratio={}, margin_ratio={}",
                    human(cell.lease_ttl),
                    cell.renew_ratio,
                    cell.margin_ratio
                ),
                reason: e.to_string(),
            }),
        }
    }
    if cells.is_empty() {
        return Err(every_cell_skipped(&skipped));
    }
    let run = Run {
        mix,
        seeds,
        jobs,
        progress,
    };
    run.sweep(
        grid,
        &cells,
        skipped,
        &|cell, scenario| cell.apply(scenario),
        &|cell, runs| election_row(cell, mix, runs),
    )
}

/// The error of a sweep that has no cell left to run: every reason, once.
fn every_cell_skipped(skipped: &[Skipped]) -> String {
    let mut reasons: Vec<&str> = skipped.iter().map(|s| s.reason.as_str()).collect();
    reasons.sort_unstable();
    reasons.dedup();
    format!(
        "every cell of the grid ({}) was skipped, so nothing would run: {}",
        skipped.len(),
        reasons.join("; ")
    )
}

fn election_row(cell: &ElectionCell, mix: &FaultMix, t: &CellTotals) -> ElectionRow {
    let mut scenario = Scenario::new("row", mix.duration);
    cell.apply(&mut scenario);
    let e = &scenario.election;
    let total_ms = t.virtual_ms;
    let hours = total_ms as f64 / 3_600_000.0;
    let per_hour = |n: u64| if hours > 0.0 { n as f64 / hours } else { 0.0 };
    let fraction = |ms: u64| {
        if total_ms > 0 {
            ms as f64 / total_ms as f64
        } else {
            0.0
        }
    };
    let expected_writes = total_ms as f64 / scenario.work.write_interval.as_millis().max(1) as f64;
    ElectionRow {
        lease_ttl_s: round3(cell.lease_ttl.as_secs_f64()),
        renew_ratio: cell.renew_ratio,
        margin_ratio: cell.margin_ratio,
        renew_interval_s: round3(e.renew_interval.as_secs_f64()),
        safety_margin_s: round3(e.effective_safety_margin().as_secs_f64()),
        retry_interval_s: round3(e.retry_interval.as_secs_f64()),
        seeds: t.runs,
        hours: round3(hours),
        failovers: t.failovers,
        gap_p50_s: t.gap_percentile(50.0).map(|ms| ms as f64 / 1000.0),
        gap_p99_s: t.gap_percentile(99.0).map(|ms| ms as f64 / 1000.0),
        leader_changes_per_hour: round3(per_hour(t.leader_changes)),
        spurious_per_hour: round3(per_hour(t.spurious)),
        leaderless_fraction: round6(fraction(t.leaderless_ms)),
        overlap_fraction: round6(fraction(t.overlap_ms)),
        rejected_writes: t.rejected,
        rejected_per_hour: round3(per_hour(t.rejected)),
        write_availability: if expected_writes > 0.0 {
            round6(t.accepted as f64 / expected_writes)
        } else {
            0.0
        },
        violations: t.violations,
    }
}

/// One cell of the membership grid, measured over every seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MembershipRow {
    /// How long the registry keeps a silent node, s.
    pub liveness_ttl_s: f64,
    /// How often each node heartbeats, s.
    pub heartbeat_interval_s: f64,
    /// Heartbeats a node may miss before it is dropped
    /// (`liveness_ttl / heartbeat_interval`).
    pub misses_tolerated: f64,
    /// Seeds run.
    pub seeds: u64,
    /// Node-hours simulated in all.
    pub node_hours: f64,
    /// Nodes dropped from the live set (true and false).
    pub leaves: u64,
    /// Nodes dropped while a process of theirs was running (not paused, not
    /// crashed): a false "node down".
    pub false_leaves: u64,
    /// False "node down" verdicts per node-hour.
    pub false_leaves_per_node_hour: f64,
    /// All leaves per node-hour.
    pub leaves_per_node_hour: f64,
    /// Nodes that left and came back, per node-hour.
    pub flaps_per_node_hour: f64,
    /// Invariant violations (must be 0).
    pub violations: u64,
}

/// Runs every cell of `grid` over `seeds` of `mix` (with the default
/// election settings) with `jobs` threads. Cells whose heartbeat is not
/// below the liveness TTL are skipped.
///
/// # Errors
/// The mix or grid is invalid.
pub fn run_membership(
    mix: &FaultMix,
    grid: &MembershipGrid,
    seeds: Seeds,
    jobs: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<MembershipSweep, String> {
    mix.validate()?;
    grid.validate()?;
    let cells = grid.cells();
    let mut skipped = Vec::new();
    for &ttl in &grid.liveness_ttls {
        for &hb in &grid.heartbeats {
            if hb >= ttl {
                skipped.push(Skipped {
                    cell: format!("liveness_ttl={}, heartbeat={}", human(ttl), human(hb)),
                    reason: "the heartbeat interval is not below the liveness TTL: every node would flap".into(),
                });
            }
        }
    }
    let run = Run {
        mix,
        seeds,
        jobs,
        progress,
    };
    run.sweep(
        grid,
        &cells,
        skipped,
        &|&(ttl, hb), scenario| {
            scenario.membership.liveness_ttl = ttl;
            scenario.membership.heartbeat_interval = hb;
        },
        &|&(ttl, hb), runs| membership_row(ttl, hb, mix.nodes, runs),
    )
}

fn membership_row(ttl: Duration, hb: Duration, nodes: usize, t: &CellTotals) -> MembershipRow {
    let node_hours = t.virtual_ms as f64 / 3_600_000.0 * nodes as f64;
    let per = |n: u64| {
        if node_hours > 0.0 {
            round3(n as f64 / node_hours)
        } else {
            0.0
        }
    };
    MembershipRow {
        liveness_ttl_s: round3(ttl.as_secs_f64()),
        heartbeat_interval_s: round3(hb.as_secs_f64()),
        misses_tolerated: round3(ttl.as_secs_f64() / hb.as_secs_f64()),
        seeds: t.runs,
        node_hours: round3(node_hours),
        leaves: t.leaves,
        false_leaves: t.false_leaves,
        false_leaves_per_node_hour: per(t.false_leaves),
        leaves_per_node_hour: per(t.leaves),
        flaps_per_node_hour: per(t.flaps),
        violations: t.violations,
    }
}

// ----- output -----

/// The CSV header of the election sweep (the fields of [`ElectionRow`]).
pub const ELECTION_CSV_HEADER: &str = "lease_ttl_s,renew_ratio,margin_ratio,renew_interval_s,safety_margin_s,retry_interval_s,seeds,hours,failovers,gap_p50_s,gap_p99_s,leader_changes_per_hour,spurious_per_hour,leaderless_fraction,overlap_fraction,rejected_writes,rejected_per_hour,write_availability,violations";

/// The CSV header of the membership sweep (the fields of
/// [`MembershipRow`]).
pub const MEMBERSHIP_CSV_HEADER: &str = "liveness_ttl_s,heartbeat_interval_s,misses_tolerated,seeds,node_hours,leaves,false_leaves,false_leaves_per_node_hour,leaves_per_node_hour,flaps_per_node_hour,violations";

/// `header`, then one line per row with the row's fields of those names
/// (empty for `None`).
fn csv<R: Serialize>(header: &str, rows: &[R]) -> String {
    let mut out = format!("{header}\n");
    for row in rows {
        let value = serde_json::to_value(row).unwrap_or_default();
        let cells: Vec<String> = header
            .split(',')
            .map(|key| match &value[key] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

fn seconds(list: &[Duration]) -> Vec<f64> {
    list.iter().map(Duration::as_secs_f64).collect()
}

impl<G: Grid> SweepResults for Sweep<G> {
    fn to_csv(&self) -> String {
        csv(G::CSV_HEADER, &self.rows)
    }

    fn to_json(&self) -> serde_json::Value {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let every = |d: Option<Duration>| d.map(ms);
        let mix = &self.mix;
        serde_json::json!({
            "sweep": G::KIND,
            "mix": {
                "description": mix.describe(),
                "nodes": mix.nodes,
                "duration_ms": ms(mix.duration),
                "pause_every_ms": every(mix.pause_every),
                "pause_length": mix.pause_length.to_string(),
                "crash_every_ms": every(mix.crash_every),
                "restart_after": mix.restart_after.to_string(),
                "spike_every_ms": every(mix.spike_every),
                "spike_length": mix.spike_length.to_string(),
                "loss": mix.loss,
            },
            "seeds": {"start": self.seeds.start, "count": self.seeds.count},
            "grid": self.grid.to_json(),
            "rows": self.rows,
            "skipped": self.skipped,
        })
    }

    fn to_svg(&self, command: &str) -> String {
        G::chart(self, command)
    }

    fn violations(&self) -> u64 {
        self.rows.iter().map(G::violations).sum()
    }

    fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    fn runs(&self) -> u64 {
        (self.rows.len() as u64).saturating_mul(self.seeds.count)
    }
}

impl Grid for ElectionGrid {
    type Row = ElectionRow;
    const KIND: &'static str = "election";
    const CSV_HEADER: &'static str = ELECTION_CSV_HEADER;

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "lease_ttls_s": seconds(&self.ttls),
            "renew_ratios": self.renew_ratios,
            "margin_ratios": self.margin_ratios,
            "retry_ratio": self.retry_ratio,
        })
    }

    fn chart(sweep: &Sweep<Self>, command: &str) -> String {
        sweep.chart(command)
    }

    fn violations(row: &ElectionRow) -> u64 {
        row.violations
    }
}

impl Grid for MembershipGrid {
    type Row = MembershipRow;
    const KIND: &'static str = "membership";
    const CSV_HEADER: &'static str = MEMBERSHIP_CSV_HEADER;

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "liveness_ttls_s": seconds(&self.liveness_ttls),
            "heartbeat_intervals_s": seconds(&self.heartbeats),
        })
    }

    fn chart(sweep: &Sweep<Self>, command: &str) -> String {
        sweep.chart(command)
    }

    fn violations(row: &MembershipRow) -> u64 {
        row.violations
    }
}

// ----- charts -----

/// A heat-map panel: one metric over the grid.
struct Panel<'a> {
    title: &'a str,
    hint: &'a str,
    /// Column labels (left to right) and row labels (top to bottom).
    cols: &'a [String],
    rows: &'a [String],
    col_title: &'a str,
    row_title: &'a str,
    /// `values[row][col]`; `None`: no data; the outer `None`: skipped cell.
    values: Vec<Vec<Option<Option<f64>>>>,
    format: &'a dyn Fn(f64) -> String,
}

const CHART_W: f64 = 1200.0;
const CELL_W: f64 = 56.0;
const CELL_H: f64 = 28.0;
const ROW_LABEL_W: f64 = 64.0;
const INK: &str = "#222222";
const MUTED: &str = "#666666";

/// Yellow → orange → red → dark red: light is better for every metric here.
const HEAT: [(f64, f64, f64); 5] = [
    (255.0, 255.0, 204.0),
    (254.0, 217.0, 118.0),
    (253.0, 141.0, 60.0),
    (227.0, 26.0, 28.0),
    (128.0, 0.0, 38.0),
];

fn heat(t: f64) -> String {
    let t = t.clamp(0.0, 1.0) * (HEAT.len() - 1) as f64;
    let i = (t.floor() as usize).min(HEAT.len() - 2);
    let f = t - i as f64;
    let (a, b) = (HEAT[i], HEAT[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// Maps values onto `[0, 1]`: logarithmically when they span more than a
/// factor of ten (and are positive), linearly otherwise.
fn normaliser(values: &[f64]) -> impl Fn(f64) -> f64 {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let positive_lo = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = positive_lo.is_finite() && hi / positive_lo > 10.0;
    move |v: f64| {
        if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
            return 0.0;
        }
        if log {
            let v = v.max(positive_lo);
            libm::log(v / positive_lo) / libm::log(hi / positive_lo)
        } else {
            (v - lo) / (hi - lo)
        }
    }
}

fn panel_size(p: &Panel<'_>) -> (f64, f64) {
    (
        ROW_LABEL_W + CELL_W * p.cols.len() as f64,
        44.0 + CELL_H * p.rows.len() as f64 + 34.0,
    )
}

fn draw_panel(doc: &mut Doc, x: f64, y: f64, p: &Panel<'_>, class: &str) {
    doc.open(
        &format!("panel {class}"),
        &format!(" data-metric=\"{}\"", esc(class)),
    );
    doc.text(
        x,
        y + 14.0,
        &format!("class=\"panel-title\" font-size=\"13\" font-weight=\"bold\" fill=\"{INK}\""),
        p.title,
    );
    doc.text(
        x,
        y + 29.0,
        &format!("font-size=\"10.5\" fill=\"{MUTED}\""),
        p.hint,
    );
    let gx = x + ROW_LABEL_W;
    let gy = y + 44.0;
    let known: Vec<f64> = p
        .values
        .iter()
        .flatten()
        .filter_map(|v| v.flatten())
        .collect();
    let norm = normaliser(&known);
    for (r, row) in p.values.iter().enumerate() {
        let cy = gy + r as f64 * CELL_H;
        doc.text(
            gx - 6.0,
            cy + CELL_H / 2.0 + 4.0,
            &format!("font-size=\"11\" text-anchor=\"end\" fill=\"{INK}\""),
            &p.rows[r],
        );
        for (c, value) in row.iter().enumerate() {
            let cx = gx + c as f64 * CELL_W;
            let (fill, text, text_fill) = match value {
                None => ("#eeeeee".to_string(), "n/a".to_string(), MUTED),
                Some(None) => ("#f4f4f4".to_string(), "–".to_string(), MUTED),
                Some(Some(v)) => {
                    let t = norm(*v);
                    (
                        heat(t),
                        (p.format)(*v),
                        if t > 0.62 { "#ffffff" } else { INK },
                    )
                }
            };
            doc.rect(
                cx,
                cy,
                CELL_W - 2.0,
                CELL_H - 2.0,
                &format!(
                    "class=\"cell\" data-row=\"{}\" data-col=\"{}\" fill=\"{fill}\"",
                    esc(&p.rows[r]),
                    esc(&p.cols[c])
                ),
                Some(&format!(
                    "{}: {} at {} = {}, {} = {}",
                    p.title, text, p.col_title, p.cols[c], p.row_title, p.rows[r]
                )),
            );
            doc.text(
                cx + (CELL_W - 2.0) / 2.0,
                cy + CELL_H / 2.0 + 3.0,
                &format!(
                    "font-size=\"11\" font-family=\"{MONO}\" text-anchor=\"middle\" fill=\"{text_fill}\""
                ),
                &text,
            );
        }
    }
    let by = gy + CELL_H * p.rows.len() as f64;
    for (c, label) in p.cols.iter().enumerate() {
        doc.text(
            gx + c as f64 * CELL_W + (CELL_W - 2.0) / 2.0,
            by + 12.0,
            &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\""),
            label,
        );
    }
    doc.text(
        gx + CELL_W * p.cols.len() as f64 / 2.0,
        by + 27.0,
        &format!("font-size=\"10.5\" text-anchor=\"middle\" fill=\"{MUTED}\""),
        p.col_title,
    );
    doc.text(
        gx - 6.0,
        gy + CELL_H * p.rows.len() as f64 + 12.0,
        &format!("font-size=\"10.5\" text-anchor=\"end\" fill=\"{MUTED}\""),
        &format!("{} ↑", p.row_title),
    );
    doc.close();
}

fn fmt_secs(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}s")
    } else {
        format!("{v:.1}s")
    }
}

fn fmt_rate(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn fmt_percent(v: f64) -> String {
    format!("{}%", fmt_rate(v * 100.0))
}

fn ttl_label(s: f64) -> String {
    crate::svg::time_label((s * 1e9).round() as u64)
}

/// Header lines of a sweep chart (long lines wrap); returns the y below
/// them.
fn chart_header(doc: &mut Doc, title: &str, lines: &[(String, bool)]) -> f64 {
    doc.text(
        30.0,
        32.0,
        &format!("class=\"title\" font-size=\"20\" font-weight=\"bold\" fill=\"{INK}\""),
        title,
    );
    let mut y = 34.0;
    for (line, mono) in lines {
        let attrs = if *mono {
            format!("font-size=\"12\" font-family=\"{MONO}\" fill=\"{INK}\"")
        } else {
            format!("font-size=\"12\" fill=\"{MUTED}\"")
        };
        for part in wrap(line, 12.0, CHART_W - 50.0, *mono) {
            y += 18.0;
            doc.text(30.0, y, &attrs, &part);
        }
    }
    y + 16.0
}

type Metric<'m> = (
    &'m str,
    &'m str,
    &'m str,
    &'m dyn Fn(&ElectionRow) -> Option<f64>,
    &'m dyn Fn(f64) -> String,
);

/// The width, height, panels per row and horizontal gap of a panel grid.
fn panel_layout(cols: &[String], rows: &[String], max_per_row: usize) -> (f64, f64, usize, f64) {
    let probe = Panel {
        title: "",
        hint: "",
        cols,
        rows,
        col_title: "",
        row_title: "",
        values: Vec::new(),
        format: &fmt_rate,
    };
    let (pw, ph) = panel_size(&probe);
    let per_row = (((CHART_W - 60.0 + 36.0) / (pw + 36.0)).floor() as usize).clamp(1, max_per_row);
    let gap_x = if per_row > 1 {
        ((CHART_W - 60.0 - pw * per_row as f64) / (per_row as f64 - 1.0)).min(60.0)
    } else {
        0.0
    };
    (pw, ph, per_row, gap_x)
}

impl ElectionSweep {
    /// The chart: one heat map per metric (TTL across, renew ratio down; a
    /// block per safety margin) and a scatter of median failover gap against
    /// leader changes per hour, one line per renew ratio. `command` is the
    /// command line shown in the title.
    fn chart(&self, command: &str) -> String {
        let cols: Vec<String> = self
            .grid
            .ttls
            .iter()
            .map(|d| ttl_label(d.as_secs_f64()))
            .collect();
        let rows: Vec<String> = self
            .grid
            .renew_ratios
            .iter()
            .map(|r| format!("{r}"))
            .collect();
        let place = |r: &ElectionRow| {
            (
                self.grid
                    .renew_ratios
                    .iter()
                    .position(|x| *x == r.renew_ratio),
                self.grid
                    .ttls
                    .iter()
                    .position(|d| round3(d.as_secs_f64()) == r.lease_ttl_s),
            )
        };
        let metrics: [Metric<'_>; 6] = [
            (
                "gap-p50",
                "Median failover gap",
                "last write of the old leader → first of the new",
                &|r| r.gap_p50_s,
                &fmt_secs,
            ),
            (
                "gap-p99",
                "p99 failover gap",
                "the slow tail of recovery",
                &|r| r.gap_p99_s,
                &fmt_secs,
            ),
            (
                "leader-changes",
                "Leader changes per hour",
                "twitchiness: every change is a failover",
                &|r| Some(r.leader_changes_per_hour),
                &fmt_rate,
            ),
            (
                "spurious",
                "Spurious failovers per hour",
                "leader lost with no fault near it (message loss)",
                &|r| Some(r.spurious_per_hour),
                &fmt_rate,
            ),
            (
                "leaderless",
                "Leaderless time",
                "share of time nobody believes it leads",
                &|r| Some(r.leaderless_fraction),
                &fmt_percent,
            ),
            (
                "rejected",
                "Stale writes fenced per hour",
                "each a split-brain write without fencing",
                &|r| Some(r.rejected_per_hour),
                &fmt_rate,
            ),
        ];
        let (pw, ph, per_row, gap_x) = panel_layout(&cols, &rows, 6);
        let panel_rows = metrics.len().div_ceil(per_row);
        let block_h = 30.0 + panel_rows as f64 * (ph + 14.0);
        let mut lines = vec![
            (
                format!(
                    "{} seeds × {} × {} nodes per cell, the same faults in every cell · retry every {} × TTL · fencing on · light is better in every panel",
                    self.seeds.count,
                    human(self.mix.duration),
                    self.mix.nodes,
                    self.grid.retry_ratio
                ),
                false,
            ),
            (format!("Faults: {}.", self.mix.describe()), false),
            (format!("$ {command}"), true),
        ];
        lines.extend(self.summary().into_iter().map(|s| (s, false)));
        // Measure the header by drawing it into a scratch document.
        let header_h = chart_header(&mut Doc::new(1.0, 1.0, ""), "", &lines);
        let scatter_h = 340.0;
        let height = header_h + self.grid.margin_ratios.len() as f64 * block_h + scatter_h + 16.0;
        let mut doc = Doc::new(CHART_W, height, "Lease TTL trade-off");
        let mut y = chart_header(&mut doc, "Lease TTL: fast failover vs. twitchiness", &lines);
        for &margin in &self.grid.margin_ratios {
            y += 8.0;
            doc.text(
                30.0,
                y + 4.0,
                &format!(
                    "class=\"block-title\" font-size=\"13\" font-weight=\"bold\" fill=\"{INK}\""
                ),
                &format!("safety margin = {margin} × TTL"),
            );
            y += 18.0;
            for (m, (class, title, hint, get, format)) in metrics.iter().enumerate() {
                let mut values = vec![vec![None; cols.len()]; rows.len()];
                for r in self.rows.iter().filter(|r| r.margin_ratio == margin) {
                    if let (Some(ri), Some(ci)) = place(r) {
                        values[ri][ci] = Some(get(r));
                    }
                }
                let panel = Panel {
                    title,
                    hint,
                    cols: &cols,
                    rows: &rows,
                    col_title: "lease_ttl →",
                    row_title: "renew ÷ ttl",
                    values,
                    format: *format,
                };
                let px = 30.0 + (m % per_row) as f64 * (pw + gap_x);
                let py = y + (m / per_row) as f64 * (ph + 14.0);
                draw_panel(&mut doc, px, py, &panel, class);
            }
            y += panel_rows as f64 * (ph + 14.0) + 4.0;
        }
        self.scatter(&mut doc, 30.0, y, CHART_W - 60.0, scatter_h - 10.0);
        doc.finish()
    }

    /// What the sweep shows, in a sentence or two: the shortest against the
    /// longest TTL at the lowest renew ratio, and the spurious failovers of
    /// the highest renew ratio.
    pub fn summary(&self) -> Option<String> {
        let ratio = self
            .grid
            .renew_ratios
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let top = self
            .grid
            .renew_ratios
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let margin = *self.grid.margin_ratios.first()?;
        let at = |ratio: f64| -> Vec<&ElectionRow> {
            self.rows
                .iter()
                .filter(|r| r.renew_ratio == ratio && r.margin_ratio == margin)
                .collect()
        };
        let low = at(ratio);
        let (short, long) = (low.first()?, low.last()?);
        if short.lease_ttl_s == long.lease_ttl_s {
            return None;
        }
        let mut text = format!(
            "At renew = {ratio} × TTL, TTL {} fails over in {} (median) but changes leader {} times an hour; TTL {} takes {} with {}/h and is leaderless {} of the time (vs {}).",
            ttl_label(short.lease_ttl_s),
            fmt_secs(short.gap_p50_s?),
            fmt_rate(short.leader_changes_per_hour),
            ttl_label(long.lease_ttl_s),
            fmt_secs(long.gap_p50_s?),
            fmt_rate(long.leader_changes_per_hour),
            fmt_percent(long.leaderless_fraction),
            fmt_percent(short.leaderless_fraction),
        );
        if let Some(worst) = at(top)
            .into_iter()
            .filter(|r| r.spurious_per_hour > 0.0)
            .max_by(|a, b| a.spurious_per_hour.total_cmp(&b.spurious_per_hour))
        {
            if top > ratio {
                let _ = write!(
                    text,
                    " Renewing at {top} × TTL leaves no room for one lost renewal: {} spurious failovers/h at TTL {}.",
                    fmt_rate(worst.spurious_per_hour),
                    ttl_label(worst.lease_ttl_s)
                );
            }
        }
        Some(text)
    }

    fn scatter(&self, doc: &mut Doc, x: f64, y: f64, w: f64, h: f64) {
        let points: Vec<(usize, f64, f64)> = self
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                r.gap_p50_s
                    .map(|g| (i, g.max(0.001), r.leader_changes_per_hour.max(0.01)))
            })
            .collect();
        doc.open("scatter", "");
        doc.text(
            x,
            y + 14.0,
            &format!("class=\"panel-title\" font-size=\"13\" font-weight=\"bold\" fill=\"{INK}\""),
            "The trade-off: median failover gap against leader changes per hour",
        );
        doc.text(
            x,
            y + 29.0,
            &format!("font-size=\"10.5\" fill=\"{MUTED}\""),
            "one dot per setting, colour = lease_ttl; one line per renew ratio (and margin), TTL growing left to right · log scales",
        );
        if points.is_empty() {
            doc.text(
                x,
                y + 60.0,
                &format!("font-size=\"12\" fill=\"{MUTED}\""),
                "no failovers: nothing to plot",
            );
            doc.close();
            return;
        }
        let (px, py, pw, ph) = (x + 56.0, y + 42.0, w - 170.0, h - 82.0);
        let range = |v: &mut dyn Iterator<Item = f64>| {
            let all: Vec<f64> = v.collect();
            let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            nice_log_range(lo, hi)
        };
        let (x0, x1) = range(&mut points.iter().map(|p| p.1));
        let (y0, y1) = range(&mut points.iter().map(|p| p.2));
        let sx = |v: f64| px + libm::log(v / x0) / libm::log(x1 / x0) * pw;
        let sy = |v: f64| py + ph - libm::log(v / y0) / libm::log(y1 / y0) * ph;
        doc.rect(px, py, pw, ph, "fill=\"#fafafa\" stroke=\"#cccccc\"", None);
        for t in log_ticks(x0, x1) {
            let gx = sx(t);
            doc.line(gx, py, gx, py + ph, "stroke=\"#e6e6e6\"", None);
            doc.text(
                gx,
                py + ph + 14.0,
                &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{MUTED}\""),
                &fmt_secs(t),
            );
        }
        for t in log_ticks(y0, y1) {
            let gy = sy(t);
            doc.line(px, gy, px + pw, gy, "stroke=\"#e6e6e6\"", None);
            doc.text(
                px - 6.0,
                gy + 4.0,
                &format!("font-size=\"11\" text-anchor=\"end\" fill=\"{MUTED}\""),
                &fmt_rate(t),
            );
        }
        doc.text(
            px + pw / 2.0,
            py + ph + 30.0,
            &format!("font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\""),
            "median failover gap — slower to recover →",
        );
        doc.raw(&format!(
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{INK}\" transform=\"rotate(-90 {} {})\">leader changes per hour — twitchier →</text>",
            num(x + 12.0),
            num(py + ph / 2.0),
            num(x + 12.0),
            num(py + ph / 2.0)
        ));
        doc.text(
            px + 8.0,
            py + ph - 8.0,
            "font-size=\"11\" font-style=\"italic\" fill=\"#2a7a3a\"",
            "↙ better: fast and calm",
        );
        // One line per (renew ratio, margin), through its TTLs in order;
        // labels right of the plot, spread apart, with a leader line.
        let many_margins = self.grid.margin_ratios.len() > 1;
        let mut labels: Vec<(f64, f64, String, &str)> = Vec::new();
        for &margin in &self.grid.margin_ratios {
            for (k, &ratio) in self.grid.renew_ratios.iter().enumerate() {
                let line: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|(i, _, _)| {
                        let r = &self.rows[*i];
                        r.renew_ratio == ratio && r.margin_ratio == margin
                    })
                    .map(|&(_, g, c)| (sx(g), sy(c)))
                    .collect();
                let Some(&(lx, ly)) = line.last() else {
                    continue;
                };
                let shade = RATIO_SHADES[k % RATIO_SHADES.len()];
                let d: Vec<String> = line
                    .iter()
                    .enumerate()
                    .map(|(j, &(a, b))| {
                        format!("{}{} {}", if j == 0 { "M" } else { "L" }, num(a), num(b))
                    })
                    .collect();
                doc.raw(&format!(
                    "<path class=\"ratio-line\" data-renew-ratio=\"{ratio}\" d=\"{}\" fill=\"none\" stroke=\"{shade}\" stroke-width=\"1.6\"{}/>",
                    d.join(" "),
                    if k % 2 == 1 { " stroke-dasharray=\"5 3\"" } else { "" }
                ));
                let label = if many_margins {
                    format!("renew {ratio} × TTL, margin {margin}")
                } else {
                    format!("renew {ratio} × TTL")
                };
                labels.push((lx, ly, label, shade));
            }
        }
        labels.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut ys: Vec<f64> = Vec::with_capacity(labels.len());
        for (_, ly, _, _) in &labels {
            let min = ys.last().map_or(py + 30.0, |y| y + 14.0);
            ys.push(ly.max(min));
        }
        let overflow = ys.last().map_or(0.0, |y| (y - (py + ph)).max(0.0));
        for ((lx, ly, label, shade), ty) in labels.iter().zip(ys) {
            let ty = ty - overflow;
            doc.raw(&format!(
                "<path d=\"M{} {} L{} {} L{} {}\" fill=\"none\" stroke=\"{shade}\" stroke-width=\"0.8\" stroke-dasharray=\"1 2\"/>",
                num(lx + 6.0),
                num(*ly),
                num(px + pw + 4.0),
                num(ty),
                num(px + pw + 10.0),
                num(ty)
            ));
            doc.text(
                px + pw + 13.0,
                ty + 4.0,
                &format!("class=\"ratio-label\" font-size=\"11\" fill=\"{shade}\""),
                label,
            );
        }
        let ttls = &self.grid.ttls;
        let colour = |ttl: f64| {
            let i = ttls
                .iter()
                .position(|d| round3(d.as_secs_f64()) == ttl)
                .unwrap_or(0);
            ttl_colour(if ttls.len() > 1 {
                i as f64 / (ttls.len() - 1) as f64
            } else {
                0.5
            })
        };
        for &(i, g, c) in &points {
            let r = &self.rows[i];
            doc.raw(&format!(
                "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"5.5\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1.2\"><title>TTL {} · renew {} × TTL · margin {} × TTL: median gap {}, {} leader changes/h</title></circle>",
                num(sx(g)),
                num(sy(c)),
                colour(r.lease_ttl_s),
                ttl_label(r.lease_ttl_s),
                r.renew_ratio,
                r.margin_ratio,
                fmt_secs(g),
                fmt_rate(c)
            ));
        }
        // TTL colour key, top right inside the plot.
        let mut kx = px + pw - 8.0;
        for (i, d) in ttls.iter().enumerate().rev() {
            let label = format!("TTL {}", ttl_label(d.as_secs_f64()));
            kx -= text_width(&label, 10.5, false) + 24.0;
            let t = if ttls.len() > 1 {
                i as f64 / (ttls.len() - 1) as f64
            } else {
                0.5
            };
            doc.raw(&format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"5.5\" fill=\"{}\"/>",
                num(kx + 6.0),
                num(py + 13.0),
                ttl_colour(t)
            ));
            doc.text(
                kx + 15.0,
                py + 17.0,
                &format!("font-size=\"10.5\" fill=\"{INK}\""),
                &label,
            );
        }
        doc.close();
    }
}

/// Line shades for renew ratios (dark to mid grey-blue; alternate lines are
/// dashed).
const RATIO_SHADES: [&str; 4] = ["#444444", "#7a4f9a", "#b35806", "#1b7837"];

/// Short TTLs light blue, long TTLs dark blue.
fn ttl_colour(t: f64) -> String {
    let (a, b) = ((120.0, 190.0, 230.0), (8.0, 48.0, 107.0));
    let mix = |x: f64, y: f64| (x + (y - x) * t.clamp(0.0, 1.0)).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// A log range covering `[lo, hi]` with a little room, at 1-2-5 steps.
fn nice_log_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-3);
    let hi = hi.max(lo * 1.5);
    let down = |v: f64| {
        let e = libm::pow(10.0, libm::floor(libm::log10(v)));
        [5.0, 2.0, 1.0]
            .iter()
            .map(|m| m * e)
            .find(|c| *c <= v / 1.15)
            .unwrap_or(e / 2.0)
    };
    let up = |v: f64| {
        let e = libm::pow(10.0, libm::floor(libm::log10(v)));
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * e)
            .find(|c| *c >= v * 1.15)
            .unwrap_or(e * 20.0)
    };
    (down(lo), up(hi))
}

/// 1-2-5 ticks inside `[lo, hi]`.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut e = libm::pow(10.0, libm::floor(libm::log10(lo)));
    while e <= hi * 1.0001 {
        for m in [1.0, 2.0, 5.0] {
            let t = m * e;
            if t >= lo * 0.9999 && t <= hi * 1.0001 {
                out.push(t);
            }
        }
        e *= 10.0;
    }
    out
}

impl MembershipSweep {
    /// The chart: false "node down" per node-hour and all leaves per
    /// node-hour over liveness TTL × heartbeat interval, with the detection
    /// bound each TTL implies. `command` is shown in the title.
    fn chart(&self, command: &str) -> String {
        let cols: Vec<String> = self
            .grid
            .liveness_ttls
            .iter()
            .map(|d| ttl_label(d.as_secs_f64()))
            .collect();
        let rows: Vec<String> = self
            .grid
            .heartbeats
            .iter()
            .map(|d| ttl_label(d.as_secs_f64()))
            .collect();
        let grid_of = |get: &dyn Fn(&MembershipRow) -> f64| {
            let mut values = vec![vec![None; cols.len()]; rows.len()];
            for r in &self.rows {
                let ci = self
                    .grid
                    .liveness_ttls
                    .iter()
                    .position(|d| round3(d.as_secs_f64()) == r.liveness_ttl_s);
                let ri = self
                    .grid
                    .heartbeats
                    .iter()
                    .position(|d| round3(d.as_secs_f64()) == r.heartbeat_interval_s);
                if let (Some(ri), Some(ci)) = (ri, ci) {
                    values[ri][ci] = Some(Some(get(r)));
                }
            }
            values
        };
        let panels = [
            (
                "false-leaves",
                "False \u{201c}node down\u{201d} per node-hour",
                "dropped while its process was running",
                grid_of(&|r| r.false_leaves_per_node_hour),
            ),
            (
                "leaves",
                "All \u{201c}node down\u{201d} per node-hour",
                "true (crashed, paused) and false",
                grid_of(&|r| r.leaves_per_node_hour),
            ),
            (
                "detection",
                "Time to notice a crash",
                "at most liveness_ttl (+ a heartbeat's latency)",
                grid_of(&|r| r.liveness_ttl_s),
            ),
        ];
        let (pw, ph, per_row, gap_x) = panel_layout(&cols, &rows, 3);
        let panel_rows = panels.len().div_ceil(per_row);
        let lines = vec![
            (
                format!(
                    "{} seeds × {} × {} nodes per cell, the same faults in every cell · election: lease_ttl 30s, renew every 10s · n/a: heartbeat not below the TTL",
                    self.seeds.count,
                    human(self.mix.duration),
                    self.mix.nodes
                ),
                false,
            ),
            (format!("Faults: {}.", self.mix.describe()), false),
            (format!("$ {command}"), true),
            (
                "A short liveness TTL notices a crash fast but declares healthy nodes down whenever heartbeats stall (lease-store stalls, lost messages).".to_string(),
                false,
            ),
        ];
        let header_h = chart_header(&mut Doc::new(1.0, 1.0, ""), "", &lines);
        let height = header_h + panel_rows as f64 * (ph + 14.0) + 10.0;
        let mut doc = Doc::new(CHART_W, height, "Membership trade-off");
        let y = chart_header(
            &mut doc,
            "Membership: fast detection vs. false \u{201c}node down\u{201d}",
            &lines,
        );
        for (m, (class, title, hint, values)) in panels.into_iter().enumerate() {
            let format: &dyn Fn(f64) -> String = if class == "detection" {
                &fmt_secs
            } else {
                &fmt_rate
            };
            let panel = Panel {
                title,
                hint,
                cols: &cols,
                rows: &rows,
                col_title: "liveness_ttl →",
                row_title: "heartbeat",
                values,
                format,
            };
            let px = 30.0 + (m % per_row) as f64 * (pw + gap_x);
            let py = y + (m / per_row) as f64 * (ph + 14.0);
            draw_panel(&mut doc, px, py, &panel, class);
        }
        doc.finish()
    }
}
