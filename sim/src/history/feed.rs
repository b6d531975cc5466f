//! Turning the merged history lines into observations for the checker and
//! the timeline recorder.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use fenced::history::{EndReason, Event, LeaseAnswer, WriteVerdict};
use fenced::{
    FencingToken, Instant, Lease, LeaseResult, NodeId, OwnerId, StepDownReason, WriteOutcome,
};

use crate::checker::Checker;
use crate::observation::{HostRef, NodeRef, Observation, Observer, ProcessId, ProcessRef, SimTime};
use crate::report::{HistoryProblem, UnjudgedWrite, UnjudgedWrites, MAX_UNJUDGED_LISTED};
use crate::timeline::Recorder;

mod infer;

/// Who one node process is (fixed for the whole check).
#[derive(Clone, Debug)]
pub(super) struct Ident {
    pub(super) node: NodeId,
    pub(super) node_index: u32,
    pub(super) owner: OwnerId,
    pub(super) incarnation: u32,
    /// Its history file.
    pub(super) path: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    NotStarted,
    Alive,
    Ended,
}

/// What the feed tracks of one process.
#[derive(Clone, Debug)]
struct State {
    life: Life,
    term: Option<FencingToken>,
    pause_depth: u32,
    /// Units started and not yet sent or cancelled.
    in_progress: BTreeSet<(u64, u64)>,
    /// Per token, units sent and not yet judged, oldest first.
    sent: BTreeMap<u64, VecDeque<u64>>,
    ignored_after_end: u64,
    /// Lease requests that failed without an answer (timed out, the
    /// connection lost) since the process's last answer: each may have been
    /// decided by the store all the same (see [`Feed::lease`]).
    unanswered: u32,
    /// The token of the last grant or renewal this process was answered.
    known_token: Option<FencingToken>,
    /// Its lease requests sent and not yet answered or failed, by request:
    /// when each left (the report's time). At most [`MAX_OUTSTANDING`].
    outstanding: BTreeMap<u64, SimTime>,
    /// When the earliest of the `unanswered` requests left.
    first_unanswered_sent: Option<SimTime>,
}

/// The most requests of one process the feed remembers the sending of (a
/// real client has one or two in flight; a history that never answers or
/// fails its requests must not grow this without bound).
const MAX_OUTSTANDING: usize = 256;

/// The observers and what the feed keeps between lines.
pub(super) struct Feed<'a> {
    idents: &'a [Ident],
    nodes: &'a [NodeId],
    states: Vec<State>,
    pub(super) checker: Checker,
    pub(super) timeline: Option<Recorder>,
    /// The lease store's clock minus the report's time, as last learned.
    store_offset: i64,
    lease_ttl_ns: u64,
    members: BTreeSet<u32>,
    pub(super) problems: Vec<HistoryProblem>,
    pub(super) errors: u64,
}

/// Where a line came from, for problems.
pub(super) struct Origin<'a> {
    pub(super) path: &'a str,
    pub(super) line: u64,
}

impl<'a> Feed<'a> {
    pub(super) fn new(
        idents: &'a [Ident],
        nodes: &'a [NodeId],
        checker: Checker,
        timeline: Option<Recorder>,
        lease_ttl_ns: u64,
    ) -> Self {
        let state = State {
            life: Life::NotStarted,
            term: None,
            pause_depth: 0,
            in_progress: BTreeSet::new(),
            sent: BTreeMap::new(),
            ignored_after_end: 0,
            unanswered: 0,
            known_token: None,
            outstanding: BTreeMap::new(),
            first_unanswered_sent: None,
        };
        Feed {
            idents,
            nodes,
            states: vec![state; idents.len()],
            checker,
            timeline,
            store_offset: 0,
            lease_ttl_ns,
            members: BTreeSet::new(),
            problems: Vec::new(),
            errors: 0,
        }
    }

