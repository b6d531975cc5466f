//! The etcd client: a `Session` (lease + keep-alive) and an `Election`.

use std::time::Duration;

use super::{Etcd, EtcdRequest, EtcdResponse, EtcdSettings, LeaseId};
use crate::outbox::Outbox;
use crate::util::earliest_of;
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// The lessor's keep-alive state for the session lease.
#[derive(Clone, Copy, Debug)]
struct KeepAlive {
    lease: LeaseId,
    /// `nextKeepAlive`: a keep-alive goes out once this has passed.
    next_keepalive: Instant,
    /// When the send loop next looks (every `retryConnWait`).
    next_send: Instant,
    /// `deadline`: the channel closes (session `Done`) once this passes.
    deadline: Instant,
}

/// Where `Campaign` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Campaign {
    /// The txn is in flight.
    Txn,
    /// `waitDeletes`: the `Get` is in flight.
    Get { leader_revision: u64 },
    /// `waitDelete`: watching `key` from `start_revision`.
    Watch {
        leader_revision: u64,
        key: LeaseId,
        start_revision: u64,
    },
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    /// A new session after `at`.
    Waiting {
        at: Instant,
    },
    /// `Grant` in flight.
    Granting,
    Campaigning(Campaign),
    /// `Campaign` returned: leading with the key's create revision.
    Leader {
        revision: u64,
    },
}

/// An etcd election client. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct EtcdClient {
    settings: EtcdSettings,
    id: ClientId,
    phase: Phase,
    session: Option<KeepAlive>,
    /// The request in flight and its timeout (for a watch: when to re-send).
    rpc: Option<(u64, Instant)>,
    /// When the lessor's `deadlineLoop` started: its first keep-alive. The
    /// loop looks once a second from then (`client/v3/lease.go`,
    /// `deadlineLoop`: `timer.Reset(time.Second)`, then closes every
    /// keep-alive whose `deadline.Before(now)`), so a session is `Done` at
    /// the first of those looks after its deadline, not at the deadline.
    deadline_loop_from: Option<Instant>,
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<Etcd>>,
}

