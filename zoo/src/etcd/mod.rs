//! etcd leader election: `client/v3/concurrency` `Session` + `Election`.
//!
//! # What it mirrors
//!
//! etcd-io/etcd at c34dc7e:
//!
//! * `client/v3/concurrency/session.go` `NewSession`: `Grant(ttl)` (default
//!   `defaultSessionTTL` = 60 s), then `KeepAlive`; the session is `Done`
//!   when the keep-alive channel closes. `Close` = `Orphan` + `Revoke`.
//! * `client/v3/lease.go` (`lessor`): `KeepAlive` starts with
//!   `nextKeepAlive = now` and `deadline = now + firstKeepAliveTimeout`
//!   (`DialTimeout + 1 s`; with the default DialTimeout 0 that is 1 s, which
//!   `NewLeaseFromLeaseClient` replaces by `defaultTTL` = 5 s);
//!   `sendKeepAliveLoop` sends whenever `nextKeepAlive` has passed, checking
//!   every `retryConnWait` = 500 ms — so an unanswered keep-alive is re-sent
//!   every 500 ms; `recvKeepAlive`: `TTL <= 0` closes the channel (lease
//!   gone), otherwise `nextKeepAlive = now + TTL/3`, `deadline = now + TTL`;
//!   `deadlineLoop` closes the channel once `deadline` passes. The client
//!   learns its session expired **only** through this machinery.
//! * `client/v3/concurrency/election.go` `Campaign`: a txn `If
//!   CreateRevision(prefix/leaseID) == 0 Then Put(key, val, lease) Else
//!   Get(key)`; `leaderRev` = the txn's header revision or the existing key's
//!   create revision; then `waitDeletes(prefix, leaderRev - 1)`. `Resign`:
//!   txn `If CreateRevision(key) == leaderRev Then Delete(key)`.
//! * `client/v3/concurrency/key.go` `waitDeletes`: `Get(prefix,
//!   WithLastCreate, WithMaxCreateRev(rev))`; if a key is returned, `Watch`
//!   it from the response's header revision until a DELETE event; repeat.
//! * The server: a global revision, keys with create/mod revisions, leases
//!   with TTLs expiring on **the server's clock** (revoking a lease deletes
//!   its keys in one revision), watch events pushed to watchers, and on a
//!   (durable) restart the lessor's `Promote`, which resets every lease's
//!   expiry to `now + TTL`. A keep-alive for an unknown lease answers TTL 0.
//!
//! The leader key's create revision is the token
//! ([`Leadership::token`](crate::Leadership)).
//!
//! # The application loop and timeouts (the model's own, documented choices)
//!
//! `Campaign(ctx)` blocks with the caller's context; the model gives each
//! unary request (`Grant`, the txns, `Get`) a [`EtcdSettings::request_timeout`]
//! of 5 s (etcdctl's `--command-timeout` default) and on a timeout calls
//! `Campaign` again (idempotent: the key is per lease). A gRPC watch stream
//! rides on TCP and is re-established after a broken connection; the model
//! re-sends `Watch` (same start revision, so a missed DELETE is replayed)
//! every `request_timeout` while it waits. The application campaigns with its
//! **session's context** (`e.Campaign(s.Ctx(), val)`; `Session.Ctx` "is
//! canceled when the lease is orphaned, expires, or is otherwise no longer
//! being refreshed"), so the session's end cancels a campaign in progress:
//! upstream's `Campaign` then resigns its key if it was waiting in
//! `waitDeletes` (`e.Resign(client.Ctx())`) and returns the context's error.
//! When the session ends — or `Campaign` returns `ErrLeaseNotFound` (the
//! session's lease is gone; upstream returns the error to the caller rather
//! than trying again) — the model makes a new session after
//! [`EtcdSettings::restart_delay`] (1 s, counted from the session's end) and
//! campaigns again.
//!
//! # Left out
//!
//! Raft (the cluster is one linearizable server: a single-member cluster.
//! There the revoke loop's proposal — `lessor.go` `runLoop` →
//! `revokeExpiredLeases` hands expired leases to the server, which proposes
//! `LeaseRevoke` through Raft and applies it on commit — commits by a local
//! WAL append, microseconds against the loop's 500 ms look the model does
//! keep, so no reported outcome moves; a multi-member cluster's commit round,
//! leader changes and members' pauses are not modelled), compaction
//! (`ErrCompacted`), `Proclaim`/`Observe`/`Leader`, gRPC keepalive, the
//! minimum-TTL rule of the server. (`deadlineLoop`'s one-second looks are
//! in: a session is `Done` at the first look after its deadline.)
//!
//! A campaign that **outlives its session** is left out: `Campaign` takes the
//! caller's context, not the session's, so an application that passes
//! `context.Background()` (as etcdctl's `elect` does) keeps waiting in
//! `waitDeletes` after its session's lease died — the lease's expiry
//! deleted its own key `prefix/<lease>` — and once every older key is gone,
//! `Campaign` returns `nil` though the candidate's key no longer exists and a
//! younger candidate may already lead (`election.go` `Campaign`, `key.go`
//! `waitDeletes`: neither looks at the session). Upstream's own
//! `TestElectionWithAuthEnabled` campaigns on already orphaned sessions this
//! way. The model's application is the one that avoids the pitfall, and for
//! it the model is exact, not simplified: with `ctx = s.Ctx()`, every
//! `Get`/`Watch` of `waitDeletes` after the session's end fails with
//! `context.Canceled`, so `Campaign` can return `nil` only on an answer
//! that arrived before the end — the model takes an answer only while its
//! request is current and drops the request at the end, the same cut. What
//! upstream does on that cancellation the model does at the same instant:
//! the `Resign` txn if `Campaign` was past its txn (sent fire and forget; it
//! deletes the key only if the lease still holds it — after a TTL-0 answer the
//! lease and so the key are already gone, after a local deadline the server
//! may still hold them), nothing if the txn itself was in flight (its key, if
//! it was written, lives until the lease expires, as upstream's), and no
//! `BecameLeader`. So no outcome the simulator reports (who believes it
//! leads, when, with which token; which key the server holds) differs from
//! upstream's for this application. Modelling the other application would
//! add a believer whose token's key is gone; the
//! `campaign_cancelled_by_its_session_*` tests in `tests/upstream_etcd.rs`
//! show where it would.
//!
//! # Known failure mode
//!
//! The leader learns its lease expired only when a keep-alive says so or its
//! local deadline passes; a leader paused past its TTL keeps acting until it
//! wakes, while the next campaigner already leads — with a higher create
//! revision, so a fencing downstream can tell them apart.

