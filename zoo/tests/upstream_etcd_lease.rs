//! etcd's own lease tests (`client/v3/lease.go` keep-alive and deadline
//! behaviour, the lessor's expiry and revocation), ported as contract tests
//! of the etcd model (etcd-io/etcd at c34dc7e). The session and election
//! tests are in `upstream_etcd.rs`.
//!
//! Upstream's `Put(key, WithLease(id))` is the model's only write with a
//! lease, the campaign txn (`Campaign { lease }` puts `prefix/<lease>`), so
//! "a key attached to the lease" is that key. A stopped cluster member is a
//! cut link; a bare `cli` is a caller that talks to the server directly.
//!
//! Cases the model cannot express:
//!
//! * `tests/integration/clientv3/lease/lease_test.go`, `TestLeaseGrant`, its
//!   first half (`Grant(MaxLeaseTTL + 1)` → `ErrLeaseTTLTooLarge`): the
//!   server's TTL bounds are left out (module docs). The second half is
//!   ported.
//! * `TestLeaseKeepAlive` (same file): two `KeepAlive` calls on one lease,
//!   each with its own context, and `lapi.Close()`: the model runs one
//!   keep-alive per session.
//! * `TestLeaseTimeToLive` (same file), its `WithAttachedKeys` part: one key
//!   per lease here, and `LeaseTimeToLive` does not list keys. The TTL part
//!   is ported.
//! * `TestLeaseKeepAliveHandleFailure`: skipped upstream (`t.Skip`).
//! * `TestLeaseGrantErrConnClosed`, `TestLeaseGrantNewAfterClose`,
//!   `TestLeaseRevokeNewAfterClose`, `TestLeaseKeepAliveLoopExit`: a closed
//!   `clientv3.Client` and its error values; the model has no client
//!   object apart from the session.
//! * `TestLeaseLeases`, `TestLeaseWithRequireLeader`, `TestV3LeaseFailureOverlap`
//!   and the `tests/integration/v3_lease_test.go` cases on checkpoints, lease
//!   ids given by the caller, leader changes, forwarding and stress: the
//!   cluster is one linearizable server with no Raft, members or leader.

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use common::{secs, Clock, Sim};
use fenced_zoo::etcd::{Etcd, EtcdRequest, EtcdResponse, EtcdServer, EtcdSettings, LeaseId};
use fenced_zoo::{ClientId, Instant, LockServer, Protocol, ServerOutput};

/// One etcd server driven directly, with its own clock: upstream's bare
/// gRPC `LeaseClient`/`KVClient` calls.
struct Store {
    server: EtcdServer,
    now: Instant,
    next_id: u64,
}

const CLI: ClientId = ClientId(900);