impl EtcdClient {
    /// An idle client.
    pub fn new(settings: EtcdSettings, id: ClientId) -> Self {
        EtcdClient {
            settings,
            id,
            phase: Phase::Idle,
            session: None,
            rpc: None,
            deadline_loop_from: None,
            outbox: Outbox::new(),
        }
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The session's lease, if one is alive (as the client believes).
    pub fn lease(&self) -> Option<LeaseId> {
        self.session.map(|session| session.lease)
    }

    /// Starts contending with an existing lease, as
    /// `NewSession(client, WithLease(lease))` does
    /// (`client/v3/concurrency/session.go`): no `Grant`, the keep-alive
    /// starts at once (its first deadline `first_keepalive_timeout` away),
    /// then `Campaign` — which, if the lease already owns its key
    /// `prefix/lease` (a restarted process reclaiming its election), finds it
    /// and waits from that key's create revision. No-op unless idle. A
    /// lease the server does not know ends the session at its first
    /// keep-alive answer (TTL 0), after which the client grants a new one as
    /// usual.
    pub fn start_with_lease(&mut self, lease: LeaseId, now: Instant) {
        let now = self.outbox.observe(now);
        if matches!(self.phase, Phase::Idle) {
            self.begin_session(lease, now);
        }
    }

    /// `Session.Orphan` (`client/v3/concurrency/session.go`): the keep-alive
    /// stops and the session is `Done` at once, without `Revoke` — the
    /// lease, and the key it owns, live on until the server expires them
    /// (or a client resumes them with
    /// [`start_with_lease`](Self::start_with_lease)). The application stops
    /// leading ("orphaned"); a campaign in progress is cancelled (the
    /// model's application campaigns with the session's context, see the
    /// module docs) and, if it was waiting, resigns its key as upstream's
    /// `Campaign` does on a cancelled context; the client goes idle. No-op
    /// when idle.
    pub fn orphan(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        if matches!(self.phase, Phase::Leader { .. }) && self.session.is_some() {
            self.outbox
                .push(ClientOutput::LostLeadership { reason: "orphaned" });
        }
        self.resign_cancelled_campaign();
        self.session = None;
        self.rpc = None;
        self.phase = Phase::Idle;
    }

    fn send(&mut self, request: EtcdRequest) {
        self.outbox.push(ClientOutput::Send { to: 0, request });
    }

    fn request(&mut self, now: Instant, request: impl FnOnce(u64) -> EtcdRequest) {
        let id = self.outbox.next_request_id();
        self.rpc = Some((id, now + self.settings.request_timeout));
        let request = request(id);
        self.send(request);
    }

    fn grant(&mut self, now: Instant) {
        self.phase = Phase::Granting;
        let ttl_secs = self.settings.session_ttl_secs;
        self.request(now, |id| EtcdRequest::Grant { id, ttl_secs });
    }

    /// `Campaign` (again): the txn.
    fn campaign(&mut self, now: Instant) {
        let lease = self.session.expect("campaigns run in a session").lease;
        self.phase = Phase::Campaigning(Campaign::Txn);
        self.request(now, |id| EtcdRequest::Campaign { id, lease });
    }

    /// `waitDeletes`' `Get`.
    fn wait_deletes(&mut self, leader_revision: u64, now: Instant) {
        self.phase = Phase::Campaigning(Campaign::Get { leader_revision });
        self.request(now, |id| EtcdRequest::LastCreatedBefore {
            id,
            max_create_revision: leader_revision - 1,
        });
    }

    fn watch(&mut self, campaign: Campaign, now: Instant) {
        let Campaign::Watch {
            key,
            start_revision,
            ..
        } = campaign
        else {
            return;
        };
        self.phase = Phase::Campaigning(campaign);
        self.request(now, |id| EtcdRequest::Watch {
            id,
            key,
            start_revision,
        });
    }

    /// The session's context is cancelled while `Campaign` waits in
    /// `waitDeletes`: upstream's `Campaign` sees its `Get`/`Watch` fail,
    /// finds `ctx.Done()` and calls `e.Resign(client.Ctx())` — a txn `If
    /// CreateRevision(key) == leaderRev Then Delete(key)` on the client's own
    /// context, so it is sent even though the session is over
    /// (`client/v3/concurrency/election.go`, `Campaign`). While the txn
    /// itself is in flight there is no `leaderRev` yet and `Campaign`
    /// returns the txn's error without resigning.
    fn resign_cancelled_campaign(&mut self) {
        let leader_revision = match self.phase {
            Phase::Campaigning(
                Campaign::Get { leader_revision }
                | Campaign::Watch {
                    leader_revision, ..
                },
            ) => leader_revision,
            _ => return,
        };
        if let Some(session) = self.session {
            self.send(EtcdRequest::Resign {
                key: session.lease,
                create_revision: leader_revision,
            });
        }
    }

    /// The keep-alive channel closed: the session is `Done`.
    fn session_done(&mut self, now: Instant) {
        self.resign_cancelled_campaign();
        self.session = None;
        self.rpc = None;
        if matches!(self.phase, Phase::Leader { .. }) {
            self.outbox.push(ClientOutput::LostLeadership {
                reason: "session expired",
            });
        }
        self.phase = Phase::Waiting {
            at: now + self.settings.restart_delay,
        };
    }

    /// When `deadlineLoop` closes `session`'s keep-alive channel: its first
    /// look strictly after the deadline (one a second from the loop's start).
    fn done_at(&self, session: &KeepAlive) -> Instant {
        const LOOK: u64 = 1_000_000_000;
        let from = self.deadline_loop_from.unwrap_or(session.deadline);
        let since = session.deadline.as_nanos().saturating_sub(from.as_nanos());
        let looks = since / LOOK + 1;
        Instant::from_nanos(from.as_nanos().saturating_add(looks.saturating_mul(LOOK)))
    }

    /// `sendKeepAliveLoop` and `deadlineLoop`.
    fn keepalive_timers(&mut self, now: Instant) {
        let Some(mut session) = self.session else {
            return;
        };
        if now >= self.done_at(&session) {
            return self.session_done(now);
        }
        if now >= session.next_send {
            if now >= session.next_keepalive {
                self.send(EtcdRequest::KeepAlive {
                    lease: session.lease,
                });
            }
            session.next_send = now + self.settings.keepalive_retry;
            // Nothing to do before `next_keepalive`.
            session.next_send = session.next_send.max(session.next_keepalive);
            self.session = Some(session);
        }
    }

    /// `NewSession`'s `KeepAlive(lease)`, then `Campaign`.
    fn begin_session(&mut self, lease: LeaseId, now: Instant) {
        // `KeepAlive`'s first call starts the lessor's loops, once.
        self.deadline_loop_from.get_or_insert(now);
        self.session = Some(KeepAlive {
            lease,
            next_keepalive: now,
            next_send: now,
            deadline: now + self.settings.first_keepalive_timeout,
        });
        self.keepalive_timers(now);
        self.campaign(now);
    }

    fn on_answer(&mut self, response: EtcdResponse, now: Instant) {
        match (self.phase, response) {
            (Phase::Granting, EtcdResponse::Granted { lease, .. }) => {
                self.begin_session(lease, now);
            }
            (
                Phase::Campaigning(Campaign::Txn),
                EtcdResponse::Campaigned {
                    create_revision, ..
                },
            ) => match create_revision {
                Some(revision) => self.wait_deletes(revision, now),
                // ErrLeaseNotFound: `Campaign` returns the txn's error to its
                // caller (`client/v3/concurrency/election.go`, `Campaign`:
                // `if err != nil { return err }` after the txn) — it does not
                // try again. The application's loop closes the session and
                // makes a new one after `restart_delay`, as when the session
                // ends. (Re-sending the txn at once, as this model did, ran
                // forever while the lease was gone: a livelock at zero
                // latency.)
                None => self.session_done(now),
            },
            (
                Phase::Campaigning(Campaign::Get { leader_revision }),
                EtcdResponse::LastCreated { key, revision, .. },
            ) => match key {
                None => {
                    self.phase = Phase::Leader {
                        revision: leader_revision,
                    };
                    self.outbox.push(ClientOutput::BecameLeader {
                        token: Some(leader_revision),
                    });
                }
                Some((key, _)) => self.watch(
                    Campaign::Watch {
                        leader_revision,
                        key,
                        start_revision: revision,
                    },
                    now,
                ),
            },
            (
                Phase::Campaigning(Campaign::Watch {
                    leader_revision, ..
                }),
                EtcdResponse::Deleted { .. },
            ) => self.wait_deletes(leader_revision, now),
            _ => {}
        }
    }

    /// A campaign request failed or timed out: `Campaign` is called again.
    fn campaign_failed(&mut self, now: Instant) {
        match self.phase {
            Phase::Granting => self.grant(now),
            Phase::Campaigning(campaign @ Campaign::Watch { .. }) => self.watch(campaign, now),
            Phase::Campaigning(_) => self.campaign(now),
            _ => self.rpc = None,
        }
    }
}

impl LockClient<Etcd> for EtcdClient {
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if matches!(self.phase, Phase::Idle) {
            self.grant(now);
        }
    }

