//! Property tests of the elector: one to three electors sharing a store on
//! one clock, behind a network that delays, duplicates, reorders and loses
//! answers, with node pauses, stops and restarts; the safety of every
//! elector's terms is checked after every input. (The lease store's own
//! property test is `state_machine_properties.rs`.)

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fenced::{
    Elector, ElectorConfig, ElectorOutput, ElectorTimings, FencingToken, Instant, Jitter,
    LeaseResult, LeaseStore, OwnerId, Phase, RequestId, Role, StepDownReason,
};
use proptest::prelude::*;

fn ms(m: u64) -> Instant {
    Instant::from_millis(m)
}

/// What the network does to one message.
#[derive(Clone, Debug)]
struct Fate {
    lost: bool,
    /// For a lost request: the driver learns of the failure after `delay_ms`.
    reported: bool,
    delay_ms: u64,
    /// For an answer: a second copy arrives after this many ms.
    duplicate_ms: Option<u64>,
}

fn delay_ms() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0..30u64, 3 => 30..1_000u64, 1 => 1_000..4_000u64]
}

fn fate() -> impl Strategy<Value = Fate> {
    (
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.5),
        delay_ms(),
        prop::option::weighted(0.1, delay_ms()),
    )
        .prop_map(|(lost, reported, delay_ms, duplicate_ms)| Fate {
            lost,
            reported,
            delay_ms,
            duplicate_ms,
        })
}

#[derive(Clone, Debug)]
struct NodePlan {
    timings: ElectorTimings,
    start_ms: u64,
    /// Windows `[from, until)` (ms) in which the node handles nothing.
    pauses: Vec<(u64, u64)>,
    /// Stop at this time (ms), and optionally start again this much later.
    stop: Option<(u64, Option<u64>)>,
}

fn timings() -> impl Strategy<Value = ElectorTimings> {
    (
        2_000..6_000u64,
        prop::option::of(100..1_000u64),
        1..9u64,
        100..1_500u64,
        prop_oneof![Just(None), Just(Some(0u64)), (0..5_000u64).prop_map(Some)],
        prop::option::weighted(0.3, (0.0..0.9f64, any::<u64>())),
    )
        .prop_map(
            |(ttl_ms, margin_ms, renew_tenths, retry_ms, rejoin_ms, jitter)| {
                let lease_ttl = Duration::from_millis(ttl_ms);
                let safety_margin = margin_ms.map(Duration::from_millis);
                let validity = lease_ttl - safety_margin.unwrap_or(lease_ttl / 10);
                ElectorTimings {
                    lease_ttl,
                    // A tenth to nine tenths of the validity: always valid.
                    renew_interval: validity * renew_tenths as u32 / 10,
                    retry_interval: Duration::from_millis(retry_ms),
                    safety_margin,
                    rejoin_delay: rejoin_ms.map(Duration::from_millis),
                    release_on_deadline: true,
                    jitter: jitter.map(|(fraction, seed)| Jitter { fraction, seed }),
                }
            },
        )
}

fn node_plan() -> impl Strategy<Value = NodePlan> {
    (
        timings(),
        0..3_000u64,
        proptest::collection::vec((0..40_000u64, 1..8_000u64), 0..3),
        prop::option::weighted(0.3, (0..40_000u64, prop::option::of(0..5_000u64))),
    )
        .prop_map(|(timings, start_ms, pauses, stop)| NodePlan {
            timings,
            start_ms,
            pauses: pauses.into_iter().map(|(at, len)| (at, at + len)).collect(),
            stop,
        })
}

const HORIZON_MS: u64 = 40_000;

enum StoreMessage {
    Request { id: RequestId, ttl: Duration },
    Release { token: FencingToken },
}

enum Event {
    Start,
    Stop,
    ToStore(StoreMessage),
    Answer { id: RequestId, result: LeaseResult },
    Failed { id: RequestId },
}

/// One elector and what has been observed of it.
struct Node {
    elector: Elector,
    owner: OwnerId,
    pauses: Vec<(Instant, Instant)>,
    /// The open term, from its StartWork.
    open_term: Option<FencingToken>,
    /// Every token this node started work with.
    started: Vec<FencingToken>,
    /// Tokens whose release the network lost.
    lost_releases: BTreeSet<FencingToken>,
}

