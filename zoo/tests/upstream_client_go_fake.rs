//! The fake clientset of client-go's leader-election tests, as a driver of one
//! client-go elector model: upstream's `fake.Clientset` with reactors
//! (`c.AddReactor(verb, "leases", reaction)`) becomes a closure that sees each
//! request the elector sends and says what the call returns.
//!
//! Shared by `upstream_client_go.rs` and `upstream_client_go_run.rs` (each
//! includes it with `#[path]`); compiled on its own it holds no tests.
#![allow(dead_code)]

use std::time::Duration;

use fenced_zoo::client_go::{
    ApiRequest, ApiResponse, ApiResult, ClientGo, ClientGoClient, ClientGoSettings, LeaseRecord,
};
use fenced_zoo::{ClientId, ClientOutput, Instant, LockClient, Protocol};

/// The client's clock when a test begins: far enough from the origin that
/// upstream's `past` (now − 1000 h) is still an instant.
pub const T0: Instant = Instant::from_secs(2_000 * 3_600);

/// Upstream's `future` and `past` distance from `now`.
pub const THOUSAND_HOURS: Duration = Duration::from_secs(1_000 * 3_600);

/// The time a call takes, request to answer. Upstream's elector reads the
/// real clock for `now` at the start of a try and again for `observedTime`
/// after the `Get` returns, so the second reading is always later; a zero
/// round trip would make them equal, which no real clock does.
pub const ROUND_TRIP: Duration = Duration::from_millis(1);

/// Upstream's `rl.LeaderElectionRecord{HolderIdentity: holder,
/// LeaseDurationSeconds: seconds}`: zero times and transitions.
pub fn record(holder: &str, lease_duration_seconds: u64) -> LeaseRecord {
    LeaseRecord {
        holder_identity: holder.to_owned(),
        lease_duration_seconds,
        acquire_time: Instant::ZERO,
        renew_time: Instant::ZERO,
        lease_transitions: 0,
    }
}

/// The fake API's side of a test: the stored object (upstream's `lockObj`),
/// the verbs called (`lockOps`), and the test's cancel switch.
#[derive(Debug, Default)]
pub struct Fake {
    /// `lockObj`: the object the reactors store, with its resourceVersion.
    pub lock_obj: Option<(LeaseRecord, u64)>,
    /// Every call, in order: "get", "create", "update".
    pub ops: Vec<&'static str>,
    /// Every request, in order.
    pub requests: Vec<ApiRequest>,
    /// Set by a reactor to cancel the run context (`cancelFunc()`).
    pub cancel: bool,
    /// Whether the driver has stopped the elector (its context is cancelled).
    pub stopped: bool,
    revision: u64,
}

impl Fake {
    /// `lockObj = action.GetObject(); return lockObj`: stores the written
    /// record and returns it.
    pub fn store(&mut self, record: &LeaseRecord) -> ApiResult {
        self.revision += 1;
        self.lock_obj = Some((record.clone(), self.revision));
        self.stored()
    }

    /// `lockObj` if set, else NotFound.
    pub fn stored(&self) -> ApiResult {
        match &self.lock_obj {
            Some((record, resource_version)) => ApiResult::Lease {
                record: record.clone(),
                resource_version: *resource_version,
            },
            None => ApiResult::NotFound,
        }
    }

    /// The stored record.
    pub fn stored_record(&self) -> Option<&LeaseRecord> {
        self.lock_obj.as_ref().map(|(record, _)| record)
    }
}

/// What a reactor does with a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The call returns this.
    Answer(ApiResult),
    /// The call blocks; the elector abandons it (its timeout or its context).
    Hang,
}

/// `(handled, ret, err)` of upstream's reactors.
pub type Reactor<'a> = dyn FnMut(&mut Fake, &ApiRequest) -> Reply + 'a;

/// The verb of a request, as upstream's fake names its actions.
pub fn verb(request: &ApiRequest) -> &'static str {
    match request {
        ApiRequest::Get { .. } => "get",
        ApiRequest::Create { .. } => "create",
        ApiRequest::Update { .. } => "update",
    }
}

/// The record a `Create` or `Update` writes.
pub fn written(request: &ApiRequest) -> Option<&LeaseRecord> {
    match request {
        ApiRequest::Get { .. } => None,
        ApiRequest::Create { record, .. } | ApiRequest::Update { record, .. } => Some(record),
    }
}