    fn process(&self, pid: usize) -> ProcessRef<'a> {
        let ident = &self.idents[pid];
        ProcessRef {
            id: ProcessId(pid as u32),
            node: NodeRef {
                index: ident.node_index,
                id: &ident.node,
            },
            incarnation: ident.incarnation,
            owner: &ident.owner,
        }
    }

    fn emit(&mut self, at: SimTime, observation: &Observation<'_>) {
        self.checker.observe(at, observation);
        if let Some(timeline) = &mut self.timeline {
            timeline.observe(at, observation);
        }
    }

    pub(super) fn problem(&mut self, origin: &Origin<'_>, error: bool, detail: String) {
        if error {
            self.errors += 1;
        }
        self.problems.push(HistoryProblem {
            path: origin.path.to_string(),
            line: origin.line,
            severity: if error { "error" } else { "warning" }.to_string(),
            detail,
        });
    }

    /// The process of `owner` to attribute a write or a kill to: the live
    /// one, else the latest that ran.
    fn by_owner(&self, owner: &OwnerId) -> Option<usize> {
        let mut found = None;
        for (pid, ident) in self.idents.iter().enumerate() {
            if ident.owner == *owner {
                if self.states[pid].life == Life::Alive {
                    return Some(pid);
                }
                found = Some(pid);
            }
        }
        found
    }

    /// Starts `pid` if it has not started (its `process-started` line may be
    /// lost); whether it may act (it has not ended).
    fn ensure_alive(&mut self, at: SimTime, pid: usize) -> bool {
        match self.states[pid].life {
            Life::Alive => true,
            Life::Ended => {
                self.states[pid].ignored_after_end += 1;
                false
            }
            Life::NotStarted => {
                self.states[pid].life = Life::Alive;
                let p = self.process(pid);
                self.emit(at, &Observation::ProcessStarted(p));
                true
            }
        }
    }

    /// Ends `pid`'s life: stopped gracefully, or crashed (killed, or its
    /// history ended).
    pub(super) fn end(&mut self, at: SimTime, pid: usize, stopped: bool) {
        if self.states[pid].life == Life::Ended {
            return;
        }
        if self.states[pid].life == Life::NotStarted {
            self.ensure_alive(at, pid);
        }
        let p = self.process(pid);
        let state = &mut self.states[pid];
        state.life = Life::Ended;
        state.term = None;
        state.in_progress.clear();
        let observation = if stopped {
            Observation::ProcessStopped(p)
        } else {
            Observation::ProcessCrashed(p)
        };
        self.emit(at, &observation);
    }

    /// Process `pid` sent a release of `token` that no answer follows in its
    /// history (a cut swallowed the reply, or the process ended first). The
    /// store may have freed the lease at any moment from the send, and the
    /// history cannot tell when: it counts as made at the send, so a grant
    /// to a successor after it is not judged against the released lease. (An
    /// answered release is judged by its answer: `released: false` keeps
    /// the lease.)
    pub(super) fn unanswered_release(&mut self, at: SimTime, pid: usize, token: FencingToken) {
        let p = self.process(pid);
        let o = Observation::ReleaseHandled {
            from: p,
            token,
            released: true,
        };
        self.emit(at, &o);
    }

    /// Feeds one event of the file of process `own` (`None` for a lab's or
    /// a downstream's file).
    pub(super) fn line(
        &mut self,
        at: SimTime,
        own: Option<usize>,
        event: &Event,
        origin: &Origin<'_>,
    ) {
        match event {
            Event::ProcessStarted => {
                if let Some(pid) = own {
                    self.ensure_alive(at, pid);
                }
            }
            Event::ProcessStopped => {
                if let Some(pid) = own {
                    self.end(at, pid, true);
                }
            }
            Event::ProcessKilled { owner } => match self.by_owner(owner) {
                Some(pid) => self.end(at, pid, false),
                None => self.problem(
                    origin,
                    true,
                    format!("process-killed names {owner}, whose history is not given"),
                ),
            },
            Event::MemberJoined { node } => self.member(at, node, true),
            Event::MemberLeft { node } => self.member(at, node, false),
            Event::WriteHandled {
                writer,
                token,
                unit,
                outcome,
                highest,
                bound_to,
                // Used by the merge (`order`), before the feed sees it.
                decision: _,
            } => {
                let Some(pid) = self.by_owner(writer) else {
                    let detail =
                        format!("write-handled names writer {writer}, whose history is not given");
                    self.problem(origin, true, detail);
                    return;
                };
                let outcome = match outcome {
                    WriteVerdict::Accepted => WriteOutcome::Accepted,
                    WriteVerdict::RejectedStale => WriteOutcome::RejectedStale {
                        stale: *token,
                        highest: highest.unwrap_or(*token),
                    },
                    WriteVerdict::RejectedWrongWriter => WriteOutcome::RejectedWrongWriter {
                        token: *token,
                        bound_to: bound_to.clone().unwrap_or_else(|| writer.clone()),
                    },
                };
                let unit = self.judged_unit(pid, token.get(), *unit);
                let from = self.process(pid);
                self.emit(
                    at,
                    &Observation::WriteHandled {
                        from,
                        token: *token,
                        unit,
                        outcome: &outcome,
                    },
                );
            }
            Event::Fault { host, label, start } => self.fault(at, host, label, *start, origin),
            _ => match own {
                Some(pid) => {
                    if self.ensure_alive(at, pid) {
                        self.own_event(at, pid, event, origin);
                    }
                }
                None => self.problem(
                    origin,
                    true,
                    "a process's own event in a file that is not a node's".to_string(),
                ),
            },
        }
    }

    /// An event of a live process about itself.
    fn own_event(&mut self, at: SimTime, pid: usize, event: &Event, origin: &Origin<'_>) {
        let p = self.process(pid);
        match event {
            Event::RequestSent { request, local_ns } => {
                self.sent(pid, *request, at);
                let o = Observation::RequestSent {
                    process: p,
                    request: *request,
                    local: Instant::from_nanos(*local_ns),
                };
                self.emit(at, &o);
            }
            Event::LeaseHandled {
                request,
                answer,
                token,
                expires_at_ns,
                store_now_ns,
                holder,
            } => {
                self.states[pid].outstanding.remove(request);
                // Before any inference: what the answer reveals is judged on
                // the store's clock as this answer reads it.
                self.learn_store_clock(at, *store_now_ns);
                if *answer == LeaseAnswer::Renewed {
                    self.infer_unanswered_grant(at, pid, *token, *expires_at_ns, origin);
                    let answer = (*expires_at_ns, *store_now_ns);
                    self.infer_unanswered_renewal(at, pid, *token, answer, origin);
                }
                if matches!(answer, LeaseAnswer::Granted | LeaseAnswer::Renewed) {
                    let state = &mut self.states[pid];
                    state.known_token = Some(*token);
                    state.unanswered = 0;
                    state.first_unanswered_sent = None;
                }
                self.lease(
                    at,
                    p,
                    *request,
                    *answer,
                    *token,
                    *expires_at_ns,
                    *store_now_ns,
                    holder,
                )
            }
            Event::LeaseFailed {
                request,
                rejected,
                error,
            } => {
                if *rejected {
                    let o = Observation::LeaseRejected {
                        from: p,
                        request: *request,
                        error,
                    };
                    self.emit(at, &o);
                }
                let sent = self.states[pid].outstanding.remove(request);
                if !*rejected {
                    self.unanswered(pid, sent);
                }
                let o = Observation::RequestFailed {
                    process: p,
                    request: *request,
                };
                self.emit(at, &o);
            }
            Event::ResponseHandled {
                request,
                disposition,
                acquired,
                renewal,
            } => self.emit(
                at,
                &Observation::ResponseHandled {
                    process: p,
                    request: *request,
                    disposition: (*disposition).into(),
                    acquired: *acquired,
                    renewal: *renewal,
                },
            ),
            Event::TermStarted { token } => {
                if let Some(open) = self.states[pid].term {
                    let detail = format!(
                        "term {token} started while term {open} had not ended (a lost line?): ended it here"
                    );
                    self.problem(origin, false, detail);
                    self.term_end(at, pid, open, &StepDownReason::NewTerm { token: *token });
                }
                self.states[pid].term = Some(*token);
                self.emit(
                    at,
                    &Observation::TermStarted {
                        process: p,
                        token: *token,
                    },
                );
            }
            Event::TermEnded {
                token,
                reason,
                by,
                by_token,
            } => {
                let Some(open) = self.states[pid].term else {
                    let detail = format!("term {token} ended, but no term had started: ignored");
                    self.problem(origin, false, detail);
                    return;
                };
                let reason = match reason {
                    EndReason::LocalDeadline => StepDownReason::LocalDeadline,
                    EndReason::Superseded => StepDownReason::Superseded {
                        holder: by.clone().unwrap_or_else(|| self.idents[pid].owner.clone()),
                        token: by_token.unwrap_or(*token),
                    },
                    EndReason::NewTerm => StepDownReason::NewTerm {
                        token: by_token.unwrap_or(*token),
                    },
                    EndReason::Stopped => StepDownReason::Stopped,
                    EndReason::Abdicated => StepDownReason::Abdicated,
                };
                self.term_end(at, pid, open, &reason);
            }
            // Judged with its answer, or (unanswered) by `unanswered_release`.
            Event::ReleaseSent { .. } => {}
            Event::ReleaseHandled {
                token, released, ..
            } => self.emit(
                at,
                &Observation::ReleaseHandled {
                    from: p,
                    token: *token,
                    released: *released,
                },
            ),
            Event::HeartbeatHandled { joined, .. } => self.emit(
                at,
                &Observation::HeartbeatHandled {
                    from: p,
                    joined: *joined,
                },
            ),
            Event::WorkStarted {
                token,
                unit,
                local_ns,
            } => {
                self.states[pid].in_progress.insert((token.get(), *unit));
                let o = Observation::WorkStarted {
                    process: p,
                    token: *token,
                    unit: *unit,
                    local: Instant::from_nanos(*local_ns),
                };
                self.emit(at, &o);
            }
            Event::WriteSent { token, unit } => {
                let state = &mut self.states[pid];
                state.in_progress.remove(&(token.get(), *unit));
                state.sent.entry(token.get()).or_default().push_back(*unit);
                let o = Observation::WriteSent {
                    process: p,
                    token: *token,
                    unit: *unit,
                };
                self.emit(at, &o);
            }
            Event::WorkCancelled { token, unit } => {
                self.states[pid].in_progress.remove(&(token.get(), *unit));
                let o = Observation::WorkCancelled {
                    process: p,
                    token: *token,
                    unit: *unit,
                };
                self.emit(at, &o);
            }
            // Handled by `line` before it gets here.
            Event::ProcessStarted
            | Event::ProcessStopped
            | Event::ProcessKilled { .. }
            | Event::MemberJoined { .. }
            | Event::MemberLeft { .. }
            | Event::WriteHandled { .. }
            | Event::Fault { .. } => {}
        }
    }

    fn term_end(&mut self, at: SimTime, pid: usize, token: FencingToken, reason: &StepDownReason) {
        self.states[pid].term = None;
        let p = self.process(pid);
        let o = Observation::TermEnded {
            process: p,
            token,
            reason,
            why: None,
            // A real timer fires late by the scheduler's whim: the
            // step-down's time is measured, not judged.
            local: None,
        };
        self.emit(at, &o);
    }

    /// The store's answer, judged on the store's own clock (which the
    /// caller has learned from it, [`Feed::learn_store_clock`]); the
    /// timeline draws the lease on the report's time.
    #[allow(clippy::too_many_arguments)]
    fn lease(
        &mut self,
        at: SimTime,
        p: ProcessRef<'_>,
        request: u64,
        answer: LeaseAnswer,
        token: FencingToken,
        expires_at_ns: u64,
        store_now_ns: Option<u64>,
        holder: &Option<OwnerId>,
    ) {
        let expires_at = Instant::from_nanos(expires_at_ns);
        let result = match answer {
            LeaseAnswer::Granted => LeaseResult::Granted { token, expires_at },
            LeaseAnswer::Renewed => LeaseResult::Renewed { token, expires_at },
            LeaseAnswer::Held => LeaseResult::Held {
                holder: Lease {
                    owner: holder.clone().unwrap_or_else(|| p.owner.clone()),
                    token,
                    expires_at,
                },
            },
        };
        let o = Observation::LeaseHandled {
            from: p,
            request,
            result: &result,
        };
        self.checker.observe(at, &o);
        if let Some(timeline) = &mut self.timeline {
            // On the report's time: what was left of the lease when the
            // store decided, from the answer's arrival.
            let left = match store_now_ns {
                Some(now) => expires_at_ns.saturating_sub(now),
                None => self.lease_ttl_ns,
            };
            let expires = Instant::from_nanos(at.as_nanos().saturating_add(left));
            let drawn = match result {
                LeaseResult::Granted { token, .. } => LeaseResult::Granted {
                    token,
                    expires_at: expires,
                },
                LeaseResult::Renewed { token, .. } => LeaseResult::Renewed {
                    token,
                    expires_at: expires,
                },
                held => held,
            };
            let o = Observation::LeaseHandled {
                from: p,
                request,
                result: &drawn,
            };
            timeline.observe(at, &o);
        }
    }

    /// A registry's report of `node` joining or leaving; reports that change
    /// nothing (several processes reporting one change) are dropped.
    fn member(&mut self, at: SimTime, node: &NodeId, joined: bool) {
        let Ok(index) = self.nodes.binary_search(node) else {
            return;
        };
        let index = index as u32;
        let changed = if joined {
            self.members.insert(index)
        } else {
            self.members.remove(&index)
        };
        if !changed {
            return;
        }
        let node = NodeRef {
            index,
            id: &self.nodes[index as usize],
        };
        let o = if joined {
            Observation::MemberJoined(node)
        } else {
            Observation::MemberLeft(node)
        };
        self.emit(at, &o);
        if let Some(timeline) = &mut self.timeline {
            timeline.observe(at, &Observation::LiveMembers(self.members.len() as u64));
        }
    }

    /// The unit a judged write belongs to: the one named, or the writer's
    /// oldest unit sent with `token` and not yet judged (0 if none).
    fn judged_unit(&mut self, pid: usize, token: u64, unit: Option<u64>) -> u64 {
        let queue = self.states[pid].sent.entry(token).or_default();
        match unit {
            Some(unit) => {
                if let Some(i) = queue.iter().position(|&u| u == unit) {
                    queue.remove(i);
                }
                unit
            }
            None => queue.pop_front().unwrap_or(0),
        }
    }

    /// A lab's fault: `pause` of a process (or every process of a node) is
    /// a pause; anything else disturbs the host's links.
    fn fault(&mut self, at: SimTime, host: &str, label: &str, start: bool, origin: &Origin<'_>) {
        let mut hosts: Vec<HostRef<'a>> = Vec::new();
        let mut pids = Vec::new();
        if host == crate::scenario::LEASE_STORE {
            hosts.push(HostRef::LeaseStore);
        } else if host == crate::scenario::DOWNSTREAM {
            hosts.push(HostRef::Downstream);
        } else if let Some(pid) = OwnerId::new(host).ok().and_then(|o| self.by_owner(&o)) {
            pids.push(pid);
        } else if let Some(index) = self.nodes.iter().position(|n| n.as_str() == host) {
            let node = NodeRef {
                index: index as u32,
                id: &self.nodes[index],
            };
            if label == "pause" {
                pids.extend(
                    (0..self.idents.len())
                        .filter(|&p| self.idents[p].node_index == node.index)
                        .filter(|&p| self.states[p].life == Life::Alive),
                );
            } else {
                hosts.push(HostRef::Node(node));
            }
        } else {
            let detail = format!("fault names host {host:?}, not a process, node, lease-store or downstream of these histories");
            self.problem(origin, true, detail);
            return;
        }
        for pid in pids {
            let state = &mut self.states[pid];
            if label == "pause" {
                state.pause_depth = if start {
                    state.pause_depth + 1
                } else {
                    state.pause_depth.saturating_sub(1)
                };
            }
            hosts.push(HostRef::Process(self.process(pid)));
        }
        for &host_ref in &hosts {
            let o = match (label, host_ref) {
                ("pause", HostRef::Process(p)) => {
                    let depth = self.states[p.id.0 as usize].pause_depth;
                    if start {
                        Observation::Paused {
                            host: host_ref,
                            depth,
                        }
                    } else {
                        Observation::Resumed {
                            host: host_ref,
                            depth,
                            deferred: 0,
                        }
                    }
                }
                _ => Observation::Isolated {
                    host: host_ref,
                    start,
                },
            };
            self.emit(at, &o);
            if let Some(timeline) = &mut self.timeline {
                let name = host_ref.name();
                let key = format!("{name}\u{1f}{label}");
                if start {
                    timeline.fault_began(key, name, label, at.as_nanos());
                } else {
                    timeline.fault_ended(&key, at.as_nanos());
                }
            }
        }
    }

    /// Writes sent and never judged, and warnings for lines ignored after
    /// their process ended.
    pub(super) fn finish(&mut self, highest_granted: u64) -> UnjudgedWrites {
        let mut writes = Vec::new();
        for (pid, state) in self.states.iter().enumerate() {
            for (&token, units) in &state.sent {
                for &unit in units {
                    writes.push(UnjudgedWrite {
                        owner: self.idents[pid].owner.to_string(),
                        token,
                        unit,
                        state: "in-flight".to_string(),
                    });
                }
            }
        }
        for pid in 0..self.states.len() {
            let ignored = self.states[pid].ignored_after_end;
            if ignored > 0 {
                self.problems.push(HistoryProblem {
                    path: self.idents[pid].path.clone(),
                    line: 0,
                    severity: "warning".to_string(),
                    detail: format!("{ignored} lines after the process ended were ignored"),
                });
            }
        }
        writes.sort();
        let total = writes.len() as u64;
        let older_term = writes.iter().filter(|w| w.token < highest_granted).count() as u64;
        writes.truncate(MAX_UNJUDGED_LISTED);
        UnjudgedWrites {
            total,
            older_term,
            writes,
        }
    }

    /// Live members at the end.
    pub(super) fn live_members(&self) -> u64 {
        self.members.len() as u64
    }
}
