//! The protocol-neutral fault scenarios ([`builtin`]), each design's
//! timescale ([`expiry`]), and how a scenario becomes one run of one design
//! ([`Neutral::build`], [`adapt`]).
//!
//! Every built-in scenario is a three-node cluster whose `node-a` starts at
//! once and leads (`node-b`, `node-c` start at 1 s), as in the shipped
//! incident scenarios. The leader starts a unit of work every second; each
//! takes 200 ms between its leadership check and its write. A scheduled
//! fault is **anchored** on node-a's unit of work ([`fault_placement`]): it
//! begins `50 ms + j ms` into node-a's first unit at or after `12 s + k s`,
//! with `k` in `0..20` and `j` in `0..100` drawn from the seed (the same for
//! every design and scenario of a seed) — always while the leader's unit is
//! in flight, its write prepared and not yet sent, the case the incident
//! scenarios show, whatever the design's first lock costs (its units tick
//! from its term's start), and at a seed-drawn phase of its renewals. The
//! run's report says when each fault began ([`as_fired`]).

use std::time::Duration;

use rand_core::Rng;

use crate::report::Report;
use crate::rng::SeedDeriver;
use crate::scenario::{
    Anchor, AnchorEvent, ClockOffset, FaultSpec, NodeSpec, ProtocolSpec, Scenario, DOWNSTREAM,
    LEASE_STORE,
};

/// The earliest start of a built-in scenario's fault.
const FAULT_FROM: Duration = Duration::from_secs(12);
/// The latest start of a built-in scenario's fault (`12 s + 19 s + 149 ms`).
const FAULT_UNTIL: Duration = Duration::from_millis(31_149);
/// The longest run of a built-in scenario: virtual time is cheap, but a
/// PostgreSQL keepalive verdict is 2 h 11 min, so a fault of twice that and
/// its aftermath need hours.
pub const MAX_RUN: Duration = Duration::from_secs(8 * 3600);
/// What a run simulates after its fault ends and one expiry has passed: time
/// for the woken leader's late writes and the next election.
const AFTERMATH: Duration = Duration::from_secs(60);
/// The length of the heavy-loss scenario's run.
const LOSS_RUN: Duration = Duration::from_secs(600);

/// How long a design's lock outlives a holder that has gone silent before
/// another may take it — the setting its documentation names (a *stalled*
/// PostgreSQL holder keeps its lock for ever: its kernel answers the
/// keepalive probes):
///
/// * `fenced`: `lease_ttl` (default 30 s);
/// * `connection-lock`: the server's keepalive verdict, `tcp_keepalives_idle
///   + tcp_keepalives_interval × tcp_keepalives_count` (7875 s);
/// * `client-go`: `lease_duration` (15 s);
/// * `etcd`: the session's `session_ttl_secs` (60 s);
/// * `redlock`: the keys' `ttl` (10 s);
/// * `zookeeper`: the `session_timeout` (60 s);
/// * `dynamodb`: `lease_duration` (20 s).
pub fn expiry(spec: &ProtocolSpec) -> Duration {
    expiry_with(spec, fenced::ElectorTimings::default().lease_ttl)
}

/// [`expiry`], with the fenced protocol's `lease_ttl` given: the other
/// designs' is the first half of [`ProtocolSpec::timescale`].
pub fn expiry_with(spec: &ProtocolSpec, lease_ttl: Duration) -> Duration {
    spec.timescale().map_or(lease_ttl, |(e, _)| e)
}

/// The setting [`expiry`] reads, for the outputs.
pub fn expiry_source(spec: &ProtocolSpec) -> &'static str {
    match spec {
        ProtocolSpec::Fenced => "lease_ttl",
        ProtocolSpec::ConnectionLock(_) => {
            "tcp_keepalives_idle + tcp_keepalives_interval × tcp_keepalives_count"
        }
        ProtocolSpec::ClientGo(_) => "lease_duration",
        ProtocolSpec::Etcd(_) => "session_ttl_secs",
        ProtocolSpec::Redlock(_) => "ttl",
        ProtocolSpec::ZooKeeper(_) => "session_timeout",
        ProtocolSpec::DynamoDb(_) => "lease_duration",
    }
}

/// The hosts a design's nodes take the lock from: `lease-store` for the
/// fenced protocol, the design's servers otherwise (all five Redis
/// instances for Redlock).
pub fn servers(spec: &ProtocolSpec) -> Vec<String> {
    match spec {
        ProtocolSpec::Fenced => vec![LEASE_STORE.to_string()],
        other => other.server_names(),
    }
}

