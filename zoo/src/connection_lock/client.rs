//! The PostgreSQL client: one libpq-style connection, one query at a time.

use fenced::earliest;

use super::{ConnectionLock, PgRequest, PgResponse, PgSettings, SessionId};
use crate::outbox::Outbox;
use crate::{ClientId, ClientOutput, Instant, Leadership, LockClient, ServerIndex};

/// The query in flight on a connection (libpq is synchronous: at most one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Query {
    TryLock,
    Ping,
}

/// The client's state; leadership is `Open { holding: true, .. }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Idle,
    /// Waiting to (re)connect at `at`.
    Disconnected {
        at: Instant,
    },
    /// A connection attempt in flight; `id` numbers the connection.
    Connecting {
        id: u64,
        deadline: Instant,
    },
    /// An open connection.
    Open {
        /// The connection's number (its `Connect`'s id).
        conn: u64,
        /// Whether the server's kernel has reset it ([`PgResponse::Closed`]):
        /// its next use fails at once, with nothing sent.
        closed: bool,
        session: SessionId,
        /// Whether this session holds the lock (as far as the client knows).
        holding: bool,
        /// The query in flight and when it times out, or when the next is due.
        query: Option<(Query, u64, Instant)>,
        next_query_at: Instant,
    },
}

/// A PostgreSQL advisory-lock client. See the [module docs](super).
#[derive(Clone, Debug)]
pub struct PgClient {
    settings: PgSettings,
    id: ClientId,
    state: State,
    /// Outputs not yet polled, the clock guard and the request ids.
    outbox: Outbox<ClientOutput<ConnectionLock>>,
}

impl PgClient {
    /// An idle client.
    pub fn new(settings: PgSettings, id: ClientId) -> Self {
        PgClient {
            settings,
            id,
            state: State::Idle,
            outbox: Outbox::new(),
        }
    }

    /// The process identity.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The open connection's session, if any.
    pub fn session(&self) -> Option<SessionId> {
        match self.state {
            State::Open { session, .. } => Some(session),
            _ => None,
        }
    }

    fn send(&mut self, request: PgRequest) {
        self.outbox.push(ClientOutput::Send { to: 0, request });
    }

    fn connect(&mut self, now: Instant) {
        let id = self.outbox.next_request_id();
        self.state = State::Connecting {
            id,
            deadline: now + self.settings.connect_timeout,
        };
        self.send(PgRequest::Connect { id });
    }

    /// The connection failed in use: leadership (if any) ends, the socket is
    /// closed (`Terminate`, which ends the session if it ever arrives; none
    /// on a connection the server's kernel already reset), and a reconnect
    /// is scheduled.
    fn broken(&mut self, now: Instant) {
        if let State::Open {
            conn,
            closed,
            session,
            holding,
            ..
        } = self.state
        {
            if holding {
                self.outbox.push(ClientOutput::LostLeadership {
                    reason: "connection broken",
                });
            }
            if !closed {
                self.send(PgRequest::Terminate { conn, session });
            }
        }
        self.state = State::Disconnected {
            at: now + self.settings.retry_interval,
        };
    }

    /// Sends the query due on an open connection; on one the server's
    /// kernel reset, the query fails at once (libpq's send or read finds
    /// the socket closed) and the connection is broken.
    fn query_if_due(&mut self, now: Instant) {
        let State::Open {
            conn,
            closed,
            session,
            holding,
            query: None,
            next_query_at,
        } = self.state
        else {
            return;
        };
        if now < next_query_at {
            return;
        }
        if closed {
            self.broken(now);
            return;
        }
        let id = self.outbox.next_request_id();
        let (kind, request) = if holding {
            (Query::Ping, PgRequest::Ping { conn, session, id })
        } else {
            (Query::TryLock, PgRequest::TryLock { conn, session, id })
        };
        self.state = State::Open {
            conn,
            closed,
            session,
            holding,
            query: Some((kind, id, now + self.settings.query_timeout)),
            next_query_at,
        };
        self.send(request);
    }
}

impl LockClient<ConnectionLock> for PgClient {
    fn start(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        if self.state == State::Idle {
            self.connect(now);
        }
    }

