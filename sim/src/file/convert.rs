//! Building a [`Scenario`] from the raw tree: defaults filled in, `count`
//! expanded, every key's span noted for placing later errors.

use std::ops::Range;

use toml::Spanned;

use super::fault::convert_fault;
use super::place::Spans;
use super::raw::{RawElection, RawExpect, RawNode, RawScenario};
use super::values::{
    count, duration, duration_range, opt_duration, probability, seed_value, signed_offset,
};
use crate::scenario::{
    Client, Election, Expectations, Membership, Network, NodeSpec, Scenario, Transport, Work,
};

/// A value the raw tree holds but a scenario cannot: the key, its span and
/// what is wrong.
pub(super) struct ConvertError {
    /// The key at fault (`fault[1].node`).
    pub(super) key: String,
    /// Where its value is, when known.
    pub(super) span: Option<Range<usize>>,
    /// What is wrong and what is allowed.
    pub(super) message: String,
}

/// Refuses the value of `key` at `span`.
pub(super) fn err<T>(
    key: &str,
    span: Range<usize>,
    message: impl Into<String>,
) -> Result<T, ConvertError> {
    Err(ConvertError {
        key: key.to_string(),
        span: Some(span),
        message: message.into(),
    })
}

/// The scenario `raw` describes, before validation.
pub(super) fn convert(raw: RawScenario, spans: &mut Spans) -> Result<Scenario, ConvertError> {
    spans.note("name", &raw.name);
    let duration_value = duration("duration", &raw.duration, spans)?;
    let mut scenario = Scenario::new(raw.name.get_ref().clone(), duration_value);
    scenario.description = raw.description;
    scenario.heal_at = opt_duration("heal_at", &raw.heal_at, spans)?;
    if let Some(seed) = &raw.seed {
        scenario.seed = seed_value(seed, spans)?;
    }
    if let Some(e) = &raw.election {
        scenario.election = convert_election(e, spans)?;
    }
    if let Some(m) = &raw.membership {
        let d = Membership::default();
        scenario.membership = Membership {
            heartbeat_interval: opt_duration(
                "membership.heartbeat_interval",
                &m.heartbeat_interval,
                spans,
            )?
            .unwrap_or(d.heartbeat_interval),
            liveness_ttl: opt_duration("membership.liveness_ttl", &m.liveness_ttl, spans)?
                .unwrap_or(d.liveness_ttl),
        };
    }
    if let Some(w) = &raw.work {
        let d = Work::default();
        if let Some(r) = &w.resource {
            spans.note("work.resource", r);
        }
        scenario.work = Work {
            write_interval: opt_duration("work.write_interval", &w.write_interval, spans)?
                .unwrap_or(d.write_interval),
            work_duration: opt_duration("work.work_duration", &w.work_duration, spans)?
                .unwrap_or(d.work_duration),
            resource: w.resource.as_ref().map(|r| r.get_ref().clone()),
            write_retries: match count("work.write_retries", &w.write_retries, spans)? {
                None => d.write_retries,
                Some(n) => u32::try_from(n).map_err(|_| ConvertError {
                    key: "work.write_retries".to_string(),
                    span: w.write_retries.as_ref().map(|v| v.span()),
                    message: format!("{n} is too many retries"),
                })?,
            },
        };
    }
    if let Some(n) = &raw.network {
        let d = Network::default();
        let latency = match &n.latency {
            Some(l) => {
                let range = duration_range("network.latency", l, spans)?;
                (range.low, range.high)
            }
            None => d.latency,
        };
        scenario.network = Network {
            latency,
            loss: probability("network.loss", &n.loss, spans)?,
            duplicate: probability("network.duplicate", &n.duplicate, spans)?,
            retransmit_timeout: opt_duration(
                "network.retransmit_timeout",
                &n.retransmit_timeout,
                spans,
            )?
            .unwrap_or(d.retransmit_timeout),
            script: match &n.script {
                Some(raw) => Some(script(raw, spans)?),
                None => None,
            },
        };
    }
    if let Some(c) = &raw.client {
        let d = Client::default();
        scenario.client = Client {
            transport: match c.transport {
                None => d.transport,
                Some(super::raw::RawTransport::Sessions) => Transport::Sessions,
                Some(super::raw::RawTransport::Datagrams) => Transport::Datagrams,
            },
            connect_timeout: opt_duration("client.connect_timeout", &c.connect_timeout, spans)?
                .unwrap_or(d.connect_timeout),
            query_timeout: opt_duration("client.query_timeout", &c.query_timeout, spans)?
                .unwrap_or(d.query_timeout),
            query_grace: opt_duration("client.query_grace", &c.query_grace, spans)?
                .unwrap_or(d.query_grace),
        };
    }
    if let Some(ds) = &raw.downstream {
        scenario.fencing = ds.fencing.unwrap_or(true);
        scenario.durability.downstream = ds.durable;
    }
    if let Some(store) = &raw.store {
        scenario.durability.store = store.durable;
        if let Some(clock) = store.clock {
            scenario.store_clock = match clock {
                super::raw::RawStoreClock::Wall => crate::scenario::StoreClock::Wall,
                super::raw::RawStoreClock::Monotonic => crate::scenario::StoreClock::Monotonic,
            };
        }
    }
    for (i, node) in raw.node.iter().enumerate() {
        convert_node(i, node, &mut scenario, spans)?;
    }
    for (i, fault) in raw.fault.iter().enumerate() {
        let spec = convert_fault(i, fault, spans)?;
        scenario.faults.push(spec);
    }
    if let Some(x) = &raw.expect {
        scenario.expect = convert_expect(x, spans)?;
    }
    Ok(scenario)
}

