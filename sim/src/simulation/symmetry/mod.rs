//! Symmetry reduction: a state and the same state with interchangeable
//! nodes renamed are one state for `fenced-sim verify`'s deduplication.
//!
//! Pruning a schedule because its state equals an earlier one's *with
//! nodes renamed* is sound when (1) every step of the simulation commutes
//! with the renaming — nothing decides by a node's identity rather than by
//! its state — and (2) the renaming is applied to the whole state.
//!
//! (2) is this module: the state text (`fingerprint`) is read back as a
//! tree (`tree.rs`) and every value that names a node — a node index, a
//! process slot, an endpoint, a node id, an owner id, a sequence indexed by
//! one — is rewritten by a table of fields (`fields.rs`) that refuses any
//! integer or string it does not classify and any string it calls plain
//! that holds a node's id, so a field added later fails a test instead of
//! being guessed. Nodes and process slots are renamed independently: a
//! slot is handed out when a node first starts, in the order nodes start
//! (ties in the order declared), so the same situation with two nodes'
//! roles exchanged holds their processes in the same slots if they started
//! in the other order and in exchanged slots if they started in the same
//! order. The canonical form of a state is the least hash of its renamed
//! forms over every permutation of the interchangeable nodes times every
//! permutation of their slots (a group: the least is the same for every
//! state of one orbit). The checker's tables grown as far as the slots seen
//! (`None` in between) are compared with trailing `None`s dropped.
//!
//! (1) is what limits where it applies (`verify::dedup::symmetry_of`, and
//! here): nodes are interchangeable only when their declarations differ in
//! nothing but the id and the start instant; no fault of the scenario's
//! own and no heal (a resolved schedule is not state, and the heal resumes
//! and restarts nodes in declaration order); no elector jitter (each node's
//! generator is seeded by its index); the fenced protocol (the zoo's states
//! are not classified); and a node that has not started yet is never
//! renamed (its start is the scenario's action, taken in declaration order
//! among nodes due together, not part of the state). Everything else the
//! engine orders by sequence numbers, which are state. One read of a
//! node's identity is left, read and argued harmless: `FleetRegistry`
//! reports the nodes that expire at one instant in id order, but the
//! store host drains one instant's reports in the same step
//! (`hosts/lease_store.rs`, `drain_membership`) and the checker's handling
//! of each (a count, a set insertion, a judgement against its model at the
//! same local time) does not depend on their order: only the trace's lines
//! and the order of violations found at that instant do.
//!
//! Both are checked on real runs, not assumed (`sim/tests/verify_symmetry.rs`):
//! running a scenario with two nodes' declarations exchanged and every
//! fault mirrored gives, at every instant looked at, exactly the renamed
//! state of the original run (the relabelling test: 196 schedules, six
//! instants each; it found the endpoint-indexed `isolated` array left in
//! place); and pairs of runs whose states right after a fault have one
//! canonical form keep one canonical form to the end with any next fault
//! and its renamed twin added (the premise of pruning: 324 pairs of
//! extensions by pauses, crashes and isolations; it found the not-started
//! rule and the grown tables).

mod fields;
pub(crate) mod tree;

use std::fmt;
use std::fmt::Write as _;

use super::fingerprint::Hashing;
use fields::{field_rule, label_rule, tuple_rule, Class, Layout, Rule};
use tree::Item;

/// The nodes a search may rename into one another, found from the
/// scenario ([`Symmetry::from_declarations`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symmetry {
    /// Classes of interchangeable nodes (indices in scenario order), each
    /// of two or more.
    classes: Vec<Vec<u32>>,
    /// Every permutation of the node indices the classes allow, the
    /// identity first.
    permutations: Vec<Vec<u32>>,
}

/// The most renamings a state is rewritten by: the permutations of the
/// interchangeable nodes times those of their process slots (a class of
/// four nodes has 24 x 24 = 576). Past it [`Symmetry::from_declarations`]
/// refuses, so a state's canonical form has bounded cost.
pub const MAX_RENAMINGS: usize = 720;

