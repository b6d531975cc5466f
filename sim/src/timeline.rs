//! What happened when, for pictures: who held the lease at the store (truth),
//! which faults were active on which host, which writes landed, the live
//! membership count — and, from the checker, who *believed* it led.
//!
//! Recording is opt-in ([`Simulation::record_timeline`](crate::Simulation::record_timeline)) because it grows with the
//! run; the engine's own state does not. Lists are capped at
//! [`MAX_MARKS`] entries each (a count of what was dropped is kept).

use std::collections::BTreeMap;

use fenced::{LeaseResult, WriteOutcome};
use serde::{Deserialize, Serialize};

use crate::observation::{Observation, Observer, SimTime};

/// The most entries kept in each list of a timeline.
pub const MAX_MARKS: usize = 200_000;

/// An interval on one host, in true-time nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The host: a process owner (`node-a#1`), a node, `lease-store` or
    /// `downstream`.
    pub host: String,
    /// When it began.
    pub start_ns: u64,
    /// When it ended (the run's end if it was still going).
    pub end_ns: u64,
    /// A short label (`pause`, `isolate`, `cut to lease-store`, ...).
    pub label: String,
}

/// A lease held at the store: from a grant to its expiry, release or the
/// next grant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holding {
    /// The holder (owner identity).
    pub owner: String,
    /// The holder's node.
    pub node: String,
    /// The term's token.
    pub token: u64,
    /// When the store granted it.
    pub start_ns: u64,
    /// When it stopped being held (expired, released, or taken over).
    pub end_ns: u64,
}

/// What the downstream made of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteFate {
    /// Accepted.
    Accepted,
    /// Rejected: its token was below the highest accepted.
    RejectedStale,
    /// Rejected: its token belongs to another writer.
    RejectedWrongWriter,
}

/// One write reaching the downstream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteMark {
    /// When the downstream handled it.
    pub at_ns: u64,
    /// The writer.
    pub owner: String,
    /// The writer's node.
    pub node: String,
    /// Its token.
    pub token: u64,
    /// What happened to it.
    pub fate: WriteFate,
    /// Accepted although a newer term had already written: split-brain.
    pub split_brain: bool,
}

/// A point event on a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// When.
    pub at_ns: u64,
    /// The owner concerned.
    pub owner: String,
    /// Its node.
    pub node: String,
    /// A token, where one is involved (0 otherwise).
    pub token: u64,
}

/// A leadership term as its process believed it, in true-time nanoseconds
/// (the checker's [`BeliefTerm`](crate::checker::BeliefTerm); the report
/// lists the same terms in milliseconds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Belief {
    /// The believer (owner identity).
    pub owner: String,
    /// Its node.
    pub node: String,
    /// The term's token.
    pub token: u64,
    /// When it began to believe it led.
    pub start_ns: u64,
    /// When it stopped (the record's end if it still believed it).
    pub end_ns: u64,
    /// Why it ended (the report's `end_reason`).
    pub end_reason: String,
}

impl From<&crate::checker::BeliefTerm> for Belief {
    fn from(term: &crate::checker::BeliefTerm) -> Self {
        Belief {
            owner: term.owner.clone(),
            node: term.node.clone(),
            token: term.token.get(),
            start_ns: term.start.as_nanos(),
            end_ns: term.end.as_nanos(),
            end_reason: term.end_reason.to_string(),
        }
    }
}

/// Everything a picture of the run needs besides the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// The node ids, in scenario order (one lane each).
    pub nodes: Vec<String>,
    /// When the record ends (the run's current time).
    pub end_ns: u64,
    /// When the liveness phase began, if it did.
    pub heal_ns: Option<u64>,
    /// Leases as the store held them.
    pub truth: Vec<Holding>,
    /// Terms as the processes believed them (at most
    /// [`MAX_TERMS_LISTED`](crate::report::MAX_TERMS_LISTED), like the
    /// report's).
    #[serde(default)]
    pub beliefs: Vec<Belief>,
    /// How long two or more processes believed they led (the report's
    /// `overlap_ms`, in nanoseconds).
    #[serde(default)]
    pub overlap_ns: u64,
    /// Pauses, isolations, cuts and partitions, per affected host.
    pub faults: Vec<Span>,
    /// Process crashes.
    pub crashes: Vec<Mark>,
    /// Process starts (the first process of each node and every restart or
    /// replacement).
    pub starts: Vec<Mark>,
    /// Grants of new terms by the store.
    pub grants: Vec<Mark>,
    /// Refused lease requests.
    pub refusals: Vec<Mark>,
    /// Writes as the downstream handled them.
    pub writes: Vec<WriteMark>,
    /// The registry's live count after each change, `(at_ns, live)`.
    pub live: Vec<(u64, u64)>,
    /// Entries not kept because a list was full.
    pub dropped: u64,
}

