//! How the plan's steps read in the run's report: each [`Action`] and
//! [`ClockTarget`] in words.

use std::fmt;
use std::time::Duration;

use fenced_sim::LEASE_STORE;

use super::{Action, ClockTarget, Server};

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Spawn { node } => write!(f, "spawn node {node}"),
            Action::Pause { node } => write!(f, "SIGSTOP node {node}"),
            Action::Resume { node } => write!(f, "SIGCONT node {node}"),
            Action::Kill { node } => write!(f, "SIGKILL node {node}"),
            Action::Terminate { node } => write!(f, "SIGTERM node {node}"),
            Action::Restart { node, after } => {
                write!(f, "restart node {node} (after fault[{after}])")
            }
            Action::Replace { node } => write!(f, "replace node {node}"),
            Action::Abdicate { node } => write!(f, "SIGUSR1 (abdicate) node {node}"),
            Action::Block { link, direction } => {
                write!(
                    f,
                    "stall {direction:?} on node {} <-> {}",
                    link.node,
                    link.server.name()
                )
            }
            Action::Unblock { link, direction } => {
                write!(
                    f,
                    "heal {direction:?} on node {} <-> {}",
                    link.node,
                    link.server.name()
                )
            }
            Action::ServerDown { server } => write!(f, "{} down (reset)", server.name()),
            Action::ServerUp { server } => write!(f, "{} up", server.name()),
            Action::ServerPause { server } => write!(f, "SIGSTOP {}", server.name()),
            Action::ServerResume { server } => write!(f, "SIGCONT {}", server.name()),
            Action::ServerKill { server } => write!(f, "SIGKILL {}", server.name()),
            Action::ServerRestart { server, durable } => {
                let from = if *durable { "from its data" } else { "empty" };
                write!(f, "restart {} {from}", server.name())
            }
            Action::ClockStep { target, by_nanos } => {
                write!(f, "step {target}'s clock by {}", signed(*by_nanos))
            }
            Action::ClockSlew {
                target,
                by_nanos,
                over,
            } => write!(
                f,
                "slew {target}'s clock by {} over {over:?}",
                signed(*by_nanos)
            ),
            Action::Heal => f.write_str("heal everything"),
        }
    }
}

impl fmt::Display for ClockTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockTarget::Node(node) => write!(f, "node {node}"),
            ClockTarget::LeaseStore => f.write_str(LEASE_STORE),
            ClockTarget::Redis(index) => write!(f, "{}", Server::Redis(*index).name()),
        }
    }
}

/// A signed clock amount in words: `+40s`, `-1.5s`.
fn signed(nanos: i64) -> String {
    let sign = if nanos < 0 { '-' } else { '+' };
    format!("{sign}{:?}", Duration::from_nanos(nanos.unsigned_abs()))
}
