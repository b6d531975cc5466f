//! Which fields of a state name a node, and how a renaming of nodes
//! rewrites them.
//!
//! Every bare integer and every string of the state text must be
//! classified here by the struct (or variant) and field that hold it, or
//! by the tuple type that wraps it (`ProcessId(3)`, `OwnerId("node-a#1")`),
//! or by the fingerprint's own label at the top level (`queue`, `isolated`):
//! as a node index, a process slot, an endpoint, a node's id, an owner id
//! (`node-a#1`), or plain (a count, a time, a token, a generation — no
//! identity). A value reached by no classification is an error, not a
//! guess: a field added to any state type later fails
//! `sim/tests/verify_symmetry.rs` until someone says whether it names a
//! node. Sequences indexed by a node, a slot or an endpoint are permuted;
//! maps whose keys are renamed are sorted again.

/// What a scalar under a field is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// No identity: counts, times, tokens, generations, a role.
    Plain,
    /// A node's index in the scenario (`u32::MAX`: none).
    Node,
    /// A process slot (pid).
    Pid,
    /// A network endpoint (servers first, then one per node).
    Endpoint,
    /// A node's id string.
    NodeName,
    /// An owner id string, `<node id>#<incarnation>`.
    Owner,
    /// A pair `(pid, incarnation)`: the first a process slot.
    PidFirst,
}

/// How a sequence under a field is indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Element `i` belongs to node `i`.
    Nodes,
    /// Element `i` belongs to process slot `i`.
    Slots,
    /// Element `i` belongs to process slot `i`, and the sequence is grown
    /// only as far as the slots seen, with `None` in between (the
    /// checker's tables): a missing element is `None`, so the renamed
    /// sequence is padded with `None` and trailing `None`s dropped.
    GrownSlots,
    /// Element `i` belongs to endpoint `i`.
    Endpoints,
}

/// A field's classification: what its scalars are, and whether its
/// sequence is indexed by an identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub class: Class,
    pub layout: Option<Layout>,
}

const fn plain() -> Option<Rule> {
    Some(Rule {
        class: Class::Plain,
        layout: None,
    })
}

const fn scalar(class: Class) -> Option<Rule> {
    Some(Rule {
        class,
        layout: None,
    })
}

const fn indexed(class: Class, layout: Layout) -> Option<Rule> {
    Some(Rule {
        class,
        layout: Some(layout),
    })
}

/// The rule of a tuple type, by its name: wrappers that say what they
/// hold. `None`: the tuple is transparent (`Some`, an unnamed tuple, an
/// enum's tuple variant), its contents classified by the enclosing field.
pub(crate) fn tuple_rule(name: &str) -> Option<Rule> {
    match name {
        "NodeId" => scalar(Class::NodeName),
        "OwnerId" => scalar(Class::Owner),
        "ProcessId" => scalar(Class::Pid),
        "Node" => scalar(Class::Node),
        "Instant" | "SimTime" | "FencingToken" | "LatestNow" | "Role" | "ResourceId"
        | "SeedDeriver" | "Server" | "ClockOffset" | "RequestId" | "Reply" | "FaultEnd" => plain(),
        _ => None,
    }
}

/// The rule of a top-level label of the state text.
pub(crate) fn label_rule(label: &str) -> Option<Rule> {
    match label {
        "now" | "end" | "halt" | "queue" | "net" | "latency" | "loss" | "duplicate" | "rto"
        | "rng" | "cuts" | "groups" | "quiet" | "lives" | "servers" | "streams" | "swapped"
        | "hosts" | "checker" | "anchors" | "faults" | "free" | "seeds" | "healed" | "strobes" => {
            plain()
        }
        "isolated" | "down" => indexed(Class::Plain, Layout::Endpoints),
        "active" => plain(),
        _ => None,
    }
}