/// How long a built-in scenario's fault lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// `num / den` × the design's [`expiry`].
    Expiry(u32, u32),
    /// The same for every design.
    Fixed(Duration),
}

impl Length {
    /// The length for a design whose expiry is `e`.
    pub fn of(self, e: Duration) -> Duration {
        match self {
            Length::Expiry(num, den) => e * num / den.max(1),
            Length::Fixed(d) => d,
        }
    }

    /// `2 × E`, `0.7 × E`, `40s`.
    pub fn describe(self) -> String {
        match self {
            Length::Expiry(1, 1) => "E".to_string(),
            Length::Expiry(num, 1) => format!("{num} × E"),
            Length::Expiry(num, den) => format!("{} × E", f64::from(num) / f64::from(den)),
            Length::Fixed(d) => crate::units::human(d),
        }
    }
}

/// What a built-in scenario does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// `node-a` pauses (a GC pause, SIGSTOP); `node-b` and `node-c` clocks
    /// drift by `candidate_drift`.
    Stall {
        /// 0.5: the candidates' clocks run 50% fast.
        candidate_drift: f64,
    },
    /// `node-a` is partitioned from the design's servers, both ways (it
    /// still reaches the downstream and its peers); its clock drifts by
    /// `leader_drift`.
    Partition {
        /// -0.25: the leader's clock runs 25% slow.
        leader_drift: f64,
    },
    /// `node-a`'s messages to every server are lost (the answers would
    /// arrive).
    CutToServers,
    /// Every server's messages to `node-a` are lost (its requests still
    /// arrive).
    CutFromServers,
    /// Every server of the design pauses.
    ServersStall,
    /// Every server of the design restarts: down for the fault's length,
    /// then back with its state (`durable`) or empty.
    ServersRestart {
        /// Whether the servers keep their state.
        durable: bool,
    },
    /// Every server's clock steps ahead by the fault's length (an NTP
    /// step): expiry judged on the server's clock comes early.
    ServersClockJump,
    /// `node-a`'s machine dies and never comes back.
    Crash,
    /// No scheduled fault: 20% of messages lost and 20% duplicated, for
    /// the whole run.
    Loss,
}

/// One protocol-neutral scenario of the built-in set.
#[derive(Clone, Debug, PartialEq)]
pub struct Neutral {
    /// Its name: the matrix's row.
    pub name: &'static str,
    /// One sentence on what happens.
    pub summary: &'static str,
    /// The fault.
    pub shape: Shape,
    /// How long the fault lasts (ignored by [`Shape::Crash`] and
    /// [`Shape::Loss`]).
    pub length: Length,
}

/// The built-in scenarios, in the matrix's order.
pub fn builtin() -> Vec<Neutral> {
    let stall = |candidate_drift| Shape::Stall { candidate_drift };
    let partition = |leader_drift| Shape::Partition { leader_drift };
    let forty = Length::Fixed(Duration::from_secs(40));
    vec![
        Neutral {
            name: "stalled-leader",
            summary: "the leader pauses (GC, SIGSTOP) for twice the design's expiry",
            shape: stall(0.0),
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "stalled-leader-40s",
            summary: "the leader pauses 40 s, the same for every design",
            shape: stall(0.0),
            length: forty,
        },
        Neutral {
            name: "short-stall",
            summary: "the leader pauses for 0.7 × the expiry: no failover is needed",
            shape: stall(0.0),
            length: Length::Expiry(7, 10),
        },
        Neutral {
            name: "fast-clocks",
            summary: "as short-stall, with the candidates' clocks 50% fast",
            shape: stall(0.5),
            length: Length::Expiry(7, 10),
        },
        Neutral {
            name: "partitioned-leader",
            summary:
                "the leader is cut off from the lock servers (not from the downstream) for 2 × E",
            shape: partition(0.0),
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "partitioned-leader-40s",
            summary: "the same partition for 40 s, for every design",
            shape: partition(0.0),
            length: forty,
        },
        Neutral {
            name: "slow-clock",
            summary: "as partitioned-leader, with the leader's clock 25% slow",
            shape: partition(-0.25),
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "cut-to-servers",
            summary:
                "the leader's messages to the lock servers are lost for 2 × E; answers would arrive",
            shape: Shape::CutToServers,
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "cut-from-servers",
            summary:
                "the lock servers' messages to the leader are lost for 2 × E; its requests arrive",
            shape: Shape::CutFromServers,
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "servers-stalled",
            summary: "every lock server pauses for 2 × E",
            shape: Shape::ServersStall,
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "servers-restart",
            summary: "every lock server restarts, down 5 s, with its state",
            shape: Shape::ServersRestart { durable: true },
            length: Length::Fixed(Duration::from_secs(5)),
        },
        Neutral {
            name: "servers-restart-empty",
            summary: "every lock server restarts, down 5 s, and comes back empty (no persistence)",
            shape: Shape::ServersRestart { durable: false },
            length: Length::Fixed(Duration::from_secs(5)),
        },
        Neutral {
            name: "servers-clock-jump",
            summary: "every lock server's clock steps ahead by E (an NTP step)",
            shape: Shape::ServersClockJump,
            length: Length::Expiry(1, 1),
        },
        Neutral {
            name: "leader-crash",
            summary: "the leader's machine dies and stays down",
            shape: Shape::Crash,
            length: Length::Expiry(2, 1),
        },
        Neutral {
            name: "heavy-loss",
            summary: "20% of messages lost and 20% duplicated for 10 minutes, no other fault",
            shape: Shape::Loss,
            length: Length::Fixed(LOSS_RUN),
        },
    ]
}