/// Why a state could not be renamed: the state text held a value the
/// field table does not classify, or a renaming did not fit the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymmetryError(pub String);

impl fmt::Display for SymmetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "symmetry reduction: {}", self.0)
    }
}

impl std::error::Error for SymmetryError {}

/// A state's canonical fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canonical {
    /// The least 128-bit hash over the renamed forms.
    pub state: u128,
    /// The permutation of nodes that gives it: node `i` of the state is
    /// node `permutation[i]` of the canonical form.
    pub permutation: Vec<u32>,
}

impl Symmetry {
    /// The symmetry of nodes `nodes` (each node's declaration with its id
    /// and start instant left out, in a form that compares), when the run
    /// allows one: `None` when no two nodes are interchangeable. `Err`
    /// when the classes allow more than [`MAX_RENAMINGS`].
    pub fn from_declarations<T: PartialEq>(nodes: &[T]) -> Result<Option<Self>, SymmetryError> {
        let mut classes: Vec<Vec<u32>> = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let i = i as u32;
            match classes.iter_mut().find(|c| nodes[c[0] as usize] == *node) {
                Some(class) => class.push(i),
                None => classes.push(vec![i]),
            }
        }
        classes.retain(|c| c.len() > 1);
        if classes.is_empty() {
            return Ok(None);
        }
        let mut count: usize = 1;
        for c in &classes {
            for k in 2..=c.len() {
                count = count.saturating_mul(k);
            }
        }
        // Nodes and process slots are permuted independently.
        let count = count.saturating_mul(count);
        if count > MAX_RENAMINGS {
            return Err(SymmetryError(format!(
                "{count} renamings of the interchangeable nodes and their process slots, \
                 more than {MAX_RENAMINGS}"
            )));
        }
        let identity: Vec<u32> = (0..nodes.len() as u32).collect();
        let mut permutations = vec![identity];
        for class in &classes {
            let mut next = Vec::new();
            for base in &permutations {
                for order in orders(class) {
                    let mut p = base.clone();
                    for (from, to) in class.iter().zip(&order) {
                        p[*from as usize] = *to;
                    }
                    next.push(p);
                }
            }
            permutations = next;
        }
        Ok(Some(Symmetry {
            classes,
            permutations,
        }))
    }

    /// The classes of interchangeable nodes.
    pub fn classes(&self) -> &[Vec<u32>] {
        &self.classes
    }

    /// The canonical fingerprint of a state text
    /// ([`Simulation::state_text`](crate::simulation::Simulation::state_text)).
    pub fn canonical(&self, text: &str) -> Result<Canonical, SymmetryError> {
        let items = read(text)?;
        let table = NodeTable::read(&items)?;
        let mut best: Option<Canonical> = None;
        let renamings = self
            .permutations
            .iter()
            .flat_map(|p| self.permutations.iter().map(move |q| (p, q)));
        // One scratch copy, renamed into for every renaming: its buffers
        // are reused (`Item::clone_from`).
        let mut renamed = Vec::new();
        for (p, q) in renamings {
            if !rename(&items, &mut renamed, &table, p, q)? {
                continue;
            }
            let mut hashing = Hashing::new();
            tree::render(&renamed, &mut hashing).expect("hashing cannot fail");
            let state = hashing.finish();
            if best.as_ref().is_none_or(|b| state < b.state) {
                best = Some(Canonical {
                    state,
                    permutation: p.clone(),
                });
            }
        }
        best.ok_or_else(|| SymmetryError("no renaming fits the state".into()))
    }
}

