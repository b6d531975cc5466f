//! The rules of a valid scenario ([`Scenario::validate`]), checked once when
//! it is loaded or run, and the warnings of a valid one that is probably not
//! what was meant ([`Scenario::warnings`]).

use std::collections::BTreeSet;
use std::time::Duration;

use fenced::{ElectorConfig, NodeId, OwnerId};

use super::{
    Anchor, ClockOffset, FaultSpec, RecurringKind, Scenario, ScenarioError, DOWNSTREAM,
    LEASE_STORE, MAX_NODE_ID_LEN,
};
use crate::engine::clock::{MAX_CLOCK_DRIFT, MAX_CLOCK_OFFSET_NANOS};
use crate::engine::limits::{MAX_SPAN, MAX_UNITS_IN_PROGRESS, MAX_WRITE_RETRIES};
use crate::engine::slew::MAX_SLEW_RATE;
use crate::units::human;

/// Refuses a duration longer than [`MAX_SPAN`] (one year), naming `key`.
fn at_most_a_year(key: &str, d: Duration) -> Result<(), ScenarioError> {
    if d > MAX_SPAN {
        return Err(ScenarioError::new(
            key,
            format!("{} is longer than the limit of one year", human(d)),
        ));
    }
    Ok(())
}

/// Refuses a zero duration, naming `key`.
fn more_than_zero(key: &str, d: Duration) -> Result<(), ScenarioError> {
    if d.is_zero() {
        return Err(ScenarioError::new(key, "must be greater than zero"));
    }
    Ok(())
}