    fn handle_response(&mut self, _from: ServerIndex, response: PgResponse, now: Instant) {
        let now = self.outbox.observe(now);
        match (self.state, response) {
            (State::Connecting { id, .. }, PgResponse::Connected { id: got, session })
                if got == id =>
            {
                self.state = State::Open {
                    conn: id,
                    closed: false,
                    session,
                    holding: false,
                    query: None,
                    next_query_at: now,
                };
            }
            (State::Connecting { id, .. }, PgResponse::Closed { conn }) if conn == id => {
                // Refused: `PQconnectdb` fails at once.
                self.broken(now);
            }
            (
                State::Open { conn, session, .. },
                PgResponse::KeepaliveProbe {
                    conn: probed,
                    session: of,
                },
            ) if probed == conn && of == session => {
                // The kernel answers the probe; the process does nothing
                // else (it may be paused): no query is due because of it.
                self.send(PgRequest::KeepaliveAck { conn, session });
                return;
            }
            (
                State::Open {
                    conn, query: None, ..
                },
                PgResponse::Closed { conn: reset },
            ) if reset == conn => {
                // Nothing waits on the socket: the client learns it was
                // reset when it next uses it.
                if let State::Open { closed, .. } = &mut self.state {
                    *closed = true;
                }
                return;
            }
            (
                State::Open {
                    conn,
                    closed,
                    session,
                    holding,
                    query: Some((kind, id, _)),
                    ..
                },
                answer,
            ) => {
                let answered = match answer {
                    PgResponse::Locked { id: got, ok, .. } if got == id => Some(Some(ok)),
                    PgResponse::Pong { id: got, .. } if got == id => Some(None),
                    PgResponse::ConnectionReset { id: got, .. } if got == id => {
                        self.broken(now);
                        return;
                    }
                    // The query waiting on a socket the server's kernel
                    // reset fails at once.
                    PgResponse::Closed { conn: reset } if reset == conn => {
                        self.state = State::Open {
                            conn,
                            closed: true,
                            session,
                            holding,
                            query: None,
                            next_query_at: now,
                        };
                        self.broken(now);
                        return;
                    }
                    _ => None,
                };
                let Some(locked) = answered else {
                    return;
                };
                debug_assert_eq!(kind == Query::TryLock, locked.is_some());
                let now_holding = holding || locked == Some(true);
                if now_holding && !holding {
                    self.outbox.push(ClientOutput::BecameLeader { token: None });
                }
                let interval = if now_holding {
                    self.settings.check_interval
                } else {
                    self.settings.retry_interval
                };
                self.state = State::Open {
                    conn,
                    closed,
                    session,
                    holding: now_holding,
                    query: None,
                    next_query_at: now + interval,
                };
            }
            // Anything else is an answer on a connection already given up
            // (never read) or a stale duplicate.
            _ => {}
        }
        self.handle_timeout(now);
    }

    fn handle_timeout(&mut self, now: Instant) {
        let now = self.outbox.observe(now);
        match self.state {
            State::Disconnected { at } if now >= at => self.connect(now),
            State::Connecting { deadline, .. } if now >= deadline => self.broken(now),
            State::Open {
                query: Some((_, _, deadline)),
                ..
            } if now >= deadline => self.broken(now),
            _ => {}
        }
        self.query_if_due(now);
    }

    fn next_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Idle => None,
            State::Disconnected { at } => Some(at),
            State::Connecting { deadline, .. } => Some(deadline),
            State::Open {
                query,
                next_query_at,
                ..
            } => match query {
                Some((_, _, deadline)) => Some(deadline),
                None => earliest(Some(next_query_at), None),
            },
        }
    }

    fn poll_output(&mut self) -> Option<ClientOutput<ConnectionLock>> {
        self.outbox.pop()
    }

    /// `pg_advisory_unlock`, then close the connection; leadership ends at
    /// once. Both are fire-and-forget: if they are lost the session lingers
    /// until the server's keepalive verdict.
    fn stop(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        if let State::Open {
            conn,
            closed,
            session,
            holding,
            ..
        } = self.state
        {
            if holding {
                self.outbox
                    .push(ClientOutput::LostLeadership { reason: "stopped" });
            }
            if !closed {
                if holding {
                    let id = self.outbox.next_request_id();
                    self.send(PgRequest::Unlock { conn, session, id });
                }
                self.send(PgRequest::Terminate { conn, session });
            }
        }
        self.state = State::Idle;
    }

    /// The process died and its kernel closed the connection (a FIN, no
    /// `Terminate`): the backend reads end-of-file and exits
    /// (`src/backend/tcop/postgres.c`, `SocketBackend`: "unexpected EOF on
    /// client connection", then `proc_exit`), and a session's advisory
    /// locks are released when it ends (PostgreSQL docs, "Advisory Locks").
    /// The server's side of it is the same as `Terminate`'s, so that is what
    /// is sent. A connection attempt in flight sends nothing: its session,
    /// if the server opens one, holds no lock.
    fn kernel_closed(&mut self, now: Instant) {
        let _ = self.outbox.observe(now);
        if let State::Open {
            conn,
            closed: false,
            session,
            ..
        } = self.state
        {
            self.send(PgRequest::Terminate { conn, session });
        }
        self.state = State::Idle;
    }

    /// Leading while the connection that took the lock is believed alive:
    /// nothing here looks at a clock.
    fn leadership(&self, _now: Instant) -> Option<Leadership> {
        match self.state {
            State::Open { holding: true, .. } => Some(Leadership { token: None }),
            _ => None,
        }
    }
}
