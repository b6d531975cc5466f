//! Shared set-up of the elector's tests (`elector_behaviour.rs`,
//! `elector_handover.rs`, `elector_edges.rs`): ids, instants, answers, an
//! elector leading from zero, and a tiny deterministic harness standing in
//! for the network — every elector and the store share one clock, a lease
//! request reaches the store the instant it is sent, and its answer comes
//! back after the node's chosen latency (or is lost, inside a chosen window
//! of send times). Time jumps to the earliest pending event; nothing ticks
//! and nothing sleeps.
#![allow(dead_code, unused_imports)] // each test file uses its own subset

pub use std::time::Duration;

pub use fenced::{
    Elector, ElectorConfig, ElectorOutput, ElectorTimings, FencingToken, Instant, Jitter, Lease,
    LeaseResult, LeaseStore, ObservedLeader, OwnerId, Phase, RequestId, ResponseDisposition, Role,
    StepDownReason,
};

pub const ROLE: &str = "reports";

pub fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

pub fn ms(m: u64) -> Instant {
    Instant::from_millis(m)
}

pub fn token(n: u64) -> FencingToken {
    FencingToken::new(n).unwrap()
}

pub fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).unwrap()
}

pub fn config(name: &str, timings: ElectorTimings) -> ElectorConfig {
    ElectorConfig::new(owner(name), Role::new(ROLE).unwrap(), timings).unwrap()
}

/// An elector with the default timings: TTL 30 s, renew 10 s, retry 2 s,
/// margin 3 s (so 27 s of validity per success), rejoin delay 34 s.
pub fn elector(name: &str) -> Elector {
    Elector::new(config(name, ElectorTimings::default()))
}

pub fn drain(elector: &mut Elector) -> Vec<ElectorOutput> {
    std::iter::from_fn(|| elector.poll_output()).collect()
}