impl Scenario {
    /// Checks every rule; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.name.trim().is_empty() {
            return Err(ScenarioError::new("name", "must not be empty"));
        }
        more_than_zero("duration", self.duration)?;
        if self.duration > Duration::from_secs(365 * 24 * 3600) {
            return Err(ScenarioError::new("duration", "must be at most one year"));
        }
        if let Some(heal_at) = self.heal_at {
            if heal_at >= self.duration {
                return Err(ScenarioError::new(
                    "heal_at",
                    format!(
                        "{} is not inside the run's duration of {}; the liveness phase needs time after it",
                        human(heal_at),
                        human(self.duration)
                    ),
                ));
            }
        }
        self.validate_election()?;
        self.validate_membership_and_work()?;
        self.validate_network()?;
        self.validate_client()?;
        let servers = self.election.protocol.server_names();
        let hosts = self.validate_nodes(&servers)?;
        self.validate_faults(&hosts)?;
        Ok(())
    }

    /// What is legal but probably not what was meant, one sentence each with
    /// its key: shown by `run` and `check`, never an error.
    pub fn warnings(&self) -> Vec<ScenarioError> {
        let mut warnings = Vec::new();
        let validity = self
            .election
            .lease_ttl
            .saturating_sub(self.election.effective_safety_margin());
        let round_trip = self.network.latency.1.saturating_mul(2);
        if round_trip >= validity {
            warnings.push(ScenarioError::new(
                "network.latency",
                format!(
                    "the longest round trip (2 × {}) is not shorter than lease_ttl - safety_margin \
                     ({}): answers that slow arrive after the validity they give and are not acted \
                     on, so elections stall while the network is that slow",
                    human(self.network.latency.1),
                    human(validity)
                ),
            ));
        }
        if self.network.loss >= 1.0 {
            warnings.push(ScenarioError::new(
                "network.loss",
                "every message is lost: no node can ever lead",
            ));
        }
        warnings
    }

    fn validate_election(&self) -> Result<(), ScenarioError> {
        let e = &self.election;
        at_most_a_year("election.renew_interval", e.renew_interval)?;
        at_most_a_year("election.retry_interval", e.retry_interval)?;
        if let Some(rejoin) = e.rejoin_delay {
            at_most_a_year("election.rejoin_delay", rejoin)?;
        }
        let role = self.role()?;
        more_than_zero("election.lease_ttl", e.lease_ttl)?;
        if e.lease_ttl > fenced::LeaseStoreConfig::DEFAULT_MAX_TTL {
            return Err(ScenarioError::new(
                "election.lease_ttl",
                format!(
                    "{} is above the lease store's maximum of {}",
                    human(e.lease_ttl),
                    human(fenced::LeaseStoreConfig::DEFAULT_MAX_TTL)
                ),
            ));
        }
        if !(0.0..1.0).contains(&e.jitter) {
            return Err(ScenarioError::new(
                "election.jitter",
                format!("{} is outside [0, 1)", e.jitter),
            ));
        }
        // The elector's own validation is the single source of truth.
        let owner =
            OwnerId::new("validation").map_err(|e| ScenarioError::new("node", e.to_string()))?;
        ElectorConfig::new(owner, role, e.timings(0)).map_err(|err| {
            let key = match err {
                fenced::ConfigError::ZeroLeaseTtl => "election.lease_ttl",
                fenced::ConfigError::ZeroRenewInterval
                | fenced::ConfigError::RenewIntervalTooLong { .. } => "election.renew_interval",
                fenced::ConfigError::ZeroRetryInterval => "election.retry_interval",
                fenced::ConfigError::SafetyMarginTooLarge { .. } => "election.safety_margin",
                fenced::ConfigError::JitterOutOfRange { .. } => "election.jitter",
            };
            ScenarioError::new(key, err.to_string())
        })?;
        let protocol = &e.protocol;
        protocol
            .validate()
            .map_err(|err| ScenarioError::new(format!("election.{protocol}"), err.to_string()))?;
        if self.fencing && !protocol.has_token() {
            return Err(ScenarioError::new(
                "downstream.fencing",
                format!(
                    "protocol `{protocol}` has no token a downstream could fence with; set \
                     `fencing = false` in [downstream]"
                ),
            ));
        }
        Ok(())
    }

    fn validate_membership_and_work(&self) -> Result<(), ScenarioError> {
        let m = &self.membership;
        at_most_a_year("membership.heartbeat_interval", m.heartbeat_interval)?;
        at_most_a_year("membership.liveness_ttl", m.liveness_ttl)?;
        at_most_a_year("work.write_interval", self.work.write_interval)?;
        at_most_a_year("work.work_duration", self.work.work_duration)?;
        more_than_zero("membership.heartbeat_interval", m.heartbeat_interval)?;
        more_than_zero("membership.liveness_ttl", m.liveness_ttl)?;
        more_than_zero("work.write_interval", self.work.write_interval)?;
        // A leader starts a unit every write_interval, each lasting
        // work_duration: that many are in progress at once.
        let in_progress = self.work.work_duration.as_nanos() / self.work.write_interval.as_nanos();
        if in_progress > MAX_UNITS_IN_PROGRESS {
            return Err(ScenarioError::new(
                "work.work_duration",
                format!(
                    "{} with a unit starting every {} (work.write_interval) keeps {in_progress} \
                     units in progress at once; at most {MAX_UNITS_IN_PROGRESS} are supported",
                    human(self.work.work_duration),
                    human(self.work.write_interval)
                ),
            ));
        }
        self.resource()?;
        Ok(())
    }

    fn validate_client(&self) -> Result<(), ScenarioError> {
        let rto = self.network.retransmit_timeout;
        more_than_zero("network.retransmit_timeout", rto)?;
        if rto > Duration::from_secs(3600) {
            return Err(ScenarioError::new(
                "network.retransmit_timeout",
                "must be at most one hour",
            ));
        }
        let c = &self.client;
        at_most_a_year("client.connect_timeout", c.connect_timeout)?;
        at_most_a_year("client.query_timeout", c.query_timeout)?;
        at_most_a_year("client.query_grace", c.query_grace)?;
        more_than_zero("client.connect_timeout", c.connect_timeout)?;
        more_than_zero("client.query_timeout", c.query_timeout)?;
        if self.work.write_retries > MAX_WRITE_RETRIES {
            return Err(ScenarioError::new(
                "work.write_retries",
                format!(
                    "{} retries of one write; at most {MAX_WRITE_RETRIES} are supported",
                    self.work.write_retries
                ),
            ));
        }
        Ok(())
    }

    fn validate_network(&self) -> Result<(), ScenarioError> {
        let n = &self.network;
        if n.latency.0 > n.latency.1 {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the range is inverted: minimum {} is above maximum {}; write [min, max]",
                    human(n.latency.0),
                    human(n.latency.1)
                ),
            ));
        }
        if n.latency.1 > Duration::from_secs(3600) {
            return Err(ScenarioError::new(
                "network.latency",
                "must be at most one hour",
            ));
        }
        // An answer is usable only while the validity its request gives
        // (send + lease_ttl - safety_margin) lies ahead, and only among the
        // last MAX_OUTSTANDING requests: a network slower than that can never
        // elect anyone.
        let validity = self
            .election
            .lease_ttl
            .saturating_sub(self.election.effective_safety_margin());
        let round_trip = n.latency.0.saturating_mul(2);
        if round_trip >= validity {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the shortest round trip (2 × {}) is not shorter than lease_ttl - safety_margin \
                     ({}): every answer would arrive after the validity it gives, so no node could \
                     ever lead; lower the latency or lengthen election.lease_ttl",
                    human(n.latency.0),
                    human(validity)
                ),
            ));
        }
        let remembered = self
            .election
            .retry_interval
            .saturating_mul(fenced::MAX_OUTSTANDING as u32);
        if round_trip >= remembered {
            return Err(ScenarioError::new(
                "network.latency",
                format!(
                    "the shortest round trip (2 × {}) is longer than the {} requests an elector \
                     remembers ({} apart, election.retry_interval): every answer would be stale, so \
                     no node could ever lead; lower the latency or lengthen election.retry_interval",
                    human(n.latency.0),
                    fenced::MAX_OUTSTANDING,
                    human(self.election.retry_interval)
                ),
            ));
        }
        for (key, p) in [("network.loss", n.loss), ("network.duplicate", n.duplicate)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(ScenarioError::new(
                    key,
                    format!("{p} is not a probability; it must be in [0, 1]"),
                ));
            }
        }
        match &n.script {
            Some(script) => script.validate(n),
            None => Ok(()),
        }
    }

    /// Returns every valid host name (nodes, lease-store, downstream).
    fn validate_nodes<'a>(
        &'a self,
        servers: &'a [String],
    ) -> Result<BTreeSet<&'a str>, ScenarioError> {
        if self.nodes.is_empty() {
            return Err(ScenarioError::new(
                "node",
                "at least one [[node]] is required",
            ));
        }
        let most = usize::from(u16::MAX - crate::engine::network::FIRST_NODE_ENDPOINT);
        if self.nodes.len() > most {
            return Err(ScenarioError::new(
                "node",
                format!(
                    "{} nodes: at most {most} are supported (one network endpoint each)",
                    self.nodes.len()
                ),
            ));
        }
        let mut hosts: BTreeSet<&str> = [LEASE_STORE, DOWNSTREAM].into_iter().collect();
        // Another protocol's servers are hosts too (faults may name them).
        hosts.extend(servers.iter().map(String::as_str));
        for (i, node) in self.nodes.iter().enumerate() {
            let key = format!("node[{i}]");
            NodeId::new(&node.id)
                .map_err(|e| ScenarioError::new(format!("{key}.id"), e.to_string()))?;
            if node.id.len() > MAX_NODE_ID_LEN {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!(
                        "is {} bytes long; node ids may be at most {MAX_NODE_ID_LEN} bytes, so that \
                         each process's owner id `{{id}}#{{incarnation}}` fits the {} byte limit",
                        node.id.len(),
                        fenced::MAX_ID_LEN
                    ),
                ));
            }
            if node.id == LEASE_STORE || node.id == DOWNSTREAM {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!("`{}` is the name of a built-in host; pick another", node.id),
                ));
            }
            if node.id == "*" || node.id.contains('#') {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    "node ids may not be `*` or contain `#` (used for incarnations)",
                ));
            }
            if let Some(own) = &node.protocol {
                if own.name() != self.election.protocol.name() {
                    return Err(ScenarioError::new(
                        format!("{key}.{}", own.name()),
                        format!(
                            "a node's own settings are for the scenario's design, `{}`",
                            self.election.protocol
                        ),
                    ));
                }
                own.validate().map_err(|err| {
                    ScenarioError::new(format!("{key}.{}", own.name()), err.to_string())
                })?;
            }
            if !hosts.insert(&node.id) {
                return Err(ScenarioError::new(
                    format!("{key}.id"),
                    format!(
                        "duplicate node id `{}` (also {}); node ids must be unique and differ \
                         from the servers' names",
                        node.id,
                        self.nodes
                            .iter()
                            .position(|n| n.id == node.id)
                            .filter(|&j| j != i)
                            .map_or_else(|| "a server".to_string(), |j| format!("node[{j}]"))
                    ),
                ));
            }
            if node.clock_offset.0.unsigned_abs() > MAX_CLOCK_OFFSET_NANOS.unsigned_abs() {
                return Err(ScenarioError::new(
                    format!("{key}.clock_offset"),
                    "must be within one day of true time",
                ));
            }
            if !node.clock_drift.is_finite() || node.clock_drift.abs() > MAX_CLOCK_DRIFT {
                return Err(ScenarioError::new(
                    format!("{key}.clock_drift"),
                    format!(
                        "{} is outside [-{MAX_CLOCK_DRIFT}, {MAX_CLOCK_DRIFT}]",
                        node.clock_drift
                    ),
                ));
            }
            if node.start_at >= self.duration {
                return Err(ScenarioError::new(
                    format!("{key}.start_at"),
                    format!(
                        "{} is not inside the run's duration of {}",
                        human(node.start_at),
                        human(self.duration)
                    ),
                ));
            }
        }
        Ok(hosts)
    }

    fn validate_faults(&self, hosts: &BTreeSet<&str>) -> Result<(), ScenarioError> {
        let is_node =
            |name: &str| name != LEASE_STORE && name != DOWNSTREAM && hosts.contains(name);
        let unknown = |key: String, name: &str| {
            let known: Vec<&str> = hosts.iter().copied().collect();
            ScenarioError::new(
                key,
                format!("unknown host `{name}`; known hosts: {}", known.join(", ")),
            )
        };
        // Refuses a fault at `key` whose `node` is not a node: a built-in host
        // with `message`, an unknown one with the list of known hosts.
        let only_nodes = |key: &str, node: &str, message: String| {
            if is_node(node) {
                Ok(())
            } else if hosts.contains(node) {
                Err(ScenarioError::new(format!("{key}.node"), message))
            } else {
                Err(unknown(format!("{key}.node"), node))
            }
        };
        let mut partitions: Vec<(usize, Duration, Duration)> = Vec::new();
        for (i, fault) in self.faults.iter().enumerate() {
            let key = format!("fault[{i}]");
            if let Some((at, _)) = fault.window() {
                if at >= self.duration {
                    return Err(ScenarioError::new(
                        format!("{key}.at"),
                        format!(
                            "{} is not inside the run's duration of {}",
                            human(at),
                            human(self.duration)
                        ),
                    ));
                }
            }
            let (fault, anchored) = match fault {
                FaultSpec::Anchored { when, fault } => {
                    self.validate_anchor(&key, when, fault, &only_nodes)?;
                    (&**fault, true)
                }
                fault => (fault, false),
            };
            match fault {
                FaultSpec::Anchored { .. } => unreachable!("validate_anchor refuses nesting"),
                FaultSpec::Pause { duration, .. }
                | FaultSpec::Isolate { duration, .. }
                | FaultSpec::Cut { duration, .. }
                | FaultSpec::Partition { duration, .. }
                | FaultSpec::Restart { duration, .. } => {
                    at_most_a_year(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::ClockJump { .. } | FaultSpec::ClockSlew { .. } => {}
                FaultSpec::ClockStrobe { duration, .. } => {
                    at_most_a_year(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::Crash {
                    restart_after: Some(after),
                    ..
                } => at_most_a_year(&format!("{key}.restart_after"), *after)?,
                FaultSpec::Recurring {
                    every, duration, ..
                } => {
                    at_most_a_year(&format!("{key}.every"), *every)?;
                    at_most_a_year(&format!("{key}.duration"), duration.high)?;
                }
                FaultSpec::Stop {
                    restart_after: Some(after),
                    ..
                } => at_most_a_year(&format!("{key}.restart_after"), *after)?,
                FaultSpec::Crash { .. }
                | FaultSpec::Stop { .. }
                | FaultSpec::Replace { .. }
                | FaultSpec::Abdicate { .. } => {}
            }
            match fault {
                FaultSpec::Anchored { .. } => unreachable!("validate_anchor refuses nesting"),
                FaultSpec::Pause { host, duration, .. }
                | FaultSpec::Isolate { host, duration, .. } => {
                    if !hosts.contains(host.as_str()) {
                        return Err(unknown(format!("{key}.node"), host));
                    }
                    more_than_zero(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::Cut {
                    from, to, duration, ..
                } => {
                    for (k, h) in [("from", from), ("to", to)] {
                        if !hosts.contains(h.as_str()) {
                            return Err(unknown(format!("{key}.{k}"), h));
                        }
                    }
                    if from == to {
                        return Err(ScenarioError::new(
                            format!("{key}.to"),
                            "a cut needs two different hosts",
                        ));
                    }
                    more_than_zero(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::Partition {
                    groups,
                    at,
                    duration,
                } => {
                    if groups.len() < 2 {
                        return Err(ScenarioError::new(
                            format!("{key}.groups"),
                            "a partition needs at least two groups, e.g. [[\"node-a\"], [\"lease-store\"]]: \
                             a host named in no group reaches every group, so one group cuts nothing",
                        ));
                    }
                    let mut seen = BTreeSet::new();
                    for (g, group) in groups.iter().enumerate() {
                        if group.is_empty() {
                            return Err(ScenarioError::new(
                                format!("{key}.groups[{g}]"),
                                "a group must name at least one host",
                            ));
                        }
                        for h in group {
                            if !hosts.contains(h.as_str()) {
                                return Err(unknown(format!("{key}.groups[{g}]"), h));
                            }
                            if !seen.insert(h.as_str()) {
                                return Err(ScenarioError::new(
                                    format!("{key}.groups[{g}]"),
                                    format!("host `{h}` is in more than one group"),
                                ));
                            }
                        }
                    }
                    more_than_zero(&format!("{key}.duration"), *duration)?;
                    // An anchored partition may begin any time after its
                    // `at`: no other may overlap that.
                    let end = if anchored {
                        Duration::MAX
                    } else {
                        at.saturating_add(*duration)
                    };
                    if let Some((j, _, _)) =
                        partitions.iter().find(|(_, s, e)| *at < *e && *s < end)
                    {
                        return Err(ScenarioError::new(
                            format!("{key}.at"),
                            format!(
                                "overlaps the partition of fault[{j}]; partitions replace each \
                                 other's groups, so at most one may be active at a time"
                            ),
                        ));
                    }
                    partitions.push((i, *at, end));
                }
                FaultSpec::Restart { host, duration, .. } => {
                    let servers: Vec<String> = std::iter::once(LEASE_STORE.to_string())
                        .chain(std::iter::once(DOWNSTREAM.to_string()))
                        .chain(self.election.protocol.server_names())
                        .collect();
                    if !servers.iter().any(|s| s == host) {
                        return Err(ScenarioError::new(
                            format!("{key}.node"),
                            format!(
                                "only servers restart ({}); a node crashes and restarts with \
                                 `crash` and `restart_after`",
                                servers.join(", ")
                            ),
                        ));
                    }
                    more_than_zero(&format!("{key}.duration"), *duration)?;
                }
                FaultSpec::ClockJump { host, by, .. } => {
                    clock_host_and_step(&key, host, *by, hosts, &unknown)?;
                }
                FaultSpec::ClockSlew { host, by, rate, .. } => {
                    clock_host_and_step(&key, host, *by, hosts, &unknown)?;
                    if !(rate.is_finite() && *rate > 0.0 && *rate <= MAX_SLEW_RATE) {
                        return Err(ScenarioError::new(
                            format!("{key}.rate"),
                            format!(
                                "{rate} is not a slew rate: a fraction above 0 and at most \
                                 {MAX_SLEW_RATE} (0.0005 = 500 ppm, ntpd's bound)"
                            ),
                        ));
                    }
                }
                FaultSpec::ClockStrobe {
                    host,
                    by,
                    period,
                    duration,
                    ..
                } => {
                    clock_host_and_step(&key, host, *by, hosts, &unknown)?;
                    more_than_zero(&format!("{key}.period"), *period)?;
                    if duration < period {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            format!(
                                "{} is shorter than the period ({}): a strobe flips at least \
                                 twice",
                                human(*duration),
                                human(*period)
                            ),
                        ));
                    }
                    let flips = super::strobe_flips(*period, *duration);
                    if flips > MAX_STROBE_FLIPS {
                        return Err(ScenarioError::new(
                            format!("{key}.period"),
                            format!(
                                "{flips} flips ({} every {}) is more than the limit of \
                                 {MAX_STROBE_FLIPS}; lengthen the period",
                                human(*duration),
                                human(*period)
                            ),
                        ));
                    }
                }
                FaultSpec::Crash { node, .. }
                | FaultSpec::Replace { node, .. }
                | FaultSpec::Stop { node, .. }
                | FaultSpec::Abdicate { node, .. } => {
                    let verb = match fault {
                        FaultSpec::Crash { .. } => "crash",
                        FaultSpec::Replace { .. } => "be replaced",
                        FaultSpec::Stop { .. } => "stop",
                        _ => "abdicate",
                    };
                    only_nodes(&key, node, format!("only nodes can {verb}, not `{node}`"))?;
                    if matches!(fault, FaultSpec::Abdicate { .. })
                        && self.election.protocol != super::ProtocolSpec::Fenced
                    {
                        return Err(ScenarioError::new(
                            key.clone(),
                            format!(
                                "protocol `{}` has no call to give leadership up on failed work; \
                                 `abdicate` is for the fenced protocol (use `stop` or `crash`)",
                                self.election.protocol
                            ),
                        ));
                    }
                    if let FaultSpec::Crash {
                        restart_after: Some(after),
                        ..
                    }
                    | FaultSpec::Stop {
                        restart_after: Some(after),
                        ..
                    } = fault
                    {
                        more_than_zero(&format!("{key}.restart_after"), *after)?;
                    }
                }
                FaultSpec::Recurring {
                    node,
                    every,
                    duration,
                    kind,
                } => {
                    if let Some(node) = node {
                        let message = "recurring faults apply to nodes (or `*`)";
                        only_nodes(&key, node, message.to_string())?;
                    }
                    more_than_zero(&format!("{key}.every"), *every)?;
                    if *every < Duration::from_millis(1) {
                        return Err(ScenarioError::new(
                            format!("{key}.every"),
                            "must be at least 1ms",
                        ));
                    }
                    if duration.low > duration.high {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            format!(
                                "the range is inverted: minimum {} is above maximum {}; write [min, max]",
                                human(duration.low),
                                human(duration.high)
                            ),
                        ));
                    }
                    if *kind == RecurringKind::Crash && duration.low.is_zero() {
                        return Err(ScenarioError::new(
                            format!("{key}.duration"),
                            "a recurring crash's restart delay must be greater than zero",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// An anchored fault's anchor, at `key`: a node that is one, a token
    /// only on an event that carries one, an event the protocol makes, a
    /// delay of at most a year, and a scheduled fault inside.
    fn validate_anchor(
        &self,
        key: &str,
        when: &Anchor,
        fault: &FaultSpec,
        only_nodes: &dyn Fn(&str, &str, String) -> Result<(), ScenarioError>,
    ) -> Result<(), ScenarioError> {
        if matches!(
            fault,
            FaultSpec::Recurring { .. } | FaultSpec::Anchored { .. }
        ) {
            return Err(ScenarioError::new(
                format!("{key}.at"),
                "an anchor (a table in `at`) starts a scheduled fault once; a recurring fault \
                 (with `every`) cannot be anchored",
            ));
        }
        if let Some(node) = &when.node {
            only_nodes(
                &format!("{key}.at"),
                node,
                format!("an anchor waits for a node's event; `{node}` is not a node"),
            )?;
        }
        if let Some(token) = when.token {
            if !when.event.has_token() {
                return Err(ScenarioError::new(
                    format!("{key}.at.token"),
                    format!(
                        "`{}` carries no token; `token` filters term-started, term-ended, \
                         work-started and write-sent",
                        when.event
                    ),
                ));
            }
            if token == 0 {
                return Err(ScenarioError::new(
                    format!("{key}.at.token"),
                    "fencing tokens start at 1",
                ));
            }
        }
        if when.event.fenced_only() && self.election.protocol != super::ProtocolSpec::Fenced {
            return Err(ScenarioError::new(
                format!("{key}.at.event"),
                format!(
                    "protocol `{}` sends no lease requests of the fenced elector; anchor on \
                     term-started, term-ended, work-started or write-sent",
                    self.election.protocol
                ),
            ));
        }
        at_most_a_year(&format!("{key}.at.delay"), when.delay)
    }
}

/// The most flips one `clock-strobe` may make: each is an event, and a
/// run's work is bounded.
pub const MAX_STROBE_FLIPS: u32 = 100_000;

/// A clock fault's host and step: a node or a lock server (the downstream
/// reads no clock), and a step neither zero nor beyond a day.
fn clock_host_and_step(
    key: &str,
    host: &str,
    by: ClockOffset,
    hosts: &BTreeSet<&str>,
    unknown: &dyn Fn(String, &str) -> ScenarioError,
) -> Result<(), ScenarioError> {
    if !hosts.contains(host) {
        return Err(unknown(format!("{key}.node"), host));
    }
    if host == DOWNSTREAM {
        return Err(ScenarioError::new(
            format!("{key}.node"),
            "the downstream reads no clock (it judges writes by token); jump a node's or a lock \
             server's clock",
        ));
    }
    if by.0 == 0 {
        return Err(ScenarioError::new(format!("{key}.by"), "must not be zero"));
    }
    if by.0.unsigned_abs() > MAX_CLOCK_OFFSET_NANOS.unsigned_abs() {
        return Err(ScenarioError::new(
            format!("{key}.by"),
            format!("{by} is beyond the limit of one day either way"),
        ));
    }
    Ok(())
}
