//! Nodes and the lives of their processes: who is alive, paused, and what
//! queued for them; and how observations name nodes, processes and hosts.

use std::borrow::Cow;

use fenced::{NodeId, OwnerId};

use super::Address;
use crate::engine::clock::{ClockKind, HostClock, SlewingClock};
use crate::engine::network::{DOWNSTREAM_ENDPOINT, FIRST_NODE_ENDPOINT, STORE_ENDPOINT};
use crate::engine::slew::{ServerClock, Slew};
use crate::observation::{HostId, HostRef, NodeRef, ProcessId, ProcessRef, ServerId};
use crate::time::SimTime;

/// The endpoint of another protocol's server `index`.
pub(crate) fn server_endpoint(index: u16) -> u16 {
    if index == 0 {
        STORE_ENDPOINT
    } else {
        DOWNSTREAM_ENDPOINT + index
    }
}

/// The server index of another protocol's server at `endpoint`.
pub(crate) fn server_index(endpoint: u16) -> u16 {
    debug_assert_ne!(endpoint, DOWNSTREAM_ENDPOINT);
    endpoint.saturating_sub(DOWNSTREAM_ENDPOINT)
}

/// The owner id of life `incarnation` of node `node`. Never renamed: two
/// processes behind one owner id would both lead on one token.
fn owner_id(node: &NodeId, incarnation: u32) -> OwnerId {
    // Validation keeps node ids short enough for the suffix.
    OwnerId::new(format!("{node}#{incarnation}"))
        .expect("node ids are validated to leave room for `#incarnation`")
}

/// A node: its id, its endpoint, its clock, and the slots its lives used.
/// Cold: an event reads what it needs of its node from its [`Life`] row.
#[derive(Debug)]
pub(super) struct Node {
    id: NodeId,
    endpoint: u16,
    /// Its clock; [`HostClock::SLEWED`] once its clocks slewed (the clock is
    /// then in [`Lives::slewed_nodes`]). Copied into every [`Life`] row of
    /// the node whenever it changes ([`Lives::sync_clock`]).
    clock: HostClock,
    /// Slots this node has used (alive or dead, reused on restart).
    pids: Vec<u32>,
    next_incarnation: u32,
}

/// One life of a node, in a slot: everything an event of the process reads
/// of the engine's rows (whether it lives and is paused, its endpoint, its
/// node's clock, its owner id), in one cache line. In a 10 000-node fleet
/// the rows are cold: an event used to read its `Life` and its `Node`, two
/// or three lines (measured with cachegrind). What queued while it was
/// paused lives beside, in [`Lives::deferred`], read only when paused.
#[derive(Debug)]
#[repr(align(64))]
pub(super) struct Life {
    /// Its node's clock (a copy of [`Node::clock`], kept in step).
    clock: HostClock,
    owner: OwnerId,
    node: u32,
    incarnation: u32,
    pause_depth: u32,
    alive: bool,
    /// Its node's clock changed course while it was paused: it re-arms its
    /// timers when it resumes.
    clock_moved: bool,
}

/// Every node and process slot; `E` is what queues at a paused process.
///
/// Endpoints: 0 is the lease store (or another protocol's first server), 1
/// the downstream, then the other servers of a multi-server protocol, then
/// one per node.
#[derive(Debug)]
pub(crate) struct Lives<E> {
    /// Another protocol's server names, by server index (empty for the
    /// fenced protocol: its lease store and downstream have fixed names).
    servers: Vec<String>,
    first_node: u16,
    /// Each server endpoint's clock: the steps of the clock it times by
    /// (none for a monotonic one) and its slews.
    server_clocks: Vec<ServerClock>,
    /// What a server's outbox carries of its clock ([`ServerClock::record`]):
    /// its offset, or, once it slewed, [`SLEWED_SERVER_OFFSET`], which
    /// sends its readings out of line to `server_clocks`.
    ///
    /// [`SLEWED_SERVER_OFFSET`]: crate::engine::clock::SLEWED_SERVER_OFFSET
    server_records: Vec<i64>,
    /// The clocks of the nodes whose clocks slewed, by node (empty until
    /// the first node slews), with their latest slew: a side table, so that
    /// the clock every event carries keeps the size (and the code path) it
    /// had without slews.
    slewed_nodes: Vec<Option<(HostClock, Slew)>>,
    /// The clocks the hosts time their decisions by.
    clocks: HostClocks,
    nodes: Vec<Node>,
    procs: Vec<Life>,
    /// What queued at each slot while its process was paused, by slot.
    deferred: Vec<Vec<E>>,
}

