//! etcd's own tests of `client/v3/concurrency` sessions and elections, ported
//! as contract tests of the etcd model (etcd-io/etcd at c34dc7e).
//!
//! Each case cites its upstream file and test function; the lease tests are
//! in `upstream_etcd_lease.rs`. Upstream's clusters of three members are one
//! linearizable server here; an upstream "observer" (`Observe`, `Leader`) is
//! the server's own view, [`EtcdServer::leader`].
//!
//! Cases the model cannot express:
//!
//! * `tests/integration/clientv3/concurrency/election_test.go`,
//!   `TestResumeElection`: it resumes an election from a `Leader` answer
//!   (`ResumeElection`), `Observe`s it, resigns and campaigns again on the
//!   same session with another value. The model has no values, no
//!   `Observe`/`Proclaim` and no resign-without-closing (its application
//!   resigns only when it stops, and then closes the session).
//! * `tests/integration/v3_election_test.go`, `TestElectionOnPrefixOfExistingKey`:
//!   the store holds only the election's keys; there is no other key
//!   (`testa`) to be a prefix of.
//! * `tests/integration/v3_election_test.go`, `TestElectionObserveCompacted`:
//!   compaction and `Observe` are left out.
//! * `tests/integration/v3_election_test.go`,
//!   `TestElectionObserveFreshResponsesOnProclaim`: `Proclaim`, `Observe`
//!   and key versions are left out.
//! * `tests/integration/v3_election_test.go`, `TestElectionWithAuthEnabled`
//!   (4 rows): auth is left out; more to the point, every row orphans its
//!   session *before* campaigning (`s.Orphan()`, then `e.Campaign(t.Context(),
//!   ...)`), so each "second campaign" row waits on the first row's key with
//!   a lease that is no longer kept alive — the campaign-outlives-its-session
//!   pattern the model leaves out (module docs, "Left out"): the model's
//!   application campaigns with its session's context, which an orphaned
//!   session has cancelled.
//! * `tests/integration/v3election_grpc_test.go` (`TestV3ElectionCampaign`,
//!   `TestV3ElectionObserve`): the server-side election gRPC service is not
//!   the client library the model mirrors.

mod common;

use std::time::Duration;

use common::{Clock, Event, Sim};
use fenced_zoo::etcd::{
    Etcd, EtcdClient, EtcdRequest, EtcdResponse, EtcdServer, EtcdSettings, LeaseId,
};
use fenced_zoo::{
    ClientId, ClientOutput, Instant, Leadership, LockClient, LockServer, Protocol, ServerIndex,
    ServerOutput, SettingsError,
};

/// The etcd model as the upstream tests drive it: a client may start from an
/// existing lease (`NewSession(cli, WithLease(id))`) and may orphan its
/// session instead of closing it when stopped (`Session.Orphan`).
#[derive(Clone, Copy, Debug)]
enum Up {}

/// Per-client settings of [`Up`].
#[derive(Clone, Debug, Default, PartialEq)]
struct UpSettings {
    etcd: EtcdSettings,
    /// `WithLease`: start from this lease instead of granting one.
    lease: Option<LeaseId>,
    /// `stop` orphans the session (`Session.Orphan`) instead of closing it.
    orphan_on_stop: bool,
}

#[derive(Debug)]
struct UpClient {
    inner: EtcdClient,
    lease: Option<LeaseId>,
    orphan_on_stop: bool,
}

#[derive(Debug)]
struct UpServer(EtcdServer);

impl Protocol for Up {
    const NAME: &'static str = "etcd-upstream";
    type Settings = UpSettings;
    type Request = EtcdRequest;
    type Response = EtcdResponse;
    type Client = UpClient;
    type Server = UpServer;
    const HAS_TOKEN: bool = true;
    const CLIENT_CLOCK: fenced_zoo::ClockKind = Etcd::CLIENT_CLOCK;
    const SERVER_CLOCK: fenced_zoo::ClockKind = Etcd::SERVER_CLOCK;

    fn validate(settings: &UpSettings) -> Result<(), SettingsError> {
        Etcd::validate(&settings.etcd)
    }

    fn servers(settings: &UpSettings) -> u16 {
        Etcd::servers(&settings.etcd)
    }

