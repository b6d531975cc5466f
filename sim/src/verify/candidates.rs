//! Where and how long the injected faults can be: the start instants (a
//! grid and the protocol's boundaries of the run they are added to) and the
//! default length set (the boundary lengths).

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

use super::{nanos, Bounds};
use crate::scenario::Scenario;
use crate::simulation::NotedInstants;

/// A kind of fault the search injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A GC pause of a host (`pause`), for the fault's length.
    Pause,
    /// Every link of a host down (`isolate`), for the fault's length.
    Isolate,
    /// A node's processes die; a new one starts after the length (`crash`
    /// with `restart_after`).
    Crash,
    /// A new incarnation of a node starts while the old one keeps running
    /// (`replace`: the zombie case). It has no length.
    Replace,
    /// A graceful stop of a node (`stop`: the elector releases its lease);
    /// a new process starts after the length.
    Stop,
    /// A server goes down for the length and comes back with its state as
    /// the scenario declares (`restart`). Servers only (`--servers`).
    Restart,
    /// A host's clocks jump ahead by the length (`clock-jump`, positive).
    ClockForward,
    /// A host's clocks jump back by the length (`clock-jump`, negative).
    ClockBack,
}

impl FaultKind {
    /// Every kind, in order.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Pause,
        FaultKind::Isolate,
        FaultKind::Crash,
        FaultKind::Replace,
        FaultKind::Stop,
        FaultKind::Restart,
        FaultKind::ClockForward,
        FaultKind::ClockBack,
    ];

    /// The name, as `--kinds` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Isolate => "isolate",
            FaultKind::Crash => "crash",
            FaultKind::Replace => "replace",
            FaultKind::Stop => "stop",
            FaultKind::Restart => "restart",
            FaultKind::ClockForward => "clock-forward",
            FaultKind::ClockBack => "clock-back",
        }
    }

    /// Whether it strikes a node (`nodes`) and whether a server (with
    /// `--servers`): crash, replace and stop are a node's processes'; a
    /// restart is a server's; the others strike any host.
    pub const fn targets(self) -> (bool, bool) {
        match self {
            FaultKind::Crash | FaultKind::Replace | FaultKind::Stop => (true, false),
            FaultKind::Restart => (false, true),
            FaultKind::Pause
            | FaultKind::Isolate
            | FaultKind::ClockForward
            | FaultKind::ClockBack => (true, true),
        }
    }

    /// Whether the fault has a length (a replacement does not: one choice
    /// per start and node, whatever `--lengths`).
    pub const fn has_length(self) -> bool {
        !matches!(self, FaultKind::Replace)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not a [`FaultKind`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownFaultKind(pub String);

impl fmt::Display for UnknownFaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a fault kind verify injects; known: {}",
            self.0,
            FaultKind::ALL.map(FaultKind::name).join(", ")
        )
    }
}

impl std::error::Error for UnknownFaultKind {}

impl FromStr for FaultKind {
    type Err = UnknownFaultKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownFaultKind(s.to_string()))
    }
}

/// The default fault lengths: the protocol's boundary lengths. For the
/// fenced protocol, of the scenario's `[election]`: the renew interval; the
/// validity (`lease_ttl − safety_margin`), the TTL and the rejoin delay, each
/// 1 ns below, at and 1 ns above. For a zoo design, its own
/// ([`ProtocolSpec::boundaries`](crate::scenario::ProtocolSpec::boundaries):
/// Redlock's TTL and validity, ZooKeeper's session timeout, …), each 1 ns
/// below, at and above. Sorted, each once.
pub fn boundary_lengths(scenario: &Scenario) -> Vec<Duration> {
    let one = Duration::from_nanos(1);
    let mut set = BTreeSet::new();
    let mut straddle = |edge: Duration| {
        set.insert(edge.saturating_sub(one));
        set.insert(edge);
        set.insert(edge.saturating_add(one));
    };
    if let Some(design) = scenario.election.protocol.boundaries() {
        design.lengths.into_iter().for_each(&mut straddle);
    } else {
        let e = &scenario.election;
        let validity = e.lease_ttl.saturating_sub(e.effective_safety_margin());
        for edge in [validity, e.lease_ttl, e.effective_rejoin_delay()] {
            straddle(edge);
        }
        set.insert(e.renew_interval);
    }
    set.remove(&Duration::ZERO);
    set.into_iter().collect()
}

