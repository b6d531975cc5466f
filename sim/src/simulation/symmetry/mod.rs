//! Symmetry reduction: a state and the same state with identical nodes'
//! names swapped are one state for `fenced-sim verify`'s deduplication.
//!
//! Pruning a schedule because its state equals an earlier one's *with
//! nodes renamed* is sound when (1) every step of the simulation commutes
//! with the renaming — nothing decides by a node's identity rather than by
//! its state — and (2) the renaming is applied to the whole state. (2) is
//! this module: the state text (`fingerprint`) is read back as a tree
//! ([`tree`]) and every value that names a node — a node index, a process
//! slot, an endpoint, a node id, an owner id, a sequence indexed by one —
//! is rewritten by a table of fields ([`fields`]) that refuses any integer
//! or string it does not classify, so a field added later fails a test
//! instead of being guessed. The canonical form of a state is the least of
//! its renamed forms' hashes over every permutation of the interchangeable
//! nodes.
//!
//! (1) is what limits where it applies ([`Symmetry::of`]): nodes are
//! interchangeable only when their declarations differ in nothing but the
//! id and the start instant (no clock offset or drift of their own, no
//! settings of their own), no fault of the scenario names them (the
//! resolved schedule is not part of the state), the electors draw no
//! jitter (each node's generator is seeded by its index), and the design
//! is the fenced protocol (the zoo's states are not classified). What is
//! left decides by state alone, with one exception found by reading the
//! code and checked by the relabelling test (`sim/tests/verify_symmetry.rs`):
//! `FleetRegistry` reports the nodes that expire at one instant in id
//! order, which is a node's identity; the checker's membership model and
//! the store host take those reports one by one, and the state after all
//! of one instant's reports is the same in either order (a set of members
//! removed, counts added), so only the trace's order of those lines
//! depends on it, never a later state.

mod fields;
pub(crate) mod tree;

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::Hasher;

use fields::{field_rule, label_rule, tuple_rule, Class, Layout, Rule};
use tree::Item;

/// The nodes a search may rename into one another, found from the
/// scenario ([`Symmetry::of`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symmetry {
    /// Classes of interchangeable nodes (indices in scenario order), each
    /// of two or more.
    classes: Vec<Vec<u32>>,
    /// Every permutation of the node indices the classes allow, the
    /// identity first.
    permutations: Vec<Vec<u32>>,
}

/// The most permutations a state is renamed by (a class of six nodes has
/// 720): past it [`Symmetry::of`] refuses, so a state's canonical form
/// has bounded cost.
pub const MAX_PERMUTATIONS: usize = 720;

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
    /// The permutation that gives it: node `i` of the state is node
    /// `permutation[i]` of the canonical form.
    pub permutation: Vec<u32>,
}