/// A state text with its nodes renamed by `permutation` (node `i`
/// becomes node `permutation[i]`) and its process slots moved by `slots`
/// (node `i`'s slots become node `slots[i]`'s, in order), rendered injectively (not as `Debug`
/// writes it): two states are one up to that renaming exactly when this
/// text of one equals the identity's of the other. `None` when the
/// renaming does not fit the state (two nodes it exchanges have had
/// different numbers of processes, or a sequence grown as far as the nodes
/// seen so far holds one and not the other).
pub fn renamed(
    text: &str,
    permutation: &[u32],
    slots: &[u32],
) -> Result<Option<String>, SymmetryError> {
    let items = read(text)?;
    let table = NodeTable::read(&items)?;
    if permutation.len() != table.names.len() || slots.len() != table.names.len() {
        return Err(SymmetryError(format!(
            "a renaming of {} nodes for a state of {}",
            permutation.len(),
            table.names.len()
        )));
    }
    let mut renamed = Vec::new();
    if !rename(&items, &mut renamed, &table, permutation, slots)? {
        return Ok(None);
    }
    let mut text = String::new();
    tree::render(&renamed, &mut text).expect("a String takes any text");
    Ok(Some(text))
}

fn read(text: &str) -> Result<Vec<Item>, SymmetryError> {
    tree::parse(text).map_err(|e| {
        SymmetryError(format!(
            "the state text does not read back at byte {}: expected {}",
            e.at, e.expected
        ))
    })
}

/// `items` renamed into `renamed` (whose buffers are reused); false when
/// the renaming does not fit the state (see [`renamed`]).
fn rename(
    items: &[Item],
    renamed: &mut Vec<Item>,
    table: &NodeTable,
    permutation: &[u32],
    slots: &[u32],
) -> Result<bool, SymmetryError> {
    let Some(renaming) = table.renaming(permutation, slots) else {
        return Ok(false);
    };
    tree::clone_vec_from(renamed, items, Item::clone_from);
    let mut walk = Walk {
        renaming: &renaming,
        misfit: false,
        rewrites: 0,
        path: String::new(),
    };
    walk.items(renamed)?;
    Ok(!walk.misfit)
}

/// Every order of `class`'s members (Heap's algorithm, the input first).
fn orders(class: &[u32]) -> Vec<Vec<u32>> {
    fn heap(k: usize, a: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
        if k <= 1 {
            out.push(a.clone());
            return;
        }
        heap(k - 1, a, out);
        for i in 0..k - 1 {
            if k % 2 == 0 {
                a.swap(i, k - 1);
            } else {
                a.swap(0, k - 1);
            }
            heap(k - 1, a, out);
        }
    }
    let mut out = Vec::new();
    let mut a = class.to_vec();
    heap(a.len(), &mut a, &mut out);
    out
}

/// What a renaming needs of the state: each node's id, endpoint and
/// process slots (the engine's `Lives`).
struct NodeTable {
    names: Vec<String>,
    endpoints: Vec<u32>,
    pids: Vec<Vec<u32>>,
}

/// One permutation of nodes, spelled out for every kind of identity (the
/// ids borrowed from the state's [`NodeTable`]).
struct Renaming<'a> {
    /// Node `i` becomes `node[i]`, as pairs (old, new).
    node: Vec<(u32, u32)>,
    pid: Vec<(u32, u32)>,
    endpoint: Vec<(u32, u32)>,
    /// Old id, new id (quoted as in the text: `"node-a"`).
    names: Vec<(&'a str, &'a str)>,
}

impl NodeTable {
    fn read(items: &[Item]) -> Result<Self, SymmetryError> {
        let missing = || SymmetryError("the state text has no engine nodes (`lives`)".into());
        let lives = items
            .windows(2)
            .find_map(|w| match (&w[0], &w[1]) {
                (Item::Atom(l), Item::Struct(name, fields)) if l == "lives" && name == "Lives" => {
                    Some(fields)
                }
                _ => None,
            })
            .ok_or_else(missing)?;
        let Some((_, Item::Seq(nodes))) = lives.iter().find(|(f, _)| f == "nodes") else {
            return Err(missing());
        };
        let mut table = NodeTable {
            names: Vec::new(),
            endpoints: Vec::new(),
            pids: Vec::new(),
        };
        for node in nodes {
            let Item::Struct(_, fields) = node else {
                return Err(missing());
            };
            let field = |name: &str| fields.iter().find(|(f, _)| f == name).map(|(_, v)| v);
            let (Some(Item::Tuple(_, id)), Some(Item::Atom(endpoint)), Some(Item::Seq(pids))) =
                (field("id"), field("endpoint"), field("pids"))
            else {
                return Err(missing());
            };
            let Some(Item::Str(name)) = id.first() else {
                return Err(missing());
            };
            table.names.push(name.clone());
            table.endpoints.push(number(endpoint)?);
            table.pids.push(
                pids.iter()
                    .map(|p| match p {
                        Item::Atom(a) => number(a),
                        _ => Err(missing()),
                    })
                    .collect::<Result<_, _>>()?,
            );
        }
        Ok(table)
    }

