//! A stalled leader, replaced and fenced, on a real clock.
//!
//! Three electors (`node-a`, `node-b`, `node-c`) contend for one role over one
//! in-process lease store and write to one fenced store. Each node runs on its
//! own single-threaded tokio runtime, so blocking that thread stalls the whole
//! node — its elector included — like a GC pause or a frozen container.
//!
//! `node-a` leads first. In its second unit of work it stalls for 3 s, past
//! its 1.5 s lease. `node-b` takes the lease over with a higher token and
//! writes. When `node-a` resumes it still believes it leads for an instant
//! and writes with its old token: the fenced store rejects that write.
//!
//! ```text
//! cargo run --example stalled_leader --features tokio
//! ```

use std::error::Error;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use fenced::tokio::{
    CancellationToken, Clock, ElectorOptions, InProcessLeaseBackend, LeadershipHandle,
    LeaseLeaderElector, SharedFencedStore,
};
use fenced::{
    ElectorTimings, Fencing, FencingToken, LeaseStore, OwnerId, Phase, ResourceId, Role,
    WriteOutcome,
};

const LEASE_TTL: Duration = Duration::from_millis(1_500);
const RENEW_INTERVAL: Duration = Duration::from_millis(500);
const RETRY_INTERVAL: Duration = Duration::from_millis(250);
/// How long one unit of work takes before it writes.
const WORK_UNIT: Duration = Duration::from_millis(300);
/// How long `node-a` stalls, in its second unit of work.
const PAUSE: Duration = Duration::from_millis(3_000);
/// How long the whole example runs before shutting every node down.
const RUN_FOR: Duration = Duration::from_millis(6_000);

/// Prints one line of the timeline, stamped with the shared clock.
fn say(clock: Clock, who: &str, what: impl AsRef<str>) {
    let ms = clock.now().as_millis();
    println!(
        "{:>3}.{:03}s  {who:<7} {}",
        ms / 1_000,
        ms % 1_000,
        what.as_ref()
    );
}

/// What every node shares with the others.
#[derive(Clone)]
struct World {
    clock: Clock,
    backend: InProcessLeaseBackend,
    store: SharedFencedStore<String>,
    role: Role,
    resource: ResourceId,
    shutdown: CancellationToken,
    rejected: Arc<AtomicU64>,
}

/// One node: its name, when it starts, and whether it stalls.
struct Node {
    name: &'static str,
    start_after: Duration,
    stalls: bool,
}

fn main() -> Result<(), Box<dyn Error>> {
    let clock = Clock::new();
    let world = World {
        clock,
        backend: InProcessLeaseBackend::new(LeaseStore::default(), clock),
        store: SharedFencedStore::new(Fencing::Enforced, clock),
        role: Role::new("reports")?,
        resource: ResourceId::new("daily-report")?,
        shutdown: CancellationToken::new(),
        rejected: Arc::default(),
    };
    println!(
        "lease TTL {LEASE_TTL:?}, renew every {RENEW_INTERVAL:?}, retry every {RETRY_INTERVAL:?}; \
         node-a stalls {PAUSE:?} in its second unit of work\n"
    );

    let nodes = [
        Node {
            name: "node-a",
            start_after: Duration::ZERO,
            stalls: true,
        },
        Node {
            name: "node-b",
            start_after: Duration::from_millis(100),
            stalls: false,
        },
        Node {
            name: "node-c",
            start_after: Duration::from_millis(200),
            stalls: false,
        },
    ];
    let mut threads = Vec::new();
    for node in nodes {
        let world = world.clone();
        let thread = thread::Builder::new()
            .name(node.name.to_owned())
            .spawn(move || run_node(&world, &node))?;
        threads.push(thread);
    }

    thread::sleep(RUN_FOR);
    say(
        clock,
        "main",
        "shutdown: every node stops its work and releases",
    );
    world.shutdown.cancel();
    for thread in threads {
        match thread.join() {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err("a node thread panicked".into()),
        }
    }

    let accepted = world.store.accepted_count(&world.resource)?;
    let highest = world.store.highest_token(&world.resource)?;
    let value = world.store.value(&world.resource)?;
    println!(
        "\nfenced store: {accepted} writes accepted, {} rejected; highest token {}; last value {:?}",
        world.rejected.load(Ordering::SeqCst),
        highest.map_or_else(|| "none".to_owned(), |t| t.to_string()),
        value.unwrap_or_default(),
    );
    Ok(())
}