impl Store {
    fn new() -> Store {
        Store {
            server: Etcd::new_server(&EtcdSettings::default(), 0),
            now: Instant::from_secs(1),
            next_id: 0,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends `request` now; returns the answers to the caller.
    fn call(&mut self, request: EtcdRequest) -> Vec<EtcdResponse> {
        self.server.handle_request(CLI, request, self.now);
        self.drain()
    }

    fn drain(&mut self) -> Vec<EtcdResponse> {
        std::iter::from_fn(|| self.server.poll_output())
            .filter_map(|output| match output {
                ServerOutput::Reply { to, response } if to == CLI => Some(response),
                _ => None,
            })
            .collect()
    }

    /// Lets `duration` pass, running the lessor's timers; returns the
    /// watch events pushed meanwhile.
    fn sleep(&mut self, duration: Duration) -> Vec<EtcdResponse> {
        let end = self.now + duration;
        let mut pushed = Vec::new();
        while let Some(at) = self.server.next_timeout().filter(|at| *at <= end) {
            self.now = at.max(self.now);
            self.server.handle_timeout(self.now);
            pushed.extend(self.drain());
        }
        self.now = end;
        self.server.handle_timeout(end);
        pushed.extend(self.drain());
        pushed
    }

    fn grant(&mut self, ttl_secs: u64) -> LeaseId {
        let id = self.id();
        match self.call(EtcdRequest::Grant { id, ttl_secs }).as_slice() {
            [EtcdResponse::Granted { lease, .. }] => *lease,
            other => panic!("a grant: {other:?}"),
        }
    }

    /// `Put(key, WithLease(lease))`: the key's create revision, or `None` for
    /// `ErrLeaseNotFound`.
    fn put(&mut self, lease: LeaseId) -> Option<u64> {
        let id = self.id();
        match self.call(EtcdRequest::Campaign { id, lease }).as_slice() {
            [EtcdResponse::Campaigned {
                create_revision, ..
            }] => *create_revision,
            other => panic!("a txn answer: {other:?}"),
        }
    }

    fn revoke(&mut self, lease: LeaseId) {
        assert!(self.call(EtcdRequest::Revoke { lease }).is_empty());
    }

    /// `KeepAliveOnce`: the TTL answered (`<= 0`: `ErrLeaseNotFound`).
    fn keepalive_once(&mut self, lease: LeaseId) -> i64 {
        match self.call(EtcdRequest::KeepAlive { lease }).as_slice() {
            [EtcdResponse::KeepAlive { ttl_secs, .. }] => *ttl_secs,
            other => panic!("a keep-alive answer: {other:?}"),
        }
    }

    fn ttl(&self, lease: LeaseId) -> i64 {
        self.server.time_to_live(lease, self.now).ttl_secs
    }
}

/// `acquireLeaseAndKey` (`tests/integration/v3_lease_test.go`): a lease of
/// TTL 1 and the key attached to it.
fn lease_and_key(store: &mut Store) -> LeaseId {
    let lease = store.grant(1);
    assert!(store.put(lease).is_some(), "the key is put");
    lease
}

fn sim(ttl_secs: u64) -> Sim<Etcd> {
    Sim::new(EtcdSettings {
        session_ttl_secs: ttl_secs,
        ..EtcdSettings::default()
    })
}

/// Counts the keep-alive answers with a live TTL the server sends `client`.
fn count_keepalive_answers(sim: &mut Sim<Etcd>, client: ClientId) -> Rc<Cell<u32>> {
    let count = Rc::new(Cell::new(0));
    let seen = Rc::clone(&count);
    sim.drop_response = Some(Box::new(move |to, response| {
        if to == client
            && matches!(response, EtcdResponse::KeepAlive { ttl_secs, .. } if *ttl_secs > 0)
        {
            seen.set(seen.get() + 1);
        }
        false
    }));
    count
}

/// `lease_test.go`, `TestLeaseNotFoundError`: a `Put` with lease 500, which
/// was never granted, fails with `ErrLeaseNotFound`.
#[test]
fn lease_not_found_error() {
    let mut store = Store::new();
    assert_eq!(store.put(LeaseId(500)), None);
}

/// `v3_lease_test.go`, `TestV3PutOnNonExistLease`: a `Put` with the bad lease
/// `0x12345678` fails with `ErrGRPCLeaseNotFound`.
#[test]
fn put_on_non_existent_lease() {
    let mut store = Store::new();
    store.grant(10);
    assert_eq!(store.put(LeaseId(0x1234_5678)), None);
}

/// `lease_test.go`, `TestLeaseGrant` (second half): a lease of TTL 10 is
/// granted, and a key can be put with it.
#[test]
fn lease_grant() {
    let mut store = Store::new();
    let lease = store.grant(10);
    assert!(
        store.put(lease).is_some(),
        "failed to create key with lease"
    );
}

/// `lease_test.go`, `TestLeaseRevoke`: after `Revoke`, a `Put` with the lease
/// fails with `ErrLeaseNotFound`.
#[test]
fn lease_revoke() {
    let mut store = Store::new();
    let lease = store.grant(10);
    store.revoke(lease);
    assert_eq!(store.put(lease), None);
}

/// `lease_test.go`, `TestLeaseKeepAliveOnce`: a keep-alive of a granted lease
/// succeeds (its TTL, 10); of lease 0, `ErrLeaseNotFound` (TTL <= 0).
#[test]
fn lease_keepalive_once() {
    let mut store = Store::new();
    let lease = store.grant(10);
    assert_eq!(store.keepalive_once(lease), 10);
    assert!(store.keepalive_once(LeaseId(0)) <= 0, "ErrLeaseNotFound");
}

/// `lease_test.go`, `TestLeaseKeepAliveSeconds`: with a lease of TTL 3 the
/// keep-alive channel yields three answers and stays open (one keep-alive
/// at once, then every TTL/3 = 1 s).
#[test]
fn lease_keepalive_seconds() {
    let mut sim = sim(3);
    let a = ClientId(1);
    let answers = count_keepalive_answers(&mut sim, a);
    sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    let lease = sim.client(a).lease();
    assert!(lease.is_some(), "a session");
    sim.run_for(Duration::from_millis(2_490));
    assert_eq!(answers.get(), 3, "three answers by 2.5 s");
    assert_eq!(sim.client(a).lease(), lease, "the channel is not closed");
    assert!(sim.lost_leadership(a).is_none());
}

/// `lease_test.go`, `TestLeaseKeepAliveNotFound`: of three leases kept alive
/// (TTL 5), the revoked one's keep-alive channel closes and the others' do
/// not.
#[test]
fn lease_keepalive_not_found() {
    let mut sim = sim(5);
    let clients: Vec<ClientId> = (1..=3)
        .map(|id| sim.add_client(id, Clock::default()))
        .collect();
    sim.run_for(Duration::from_millis(100));
    let leases: Vec<LeaseId> = clients
        .iter()
        .map(|c| sim.client(*c).lease().expect("a session"))
        .collect();
    let now = sim.server_now(0);
    sim.servers[0]
        .machine
        .handle_request(CLI, EtcdRequest::Revoke { lease: leases[1] }, now);
    sim.run_for(Duration::from_secs(3));
    assert_eq!(
        sim.client(clients[0]).lease(),
        Some(leases[0]),
        "closed keepalive on wrong lease"
    );
    assert_eq!(
        sim.client(clients[2]).lease(),
        Some(leases[2]),
        "closed keepalive on wrong lease"
    );
    assert_ne!(
        sim.client(clients[1]).lease(),
        Some(leases[1]),
        "expected closed keepalive"
    );
}

/// `lease_test.go`, `TestLeaseKeepAliveCloseAfterDisconnectRevoke`: a client
/// with a kept-alive lease (TTL 10) is disconnected, the lease is revoked by
/// another client, the client reconnects: its keep-alive channel closes
/// within the TTL.
#[test]
fn lease_keepalive_close_after_disconnect_revoke() {
    let mut sim = sim(10);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    let lease = sim.client(a).lease().expect("a session");
    sim.cut(a);
    sim.run_for(Duration::from_secs(1));
    let now = sim.server_now(0);
    sim.servers[0]
        .machine
        .handle_request(CLI, EtcdRequest::Revoke { lease }, now);
    sim.heal(a);
    let healed = sim.now;
    let closed = sim.run_until_cond(Duration::from_secs(10), |sim| {
        sim.client(a).lease() != Some(lease)
    });
    assert!(closed, "keepalive channel did not close");
    let (lost_at, reason) = sim.lost_leadership(a).expect("it led");
    assert_eq!(reason, "session expired");
    assert!(lost_at < healed + secs(10));
}

/// `lease_test.go`, `TestLeaseKeepAliveInitTimeout`: the first keep-alive
/// never gets an answer (member stopped): the channel closes within 10 s —
/// at the first deadline look after `firstKeepAliveTimeout` (5 s).
#[test]
fn lease_keepalive_init_timeout() {
    let mut sim = sim(5);
    // Only the grant gets through.
    sim.drop_request = Some(Box::new(|_, request| {
        !matches!(request, EtcdRequest::Grant { .. })
    }));
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(10));
    let lease = sim.client(a).lease().expect("granted");
    let closed = sim.run_until_cond(Duration::from_secs(10), |sim| {
        sim.client(a).lease() != Some(lease)
    });
    assert!(closed, "keepalive channel did not close");
    assert!(
        sim.now > secs(5) && sim.now <= secs(7),
        "closed at {} ns",
        sim.now
    );
}

/// `lease_test.go`, `TestLeaseKeepAliveTTLTimeout`: after one answered
/// keep-alive (TTL 5) the member stops: the channel closes within 10 s — at
/// the first deadline look after the answer + TTL.
#[test]
fn lease_keepalive_ttl_timeout() {
    let mut sim = sim(5);
    let a = ClientId(1);
    let answers = count_keepalive_answers(&mut sim, a);
    sim.add_client(1, Clock::default());
    sim.run_until_cond(Duration::from_secs(1), |_| answers.get() == 1);
    let lease = sim.client(a).lease().expect("a session");
    let answered = sim.now;
    sim.cut(a);
    let closed = sim.run_until_cond(Duration::from_secs(10), |sim| {
        sim.client(a).lease() != Some(lease)
    });
    assert!(closed, "keepalive channel did not close");
    let after = sim.now - answered;
    assert!(
        after > secs(5) && after <= secs(6) + 1_000_000,
        "closed {after} ns after"
    );
}

/// `lease_test.go`, `TestLeaseRenewLostQuorum`: the first keep-alive (TTL 4)
/// is consumed, the cluster is down for TTL - 2 = 2 s (the keep-alive due at
/// TTL/3 is re-sent meanwhile), then back: a keep-alive answer arrives within
/// the TTL and the channel stays open.
#[test]
fn lease_renew_lost_quorum() {
    let mut sim = sim(4);
    let a = ClientId(1);
    let answers = count_keepalive_answers(&mut sim, a);
    sim.add_client(1, Clock::default());
    sim.run_until_cond(Duration::from_secs(1), |_| answers.get() == 1);
    let lease = sim.client(a).lease();
    sim.cut(a);
    sim.run_for(Duration::from_secs(2));
    sim.heal(a);
    let renewed = sim.run_until_cond(Duration::from_secs(4), |_| answers.get() == 2);
    assert!(renewed, "timed out waiting for keepalive");
    assert_eq!(sim.client(a).lease(), lease, "keepalive closed");
    assert!(sim.lost_leadership(a).is_none());
}

/// `lease_test.go`, `TestLeaseKeepAliveFullResponseQueue`: keep-alives go out
/// at TTL/3, not faster: 3 s after the first one, a lease of TTL 30 has not
/// been refreshed again (its TTL is below 29). (The full response queue
/// itself is not modelled; the rate is what the test asserts.)
#[test]
fn lease_keepalive_at_a_third_of_the_ttl() {
    let mut sim = sim(30);
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(3));
    let lease = sim.client(a).lease().expect("a session");
    let ttl = sim
        .server(0)
        .time_to_live(lease, sim.server_now(0))
        .ttl_secs;
    assert!(ttl < 29, "unexpected kept-alive lease TTL {ttl}");
}