/// Which clock each host times its decisions by (see
/// [`ClockKind`]): every node's processes one kind, each server endpoint its
/// own.
#[derive(Clone, Debug)]
pub(crate) struct HostClocks {
    pub(crate) nodes: ClockKind,
    /// By server endpoint (the lease store or first server, the downstream,
    /// the other servers); an endpoint past the end reads its wall clock.
    pub(crate) servers: Vec<ClockKind>,
}

impl HostClocks {
    fn server(&self, endpoint: u16) -> ClockKind {
        self.servers
            .get(usize::from(endpoint))
            .copied()
            .unwrap_or(ClockKind::Wall)
    }
}

impl<E> Lives<E> {
    /// Nodes with these ids and clocks, none started, after the servers:
    /// the fenced protocol's lease store and downstream (no `servers`), or
    /// another protocol's `servers` (the first takes endpoint 0, the others
    /// follow the downstream); each host times by the kind `clocks` says.
    pub(crate) fn with_servers(
        servers: Vec<String>,
        nodes: impl IntoIterator<Item = (NodeId, HostClock)>,
        clocks: HostClocks,
    ) -> Self {
        let first_node = FIRST_NODE_ENDPOINT + servers.len().saturating_sub(1) as u16;
        let nodes: Vec<Node> = nodes
            .into_iter()
            .enumerate()
            .map(|(i, (id, clock))| Node {
                id,
                endpoint: first_node + i as u16,
                clock,
                pids: Vec::new(),
                next_incarnation: 1,
            })
            .collect();
        Lives {
            nodes,
            servers,
            first_node,
            server_clocks: vec![ServerClock::default(); usize::from(first_node)],
            server_records: vec![0; usize::from(first_node)],
            slewed_nodes: Vec::new(),
            clocks,
            procs: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// How many endpoints: the servers, the downstream and the nodes.
    pub(crate) fn endpoint_count(&self) -> usize {
        usize::from(self.first_node) + self.nodes.len()
    }

    /// The first node's endpoint: every endpoint below it is a server.
    pub(crate) fn first_node_endpoint(&self) -> u16 {
        self.first_node
    }

    /// What the outbox of server `endpoint` carries of its clock: its step
    /// from true time, or [`SLEWED_SERVER_OFFSET`] once it slewed
    /// ([`server_clock`](Self::server_clock) then).
    ///
    /// [`SLEWED_SERVER_OFFSET`]: crate::engine::clock::SLEWED_SERVER_OFFSET
    pub(crate) fn server_record(&self, endpoint: u16) -> i64 {
        self.server_records[usize::from(endpoint)]
    }

    /// The clock server `endpoint` times by.
    pub(crate) fn server_clock(&self, endpoint: u16) -> ServerClock {
        self.server_clocks[usize::from(endpoint)]
    }

    /// Steps the wall clock of `endpoint` by `by` ns: a server's, or the
    /// machine's of a node (its processes share it). Returns whether the
    /// host's timing moved: it does only for a host that times by its wall
    /// clock (its monotonic clock is never stepped).
    pub(crate) fn jump_clock(&mut self, endpoint: u16, by: i64) -> bool {
        if endpoint < self.first_node {
            if self.clocks.server(endpoint) == ClockKind::Monotonic {
                return false;
            }
            let clock = &mut self.server_clocks[usize::from(endpoint)];
            clock.step(by);
            self.server_records[usize::from(endpoint)] = clock.record();
            true
        } else {
            let node = usize::from(endpoint - self.first_node);
            match self.slewed_nodes.get_mut(node) {
                Some(Some((clock, _))) => clock.jump(by),
                _ => self.nodes[node].clock.jump(by),
            }
            self.sync_clock(node);
            self.clocks.nodes == ClockKind::Wall
        }
    }

    /// Slews both clocks of `endpoint` (a server's, or the machine's of a
    /// node) by `by` ns over `over` ns of true time from `now`: every host's
    /// timing moves, whichever clock it times by ([`super::slew`]).
    pub(crate) fn slew_clock(&mut self, endpoint: u16, now: SimTime, by: i64, over: u64) {
        if endpoint < self.first_node {
            let clock = &mut self.server_clocks[usize::from(endpoint)];
            clock.slew(now, by, over);
            self.server_records[usize::from(endpoint)] = clock.record();
            return;
        }
        let node = usize::from(endpoint - self.first_node);
        if self.slewed_nodes.is_empty() {
            self.slewed_nodes = vec![None; self.nodes.len()];
        }
        let (mut clock, mut slew) = match self.slewed_nodes[node].take() {
            Some((clock, slew)) => (clock, Some(slew)),
            None => (self.nodes[node].clock, None),
        };
        clock.slew(&mut slew, now, by, over);
        let slew = slew.expect("a slew was just begun");
        self.slewed_nodes[node] = Some((clock, slew));
        self.nodes[node].clock = HostClock::SLEWED;
        self.sync_clock(node);
    }

    /// Copies node `node`'s clock into the rows of every slot it has used.
    fn sync_clock(&mut self, node: usize) {
        let clock = self.nodes[node].clock;
        for &pid in &self.nodes[node].pids {
            self.procs[pid as usize].clock = clock;
        }
    }

    /// How many nodes.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The endpoint of `host` (a fault's target, resolved by the scenario
    /// from its name): a lock server's, the downstream's, or a node's.
    pub(crate) fn endpoint(&self, host: HostId) -> u16 {
        match host {
            HostId::Server(ServerId::Lock(index)) => server_endpoint(index),
            HostId::Server(ServerId::Downstream) => DOWNSTREAM_ENDPOINT,
            HostId::Node(node) => self.nodes[node as usize].endpoint,
        }
    }

    /// Node `node`'s id.
    pub(crate) fn node_id(&self, node: u32) -> &NodeId {
        &self.nodes[node as usize].id
    }

    /// Starts a life of `node` in a free slot of the node (or a new one).
    pub(crate) fn spawn(&mut self, node: u32) -> u32 {
        let n = &mut self.nodes[node as usize];
        let incarnation = n.next_incarnation;
        // Every start is an event, and runs are capped below 2^32 events.
        n.next_incarnation = incarnation
            .checked_add(1)
            .expect("fewer than 2^32 processes per run");
        // Never renamed: two processes behind one owner id would both lead on
        // one token. Validation keeps node ids short enough for the suffix.
        let owner = owner_id(&n.id, incarnation);
        let life = Life {
            clock: n.clock,
            owner,
            node,
            incarnation,
            pause_depth: 0,
            clock_moved: false,
            alive: true,
        };
        let reusable = n
            .pids
            .iter()
            .copied()
            .find(|&pid| !self.procs[pid as usize].alive);
        match reusable {
            Some(pid) => {
                self.procs[pid as usize] = life;
                self.deferred[pid as usize] = Vec::new();
                pid
            }
            None => {
                self.procs.push(life);
                self.deferred.push(Vec::new());
                let pid = (self.procs.len() - 1) as u32;
                self.nodes[node as usize].pids.push(pid);
                pid
            }
        }
    }

    /// Ends the life in slot `pid`: what queued for it is dropped.
    pub(crate) fn kill(&mut self, pid: u32) {
        let p = &mut self.procs[pid as usize];
        p.alive = false;
        p.pause_depth = 0;
        self.deferred[pid as usize] = Vec::new();
    }

    /// Whether slot `pid` runs life `incarnation`.
    pub(crate) fn is_alive(&self, pid: u32, incarnation: u32) -> bool {
        let p = &self.procs[pid as usize];
        p.alive && p.incarnation == incarnation
    }

    /// Whether `node` has a live process.
    pub(crate) fn node_alive(&self, node: u32) -> bool {
        self.nodes[node as usize]
            .pids
            .iter()
            .any(|&pid| self.procs[pid as usize].alive)
    }

    /// The live slots of `node`.
    pub(crate) fn alive_pids(&self, node: u32) -> Vec<u32> {
        self.nodes[node as usize]
            .pids
            .iter()
            .copied()
            .filter(|&pid| self.procs[pid as usize].alive)
            .collect()
    }

    /// The queue of slot `pid` if it is paused.
    pub(crate) fn paused_queue(&mut self, pid: u32) -> Option<&mut Vec<E>> {
        let paused = self.procs[pid as usize].pause_depth > 0;
        paused.then(|| &mut self.deferred[pid as usize])
    }

    /// One more pause of slot `pid`; the depth now.
    pub(crate) fn pause(&mut self, pid: u32) -> u32 {
        let p = &mut self.procs[pid as usize];
        p.pause_depth += 1;
        p.pause_depth
    }

    /// One pause of slot `pid` ends, if it still runs `incarnation` and is
    /// paused: the depth now, (at 0) what queued, and (at 0) whether its
    /// clock changed course while it was paused.
    pub(crate) fn resume(&mut self, pid: u32, incarnation: u32) -> Option<(u32, Vec<E>, bool)> {
        let p = &mut self.procs[pid as usize];
        if !p.alive || p.incarnation != incarnation || p.pause_depth == 0 {
            return None;
        }
        p.pause_depth -= 1;
        let depth = p.pause_depth;
        if depth > 0 {
            return Some((depth, Vec::new(), false));
        }
        let clock_moved = std::mem::take(&mut p.clock_moved);
        Some((
            depth,
            std::mem::take(&mut self.deferred[pid as usize]),
            clock_moved,
        ))
    }

    /// Slot `pid`'s clock changed course while it is paused (see
    /// [`resume`](Self::resume)).
    pub(crate) fn clock_moved_while_paused(&mut self, pid: u32) {
        self.procs[pid as usize].clock_moved = true;
    }

    /// Whether slot `pid` is paused.
    pub(crate) fn is_paused(&self, pid: u32) -> bool {
        self.procs[pid as usize].pause_depth > 0
    }

    /// What queued at every paused process.
    pub(crate) fn deferred(&self) -> impl Iterator<Item = &E> {
        self.procs
            .iter()
            .zip(&self.deferred)
            .filter(|(p, _)| p.alive)
            .flat_map(|(_, deferred)| deferred.iter())
    }

    pub(crate) fn incarnation_of(&self, pid: u32) -> u32 {
        self.procs[pid as usize].incarnation
    }

    pub(crate) fn owner_of(&self, pid: u32) -> &OwnerId {
        &self.procs[pid as usize].owner
    }

    /// The owner id of life `incarnation` of the node of slot `pid`: the
    /// slot's own (shared, not copied) while that life is the slot's, else
    /// the same id spelled again (a message of an earlier life landing after
    /// a restart; ids are compared by text, so the copy is the same owner).
    ///
    /// Why messages carry `(pid, incarnation)` and not the id: cloning an
    /// `OwnerId` is an atomic increment on a line of its own, and in a
    /// 10 000-node fleet that line is cold — measured, the hottest
    /// instruction of sending a lease request.
    pub(crate) fn owner_at(&self, pid: u32, incarnation: u32) -> Cow<'_, OwnerId> {
        let life = &self.procs[pid as usize];
        if life.incarnation == incarnation {
            return Cow::Borrowed(&life.owner);
        }
        Cow::Owned(owner_id(&self.nodes[life.node as usize].id, incarnation))
    }

    /// Prefetches slot `pid`'s row (a hint; a slot not yet used is
    /// skipped).
    #[inline(always)]
    pub(crate) fn prefetch(&self, pid: u32) {
        if let Some(life) = self.procs.get(pid as usize) {
            super::prefetch_lines(life, 1);
        }
    }

    /// Prefetches the text of slot `pid`'s owner id, which the lease store
    /// compares with its holder's. Reads the slot's row (for the address),
    /// so it is asked only for the next event, whose row was prefetched an
    /// event earlier.
    #[inline(always)]
    pub(crate) fn prefetch_owner(&self, pid: u32) {
        if let Some(life) = self.procs.get(pid as usize) {
            super::prefetch_lines(life.owner.as_str().as_ptr(), 1);
        }
    }

    /// The endpoint of the node of slot `pid`. Always inlined, as
    /// [`clock_of`](Self::clock_of): both are read for every input of a
    /// process, in [`Engine::outbox`](super::Engine), which is inlined into
    /// the event loop; there the optimiser had kept them out of line.
    #[inline(always)]
    pub(crate) fn endpoint_of(&self, pid: u32) -> u16 {
        // Node `i`'s endpoint is `first_node + i` (`with_servers`): read
        // from the slot's row alone, not the node's.
        let node = self.procs[pid as usize].node;
        debug_assert_eq!(
            self.nodes[node as usize].endpoint,
            self.first_node + node as u16
        );
        self.first_node + node as u16
    }

    /// The clock the process in slot `pid` times by: [`HostClock::SLEWED`]
    /// once its node's clocks slewed ([`slewing_clock_of`] then).
    ///
    /// [`slewing_clock_of`]: Self::slewing_clock_of
    #[inline(always)]
    pub(crate) fn clock_of(&self, pid: u32) -> HostClock {
        let life = &self.procs[pid as usize];
        debug_assert_eq!(life.clock, self.nodes[life.node as usize].clock);
        life.clock.for_reading(self.clocks.nodes)
    }

    /// The clock the process in slot `pid` times by, with its slew, if its
    /// node's clocks slewed.
    pub(crate) fn slewing_clock_of(&self, pid: u32) -> Option<SlewingClock> {
        let node = self.procs[pid as usize].node as usize;
        let &(clock, slew) = self.slewed_nodes.get(node)?.as_ref()?;
        Some(clock.for_reading(self.clocks.nodes).slewing(slew))
    }

    // ----- names for observations -----

    pub(crate) fn node_ref(&self, node: u32) -> NodeRef<'_> {
        NodeRef {
            index: node,
            id: &self.nodes[node as usize].id,
        }
    }

