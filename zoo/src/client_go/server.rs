//! The API server's object store for the one `Lease`.

use std::collections::VecDeque;

use super::{ApiRequest, ApiResponse, ApiResult, ClientGo, LeaseRecord};
use crate::{ClientId, Instant, LockServer, ServerOutput};

/// The stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    record: LeaseRecord,
    resource_version: u64,
    /// Who wrote a non-empty holder (ground truth only).
    holder: Option<ClientId>,
}

/// The API server: `Get`/`Create`/`Update` with `resourceVersion`
/// compare-and-swap. See the [module docs](super).
#[derive(Clone, Debug, Default)]
pub struct ApiServer {
    lease: Option<Stored>,
    /// The store's revision counter: every write takes the next value.
    revision: u64,
    outputs: VecDeque<ServerOutput<ClientGo>>,
}

impl ApiServer {
    /// An empty store.
    pub fn new() -> Self {
        ApiServer::default()
    }

    /// The stored record and its resourceVersion, if any.
    pub fn lease(&self) -> Option<(&LeaseRecord, u64)> {
        self.lease
            .as_ref()
            .map(|stored| (&stored.record, stored.resource_version))
    }

    fn write(&mut self, from: ClientId, record: LeaseRecord) -> ApiResult {
        let before = self.truth();
        self.revision += 1;
        let holder = (!record.holder_identity.is_empty()).then_some(from);
        self.lease = Some(Stored {
            record: record.clone(),
            resource_version: self.revision,
            holder,
        });
        let after = self.truth();
        if before != after {
            self.outputs.push_back(ServerOutput::Holder {
                holder: after.0,
                token: after.1,
            });
        }
        ApiResult::Lease {
            record,
            resource_version: self.revision,
        }
    }

    /// The record's holder and `leaseTransitions`, as the truth lane sees it.
    fn truth(&self) -> (Option<ClientId>, Option<u64>) {
        match &self.lease {
            Some(stored) => (
                stored.holder,
                stored.holder.map(|_| stored.record.lease_transitions),
            ),
            None => (None, None),
        }
    }
}

impl LockServer<ClientGo> for ApiServer {
    fn handle_request(&mut self, from: ClientId, request: ApiRequest, _now: Instant) {
        let (id, result) = match request {
            ApiRequest::Get { id } => (
                id,
                match &self.lease {
                    Some(stored) => ApiResult::Lease {
                        record: stored.record.clone(),
                        resource_version: stored.resource_version,
                    },
                    None => ApiResult::NotFound,
                },
            ),
            ApiRequest::Create { id, record } => match self.lease {
                Some(_) => (id, ApiResult::AlreadyExists),
                None => (id, self.write(from, record)),
            },
            ApiRequest::Update {
                id,
                record,
                resource_version,
            } => match &self.lease {
                None => (id, ApiResult::NotFound),
                Some(stored) if stored.resource_version != resource_version => {
                    (id, ApiResult::Conflict)
                }
                Some(_) => (id, self.write(from, record)),
            },
        };
        debug_assert!(self
            .lease
            .as_ref()
            .is_none_or(|stored| stored.resource_version == self.revision));
        self.outputs.push_back(ServerOutput::Reply {
            to: from,
            response: ApiResponse { id, result },
        });
    }

    /// The API server keeps no timers: it never judges a lease's expiry.
    fn handle_timeout(&mut self, _now: Instant) {}

    fn next_timeout(&self) -> Option<Instant> {
        None
    }

    fn poll_output(&mut self) -> Option<ServerOutput<ClientGo>> {
        self.outputs.pop_front()
    }

    /// The object lives in etcd: a durable restart keeps it. A non-durable
    /// one (etcd data lost) empties the store; the revision counter keeps
    /// counting so no resourceVersion is ever reused.
    fn restart(&mut self, _now: Instant, durable: bool) {
        if !durable
            && self
                .lease
                .take()
                .is_some_and(|stored| stored.holder.is_some())
        {
            self.outputs.push_back(ServerOutput::Holder {
                holder: None,
                token: None,
            });
        }
    }
}