/// The `[election]` table.
fn convert_election(e: &RawElection, spans: &mut Spans) -> Result<Election, ConvertError> {
    let d = Election::default();
    if let Some(role) = &e.role {
        spans.note("election.role", role);
    }
    let jitter = match &e.jitter {
        Some(j) => {
            spans.note("election.jitter", j);
            let f = *j.get_ref();
            if !(0.0..1.0).contains(&f) {
                return err(
                    "election.jitter",
                    j.span(),
                    format!("{f} is outside [0, 1)"),
                );
            }
            f
        }
        None => 0.0,
    };
    Ok(Election {
        role: e.role.as_ref().map_or(d.role, |r| r.get_ref().clone()),
        lease_ttl: opt_duration("election.lease_ttl", &e.lease_ttl, spans)?.unwrap_or(d.lease_ttl),
        renew_interval: opt_duration("election.renew_interval", &e.renew_interval, spans)?
            .unwrap_or(d.renew_interval),
        retry_interval: opt_duration("election.retry_interval", &e.retry_interval, spans)?
            .unwrap_or(d.retry_interval),
        safety_margin: opt_duration("election.safety_margin", &e.safety_margin, spans)?,
        rejoin_delay: opt_duration("election.rejoin_delay", &e.rejoin_delay, spans)?,
        release_on_deadline: e.release_on_deadline.unwrap_or(true),
        jitter,
        protocol: super::protocol::protocol(e, spans)?,
    })
}

