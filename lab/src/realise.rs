//! From the simulator's fault plan to what the lab does for real: each
//! [`FaultAction`] of [`fenced_sim::FaultPlan`] mapped to the lab's
//! [`Action`]s (signals, proxy stalls, resets), or refused.
//!
//! Nothing here decides what a fault *means* — which hosts it names, how a
//! partition is bridged, a restart's durability, `restart_after`, what the
//! heal ends, or in what order one instant's steps go: the simulator's
//! resolution ([`fenced_sim::ValidScenario::fault_plan`]) decides all of
//! that, once, for the simulation and the lab alike. This module decides
//! only how each primitive action is made real on a machine (see the table
//! in the [`plan`](crate::plan) docs) and which cannot be.

use fenced_sim::{FaultAction, HostId, HostNames, Partition, Resolution, ServerId};

use crate::plan::{Action, ClockTarget, Direction, Link, Server};

/// What the lab does for one step of the fault plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Realised {
    /// These actions, in this order, at the step's instant.
    Actions(Vec<Action>),
    /// Nothing: the step acts on a link nothing travels over (node to node,
    /// server to server); the note says so, once, at the fault's start.
    Nothing(Option<String>),
}

/// Why the lab cannot make fault `resolution` real, if it cannot; `hosts`
/// name its targets, `servers` are the design's ([`crate::design::servers`]).
pub fn refusal(hosts: &HostNames, servers: &[Server], resolution: &Resolution) -> Option<String> {
    let fault =
        match resolution {
            Resolution::Recurring(_) => return Some(
                "a recurring fault (`every`) is drawn by the simulator as its run goes; the lab \
                 could not apply the schedule the prediction saw"
                    .to_string(),
            ),
            Resolution::Scheduled(fault) => fault,
            // An anchored fault is made as the same fault at an instant
            // would be, when its event appears; a strobe's train of flips
            // is laid out at planning time, which an anchor's start is not.
            Resolution::Anchored { fault, .. } => {
                if matches!(fault.start, FaultAction::ClockStrobe { .. }) {
                    return Some(
                        "an anchored clock-strobe: the lab lays a strobe's flips out before the \
                         run, and an anchored fault's start is known only when its event happens"
                            .to_string(),
                    );
                }
                fault
            }
        };
    // Clock faults are judged by the planner, which knows the nodes' drifts,
    // the store's declared clock and what libfaketime can do here.
    match fault.start {
        // A Redis instance is a process of its own, killed and started
        // empty (`servers::redis`).
        FaultAction::ServerDown {
            server: ServerId::Lock(index),
            durable: false,
        } if servers.contains(&Server::Redis(index)) => None,
        FaultAction::ServerDown {
            server,
            durable: false,
        } => Some(format!(
            "{} restarts without its state (durable = false): PostgreSQL is durable, and the lab \
             will not erase the token counters its schema protects",
            hosts.name(HostId::Server(server))
        )),
        _ => None,
    }
}

/// Whose clock clock fault `action` moves in the lab: a node's wall clock,
/// the lease store's, or a Redis instance's (when `servers`, the design's,
/// are Redlock's); `None` for any action that is not a clock fault.
/// (Validation refuses a clock fault of the downstream, whose SQL reads no
/// clock.)
pub fn clock_target(action: &FaultAction, servers: &[Server]) -> Option<ClockTarget> {
    match *action {
        FaultAction::ClockJump { host, .. }
        | FaultAction::ClockSlew { host, .. }
        | FaultAction::ClockStrobe { host, .. } => Some(clock_of(host, servers)),
        _ => None,
    }
}

fn clock_of(host: HostId, servers: &[Server]) -> ClockTarget {
    match host {
        HostId::Node(node) => ClockTarget::Node(node as usize),
        HostId::Server(id @ ServerId::Lock(_)) => match server(id, servers) {
            Server::Redis(index) => ClockTarget::Redis(index),
            _ => ClockTarget::LeaseStore,
        },
        HostId::Server(ServerId::Downstream) => {
            unreachable!("validation refuses a clock fault of the downstream")
        }
    }
}