    fn boundaries(settings: &UpSettings) -> fenced_zoo::Boundaries {
        Etcd::boundaries(&settings.etcd)
    }

    fn new_server(settings: &UpSettings, index: ServerIndex) -> UpServer {
        UpServer(Etcd::new_server(&settings.etcd, index))
    }

    fn new_client(settings: &UpSettings, id: ClientId, name: &str, seed: u64) -> UpClient {
        UpClient {
            inner: Etcd::new_client(&settings.etcd, id, name, seed),
            lease: settings.lease,
            orphan_on_stop: settings.orphan_on_stop,
        }
    }
}

impl LockClient<Up> for UpClient {
    fn start(&mut self, now: Instant) {
        match self.lease {
            Some(lease) => self.inner.start_with_lease(lease, now),
            None => self.inner.start(now),
        }
    }
    fn handle_response(&mut self, from: ServerIndex, response: EtcdResponse, now: Instant) {
        self.inner.handle_response(from, response, now);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now);
    }
    fn next_timeout(&self) -> Option<Instant> {
        self.inner.next_timeout()
    }
    fn poll_output(&mut self) -> Option<ClientOutput<Up>> {
        self.inner.poll_output().map(|output| match output {
            ClientOutput::Send { to, request } => ClientOutput::Send { to, request },
            ClientOutput::BecameLeader { token } => ClientOutput::BecameLeader { token },
            ClientOutput::LostLeadership { reason } => ClientOutput::LostLeadership { reason },
        })
    }
    fn stop(&mut self, now: Instant) {
        if self.orphan_on_stop {
            self.inner.orphan(now);
        } else {
            self.inner.stop(now);
        }
    }
    fn leadership(&self, now: Instant) -> Option<Leadership> {
        self.inner.leadership(now)
    }
}

impl LockServer<Up> for UpServer {
    fn handle_request(&mut self, from: ClientId, request: EtcdRequest, now: Instant) {
        self.0.handle_request(from, request, now);
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.0.handle_timeout(now);
    }
    fn next_timeout(&self) -> Option<Instant> {
        self.0.next_timeout()
    }
    fn poll_output(&mut self) -> Option<ServerOutput<Up>> {
        self.0.poll_output().map(|output| match output {
            ServerOutput::Reply { to, response } => ServerOutput::Reply { to, response },
            ServerOutput::Holder { holder, token } => ServerOutput::Holder { holder, token },
        })
    }
    fn restart(&mut self, now: Instant, durable: bool) {
        self.0.restart(now, durable);
    }
}

/// A process that only calls the server (upstream's bare `cli`): its
/// requests reach the server at once, its answers are returned.
const CLI: ClientId = ClientId(900);

fn sim() -> Sim<Up> {
    Sim::new(UpSettings::default())
}

/// Sends `request` from [`CLI`] to the server now, returning the answers
/// (and logging any change of holder, as the harness does).
fn call(sim: &mut Sim<Up>, request: EtcdRequest) -> Vec<EtcdResponse> {
    let now = sim.server_now(0);
    let server = &mut sim.servers[0].machine;
    server.handle_request(CLI, request, now);
    let mut answers = Vec::new();
    while let Some(output) = server.poll_output() {
        match output {
            ServerOutput::Reply { to, response } if to == CLI => answers.push(response),
            ServerOutput::Reply { .. } => {}
            ServerOutput::Holder { holder, token } => sim.log.push((
                sim.now,
                Event::Holder {
                    server: 0,
                    holder,
                    token,
                },
            )),
        }
    }
    answers
}

/// `cli.Grant(ttl)`.
fn grant(sim: &mut Sim<Up>, ttl_secs: u64) -> LeaseId {
    match call(sim, EtcdRequest::Grant { id: 1, ttl_secs }).as_slice() {
        [EtcdResponse::Granted { lease, .. }] => *lease,
        other => panic!("a grant: {other:?}"),
    }
}

fn server(sim: &Sim<Up>) -> &EtcdServer {
    &sim.server(0).0
}

/// The requests `client` sent (delivered to the server) at or after `from`.
fn sent_since(sim: &Sim<Up>, client: ClientId, from: u64) -> Vec<EtcdRequest> {
    sim.requests
        .iter()
        .filter(|(at, by, ..)| *by == client && *at >= from)
        .map(|(.., request)| request.clone())
        .collect()
}

