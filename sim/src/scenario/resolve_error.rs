//! Why a fault did not resolve.

use std::fmt;

/// Why a fault did not resolve: it names a host the scenario does not have,
/// or the wrong kind of host. [`Scenario::validate`](crate::Scenario::validate) refuses both, so a
/// [`ValidScenario`](crate::ValidScenario)'s faults always resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResolveError {
    /// No host has this name.
    UnknownHost {
        /// The name.
        name: String,
    },
    /// The fault acts on a node; this host is a server.
    NotANode {
        /// The name.
        name: String,
    },
    /// The fault restarts a server; this host is a node.
    NotAServer {
        /// The name.
        name: String,
    },
    /// An anchor wraps a recurring fault (or another anchored one).
    AnchoredRecurring,
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::UnknownHost { name } => write!(f, "unknown host `{name}`"),
            ResolveError::NotANode { name } => write!(f, "`{name}` is not a node"),
            ResolveError::NotAServer { name } => write!(f, "`{name}` is not a server"),
            ResolveError::AnchoredRecurring => {
                f.write_str("an anchor starts a scheduled fault, not a recurring one")
            }
        }
    }
}

impl std::error::Error for ResolveError {}
