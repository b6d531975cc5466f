//! Writing a [`Scenario`] back as a scenario file.
//!
//! Used to save what exploration and shrinking found as standalone scenarios:
//! the output parses back (with [`crate::file::parse`]) to an equal scenario —
//! durations are written in humantime syntax down to the nanosecond, and
//! floats with Rust's shortest round-trip representation.

use std::fmt::Write as _;
use std::time::Duration;

use crate::scenario::{
    Anchor, Client, Election, FaultSpec, Membership, Network, ProtocolSpec, Scenario, StoreClock,
    Work,
};
use crate::units::human;

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn dur(d: Duration) -> String {
    quoted(&human(d))
}

/// A seed as TOML: an integer while it fits TOML's `i64`, a quoted decimal
/// string above (`crate::file` reads both), so every `u64` seed round-trips.
fn seed(seed: u64) -> String {
    if i64::try_from(seed).is_ok() {
        seed.to_string()
    } else {
        quoted(&seed.to_string())
    }
}

fn float(x: f64) -> String {
    format!("{x:?}")
}

/// The scenario as TOML text, with every non-default setting written out.
pub fn to_toml(s: &Scenario) -> String {
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(o, "name = {}", quoted(&s.name));
    if let Some(description) = &s.description {
        let _ = writeln!(o, "description = {}", quoted(description));
    }
    let _ = writeln!(o, "seed = {}", seed(s.seed));
    let _ = writeln!(o, "duration = {}", dur(s.duration));
    if let Some(heal_at) = s.heal_at {
        let _ = writeln!(o, "heal_at = {}", dur(heal_at));
    }
    write_election(o, &s.election);
    write_membership(o, &s.membership);
    write_work(o, &s.work);
    write_network(o, &s.network);
    write_client(o, &s.client);
    if !s.fencing || s.durability.downstream.is_some() {
        let _ = writeln!(o, "\n[downstream]\nfencing = {}", s.fencing);
        if let Some(durable) = s.durability.downstream {
            let _ = writeln!(o, "durable = {durable}");
        }
    }
    let store_clock = (s.store_clock != StoreClock::default()).then_some(s.store_clock);
    if s.durability.store.is_some() || store_clock.is_some() {
        let _ = writeln!(o, "\n[store]");
        if let Some(durable) = s.durability.store {
            let _ = writeln!(o, "durable = {durable}");
        }
        if let Some(clock) = store_clock {
            let _ = writeln!(o, "clock = {}", quoted(clock.name()));
        }
    }
    for node in &s.nodes {
        let _ = writeln!(o, "\n[[node]]\nid = {}", quoted(&node.id));
        if node.clock_offset.0 != 0 {
            let _ = writeln!(
                o,
                "clock_offset = {}",
                quoted(&node.clock_offset.to_string())
            );
        }
        if node.clock_drift != 0.0 {
            let _ = writeln!(o, "clock_drift = {}", float(node.clock_drift));
        }
        if !node.start_at.is_zero() {
            let _ = writeln!(o, "start_at = {}", dur(node.start_at));
        }
        if let Some(own) = &node.protocol {
            // Read back over the [election] settings: written as the keys
            // that differ from those.
            let lines = crate::file::settings_diff(own, &s.election.protocol);
            let _ = writeln!(o, "\n[node.{}]", own.name());
            for line in lines {
                let _ = writeln!(o, "{line}");
            }
        }
    }
    for fault in &s.faults {
        write_fault(o, fault);
    }
    write_expect(o, s);
    out
}

fn write_election(o: &mut String, e: &Election) {
    if *e == Election::default() {
        return;
    }
    let _ = writeln!(o, "\n[election]\nrole = {}", quoted(&e.role));
    let _ = writeln!(o, "lease_ttl = {}", dur(e.lease_ttl));
    let _ = writeln!(o, "renew_interval = {}", dur(e.renew_interval));
    let _ = writeln!(o, "retry_interval = {}", dur(e.retry_interval));
    if let Some(margin) = e.safety_margin {
        let _ = writeln!(o, "safety_margin = {}", dur(margin));
    }
    if let Some(rejoin) = e.rejoin_delay {
        let _ = writeln!(o, "rejoin_delay = {}", dur(rejoin));
    }
    if !e.release_on_deadline {
        let _ = writeln!(o, "release_on_deadline = false");
    }
    if e.jitter != 0.0 {
        let _ = writeln!(o, "jitter = {}", float(e.jitter));
    }
    if e.protocol != ProtocolSpec::Fenced {
        let name = e.protocol.name();
        let _ = writeln!(o, "protocol = {}", quoted(name));
        let lines = crate::file::settings_toml(&e.protocol);
        if !lines.is_empty() {
            let _ = writeln!(o, "\n[election.{name}]\n{}", lines.join("\n"));
        }
    }
}