/// Where the fault of seed `seed` begins: `into_unit` after node-a's first
/// `work-started` at or after `after` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlacement {
    /// `12 s + k s`, `k` in `0..20`.
    pub after: Duration,
    /// `50 ms + j ms`, `j` in `0..100`: inside the unit's 200 ms.
    pub into_unit: Duration,
}

impl FaultPlacement {
    /// The anchor a built-in scenario's faults wait for.
    pub fn anchor(&self) -> Anchor {
        Anchor {
            delay: self.into_unit,
            ..Anchor::on(AnchorEvent::WorkStarted).of_node("node-a")
        }
    }
}

/// The placement of seed `seed`'s fault: `k` and `j` drawn from the seed.
pub fn fault_placement(seed: u64) -> FaultPlacement {
    let mut rng = SeedDeriver::new(seed, "compare-fault-start").rng();
    let k = rng.next_u64() % 20;
    let j = rng.next_u64() % 100;
    FaultPlacement {
        after: FAULT_FROM + Duration::from_secs(k),
        into_unit: Duration::from_millis(50 + j),
    }
}

/// `12 s + k s + 50 ms + j ms`: the instant [`fault_placement`]'s fault
/// began at, before the faults were anchored, on the schedule of a design
/// whose units tick on whole seconds; a scheduled fault now begins that far
/// into node-a's unit instead (its report's `anchors` say when).
pub fn fault_start(seed: u64) -> Duration {
    let placement = fault_placement(seed);
    placement.after + placement.into_unit
}

/// `s` with each anchored fault put where `report` says it began (dropped
/// if it never did: node-a did not work again), so that [`cut_off`] reads
/// the instants of the run. Other faults are kept as written.
pub fn as_fired(s: &Scenario, report: &Report) -> Scenario {
    let mut fired = s.clone();
    fired.faults = s
        .faults
        .iter()
        .enumerate()
        .filter_map(|(index, fault)| match fault {
            FaultSpec::Anchored { fault, .. } => {
                let began = report
                    .anchors
                    .iter()
                    .find(|a| a.fault == index)?
                    .began_at_ms?;
                let mut fault = (**fault).clone();
                if let Some(at) = fault.at_mut() {
                    *at = Duration::try_from_secs_f64(began / 1000.0).unwrap_or(Duration::ZERO);
                }
                Some(fault)
            }
            other => Some(other.clone()),
        })
        .collect();
    fired
}

/// The protocol a column runs, as every run of it is configured:
/// client-go's application loops (`run_again`), as a Deployment's restart
/// would.
pub(super) fn configured(spec: &ProtocolSpec) -> ProtocolSpec {
    let mut spec = spec.clone();
    if let ProtocolSpec::ClientGo(s) = &mut spec {
        s.run_again = true;
    }
    spec
}

/// Whether a column's downstream checks the design's token: only with
/// `--fenced`, and only for a design that has one.
pub(super) fn fenced_by_token(spec: &ProtocolSpec, fenced: bool) -> bool {
    fenced && spec.has_token()
}

impl Neutral {
    /// The fault's length for a design whose expiry is `e`: for a crash,
    /// the time it stays down before the run ends.
    pub fn fault_length(&self, e: Duration) -> Duration {
        self.length.of(e)
    }

    /// How long a run of this scenario lasts for a design whose expiry is
    /// `e`: the latest fault start, the fault, one expiry and a minute
    /// (at most [`MAX_RUN`]); for heavy loss, 10 minutes.
    pub fn run_length(&self, e: Duration) -> Duration {
        if self.shape == Shape::Loss {
            return LOSS_RUN;
        }
        (FAULT_UNTIL + self.fault_length(e) + e + AFTERMATH).min(MAX_RUN)
    }