/// The `index`-th `[[node]]`, added to `scenario` (`count` copies of it
/// when it has a `count`).
fn convert_node(
    index: usize,
    node: &Spanned<RawNode>,
    scenario: &mut Scenario,
    spans: &mut Spans,
) -> Result<(), ConvertError> {
    let raw = node.get_ref();
    // Validation errors speak of the expanded index; note both.
    let first = scenario.nodes.len();
    let key = format!("node[{index}]");
    spans.note(&key, node);
    let mut spec = NodeSpec::new(raw.id.get_ref().clone());
    if let Some(offset) = &raw.clock_offset {
        spec.clock_offset = signed_offset(&format!("{key}.clock_offset"), offset, spans)?;
    }
    if let Some(drift) = &raw.clock_drift {
        spans.note(&format!("{key}.clock_drift"), drift);
        spec.clock_drift = *drift.get_ref();
    }
    if let Some(start) = &raw.start_at {
        spec.start_at = duration(&format!("{key}.start_at"), start, spans)?;
    }
    let tables = super::protocol::DesignTables {
        connection_lock: &raw.connection_lock,
        client_go: &raw.client_go,
        etcd: &raw.etcd,
        redlock: &raw.redlock,
        zookeeper: &raw.zookeeper,
        dynamodb: &raw.dynamodb,
    };
    if tables.any() {
        let mut own = scenario.election.protocol.clone();
        super::protocol::apply_tables(&key, &tables, &mut own, spans)?;
        spec.protocol = Some(own);
    }
    let copies = match &raw.count {
        None => None,
        Some(c) => {
            let n = *c.get_ref();
            if !(1..=10_000).contains(&n) {
                return err(
                    &format!("{key}.count"),
                    c.span(),
                    format!("{n} is outside 1..=10000"),
                );
            }
            Some(n as usize)
        }
    };
    match copies {
        None => {
            spans.note_span(format!("node[{first}].id"), raw.id.span());
            spans.note_span(format!("node[{first}]"), node.span());
            scenario.nodes.push(spec);
        }
        Some(n) => {
            let width = n.to_string().len();
            for i in 1..=n {
                let mut copy = spec.clone();
                copy.id = format!("{}-{i:0width$}", raw.id.get_ref());
                spans.note_span(format!("node[{}].id", scenario.nodes.len()), raw.id.span());
                spans.note_span(format!("node[{}]", scenario.nodes.len()), node.span());
                scenario.nodes.push(copy);
            }
        }
    }
    Ok(())
}

/// The `[expect]` table.
fn convert_expect(x: &RawExpect, spans: &mut Spans) -> Result<Expectations, ConvertError> {
    Ok(Expectations {
        split_brain: x.split_brain,
        violations: count("expect.violations", &x.violations, spans)?,
        min_leader_changes: count("expect.min_leader_changes", &x.min_leader_changes, spans)?,
        max_leader_changes: count("expect.max_leader_changes", &x.max_leader_changes, spans)?,
        max_failover: opt_duration("expect.max_failover", &x.max_failover, spans)?,
        max_spurious_failovers: count(
            "expect.max_spurious_failovers",
            &x.max_spurious_failovers,
            spans,
        )?,
        min_spurious_failovers: count(
            "expect.min_spurious_failovers",
            &x.min_spurious_failovers,
            spans,
        )?,
        min_rejected_writes: count("expect.min_rejected_writes", &x.min_rejected_writes, spans)?,
        max_overlap: opt_duration("expect.max_overlap", &x.max_overlap, spans)?,
        min_overlap: opt_duration("expect.min_overlap", &x.min_overlap, spans)?,
        max_token: count("expect.max_token", &x.max_token, spans)?,
        min_membership_flaps: count(
            "expect.min_membership_flaps",
            &x.min_membership_flaps,
            spans,
        )?,
        leader_at_end: x.leader_at_end,
        anchors_begin: x.anchors_begin,
    })
}

/// `[network.script]`, as written (its rules are the scenario's).
fn script(
    raw: &super::raw::RawScript,
    spans: &mut Spans,
) -> Result<crate::scenario::LatencyScript, ConvertError> {
    let latency = duration("network.script.latency", &raw.latency, spans)?;
    let choices = raw
        .choices
        .iter()
        .flatten()
        .map(
            |c| -> Result<crate::scenario::LatencyChoice, ConvertError> {
                let lost = c.lost.unwrap_or(false);
                // A lost datagram has no latency; a lost segment's defaults to
                // the script's, as every draw's does.
                let latency = match &c.latency {
                    Some(raw) => duration("network.script.choices", raw, spans)?,
                    None if lost => latency,
                    None => {
                        return Err(ConvertError {
                            key: "network.script.choices".to_string(),
                            span: None,
                            message: format!("draw {}: needs a latency (or lost = true)", c.draw),
                        })
                    }
                };
                let duplicate = match &c.duplicate {
                    Some(raw) => Some(duration("network.script.choices", raw, spans)?),
                    None => None,
                };
                Ok(crate::scenario::LatencyChoice {
                    draw: c.draw,
                    latency,
                    lost,
                    duplicate,
                })
            },
        )
        .collect::<Result<_, ConvertError>>()?;
    Ok(crate::scenario::LatencyScript {
        latency,
        choices,
        reorders: raw.reorder.clone().unwrap_or_default(),
    })
}