/// The logical server a resolved server is, among the design's `servers`:
/// Redlock's instance `i` is lock server `i`; a single-server design's one
/// lock server is the lease store (another design is refused first).
fn server(id: ServerId, servers: &[Server]) -> Server {
    match id {
        ServerId::Lock(index) if servers.contains(&Server::Redis(index)) => Server::Redis(index),
        ServerId::Lock(index) => {
            debug_assert_eq!(index, 0, "a single-server design has one lock server");
            Server::LeaseStore
        }
        ServerId::Downstream => Server::Downstream,
    }
}

/// Whether `host` is a Redis instance among `servers`: a process of its
/// own, which a pause stops and a restart kills (not a proxy's stall).
fn own_process(host: HostId, servers: &[Server]) -> Option<Server> {
    match host {
        HostId::Server(id @ ServerId::Lock(_)) => {
            Some(server(id, servers)).filter(|s| matches!(s, Server::Redis(_)))
        }
        _ => None,
    }
}

/// The host a proxy's server end is.
fn host_of(server: Server) -> HostId {
    HostId::Server(match server {
        Server::LeaseStore => ServerId::Lock(0),
        Server::Redis(index) => ServerId::Lock(index),
        Server::Downstream => ServerId::Downstream,
    })
}

/// Every (node, server) link, both ways, between hosts `cut` holds for.
fn links_where(
    nodes: usize,
    servers: &[Server],
    cut: impl Fn(HostId, HostId) -> bool,
) -> Vec<(Link, Direction)> {
    let mut links = Vec::new();
    for node in 0..nodes {
        for &server in servers {
            if cut(HostId::Node(node as u32), host_of(server)) {
                for direction in Direction::BOTH {
                    links.push((Link { node, server }, direction));
                }
            }
        }
    }
    links
}

/// Every link of `host`: a node's to each server, or each node's to a
/// server; both ways.
fn links_of(host: HostId, nodes: usize, servers: &[Server]) -> Vec<(Link, Direction)> {
    links_where(nodes, servers, |node, server| {
        host == node || host == server
    })
}

/// Every (node, server) link `partition` separates, both ways.
fn links_split(partition: &Partition, nodes: usize, servers: &[Server]) -> Vec<(Link, Direction)> {
    links_where(nodes, servers, |node, server| {
        partition.separates(node, server)
    })
}

/// The one direction of one proxy a cut from `from` to `to` is, if
/// anything travels that way.
fn cut_link(from: HostId, to: HostId, servers: &[Server]) -> Option<(Link, Direction)> {
    match (from, to) {
        (HostId::Node(node), HostId::Server(s)) => Some((
            Link {
                node: node as usize,
                server: server(s, servers),
            },
            Direction::ToServer,
        )),
        (HostId::Server(s), HostId::Node(node)) => Some((
            Link {
                node: node as usize,
                server: server(s, servers),
            },
            Direction::ToNode,
        )),
        _ => None,
    }
}

/// The logical server `host` (a server) is among `servers`.
fn server_of(host: HostId, servers: &[Server]) -> Server {
    match host {
        HostId::Server(id) => server(id, servers),
        HostId::Node(_) => unreachable!("only called for a server host"),
    }
}

fn blocks(links: Vec<(Link, Direction)>, block: bool) -> Realised {
    Realised::Actions(
        links
            .into_iter()
            .map(|(link, direction)| {
                if block {
                    Action::Block { link, direction }
                } else {
                    Action::Unblock { link, direction }
                }
            })
            .collect(),
    )
}

