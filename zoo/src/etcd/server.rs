//! The etcd server: revisions, keys under the election prefix, leases, watches.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use fenced::LatestNow;

use super::{Etcd, EtcdRequest, EtcdResponse, LeaseId};
use crate::{ClientId, Instant, LockServer, ServerOutput};

/// The lessor's revoke loop looks every 500 ms (`server/lease/lessor.go`,
/// `runLoop`: `revokeExpiredLeases`, then `time.After(500 *
/// time.Millisecond)`): a lease is revoked at the first look at or after its
/// expiry, not at the expiry. (The revocation then goes through Raft; one
/// linearizable server here, so that round is left out.)
const REVOKE_LOOK_NANOS: u64 = 500_000_000;

/// etcd's default election timeout (`--election-timeout`, 1000 ms): a new
/// leader's lessor `Promote`s every lease by it (`lessor.go`, `Promote(extend)`
/// with `extend` the election timeout), so after a restart a lease expires at
/// `now + election timeout + TTL`.
const ELECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// The revoke loop's last look at or before `now`.
fn last_look(now: Instant) -> Instant {
    Instant::from_nanos(now.as_nanos() / REVOKE_LOOK_NANOS * REVOKE_LOOK_NANOS)
}

/// The revoke loop's first look at or after `at`.
fn next_look(at: Instant) -> Instant {
    let n = at.as_nanos();
    Instant::from_nanos(
        n.div_ceil(REVOKE_LOOK_NANOS)
            .saturating_mul(REVOKE_LOOK_NANOS),
    )
}

/// A `LeaseTimeToLive` answer ([`EtcdServer::time_to_live`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTimeToLive {
    /// Whole seconds left (truncated), or -1 if the lease is not found.
    pub ttl_secs: i64,
    /// The TTL it was granted with (0 if not found).
    pub granted_ttl_secs: u64,
}

#[derive(Clone, Copy, Debug)]
struct Lease {
    ttl_secs: u64,
    /// Server clock.
    expires_at: Instant,
}

#[derive(Clone, Copy, Debug)]
struct KeyValue {
    create_revision: u64,
    /// Who created it (ground truth only).
    owner: ClientId,
}

/// One etcd cluster, seen as one linearizable server. See the [module docs](super).
#[derive(Clone, Debug, Default)]
pub struct EtcdServer {
    /// The store's revision: +1 per write txn.
    revision: u64,
    last_lease: u64,
    leases: BTreeMap<LeaseId, Lease>,
    /// Keys `prefix/<lease>` (a key's lease is its name).
    keys: BTreeMap<LeaseId, KeyValue>,
    /// When each deleted key was deleted (keys are never re-created: leases
    /// are never reused), to replay DELETEs to late watches.
    deleted: BTreeMap<LeaseId, u64>,
    /// Open watches: (client, watch id) → key.
    watches: BTreeMap<(ClientId, u64), LeaseId>,
    /// The truth lane's last report.
    reported: Option<(ClientId, u64)>,
    latest_now: LatestNow,
    outputs: VecDeque<ServerOutput<Etcd>>,
}