impl Symmetry {
    /// The symmetry of nodes `nodes` (each node's declaration with its id
    /// and start instant left out, in a form that compares), when the run
    /// allows one: `None` when no two nodes are interchangeable. `Err`
    /// when the classes allow more than [`MAX_PERMUTATIONS`].
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
        if count > MAX_PERMUTATIONS {
            return Err(SymmetryError(format!(
                "{count} renamings of the interchangeable nodes, more than {MAX_PERMUTATIONS}"
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
            .flat_map(|p| [(p, Pids::Keep), (p, Pids::Follow)]);
        for (p, pids) in renamings {
            let Some(renamed) = rename(&items, &table, p, pids)? else {
                continue;
            };
            let state = hash128(&renamed);
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
/// becomes node `permutation[i]`) and its process slots as `pids` says,
/// rendered injectively (not as `Debug`
/// writes it): two states are one up to that renaming exactly when this
/// text of one equals the identity's of the other. `None` when the
/// renaming does not fit the state (two nodes it exchanges have had
/// different numbers of processes, or a sequence grown as far as the nodes
/// seen so far holds one and not the other).
pub fn renamed(
    text: &str,
    permutation: &[u32],
    pids: Pids,
) -> Result<Option<String>, SymmetryError> {
    let items = read(text)?;
    let table = NodeTable::read(&items)?;
    if permutation.len() != table.names.len() {
        return Err(SymmetryError(format!(
            "a renaming of {} nodes for a state of {}",
            permutation.len(),
            table.names.len()
        )));
    }
    rename(&items, &table, permutation, pids)
}

fn read(text: &str) -> Result<Vec<Item>, SymmetryError> {
    tree::parse(text).map_err(|e| {
        SymmetryError(format!(
            "the state text does not read back at byte {}: expected {}",
            e.at, e.expected
        ))
    })
}

fn rename(
    items: &[Item],
    table: &NodeTable,
    permutation: &[u32],
    pids: Pids,
) -> Result<Option<String>, SymmetryError> {
    let Some(renaming) = table.renaming(permutation, pids) else {
        return Ok(None);
    };
    let mut renamed = items.to_vec();
    let mut walk = Walk {
        renaming: &renaming,
        misfit: false,
        path: String::new(),
    };
    walk.items(&mut renamed)?;
    if walk.misfit {
        return Ok(None);
    }
    let mut text = String::new();
    tree::render(&renamed, &mut text);
    Ok(Some(text))
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

fn hash128(text: &str) -> u128 {
    let (mut a, mut b) = (DefaultHasher::new(), DefaultHasher::new());
    b.write_u64(0x9e37_79b9_7f4a_7c15);
    a.write(text.as_bytes());
    b.write(text.as_bytes());
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

/// What a renaming needs of the state: each node's id, endpoint and
/// process slots (the engine's `Lives`).
struct NodeTable {
    names: Vec<String>,
    endpoints: Vec<u32>,
    pids: Vec<Vec<u32>>,
}

/// What a renaming does to process slots. A slot is handed out when a
/// node first starts (so nodes that start apart hold slots in the order
/// they started, and nodes that start together in the order declared):
/// the renamed state keeps every process in its slot (`Keep`: the run in
/// which the other node started first), or moves each process to the
/// slot the renamed node holds (`Follow`: the same order of starts, the
/// other node faulted). Both are states of the run; the canonical form
/// is the least over both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pids {
    /// Every process stays in its slot.
    Keep,
    /// Each process moves to the slot its renamed node holds.
    Follow,
}

/// One permutation of nodes, spelled out for every kind of identity.
struct Renaming {
    node: Vec<u32>,
    pid: Vec<(u32, u32)>,
    endpoint: Vec<(u32, u32)>,
    /// Old id, new id (quoted as in the text: `"node-a"`).
    names: Vec<(String, String)>,
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

    /// `p` applied to this state, or `None` when two nodes it exchanges
    /// have had different numbers of processes (no state of the other
    /// shape to compare with).
    fn renaming(&self, p: &[u32], pids: Pids) -> Option<Renaming> {
        let mut r = Renaming {
            node: p.to_vec(),
            pid: Vec::new(),
            endpoint: Vec::new(),
            names: Vec::new(),
        };
        for (from, &to) in p.iter().enumerate() {
            let to = to as usize;
            if self.pids[from].len() != self.pids[to].len() {
                return None;
            }
            if pids == Pids::Follow {
                r.pid.extend(
                    self.pids[from]
                        .iter()
                        .copied()
                        .zip(self.pids[to].iter().copied()),
                );
            }
            r.endpoint.push((self.endpoints[from], self.endpoints[to]));
            r.names
                .push((self.names[from].clone(), self.names[to].clone()));
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
    renaming: &'a Renaming,
    /// Set when an indexed sequence is too short for the renaming: it
    /// does not fit the state.
    misfit: bool,
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
                    Class::Node => &self.node_pairs(),
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
                    *a = to.to_string();
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
                        *s = to.clone();
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
                        let quoted = format!("\"{node}\"");
                        let Some((_, to)) = self.renaming.names.iter().find(|(f, _)| *f == quoted)
                        else {
                            return Err(SymmetryError(format!(
                                "{s} at {} names no node of the state",
                                self.path
                            )));
                        };
                        *s = format!("\"{}#{incarnation}\"", to.trim_matches('"'));
                        Ok(())
                    }
                    _ => Err(self.unclassified(&format!("the string {s} (an index field)"))),
                }
            }
            Item::Struct(name, fields) => {
                let name = name.clone();
                for (field, value) in fields.iter_mut() {
                    let r = field_rule(&name, field);
                    let saved = self.path.len();
                    self.path.push_str(&format!(".{name}.{field}"));
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
                let before: Vec<String> = entries.iter().map(|(k, _)| render_one(k)).collect();
                for (k, v) in entries.iter_mut() {
                    self.item(k, rule)?;
                    if let Some(v) = v {
                        self.item(v, rule)?;
                    }
                }
                let after: Vec<String> = entries.iter().map(|(k, _)| render_one(k)).collect();
                if before != after {
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

    fn node_pairs(&self) -> Vec<(u32, u32)> {
        self.renaming
            .node
            .iter()
            .enumerate()
            .map(|(from, &to)| (from as u32, to))
            .collect()
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
            Layout::Nodes => self.node_pairs(),
            Layout::Slots => self.renaming.pid.clone(),
            Layout::Endpoints => self.renaming.endpoint.clone(),
        };
        let old = items.clone();
        for (from, to) in map {
            let (from, to) = (from as usize, to as usize);
            if from < old.len() && to < old.len() {
                items[to] = old[from].clone();
            } else if from != to && (from < old.len() || to < old.len()) {
                // A sequence grown only as far as the nodes (or slots)
                // seen so far: the renamed state would hold an element
                // where this one holds none, a shape no state of the
                // run has.
                self.misfit = true;
            }
        }
        Ok(())
    }
}

fn render_one(item: &Item) -> String {
    let mut s = String::new();
    tree::render(std::slice::from_ref(item), &mut s);
    s
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
