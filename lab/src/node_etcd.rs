//! The etcd node (`fenced-lab node --etcd`): leader election by etcd's
//! `client/v3/concurrency` `Session` + `Election` — the zoo's
//! `fenced_zoo::etcd` model, for real, against a real etcd.
//!
//! # The model's client, over the real server
//!
//! The node does not re-implement the election: it **drives the model's own
//! client** ([`EtcdClient`], sans-IO) on real time, and carries each
//! request it sends to the real etcd over its KV, lease and watch API
//! (`etcd-client`, one gRPC connection through the node's proxy, as
//! `clientv3.Client` holds one), feeding the server's answers back. So
//! every decision — when to grant, keep alive, campaign, wait, watch, give
//! up a request, end the session, lead — is the model's, one for one, and
//! what the real run tests is everything the model says about the server
//! and the network: revisions, lease expiry on the server's clock, watch
//! events, keep-alive answers, a stalled link, a paused or restarted
//! server. The model's client is in turn a port of upstream (its module
//! docs cite each line): `session.go` `NewSession` (grant, keep-alive,
//! `Done`), `lease.go` (`sendKeepAliveLoop`, `recvKeepAlive`,
//! `deadlineLoop`), `election.go` `Campaign`/`Resign` and `key.go`
//! `waitDeletes`.
//!
//! Why the KV/lease API rather than the server's election gRPC service
//! (`v3electionpb.Election/Campaign`, which runs `concurrency.Election` in
//! the server's own process): that service hides the session — its lease
//! is the caller's, but the keep-alive, the `Done` channel and the
//! campaign's waiting run inside etcd, so the client would learn nothing of
//! its session's end from its own machinery, which is exactly what the
//! model (and the story of a paused leader) is about; and what is compared
//! with the simulation is the model's client, so the real run must make
//! its decisions. The port is the same algorithm as `concurrency.Election`
//! (the server's service calls that very code, `server/etcdserver/api/
//! v3election/election.go`).
//!
//! # Each request, for real
//!
//! * `Grant { ttl }` → `LeaseGrant(TTL)`; the server may grant more than
//!   asked (its minimum, [`crate::design_etcd`]), which the node says.
//! * `KeepAlive { lease }` → one message on the lease's `LeaseKeepAlive`
//!   stream, opened on first use and again after it broke; each answer is
//!   the model's `KeepAlive { ttl }` (etcd answers TTL 0 for a lease it does
//!   not know: `server/etcdserver/api/v3rpc/lease.go`, `leaseKeepAlive`).
//! * `Campaign { lease }` → `Txn(If CreateRevision(prefix/lease) == 0 Then
//!   Put(prefix/lease, owner, lease) Else Get(prefix/lease))`, `leaderRev`
//!   from the header or the key (`election.go` `Campaign`); the server's
//!   "requested lease not found" is the model's `ErrLeaseNotFound`.
//! * `LastCreatedBefore { max }` → `Get(prefix/, WithPrefix,
//!   WithLastCreate, WithMaxCreateRev(max))` (`key.go` `waitDeletes`).
//! * `Watch { key, start }` → `Watch(key, WithRev(start))` until a DELETE
//!   event (`key.go` `waitDelete`).
//! * `Resign` → `Txn(If CreateRevision(key) == rev Then Delete(key))`;
//!   `Revoke` → `LeaseRevoke`.
//!
//! A request that fails (the connection reset, the server down) gives the
//! model nothing, as a lost message does in the simulation: the model's
//! own `request_timeout` re-sends it. Each request is given up at that
//! timeout here too, since the model ignores a later answer.
//!
//! # Terms and the token
//!
//! The token is the leader key's create revision, numbered as the
//! simulator numbers a design's own token (`sim/src/zoo/process.rs`,
//! `fencing_token`: plus one), so a real term and its simulated twin carry
//! the same number. The downstream is the fenced table when the scenario
//! fences (it rejects a token below the highest it has seen) and the plain
//! table otherwise. A unit starts only while the model's client says it
//! leads at that instant (`EtcdClient::leadership`, which ends at the
//! `deadlineLoop`'s look after the keep-alive deadline, even before a timer
//! ran), as the simulator's worker checks it.
//!
//! Stop (SIGTERM): the model's `stop` (resign if leading, revoke), each
//! awaited for at most the stop bound, as the connection lock's unlock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, LeaseKeeper, PutOptions, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use fenced::history::Recorder;
use fenced::tokio::{CancellationToken, Clock};
use fenced::{FencingToken, OwnerId};
use fenced_zoo::etcd::{EtcdClient, EtcdRequest, EtcdResponse, EtcdSettings, LeaseId};
use fenced_zoo::{ClientId, LockClient};
use tokio::sync::{mpsc, watch};
use tokio::time::timeout;

