//! The fault mix every run of a sweep suffers ([`FaultMix`]), the
//! distributions of its fault lengths ([`Lengths`]), and how each seed's
//! faults are drawn and turned into a scenario.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;

use super::{LengthsError, MixError};
use crate::rng::{exponential, unit_f64, SeedDeriver};
use crate::scenario::{FaultSpec, Scenario, LEASE_STORE};
use crate::time::SimTime;
use crate::units::human;

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

/// One end of a length range, by the crate's one duration parser (with the
/// shorter "negative" message a range's error already explains).
fn parse_duration(text: &str) -> Result<Duration, LengthsError> {
    crate::units::parse_duration(text).map_err(LengthsError::Duration)
}

impl Lengths {
    /// Parses `LOW..HIGH` (log-uniform), `log:LOW..HIGH`, `uniform:LOW..HIGH`
    /// or one fixed duration: `log:100ms..60s`, `uniform:1s..5s`, `2s`.
    ///
    /// # Errors
    /// One sentence on what is wrong.
    pub fn parse(text: &str) -> Result<Self, LengthsError> {
        let (spread, range) = match text.split_once(':') {
            Some(("log", r)) => (Spread::LogUniform, r),
            Some(("uniform", r)) => (Spread::Uniform, r),
            Some((other, _)) => return Err(LengthsError::NotASpread(other.to_string())),
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
            return Err(LengthsError::Inverted(text.to_string()));
        }
        if high.is_zero() {
            return Err(LengthsError::Zero(text.to_string()));
        }
        if spread == Spread::LogUniform && low.is_zero() {
            return Err(LengthsError::LogFromZero(text.to_string()));
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
    pub fn validate(&self) -> Result<(), MixError> {
        if self.nodes == 0 || self.nodes > 100 {
            return Err(MixError::Nodes);
        }
        if self.duration < Duration::from_secs(1) {
            return Err(MixError::TooShort);
        }
        if self.duration > Duration::from_secs(30 * 24 * 3600) {
            return Err(MixError::TooLong);
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(MixError::Loss(self.loss));
        }
        for (flag, every) in [
            ("--pause-every", self.pause_every),
            ("--crash-every", self.crash_every),
            ("--spike-every", self.spike_every),
        ] {
            if every.is_some_and(|e| e < Duration::from_millis(100)) {
                return Err(MixError::TooOften(flag));
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
            return Err(MixError::TooManyFaults {
                expected,
                nodes: self.nodes,
                duration: self.duration,
                flag,
                every,
            });
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
        let end = self.duration;
        let root = SeedDeriver::new(seed, "sweep");
        let mut faults = Vec::new();
        let mut poisson =
            |rng: &mut ChaCha8Rng,
             every: Duration,
             lengths: &Lengths,
             make: &mut dyn FnMut(Duration, Duration) -> FaultSpec| {
                let mut t = SimTime::ZERO;
                loop {
                    t = t + exponential(rng, every);
                    if t.since_start() >= end {
                        break;
                    }
                    let length = lengths.draw(rng);
                    faults.push(make(t.since_start(), length));
                    t = t + length;
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
