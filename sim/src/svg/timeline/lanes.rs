//! The lanes of the timeline, top to bottom: one per node (or per process
//! when a node's incarnations overlap, so a zombie and its replacement each
//! get one), then the lease store, the downstream and the membership; and
//! which lane a host, owner or node's marks go in.

use std::collections::BTreeMap;

use super::{Scale, DOWNSTREAM_LANE, MEMBERSHIP_LANE, NODE_LANE, STORE_LANE};
use crate::scenario::{DOWNSTREAM, LEASE_STORE};
use crate::timeline::Timeline;

/// The most node lanes drawn; further nodes are counted in a note. Nodes
/// that led, were faulted or wrote in the window come first.
pub const MAX_NODE_LANES: usize = 16;

/// Whose lane a fault host is: a node id (owners lose their `#n`), or the
/// lease store or downstream.
pub(super) fn host_node(host: &str) -> &str {
    host.split_once('#').map_or(host, |(node, _)| node)
}

/// One horizontal lane of the picture.
pub(super) struct Lane {
    /// `node`, `lease-store`, `downstream` or `membership`.
    pub(super) kind: &'static str,
    /// The node id, or the owner when a node's incarnations overlap (a
    /// zombie and its replacement each get a lane).
    pub(super) key: String,
    /// The node a node lane belongs to.
    pub(super) node: String,
    pub(super) y: f64,
    pub(super) h: f64,
}

/// The lanes and how hosts, owners and nodes map onto them.
pub(super) struct Lanes {
    pub(super) lanes: Vec<Lane>,
    pub(super) by_key: BTreeMap<String, usize>,
    /// Nodes drawn with one lane per incarnation.
    pub(super) split: BTreeMap<String, Vec<usize>>,
    /// Nodes not drawn.
    pub(super) hidden: usize,
    /// Where the lanes begin (below the header and the overlap labels).
    pub(super) top: f64,
    pub(super) bottom: f64,
}

impl Lanes {
    pub(super) fn build<'a>(timeline: &'a Timeline, scale: &Scale, top: f64) -> Self {
        // Which nodes matter in the window: those that led first, then
        // those faulted, then the rest, each in scenario order.
        let mut rank: BTreeMap<&str, u8> = BTreeMap::new();
        let mut note = |node: &'a str, r: u8| {
            let e = rank.entry(node).or_insert(r);
            *e = (*e).min(r);
        };
        for t in &timeline.beliefs {
            if scale.meets(t.start_ns, t.end_ns) {
                note(t.node.as_str(), 0);
            }
        }
        for f in &timeline.faults {
            if scale.meets(f.start_ns, f.end_ns) {
                note(host_node(&f.host), 1);
            }
        }
        for c in &timeline.crashes {
            if scale.contains(c.at_ns) {
                note(c.node.as_str(), 1);
            }
        }
        let order: BTreeMap<&str, usize> = timeline
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut shown: Vec<&str> = timeline.nodes.iter().map(String::as_str).collect();
        shown.sort_by_key(|n| rank.get(n).copied().unwrap_or(2));
        shown.truncate(MAX_NODE_LANES);
        shown.sort_by_key(|n| order.get(n).copied().unwrap_or(usize::MAX));
        let hidden = timeline.nodes.len().saturating_sub(shown.len());

        // Incarnations of each node: (owner, start, end).
        let mut lives: BTreeMap<&str, Vec<(&str, u64, u64)>> = BTreeMap::new();
        for s in &timeline.starts {
            let died = timeline
                .crashes
                .iter()
                .filter(|c| c.owner == s.owner && c.at_ns >= s.at_ns)
                .map(|c| c.at_ns)
                .min()
                .unwrap_or(timeline.end_ns);
            lives
                .entry(s.node.as_str())
                .or_default()
                .push((s.owner.as_str(), s.at_ns, died));
        }
        let mut lanes = Vec::new();
        let mut by_key = BTreeMap::new();
        let mut split: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut y = top;
        for node in shown {
            let mut owners = lives.remove(node).unwrap_or_default();
            owners.sort_by_key(|&(_, start, _)| start);
            let overlapping = owners
                .windows(2)
                .any(|w| w[1].1 < w[0].2 && scale.meets(w[1].1, w[0].2));
            let keys: Vec<String> = if overlapping {
                owners.iter().map(|(o, _, _)| o.to_string()).collect()
            } else {
                vec![node.to_string()]
            };
            for key in keys {
                by_key.insert(key.clone(), lanes.len());
                if overlapping {
                    split.entry(node.to_string()).or_default().push(lanes.len());
                }
                lanes.push(Lane {
                    kind: "node",
                    key,
                    node: node.to_string(),
                    y,
                    h: NODE_LANE,
                });
                y += NODE_LANE;
            }
        }
        for (kind, key, h) in [
            ("lease-store", LEASE_STORE, STORE_LANE),
            ("downstream", DOWNSTREAM, DOWNSTREAM_LANE),
            ("membership", "membership", MEMBERSHIP_LANE),
        ] {
            by_key.insert(key.to_string(), lanes.len());
            lanes.push(Lane {
                kind,
                key: key.to_string(),
                node: String::new(),
                y,
                h,
            });
            y += h;
        }
        Lanes {
            lanes,
            by_key,
            split,
            hidden,
            top,
            bottom: y,
        }
    }

    /// The lane of a process (owner `node#n` of `node`).
    pub(super) fn of_owner(&self, owner: &str, node: &str) -> Option<usize> {
        if self.split.contains_key(node) {
            self.by_key.get(owner).copied()
        } else {
            self.by_key.get(node).copied()
        }
    }

    /// The lanes a fault on `host` shades.
    pub(super) fn of_host(&self, host: &str) -> Vec<usize> {
        let node = host_node(host);
        if node != host {
            return self.of_owner(host, node).into_iter().collect();
        }
        match self.split.get(node) {
            Some(all) => all.clone(),
            None => self.by_key.get(node).copied().into_iter().collect(),
        }
    }

    pub(super) fn get(&self, key: &str) -> &Lane {
        &self.lanes[self.by_key[key]]
    }
}
