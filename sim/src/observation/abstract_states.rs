//! The protocol's *abstract states* a run visits: a projection of the whole
//! simulation onto what decides safety, with every time dropped — the
//! measure `fenced-sim verify --swarm` compares a random swarm with an
//! exhaustive search by.
//!
//! # What an abstract state is (a projection, stated)
//!
//! After every observation, the state of
//!
//! * **each node**, in scenario order: how many of its lives run (0, 1, or 2
//!   and more — a zombie beside its replacement), whether it is paused,
//!   whether it is cut off from the lease store (either direction of their
//!   link down: an isolation of either end, a cut, or a partition that
//!   separates them — reachability, whatever fault made it), and whether a
//!   live process of it believes it leads — the newest term granted so
//!   far, or an **older** one (a stale leader: the state every split-brain
//!   passes through);
//! * **the lease store** (or a design's first server): whether it is
//!   paused, and which node it last granted or renewed a lease to (none
//!   after that node's release). For another design, the protocol's truth
//!   (`Holder` with no server).
//!
//! Times, tokens' values, request ids, clocks and in-flight messages are
//! **not** part of it: two runs that differ only in when things happen
//! visit the same abstract states. It is a coverage measure, not the
//! canonical state a model checker deduplicates by (see
//! `sim/src/verify/mod.rs` on what verify does and does not deduplicate).
//!
//! For up to seven nodes a state is encoded exactly in a `u64` (a byte per
//! node, a byte for the store); past seven, the bytes are hashed (FNV-1a),
//! so distinct states could collide — stated wherever counts are shown.

use std::collections::{BTreeMap, BTreeSet};

use super::{HostRef, Observation, Observer, SimTime};
use fenced::{FencingToken, LeaseResult};

/// The most nodes whose states are encoded exactly (one byte each, and the
/// store's).
pub const EXACT_NODES: usize = 7;

/// One node's part of the abstract state.
#[derive(Clone, Debug, Default)]
struct NodeState {
    /// Live processes.
    lives: u32,
    /// Pause depth of the node's processes (a node pause pauses them all).
    paused: u32,
    /// The terms its live processes believe they lead, by process slot.
    terms: Vec<(u32, FencingToken)>,
}

/// The observer: the current abstract state, and every state visited.
#[derive(Clone, Debug, Default)]
pub struct AbstractStates {
    nodes: Vec<NodeState>,
    /// The first node's network endpoint (the servers' come first; the
    /// lease store, or a design's first server, is endpoint 0).
    first_node: u16,
    /// Isolation depth per endpoint.
    isolated: BTreeMap<u16, u32>,
    /// Active one-way cuts, `(from, to)` endpoints, with their depth.
    cuts: BTreeMap<(u16, u16), u32>,
    /// Each endpoint's group while a partition is active.
    groups: Option<Vec<u16>>,
    store_paused: u32,
    /// The node the store last granted or renewed a lease to.
    holder: Option<u32>,
    /// The newest token granted or believed so far.
    newest: Option<FencingToken>,
    visited: BTreeSet<u64>,
    /// The last state inserted: most observations change nothing, so most
    /// inserts are skipped.
    last: Option<u64>,
}

impl AbstractStates {
    /// An observer of a run of `nodes` nodes, the first at network
    /// endpoint `first_node`, that has visited nothing yet.
    pub fn new(nodes: usize, first_node: u16) -> Self {
        AbstractStates {
            nodes: vec![NodeState::default(); nodes],
            first_node,
            ..AbstractStates::default()
        }
    }

    /// `host`'s network endpoint, for the hosts whose links to the store
    /// the state tracks (the nodes and the store); `None` for the others.
    fn endpoint(&self, host: HostRef<'_>) -> Option<u16> {
        match host {
            HostRef::LeaseStore => Some(0),
            HostRef::Server { endpoint, .. } => Some(endpoint),
            HostRef::Node(n) => Some(self.first_node + n.index as u16),
            HostRef::Process(p) => Some(self.first_node + p.node.index as u16),
            HostRef::Downstream => None,
        }
    }

    /// Whether node `index` and the store are cut apart, either way.
    fn cut_off(&self, index: usize) -> bool {
        let node = self.first_node + index as u16;
        let isolated = |e: u16| self.isolated.get(&e).is_some_and(|&n| n > 0);
        let separated = self.groups.as_ref().is_some_and(|g| {
            let group = |e: u16| g.get(usize::from(e)).copied().unwrap_or(u16::MAX);
            let (a, b) = (group(node), group(0));
            a != b && a != u16::MAX && b != u16::MAX
        });
        isolated(node)
            || isolated(0)
            || separated
            || self.cuts.contains_key(&(node, 0))
            || self.cuts.contains_key(&(0, node))
    }

    /// Every abstract state visited so far.
    pub fn visited(&self) -> &BTreeSet<u64> {
        &self.visited
    }

    /// The states visited, taken out (the observer keeps none).
    pub fn take_visited(&mut self) -> BTreeSet<u64> {
        self.last = None;
        std::mem::take(&mut self.visited)
    }

    fn node(&mut self, index: u32) -> Option<&mut NodeState> {
        self.nodes.get_mut(index as usize)
    }

    fn isolate(&mut self, host: HostRef<'_>, start: bool) {
        if let Some(e) = self.endpoint(host) {
            count(self.isolated.entry(e).or_default(), start);
        }
    }

    fn cut(&mut self, from: HostRef<'_>, to: HostRef<'_>, start: bool) {
        if let (Some(from), Some(to)) = (self.endpoint(from), self.endpoint(to)) {
            let depth = self.cuts.entry((from, to)).or_default();
            count(depth, start);
            if *depth == 0 {
                self.cuts.remove(&(from, to));
            }
        }
    }