use super::driver::{Carry, Driver, ModelClock};
use super::errors::{bad, infra, NodeError};
use super::{say, watch_signals, work_context, Believed, Downstream, NodeConfig};

/// The downstream token of the leader key's create revision `revision`.
fn token_of(revision: u64) -> Option<FencingToken> {
    FencingToken::new(revision.saturating_add(1))
}

/// The election key of `lease` under `prefix`: `prefix/<lease in hex>`, as
/// `election.go` names it (`fmt.Sprintf("%s%x", e.keyPrefix, s.Lease())`).
fn key_of(prefix: &str, lease: LeaseId) -> String {
    format!("{prefix}/{:x}", lease.0)
}

/// The lease whose key `key` is, under `prefix`.
fn lease_of(prefix: &str, key: &[u8]) -> Option<LeaseId> {
    let key = std::str::from_utf8(key).ok()?;
    let hex = key.strip_prefix(prefix)?.strip_prefix('/')?;
    u64::from_str_radix(hex, 16).ok().map(LeaseId)
}

/// What a unit's leadership check reads: the term, while the model's
/// client still says it leads.
pub(super) struct Belief {
    term: watch::Receiver<Option<FencingToken>>,
    client: Arc<Mutex<EtcdClient>>,
    clock: ModelClock,
}

impl Belief {
    pub(super) fn token(&self) -> Option<FencingToken> {
        let term = *self.term.borrow();
        let leads = self
            .client
            .lock()
            .is_ok_and(|client| client.leadership(self.clock.now()).is_some());
        term.filter(|_| leads)
    }
}

/// The real server's side of the model's requests.
#[derive(Clone)]
struct Io {
    client: Client,
    /// The election's prefix (without the trailing `/`).
    prefix: String,
    /// The value of this node's key (upstream: the candidate's value).
    value: String,
    owner: OwnerId,
    /// Every unary request is given up after this (the model's
    /// `request_timeout`: it ignores a later answer).
    request_timeout: Duration,
    answers: mpsc::UnboundedSender<EtcdResponse>,
    /// The open keep-alive stream's sender, and its lease.
    keeper: Arc<tokio::sync::Mutex<Option<(LeaseId, LeaseKeeper)>>>,
    /// Each lease's granted TTL, seconds: the answer to the keep-alive that
    /// opens its stream.
    granted: Arc<Mutex<BTreeMap<LeaseId, i64>>>,
}

impl Carry<EtcdRequest> for Io {
    fn carry(self, request: EtcdRequest) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.carry_now(request)
    }
}

impl Io {
    fn answer(&self, response: EtcdResponse) {
        let _ = self.answers.send(response);
    }

    /// Carries `request` to etcd; the answer, if any, goes to the driver.
    async fn carry_now(self, request: EtcdRequest) {
        let bound = self.request_timeout;
        match request {
            EtcdRequest::KeepAlive { lease } => self.keep_alive(lease).await,
            EtcdRequest::Grant { id, ttl_secs } => {
                let _ = timeout(bound, self.grant(id, ttl_secs)).await;
            }
            EtcdRequest::Campaign { id, lease } => {
                let _ = timeout(bound, self.campaign(id, lease)).await;
            }
            EtcdRequest::LastCreatedBefore {
                id,
                max_create_revision,
            } => {
                let _ = timeout(bound, self.last_created(id, max_create_revision)).await;
            }
            EtcdRequest::Watch {
                id,
                key,
                start_revision,
            } => {
                let _ = timeout(bound, self.watch(id, key, start_revision)).await;
            }
            EtcdRequest::Resign {
                key,
                create_revision,
            } => self.resign(key, create_revision).await,
            EtcdRequest::Revoke { lease } => {
                let _ = self.client.clone().lease_revoke(lease.0 as i64).await;
            }
        }
    }

    async fn grant(&self, id: u64, ttl_secs: u64) {
        let asked = i64::try_from(ttl_secs).unwrap_or(i64::MAX);
        let Ok(granted) = self.client.clone().lease_grant(asked, None).await else {
            return;
        };
        let Ok(raw) = u64::try_from(granted.id()) else {
            return;
        };
        let lease = LeaseId(raw);
        if granted.ttl() != asked {
            say(
                &self.owner,
                format_args!(
                    "etcd granted lease={raw:x} ttl={}s asked={asked}s",
                    granted.ttl()
                ),
            );
        }
        if let Ok(mut map) = self.granted.lock() {
            map.insert(lease, granted.ttl());
        }
        self.answer(EtcdResponse::Granted { id, lease });
    }

