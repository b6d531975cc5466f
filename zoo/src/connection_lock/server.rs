//! The PostgreSQL server: sessions, their keepalive verdicts, and the one
//! advisory lock.

use std::collections::{BTreeMap, VecDeque};

use fenced::LatestNow;

use super::{ConnectionLock, PgRequest, PgResponse, PgSettings, SessionId};
use crate::{ClientId, Instant, LockServer, ServerOutput};

/// One backend: a connection and its session.
#[derive(Clone, Copy, Debug)]
struct Session {
    client: ClientId,
    /// The client's number for the TCP connection the session lives on.
    conn: u64,
    /// The last time anything arrived on the connection (server clock).
    last_heard: Instant,
    /// Keepalive probes sent since then.
    probes_sent: u32,
}

/// The advisory lock: which session holds it, how many times (locks stack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    session: SessionId,
    count: u32,
}

/// A PostgreSQL server with one advisory lock key. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct PgServer {
    settings: PgSettings,
    sessions: BTreeMap<SessionId, Session>,
    lock: Option<Held>,
    /// Session ids are never reused (backend keys of a new process differ).
    last_session: u64,
    latest_now: LatestNow,
    outputs: VecDeque<ServerOutput<ConnectionLock>>,
}

impl PgServer {
    /// A server with no sessions.
    pub fn new(settings: PgSettings) -> Self {
        PgServer {
            settings,
            sessions: BTreeMap::new(),
            lock: None,
            last_session: 0,
            latest_now: LatestNow::default(),
            outputs: VecDeque::new(),
        }
    }

    /// The session holding the lock and its owner, if any.
    pub fn holder(&self) -> Option<(SessionId, ClientId)> {
        let held = self.lock?;
        let session = self
            .sessions
            .get(&held.session)
            .expect("the lock is held only by a live session");
        Some((held.session, session.client))
    }

    /// How many sessions are open.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// When the next probe or verdict is due for `session`.
    fn due(&self, session: &Session) -> Instant {
        session.last_heard
            + self.settings.tcp_keepalives_idle
            + self.settings.tcp_keepalives_interval * session.probes_sent
    }

    /// The session ends: its advisory locks are released.
    fn end_session(&mut self, id: SessionId) {
        self.sessions.remove(&id);
        if self.lock.is_some_and(|held| held.session == id) {
            self.lock = None;
            self.outputs.push_back(ServerOutput::Holder {
                holder: None,
                token: None,
            });
        }
    }

    fn reply(&mut self, to: ClientId, response: PgResponse) {
        self.outputs.push_back(ServerOutput::Reply { to, response });
    }
}

impl LockServer<ConnectionLock> for PgServer {
    fn handle_request(&mut self, from: ClientId, request: PgRequest, now: Instant) {
        let now = self.latest_now.observe(now);
        self.handle_timeout(now);
        let (conn, session_id, id) = match request {
            PgRequest::Connect { id } => {
                self.last_session += 1;
                let session = SessionId(self.last_session);
                self.sessions.insert(
                    session,
                    Session {
                        client: from,
                        conn: id,
                        last_heard: now,
                        probes_sent: 0,
                    },
                );
                self.reply(from, PgResponse::Connected { id, session });
                return;
            }
            PgRequest::Terminate { session, .. } => {
                self.end_session(session);
                return;
            }
            PgRequest::KeepaliveAck { session, .. } => {
                if let Some(state) = self.sessions.get_mut(&session) {
                    state.last_heard = now;
                    state.probes_sent = 0;
                }
                return;
            }
            PgRequest::TryLock { conn, session, id }
            | PgRequest::Ping { conn, session, id }
            | PgRequest::Unlock { conn, session, id } => (conn, session, id),
        };
        let Some(state) = self.sessions.get_mut(&session_id) else {
            // An unknown connection: the kernel resets it.
            self.reply(from, PgResponse::ConnectionReset { conn, id });
            return;
        };
        state.last_heard = now;
        state.probes_sent = 0;
        let response = match request {
            PgRequest::TryLock { .. } => {
                let ok = match self.lock.as_mut() {
                    None => {
                        self.lock = Some(Held {
                            session: session_id,
                            count: 1,
                        });
                        self.outputs.push_back(ServerOutput::Holder {
                            holder: Some(from),
                            token: None,
                        });
                        true
                    }
                    Some(held) if held.session == session_id => {
                        held.count += 1;
                        true
                    }
                    Some(_) => false,
                };
                PgResponse::Locked { conn, id, ok }
            }
            PgRequest::Ping { .. } => PgResponse::Pong { conn, id },
            PgRequest::Unlock { .. } => {
                let ok = match self.lock.as_mut() {
                    Some(held) if held.session == session_id => {
                        held.count -= 1;
                        if held.count == 0 {
                            self.lock = None;
                            self.outputs.push_back(ServerOutput::Holder {
                                holder: None,
                                token: None,
                            });
                        }
                        true
                    }
                    _ => false,
                };
                PgResponse::Unlocked { conn, id, ok }
            }
            _ => unreachable!("connection requests returned above"),
        };
        self.reply(from, response);
    }

    /// Sends due keepalive probes and ends sessions whose last probe went
    /// unanswered for an interval.
    fn handle_timeout(&mut self, now: Instant) {
        let now = self.latest_now.observe(now);
        // A late call (the server was paused) catches up probe by probe; each
        // pass moves every due session one step, so `count + 1` passes do all.
        for _ in 0..=self.settings.tcp_keepalives_count {
            if !self.keepalive_step(now) {
                break;
            }
        }
    }

    fn next_timeout(&self) -> Option<Instant> {
        self.sessions
            .values()
            .map(|session| self.due(session))
            .min()
    }

    fn poll_output(&mut self) -> Option<ServerOutput<ConnectionLock>> {
        self.outputs.pop_front()
    }

    /// The postmaster and its backends die, and the machine's kernel resets
    /// every connection they had open: each session's client hears
    /// [`PgResponse::Closed`] at once (a libpq client learns it at its next
    /// use of the connection). The sessions, and the lock, end when the
    /// server is back ([`restart`](LockServer::restart)): while it is down
    /// nobody can ask, and the holder the run records changes then, as for
    /// every design.
    fn went_down(&mut self) {
        let closed: Vec<(ClientId, u64)> = self
            .sessions
            .values()
            .map(|session| (session.client, session.conn))
            .collect();
        for (client, conn) in closed {
            self.reply(client, PgResponse::Closed { conn });
        }
    }

    /// A PostgreSQL restart ends every session, durable or not: advisory
    /// locks live in shared memory only.
    fn restart(&mut self, now: Instant, _durable: bool) {
        let _ = self.latest_now.observe(now);
        let ids: Vec<SessionId> = self.sessions.keys().copied().collect();
        for id in ids {
            self.end_session(id);
        }
        debug_assert!(self.lock.is_none());
    }
}

impl PgServer {
    /// One keepalive step for every due session; whether any was due.
    fn keepalive_step(&mut self, now: Instant) -> bool {
        let due: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, session)| self.due(session) <= now)
            .map(|(id, _)| *id)
            .collect();
        let any = !due.is_empty();
        for id in due {
            let session = self.sessions[&id];
            if session.probes_sent >= self.settings.tcp_keepalives_count {
                self.end_session(id);
            } else {
                let state = self.sessions.get_mut(&id).expect("listed above");
                state.probes_sent += 1;
                let (client, conn) = (state.client, state.conn);
                self.reply(client, PgResponse::KeepaliveProbe { conn, session: id });
            }
        }
        any
    }
}
