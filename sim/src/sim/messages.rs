//! What travels between hosts (messages) and what the queue holds (events).

use super::*;

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dest {
    Store,
    Downstream,
    Process { pid: u32, incarnation: u32 },
}

#[derive(Clone, Debug)]
pub(super) enum Message {
    LeaseRequest {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        id: RequestId,
        ttl: Duration,
    },
    LeaseResponse {
        id: RequestId,
        result: LeaseResult,
    },
    LeaseFailed {
        id: RequestId,
    },
    Release {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        token: FencingToken,
    },
    Heartbeat {
        pid: u32,
        node: u32,
    },
    Write {
        pid: u32,
        incarnation: u32,
        owner: OwnerId,
        token: FencingToken,
        unit: u64,
    },
}

impl Message {
    /// The process slot that sent it, where the message says.
    pub(super) fn sender(&self) -> Option<u32> {
        match *self {
            Message::LeaseRequest { pid, .. }
            | Message::Release { pid, .. }
            | Message::Heartbeat { pid, .. }
            | Message::Write { pid, .. } => Some(pid),
            _ => None,
        }
    }

    /// Whether it is the store's answer renewing a lease.
    pub(super) fn is_renewal_answer(&self) -> bool {
        matches!(
            self,
            Message::LeaseResponse {
                result: LeaseResult::Renewed { .. },
                ..
            }
        )
    }

    pub(super) fn kind(&self) -> MessageKind {
        match self {
            Message::LeaseRequest { .. } => MessageKind::LeaseRequest,
            Message::LeaseResponse { .. } => MessageKind::LeaseResponse,
            Message::LeaseFailed { .. } => MessageKind::LeaseFailed,
            Message::Release { .. } => MessageKind::Release,
            Message::Heartbeat { .. } => MessageKind::Heartbeat,
            Message::Write { .. } => MessageKind::Write,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum Event {
    Deliver {
        from: u16,
        to: Dest,
        msg: Message,
    },
    ElectorTimer {
        pid: u32,
        incarnation: u32,
        generation: u32,
    },
    HeartbeatTimer {
        pid: u32,
        incarnation: u32,
    },
    WorkTimer {
        pid: u32,
        incarnation: u32,
        generation: u32,
    },
    WorkDone {
        pid: u32,
        incarnation: u32,
        token: FencingToken,
        unit: u64,
    },
    RegistryTimer {
        generation: u32,
    },
    StartNode {
        node: u32,
    },
    FaultStart {
        fault: u32,
    },
    FaultEnd {
        active: u32,
    },
    Recur {
        generator: u32,
    },
    Restart {
        node: u32,
    },
    Heal,
}

/// Who an event is for, for pausing and for dropping events of dead processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Store,
    Downstream,
    Process { pid: u32, incarnation: u32 },
    Engine,
}

impl Event {
    pub(super) fn target(&self) -> Target {
        match *self {
            Event::Deliver { to, .. } => match to {
                Dest::Store => Target::Store,
                Dest::Downstream => Target::Downstream,
                Dest::Process { pid, incarnation } => Target::Process { pid, incarnation },
            },
            Event::ElectorTimer {
                pid, incarnation, ..
            }
            | Event::HeartbeatTimer { pid, incarnation }
            | Event::WorkTimer {
                pid, incarnation, ..
            }
            | Event::WorkDone {
                pid, incarnation, ..
            } => Target::Process { pid, incarnation },
            Event::RegistryTimer { .. } => Target::Store,
            Event::StartNode { .. }
            | Event::FaultStart { .. }
            | Event::FaultEnd { .. }
            | Event::Recur { .. }
            | Event::Restart { .. }
            | Event::Heal => Target::Engine,
        }
    }
}