fn write_membership(o: &mut String, m: &Membership) {
    if *m == Membership::default() {
        return;
    }
    let _ = writeln!(
        o,
        "\n[membership]\nheartbeat_interval = {}\nliveness_ttl = {}",
        dur(m.heartbeat_interval),
        dur(m.liveness_ttl)
    );
}

fn write_work(o: &mut String, w: &Work) {
    if *w == Work::default() {
        return;
    }
    let _ = writeln!(
        o,
        "\n[work]\nwrite_interval = {}\nwork_duration = {}",
        dur(w.write_interval),
        dur(w.work_duration)
    );
    if let Some(resource) = &w.resource {
        let _ = writeln!(o, "resource = {}", quoted(resource));
    }
    if w.write_retries != Work::default().write_retries {
        let _ = writeln!(o, "write_retries = {}", w.write_retries);
    }
}

fn write_client(o: &mut String, c: &Client) {
    if *c == Client::default() {
        return;
    }
    let _ = writeln!(
        o,
        "\n[client]\ntransport = {}\nconnect_timeout = {}\nquery_timeout = {}\nquery_grace = {}",
        quoted(c.transport.name()),
        dur(c.connect_timeout),
        dur(c.query_timeout),
        dur(c.query_grace)
    );
}

fn write_network(o: &mut String, n: &Network) {
    if *n == Network::default() {
        return;
    }
    let _ = writeln!(
        o,
        "\n[network]\nlatency = [{}, {}]\nloss = {}\nduplicate = {}",
        dur(n.latency.0),
        dur(n.latency.1),
        float(n.loss),
        float(n.duplicate)
    );
    if n.retransmit_timeout != Network::default().retransmit_timeout {
        let _ = writeln!(o, "retransmit_timeout = {}", dur(n.retransmit_timeout));
    }
    if let Some(script) = &n.script {
        let _ = write!(
            o,
            "\n[network.script]\nlatency = {}\nchoices = [",
            dur(script.latency)
        );
        for (i, c) in script.choices.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(o, "{sep}{{ draw = {}, latency = {}", c.draw, dur(c.latency));
            if c.lost {
                let _ = write!(o, ", lost = true");
            }
            if let Some(copy) = c.duplicate {
                let _ = write!(o, ", duplicate = {}", dur(copy));
            }
            let _ = write!(o, " }}");
        }
        let _ = writeln!(o, "]");
        if !script.reorders.is_empty() {
            let points: Vec<String> = script.reorders.iter().map(u64::to_string).collect();
            let _ = writeln!(o, "reorder = [{}]", points.join(", "));
        }
    }
}

fn write_fault(o: &mut String, fault: &FaultSpec) {
    let _ = writeln!(o, "\n[[fault]]\nkind = {}", quoted(fault.kind_name()));
    let (fault, anchor) = match fault {
        FaultSpec::Anchored { when, fault } => (&**fault, Some(when)),
        fault => (fault, None),
    };
    // An anchored fault's `at` is its anchor, the instant its `after`.
    let at_text = |at: Duration| match anchor {
        Some(anchor) => anchor_table(anchor, at),
        None => dur(at),
    };
    match fault {
        FaultSpec::Anchored { .. } => unreachable!("validation refuses nested anchors"),
        FaultSpec::Pause { host, at, duration } | FaultSpec::Isolate { host, at, duration } => {
            let _ = writeln!(
                o,
                "node = {}\nat = {}\nduration = {}",
                quoted(host),
                at_text(*at),
                dur(*duration)
            );
        }
        FaultSpec::Cut {
            from,
            to,
            at,
            duration,
        } => {
            let _ = writeln!(
                o,
                "from = {}\nto = {}\nat = {}\nduration = {}",
                quoted(from),
                quoted(to),
                at_text(*at),
                dur(*duration)
            );
        }
        FaultSpec::Partition {
            groups,
            at,
            duration,
        } => {
            let groups: Vec<String> = groups
                .iter()
                .map(|g| {
                    let hosts: Vec<String> = g.iter().map(|h| quoted(h)).collect();
                    format!("[{}]", hosts.join(", "))
                })
                .collect();
            let _ = writeln!(
                o,
                "groups = [{}]\nat = {}\nduration = {}",
                groups.join(", "),
                at_text(*at),
                dur(*duration)
            );
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
        } => {
            let _ = writeln!(o, "node = {}\nat = {}", quoted(node), at_text(*at));
            if let Some(after) = restart_after {
                let _ = writeln!(o, "restart_after = {}", dur(*after));
            }
        }
        FaultSpec::Restart {
            host,
            at,
            duration,
            durable,
        } => {
            let _ = writeln!(
                o,
                "node = {}\nat = {}\nduration = {}",
                quoted(host),
                at_text(*at),
                dur(*duration)
            );
            if let Some(durable) = durable {
                let _ = writeln!(o, "durable = {durable}");
            }
        }
        FaultSpec::ClockJump { host, at, by } => {
            let _ = writeln!(
                o,
                "node = {}\nat = {}\nby = {}",
                quoted(host),
                at_text(*at),
                quoted(&by.to_string())
            );
        }
        FaultSpec::ClockSlew { host, at, by, rate } => {
            let _ = writeln!(
                o,
                "node = {}\nat = {}\nby = {}\nrate = {}",
                quoted(host),
                at_text(*at),
                quoted(&by.to_string()),
                float(*rate)
            );
        }
        FaultSpec::ClockStrobe {
            host,
            at,
            by,
            period,
            duration,
        } => {
            let _ = writeln!(
                o,
                "node = {}\nat = {}\nby = {}\nperiod = {}\nduration = {}",
                quoted(host),
                at_text(*at),
                quoted(&by.to_string()),
                dur(*period),
                dur(*duration)
            );
        }
        FaultSpec::Replace { node, at } | FaultSpec::Abdicate { node, at } => {
            let _ = writeln!(o, "node = {}\nat = {}", quoted(node), at_text(*at));
        }
        FaultSpec::Recurring {
            node,
            every,
            duration,
            ..
        } => {
            let node = node.as_deref().unwrap_or("*");
            let range = if duration.low == duration.high {
                dur(duration.low)
            } else {
                format!("[{}, {}]", dur(duration.low), dur(duration.high))
            };
            let _ = writeln!(
                o,
                "node = {}\nevery = {}\nduration = {range}",
                quoted(node),
                dur(*every)
            );
        }
    }
}