    /// Nodes renamed by `p` and process slots moved by `q` (node `i`'s
    /// slots to node `q[i]`'s, in order), or `None` when two nodes either
    /// exchanges have had different numbers of processes (no state of
    /// the other shape to compare with) or have not started.
    fn renaming(&self, p: &[u32], q: &[u32]) -> Option<Renaming<'_>> {
        let mut r = Renaming {
            node: p
                .iter()
                .enumerate()
                .map(|(from, &to)| (from as u32, to))
                .collect(),
            pid: Vec::new(),
            endpoint: Vec::new(),
            names: Vec::new(),
        };
        for (from, &to) in p.iter().enumerate() {
            let to = to as usize;
            if self.pids[from].len() != self.pids[to].len() {
                return None;
            }
            // A node that has not started yet starts when the scenario
            // says, in the order it declares (a start is the scenario's
            // own action, not part of the state): it is never renamed.
            if from != to && self.pids[from].is_empty() {
                return None;
            }
            let slots = q[from] as usize;
            if self.pids[from].len() != self.pids[slots].len()
                || (from != slots && self.pids[from].is_empty())
            {
                return None;
            }
            r.pid.extend(
                self.pids[from]
                    .iter()
                    .copied()
                    .zip(self.pids[slots].iter().copied()),
            );
            r.endpoint.push((self.endpoints[from], self.endpoints[to]));
            r.names.push((&self.names[from], &self.names[to]));
        }
        Some(r)
    }
}

fn number(atom: &str) -> Result<u32, SymmetryError> {
    atom.parse()
        .map_err(|_| SymmetryError(format!("expected an index, found {atom}")))
}

fn is_integer(atom: &str) -> bool {
    let digits = atom.strip_prefix('-').unwrap_or(atom);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The walk that renames a tree in place.
struct Walk<'a> {
    renaming: &'a Renaming<'a>,
    /// Set when an indexed sequence is too short for the renaming: it
    /// does not fit the state.
    misfit: bool,
    /// How many values the walk has changed so far (a map whose keys
    /// changed none keeps its order).
    rewrites: usize,
    /// Where the walk is, for errors.
    path: String,
}