/// `return true, action.GetObject(), nil` for a write, the stored object
/// for a `Get`: a store that never refuses.
pub fn echo(fake: &mut Fake, request: &ApiRequest) -> Reply {
    Reply::Answer(match written(request) {
        Some(record) => fake.store(record),
        None => fake.stored(),
    })
}

/// What the elector told its application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Told {
    /// `OnStartedLeading`, with the token.
    Became(u64),
    /// `OnStoppedLeading`, with the model's reason.
    Lost(&'static str),
}

/// What the driver does when the elector becomes leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtLeader {
    /// Go on: `Run` continues into `renew`.
    Continue,
    /// Return at once, leaving the renew loop's first request unsent: the
    /// end of one `tryAcquireOrRenew`, as upstream's tests call it alone.
    Pause,
    /// Cancel the run context at once, before the renew loop's first request
    /// leaves (it is kept in `discarded`), as upstream's tests call
    /// `release` right after one successful `tryAcquireOrRenew`.
    Stop,
}

/// One elector, the fake API and a time line (the elector's clock).
pub struct Driver {
    pub client: ClientGoClient,
    pub fake: Fake,
    pub now: Instant,
    pub told: Vec<(Instant, Told)>,
    /// Requests the elector queued but the cancelled context never sent.
    pub discarded: Vec<ApiRequest>,
    pub at_leader: AtLeader,
}

impl Driver {
    /// An idle elector named `name` ("baz" in upstream's tests).
    pub fn new(settings: &ClientGoSettings, name: &str) -> Driver {
        Driver::with_client(ClientGo::new_client(settings, ClientId(1), name, 7))
    }

    /// A driver of `client` at [`T0`].
    pub fn with_client(client: ClientGoClient) -> Driver {
        Driver {
            client,
            fake: Fake::default(),
            now: T0,
            told: Vec::new(),
            discarded: Vec::new(),
            at_leader: AtLeader::Continue,
        }
    }

    /// `Run` (or its first try): starts the elector now.
    pub fn start(&mut self, reactor: &mut Reactor<'_>) {
        self.client.start(self.now);
        self.pump(reactor);
    }

    /// Hands every queued output on, answering requests through `reactor`,
    /// until the elector has nothing more to say (or it became leader and
    /// [`AtLeader::Pause`] is set). Returns whether it paused.
    pub fn pump(&mut self, reactor: &mut Reactor<'_>) -> bool {
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Send { request, .. } => self.call(reactor, request),
                ClientOutput::BecameLeader { token } => {
                    self.told
                        .push((self.now, Told::Became(token.expect("a Lease token"))));
                    match self.at_leader {
                        AtLeader::Continue => {}
                        AtLeader::Pause => return true,
                        AtLeader::Stop => {
                            while let Some(output) = self.client.poll_output() {
                                if let ClientOutput::Send { request, .. } = output {
                                    self.discarded.push(request);
                                }
                            }
                            self.stop();
                        }
                    }
                }
                ClientOutput::LostLeadership { reason } => {
                    self.told.push((self.now, Told::Lost(reason)));
                }
            }
        }
        false
    }

    fn call(&mut self, reactor: &mut Reactor<'_>, request: ApiRequest) {
        let id = match &request {
            ApiRequest::Get { id }
            | ApiRequest::Create { id, .. }
            | ApiRequest::Update { id, .. } => *id,
        };
        self.fake.ops.push(verb(&request));
        self.fake.requests.push(request.clone());
        let reply = reactor(&mut self.fake, &request);
        if let Reply::Answer(result) = reply {
            self.now = self.now + ROUND_TRIP;
            self.client
                .handle_response(0, ApiResponse { id, result }, self.now);
        }
        if self.fake.cancel && !self.fake.stopped {
            self.stop();
        }
    }

    /// Cancels the run context now.
    pub fn stop(&mut self) {
        self.fake.stopped = true;
        self.client.stop(self.now);
    }

    /// Wakes the elector at its next timer, if any comes by `end`; returns
    /// whether it did.
    pub fn wake(&mut self, reactor: &mut Reactor<'_>, end: Instant) -> bool {
        match self.client.next_timeout() {
            Some(at) if at <= end => {
                self.now = self.now.max(at);
                self.client.handle_timeout(self.now);
                self.pump(reactor);
                true
            }
            _ => false,
        }
    }

    /// Runs until the elector is idle (no timer left) or `limit` has passed.
    pub fn run(&mut self, reactor: &mut Reactor<'_>, limit: Duration) {
        let end = self.now + limit;
        while self.wake(reactor, end) {}
    }
}