    /// The fault as the outputs describe it for a design whose expiry is
    /// `e`: `pause node-a 30s`.
    pub fn describe_fault(&self, e: Duration) -> String {
        let len = crate::svg::time::time_label(
            u64::try_from(self.fault_length(e).as_nanos()).unwrap_or(u64::MAX),
        );
        match self.shape {
            Shape::Stall { candidate_drift } if candidate_drift != 0.0 => {
                format!("pause node-a {len}; node-b, node-c clock drift {candidate_drift:+}")
            }
            Shape::Stall { .. } => format!("pause node-a {len}"),
            Shape::Partition { leader_drift } if leader_drift != 0.0 => {
                format!("partition node-a | servers {len}; node-a clock drift {leader_drift:+}")
            }
            Shape::Partition { .. } => format!("partition node-a | servers {len}"),
            Shape::CutToServers => format!("cut node-a → servers {len}"),
            Shape::CutFromServers => format!("cut servers → node-a {len}"),
            Shape::ServersStall => format!("pause servers {len}"),
            Shape::ServersRestart { durable: true } => format!("restart servers, down {len}"),
            Shape::ServersRestart { durable: false } => {
                format!("restart servers empty, down {len}")
            }
            Shape::ServersClockJump => format!("servers' clocks jump +{len}"),
            Shape::Crash => "crash node-a, no restart".to_string(),
            Shape::Loss => format!("loss 20%, duplicate 20% for {len}"),
        }
    }

    /// The run of this scenario by `protocol` with seed `seed`; the
    /// downstream is fenced by the design's token when `fenced` is set and
    /// the design has one.
    pub fn build(&self, protocol: &ProtocolSpec, fenced: bool, seed: u64) -> Scenario {
        let e = expiry(protocol);
        let mut s = Scenario::new(self.name, self.run_length(e));
        s.seed = seed;
        s.election.protocol = configured(protocol);
        s.fencing = fenced_by_token(protocol, fenced);
        s.work.write_interval = Duration::from_secs(1);
        s.work.work_duration = Duration::from_millis(200);
        let mut a = NodeSpec::new("node-a");
        let mut others = [NodeSpec::new("node-b"), NodeSpec::new("node-c")];
        for n in &mut others {
            n.start_at = Duration::from_secs(1);
        }
        let placement = fault_placement(seed);
        let at = placement.after;
        let duration = self.fault_length(e);
        let servers = servers(protocol);
        match self.shape {
            Shape::Stall { candidate_drift } => {
                for n in &mut others {
                    n.clock_drift = candidate_drift;
                }
                s.faults.push(FaultSpec::Pause {
                    host: "node-a".into(),
                    at,
                    duration,
                });
            }
            Shape::Partition { leader_drift } => {
                a.clock_drift = leader_drift;
                s.faults.push(FaultSpec::Partition {
                    groups: vec![vec!["node-a".into()], servers],
                    at,
                    duration,
                });
            }
            Shape::CutToServers | Shape::CutFromServers => {
                for server in servers {
                    let (from, to) = if self.shape == Shape::CutToServers {
                        ("node-a".to_string(), server)
                    } else {
                        (server, "node-a".to_string())
                    };
                    s.faults.push(FaultSpec::Cut {
                        from,
                        to,
                        at,
                        duration,
                    });
                }
            }
            Shape::ServersStall => {
                for host in servers {
                    s.faults.push(FaultSpec::Pause { host, at, duration });
                }
            }
            Shape::ServersRestart { durable } => {
                for host in servers {
                    s.faults.push(FaultSpec::Restart {
                        host,
                        at,
                        duration,
                        durable: Some(durable),
                    });
                }
            }
            Shape::ServersClockJump => {
                for host in servers {
                    s.faults.push(FaultSpec::ClockJump {
                        host,
                        at,
                        by: ClockOffset::ahead(duration),
                    });
                }
            }
            Shape::Crash => s.faults.push(FaultSpec::Crash {
                node: "node-a".into(),
                at,
                restart_after: None,
            }),
            Shape::Loss => {
                s.network.loss = 0.2;
                s.network.duplicate = 0.2;
            }
        }
        s.nodes.push(a);
        s.nodes.extend(others);
        let when = placement.anchor();
        s.faults = std::mem::take(&mut s.faults)
            .into_iter()
            .map(|fault| fault.anchored(when.clone()))
            .collect();
        // A fault that never begins (node-a never works again) is no unmet
        // expectation: a comparison measures, it does not judge.
        s.expect.anchors_begin = Some(false);
        s
    }
}

