//! The *fleet-election* workload (issue 3), simulated by `fenced-sim` and by a
//! minimal hand-written event loop measured in the same run as the baseline.
//!
//! Workload: N nodes contend for one role; lease 30 s, renew 10 s, retry 2 s;
//! heartbeats every 5 s; the leader writes every 1 s (50 ms units); latency
//! uniform 1–5 ms; each node pauses as a Poisson process (mean 10 min) for a
//! uniform 0–60 s; one virtual hour.
//!
//! The baseline is what the issue calls "a minimal hand-written event loop": a
//! `BinaryHeap` of (time, seq, event) and the store logic inline, no checker,
//! no trace hash, no sans-IO machines. `fenced-sim` should stay within 2× of it.
//!
//! Run: `cargo bench -p fenced-sim --bench fleet -- --noplot`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use fenced_sim::{RunOptions, Simulation};

const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn scenario_path(nodes: usize) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios");
    let file = if nodes == 5 {
        "fleet-election.toml".to_string()
    } else {
        format!("fleet-election-{nodes}.toml")
    };
    root.join(file).display().to_string()
}

/// The hand-written baseline. Returns the number of events it processed.
mod baseline {
    use super::*;

    #[derive(Clone, Copy)]
    enum Ev {
        Request {
            node: u32,
        },
        Answer {
            node: u32,
            granted: bool,
            token: u64,
            sent: u64,
        },
        NodeTimer {
            node: u32,
        },
        Heartbeat {
            node: u32,
        },
        HeartbeatArrives,
        WorkStart {
            node: u32,
            token: u64,
        },
        WorkDone {
            node: u32,
            token: u64,
        },
        Write {
            token: u64,
        },
        PauseStart {
            node: u32,
        },
        PauseEnd {
            node: u32,
        },
    }

    struct Node {
        leader_token: u64,
        valid_until: u64,
        next_request: u64,
        paused: bool,
        deferred: Vec<Ev>,
    }

    #[derive(Default)]
    struct Slab {
        items: Vec<Option<Ev>>,
        free: Vec<usize>,
    }

    impl Slab {
        fn insert(&mut self, e: Ev) -> usize {
            match self.free.pop() {
                Some(i) => {
                    self.items[i] = Some(e);
                    i
                }
                None => {
                    self.items.push(Some(e));
                    self.items.len() - 1
                }
            }
        }
        fn take(&mut self, i: usize) -> Ev {
            self.free.push(i);
            self.items[i].take().expect("each slot is taken once")
        }
    }

