//! The DynamoDB table: one lock item, conditional writes, no clock.

use std::collections::VecDeque;

use super::{Condition, DynamoDb, DynamoDbRequest, DynamoDbResponse, LockItem};
use crate::{ClientId, Instant, LockServer, ServerOutput};

/// A table holding the one lock item. See the [module docs](super).
#[derive(Clone, Debug, Default)]
pub struct DynamoDbServer {
    item: Option<LockItem>,
    reported: Option<ClientId>,
    outputs: VecDeque<ServerOutput<DynamoDb>>,
}

impl DynamoDbServer {
    /// The item as stored.
    pub fn item(&self) -> Option<LockItem> {
        self.item
    }

    /// The owner of an unreleased item: the table does not judge expiry.
    fn owner(&self) -> Option<ClientId> {
        self.item
            .filter(|item| !item.released)
            .map(|item| item.owner)
    }

    fn report(&mut self) {
        let owner = self.owner();
        if owner != self.reported {
            self.reported = owner;
            self.outputs.push_back(ServerOutput::Holder {
                holder: owner,
                token: None,
            });
        }
    }

    fn holds(&self, condition: Condition, from: ClientId) -> bool {
        match (condition, self.item) {
            (Condition::Absent, item) => item.is_none(),
            (Condition::Released, Some(item)) => item.released,
            (Condition::Rvn(rvn), Some(item)) => item.rvn == rvn,
            (Condition::OwnerAndRvn(rvn), Some(item)) => item.rvn == rvn && item.owner == from,
            (_, None) => false,
        }
    }

    fn handle(&mut self, from: ClientId, request: DynamoDbRequest) -> DynamoDbResponse {
        match request {
            DynamoDbRequest::Get { id } => DynamoDbResponse::Item {
                id,
                item: self.item,
            },
            DynamoDbRequest::Put {
                id,
                condition,
                rvn,
                lease_duration,
            } => {
                let applied = self.holds(condition, from);
                if applied {
                    self.item = Some(LockItem {
                        owner: from,
                        rvn,
                        lease_duration,
                        released: false,
                    });
                }
                DynamoDbResponse::Written { id, applied }
            }
            DynamoDbRequest::Release { id, rvn, delete } => {
                let applied = self.holds(Condition::OwnerAndRvn(rvn), from);
                if applied && delete {
                    self.item = None;
                } else if let (true, Some(item)) = (applied, self.item.as_mut()) {
                    item.released = true;
                }
                DynamoDbResponse::Written { id, applied }
            }
        }
    }
}

impl LockServer<DynamoDb> for DynamoDbServer {
    fn handle_request(&mut self, from: ClientId, request: DynamoDbRequest, _now: Instant) {
        let response = self.handle(from, request);
        self.outputs
            .push_back(ServerOutput::Reply { to: from, response });
        self.report();
    }

    /// The table has no timers.
    fn handle_timeout(&mut self, _now: Instant) {}

    fn next_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll_output(&mut self) -> Option<ServerOutput<DynamoDb>> {
        self.outputs.pop_front()
    }

    /// DynamoDB is durable: the item survives. Not durable (a table
    /// recreated empty): the item is gone.
    fn restart(&mut self, _now: Instant, durable: bool) {
        if !durable {
            self.item = None;
        }
        self.report();
    }
}