    /// One keep-alive: on the open stream, or opening one (which sends it
    /// and waits for its answer).
    async fn keep_alive(&self, lease: LeaseId) {
        let mut slot = self.keeper.lock().await;
        if let Some((open, keeper)) = slot.as_mut() {
            if *open == lease && keeper.keep_alive().await.is_ok() {
                return;
            }
        }
        *slot = None;
        let mut lease_client = self.client.lease_client();
        match lease_client.keep_alive(lease.0 as i64).await {
            Ok((keeper, mut stream)) => {
                *slot = Some((lease, keeper));
                drop(slot);
                let ttl = self
                    .granted
                    .lock()
                    .ok()
                    .and_then(|map| map.get(&lease).copied())
                    .unwrap_or(0);
                self.answer(EtcdResponse::KeepAlive {
                    lease,
                    ttl_secs: ttl,
                });
                let io = self.clone();
                tokio::spawn(async move {
                    while let Ok(Some(answer)) = stream.message().await {
                        io.answer(EtcdResponse::KeepAlive {
                            lease,
                            ttl_secs: answer.ttl(),
                        });
                    }
                    // The stream broke: the next keep-alive opens another.
                    let mut slot = io.keeper.lock().await;
                    if slot.as_ref().is_some_and(|(open, _)| *open == lease) {
                        *slot = None;
                    }
                });
            }
            // `etcd-client` reads the opening answer itself and calls a
            // TTL of 0 "lease not found": the model's TTL-0 answer.
            Err(etcd_client::Error::LeaseKeepAliveError(what)) if what.contains("not found") => {
                self.answer(EtcdResponse::KeepAlive { lease, ttl_secs: 0 });
            }
            Err(_) => {}
        }
    }