    /// The process now in slot `pid`.
    pub(crate) fn process_ref(&self, pid: u32) -> ProcessRef<'_> {
        let p = &self.procs[pid as usize];
        ProcessRef {
            id: ProcessId(pid),
            node: self.node_ref(p.node),
            incarnation: p.incarnation,
            owner: &p.owner,
        }
    }

    /// The sender of a message from slot `pid`, named by the owner and
    /// incarnation the message carries: the slot may hold a newer incarnation
    /// by the time the message lands (a slot is reused only by its node).
    pub(crate) fn sender_ref<'a>(
        &'a self,
        pid: u32,
        incarnation: u32,
        owner: &'a OwnerId,
    ) -> ProcessRef<'a> {
        ProcessRef {
            id: ProcessId(pid),
            node: self.node_ref(self.procs[pid as usize].node),
            incarnation,
            owner,
        }
    }

    /// A host by endpoint: the lease store, the downstream, or a node.
    pub(crate) fn endpoint_ref(&self, endpoint: u16) -> HostRef<'_> {
        match endpoint {
            DOWNSTREAM_ENDPOINT => HostRef::Downstream,
            e if e < self.first_node => match self.servers.get(usize::from(server_index(e))) {
                Some(name) => HostRef::Server { endpoint: e, name },
                None => HostRef::LeaseStore,
            },
            e => HostRef::Node(self.node_ref(u32::from(e - self.first_node))),
        }
    }

    /// A message's addressee: a server, or the process now in the slot.
    pub(crate) fn address_ref(&self, to: Address) -> HostRef<'_> {
        match to {
            Address::Server(endpoint) => self.endpoint_ref(endpoint),
            Address::Process { pid, .. } => HostRef::Process(self.process_ref(pid)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A life's row is one cache line: a field that would make it two
    /// costs a miss per event in a 10 000-node fleet.
    #[test]
    fn a_life_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Life>(), 64);
    }

    fn lives() -> Lives<()> {
        let nodes = ["node-a", "node-b"].map(|id| {
            let id = NodeId::new(id).expect("a valid id");
            (id, HostClock::new(1_000_000_000, 0.001))
        });
        let clocks = HostClocks {
            nodes: ClockKind::Wall,
            servers: vec![ClockKind::Wall, ClockKind::Wall],
        };
        Lives::with_servers(Vec::new(), nodes, clocks)
    }

    fn s(secs: u64) -> SimTime {
        SimTime::from_nanos(secs * 1_000_000_000)
    }

    /// A node that slewed carries the stand-in; its clock, slews, steps and
    /// all, reads from the side table as a clock that holds its slew would.
    #[test]
    fn a_slewed_node_reads_its_clock_from_the_side_table() {
        let mut lives = lives();
        let (a, b) = (lives.spawn(0), lives.spawn(1));
        let endpoint = lives.endpoint_of(a);
        assert!(lives.slewing_clock_of(a).is_none());
        // The same faults on a clock that holds its slew itself.
        let mut expected = HostClock::new(1_000_000_000, 0.001);
        let mut slew = None;
        assert!(lives.jump_clock(endpoint, 3_000_000_000));
        expected.jump(3_000_000_000);
        lives.slew_clock(endpoint, s(10), 2_000_000_000, 20_000_000_000);
        expected.slew(&mut slew, s(10), 2_000_000_000, 20_000_000_000);
        assert!(lives.jump_clock(endpoint, -1_000_000_000));
        expected.jump(-1_000_000_000);
        // A new slew stops the first where it stands (at 15 s: 0.5 s made).
        lives.slew_clock(endpoint, s(15), -1_000_000_000, 10_000_000_000);
        expected.slew(&mut slew, s(15), -1_000_000_000, 10_000_000_000);
        let expected = expected
            .for_reading(ClockKind::Wall)
            .slewing(slew.expect("slewing"));
        assert!(lives.clock_of(a).is_slewed());
        let slewing = lives.slewing_clock_of(a).expect("slewing");
        for n in [0u64, 10, 15, 20, 25, 30, 99] {
            assert_eq!(slewing.local(s(n)), expected.local(s(n)), "at {n} s");
        }
        // Offset 1 s, drift 0.1 % of 99 s, steps +3 s and -1 s, half of
        // the first slew (+0.5 s) and all of the second (-1 s).
        let moved = 1_000_000_000 + 99_000_000 + 2_000_000_000 + 500_000_000 - 1_000_000_000;
        assert_eq!(
            slewing.local(s(99)).as_nanos() as i128,
            HostClock::TRUE.local(s(99)).as_nanos() as i128 + moved,
        );
        // The other node is untouched.
        assert!(!lives.clock_of(b).is_slewed());
        assert!(lives.slewing_clock_of(b).is_none());
    }

    /// A server's record is its offset until it slews, the stand-in from
    /// then on; its clock is the one a `ServerClock` would be.
    #[test]
    fn a_slewed_server_carries_the_stand_in() {
        use crate::engine::clock::SLEWED_SERVER_OFFSET;
        let mut lives = lives();
        let mut expected = ServerClock::default();
        assert!(lives.jump_clock(0, 4_000));
        expected.step(4_000);
        assert_eq!(lives.server_record(0), 4_000);
        lives.slew_clock(0, s(1), 1_000, 2_000);
        expected.slew(s(1), 1_000, 2_000);
        assert_eq!(lives.server_record(0), SLEWED_SERVER_OFFSET);
        assert!(lives.jump_clock(0, 4_000));
        expected.step(4_000);
        assert_eq!(lives.server_record(0), SLEWED_SERVER_OFFSET);
        assert_eq!(lives.server_clock(0), expected);
        assert_eq!(lives.server_record(1), 0);
    }
}