impl Node {
    /// The end of the pause covering `t`, if the node is paused at `t`.
    fn resumes_at(&self, t: Instant) -> Option<Instant> {
        let mut end = None;
        let mut at = t;
        // Overlapping or adjacent pauses chain.
        while let Some(&(_, until)) = self
            .pauses
            .iter()
            .find(|(from, until)| *from <= at && at < *until)
        {
            end = Some(until);
            at = until;
        }
        end
    }
}

struct Simulation {
    now: Instant,
    store: LeaseStore,
    role: Role,
    nodes: Vec<Node>,
    /// Pending events: `(node, event)`.
    queue: BTreeMap<(Instant, u64), (usize, Event)>,
    seq: u64,
    fates: Vec<Fate>,
    next_fate: usize,
    /// Tokens granted by the store, in grant order.
    grants: Vec<FencingToken>,
    /// Tokens started by any node, with the node.
    started_by: BTreeMap<FencingToken, usize>,
    terms_started: usize,
}

impl Simulation {
    fn new(plans: &[NodePlan], fates: Vec<Fate>) -> Self {
        let role = Role::new("reports").unwrap();
        let mut sim = Simulation {
            now: Instant::ZERO,
            store: LeaseStore::default(),
            role: role.clone(),
            nodes: Vec::new(),
            queue: BTreeMap::new(),
            seq: 0,
            fates,
            next_fate: 0,
            grants: Vec::new(),
            started_by: BTreeMap::new(),
            terms_started: 0,
        };
        for (i, plan) in plans.iter().enumerate() {
            let owner = OwnerId::new(format!("node-{i}")).unwrap();
            let config = ElectorConfig::new(owner.clone(), role.clone(), plan.timings).unwrap();
            sim.nodes.push(Node {
                elector: Elector::new(config),
                owner,
                pauses: plan
                    .pauses
                    .iter()
                    .map(|&(from, until)| (ms(from), ms(until)))
                    .collect(),
                open_term: None,
                started: Vec::new(),
                lost_releases: BTreeSet::new(),
            });
            sim.schedule(ms(plan.start_ms), i, Event::Start);
            if let Some((stop_ms, restart)) = plan.stop {
                sim.schedule(ms(stop_ms), i, Event::Stop);
                if let Some(after_ms) = restart {
                    sim.schedule(ms(stop_ms + after_ms), i, Event::Start);
                }
            }
        }
        sim
    }

    fn schedule(&mut self, at: Instant, node: usize, event: Event) {
        self.seq += 1;
        self.queue.insert((at, self.seq), (node, event));
    }

    fn fate(&mut self) -> Fate {
        let fate = self.fates[self.next_fate % self.fates.len()].clone();
        self.next_fate += 1;
        fate
    }