/// The instants a fault may start at in a run that noted `instants`, at or
/// after `from_ns` and before the fault window's end: every multiple of the
/// grid, and (with `bounds.boundaries`) every timer deadline and every
/// expiry at a server — the fenced store's lease (a request's arrival plus
/// `lease_ttl`), or what a design's server expires after each request
/// (Redlock's key, etcd's lease, ZooKeeper's session, rounded to its tick:
/// [`ProtocolSpec::boundaries`](crate::scenario::ProtocolSpec::boundaries)) —
/// each at, 1 ns before and 1 ns after. Sorted, each once.
pub(super) fn starts(
    scenario: &Scenario,
    bounds: &Bounds,
    instants: &NotedInstants,
    from_ns: u64,
) -> Vec<u64> {
    let window = nanos(scenario.heal_at.unwrap_or(scenario.duration));
    let grid = nanos(bounds.grid).max(1);
    let mut set = BTreeSet::new();
    let mut at = grid;
    while at < window {
        set.insert(at);
        at = at.saturating_add(grid);
    }
    if bounds.boundaries {
        let mut straddle = |edge: u64| {
            set.extend([edge.saturating_sub(1), edge, edge.saturating_add(1)]);
        };
        instants.timers_ns.iter().copied().for_each(&mut straddle);
        let inputs = instants.server_inputs_ns.iter().copied();
        match scenario.election.protocol.boundaries() {
            // The fenced store: a lease granted or renewed at `t` lapses at
            // `t + lease_ttl`.
            None => {
                let ttl = nanos(scenario.election.lease_ttl);
                inputs.for_each(|t| straddle(t.saturating_add(ttl)));
            }
            // A design's server: each of its expiries after each input, as
            // the server rounds it.
            Some(design) => {
                for t in inputs {
                    for &expiry in &design.expiries {
                        straddle(design.expiry_at(t, expiry));
                    }
                }
            }
        }
    }
    set.range(from_ns..window).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(grid_ms: u64, boundaries: bool) -> Bounds {
        Bounds {
            faults: 1,
            kinds: vec![FaultKind::Pause],
            servers: false,
            grid: Duration::from_millis(grid_ms),
            boundaries,
            lengths: vec![Duration::from_secs(1)],
            latencies: vec![Duration::from_millis(1)],
            deviations: 0,
            drops: 0,
            duplicates: 0,
            reorders: 0,
            max_states: 10,
            jobs: 1,
            deduplicate: true,
            symmetry: false,
        }
    }

    fn scenario() -> Scenario {
        let mut s = Scenario::new("t", Duration::from_secs(10));
        s.nodes.push(crate::scenario::NodeSpec::new("a"));
        s.election.lease_ttl = Duration::from_secs(3);
        s
    }

    #[test]
    fn starts_are_the_grid_and_each_boundary_with_its_neighbours() {
        let noted = NotedInstants {
            timers_ns: vec![5_000_000_000],
            server_inputs_ns: vec![1_000_000_000],
        };
        let s = scenario();
        let grid_only = starts(&s, &bounds(4_000, false), &noted, 0);
        assert_eq!(grid_only, vec![4_000_000_000, 8_000_000_000]);
        let all = starts(&s, &bounds(4_000, true), &noted, 0);
        assert_eq!(
            all,
            vec![
                // The lease granted at 1 s expires at 4 s: the grid's 4 s too.
                3_999_999_999,
                4_000_000_000,
                4_000_000_001,
                4_999_999_999,
                5_000_000_000,
                5_000_000_001,
                8_000_000_000
            ]
        );
        // From an instant on, and never at or past the window's end.
        assert_eq!(
            starts(&s, &bounds(4_000, true), &noted, 5_000_000_000),
            vec![5_000_000_000, 5_000_000_001, 8_000_000_000]
        );
    }

    #[test]
    fn a_designs_server_expiries_are_start_instants_as_its_server_rounds_them() {
        // ZooKeeper with its defaults: a 60 s session on a 3 s tick. A
        // packet at 1 s expires the session at roundToNextInterval(61 s) =
        // 63 s, not at 1 s + the fenced lease_ttl (4 s here).
        let mut s = scenario();
        s.duration = Duration::from_secs(100);
        s.election.protocol =
            crate::scenario::ProtocolSpec::by_name("zookeeper").expect("a design");
        let noted = NotedInstants {
            timers_ns: Vec::new(),
            server_inputs_ns: vec![1_000_000_000],
        };
        let all = starts(&s, &bounds(1_000_000, true), &noted, 0);
        assert_eq!(all, vec![62_999_999_999, 63_000_000_000, 63_000_000_001]);
        // Redlock's key: `SET ... PX 10000` at 1 s is gone just after 11 s.
        s.election.protocol = crate::scenario::ProtocolSpec::by_name("redlock").expect("a design");
        let all = starts(&s, &bounds(1_000_000, true), &noted, 0);
        assert_eq!(all, vec![10_999_999_999, 11_000_000_000, 11_000_000_001]);
        // client-go's apiserver expires nothing: its candidates judge at
        // their own ticks, which are timers.
        s.election.protocol =
            crate::scenario::ProtocolSpec::by_name("client-go").expect("a design");
        assert!(starts(&s, &bounds(1_000_000, true), &noted, 0).is_empty());
    }

    #[test]
    fn boundary_lengths_straddle_validity_ttl_and_rejoin() {
        let s = scenario();
        let lengths = boundary_lengths(&s);
        let ttl = s.election.lease_ttl;
        let one = Duration::from_nanos(1);
        for needed in [ttl - one, ttl, ttl + one, s.election.renew_interval] {
            assert!(lengths.contains(&needed), "{needed:?} in {lengths:?}");
        }
        assert!(lengths.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn kinds_parse_by_name_and_refuse_others() {
        for kind in FaultKind::ALL {
            assert_eq!(kind.name().parse::<FaultKind>(), Ok(kind));
        }
        let err = "slew".parse::<FaultKind>().unwrap_err();
        assert!(err
            .to_string()
            .contains("pause, isolate, crash, replace, stop"));
    }
}