    pub fn run(nodes: usize, duration: u64, seed: u64) -> u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
        let mut slab = Slab::default();
        let mut seq = 0u64;
        let mut push = |heap: &mut BinaryHeap<_>, slab: &mut Slab, t: u64, e: Ev| {
            heap.push(Reverse((t, seq, slab.insert(e))));
            seq += 1;
        };
        let mut ns: Vec<Node> = (0..nodes)
            .map(|_| Node {
                leader_token: 0,
                valid_until: 0,
                next_request: 0,
                paused: false,
                deferred: Vec::new(),
            })
            .collect();
        let latency = |rng: &mut ChaCha8Rng| MS + rng.next_u64() % (4 * MS + 1);
        let exp = |rng: &mut ChaCha8Rng| {
            let u = 1.0 - (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            (-libm::log(u) * 600.0 * SEC as f64) as u64
        };
        for n in 0..nodes as u32 {
            push(&mut heap, &mut slab, 0, Ev::NodeTimer { node: n });
            push(&mut heap, &mut slab, 0, Ev::Heartbeat { node: n });
            let first = exp(&mut rng);
            push(&mut heap, &mut slab, first, Ev::PauseStart { node: n });
        }
        // The store, inline.
        let (mut holder, mut expires, mut highest) = (u32::MAX, 0u64, 0u64);
        let (mut accepted, mut accepted_token) = (0u64, 0u64);
        let mut events = 0u64;
        while let Some(Reverse((t, _, slot))) = heap.pop() {
            if t >= duration {
                break;
            }
            let ev = slab.take(slot);
            let target = match ev {
                Ev::Answer { node, .. }
                | Ev::NodeTimer { node }
                | Ev::Heartbeat { node }
                | Ev::WorkStart { node, .. }
                | Ev::WorkDone { node, .. } => Some(node),
                _ => None,
            };
            if let Some(node) = target {
                if ns[node as usize].paused {
                    ns[node as usize].deferred.push(ev);
                    continue;
                }
            }
            events += 1;
            {
                match ev {
                    Ev::NodeTimer { node } => {
                        let n = &mut ns[node as usize];
                        if n.leader_token != 0 && t >= n.valid_until {
                            n.leader_token = 0;
                        }
                        if t >= n.next_request {
                            n.next_request = t + 2 * SEC;
                            let l = latency(&mut rng);
                            push(&mut heap, &mut slab, t + l, Ev::Request { node });
                        }
                        let next = if n.leader_token != 0 {
                            n.next_request.min(n.valid_until)
                        } else {
                            n.next_request
                        };
                        push(&mut heap, &mut slab, next, Ev::NodeTimer { node });
                    }
                    Ev::Request { node } => {
                        let sent = t.saturating_sub(5 * MS);
                        let granted = if holder == node && t < expires {
                            expires = t + 30 * SEC;
                            true
                        } else if t >= expires {
                            holder = node;
                            expires = t + 30 * SEC;
                            highest += 1;
                            true
                        } else {
                            false
                        };
                        let l = latency(&mut rng);
                        push(
                            &mut heap,
                            &mut slab,
                            t + l,
                            Ev::Answer {
                                node,
                                granted,
                                token: highest,
                                sent,
                            },
                        );
                    }
                    Ev::Answer {
                        node,
                        granted,
                        token,
                        sent,
                    } => {
                        let n = &mut ns[node as usize];
                        if granted {
                            let was = n.leader_token;
                            n.leader_token = token;
                            n.valid_until = sent + 27 * SEC;
                            n.next_request = sent + 10 * SEC;
                            if was != token {
                                push(&mut heap, &mut slab, t, Ev::WorkStart { node, token });
                            }
                        } else {
                            n.leader_token = 0;
                        }
                    }
                    Ev::Heartbeat { node } => {
                        let l = latency(&mut rng);
                        push(&mut heap, &mut slab, t + l, Ev::HeartbeatArrives);
                        push(&mut heap, &mut slab, t + 5 * SEC, Ev::Heartbeat { node });
                    }
                    Ev::HeartbeatArrives => {}
                    Ev::WorkStart { node, token } => {
                        if ns[node as usize].leader_token == token {
                            push(
                                &mut heap,
                                &mut slab,
                                t + 50 * MS,
                                Ev::WorkDone { node, token },
                            );
                            push(&mut heap, &mut slab, t + SEC, Ev::WorkStart { node, token });
                        }
                    }
                    Ev::WorkDone { token, .. } => {
                        let l = latency(&mut rng);
                        push(&mut heap, &mut slab, t + l, Ev::Write { token });
                    }
                    Ev::Write { token } => {
                        if token >= accepted_token {
                            accepted_token = token;
                            accepted += 1;
                        }
                    }
                    Ev::PauseStart { node } => {
                        ns[node as usize].paused = true;
                        let d = rng.next_u64() % (60 * SEC + 1);
                        push(&mut heap, &mut slab, t + d, Ev::PauseEnd { node });
                        let gap = exp(&mut rng);
                        push(&mut heap, &mut slab, t + d + gap, Ev::PauseStart { node });
                    }
                    Ev::PauseEnd { node } => {
                        // Replay what queued during the pause, in order, now.
                        ns[node as usize].paused = false;
                        let deferred = std::mem::take(&mut ns[node as usize].deferred);
                        for e in deferred {
                            push(&mut heap, &mut slab, t, e);
                        }
                    }
                }
            }
        }
        std::hint::black_box(accepted);
        events
    }
}

fn fleet(c: &mut Criterion) {
    let mut group = c.benchmark_group("fleet-election-1h");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.sample_size(10);
    for nodes in [5usize, 50, 500] {
        let scenario =
            fenced_sim::file::load(Path::new(&scenario_path(nodes))).expect("shipped scenario");
        let mut probe = Simulation::from_scenario(&scenario, RunOptions::default()).expect("valid");
        probe.run_to_end();
        group.throughput(Throughput::Elements(probe.events()));
        group.bench_with_input(BenchmarkId::new("fenced-sim", nodes), &nodes, |b, _| {
            b.iter(|| {
                let mut sim =
                    Simulation::from_scenario(&scenario, RunOptions::default()).expect("valid");
                sim.run_to_end();
                sim.events()
            })
        });
        let baseline_events = baseline::run(nodes, 3600 * SEC, 1);
        group.throughput(Throughput::Elements(baseline_events));
        group.bench_with_input(
            BenchmarkId::new("hand-written-loop", nodes),
            &nodes,
            |b, &n| b.iter(|| baseline::run(n, 3600 * SEC, 1)),
        );
    }
    group.finish();
}

criterion_group!(benches, fleet);
criterion_main!(benches);
