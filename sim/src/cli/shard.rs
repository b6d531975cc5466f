//! The shard of an `explore` run: `--shard I/N`, or `--shard-from-env[=VAR]
//! --shards N` (a Kubernetes Indexed Job's completion index), and why a
//! value is refused ([`ShardError`]).

use std::fmt;

/// The variable `--shard-from-env` reads by default: a Kubernetes Indexed
/// Job's completion index.
pub(super) const SHARD_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// The shard `--shard-from-env=VAR --shards N` names: the index from `VAR`,
/// validated like `--shard`.
pub(super) fn shard_from_env(var: &str, shards: Option<u64>) -> Result<(u64, u64), ShardError> {
    let n = shards.ok_or(ShardError::NoShards)?;
    if n == 0 {
        return Err(ShardError::NoShard);
    }
    if var.is_empty() {
        return Err(ShardError::NoVariable);
    }
    let var = var.to_string();
    let text = match std::env::var(&var) {
        Ok(text) => text,
        Err(std::env::VarError::NotPresent) => return Err(ShardError::Unset { var }),
        Err(std::env::VarError::NotUnicode(_)) => return Err(ShardError::NotUnicode { var }),
    };
    let Ok(i) = text.trim().parse::<u64>() else {
        return Err(ShardError::NotAnIndex { var, text });
    };
    if i >= n {
        return Err(ShardError::NotBelow { var, i, n });
    }
    Ok((i, n))
}

/// The shard `--shard I/N` names.
pub(super) fn parse_shard(text: &str) -> Result<(u64, u64), ShardError> {
    let bad = |part: &str| ShardError::NotANumber {
        text: text.to_string(),
        part: part.to_string(),
    };
    let (i, n) = text
        .split_once('/')
        .ok_or_else(|| ShardError::NotAFraction(text.to_string()))?;
    let i: u64 = i.trim().parse().map_err(|_| bad(i))?;
    let n: u64 = n.trim().parse().map_err(|_| bad(n))?;
    if n == 0 || i >= n {
        return Err(ShardError::OutOfRange(text.to_string()));
    }
    Ok((i, n))
}

/// Why `--shard` or `--shard-from-env` names no shard.
#[derive(Debug)]
pub(super) enum ShardError {
    /// `--shard-from-env` without `--shards`.
    NoShards,
    /// `--shards 0`.
    NoShard,
    /// `--shard-from-env=` with nothing after the `=`.
    NoVariable,
    /// The variable is not set.
    Unset {
        /// The variable's name.
        var: String,
    },
    /// The variable's value is not UTF-8.
    NotUnicode {
        /// The variable's name.
        var: String,
    },
    /// The variable's value is not a whole number.
    NotAnIndex {
        /// The variable's name.
        var: String,
        /// Its value.
        text: String,
    },
    /// The variable's index is not below `--shards`.
    NotBelow {
        /// The variable's name.
        var: String,
        /// The index it holds.
        i: u64,
        /// `--shards`.
        n: u64,
    },
    /// `--shard` without a `/`: the flag's value.
    NotAFraction(String),
    /// One side of `--shard I/N` is not a number.
    NotANumber {
        /// The flag's value.
        text: String,
        /// The side that is not a number, as given.
        part: String,
    },
    /// `--shard I/N` with `N` 0 or `I` not below it: the flag's value.
    OutOfRange(String),
}

impl fmt::Display for ShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardError::NoShards => {
                f.write_str("--shard-from-env needs --shards N (the number of shards)")
            }
            ShardError::NoShard => f.write_str("--shards must be at least 1"),
            ShardError::NoVariable => f.write_str("--shard-from-env= needs a variable name"),
            ShardError::Unset { var } => write!(
                f,
                "--shard-from-env: environment variable {var} is not set (a Kubernetes \
                 Indexed Job sets JOB_COMPLETION_INDEX in each pod)"
            ),
            ShardError::NotUnicode { var } => write!(
                f,
                "--shard-from-env: environment variable {var} is not valid UTF-8"
            ),
            ShardError::NotAnIndex { var, text } => write!(
                f,
                "--shard-from-env: {var} `{text}` is not a shard index (0 to N-1)"
            ),
            ShardError::NotBelow { var, i, n } => write!(
                f,
                "--shard-from-env: {var} {i} is not below --shards {n} (the index must be in \
                 0..N: give --shards the Job's completions)"
            ),
            ShardError::NotAFraction(text) => write!(f, "--shard `{text}` must be I/N, e.g. 3/64"),
            ShardError::NotANumber { text, part } => {
                write!(f, "--shard `{text}`: `{part}` is not a number")
            }
            ShardError::OutOfRange(text) => {
                write!(f, "--shard `{text}`: I must be in 0..N and N at least 1")
            }
        }
    }
}

impl std::error::Error for ShardError {}