/// Runs one node on its own single-threaded runtime until shutdown.
fn run_node(world: &World, node: &Node) -> Result<(), Box<dyn Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(async {
        tokio::time::sleep(node.start_after).await;
        let owner = OwnerId::new(node.name)?;
        let timings = ElectorTimings {
            lease_ttl: LEASE_TTL,
            renew_interval: RENEW_INTERVAL,
            retry_interval: RETRY_INTERVAL,
            ..ElectorTimings::default()
        };
        let options = ElectorOptions::new(owner.clone())
            .with_timings(timings)
            .with_clock(world.clock);
        let elector = LeaseLeaderElector::new(world.backend.clone(), options);
        let watcher = tokio::spawn(narrate(node.name, elector.handle(), world.clock));
        say(world.clock, node.name, "starts contending");
        let work = work(world.clone(), node.name, owner, node.stalls);
        elector
            .run(
                world.role.clone(),
                work,
                world.shutdown.clone().cancelled_owned(),
            )
            .await?;
        watcher.abort();
        say(world.clock, node.name, "stopped");
        Ok(())
    })
}

/// The singleton work: every unit takes `WORK_UNIT`, then writes with the
/// token. A stalling node blocks its thread in its second unit.
fn work(
    world: World,
    name: &'static str,
    owner: OwnerId,
    stalls: bool,
) -> impl FnMut(
    FencingToken,
    CancellationToken,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    let stalled_once = Arc::new(AtomicBool::new(!stalls));
    move |token, cancel| {
        let (world, owner, stalled_once) =
            (world.clone(), owner.clone(), Arc::clone(&stalled_once));
        Box::pin(async move {
            say(
                world.clock,
                name,
                format!("starts its work with token {token}"),
            );
            for unit in 1.. {
                if unit == 2 && !stalled_once.swap(true, Ordering::SeqCst) {
                    say(
                        world.clock,
                        name,
                        format!("STALLS for {PAUSE:?}: the whole node is blocked (a GC pause)"),
                    );
                    // Deliberately blocking: this node's only thread stops, so
                    // its elector can neither renew nor notice its deadline.
                    thread::sleep(PAUSE);
                    say(
                        world.clock,
                        name,
                        "resumes, unaware that its lease is gone, and writes",
                    );
                } else {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep(WORK_UNIT) => {}
                    }
                }
                let payload = format!("report #{unit} by {name}");
                match world.store.write(&world.resource, token, &owner, payload) {
                    Ok(WriteOutcome::Accepted) => {
                        say(
                            world.clock,
                            name,
                            format!("write #{unit} with token {token}: accepted"),
                        );
                    }
                    Ok(WriteOutcome::RejectedStale { stale, highest }) => {
                        world.rejected.fetch_add(1, Ordering::SeqCst);
                        say(world.clock, name, format!(
                            "write #{unit} with token {stale}: REJECTED, the store has accepted token {highest}"
                        ));
                    }
                    Ok(other) => say(world.clock, name, format!("write #{unit}: {other:?}")),
                    Err(error) => {
                        say(world.clock, name, format!("write failed: {error}"));
                        break;
                    }
                }
            }
            say(world.clock, name, format!("stops its work (token {token})"));
        })
    }
}

/// Prints this node's leadership changes: terms, step-downs with their
/// reason, and the leader it observes.
async fn narrate(name: &'static str, handle: LeadershipHandle, clock: Clock) {
    let mut changes = handle.subscribe();
    let (mut step_down, mut view) = (None, None);
    loop {
        let state = changes.borrow_and_update().clone();
        if state.last_step_down() != step_down.as_ref() {
            if let Some((token, reason)) = state.last_step_down() {
                say(clock, name, format!("steps down (token {token}): {reason}"));
            }
            step_down = state.last_step_down().cloned();
        }
        let observed = state
            .observed_leader()
            .map(|leader| (leader.owner.clone(), leader.token));
        let now = Some((state.phase(), observed));
        if now.as_ref().map(|(_, o)| o) != view.as_ref().map(|(_, o)| o)
            || token_of(now.as_ref()) != token_of(view.as_ref())
        {
            match now.as_ref() {
                Some((Phase::Leader { token, .. }, _)) => {
                    say(clock, name, format!("LEADS with token {token}"));
                }
                Some((_, Some((leader, token)))) => {
                    say(clock, name, format!("follows {leader} (token {token})"));
                }
                // Stopped: the timeline says so in its own words.
                Some((Phase::Idle, _)) => {}
                // Only losing sight of a known leader is news.
                _ if view.as_ref().is_some_and(|(_, seen)| seen.is_some()) => {
                    say(clock, name, "knows no leader");
                }
                _ => {}
            }
        }
        view = now;
        if changes.changed().await.is_err() {
            break;
        }
    }
}

type View = (Phase, Option<(OwnerId, FencingToken)>);

fn token_of(view: Option<&View>) -> Option<FencingToken> {
    match view {
        Some((Phase::Leader { token, .. }, _)) => Some(*token),
        _ => None,
    }
}