    async fn campaign(&self, id: u64, lease: LeaseId) {
        let key = key_of(&self.prefix, lease);
        let put = PutOptions::new().with_lease(lease.0 as i64);
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.clone(), self.value.clone(), Some(put))])
            .or_else([TxnOp::get(key, None)]);
        let create_revision = match self.client.clone().txn(txn).await {
            Ok(answer) if answer.succeeded() => answer.header().map(|h| h.revision()),
            Ok(answer) => answer.op_responses().into_iter().find_map(|op| match op {
                TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.create_revision()),
                _ => None,
            }),
            Err(etcd_client::Error::GRpcStatus(status))
                if status.message().contains("lease not found") =>
            {
                return self.answer(EtcdResponse::Campaigned {
                    id,
                    create_revision: None,
                });
            }
            Err(_) => return,
        };
        if let Some(revision) = create_revision.and_then(|r| u64::try_from(r).ok()) {
            self.answer(EtcdResponse::Campaigned {
                id,
                create_revision: Some(revision),
            });
        }
    }

    async fn last_created(&self, id: u64, max_create_revision: u64) {
        let options = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1)
            .with_max_create_revision(i64::try_from(max_create_revision).unwrap_or(i64::MAX));
        let prefix = format!("{}/", self.prefix);
        let Ok(answer) = self.client.clone().get(prefix, Some(options)).await else {
            return;
        };
        let Some(revision) = answer
            .header()
            .and_then(|h| u64::try_from(h.revision()).ok())
        else {
            return;
        };
        let key = match answer.kvs().first() {
            None => None,
            Some(kv) => match (
                lease_of(&self.prefix, kv.key()),
                u64::try_from(kv.create_revision()),
            ) {
                (Some(lease), Ok(created)) => Some((lease, created)),
                // Not an election key: no answer the model can read.
                _ => return,
            },
        };
        self.answer(EtcdResponse::LastCreated { id, key, revision });
    }

    async fn watch(&self, id: u64, key: LeaseId, start_revision: u64) {
        let options =
            WatchOptions::new().with_start_revision(i64::try_from(start_revision).unwrap_or(0));
        let name = key_of(&self.prefix, key);
        let Ok(mut stream) = self.client.clone().watch(name, Some(options)).await else {
            return;
        };
        while let Ok(Some(answer)) = stream.message().await {
            if answer
                .events()
                .iter()
                .any(|event| event.event_type() == EventType::Delete)
            {
                return self.answer(EtcdResponse::Deleted { id, key });
            }
            if answer.canceled() {
                return;
            }
        }
    }

    async fn resign(&self, key: LeaseId, create_revision: u64) {
        let name = key_of(&self.prefix, key);
        let revision = i64::try_from(create_revision).unwrap_or(i64::MAX);
        let txn = Txn::new()
            .when([Compare::create_revision(
                name.clone(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::delete(name, None)]);
        let _ = self.client.clone().txn(txn).await;
    }
}

/// Runs an etcd node until SIGTERM: no elector and no heartbeats (the
/// design has neither), the same work and history as a fenced node's.
pub(super) async fn run_node(
    config: &NodeConfig,
    settings: EtcdSettings,
    owner: &OwnerId,
    recorder: &Recorder,
    downstream: Downstream,
) -> Result<(), NodeError> {
    if !config.lease_url.starts_with("http://") {
        return Err(bad(format!(
            "--etcd: --lease-url must be etcd's http:// endpoint, not {:?}",
            config.lease_url
        )));
    }
    let client = Client::connect([config.lease_url.as_str()], None)
        .await
        .map_err(|e| infra(format!("etcd at {}: {e}", config.lease_url)))?;
    let clock = ModelClock::starting_now();
    let request_timeout = settings.request_timeout;
    let model = Arc::new(Mutex::new(EtcdClient::new(
        settings,
        ClientId(config.incarnation),
    )));
    let (believed, watching) = watch::channel(None);
    let belief = Belief {
        term: watching,
        client: Arc::clone(&model),
        clock,
    };
    let context = work_context(
        config,
        owner,
        downstream,
        recorder,
        Clock::new(),
        Believed::Etcd(belief),
    )?;
    let (answers, receiver) = mpsc::unbounded_channel();
    let io = Io {
        client,
        prefix: crate::design_etcd::election_prefix(
            config.namespace.schema(),
            config.role.as_str(),
        ),
        value: owner.to_string(),
        owner: owner.clone(),
        request_timeout,
        answers,
        keeper: Arc::default(),
        granted: Arc::default(),
    };
    let shutdown = CancellationToken::new();
    let signals = watch_signals(shutdown.clone(), context.clone())?;
    say(owner, format_args!("start pid={}", std::process::id()));
    let driver: Driver<fenced_zoo::etcd::Etcd, Io> = Driver {
        design: "etcd",
        token_of,
        model,
        clock,
        io,
        answers: receiver,
        context: context.clone(),
        believed,
        stop_bound: config.write_interval + config.work_duration,
        term: None,
    };
    driver.run(shutdown).await;
    signals.abort();
    context.cancel_in_flight();
    recorder.process_stopped();
    say(owner, format_args!("exit"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_lease_in_hex_under_the_prefix_and_read_back() {
        // Proves the node names keys as election.go does and reads a
        // listed key back to its lease; a foreign key reads as none.
        let prefix = "/fenced-lab/s/reports";
        let key = key_of(prefix, LeaseId(0x694d_8a3e_11c2_0a04));
        assert_eq!(key, "/fenced-lab/s/reports/694d8a3e11c20a04");
        assert_eq!(
            lease_of(prefix, key.as_bytes()),
            Some(LeaseId(0x694d_8a3e_11c2_0a04))
        );
        assert_eq!(lease_of(prefix, b"/fenced-lab/s/other/1"), None);
        assert_eq!(lease_of(prefix, b"/fenced-lab/s/reports/zz"), None);
    }

    #[test]
    fn the_token_is_the_create_revision_plus_one_as_the_simulators() {
        // Proves a real term and its simulated twin carry the same number.
        assert_eq!(token_of(2).map(FencingToken::get), Some(3));
        assert_eq!(token_of(u64::MAX).map(FencingToken::get), Some(u64::MAX));
    }

    fn etcd_node(ttl: &str, retry: &str) -> Result<NodeConfig, NodeError> {
        crate::node::test_node_config(
            "2",
            "http://127.0.0.1:1",
            true,
            &[
                "--etcd",
                "--etcd-session-ttl",
                ttl,
                "--etcd-first-keepalive-timeout",
                "500ms",
                "--etcd-keepalive-retry",
                retry,
                "--etcd-request-timeout",
                "500ms",
                "--etcd-restart-delay",
                "100ms",
            ],
        )
    }

    #[test]
    fn the_etcd_flags_read_back_as_the_same_config_and_bad_ones_are_refused() {
        // Proves what the runner writes for an etcd node is what the node
        // reads, and that the model's own checks name the setting.
        let config = etcd_node("6", "50ms").expect("valid");
        let settings = config.etcd.clone().expect("an etcd node");
        assert_eq!(settings.session_ttl_secs, 6);
        assert_eq!(settings.keepalive_retry, Duration::from_millis(50));
        assert_eq!(crate::node::reparsed(&config).expect("valid"), config);
        let error = etcd_node("0", "50ms").expect_err("a zero TTL");
        assert!(error.to_string().contains("session_ttl_secs"), "{error}");
        let error = etcd_node("6", "0s").expect_err("a zero retry");
        assert!(error.to_string().contains("keepalive_retry"), "{error}");
    }
}