/// What the lab does for `action`, a step of scenario fault `fault` (its
/// label in notes: `fault[2] (cut)`), in a scenario of `nodes` nodes named
/// by `hosts`, whose design's servers are `servers`.
///
/// # Panics
/// On an action [`refusal`] refuses (a restart that loses state): the plan
/// is refused before any step is realised.
pub fn realise(
    hosts: &HostNames,
    servers: &[Server],
    nodes: usize,
    fault: Option<(usize, &str)>,
    action: &FaultAction,
) -> Realised {
    let one = |action| Realised::Actions(vec![action]);
    match *action {
        FaultAction::StartNode { node } => one(Action::Spawn {
            node: node as usize,
        }),
        FaultAction::Pause {
            host: HostId::Node(node),
        } => one(Action::Pause {
            node: node as usize,
        }),
        FaultAction::Resume {
            host: HostId::Node(node),
        } => one(Action::Resume {
            node: node as usize,
        }),
        // A Redis instance is a process of its own: its pause is SIGSTOP.
        FaultAction::Pause { host } if own_process(host, servers).is_some() => {
            one(Action::ServerPause {
                server: server_of(host, servers),
            })
        }
        FaultAction::Resume { host } if own_process(host, servers).is_some() => {
            one(Action::ServerResume {
                server: server_of(host, servers),
            })
        }
        // A paused server is a stall of its links (one PostgreSQL serves
        // both logical servers and more), as is an isolated host.
        FaultAction::Pause { host } | FaultAction::Isolate { host } => {
            blocks(links_of(host, nodes, servers), true)
        }
        FaultAction::Resume { host } | FaultAction::Reconnect { host } => {
            blocks(links_of(host, nodes, servers), false)
        }
        FaultAction::Cut { from, to } => match cut_link(from, to, servers) {
            Some(link) => blocks(vec![link], true),
            None => Realised::Nothing(Some(format!(
                "{} {} -> {}: nothing travels over this link in the fenced protocol, so the cut \
                 changes nothing (in the simulator as here)",
                fault.map_or_else(|| "a cut".to_string(), |(_, what)| what.to_string()),
                hosts.name(from),
                hosts.name(to)
            ))),
        },
        FaultAction::Uncut { from, to } => match cut_link(from, to, servers) {
            Some(link) => blocks(vec![link], false),
            None => Realised::Nothing(None),
        },
        FaultAction::Partition(ref partition) => {
            blocks(links_split(partition, nodes, servers), true)
        }
        FaultAction::EndPartition(ref partition) => {
            blocks(links_split(partition, nodes, servers), false)
        }
        FaultAction::Crash { node } => one(Action::Kill {
            node: node as usize,
        }),
        FaultAction::Stop { node } => one(Action::Terminate {
            node: node as usize,
        }),
        FaultAction::Abdicate { node } => one(Action::Abdicate {
            node: node as usize,
        }),
        FaultAction::Replace { node } => one(Action::Replace {
            node: node as usize,
        }),
        FaultAction::Restart { node } => one(Action::Restart {
            node: node as usize,
            after: fault.map_or(usize::MAX, |(index, _)| index),
        }),
        // A Redis instance's restart: its process killed, then started
        // again from its data or empty.
        FaultAction::ServerDown { server: id, .. }
            if own_process(HostId::Server(id), servers).is_some() =>
        {
            one(Action::ServerKill {
                server: server(id, servers),
            })
        }
        FaultAction::ServerUp {
            server: id,
            durable,
        } if own_process(HostId::Server(id), servers).is_some() => one(Action::ServerRestart {
            server: server(id, servers),
            durable,
        }),
        FaultAction::ServerDown {
            server: id,
            durable: true,
        } => one(Action::ServerDown {
            server: server(id, servers),
        }),
        FaultAction::ServerUp {
            server: id,
            durable: true,
        } => one(Action::ServerUp {
            server: server(id, servers),
        }),
        FaultAction::Heal => one(Action::Heal),
        // A strobe's first flip; the planner lays out the others
        // (`FaultAction::wall_steps`).
        FaultAction::ClockJump { host, by } | FaultAction::ClockStrobe { host, by, .. } => {
            one(Action::ClockStep {
                target: clock_of(host, servers),
                by_nanos: by.0,
            })
        }
        FaultAction::ClockSlew { host, by, over } => one(Action::ClockSlew {
            target: clock_of(host, servers),
            by_nanos: by.0,
            over,
        }),
        FaultAction::ServerDown { .. } | FaultAction::ServerUp { .. } => {
            unreachable!("refused before planning: {action:?}")
        }
    }
}
