//! The fenced protocol's messages, one enum per kind of addressee, and its
//! timers.

use fenced::{FencingToken, LeaseResult, RequestId};

use super::session::{CallTag, Reply};
use super::workers::{carries, WorkTimer};
use crate::engine::{stream_key, Address, Envelope, StreamKey};
use crate::observation::{MessageFacts, MessageKind};

/// Every message of the protocol, by addressee.
#[derive(Clone, Debug)]
pub(crate) enum Message {
    /// To the lease store.
    Store(ToStore),
    /// To the downstream.
    Downstream(ToDownstream),
    /// To a node's process.
    Process(ToProcess),
    /// To a process's worker (from the downstream).
    Worker(ToWorker),
}

/// Which of a fenced process's sessions to the lease store: the elector's
/// (leases and releases) or the heartbeat's (the registry), each a store
/// of its own for real (`fenced::postgres`), so each its own connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoreSession {
    /// The elector's.
    Lease,
    /// The heartbeat's.
    Registry,
}

/// What the lease store receives.
#[derive(Clone, Debug)]
pub(crate) enum ToStore {
    /// Acquire or renew the role's lease.
    /// The sender is named by slot and life, not by its owner id (see
    /// `Lives::owner_at`).
    LeaseRequest {
        pid: u32,
        incarnation: u32,
        id: RequestId,
        /// The lease's TTL in nanoseconds (a `Duration` is twice the size,
        /// and the message must leave its event within a cache line).
        ttl_ns: u64,
        tag: CallTag,
    },
    /// Release the term `token`.
    Release {
        pid: u32,
        incarnation: u32,
        token: FencingToken,
        tag: CallTag,
    },
    /// Node `node` is alive.
    Heartbeat {
        pid: u32,
        incarnation: u32,
        node: u32,
        tag: CallTag,
    },
    /// Step `step` of opening connection `conn` of a process's session.
    Open {
        pid: u32,
        incarnation: u32,
        session: StoreSession,
        conn: u32,
        step: u8,
    },
}

/// What the downstream receives.
#[derive(Clone, Debug)]
pub(crate) enum ToDownstream {
    /// A unit of work's write, stamped with its term's token.
    Write {
        pid: u32,
        incarnation: u32,
        token: FencingToken,
        unit: u64,
        tag: CallTag,
    },
    /// Step `step` of opening connection `conn` of a worker's session.
    Open {
        pid: u32,
        incarnation: u32,
        conn: u32,
        step: u8,
    },
}

/// What a worker receives (the downstream's answers on its session).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ToWorker {
    /// Step `step` of connection `conn`'s open, answered at `epoch`.
    Opened { conn: u32, step: u8, epoch: u32 },
    /// The write sent with `tag` was handled.
    WriteAnswered { tag: CallTag },
}

/// What a process receives.
#[derive(Clone, Debug)]
pub(crate) enum ToProcess {
    /// The store's answer to a request: `reply` names its call on the
    /// lease session, or its elector id without sessions.
    LeaseResponse { result: LeaseResult, reply: Reply },
    /// The store could not answer the request (bad input).
    LeaseFailed { reply: Reply },
    /// The release sent with `tag` was handled.
    Released { tag: CallTag },
    /// The heartbeat sent with `tag` was handled.
    HeartbeatAnswered { tag: CallTag },
    /// Step `step` of connection `conn`'s open, answered at `epoch`.
    Opened {
        session: StoreSession,
        conn: u32,
        step: u8,
        epoch: u32,
    },
}

impl StoreSession {
    /// Its number in its process's stream keys: the lease store's two,
    /// then the worker's (`WORKER_SESSION`).
    fn number(self) -> u8 {
        match self {
            StoreSession::Lease => 0,
            StoreSession::Registry => 1,
        }
    }
}

/// The number of a process's session to the downstream (every protocol's
/// worker) in its stream keys, after the lease store's two.
const WORKER_SESSION: u8 = 2;

/// The stream of a worker's message (`ToDownstream` or `ToWorker`), if it
/// travels on a session.
pub(crate) fn worker_message_stream(
    down: Option<&ToDownstream>,
    back: Option<&ToWorker>,
    to: Address,
) -> Option<StreamKey> {
    let worker = |pid: u32, conn: u32, up: bool| Some(stream_key(pid, WORKER_SESSION, conn, up));
    match (down, back, to) {
        (Some(ToDownstream::Write { pid, tag, .. }), _, _) if tag.on_session() => {
            worker(*pid, tag.conn, true)
        }
        (Some(ToDownstream::Open { pid, conn, .. }), _, _) => worker(*pid, *conn, true),
        (_, Some(ToWorker::Opened { conn, .. }), Address::Process { pid, .. }) => {
            worker(pid, *conn, false)
        }
        (_, Some(ToWorker::WriteAnswered { tag }), Address::Process { pid, .. }) => {
            worker(pid, tag.conn, false)
        }
        _ => None,
    }
}