    /// The earliest timer, as `(when it is handled, node)`: a timer due while
    /// its node is paused fires when the pause ends.
    fn next_timer(&self) -> Option<(Instant, usize)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| {
                let due = n.elector.next_timeout()?;
                Some((n.resumes_at(due).unwrap_or(due), i))
            })
            .min_by_key(|&(at, i)| (at, i))
    }

    fn run(&mut self) -> Result<(), TestCaseError> {
        let horizon = ms(HORIZON_MS);
        for _ in 0..1_000_000 {
            let head = self.queue.first_key_value().map(|(&(at, _), _)| at);
            let timer = self.next_timer();
            let event_first = match (head, timer) {
                (None, None) => return Ok(()),
                (Some(h), Some((t, _))) => h <= t,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            let at = if event_first {
                head.unwrap()
            } else {
                timer.unwrap().0
            };
            if at > horizon {
                return Ok(());
            }
            prop_assert!(at >= self.now, "the simulation clock never runs backwards");
            self.now = at;
            if event_first {
                let (_, (node, event)) = self.queue.pop_first().unwrap();
                self.handle_event(node, event)?;
            } else {
                let (_, node) = timer.unwrap();
                self.input(node, |e, now| e.handle_timeout(now))?;
            }
            self.check_exclusive()?;
        }
        Err(TestCaseError::fail(
            "the simulation did not reach its horizon",
        ))
    }

    fn handle_event(&mut self, node: usize, event: Event) -> Result<(), TestCaseError> {
        let now = self.now;
        if let Event::ToStore(message) = event {
            // The store is never paused.
            return self.deliver_to_store(node, message);
        }
        if let Some(resume) = self.nodes[node].resumes_at(now) {
            // A paused node handles nothing: keep the event, in order, for its resumption.
            self.schedule(resume, node, event);
            return Ok(());
        }
        match event {
            Event::Start => self.input(node, |e, now| e.start(now)),
            Event::Stop => self.input(node, |e, now| e.stop(now)),
            Event::Answer { id, result } => self.input(node, |e, now| {
                e.handle_response(id, result, now);
            }),
            Event::Failed { id } => self.input(node, |e, now| e.handle_request_failed(id, now)),
            Event::ToStore(_) => unreachable!("handled above"),
        }
    }

    fn deliver_to_store(
        &mut self,
        node: usize,
        message: StoreMessage,
    ) -> Result<(), TestCaseError> {
        let now = self.now;
        let owner = self.nodes[node].owner.clone();
        match message {
            StoreMessage::Release { token } => {
                self.store.release(&self.role, &owner, token, now);
            }
            StoreMessage::Request { id, ttl } => {
                let result = self
                    .store
                    .try_acquire_or_renew(&self.role, &owner, ttl, now)
                    .unwrap();
                if let LeaseResult::Granted { token, .. } = result {
                    prop_assert!(
                        self.grants.last().is_none_or(|&last| token > last),
                        "grants carry strictly increasing tokens"
                    );
                    self.grants.push(token);
                }
                let fate = self.fate();
                if fate.lost {
                    return Ok(());
                }
                if let Some(duplicate_ms) = fate.duplicate_ms {
                    let answer = Event::Answer {
                        id,
                        result: result.clone(),
                    };
                    self.schedule(now + Duration::from_millis(duplicate_ms), node, answer);
                }
                let at = now + Duration::from_millis(fate.delay_ms);
                self.schedule(at, node, Event::Answer { id, result });
            }
        }
        Ok(())
    }

    /// Sends `message` from `node` to the store; messages may reorder.
    fn send_to_store(&mut self, node: usize, message: StoreMessage) {
        let fate = self.fate();
        let delay = Duration::from_millis(fate.delay_ms);
        if fate.lost {
            match message {
                StoreMessage::Request { id, .. } if fate.reported => {
                    self.schedule(self.now + delay, node, Event::Failed { id });
                }
                StoreMessage::Request { .. } => {}
                StoreMessage::Release { token } => {
                    self.nodes[node].lost_releases.insert(token);
                }
            }
            return;
        }
        // Requests and releases may overtake each other: the elector must
        // never lead on a term whose release is still on its way.
        self.schedule(self.now + delay, node, Event::ToStore(message));
    }

    /// Feeds one input to `node` and checks the elector before and after it.
    fn input(
        &mut self,
        node: usize,
        input: impl FnOnce(&mut Elector, Instant),
    ) -> Result<(), TestCaseError> {
        let now = self.now;
        let phase_before = self.nodes[node].elector.phase();
        if let Phase::Leader { valid_until, .. } = phase_before {
            if now >= valid_until {
                prop_assert_eq!(
                    self.nodes[node].elector.token_at(now),
                    None,
                    "a term past its local deadline is not acted on, even before the input"
                );
            }
        }
        input(&mut self.nodes[node].elector, now);

        let mut outputs = Vec::new();
        while let Some(output) = self.nodes[node].elector.poll_output() {
            outputs.push(output);
        }
        for (i, output) in outputs.iter().enumerate() {
            self.check_output(node, phase_before, &outputs[i + 1..], output)?;
            match output {
                ElectorOutput::SendLeaseRequest { id, ttl } => {
                    self.send_to_store(node, StoreMessage::Request { id: *id, ttl: *ttl })
                }
                ElectorOutput::Release { token } => {
                    self.send_to_store(node, StoreMessage::Release { token: *token })
                }
                _ => {}
            }
        }
        self.check_after_input(node)
    }

    fn check_output(
        &mut self,
        node: usize,
        phase_before: Phase,
        rest: &[ElectorOutput],
        output: &ElectorOutput,
    ) -> Result<(), TestCaseError> {
        let now = self.now;
        let n = &mut self.nodes[node];
        match output {
            ElectorOutput::StartWork { token } => {
                prop_assert_eq!(n.open_term, None, "StartWork while a term is open");
                // A node's terms carry strictly increasing tokens: even when the
                // release of its last term was lost (or overtaken) and the store
                // answers `Renewed` with that token, the elector does not lead
                // on a term it has released.
                prop_assert!(
                    n.started.last().is_none_or(|last| token > last),
                    "a node's terms carry increasing tokens: {} after {:?}",
                    token,
                    n.started
                );
                let earlier = self.started_by.insert(*token, node);
                prop_assert!(
                    earlier.is_none_or(|earlier| earlier == node),
                    "token {} started by two nodes",
                    token
                );
                n.open_term = Some(*token);
                n.started.push(*token);
                self.terms_started += 1;
            }
            ElectorOutput::StopWork { token, reason } => {
                prop_assert_eq!(n.open_term, Some(*token), "StopWork without its StartWork");
                n.open_term = None;
                if matches!(
                    reason,
                    StepDownReason::LocalDeadline | StepDownReason::Stopped
                ) {
                    prop_assert_eq!(
                        rest.first(),
                        Some(&ElectorOutput::Release { token: *token }),
                        "a step-down of our own releases the lease right after StopWork"
                    );
                }
                if *reason == StepDownReason::LocalDeadline {
                    let Phase::Leader { valid_until, .. } = phase_before else {
                        return Err(TestCaseError::fail("a deadline step-down by a non-leader"));
                    };
                    // On time, or — when the deadline fell inside a pause — at
                    // the instant the pause ends, by whichever input comes
                    // first then (a deferred timer, or an answer due at that
                    // very instant).
                    let due = n.resumes_at(valid_until).unwrap_or(valid_until);
                    prop_assert_eq!(
                        now,
                        due,
                        "a leader steps down at its deadline {}, or at the end of the pause it fell in",
                        valid_until
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn check_after_input(&self, node: usize) -> Result<(), TestCaseError> {
        let now = self.now;
        let n = &self.nodes[node];
        prop_assert_eq!(
            n.elector.token(),
            n.open_term,
            "the phase matches the work started"
        );
        if let Phase::Leader {
            token, valid_until, ..
        } = n.elector.phase()
        {
            prop_assert!(
                valid_until > now,
                "a leader after an input is inside its validity ({} <= {})",
                valid_until,
                now
            );
            prop_assert_eq!(n.elector.token_at(now), Some(token));
            prop_assert!(
                n.elector.next_timeout().is_some_and(|t| t <= valid_until),
                "a leader is woken no later than its deadline"
            );
        }
        Ok(())
    }

    /// On one clock, two electors never both may act at the same instant.
    fn check_exclusive(&self) -> Result<(), TestCaseError> {
        let holders: Vec<(usize, FencingToken)> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.elector.token_at(self.now).map(|t| (i, t)))
            .collect();
        prop_assert!(
            holders.len() <= 1,
            "two live terms at {}: {:?}",
            self.now,
            holders
        );
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn electors_never_hold_two_live_terms_on_a_hostile_network(
        plans in proptest::collection::vec(node_plan(), 1..=3),
        fates in proptest::collection::vec(fate(), 1..64),
    ) {
        // Proves that under delayed, duplicated, reordered and lost answers, pauses, stops and restarts, each elector's StartWork/StopWork alternate with matching tokens, no term outlives its local deadline, and no two electors act at once.
        let mut sim = Simulation::new(&plans, fates);
        sim.run()?;
        // Every token any node started was granted by the store.
        let granted: BTreeSet<FencingToken> = sim.grants.iter().copied().collect();
        for token in sim.started_by.keys() {
            prop_assert!(granted.contains(token), "token {} was never granted", token);
        }
    }
}

#[test]
fn the_hostile_network_simulation_is_not_vacuous() {
    // Proves that the elector simulation above actually produces leaders and handovers on a benign network, so its checks have something to check.
    let plan = NodePlan {
        timings: ElectorTimings {
            lease_ttl: Duration::from_secs(3),
            renew_interval: Duration::from_secs(1),
            retry_interval: Duration::from_millis(200),
            ..ElectorTimings::default()
        },
        start_ms: 0,
        pauses: Vec::new(),
        stop: None,
    };
    let mut first = plan.clone();
    first.pauses.push((5_000, 10_000));
    let mut second = plan.clone();
    second.start_ms = 100;
    let fates = vec![Fate {
        lost: false,
        reported: false,
        delay_ms: 5,
        duplicate_ms: None,
    }];
    let mut sim = Simulation::new(&[first, second], fates);
    sim.run().unwrap();
    assert!(sim.terms_started >= 2, "{} terms", sim.terms_started);
    assert_eq!(sim.nodes[0].started.first().map(|t| t.get()), Some(1));
    assert!(
        !sim.nodes[1].started.is_empty(),
        "the second node took over"
    );
}