mod client;
mod server;

use std::time::Duration;

pub use client::EtcdClient;
pub use server::{EtcdServer, LeaseTimeToLive};

use crate::util::nonzero;
use crate::{Boundaries, ClientId, ClockKind, Protocol, ServerIndex, SettingsError};

/// The etcd election protocol.
#[derive(Clone, Copy, Debug)]
pub enum Etcd {}

/// A lease id (`clientv3.LeaseID`); the election key is `prefix/<id in hex>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaseId(pub u64);

/// Settings; `Default` = etcd's defaults plus the model's timeouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdSettings {
    /// The session lease's TTL, whole seconds (`defaultSessionTTL` = 60).
    pub session_ttl_secs: u64,
    /// How long the first keep-alive may take (`defaultTTL` = 5 s).
    pub first_keepalive_timeout: Duration,
    /// Re-send period of an unanswered keep-alive (`retryConnWait` = 500 ms).
    pub keepalive_retry: Duration,
    /// Unary request timeout and watch re-send period (model: 5 s).
    pub request_timeout: Duration,
    /// Before a new session after the last one ended (model: 1 s).
    pub restart_delay: Duration,
}

impl Default for EtcdSettings {
    fn default() -> Self {
        EtcdSettings {
            session_ttl_secs: 60,
            first_keepalive_timeout: Duration::from_secs(5),
            keepalive_retry: Duration::from_millis(500),
            request_timeout: Duration::from_secs(5),
            restart_delay: Duration::from_secs(1),
        }
    }
}

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdRequest {
    /// `LeaseGrant`.
    Grant {
        /// Matches the answer.
        id: u64,
        /// TTL in seconds.
        ttl_secs: u64,
    },
    /// One message on the `LeaseKeepAlive` stream.
    KeepAlive {
        /// The lease.
        lease: LeaseId,
    },
    /// `Campaign`'s txn: create `prefix/lease` with the lease if absent.
    Campaign {
        /// Matches the answer.
        id: u64,
        /// The session's lease (also the key).
        lease: LeaseId,
    },
    /// `Get(prefix, WithLastCreate, WithMaxCreateRev(max_create_revision))`.
    LastCreatedBefore {
        /// Matches the answer.
        id: u64,
        /// The bound, inclusive.
        max_create_revision: u64,
    },
    /// `Watch(key, WithRev(start_revision))`, waiting for its DELETE.
    Watch {
        /// Matches the event.
        id: u64,
        /// The key (`prefix/lease`).
        key: LeaseId,
        /// Replay events from here.
        start_revision: u64,
    },
    /// `Resign`: delete `key` if its create revision is `create_revision`.
    Resign {
        /// The key.
        key: LeaseId,
        /// The precondition.
        create_revision: u64,
    },
    /// `LeaseRevoke` (`Session.Close`).
    Revoke {
        /// The lease.
        lease: LeaseId,
    },
}