/// The rule of field `field` of struct (or struct variant) `owner`.
/// `None`: not classified (an error if a scalar is reached under it).
/// Every field is listed by name: a field added to a type is unclassified
/// until added here.
pub(crate) fn field_rule(owner: &str, field: &str) -> Option<Rule> {
    use Class::*;
    use Layout::*;
    match (owner, field) {
        // The engine: lives, clocks, events, faults in effect.
        ("Lives", "nodes" | "slewed_nodes") => indexed(Plain, Nodes),
        ("Lives", "procs" | "deferred") => indexed(Plain, Slots),
        ("Lives", "first_node" | "servers" | "server_clocks" | "server_records" | "clocks") => {
            plain()
        }
        ("Node", "id") => scalar(NodeName),
        ("Node", "endpoint") => scalar(Endpoint),
        ("Node", "pids") => scalar(Pid),
        ("Node", "clock" | "next_incarnation") => plain(),
        ("Life", "node") => scalar(Node),
        ("Life", "owner") => scalar(Owner),
        (
            "Life",
            "clock" | "incarnation" | "pause_depth" | "alive" | "clock_moved" | "last_paused_at"
            | "recovered_at" | "term",
        ) => plain(),
        ("HostClock", "offset_nanos" | "drift_ppb" | "stepped_nanos") => plain(),
        ("HostClocks", "nodes" | "servers") => plain(),
        ("ServerClock", "offset" | "slew") => plain(),
        ("Pausable", "depth" | "deferred" | "clock_moved") => plain(),
        ("Timer", "to" | "timer") => plain(),
        ("Process", "pid") => scalar(Pid),
        ("Process", "incarnation") => plain(),
        ("Elector" | "Unit" | "Registry", "generation") => plain(),
        ("Done", "unit" | "token") => plain(),
        ("Deliver", "from") => scalar(Endpoint),
        ("Deliver", "to" | "msg") => plain(),
        ("ActiveFault", "fault" | "end") => plain(),
        ("ActiveFault", "paused") => scalar(PidFirst),
        // Fault actions (`scenario::FaultAction`; a host is `Node(i)` or
        // `Server(i)`) and the engine's restart.
        ("StartNode" | "Crash" | "Stop" | "Abdicate" | "Replace" | "Restart", "node") => {
            scalar(Node)
        }
        ("Restart", "fault") => plain(),
        ("Pause" | "Resume" | "Isolate" | "Reconnect" | "ClockJump", "host") => plain(),
        ("Cut" | "Uncut", "from" | "to") => plain(),
        ("ClockJump", "by") => plain(),
        ("ServerDown" | "ServerUp", "server" | "durable") => plain(),
        // Messages (`hosts::messages`).
        ("LeaseRequest" | "Release" | "Heartbeat" | "Open" | "Write", "pid") => scalar(Pid),
        ("Release", "incarnation" | "token" | "tag") => plain(),
        ("Open", "incarnation" | "session" | "conn" | "step") => plain(),
        ("Opened", "session" | "conn" | "step" | "epoch") => plain(),
        ("WriteAnswered" | "Released" | "HeartbeatAnswered", "tag") => plain(),
        ("LeaseFailed", "reply") => plain(),
        ("Heartbeat", "node") => scalar(Node),
        ("LeaseRequest", "incarnation" | "id" | "ttl_ns" | "tag") => plain(),
        ("Heartbeat", "incarnation" | "tag") => plain(),
        ("Write", "incarnation" | "tag" | "token" | "unit") => plain(),
        ("CallTag", "epoch" | "conn" | "call") => plain(),
        ("LeaseResponse", "reply" | "result") => plain(),
        ("Granted", "token" | "expires_at") => plain(),
        ("Held", "holder") => plain(),
        // The fenced hosts.
        ("FencedHosts", "store" | "downstream" | "procs" | "settings") => plain(),
        (
            "LeaseStoreHost",
            "role"
            | "leases"
            | "registry"
            | "registry_timer_at"
            | "registry_generation"
            | "changes_since_listing"
            | "epoch",
        ) => plain(),
        ("LeaseStore", "config" | "roles" | "latest_now" | "planted") => plain(),
        ("LeaseStoreConfig", "max_ttl") => plain(),
        ("RoleState", "highest" | "holder") => plain(),
        ("Lease", "owner") => scalar(Owner),
        ("Lease", "token" | "expires_at") => plain(),
        ("FleetRegistry", "ids") => indexed(NodeName, Nodes),
        ("FleetRegistry", "rows") => indexed(Plain, Nodes),
        // The order of ids, and each node's place in it: a node's id stays
        // with its index, so neither moves.
        ("FleetRegistry", "rank" | "by_id") => plain(),
        ("FleetRegistry", "liveness_ttl" | "queue" | "front" | "members" | "latest_now") => plain(),
        ("FleetRegistry", "changes") => scalar(Node),
        ("Row", "expires_at" | "entry") => plain(),
        ("Entry", "node") => scalar(Node),
        ("Entry", "expires_at" | "live") => plain(),
        ("DownstreamHost", "resource" | "store" | "epoch") => plain(),
        ("FencedStore", "fencing" | "resources" | "planted") => plain(),
        ("Resource", "highest_writer") => scalar(Owner),
        ("Resource", "highest" | "value" | "accepted" | "last_write_at") => plain(),
        ("ProcessTable", "procs") => indexed(Plain, Slots),
        ("ProcessTable", "workers") => plain(),
        ("WorkerTable", "slots") => indexed(Plain, Slots),
        ("WorkerTable", "timings" | "client") => plain(),
        ("ClientSettings", "sessions" | "timings" | "write_retries") => plain(),
        ("SessionTimings", "connect" | "query") => plain(),
        ("WorkTimings", "heartbeat_interval" | "write_interval" | "work_duration") => plain(),
        ("NodeProcess", "pid") => scalar(Pid),
        ("NodeProcess", "node") => scalar(Node),
        (
            "NodeProcess",
            "timer_at" | "timer_generation" | "incarnation" | "elector" | "lease" | "registry",
        ) => plain(),
        ("Worker", "incarnation" | "generation" | "next_unit" | "believed" | "session") => plain(),
        ("Session", "state" | "next_conn" | "next_call" | "timer_generation" | "timer_at") => {
            plain()
        }
        ("Outputs", "head" | "len" | "spilled" | "ring" | "spill") => plain(),
        ("ProcessSettings", "role" | "elector" | "timings" | "seeds") => plain(),
        (
            "ElectorTimings",
            "lease_ttl"
            | "renew_interval"
            | "retry_interval"
            | "safety_margin"
            | "rejoin_delay"
            | "release_on_deadline"
            | "jitter",
        ) => plain(),
        (
            "Elector",
            "latest_now" | "next_request_at" | "last_request_id" | "phase" | "unanswered_since"
            | "highest_token_seen" | "rng" | "outstanding" | "config" | "outputs" | "observed"
            | "released" | "planted",
        ) => plain(),
        ("InFlight", "id" | "sent_at") => plain(),
        ("ElectorConfig", "owner") => scalar(Owner),
        (
            "ElectorConfig",
            "renew_interval"
            | "jitter"
            | "release_on_deadline"
            | "role"
            | "lease_ttl"
            | "safety_margin"
            | "retry_interval"
            | "rejoin_delay",
        ) => plain(),
        ("ObservedLeader", "owner") => scalar(Owner),
        ("ObservedLeader", "token") => plain(),
        ("Leader", "token" | "anchored_at" | "valid_until") => plain(),
        // The checker.
        (
            "Checker",
            "settings" | "model" | "findings" | "owners" | "lease" | "fence" | "terms" | "deadline"
            | "membership" | "liveness",
        ) => plain(),
        (
            "CheckerSettings",
            "fencing" | "lease_ttl" | "validity" | "write_interval" | "work_duration"
            | "latency_max" | "heal_at" | "end" | "liveness_ttl" | "renew_interval" | "jitter",
        ) => plain(),
        ("Model", "slots") => indexed(Plain, GrownSlots),
        ("Model", "nodes") => indexed(Plain, Nodes),
        ("Model", "store") => plain(),
        ("Store", "disturbance" | "pause_depth" | "clock" | "recovered_at") => plain(),
        ("Disturbance", "active" | "last") => plain(),
        ("Findings", "violations" | "total" | "split_brain" | "coverage") => plain(),
        (
            "Coverage",
            "stale_write_rejected"
            | "takeover_during_pause"
            | "step_down_on_deadline"
            | "renewal_lost"
            | "zombie_fenced"
            | "refused"
            | "leader_stopped"
            | "leader_abdicated",
        ) => plain(),
        ("UniqueOwner", "live") => plain(),
        ("LeaseCheck", "highest_granted" | "lease" | "store_time") => plain(),
        ("LeaseView", "owner") => scalar(Owner),
        ("LeaseView", "pid") => scalar(Pid),
        ("LeaseView", "token" | "expires_at" | "granted_at") => plain(),
        ("FenceCheck", "fencing" | "fence" | "failovers" | "max_failover" | "writes") => plain(),
        ("Writes", "accepted" | "rejected_stale" | "rejected_wrong_writer" | "cancelled") => {
            plain()
        }
        ("Failover", "from" | "to") => scalar(NodeName),
        ("Failover", "from_owner" | "to_owner") => scalar(Owner),
        ("Failover", "gap_ms" | "from_token" | "to_token" | "at_ms") => plain(),
        ("FenceView", "owner") => scalar(Owner),
        ("FenceView", "node_name") => scalar(NodeName),
        ("FenceView", "token" | "first_accept_at" | "last_accept_at") => plain(),
        // Per process slot, the index of its open term in `terms`.
        ("Terms", "open") => indexed(Plain, GrownSlots),
        (
            "Terms",
            "lease_ttl" | "started" | "believers" | "last_belief_change" | "overlap" | "leaderless"
            | "terms" | "last_term_owner" | "leader_changes" | "spurious_failovers",
        ) => plain(),
        ("BeliefTerm", "node") => scalar(NodeName),
        ("BeliefTerm", "owner") => scalar(Owner),
        ("BeliefTerm", "token" | "start" | "end" | "end_reason") => plain(),
        ("Deadline", "slots") => indexed(Plain, GrownSlots),
        ("Deadline", "validity" | "renewal") => plain(),
        ("Requests", "sent" | "anchor" | "renewal_due_since") => plain(),
        ("RenewalRule", "renew_interval" | "jitter" | "on_schedule" | "shortened") => plain(),
        ("Membership", "ttl" | "registry" | "report") => plain(),
        // The nodes that left, a set of node indices.
        ("Membership", "left") => scalar(Node),
        ("RegistryModel", "nodes") => indexed(Plain, Nodes),
        ("RegistryModel", "oldest" | "newest") => scalar(Node),
        ("RegistryModel", "members" | "latest") => plain(),
        ("Member", "prev" | "next") => scalar(Node),
        ("Member", "last" | "member") => plain(),
        ("MembershipReport", "joins" | "leaves" | "flaps" | "false_leaves" | "live_at_end") => {
            plain()
        }
        ("Liveness", "recent" | "heal_at" | "end") => plain(),
        _ => None,
    }
}