impl Walk<'_> {
    fn unclassified(&self, what: &str) -> SymmetryError {
        SymmetryError(format!(
            "{what} at {} is not classified (sim/src/simulation/symmetry/fields.rs)",
            if self.path.is_empty() {
                "the top level"
            } else {
                &self.path
            }
        ))
    }

    /// The top level: labels, each classifying what follows it.
    fn items(&mut self, items: &mut [Item]) -> Result<(), SymmetryError> {
        let mut rule = None;
        for item in items {
            if let Item::Atom(a) = item {
                if let Some(r) = label_rule(a) {
                    rule = Some(r);
                    self.path = a.clone();
                    continue;
                }
            }
            self.item(item, rule)?;
            if let Some(Rule {
                layout: Some(layout),
                ..
            }) = rule
            {
                if matches!(item, Item::Seq(_)) {
                    self.permute(item, layout)?;
                }
            }
        }
        Ok(())
    }

    fn item(&mut self, item: &mut Item, rule: Option<Rule>) -> Result<(), SymmetryError> {
        match item {
            Item::Punct(_) => Ok(()),
            Item::Atom(a) => {
                if !is_integer(a) {
                    return Ok(());
                }
                let Some(rule) = rule else {
                    return Err(self.unclassified(&format!("the integer {a}")));
                };
                let map = match rule.class {
                    Class::Plain => return Ok(()),
                    Class::Node => &self.renaming.node,
                    Class::Pid => &self.renaming.pid,
                    Class::Endpoint => &self.renaming.endpoint,
                    Class::NodeName | Class::Owner | Class::PidFirst => {
                        return Err(self.unclassified(&format!("the integer {a} (an id field)")))
                    }
                };
                let n = number(a)?;
                if n == u32::MAX && rule.class == Class::Node {
                    return Ok(());
                }
                if let Some(&(_, to)) = map.iter().find(|(from, _)| *from == n) {
                    if to != n {
                        a.clear();
                        write!(a, "{to}").expect("a String takes any text");
                        self.rewrites += 1;
                    }
                } else if rule.class != Class::Pid && rule.class != Class::Endpoint {
                    return Err(SymmetryError(format!(
                        "node index {n} at {} is no node of the state",
                        self.path
                    )));
                }
                Ok(())
            }
            Item::Str(s) => {
                let Some(rule) = rule else {
                    return Err(self.unclassified(&format!("the string {s}")));
                };
                match rule.class {
                    Class::Plain => {
                        // A plain string holding a node's id is a field
                        // the table calls plain wrongly.
                        let inner = s.trim_matches('"');
                        let hit = self.renaming.names.iter().find(|(from, _)| {
                            let id = from.trim_matches('"');
                            inner.contains(id)
                        });
                        if let Some((id, _)) = hit {
                            return Err(SymmetryError(format!(
                                "the string {s} at {} holds the node id {id} but is classified plain",
                                self.path
                            )));
                        }
                        Ok(())
                    }
                    Class::NodeName => {
                        let Some((_, to)) = self.renaming.names.iter().find(|(f, _)| f == s) else {
                            return Err(SymmetryError(format!(
                                "{s} at {} is no node's id",
                                self.path
                            )));
                        };
                        if s != to {
                            s.clear();
                            s.push_str(to);
                            self.rewrites += 1;
                        }
                        Ok(())
                    }
                    Class::Owner => {
                        let inner = s.trim_matches('"');
                        let Some((node, incarnation)) = inner.rsplit_once('#') else {
                            return Err(SymmetryError(format!(
                                "{s} at {} is no owner id",
                                self.path
                            )));
                        };
                        let Some(&(from, to)) = self
                            .renaming
                            .names
                            .iter()
                            .find(|(f, _)| f.trim_matches('"') == node)
                        else {
                            return Err(SymmetryError(format!(
                                "{s} at {} names no node of the state",
                                self.path
                            )));
                        };
                        if from != to {
                            *s = format!("\"{}#{incarnation}\"", to.trim_matches('"'));
                            self.rewrites += 1;
                        }
                        Ok(())
                    }
                    _ => Err(self.unclassified(&format!("the string {s} (an index field)"))),
                }
            }
            Item::Struct(name, fields) => {
                for (field, value) in fields.iter_mut() {
                    let r = field_rule(name, field);
                    let saved = self.path.len();
                    for part in [".", name.as_str(), ".", field.as_str()] {
                        self.path.push_str(part);
                    }
                    self.item(value, r)?;
                    if let Some(Rule {
                        layout: Some(layout),
                        ..
                    }) = r
                    {
                        self.permute(value, layout)?;
                    }
                    self.path.truncate(saved);
                }
                Ok(())
            }
            Item::Tuple(name, items) => {
                if name.is_empty() && rule.is_some_and(|r| r.class == Class::PidFirst) {
                    let pid = Rule {
                        class: Class::Pid,
                        layout: None,
                    };
                    let plain = Rule {
                        class: Class::Plain,
                        layout: None,
                    };
                    for (k, i) in items.iter_mut().enumerate() {
                        self.item(i, Some(if k == 0 { pid } else { plain }))?;
                    }
                    return Ok(());
                }
                let rule = tuple_rule(name).or(rule);
                for i in items {
                    self.item(i, rule)?;
                }
                Ok(())
            }
            Item::Seq(items) => {
                for i in items {
                    self.item(i, rule)?;
                }
                Ok(())
            }
            Item::Map(entries) => {
                let mut keys_changed = false;
                for (k, v) in entries.iter_mut() {
                    let before = self.rewrites;
                    self.item(k, rule)?;
                    keys_changed |= self.rewrites != before;
                    if let Some(v) = v {
                        self.item(v, rule)?;
                    }
                }
                if keys_changed {
                    // Renamed keys: the map's (or set's) order is its
                    // keys' (ids compare as their text, indices as numbers).
                    if entries.iter().all(|(k, _)| key_is_text(k)) {
                        entries.sort_by_key(|(k, _)| key_text(k));
                    } else if entries
                        .iter()
                        .all(|(k, _)| matches!(k, Item::Atom(a) if is_integer(a)))
                    {
                        entries.sort_by_key(|(k, _)| match k {
                            Item::Atom(a) => a.parse::<i64>().unwrap_or(i64::MAX),
                            _ => i64::MAX,
                        });
                    } else {
                        return Err(SymmetryError(format!(
                            "a map at {} has renamed keys that are neither ids nor indices",
                            self.path
                        )));
                    }
                }
                Ok(())
            }
        }
    }

    /// Moves element `i` of an indexed sequence to the place of `i`'s image.
    fn permute(&mut self, value: &mut Item, layout: Layout) -> Result<(), SymmetryError> {
        let Item::Seq(items) = value else {
            return match value {
                Item::Atom(a) if a == "None" => Ok(()),
                _ => Err(SymmetryError(format!(
                    "an indexed field at {} is not a sequence",
                    self.path
                ))),
            };
        };
        let map = match layout {
            Layout::Nodes => &self.renaming.node,
            Layout::Slots | Layout::GrownSlots => &self.renaming.pid,
            Layout::Endpoints => &self.renaming.endpoint,
        };
        let none = || Item::Atom("None".into());
        if layout == Layout::GrownSlots {
            let needed = map.iter().map(|&(f, t)| f.max(t) as usize + 1).max();
            if let Some(needed) = needed.filter(|&n| n > items.len()) {
                items.resize_with(needed, none);
            }
        }
        // The elements moved out (each `from` is moved once: a renaming's
        // pairs are a permutation) and put back at their images.
        let len = items.len();
        let mut moved: Vec<(usize, usize, Item)> = Vec::with_capacity(map.len());
        for &(from, to) in map {
            let (from, to) = (from as usize, to as usize);
            if from < len && to < len {
                if from != to {
                    // A placeholder, filled below by the element moved to
                    // `from` (the pairs are a permutation); left only in a
                    // misfit, whose tree is thrown away.
                    let item = std::mem::replace(&mut items[from], Item::Punct(' '));
                    moved.push((from, to, item));
                }
            } else if from != to && (from < len || to < len) {
                // A sequence grown only as far as the nodes (or slots)
                // seen so far: the renamed state would hold an element
                // where this one holds none, a shape no state of the
                // run has.
                self.misfit = true;
            }
        }
        // A rewrite is a place whose element changed (two equal elements
        // exchanged change nothing).
        self.rewrites += moved
            .iter()
            .filter(|(_, to, item)| {
                moved
                    .iter()
                    .find(|(from, _, _)| from == to)
                    .is_none_or(|(_, _, displaced)| displaced != item)
            })
            .count();
        for (_, to, item) in moved {
            items[to] = item;
        }
        if layout == Layout::GrownSlots {
            while items.last() == Some(&none()) {
                items.pop();
            }
        }
        Ok(())
    }
}

fn key_is_text(item: &Item) -> bool {
    match item {
        Item::Str(_) => true,
        Item::Tuple(name, items) => {
            (name == "OwnerId" || name == "NodeId") && matches!(items.as_slice(), [Item::Str(_)])
        }
        _ => false,
    }
}

/// An id key's text, which its `Ord` compares (`String`'s).
fn key_text(item: &Item) -> String {
    match item {
        Item::Str(s) => s.trim_matches('"').to_string(),
        Item::Tuple(_, items) => items.first().map(key_text).unwrap_or_default(),
        _ => String::new(),
    }
}