/// An anchor as the inline table of a fault's `at`: `{ event = "work-started",
/// node = "node-a", after = "12s" }` (`token` and `delay` when set).
fn anchor_table(anchor: &Anchor, after: Duration) -> String {
    let mut parts = vec![format!("event = {}", quoted(anchor.event.name()))];
    if let Some(node) = &anchor.node {
        parts.push(format!("node = {}", quoted(node)));
    }
    if let Some(token) = anchor.token {
        parts.push(format!("token = {token}"));
    }
    parts.push(format!("after = {}", dur(after)));
    if !anchor.delay.is_zero() {
        parts.push(format!("delay = {}", dur(anchor.delay)));
    }
    format!("{{ {} }}", parts.join(", "))
}

fn write_expect(o: &mut String, s: &Scenario) {
    let x = &s.expect;
    let mut lines = Vec::new();
    if let Some(v) = x.split_brain {
        lines.push(format!("split_brain = {v}"));
    }
    let counts = [
        ("violations", x.violations),
        ("min_leader_changes", x.min_leader_changes),
        ("max_leader_changes", x.max_leader_changes),
        ("max_spurious_failovers", x.max_spurious_failovers),
        ("min_spurious_failovers", x.min_spurious_failovers),
        ("min_rejected_writes", x.min_rejected_writes),
        ("max_token", x.max_token),
        ("min_membership_flaps", x.min_membership_flaps),
    ];
    for (key, value) in counts {
        if let Some(v) = value {
            lines.push(format!("{key} = {v}"));
        }
    }
    let spans = [
        ("max_failover", x.max_failover),
        ("max_overlap", x.max_overlap),
        ("min_overlap", x.min_overlap),
    ];
    for (key, value) in spans {
        if let Some(v) = value {
            lines.push(format!("{key} = {}", dur(v)));
        }
    }
    if let Some(v) = x.leader_at_end {
        lines.push(format!("leader_at_end = {v}"));
    }
    if let Some(v) = x.anchors_begin {
        lines.push(format!("anchors_begin = {v}"));
    }
    if !lines.is_empty() {
        let _ = writeln!(o, "\n[expect]\n{}", lines.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::parse;
    use std::path::Path;

    #[test]
    fn generated_schedules_round_trip_through_toml() {
        let base = crate::explore::default_base();
        for seed in 0..200 {
            let (scenario, _) = crate::explore::generate(&base, seed);
            let text = to_toml(&scenario);
            let back = parse(&text, Path::new("round-trip.toml"))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            assert_eq!(back, scenario, "seed {seed}:\n{text}");
        }
    }

    #[test]
    fn every_u64_seed_round_trips_through_toml() {
        // Proves seeds above i64::MAX (TOML's largest integer) are written in
        // a form the loader reads back to the same u64.
        for seed in [
            0,
            1,
            i64::MAX as u64,
            i64::MAX as u64 + 1,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut scenario = crate::explore::default_base();
            scenario.seed = seed;
            let text = to_toml(&scenario);
            let back = parse(&text, Path::new("seed.toml"))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            assert_eq!(back.seed, seed);
            assert_eq!(back, scenario);
        }
    }

    #[test]
    fn shipped_scenarios_round_trip_through_toml() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|x| x == "toml") {
                let scenario = crate::file::load(&path).unwrap();
                let back = parse(&to_toml(&scenario), &path).unwrap();
                assert_eq!(back, scenario, "{}", path.display());
                seen += 1;
            }
        }
        assert!(seen >= 16);
    }
}