impl EtcdServer {
    /// An empty store at revision 1.
    pub fn new() -> Self {
        EtcdServer {
            revision: 1,
            ..EtcdServer::default()
        }
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The election's leader: the key with the lowest create revision.
    pub fn leader(&self) -> Option<(ClientId, u64)> {
        self.keys
            .values()
            .min_by_key(|kv| kv.create_revision)
            .map(|kv| (kv.owner, kv.create_revision))
    }

    /// The create revision of the election key `prefix/<key>`, if it
    /// exists (a `Get` of one candidate's key).
    pub fn create_revision(&self, key: LeaseId) -> Option<u64> {
        self.keys.get(&key).map(|kv| kv.create_revision)
    }

    /// `LeaseTimeToLive` at `now` (server clock), as
    /// `server/etcdserver/v3_server.go` `leaseTimeToLive` answers it:
    /// `TTL = int64(Remaining().Seconds())` (truncated toward zero) and
    /// `GrantedTTL`; a lease that is not found — or that the revoke loop's
    /// last look at or before `now` has revoked — answers `TTL = -1`
    /// (`v3rpc/lease.go`).
    pub fn time_to_live(&self, lease: LeaseId, now: Instant) -> LeaseTimeToLive {
        match self.leases.get(&lease) {
            Some(state) if state.expires_at > last_look(now) => {
                let remaining_ns =
                    i128::from(state.expires_at.as_nanos()) - i128::from(now.as_nanos());
                let ttl_secs = i64::try_from(remaining_ns / 1_000_000_000).unwrap_or(i64::MAX);
                LeaseTimeToLive {
                    ttl_secs,
                    granted_ttl_secs: state.ttl_secs,
                }
            }
            _ => LeaseTimeToLive {
                ttl_secs: -1,
                granted_ttl_secs: 0,
            },
        }
    }

    fn reply(&mut self, to: ClientId, response: EtcdResponse) {
        self.outputs.push_back(ServerOutput::Reply { to, response });
    }

    fn report(&mut self) {
        let leader = self.leader();
        if leader != self.reported {
            self.reported = leader;
            self.outputs.push_back(ServerOutput::Holder {
                holder: leader.map(|(owner, _)| owner),
                token: leader.map(|(_, revision)| revision),
            });
        }
    }

    /// Deletes `key` at the current revision and notifies its watchers.
    fn delete_key(&mut self, key: LeaseId) {
        if self.keys.remove(&key).is_none() {
            return;
        }
        self.deleted.insert(key, self.revision);
        let fired: Vec<(ClientId, u64)> = self
            .watches
            .iter()
            .filter(|(_, watched)| **watched == key)
            .map(|(watch, _)| *watch)
            .collect();
        for (client, id) in fired {
            self.watches.remove(&(client, id));
            self.reply(client, EtcdResponse::Deleted { id, key });
        }
    }

    /// Revokes a lease: its key goes in one new revision.
    fn revoke(&mut self, lease: LeaseId) {
        if self.leases.remove(&lease).is_some() && self.keys.contains_key(&lease) {
            self.revision += 1;
            self.delete_key(lease);
        }
    }

    fn handle(&mut self, from: ClientId, request: EtcdRequest, now: Instant) {
        match request {
            EtcdRequest::Grant { id, ttl_secs } => {
                self.last_lease += 1;
                let lease = LeaseId(self.last_lease);
                self.leases.insert(
                    lease,
                    Lease {
                        ttl_secs,
                        expires_at: now + Duration::from_secs(ttl_secs),
                    },
                );
                self.reply(from, EtcdResponse::Granted { id, lease });
            }
            EtcdRequest::KeepAlive { lease } => {
                let ttl_secs = match self.leases.get_mut(&lease) {
                    Some(state) => {
                        state.expires_at = now + Duration::from_secs(state.ttl_secs);
                        i64::try_from(state.ttl_secs).unwrap_or(i64::MAX)
                    }
                    None => 0,
                };
                self.reply(from, EtcdResponse::KeepAlive { lease, ttl_secs });
            }
            EtcdRequest::Campaign { id, lease } => {
                let create_revision = if let Some(kv) = self.keys.get(&lease) {
                    Some(kv.create_revision)
                } else if self.leases.contains_key(&lease) {
                    self.revision += 1;
                    let create_revision = self.revision;
                    self.keys.insert(
                        lease,
                        KeyValue {
                            create_revision,
                            owner: from,
                        },
                    );
                    Some(create_revision)
                } else {
                    None
                };
                self.reply(
                    from,
                    EtcdResponse::Campaigned {
                        id,
                        create_revision,
                    },
                );
            }
            EtcdRequest::LastCreatedBefore {
                id,
                max_create_revision,
            } => {
                let key = self
                    .keys
                    .iter()
                    .filter(|(_, kv)| kv.create_revision <= max_create_revision)
                    .max_by_key(|(_, kv)| kv.create_revision)
                    .map(|(key, kv)| (*key, kv.create_revision));
                let revision = self.revision;
                self.reply(from, EtcdResponse::LastCreated { id, key, revision });
            }
            EtcdRequest::Watch {
                id,
                key,
                start_revision,
            } => match self.deleted.get(&key) {
                Some(at) if *at >= start_revision => {
                    self.reply(from, EtcdResponse::Deleted { id, key });
                }
                _ => {
                    // A re-sent watch replaces the client's earlier one on the key.
                    self.watches
                        .retain(|(client, _), watched| *client != from || *watched != key);
                    self.watches.insert((from, id), key);
                }
            },
            EtcdRequest::Resign {
                key,
                create_revision,
            } => {
                if self
                    .keys
                    .get(&key)
                    .is_some_and(|kv| kv.create_revision == create_revision)
                {
                    self.revision += 1;
                    self.delete_key(key);
                }
            }
            EtcdRequest::Revoke { lease } => self.revoke(lease),
        }
    }
}

impl LockServer<Etcd> for EtcdServer {
    fn handle_request(&mut self, from: ClientId, request: EtcdRequest, now: Instant) {
        let now = self.latest_now.observe(now);
        self.handle_timeout(now);
        self.handle(from, request, now);
        self.report();
        debug_assert!(self
            .keys
            .values()
            .all(|kv| kv.create_revision <= self.revision));
    }

    /// Revokes the leases whose TTL ran out on the server's clock by the
    /// revoke loop's last look.
    fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        let look = last_look(now);
        let expired: Vec<LeaseId> = self
            .leases
            .iter()
            .filter(|(_, lease)| lease.expires_at <= look)
            .map(|(id, _)| *id)
            .collect();
        for lease in expired {
            self.revoke(lease);
        }
        self.report();
    }

    fn next_timeout(&self) -> Option<Instant> {
        self.leases
            .values()
            .map(|lease| lease.expires_at)
            .min()
            .map(next_look)
    }

    fn poll_output(&mut self) -> Option<ServerOutput<Etcd>> {
        self.outputs.pop_front()
    }

    /// The store's revision: every write of every client (a key put, a
    /// lease revoked with its key) takes the next one, and the election's
    /// token is the lowest key's create revision.
    fn transactions(&self) -> Option<u64> {
        Some(self.revision)
    }

    /// Durable (etcd's normal case): keys, leases and revisions survive; the
    /// new leader's lessor `Promote`s every lease to now plus the election
    /// timeout plus its TTL; watches
    /// (streams) are gone. Not durable: the store is wiped, revisions keep
    /// counting.
    fn restart(&mut self, now: Instant, durable: bool) {
        let now = self.latest_now.observe(now);
        self.watches.clear();
        if durable {
            for lease in self.leases.values_mut() {
                lease.expires_at = now + ELECTION_TIMEOUT + Duration::from_secs(lease.ttl_secs);
            }
        } else {
            self.leases.clear();
            self.keys.clear();
            self.revision += 1;
        }
        self.report();
    }
}
