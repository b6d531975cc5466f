//! The `downstream` host: a [`FencedStore`] (or an unfenced one) that the
//! leader's writes go to.

use fenced::{FencedStore, ResourceId};

use super::messages::{ToDownstream, ToWorker};
use super::workers::Carries;
use crate::engine::{Address, Hosts, Outbox};
use crate::observation::{Observation, Observer};

/// The downstream store, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct DownstreamHost {
    pub(crate) resource: ResourceId,
    pub(crate) store: FencedStore<u64>,
    /// Its sessions' epoch: one more after each restart, which resets every
    /// session opened before (`hosts/session.rs`).
    pub(crate) epoch: u32,
}

impl DownstreamHost {
    /// A downstream of `store` for `resource`.
    pub(crate) fn new(resource: ResourceId, store: FencedStore<u64>) -> Self {
        DownstreamHost {
            resource,
            store,
            epoch: 1,
        }
    }

    /// The downstream comes back from a restart: with what it accepted
    /// (`durable`), or empty — forgetting the highest token it accepted, so
    /// a stale write can land again.
    pub(crate) fn restart(&mut self, durable: bool) {
        if !durable {
            self.store = FencedStore::new(self.store.fencing());
        }
    }

    /// The downstream goes down for a restart: every session open to it is
    /// reset. Returns the epoch of those sessions.
    pub(crate) fn went_down(&mut self) -> u32 {
        let before = self.epoch;
        self.epoch = self.epoch.wrapping_add(1).max(1);
        before
    }

    #[inline(always)]
    pub(crate) fn receive<H, O>(&mut self, msg: ToDownstream, out: &mut Outbox<'_, H, O>)
    where
        H: Hosts<Message: Carries<ToDownstream> + Carries<ToWorker>>,
        O: Observer,
    {
        let (pid, incarnation, token, unit, tag) = match msg {
            ToDownstream::Write {
                pid,
                incarnation,
                token,
                unit,
                tag,
            } => (pid, incarnation, token, unit, tag),
            ToDownstream::Open {
                pid,
                incarnation,
                conn,
                step,
            } => {
                let reply = ToWorker::Opened {
                    conn,
                    step,
                    epoch: self.epoch,
                };
                out.send(
                    Address::Process { pid, incarnation },
                    H::Message::wrap(reply),
                );
                return;
            }
        };
        if tag.reset_by(self.epoch) {
            let msg = ToDownstream::Write {
                pid,
                incarnation,
                token,
                unit,
                tag,
            };
            return out.refused(&H::Message::wrap(msg));
        }
        // The writer, named by its slot and life as the lease store names a
        // requester (its owner id text would double the message's size).
        let names = out.names;
        let owner = names.owner_at(pid, incarnation);
        let outcome = self
            .store
            .write(&self.resource, token, &owner, unit, out.local_now());
        out.observe(&Observation::WriteHandled {
            from: names.sender_ref(pid, incarnation, &owner),
            token,
            unit,
            outcome: &outcome,
        });
        if tag.on_session() {
            let reply = ToWorker::WriteAnswered { tag };
            out.send(
                Address::Process { pid, incarnation },
                H::Message::wrap(reply),
            );
        }
    }
}
