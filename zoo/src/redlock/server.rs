//! One Redis instance holding the lock key, and the clients' TCP
//! connections to it.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use super::{RedisRequest, RedisResponse, RedisScript, Redlock};
use crate::{ClientId, Instant, LockServer, ServerIndex, ServerOutput};

/// The key as the instance stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    value: u128,
    /// Who set `value` (ground truth only; Redis knows just the value).
    owner: ClientId,
    /// Absolute expiry on this instance's clock (`SET ... PX`).
    expires_at: Instant,
}

/// A single Redis instance with one key. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct RedisInstance {
    index: ServerIndex,
    key: Option<Entry>,
    /// The connections this process has open: `(client, conn)` from the
    /// connection's `Hello` until the client closes it or the process dies.
    /// At most a few per client (one in use, and any it gave up on whose
    /// close is still on its way).
    open: BTreeSet<(ClientId, u64)>,
    /// The script cache: a bit per [`RedisScript`] loaded (`SCRIPT LOAD`)
    /// since the process started. Redis 7 keeps it in memory only (scripts
    /// are neither in the RDB nor the AOF since 7.0), so every start — the
    /// first, and each restart, durable or not — begins empty, and the
    /// first `EVALSHA` of each script meets `NOSCRIPT`. Shared by every
    /// client: one client's `SCRIPT LOAD` serves the others.
    scripts: u8,
    outputs: VecDeque<ServerOutput<Redlock>>,
}

impl RedisInstance {
    /// An empty instance.
    pub fn new(index: ServerIndex) -> Self {
        RedisInstance {
            index,
            key: None,
            open: BTreeSet::new(),
            scripts: 0,
            outputs: VecDeque::new(),
        }
    }

    /// Which instance this is.
    pub fn index(&self) -> ServerIndex {
        self.index
    }

    /// The key's value and expiry if it is set and not expired at `now`.
    pub fn key_at(&self, now: Instant) -> Option<(u128, Instant)> {
        self.key
            .filter(|entry| !expired(entry, now))
            .map(|entry| (entry.value, entry.expires_at))
    }

    /// redlock-rb's `PTTL_SCRIPT` (`{ GET key, PTTL key }`) at `now`: the
    /// value and the milliseconds left (Redis's `PTTL`, `expire - now`
    /// floored to whole ms), or `None` for an absent or expired key (a nil
    /// value, which `try_get_remaining_ttl` drops). Feed the answers to
    /// [`query::remaining_ttl`](super::query::remaining_ttl).
    pub fn pttl(&self, now: Instant) -> Option<(u128, u64)> {
        self.key_at(now).map(|(value, expires_at)| {
            let left = expires_at.as_nanos().saturating_sub(now.as_nanos());
            (value, left / 1_000_000)
        })
    }

    /// Drops the key if it expired (Redis's lazy expiry; the timer is the
    /// active one), reporting the change.
    fn expire(&mut self, now: Instant) {
        if self.key.is_some_and(|entry| expired(&entry, now)) {
            self.set_key(None);
        }
    }

    /// Whether `script` is in the script cache (`EVALSHA` runs it).
    fn cached(&self, script: RedisScript) -> bool {
        self.scripts & script.bit() != 0
    }

    fn set_key(&mut self, key: Option<Entry>) {
        let before = self.key.map(|entry| entry.owner);
        self.key = key;
        let after = key.map(|entry| entry.owner);
        if before != after {
            self.outputs.push_back(ServerOutput::Holder {
                holder: after,
                token: None,
            });
        }
    }
}

/// Redis's `keyIsExpired`: `now > when`.
fn expired(entry: &Entry, now: Instant) -> bool {
    now > entry.expires_at
}

impl LockServer<Redlock> for RedisInstance {
    fn handle_request(&mut self, from: ClientId, request: RedisRequest, now: Instant) {
        self.expire(now);
        let conn = request.conn();
        let response = match request {
            RedisRequest::Hello { conn } => {
                // The prelude on a connection just accepted.
                self.open.insert((from, conn));
                RedisResponse::Hello { conn }
            }
            RedisRequest::Close { conn } => {
                // The client's FIN, after everything it sent on `conn`.
                self.open.remove(&(from, conn));
                return;
            }
            _ if !self.open.contains(&(from, conn)) => {
                // No socket of this process: the connection was opened
                // before it restarted. Its kernel answers with a reset;
                // the command never runs.
                RedisResponse::Closed { conn }
            }
            RedisRequest::ScriptLoad { id, script, .. } => {
                self.scripts |= script.bit();
                RedisResponse::ScriptLoaded { conn, id }
            }
            RedisRequest::Lock { id, .. } if !self.cached(RedisScript::Lock) => {
                RedisResponse::NoScript { conn, id }
            }
            RedisRequest::Unlock { id, .. } if !self.cached(RedisScript::Unlock) => {
                RedisResponse::NoScript { conn, id }
            }
            RedisRequest::Lock {
                id,
                value,
                ttl_ms,
                allow_new,
                ..
            } => {
                // LOCK_SCRIPT: (absent and allowed) or already ours -> SET PX.
                let ok = match self.key {
                    None => allow_new,
                    Some(entry) => entry.value == value,
                };
                if ok {
                    let owner = self.key.map_or(from, |entry| entry.owner);
                    self.set_key(Some(Entry {
                        value,
                        owner,
                        expires_at: now + Duration::from_millis(ttl_ms),
                    }));
                }
                RedisResponse::Lock { conn, id, ok }
            }
            RedisRequest::Unlock { id, value, .. } => {
                // UNLOCK_SCRIPT: compare-and-delete; another's key is untouched.
                let deleted = self.key.is_some_and(|entry| entry.value == value);
                if deleted {
                    self.set_key(None);
                }
                RedisResponse::Unlock { conn, id, deleted }
            }
        };
        self.outputs
            .push_back(ServerOutput::Reply { to: from, response });
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.expire(now);
    }

    fn next_timeout(&self) -> Option<Instant> {
        // The first instant at which `now > expires_at`.
        self.key
            .map(|entry| entry.expires_at + Duration::from_nanos(1))
    }

    fn poll_output(&mut self) -> Option<ServerOutput<Redlock>> {
        self.outputs.pop_front()
    }

    /// The process died: its machine's kernel resets every connection it
    /// had open, and each client hears [`RedisResponse::Closed`] (redis-client
    /// reads EOF on the socket: a `ConnectionError` for the call waiting on
    /// it, or for the next call made on it).
    fn went_down(&mut self) {
        for (client, conn) in std::mem::take(&mut self.open) {
            self.outputs.push_back(ServerOutput::Reply {
                to: client,
                response: RedisResponse::Closed { conn },
            });
        }
    }

    /// Without persistence the key is gone. With it (AOF, `fsync always`) the
    /// key survives with its absolute expiry, which Redis keeps as a Unix
    /// time: an instance whose clock jumped forward across the restart expires
    /// it early. Either way the new process has no connections and an empty
    /// script cache.
    fn restart(&mut self, now: Instant, durable: bool) {
        self.open.clear();
        self.scripts = 0;
        if !durable {
            self.set_key(None);
        }
        self.expire(now);
    }
}