/// A scenario file's run by `protocol`: its `[election] protocol`
/// replaced (its own settings table kept when it names the same design,
/// the design's defaults otherwise; client-go loops), its downstream fenced
/// per [`Neutral::build`]'s rule, and its expectations dropped (a
/// comparison measures; it does not judge).
pub fn adapt(file: &Scenario, protocol: &ProtocolSpec, fenced: bool) -> Scenario {
    let mut s = file.clone();
    let spec = if file.election.protocol.name() == protocol.name() {
        &file.election.protocol
    } else {
        protocol
    };
    s.election.protocol = configured(spec);
    s.fencing = fenced_by_token(protocol, fenced);
    s.expect = Default::default();
    s
}

/// A fault that takes one node away from the lock service: the node, when
/// it starts and when it ends (`run_end` for a crash or stop without a
/// restart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutOff {
    /// The node.
    pub node: String,
    /// The fault's start.
    pub at: Duration,
    /// The fault's end.
    pub end: Duration,
}

/// The first scheduled fault of `s` (by start) that takes a node away from
/// the lock service for longer than `e`, if any: a pause or isolation of a
/// node, its crash or stop (without a restart within `e`), a partition
/// that puts it in a group without any of `servers` while another group
/// holds them all, or one-way cuts between it and every one of `servers`
/// (in the same direction; their common span counts).
pub fn cut_off(s: &Scenario, servers: &[String], e: Duration) -> Option<CutOff> {
    let is_node = |h: &str| s.nodes.iter().any(|n| n.id == h);
    // `lease-store` names every design's first server.
    let canon = |h: &str| -> String {
        match servers.first() {
            Some(first) if h == LEASE_STORE => first.clone(),
            _ => h.to_string(),
        }
    };
    let is_server = |h: &str| servers.contains(&canon(h));
    let mut found: Vec<CutOff> = Vec::new();
    // (outward, node, server, start, end)
    let mut cuts: Vec<(bool, String, String, Duration, Duration)> = Vec::new();
    for f in &s.faults {
        match f {
            FaultSpec::Pause { host, at, duration } | FaultSpec::Isolate { host, at, duration }
                if is_node(host) =>
            {
                found.push(CutOff {
                    node: host.clone(),
                    at: *at,
                    end: at.saturating_add(*duration),
                });
            }
            FaultSpec::Crash {
                node,
                at,
                restart_after,
            }
            | FaultSpec::Stop {
                node,
                at,
                restart_after,
            } => found.push(CutOff {
                node: node.clone(),
                at: *at,
                end: restart_after.map_or(s.duration, |r| at.saturating_add(r)),
            }),
            FaultSpec::Partition {
                groups,
                at,
                duration,
            } => {
                let holds_all =
                    |g: &Vec<String>| servers.iter().all(|x| g.iter().any(|h| canon(h) == *x));
                if !groups.iter().any(holds_all) {
                    continue;
                }
                for g in groups.iter().filter(|g| !g.iter().any(|h| is_server(h))) {
                    for node in g.iter().filter(|h| is_node(h)) {
                        found.push(CutOff {
                            node: node.clone(),
                            at: *at,
                            end: at.saturating_add(*duration),
                        });
                    }
                }
            }
            FaultSpec::Cut {
                from,
                to,
                at,
                duration,
            } => {
                let end = at.saturating_add(*duration);
                if is_node(from) && is_server(to) {
                    cuts.push((true, from.clone(), canon(to), *at, end));
                } else if is_server(from) && is_node(to) {
                    cuts.push((false, to.clone(), canon(from), *at, end));
                }
            }
            _ => {}
        }
    }
    for (outward, node, _, _, _) in &cuts {
        let mut span = (Duration::ZERO, Duration::MAX);
        let mut every = true;
        for server in servers {
            let covering = cuts
                .iter()
                .filter(|c| c.0 == *outward && c.1 == *node && c.2 == *server)
                .map(|c| (c.3, c.4))
                .min();
            match covering {
                Some((at, end)) => span = (span.0.max(at), span.1.min(end)),
                None => every = false,
            }
        }
        if every && span.0 < span.1 {
            found.push(CutOff {
                node: node.clone(),
                at: span.0,
                end: span.1,
            });
        }
    }
    found
        .into_iter()
        .filter(|c| c.end.saturating_sub(c.at) > e && c.node != DOWNSTREAM)
        .min_by_key(|c| c.at)
}