fn token_of(sim: &Sim<Up>, client: ClientId) -> Option<u64> {
    sim.log.iter().find_map(|(_, event)| match event {
        Event::BecameLeader { client: c, token } if *c == client => *token,
        _ => None,
    })
}

/// `tests/integration/clientv3/concurrency/session_test.go`,
/// `TestSessionOptions`: a session made `WithLease(lease.ID)` uses that lease
/// (no grant of its own), and `Orphan` makes it `Done` within 100 ms — without
/// revoking the lease.
#[test]
fn session_options_with_lease_then_orphan() {
    let mut sim = sim();
    let lease = grant(&mut sim, 100);
    let settings = UpSettings {
        lease: Some(lease),
        orphan_on_stop: true,
        ..UpSettings::default()
    };
    let a = sim.add_client_with(1, Clock::default(), &settings);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        sim.client(a).inner.lease(),
        Some(lease),
        "s.Lease() == lease.ID"
    );
    assert!(
        !sent_since(&sim, a, 0)
            .iter()
            .any(|r| matches!(r, EtcdRequest::Grant { .. })),
        "WithLease grants nothing"
    );
    let orphaned_at = sim.now;
    sim.stop(a);
    sim.run_for(Duration::from_millis(100));
    assert_eq!(sim.client(a).inner.lease(), None, "Done within 100 ms");
    assert!(sim.leader_ids().is_empty());
    assert!(
        !sent_since(&sim, a, orphaned_at)
            .iter()
            .any(|r| matches!(r, EtcdRequest::Revoke { .. })),
        "Orphan does not revoke"
    );
    assert!(server(&sim).time_to_live(lease, sim.server_now(0)).ttl_secs > 90);
}

/// `tests/integration/clientv3/concurrency/session_test.go`,
/// `TestSessionTTLOptions`: `WithTTL(90)`: the lease's remaining TTL is
/// neither expired (-1) nor the default 60, and in `[90 - 20, 90)`.
#[test]
fn session_ttl_options() {
    let set_ttl = 90;
    let mut sim: Sim<Up> = Sim::new(UpSettings {
        etcd: EtcdSettings {
            session_ttl_secs: set_ttl,
            ..EtcdSettings::default()
        },
        ..UpSettings::default()
    });
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_millis(100));
    let lease = sim.client(a).inner.lease().expect("a session");
    let ttl = server(&sim).time_to_live(lease, sim.server_now(0)).ttl_secs;
    assert_ne!(ttl, -1, "client lease should not be expired");
    assert_ne!(ttl, 60, "default TTL value is used instead of the set TTL");
    let set_ttl = i64::try_from(set_ttl).unwrap();
    assert!(ttl < set_ttl && ttl >= set_ttl - 20, "TTL {ttl}");
}

/// `tests/integration/clientv3/concurrency/session_test.go`, `TestSessionCtx`:
/// a context derived from the session's is cancelled by `Orphan` within
/// 100 ms. The model's application campaigns with that context, so what it
/// cancels — the keep-alive and the campaign — stops: after the orphan the
/// client sends nothing at all, while a waiting candidate would otherwise go
/// on re-sending its watch.
#[test]
fn session_ctx_is_cancelled_by_orphan() {
    let mut sim = sim();
    let holder = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let lease = grant(&mut sim, 100);
    let settings = UpSettings {
        lease: Some(lease),
        orphan_on_stop: true,
        ..UpSettings::default()
    };
    let a = sim.add_client_with(2, Clock::default(), &settings);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.client(a).inner.lease(), Some(lease));
    assert_eq!(sim.leader_ids(), vec![holder], "A waits behind the holder");
    let orphaned_at = sim.now;
    sim.stop(a);
    sim.run_for(Duration::from_millis(100));
    assert_eq!(sim.client(a).inner.lease(), None, "cancelled within 100 ms");
    sim.run_for(Duration::from_secs(30));
    let after: Vec<EtcdRequest> = sent_since(&sim, a, orphaned_at)
        .into_iter()
        .filter(|r| !matches!(r, EtcdRequest::Resign { .. }))
        .collect();
    assert!(after.is_empty(), "nothing after the orphan: {after:?}");
}