    fn pause(&mut self, host: HostRef<'_>, depth: u32) {
        match host {
            HostRef::Node(n) => {
                if let Some(s) = self.node(n.index) {
                    s.paused = depth;
                }
            }
            HostRef::Process(p) => {
                if let Some(s) = self.node(p.node.index) {
                    s.paused = depth;
                }
            }
            HostRef::LeaseStore | HostRef::Server { endpoint: 0, .. } => self.store_paused = depth,
            _ => {}
        }
    }

    fn granted(&mut self, node: u32, token: FencingToken) {
        self.holder = Some(node);
        self.newest = self.newest.max(Some(token));
    }

    fn ended(&mut self, node: u32, slot: u32) {
        if let Some(s) = self.node(node) {
            s.lives = s.lives.saturating_sub(1);
            s.terms.retain(|&(p, _)| p != slot);
        }
    }

    /// The current state's code (see the module docs).
    fn code(&self) -> u64 {
        let byte = |s: &NodeState| -> u8 {
            let lives = s.lives.min(2) as u8;
            let leads = match s.terms.iter().map(|&(_, t)| t).max() {
                None => 0,
                Some(t) if Some(t) >= self.newest => 1,
                Some(_) => 2,
            };
            lives | u8::from(s.paused > 0) << 2 | leads << 4
        };
        let bytes = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, s)| byte(s) | u8::from(self.cut_off(i)) << 3);
        let store =
            u8::from(self.store_paused > 0) | self.holder.map_or(0, |h| (h.min(61) as u8 + 1) << 2);
        if self.nodes.len() <= EXACT_NODES {
            bytes.fold(u64::from(store), |code, b| code << 8 | u64::from(b))
        } else {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for b in std::iter::once(store).chain(bytes) {
                hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
            hash
        }
    }
}

/// A state's code written for a person (`node-a: leads an older term,
/// paused; node-b: leads; store: granted node-b last`), for a run of
/// `nodes` (ids in scenario order). `None` for a code of more than
/// [`EXACT_NODES`] nodes (a hash, not a code).
pub fn describe(code: u64, nodes: &[String]) -> Option<String> {
    if nodes.len() > EXACT_NODES {
        return None;
    }
    let mut parts = Vec::with_capacity(nodes.len() + 1);
    for (i, id) in nodes.iter().enumerate() {
        let shift = 8 * (nodes.len() - 1 - i);
        let byte = (code >> shift) as u8;
        let mut facts = Vec::new();
        match byte & 3 {
            0 => facts.push("down"),
            1 => {}
            _ => facts.push("two lives"),
        }
        match (byte >> 4) & 3 {
            1 => facts.push("leads"),
            2 => facts.push("leads an older term"),
            _ => {}
        }
        if byte & 4 != 0 {
            facts.push("paused");
        }
        if byte & 8 != 0 {
            facts.push("cut off from the store");
        }
        if facts.is_empty() {
            facts.push("follows");
        }
        parts.push(format!("{id}: {}", facts.join(", ")));
    }
    let store = (code >> (8 * nodes.len())) as u8;
    let mut facts = Vec::new();
    match store >> 2 {
        0 => facts.push("no grant held".to_string()),
        h => facts.push(format!(
            "granted {} last",
            nodes.get(usize::from(h - 1)).map_or("?", String::as_str)
        )),
    }
    if store & 1 != 0 {
        facts.push("paused".to_string());
    }
    parts.push(format!("store: {}", facts.join(", ")));
    Some(parts.join("; "))
}

/// One more (`start`) or one fewer fault holding `depth`.
fn count(depth: &mut u32, start: bool) {
    *depth = if start {
        depth.saturating_add(1)
    } else {
        depth.saturating_sub(1)
    };
}

impl Observer for AbstractStates {
    fn observe(&mut self, _at: SimTime, observation: &Observation<'_>) {
        match *observation {
            Observation::ProcessStarted(p) => {
                if let Some(s) = self.node(p.node.index) {
                    s.lives += 1;
                }
            }
            Observation::ProcessCrashed(p) | Observation::ProcessStopped(p) => {
                self.ended(p.node.index, p.id.0)
            }
            Observation::Paused { host, depth } | Observation::Resumed { host, depth, .. } => {
                self.pause(host, depth)
            }
            Observation::Isolated { host, start } => self.isolate(host, start),
            Observation::Cut { from, to, start } => self.cut(from, to, start),
            Observation::Partitioned { group_of, .. } => {
                self.groups = group_of.map(<[u16]>::to_vec)
            }
            Observation::LeaseHandled { from, result, .. } => match result {
                LeaseResult::Granted { token, .. } | LeaseResult::Renewed { token, .. } => {
                    self.granted(from.node.index, *token)
                }
                LeaseResult::Held { .. } => {}
            },
            Observation::ReleaseHandled { from, .. } => {
                if self.holder == Some(from.node.index) {
                    self.holder = None;
                }
            }
            Observation::Holder {
                server: None,
                holder,
                token,
            } => {
                self.holder = holder.map(|p| p.node.index);
                if let Some(t) = token.and_then(FencingToken::new) {
                    self.newest = self.newest.max(Some(t));
                }
            }
            Observation::TermStarted { process, token } => {
                self.newest = self.newest.max(Some(token));
                if let Some(s) = self.node(process.node.index) {
                    s.terms.push((process.id.0, token));
                }
            }
            Observation::TermEnded { process, .. } => {
                if let Some(s) = self.node(process.node.index) {
                    s.terms.retain(|&(p, _)| p != process.id.0);
                }
            }
            _ => return,
        }
        let code = self.code();
        if self.last != Some(code) {
            self.last = Some(code);
            self.visited.insert(code);
        }
    }
}