/// `lease_test.go`, `TestLeaseTimeToLive` (TTL part): a lease of TTL 10 with
/// a key answers `GrantedTTL` 10 and a TTL in `(0, 10]`.
#[test]
fn lease_time_to_live() {
    let mut store = Store::new();
    let lease = store.grant(10);
    assert!(store.put(lease).is_some());
    let answer = store.server.time_to_live(lease, store.now);
    assert_eq!(answer.granted_ttl_secs, 10);
    assert!(answer.ttl_secs != 0 && answer.ttl_secs <= 10, "{answer:?}");
}

/// `lease_test.go`, `TestLeaseTimeToLiveLeaseNotFound`: a revoked lease
/// answers `TimeToLive` with TTL -1 (no error).
#[test]
fn lease_time_to_live_lease_not_found() {
    let mut store = Store::new();
    let lease = store.grant(10);
    store.revoke(lease);
    assert_eq!(store.ttl(lease), -1);
}

/// `v3_lease_test.go`, `TestV3GetNonExistLease`: `LeaseTimeToLive` of a
/// revoked lease answers TTL -1, and the server carries on.
#[test]
fn get_non_existent_lease() {
    let mut store = Store::new();
    let lease = store.grant(10);
    store.revoke(lease);
    assert_eq!(store.ttl(lease), -1);
    let other = store.grant(10);
    assert_eq!(store.keepalive_once(other), 10, "the server carries on");
}