/// Builds a [`Timeline`] from the simulator's hooks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder {
    timeline: Timeline,
    /// The holding in progress, with its current expiry.
    holding: Option<(Holding, u64)>,
    /// Faults in progress by key (slot or host), with their start.
    open: BTreeMap<String, (String, String, u64)>,
    /// The highest token the downstream accepted: an accepted write below it
    /// is a split-brain write.
    highest_accepted: Option<u64>,
}

fn push<T>(list: &mut Vec<T>, dropped: &mut u64, item: T) {
    if list.len() < MAX_MARKS {
        list.push(item);
    } else {
        *dropped += 1;
    }
}

impl Recorder {
    pub(crate) fn new(nodes: Vec<String>) -> Self {
        Recorder {
            timeline: Timeline {
                nodes,
                ..Timeline::default()
            },
            ..Recorder::default()
        }
    }

    fn close_holding(&mut self, at: u64) {
        if let Some((mut holding, expires)) = self.holding.take() {
            holding.end_ns = at.min(expires);
            push(
                &mut self.timeline.truth,
                &mut self.timeline.dropped,
                holding,
            );
        }
    }

    pub(crate) fn granted(&mut self, at: u64, owner: &str, node: &str, token: u64, expires: u64) {
        self.close_holding(at);
        self.holding = Some((
            Holding {
                owner: owner.to_string(),
                node: node.to_string(),
                token,
                start_ns: at,
                end_ns: expires,
            },
            expires,
        ));
        let mark = Mark {
            at_ns: at,
            owner: owner.to_string(),
            node: node.to_string(),
            token,
        };
        push(&mut self.timeline.grants, &mut self.timeline.dropped, mark);
    }

    pub(crate) fn renewed(&mut self, at: u64, owner: &str, node: &str, token: u64, expires: u64) {
        match &mut self.holding {
            Some((holding, expiry))
                if holding.owner == owner && holding.token == token && at < *expiry =>
            {
                *expiry = expires;
            }
            _ => self.granted(at, owner, node, token, expires),
        }
    }

    pub(crate) fn released(&mut self, at: u64, owner: &str, token: u64) {
        if self
            .holding
            .as_ref()
            .is_some_and(|(h, _)| h.owner == owner && h.token == token)
        {
            self.close_holding(at);
        }
    }

    pub(crate) fn refused(&mut self, at: u64, owner: &str, node: &str) {
        let mark = Mark {
            at_ns: at,
            owner: owner.to_string(),
            node: node.to_string(),
            token: 0,
        };
        push(
            &mut self.timeline.refusals,
            &mut self.timeline.dropped,
            mark,
        );
    }

    pub(crate) fn wrote(&mut self, mark: WriteMark) {
        push(&mut self.timeline.writes, &mut self.timeline.dropped, mark);
    }

    pub(crate) fn started(&mut self, at: u64, owner: &str, node: &str) {
        let mark = Mark {
            at_ns: at,
            owner: owner.to_string(),
            node: node.to_string(),
            token: 0,
        };
        push(&mut self.timeline.starts, &mut self.timeline.dropped, mark);
    }

    pub(crate) fn crashed(&mut self, at: u64, owner: &str, node: &str) {
        let mark = Mark {
            at_ns: at,
            owner: owner.to_string(),
            node: node.to_string(),
            token: 0,
        };
        push(&mut self.timeline.crashes, &mut self.timeline.dropped, mark);
    }

    /// A fault began on `host`; `key` identifies it until [`Self::fault_ended`].
    pub(crate) fn fault_began(&mut self, key: String, host: &str, label: &str, at: u64) {
        self.open
            .insert(key, (host.to_string(), label.to_string(), at));
    }

