//! Shared set-up of the tokio driver's tests: a world of shared stores, nodes
//! running electors as tasks, and a backend with faults.
#![allow(dead_code, unused_imports)] // each test file uses its own subset of helpers and re-exports

pub use std::future::{pending, Future};
pub use std::io;
pub use std::pin::Pin;
pub use std::sync::atomic::{AtomicUsize, Ordering};
pub use std::sync::{Arc, Mutex};
pub use std::time::Duration;

pub use fenced::tokio::{
    BackendError, CancellationToken, Clock, ElectorOptions, HeartbeatError, HeartbeatTask,
    InProcessLeaseBackend, InProcessRegistry, Leadership, LeadershipHandle, LeaseBackend,
    LeaseLeaderElector, RegistryBackend, RunError, SharedFencedStore,
};
pub use fenced::{
    ConfigError, ElectorTimings, Fencing, FencingToken, Instant, Lease, LeaseResult, LeaseStore,
    MembershipChange, NodeId, NodeRegistry, OwnerId, Phase, ReleaseResult, ResourceId, Role,
    StepDownReason, WriteOutcome,
};
pub use tokio::task::JoinHandle;
pub use tokio::time::{sleep, timeout};

pub fn role() -> Role {
    Role::new("reports").expect("valid role")
}

pub fn owner(name: &str) -> OwnerId {
    OwnerId::new(name).expect("valid owner")
}

pub fn resource() -> ResourceId {
    ResourceId::new("daily-report").expect("valid resource")
}

pub fn token(n: u64) -> FencingToken {
    FencingToken::new(n).expect("non-zero token")
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn timings(
    lease_ttl: Duration,
    renew_interval: Duration,
    retry_interval: Duration,
) -> ElectorTimings {
    ElectorTimings {
        lease_ttl,
        renew_interval,
        retry_interval,
        ..ElectorTimings::default()
    }
}

/// TTL 3 s, renew every 1 s, retry every 200 ms; the safety margin is 300 ms.
pub fn short() -> ElectorTimings {
    timings(ms(3_000), ms(1_000), ms(200))
}

/// What a node's work did, and when (on the shared clock, in milliseconds).
#[derive(Clone, Debug, PartialEq)]
pub enum What {
    Started,
    Wrote(WriteOutcome),
    Cancelled,
    Exited,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub at_ms: u64,
    pub node: &'static str,
    pub token: u64,
    pub what: What,
}

pub type WorkFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One process: a clock, an in-process lease store and fenced store, and a log
/// of what every node's work did.
#[derive(Clone)]
pub struct World {
    pub clock: Clock,
    pub backend: InProcessLeaseBackend,
    pub store: SharedFencedStore<String>,
    pub log: Arc<Mutex<Vec<Record>>>,
    pub active: Arc<AtomicUsize>,
    pub max_active: Arc<AtomicUsize>,
}

impl World {
    pub fn new() -> World {
        let clock = Clock::new();
        World {
            clock,
            backend: InProcessLeaseBackend::new(LeaseStore::default(), clock),
            store: SharedFencedStore::new(Fencing::Enforced, clock),
            log: Arc::default(),
            active: Arc::default(),
            max_active: Arc::default(),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now().as_millis()
    }

    pub fn record(&self, node: &'static str, token: FencingToken, what: What) {
        let at_ms = self.now_ms();
        let mut log = self.log.lock().expect("log lock");
        log.push(Record {
            at_ms,
            node,
            token: token.get(),
            what,
        });
    }

    pub fn records(&self, node: &'static str) -> Vec<Record> {
        let log = self.log.lock().expect("log lock");
        log.iter().filter(|r| r.node == node).cloned().collect()
    }

    pub fn first(&self, node: &'static str, what: &What) -> Option<Record> {
        self.records(node).into_iter().find(|r| r.what == *what)
    }

    pub fn write(&self, node: &'static str, token: FencingToken) -> WriteOutcome {
        let payload = format!("{node} with token {token}");
        let outcome = self
            .store
            .write(&resource(), token, &owner(node), payload)
            .expect("the fenced store is usable");
        self.record(node, token, What::Wrote(outcome.clone()));
        outcome
    }

    /// An elector on the shared store whose work writes every `period`.
    pub fn writer_node(
        &self,
        name: &'static str,
        timings: ElectorTimings,
        period: Duration,
    ) -> Node {
        let work = self.writer(name, period);
        Node::spawn(self.backend.clone(), self.clock, name, timings, work)
    }

    /// `node-a` leading with token 1 and `node-b` following, both writers.
    pub async fn leader_and_follower(
        &self,
        timings: ElectorTimings,
        period: Duration,
    ) -> (Node, Node) {
        let a = self.writer_node("node-a", timings, period);
        a.leads().await;
        let b = self.writer_node("node-b", timings, period);
        (a, b)
    }

    /// `node-a` leading through a [`Faulty`] backend, with work that only
    /// waits for its cancellation; returned at 1.5 s, after its renewal sent
    /// at 1 s succeeded.
    pub async fn faulty_waiting_leader(&self) -> (Faulty, Node) {
        let backend = Faulty::new(self.backend.clone());
        let work = self.waiter("node-a");
        let a = Node::spawn(backend.clone(), self.clock, "node-a", short(), work);
        a.leads().await;
        sleep(ms(1_500)).await;
        (backend, a)
    }

    /// Work that only waits for its cancellation, and records when it came.
    pub fn waiter(
        &self,
        node: &'static str,
    ) -> impl FnMut(FencingToken, CancellationToken) -> WorkFuture + Send + 'static {
        let world = self.clone();
        move |token, cancel| {
            let world = world.clone();
            Box::pin(async move {
                cancel.cancelled().await;
                world.record(node, token, What::Cancelled);
            })
        }
    }

    /// Work that writes every `period` until cancelled, counting how many
    /// nodes run work at once.
    pub fn writer(
        &self,
        node: &'static str,
        period: Duration,
    ) -> impl FnMut(FencingToken, CancellationToken) -> WorkFuture + Send + 'static {
        let world = self.clone();
        move |token, cancel| {
            let world = world.clone();
            Box::pin(async move {
                let running = world.active.fetch_add(1, Ordering::SeqCst) + 1;
                world.max_active.fetch_max(running, Ordering::SeqCst);
                world.record(node, token, What::Started);
                loop {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => break,
                        () = sleep(period) => {}
                    }
                    world.write(node, token);
                }
                world.record(node, token, What::Cancelled);
                world.active.fetch_sub(1, Ordering::SeqCst);
                world.record(node, token, What::Exited);
            })
        }
    }
}