/// The id of the single `SendLeaseRequest` in `outputs`.
pub fn sent_id(outputs: &[ElectorOutput]) -> RequestId {
    let ids: Vec<RequestId> = outputs
        .iter()
        .filter_map(|o| match o {
            ElectorOutput::SendLeaseRequest { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 1, "expected one request in {outputs:?}");
    ids[0]
}

/// The ids of every `SendLeaseRequest` among `e`'s pending outputs, which
/// are drained.
pub fn sent_ids(e: &mut Elector) -> Vec<RequestId> {
    drain(e)
        .into_iter()
        .filter_map(|o| match o {
            ElectorOutput::SendLeaseRequest { id, .. } => Some(id),
            _ => None,
        })
        .collect()
}

pub fn granted(n: u64, expires_at: Instant) -> LeaseResult {
    LeaseResult::Granted {
        token: token(n),
        expires_at,
    }
}

pub fn renewed(n: u64, expires_at: Instant) -> LeaseResult {
    LeaseResult::Renewed {
        token: token(n),
        expires_at,
    }
}

/// A started elector that leads with token 1, anchored at `Instant::ZERO`
/// (valid until 27 s, next renewal at 10 s), its outputs drained.
pub fn leader_at_zero(name: &str) -> Elector {
    let mut e = elector(name);
    e.start(secs(0));
    let id = sent_id(&drain(&mut e));
    assert_eq!(
        e.handle_response(id, granted(1, secs(30)), ms(1)),
        ResponseDisposition::Applied
    );
    drain(&mut e);
    assert_eq!(e.token_at(ms(1)), Some(token(1)));
    e
}

pub mod harness {
    use super::*;

    /// One node: its elector, what it emitted and when, and its network.
    pub struct Node {
        pub elector: Elector,
        pub owner: OwnerId,
        pub log: Vec<(Instant, ElectorOutput)>,
        /// One-way delay of every answer from the store to this node.
        pub latency: Duration,
        /// Answers to requests sent inside any `[from, until)` window are lost.
        pub lose_responses: Vec<(Instant, Instant)>,
        pub dispositions: Vec<(Instant, RequestId, ResponseDisposition)>,
    }

    impl Node {
        /// Send times of every lease request.
        pub fn sends(&self) -> Vec<Instant> {
            self.log
                .iter()
                .filter(|(_, o)| matches!(o, ElectorOutput::SendLeaseRequest { .. }))
                .map(|(at, _)| *at)
                .collect()
        }

        /// Terms as `(token, start, end)`, `end` being `None` for a term still open.
        pub fn terms(&self) -> Vec<(FencingToken, Instant, Option<Instant>)> {
            let mut terms: Vec<(FencingToken, Instant, Option<Instant>)> = Vec::new();
            for (at, output) in &self.log {
                match output {
                    ElectorOutput::StartWork { token } => {
                        assert!(
                            terms.last().is_none_or(|t| t.2.is_some()),
                            "StartWork({token}) at {at} while a term is open"
                        );
                        terms.push((*token, *at, None));
                    }
                    ElectorOutput::StopWork { token, .. } => {
                        let open = terms.last_mut().expect("StopWork without StartWork");
                        assert_eq!(open.0, *token, "StopWork for another term's token");
                        assert!(open.2.is_none(), "StopWork({token}) twice");
                        open.2 = Some(*at);
                    }
                    _ => {}
                }
            }
            terms
        }

        /// Every output, in order, from `from` on (inclusive).
        pub fn outputs_from(&self, from: Instant) -> Vec<(Instant, ElectorOutput)> {
            self.log
                .iter()
                .filter(|(at, _)| *at >= from)
                .cloned()
                .collect()
        }
    }

    struct Pending {
        at: Instant,
        seq: u64,
        node: usize,
        id: RequestId,
        result: LeaseResult,
    }

    /// Electors and one lease store on one clock.
    pub struct Harness {
        pub now: Instant,
        pub store: LeaseStore,
        pub role: Role,
        pub nodes: Vec<Node>,
        pending: Vec<Pending>,
        seq: u64,
    }

    impl Harness {
        pub fn new() -> Self {
            Harness {
                now: Instant::ZERO,
                store: LeaseStore::default(),
                role: Role::new(ROLE).unwrap(),
                nodes: Vec::new(),
                pending: Vec::new(),
                seq: 0,
            }
        }

        /// Adds a node (not started yet) and returns its index.
        pub fn add(&mut self, name: &str, timings: ElectorTimings, latency: Duration) -> usize {
            self.nodes.push(Node {
                elector: Elector::new(config(name, timings)),
                owner: owner(name),
                log: Vec::new(),
                latency,
                lose_responses: Vec::new(),
                dispositions: Vec::new(),
            });
            self.nodes.len() - 1
        }

        pub fn start(&mut self, node: usize) {
            let now = self.now;
            self.nodes[node].elector.start(now);
            self.drain(node);
        }

        pub fn stop(&mut self, node: usize) {
            let now = self.now;
            self.nodes[node].elector.stop(now);
            self.drain(node);
        }

        fn next_event(&self) -> Option<Instant> {
            let timers = self.nodes.iter().filter_map(|n| n.elector.next_timeout());
            let answers = self.pending.iter().map(|p| p.at);
            timers.chain(answers).min()
        }

        /// Runs every event up to and including `end`, then sets the clock to `end`.
        pub fn run_until(&mut self, end: Instant) {
            let mut steps = 0u32;
            while let Some(at) = self.next_event().filter(|at| *at <= end) {
                steps += 1;
                assert!(steps < 1_000_000, "the harness is not making progress");
                self.now = self.now.max(at);
                self.deliver_due();
                for node in 0..self.nodes.len() {
                    if self.nodes[node]
                        .elector
                        .next_timeout()
                        .is_some_and(|t| t <= self.now)
                    {
                        self.nodes[node].elector.handle_timeout(self.now);
                        self.drain(node);
                    }
                }
            }
            self.now = self.now.max(end);
        }

        fn deliver_due(&mut self) {
            loop {
                let due = self
                    .pending
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.at <= self.now)
                    .min_by_key(|(_, p)| (p.at, p.seq))
                    .map(|(i, _)| i);
                let Some(i) = due else { return };
                let p = self.pending.swap_remove(i);
                let now = self.now;
                let node = &mut self.nodes[p.node];
                let disposition = node.elector.handle_response(p.id, p.result, now);
                node.dispositions.push((now, p.id, disposition));
                self.drain(p.node);
            }
        }

        fn drain(&mut self, index: usize) {
            let now = self.now;
            while let Some(output) = self.nodes[index].elector.poll_output() {
                self.nodes[index].log.push((now, output.clone()));
                let node = &self.nodes[index];
                match output {
                    ElectorOutput::SendLeaseRequest { id, ttl } => {
                        let result = self
                            .store
                            .try_acquire_or_renew(&self.role, &node.owner, ttl, now)
                            .unwrap();
                        let lost = node
                            .lose_responses
                            .iter()
                            .any(|(from, until)| *from <= now && now < *until);
                        if !lost {
                            self.seq += 1;
                            self.pending.push(Pending {
                                at: now + node.latency,
                                seq: self.seq,
                                node: index,
                                id,
                                result,
                            });
                        }
                    }
                    ElectorOutput::Release { token } => {
                        let owner = node.owner.clone();
                        self.store.release(&self.role, &owner, token, now);
                    }
                    ElectorOutput::StartWork { .. }
                    | ElectorOutput::StopWork { .. }
                    | ElectorOutput::LeaderObserved { .. } => {}
                }
            }
        }
    }
}

pub use harness::Harness;

/// The harness's usual one-way latency.
pub const LATENCY: Duration = Duration::from_millis(1);