/// The server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtcdResponse {
    /// The lease was granted.
    Granted {
        /// The request.
        id: u64,
        /// The new lease.
        lease: LeaseId,
    },
    /// A keep-alive answer: `ttl_secs <= 0` means the lease is gone.
    KeepAlive {
        /// The lease.
        lease: LeaseId,
        /// Its TTL, or 0.
        ttl_secs: i64,
    },
    /// The campaign txn's result.
    Campaigned {
        /// The request.
        id: u64,
        /// `leaderRev`: the new key's or the existing key's create revision;
        /// `None` if the lease was not found (`ErrLeaseNotFound`).
        create_revision: Option<u64>,
    },
    /// The `Get`'s result.
    LastCreated {
        /// The request.
        id: u64,
        /// The last-created key at or below the bound and its create revision.
        key: Option<(LeaseId, u64)>,
        /// The response header's revision.
        revision: u64,
    },
    /// A watch event: `key` was deleted.
    Deleted {
        /// The watch.
        id: u64,
        /// The key.
        key: LeaseId,
    },
}

impl Protocol for Etcd {
    const NAME: &'static str = "etcd";
    type Settings = EtcdSettings;
    type Request = EtcdRequest;
    type Response = EtcdResponse;
    type Client = EtcdClient;
    type Server = EtcdServer;
    const HAS_TOKEN: bool = true;
    /// The client's keep-alive and session `Done` run on Go timers and
    /// `time.Now()` deadlines compared by `Before`/`Sub` — monotonic readings
    /// (`client/v3/lease.go`, `sendKeepAliveLoop` and `deadlineLoop`).
    const CLIENT_CLOCK: ClockKind = ClockKind::Monotonic;
    /// The lessor expires leases by `time.Now()` expiries compared with
    /// `time.Until`/`Before` — monotonic (`server/lease/lessor.go`,
    /// `Lease.refresh`, `Lease.Remaining`).
    const SERVER_CLOCK: ClockKind = ClockKind::Monotonic;

    fn validate(settings: &EtcdSettings) -> Result<(), SettingsError> {
        if settings.session_ttl_secs == 0 {
            // WithTTL(<= 0) keeps the default; the model rejects it instead.
            return Err(SettingsError::Zero {
                setting: "session_ttl_secs",
            });
        }
        nonzero("first_keepalive_timeout", settings.first_keepalive_timeout)?;
        nonzero("keepalive_retry", settings.keepalive_retry)?;
        nonzero("request_timeout", settings.request_timeout)?;
        nonzero("restart_delay", settings.restart_delay)?;
        Ok(())
    }

    fn servers(_settings: &EtcdSettings) -> u16 {
        1
    }

    /// The server expires a lease `ttl` after the grant or keep-alive that
    /// set it (`server.rs`: `expires_at: now + ttl_secs`). Lengths: the TTL
    /// (the client's own session deadline too, `client.rs`: `deadline = now
    /// + ttl`) and the keep-alive period, a third of it (`client.rs`:
    /// `next_keepalive = now + ttl / 3`, clientv3's `nextKeepAlive`).
    fn boundaries(settings: &EtcdSettings) -> Boundaries {
        let ttl = Duration::from_secs(settings.session_ttl_secs);
        Boundaries {
            expiries: vec![ttl],
            expiry_tick: None,
            lengths: vec![ttl, ttl / 3],
        }
    }

    fn new_server(_settings: &EtcdSettings, _index: ServerIndex) -> EtcdServer {
        EtcdServer::new()
    }

    fn new_client(settings: &EtcdSettings, id: ClientId, _name: &str, _seed: u64) -> EtcdClient {
        EtcdClient::new(settings.clone(), id)
    }
}
