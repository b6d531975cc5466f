//! Why a sweep cannot run: a bad grid ([`GridError`]), length range
//! ([`LengthsError`]) or fault mix ([`MixError`]), or a run that cannot be
//! measured ([`SweepError`]). Each prints the one sentence the CLI shows.

use std::time::Duration;

use crate::batch::SeedsError;
use crate::parallel::SpawnError;
use crate::units::{human, DurationError};
use crate::{Halted, ScenarioError};

/// What is wrong with an election or membership grid.
#[derive(Clone, Debug, PartialEq)]
pub enum GridError {
    /// The election grid lacks TTLs, renew ratios or margin ratios.
    NoElectionSetting,
    /// The membership grid lacks liveness TTLs or heartbeats.
    NoMembershipSetting,
    /// More than 400 cells.
    TooManyCells,
    /// A lease TTL outside 100 ms..=1 h.
    Ttl(Duration),
    /// A ratio (`flag`) not strictly between 0 and 1.
    Ratio {
        /// `--renew-ratios`, `--margin-ratios` or `--retry-ratio`.
        flag: &'static str,
        /// The ratio.
        value: f64,
    },
    /// A liveness TTL or heartbeat outside 10 ms..=1 h.
    Membership(Duration),
    /// Every heartbeat is at or above every liveness TTL.
    NoMembershipCell,
}

impl std::fmt::Display for GridError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GridError::NoElectionSetting => {
                f.write_str("the grid needs at least one TTL, renew ratio and margin ratio")
            }
            GridError::NoMembershipSetting => {
                f.write_str("the grid needs at least one liveness TTL and heartbeat")
            }
            GridError::TooManyCells => f.write_str("the grid has more than 400 cells"),
            GridError::Ttl(ttl) => {
                write!(f, "--ttls: {} must be between 100ms and 1h", human(*ttl))
            }
            GridError::Ratio { flag, value } => {
                write!(f, "{flag}: {value} must be between 0 and 1 (exclusive)")
            }
            GridError::Membership(d) => write!(
                f,
                "--liveness-ttls/--heartbeats: {} must be between 10ms and 1h",
                human(*d)
            ),
            GridError::NoMembershipCell => {
                f.write_str("every heartbeat is at or above every liveness TTL: no cell to run")
            }
        }
    }
}

impl std::error::Error for GridError {}

/// What is wrong with a length range (`--pause-lengths` and the like);
/// `text` is the range as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LengthsError {
    /// `SPREAD:` is neither `log` nor `uniform`.
    NotASpread(String),
    /// One end is not a duration.
    Duration(DurationError),
    /// `LOW` is above `HIGH`.
    Inverted(String),
    /// Every length would be zero.
    Zero(String),
    /// A log-uniform range from zero.
    LogFromZero(String),
}

impl std::fmt::Display for LengthsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LengthsError::NotASpread(other) => write!(
                f,
                "`{other}` is not a spread; use log:LOW..HIGH or uniform:LOW..HIGH"
            ),
            // The shorter "negative" message: a range's error already explains.
            LengthsError::Duration(DurationError::Negative { text }) => {
                write!(f, "`{text}` is negative")
            }
            LengthsError::Duration(invalid) => invalid.fmt(f),
            LengthsError::Inverted(text) => {
                write!(f, "`{text}`: the range is inverted; write LOW..HIGH")
            }
            LengthsError::Zero(text) => write!(f, "`{text}`: lengths must be greater than zero"),
            LengthsError::LogFromZero(text) => write!(
                f,
                "`{text}`: a log-uniform range needs a lower bound above zero"
            ),
        }
    }
}

impl std::error::Error for LengthsError {}

/// What is wrong with a fault mix, naming the flag.
#[derive(Clone, Debug, PartialEq)]
pub enum MixError {
    /// `--nodes` outside 1..=100.
    Nodes,
    /// `--duration` under 1 s.
    TooShort,
    /// `--duration` over 30 days.
    TooLong,
    /// `--loss` outside [0, 1).
    Loss(f64),
    /// An interval (`flag`) under 100 ms.
    TooOften(&'static str),
    /// The mix would draw more faults per run than a run may hold.
    TooManyFaults {
        /// The mean number of faults a run would draw.
        expected: f64,
        /// `--nodes`.
        nodes: usize,
        /// `--duration`.
        duration: Duration,
        /// The flag that draws the most.
        flag: &'static str,
        /// Its interval (`None`: off).
        every: Option<Duration>,
    },
}

impl std::fmt::Display for MixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MixError::Nodes => f.write_str("--nodes must be between 1 and 100"),
            MixError::TooShort => f.write_str("--duration must be at least 1s"),
            MixError::TooLong => f.write_str("--duration must be at most 30 days"),
            MixError::Loss(loss) => write!(f, "--loss {loss} must be in [0, 1)"),
            MixError::TooOften(flag) => write!(f, "{flag} must be at least 100ms (or `off`)"),
            MixError::TooManyFaults {
                expected,
                nodes,
                duration,
                flag,
                every,
            } => write!(
                f,
                "the fault mix draws about {expected:.0} faults per run ({nodes} nodes over {}), \
                 more than the {} a run may hold (a run's faults are drawn before it starts, \
                 and each costs memory): raise {flag} (now {}), or lower --duration or --nodes",
                human(*duration),
                super::MAX_FAULTS_PER_RUN,
                every.map_or_else(|| "off".to_string(), human)
            ),
        }
    }
}

impl std::error::Error for MixError {}

/// Why a sweep did not run to the end.
#[derive(Debug)]
pub enum SweepError {
    /// The fault mix is invalid.
    Mix(MixError),
    /// The grid is invalid.
    Grid(GridError),
    /// The seeds name no run.
    Seeds(SeedsError),
    /// Every cell of the grid was skipped: how many, and every reason once.
    EveryCellSkipped {
        /// How many cells were skipped.
        cells: usize,
        /// Their reasons, sorted, each once.
        reasons: Vec<String>,
    },
    /// A run's scenario is invalid.
    Scenario(ScenarioError),
    /// A run halted on a limit: its figures cover only part of it.
    Halted {
        /// The run's seed.
        seed: u64,
        /// Why and when it stopped.
        halt: Halted,
    },
    /// A worker thread could not be started.
    Spawn(SpawnError),
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepError::Mix(e) => e.fmt(f),
            SweepError::Grid(e) => e.fmt(f),
            SweepError::Seeds(e) => e.fmt(f),
            SweepError::EveryCellSkipped { cells, reasons } => write!(
                f,
                "every cell of the grid ({cells}) was skipped, so nothing would run: {}",
                reasons.join("; ")
            ),
            SweepError::Scenario(e) => e.fmt(f),
            SweepError::Halted { seed, halt } => write!(
                f,
                "seed {seed} stopped early, at {} ms, so the sweep cannot measure it: {halt}",
                halt.at_ms
            ),
            SweepError::Spawn(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SweepError {}

impl From<MixError> for SweepError {
    fn from(e: MixError) -> Self {
        SweepError::Mix(e)
    }
}

impl From<GridError> for SweepError {
    fn from(e: GridError) -> Self {
        SweepError::Grid(e)
    }
}

impl From<SeedsError> for SweepError {
    fn from(e: SeedsError) -> Self {
        SweepError::Seeds(e)
    }
}

impl From<SpawnError> for SweepError {
    fn from(e: SpawnError) -> Self {
        SweepError::Spawn(e)
    }
}