/// `tests/integration/v3_election_test.go`, `TestElectionFailover`: the first
/// leader is elected; a second candidate campaigns; the first session is
/// closed; an observer sees the second leader, and its `Campaign` returns.
#[test]
fn election_failover() {
    let mut sim = sim();
    let first = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![first], "first leader elected");
    assert_eq!(server(&sim).leader().map(|(who, _)| who), Some(first));
    let next = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    assert!(sim.became_leader_at(next).is_none(), "still waiting");
    sim.stop(first);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        server(&sim).leader().map(|(who, _)| who),
        Some(next),
        "observed"
    );
    assert!(sim.became_leader_at(next).is_some(), "Campaign returned");
    assert_eq!(sim.leader_ids(), vec![next]);
}

/// `tests/integration/v3_election_test.go`, `TestElectionSessionRecampaign`:
/// campaigning twice on one session does not deadlock. The second txn finds
/// the session's own key (`Else Get(key)`), takes its create revision as
/// `leaderRev` and returns at once. (Upstream then `Proclaim`s the new
/// value; values are left out.) At the server: the second txn writes
/// nothing and answers the same revision; at the client: every request
/// delivered twice still makes one leader with one token.
#[test]
fn election_session_recampaign() {
    let mut sim = sim();
    let lease = grant(&mut sim, 60);
    let first = call(&mut sim, EtcdRequest::Campaign { id: 2, lease });
    let revision = server(&sim).revision();
    let second = call(&mut sim, EtcdRequest::Campaign { id: 3, lease });
    let [EtcdResponse::Campaigned {
        create_revision: Some(a),
        ..
    }] = first.as_slice()
    else {
        panic!("first campaign: {first:?}");
    };
    let [EtcdResponse::Campaigned {
        create_revision: Some(b),
        ..
    }] = second.as_slice()
    else {
        panic!("second campaign: {second:?}");
    };
    assert_eq!(a, b, "the same leader revision");
    assert_eq!(server(&sim).revision(), revision, "nothing written");

    let mut sim = self::sim();
    sim.duplicate_requests = true;
    let c = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.leader_ids(), vec![c]);
    let token = token_of(&sim, c).expect("a token");
    assert_eq!(server(&sim).leader(), Some((c, token)));
}

/// `tests/integration/v3_election_test.go`, `TestElectionOnSessionRestart`:
/// a leader's quick restart — a new session `WithLease` of the old session's
/// lease — campaigns and leads again at once with the same key (the same
/// create revision, so the same token), and the candidate waiting meanwhile
/// does not take over.
#[test]
fn election_on_session_restart() {
    let mut sim = sim();
    let old = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let lease = sim.client(old).inner.lease().expect("a session");
    let token = token_of(&sim, old).expect("old leads");
    let waiter = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    // The process restarts: gone without a word, back with its lease.
    sim.crash(old);
    let settings = UpSettings {
        lease: Some(lease),
        ..UpSettings::default()
    };
    let new = sim.add_client_with(3, Clock::default(), &settings);
    sim.run_for(Duration::from_secs(5));
    assert_eq!(token_of(&sim, new), Some(token), "the same key");
    assert_eq!(sim.leader_ids(), vec![new]);
    assert!(
        sim.became_leader_at(waiter).is_none(),
        "leader not lost to the waiter"
    );
    assert_eq!(server(&sim).leader().map(|(_, rev)| rev), Some(token));
}

/// `tests/integration/v3_election_test.go`, `TestElectionWait`: followers wait
/// for each of three leaders in turn; each observes exactly the leader whose
/// `Campaign` returned, which resigns to let the next one lead.
#[test]
fn election_wait() {
    let mut sim = sim();
    let leaders: Vec<ClientId> = (1..=3)
        .map(|id| {
            let client = sim.add_client(id, Clock::default());
            sim.run_for(Duration::from_millis(10));
            client
        })
        .collect();
    sim.run_for(Duration::from_secs(1));
    for (round, leader) in leaders.iter().enumerate() {
        assert_eq!(sim.leader_ids(), vec![*leader], "round {round}: one leader");
        let observed = server(&sim).leader().map(|(who, _)| who);
        assert_eq!(
            observed,
            Some(*leader),
            "round {round}: followers observe it"
        );
        sim.stop(*leader);
        sim.run_for(Duration::from_secs(1));
    }
    assert!(server(&sim).leader().is_none());
}