    fn handle_response(&mut self, _from: ServerIndex, response: EtcdResponse, now: Instant) {
        let now = self.outbox.observe(now);
        if let EtcdResponse::KeepAlive { lease, ttl_secs } = response {
            // `recvKeepAlive`: answers for another lease are ignored.
            let Some(mut session) = self.session.filter(|s| s.lease == lease) else {
                return;
            };
            let Ok(ttl_secs) = u64::try_from(ttl_secs) else {
                return self.session_done(now);
            };
            if ttl_secs == 0 {
                return self.session_done(now);
            }
            let ttl = Duration::from_secs(ttl_secs);
            session.next_keepalive = now + ttl / 3;
            session.next_send = session.next_keepalive;
            session.deadline = now + ttl;
            self.session = Some(session);
            return self.handle_timeout(now);
        }
        let id = match response {
            EtcdResponse::Granted { id, .. }
            | EtcdResponse::Campaigned { id, .. }
            | EtcdResponse::LastCreated { id, .. }
            | EtcdResponse::Deleted { id, .. } => id,
            EtcdResponse::KeepAlive { .. } => unreachable!("handled above"),
        };
        if self.rpc.is_none_or(|(expected, _)| expected != id) {
            return;
        }
        self.rpc = None;
        self.on_answer(response, now);
        self.handle_timeout(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        self.keepalive_timers(now);
        if let Phase::Waiting { at } = self.phase {
            if now >= at {
                self.grant(now);
            }
        }
        if let Some((_, deadline)) = self.rpc {
            if now >= deadline {
                self.campaign_failed(now);
            }
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        let session = self
            .session
            .map(|session| session.next_send.min(self.done_at(&session)));
        let waiting = match self.phase {
            Phase::Waiting { at } => Some(at),
            _ => None,
        };
        earliest_of([session, waiting, self.rpc.map(|(_, deadline)| deadline)])
    }

    fn poll_output(&mut self) -> Option<ClientOutput<Etcd>> {
        self.outbox.pop()
    }

    /// `Resign` (if leading) and `Session.Close` (revoke), fire and forget.
    fn stop(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        let lease = self.session.map(|session| session.lease);
        if let (Phase::Leader { revision }, Some(key)) = (self.phase, lease) {
            self.outbox
                .push(ClientOutput::LostLeadership { reason: "stopped" });
            self.send(EtcdRequest::Resign {
                key,
                create_revision: revision,
            });
        }
        if let Some(lease) = lease {
            self.send(EtcdRequest::Revoke { lease });
        }
        self.session = None;
        self.rpc = None;
        self.phase = Phase::Idle;
    }

    /// From `Campaign`'s return until the session is `Done` — which happens
    /// at `deadlineLoop`'s first look after the keep-alive deadline, even
    /// before a timer ran.
    fn leadership(&self, now: Instant) -> Option<Leadership> {
        let now = self.outbox.at(now);
        match (self.phase, self.session) {
            (Phase::Leader { revision }, Some(session)) if now < self.done_at(&session) => {
                Some(Leadership {
                    token: Some(revision),
                })
            }
            _ => None,
        }
    }
}
