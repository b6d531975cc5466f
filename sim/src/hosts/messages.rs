//! The fenced protocol's messages, one enum per kind of addressee, and its
//! timers.

use std::time::Duration;

use fenced::{FencingToken, LeaseResult, OwnerId, RequestId};

use super::workers::{carries, WorkTimer};
use crate::engine::Envelope;
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
        ttl: Duration,
    },
    /// Release the term `token`.
    Release {
        pid: u32,
        incarnation: u32,
        token: FencingToken,
    },
    /// Node `node` is alive.
    Heartbeat { pid: u32, node: u32 },
}

/// What the downstream receives.
#[derive(Clone, Debug)]
pub(crate) enum ToDownstream {
    /// A unit of work's write, stamped with its term's token.
    Write {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        token: FencingToken,
        unit: u64,
    },
}

/// What a process receives.
#[derive(Clone, Debug)]
pub(crate) enum ToProcess {
    /// The store's answer to request `id`.
    LeaseResponse { id: RequestId, result: LeaseResult },
    /// The store could not answer request `id` (bad input).
    LeaseFailed { id: RequestId },
}

impl Envelope for Message {
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
            | Message::Downstream(ToDownstream::Write { pid, .. }) => Some(pid),
            Message::Process(_) => None,
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
}

carries!(Timer::Work(WorkTimer));
carries!(Message::Downstream(ToDownstream));