/// `client/v3/concurrency/example_election_test.go` (and its copy under
/// `tests/integration/clientv3/concurrency/`), `ExampleElection_Campaign`:
/// e1 campaigns 3 s after e2, so e2 completes the first election; e2
/// resigns and e1 completes the second.
#[test]
fn example_election_campaign() {
    let mut sim = sim();
    let e2 = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(3));
    let e1 = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        sim.leader_ids(),
        vec![e2],
        "completed first election with e2"
    );
    sim.stop(e2);
    sim.run_for(Duration::from_millis(10));
    assert_eq!(
        sim.leader_ids(),
        vec![e1],
        "completed second election with e1"
    );
    assert!(token_of(&sim, e2) < token_of(&sim, e1));
}

/// `client/v3/concurrency/election.go`, `Campaign`, and `key.go`,
/// `waitDeletes` — the campaign-outlives-its-session pitfall, and why the
/// model's application does not fall into it. B waits behind A; B is paused
/// past its TTL, so its lease expires and the server deletes B's key; A
/// resigns meanwhile and C (whose key is younger than B's) leads. When B
/// wakes, the DELETE of A's key is waiting for it. Upstream, a `Campaign`
/// on a context that outlives the session would now find no older key and
/// return `nil` — B would believe it leads, with its dead key's create
/// revision, below C's, while C leads. The model's application campaigns
/// with the session's context: the session is `Done` at the same wake-up,
/// the campaign ends without electing, and C alone believes.
#[test]
fn campaign_cancelled_by_its_session_does_not_return() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let c = sim.add_client(3, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b_lease = sim.client(b).inner.lease().expect("B's session");
    let b_revision = server(&sim).create_revision(b_lease).expect("B's key");
    sim.pause(b, Duration::from_secs(90));
    sim.run_for(Duration::from_secs(7));
    sim.stop(a);
    sim.run_for(Duration::from_secs(80));
    assert_eq!(
        server(&sim).create_revision(b_lease),
        None,
        "B's key expired"
    );
    let c_token = token_of(&sim, c).expect("C leads once B's key is gone");
    assert!(b_revision < c_token);
    // B wakes (at 93 s) to the DELETE of A's key.
    sim.run_for(Duration::from_millis(200));
    assert_eq!(sim.leader_ids(), vec![c]);
    assert_eq!(token_of(&sim, b), None, "B's campaign did not return");
    // B's next session campaigns behind C, with a new key.
    sim.run_for(Duration::from_secs(5));
    assert_ne!(sim.client(b).inner.lease(), Some(b_lease));
    assert_eq!(sim.leader_ids(), vec![c]);
}

/// `client/v3/concurrency/election.go`, `Campaign`: a waiting campaign whose
/// context is cancelled resigns (`e.Resign(client.Ctx())`). Here B's session
/// ends by its local deadline — its keep-alive answers are lost, its
/// keep-alives are not, so the server still holds B's lease — and the
/// resign deletes B's key at once rather than when the lease would expire.
#[test]
fn campaign_cancelled_by_its_session_resigns() {
    let mut sim = sim();
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = ClientId(2);
    sim.drop_response = Some(Box::new(move |to, response| {
        to == b && matches!(response, EtcdResponse::KeepAlive { .. })
    }));
    sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b_lease = sim.client(b).inner.lease().expect("B's session");
    let b_revision = server(&sim).create_revision(b_lease).expect("B's key");
    // No answer reaches B: `Done` at the deadline look after 5 s.
    let ended = sim.run_until_cond(Duration::from_secs(10), |sim| {
        sim.client(b).inner.lease().is_none()
    });
    assert!(ended, "B's session ended");
    sim.run_for(Duration::from_millis(10));
    let resign = EtcdRequest::Resign {
        key: b_lease,
        create_revision: b_revision,
    };
    assert!(
        sim.requests
            .iter()
            .any(|(_, by, _, request)| *by == b && *request == resign),
        "B resigned its key"
    );
    assert!(
        server(&sim)
            .time_to_live(b_lease, sim.server_now(0))
            .ttl_secs
            > 50,
        "the lease is still alive"
    );
    assert_eq!(
        server(&sim).create_revision(b_lease),
        None,
        "but its key is resigned"
    );
    assert_eq!(sim.leader_ids(), vec![a]);
}