/// `v3_lease_test.go`, `TestV3LeasePromote`: a lease of TTL 3 about to expire
/// (at TTL - 1) survives the leader's restart — the new leader promotes it —
/// is still there at the old expiry, and expires once the renewed TTL has
/// passed (polled for up to 10 s).
#[test]
fn lease_promote() {
    let mut store = Store::new();
    let lease = store.grant(3);
    let granted = store.now;
    store.sleep(Duration::from_secs(2));
    store.server.restart(store.now, true);
    let reelected = store.now;
    store.sleep(Duration::from_secs(2));
    assert!(
        store.now > granted + Duration::from_secs(3),
        "past the old expiry"
    );
    assert!(store.ttl(lease) >= 0, "unexpected lease not exists");
    store.sleep((reelected + Duration::from_secs(3)).saturating_duration_since(store.now));
    let mut expired = false;
    for _ in 0..100 {
        if store.ttl(lease) == -1 {
            expired = true;
            break;
        }
        store.sleep(Duration::from_millis(100));
    }
    assert!(expired, "unexpected lease exists");
}

/// `v3_lease_test.go`, `TestV3LeaseRevoke` (`testLeaseRemoveLeasedKey`): a key
/// attached to a lease is deleted once the lease is revoked.
#[test]
fn lease_revoke_removes_the_key() {
    let mut store = Store::new();
    let lease = lease_and_key(&mut store);
    store.revoke(lease);
    assert_eq!(
        store.server.create_revision(lease),
        None,
        "lease removed but key remains"
    );
}