/// One elector running as a task.
pub struct Node {
    pub handle: LeadershipHandle,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), RunError>>,
}

impl Node {
    pub fn spawn<B, W, Fut>(
        backend: B,
        clock: Clock,
        name: &str,
        timings: ElectorTimings,
        work: W,
    ) -> Node
    where
        B: LeaseBackend,
        W: FnMut(FencingToken, CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let options = ElectorOptions::new(owner(name))
            .with_timings(timings)
            .with_clock(clock);
        let elector = LeaseLeaderElector::new(backend, options);
        let handle = elector.handle();
        let shutdown = CancellationToken::new();
        let run = elector.run(role(), work, shutdown.clone().cancelled_owned());
        Node {
            handle,
            shutdown,
            task: tokio::spawn(run),
        }
    }

    /// Waits until this node leads, and returns its state then.
    pub async fn leads(&self) -> Leadership {
        let mut handle = self.handle.clone();
        handle
            .wait_for(|state| state.token().is_some())
            .await
            .expect("the driver is running")
    }

    /// Fires the shutdown and waits for `run` to return.
    pub async fn stop(self) -> Result<(), RunError> {
        self.shutdown.cancel();
        self.task
            .await
            .expect("the run task neither panicked nor was aborted")
    }
}

/// What a [`Faulty`] backend does with the requests of its node.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Passes them to the shared store.
    Healthy,
    /// Never answers (a wedged socket; or the whole node stalled).
    Hang,
    /// Answers every lease request with "held by this lease".
    Usurped(Lease),
    /// Passes them on, but each answer takes this long (a slow database).
    Slow(Duration),
}

/// The shared in-process backend as seen by one node, with faults.
#[derive(Clone)]
pub struct Faulty {
    pub inner: InProcessLeaseBackend,
    pub fault: Arc<Mutex<Fault>>,
}

impl Faulty {
    pub fn new(inner: InProcessLeaseBackend) -> Faulty {
        Faulty {
            inner,
            fault: Arc::new(Mutex::new(Fault::Healthy)),
        }
    }

    pub fn set(&self, fault: Fault) {
        *self.fault.lock().expect("fault lock") = fault;
    }

    pub fn get(&self) -> Fault {
        self.fault.lock().expect("fault lock").clone()
    }
}

impl LeaseBackend for Faulty {
    async fn acquire_or_renew(
        &self,
        role: &Role,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<LeaseResult, BackendError> {
        match self.get() {
            Fault::Healthy => self.inner.acquire_or_renew(role, owner, ttl).await,
            Fault::Hang => pending().await,
            Fault::Usurped(holder) => Ok(LeaseResult::Held { holder }),
            Fault::Slow(delay) => {
                // The store decides at arrival; the answer comes back later.
                let answer = self.inner.acquire_or_renew(role, owner, ttl).await;
                sleep(delay).await;
                answer
            }
        }
    }

    async fn release(
        &self,
        role: &Role,
        owner: &OwnerId,
        token: FencingToken,
    ) -> Result<ReleaseResult, BackendError> {
        match self.get() {
            Fault::Hang => pending().await,
            _ => self.inner.release(role, owner, token).await,
        }
    }
}