    /// Ends every fault whose key starts with `prefix`.
    pub(crate) fn faults_ended(&mut self, prefix: &str, at: u64) {
        let keys: Vec<String> = self
            .open
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.fault_ended(&key, at);
        }
    }

    pub(crate) fn fault_ended(&mut self, key: &str, at: u64) {
        if let Some((host, label, start)) = self.open.remove(key) {
            let span = Span {
                host,
                start_ns: start,
                end_ns: at,
                label,
            };
            push(&mut self.timeline.faults, &mut self.timeline.dropped, span);
        }
    }

    pub(crate) fn live(&mut self, at: u64, count: u64) {
        if self.timeline.live.last().map(|(_, c)| *c) != Some(count) {
            push(
                &mut self.timeline.live,
                &mut self.timeline.dropped,
                (at, count),
            );
        }
    }

    pub(crate) fn healed(&mut self, at: u64) {
        self.timeline.heal_ns = Some(at);
    }

    /// The timeline as of `now`, with what is still open closed at `now`.
    pub(crate) fn snapshot(&self, now: u64) -> Timeline {
        let mut copy = self.clone();
        copy.close_holding(now);
        let open: Vec<String> = copy.open.keys().cloned().collect();
        for key in open {
            copy.fault_ended(&key, now);
        }
        let mut timeline = copy.timeline;
        timeline.end_ns = now;
        timeline
            .faults
            .sort_by(|a, b| (a.start_ns, &a.host).cmp(&(b.start_ns, &b.host)));
        timeline
    }
}

impl Observer for Recorder {
    fn observe(&mut self, at: SimTime, observation: &Observation<'_>) {
        let at = at.as_nanos();
        match *observation {
            Observation::ProcessStarted(p) => {
                self.started(at, p.owner.as_str(), p.node.id.as_str())
            }
            Observation::ProcessCrashed(p) => {
                self.crashed(at, p.owner.as_str(), p.node.id.as_str())
            }
            Observation::Healed => self.healed(at),
            Observation::LeaseHandled { from, result, .. } => {
                let (owner, node) = (from.owner.as_str(), from.node.id.as_str());
                match result {
                    LeaseResult::Granted { token, expires_at } => {
                        self.granted(at, owner, node, token.get(), expires_at.as_nanos())
                    }
                    LeaseResult::Renewed { token, expires_at } => {
                        self.renewed(at, owner, node, token.get(), expires_at.as_nanos())
                    }
                    LeaseResult::Held { .. } => self.refused(at, owner, node),
                }
            }
            Observation::ReleaseHandled {
                from,
                token,
                released: true,
            } => self.released(at, from.owner.as_str(), token.get()),
            Observation::WriteHandled {
                from,
                token,
                outcome,
                ..
            } => {
                let token = token.get();
                let accepted = *outcome == WriteOutcome::Accepted;
                let split_brain = accepted && self.highest_accepted.is_some_and(|h| token < h);
                if accepted {
                    self.highest_accepted =
                        Some(self.highest_accepted.map_or(token, |h| h.max(token)));
                }
                self.wrote(WriteMark {
                    at_ns: at,
                    owner: from.owner.to_string(),
                    node: from.node.id.to_string(),
                    token,
                    fate: match outcome {
                        WriteOutcome::Accepted => WriteFate::Accepted,
                        WriteOutcome::RejectedStale { .. } => WriteFate::RejectedStale,
                        WriteOutcome::RejectedWrongWriter { .. } => WriteFate::RejectedWrongWriter,
                    },
                    split_brain,
                });
            }
            // Another protocol's truth (its servers' view of the holder):
            // held until it changes. A protocol token `t` is drawn as the
            // term's token `t + 1`; 0 marks a protocol without tokens.
            Observation::Holder {
                server: None,
                holder,
                token,
            } => match holder {
                Some(p) => {
                    let token = token.map_or(0, |t| t.saturating_add(1));
                    let (owner, node) = (p.owner.as_str(), p.node.id.as_str());
                    if self
                        .holding
                        .as_ref()
                        .is_none_or(|(h, _)| h.owner != owner || h.token != token)
                    {
                        self.granted(at, owner, node, token, u64::MAX);
                    }
                }
                None => self.close_holding(at),
            },
            Observation::LiveMembers(count) => self.live(at, count),
            Observation::FaultBegan { slot, spans } => {
                for (i, (host, label)) in spans.iter().enumerate() {
                    self.fault_began(format!("{slot:08}/{i:04}"), host.name(), label, at);
                }
            }
            Observation::FaultEnded { slot } => self.faults_ended(&format!("{slot:08}/"), at),
            _ => {}
        }
    }
}