/// `v3_lease_test.go`, `TestV3LeaseExpire`: a watch on the leased key from
/// revision 1 sees the put, then — the lease (TTL 1) left to lapse — its
/// DELETE, within 15 s; the key is gone.
#[test]
fn lease_expire_deletes_the_key() {
    let mut store = Store::new();
    let lease = lease_and_key(&mut store);
    let id = store.id();
    let pushed = store.call(EtcdRequest::Watch {
        id,
        key: lease,
        start_revision: 1,
    });
    assert!(pushed.is_empty(), "no DELETE yet");
    let events = store.sleep(Duration::from_secs(15));
    assert_eq!(
        events,
        vec![EtcdResponse::Deleted { id, key: lease }],
        "expected key delete"
    );
    assert_eq!(
        store.server.create_revision(lease),
        None,
        "lease removed but key remains"
    );
}

/// `v3_lease_test.go`, `TestV3LeaseKeepAlive`: three keep-alives, each
/// answered with the lease's id, keep the key; after the revoke it is gone.
/// (Upstream sleeps `TTL/2` between them, which for TTL 1 is 0 s in integer
/// seconds; the model sleeps 600 ms, so the lease would have expired
/// without them.)
#[test]
fn lease_keepalive_keeps_the_key() {
    let mut store = Store::new();
    let lease = lease_and_key(&mut store);
    for _ in 0..3 {
        let answer = store.call(EtcdRequest::KeepAlive { lease });
        assert_eq!(answer, vec![EtcdResponse::KeepAlive { lease, ttl_secs: 1 }]);
        store.sleep(Duration::from_millis(600));
    }
    assert!(
        store.server.create_revision(lease).is_some(),
        "renewed past the TTL"
    );
    store.revoke(lease);
    assert_eq!(
        store.server.create_revision(lease),
        None,
        "lease removed but key remains"
    );
}
