//! Why a comparison cannot run ([`CompareError`]): the one sentence the CLI
//! shows, naming the cell (row and design) where one is at fault.

use crate::batch::SeedsError;
use crate::parallel::SpawnError;
use crate::{Halted, ScenarioError};

/// Why a comparison did not run to the end.
#[derive(Debug)]
pub enum CompareError {
    /// The seeds name no run.
    Seeds(SeedsError),
    /// No row.
    NoScenario,
    /// No column.
    NoProtocol,
    /// One cell (a row run by a design) cannot be measured.
    Cell {
        /// The row's name.
        row: String,
        /// The design, as `[election] protocol` names it.
        protocol: String,
        /// What is wrong with it.
        problem: CellProblem,
    },
    /// A worker thread could not be started.
    Spawn(SpawnError),
}

/// What is wrong with one cell of a comparison.
#[derive(Debug)]
pub enum CellProblem {
    /// The scenario the cell runs is invalid.
    Invalid(ScenarioError),
    /// A seed's run halted on a limit.
    Halted {
        /// The seed.
        seed: u64,
        /// Why and when it stopped.
        halt: Halted,
    },
}

impl std::fmt::Display for CompareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompareError::Seeds(e) => e.fmt(f),
            CompareError::NoScenario => f.write_str("no scenario to compare"),
            CompareError::NoProtocol => {
                f.write_str("no protocol to compare: --protocols lists none")
            }
            CompareError::Cell {
                row,
                protocol,
                problem,
            } => {
                write!(f, "{row} with protocol {protocol}: ")?;
                match problem {
                    CellProblem::Invalid(e) => e.fmt(f),
                    CellProblem::Halted { seed, halt } => {
                        write!(f, "seed {seed} stopped early: {halt}")
                    }
                }
            }
            CompareError::Spawn(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CompareError {}

impl From<SeedsError> for CompareError {
    fn from(e: SeedsError) -> Self {
        CompareError::Seeds(e)
    }
}

impl From<SpawnError> for CompareError {
    fn from(e: SpawnError) -> Self {
        CompareError::Spawn(e)
    }
}