impl Envelope for Message {
    fn stream(&self, to: Address) -> Option<StreamKey> {
        let up = |pid: u32, session: StoreSession, conn: u32| {
            Some(stream_key(pid, session.number(), conn, true))
        };
        let back = |session: StoreSession, conn: u32| match to {
            Address::Process { pid, .. } => Some(stream_key(pid, session.number(), conn, false)),
            Address::Server(_) => None,
        };
        match self {
            Message::Store(ToStore::LeaseRequest { pid, tag, .. })
            | Message::Store(ToStore::Release { pid, tag, .. })
                if tag.on_session() =>
            {
                up(*pid, StoreSession::Lease, tag.conn)
            }
            Message::Store(ToStore::Heartbeat { pid, tag, .. }) if tag.on_session() => {
                up(*pid, StoreSession::Registry, tag.conn)
            }
            Message::Store(ToStore::Open {
                pid, session, conn, ..
            }) => up(*pid, *session, *conn),
            Message::Process(ToProcess::LeaseResponse { reply, .. })
            | Message::Process(ToProcess::LeaseFailed { reply })
                if reply.on_session() =>
            {
                back(StoreSession::Lease, reply.conn())
            }
            Message::Process(ToProcess::Released { tag }) if tag.on_session() => {
                back(StoreSession::Lease, tag.conn)
            }
            Message::Process(ToProcess::HeartbeatAnswered { tag }) if tag.on_session() => {
                back(StoreSession::Registry, tag.conn)
            }
            Message::Process(ToProcess::Opened { session, conn, .. }) => back(*session, *conn),
            Message::Downstream(msg) => worker_message_stream(Some(msg), None, to),
            Message::Worker(msg) => worker_message_stream(None, Some(msg), to),
            _ => None,
        }
    }

    fn facts(&self) -> MessageFacts {
        MessageFacts {
            kind: self.kind(),
            renewal_answer: self.is_renewal_answer(),
        }
    }

    fn sender(&self) -> Option<u32> {
        match *self {
            Message::Store(ToStore::LeaseRequest { pid, .. })
            | Message::Store(ToStore::Release { pid, .. })
            | Message::Store(ToStore::Heartbeat { pid, .. })
            | Message::Store(ToStore::Open { pid, .. })
            | Message::Downstream(ToDownstream::Write { pid, .. })
            | Message::Downstream(ToDownstream::Open { pid, .. }) => Some(pid),
            Message::Process(_) | Message::Worker(_) => None,
        }
    }
}

impl Message {
    /// Its kind, for drop observations.
    fn kind(&self) -> MessageKind {
        match self {
            Message::Store(ToStore::LeaseRequest { .. }) => MessageKind::LeaseRequest,
            Message::Store(ToStore::Release { .. }) => MessageKind::Release,
            Message::Store(ToStore::Heartbeat { .. }) => MessageKind::Heartbeat,
            Message::Downstream(ToDownstream::Write { .. }) => MessageKind::Write,
            Message::Process(ToProcess::LeaseResponse { .. }) => MessageKind::LeaseResponse,
            Message::Process(ToProcess::LeaseFailed { .. }) => MessageKind::LeaseFailed,
            Message::Store(ToStore::Open { .. })
            | Message::Downstream(ToDownstream::Open { .. }) => MessageKind::SessionOpen,
            Message::Process(ToProcess::Opened { .. })
            | Message::Worker(ToWorker::Opened { .. }) => MessageKind::SessionOpened,
            Message::Process(ToProcess::Released { .. } | ToProcess::HeartbeatAnswered { .. })
            | Message::Worker(ToWorker::WriteAnswered { .. }) => MessageKind::CallAnswer,
        }
    }

    /// Whether it answers a renewal (a lost one is a renewal lost).
    fn is_renewal_answer(&self) -> bool {
        matches!(
            self,
            Message::Process(ToProcess::LeaseResponse {
                result: LeaseResult::Renewed { .. },
                ..
            })
        )
    }
}

/// Every timer of the protocol.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Timer {
    /// A process's elector is due (`generation` tells a re-armed one apart).
    Elector { generation: u32 },
    /// A process heartbeats.
    Heartbeat,
    /// A process's worker: its next unit, or a unit's write.
    Work(WorkTimer),
    /// The registry's earliest expiry.
    Registry { generation: u32 },
    /// A graceful stop of the process (from a `stop` fault).
    Stop,
    /// The process's work fails (from an `abdicate` fault).
    WorkFails,
    /// A process's session is due (`generation` tells a re-armed one
    /// apart).
    Session {
        session: StoreSession,
        generation: u32,
    },
    /// The lease store restarted while at `epoch`: the process's session
    /// to it is reset.
    SessionReset { session: StoreSession, epoch: u32 },
    /// The lease store refused the connect of the session's connection
    /// `conn`: it was down (see `Hosts::refusal`).
    SessionRefused { session: StoreSession, conn: u32 },
}

carries!(Timer::Work(WorkTimer));
carries!(Message::Downstream(ToDownstream));
carries!(Message::Worker(ToWorker));
