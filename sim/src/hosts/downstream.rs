//! The `downstream` host: a [`FencedStore`] (or an unfenced one) that the
//! leader's writes go to.

use fenced::{FencedStore, ResourceId};

use super::messages::ToDownstream;
use crate::engine::{Hosts, Outbox};
use crate::observation::{Observation, Observer};

/// The downstream store, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct DownstreamHost {
    pub(crate) resource: ResourceId,
    pub(crate) store: FencedStore<u64>,
}

impl DownstreamHost {
    /// The downstream comes back from a restart: with what it accepted
    /// (`durable`), or empty — forgetting the highest token it accepted, so
    /// a stale write can land again.
    pub(crate) fn restart(&mut self, durable: bool) {
        if !durable {
            self.store = FencedStore::new(self.store.fencing());
        }
    }
}

impl DownstreamHost {
    #[inline(always)]
    pub(crate) fn receive<H: Hosts, O: Observer>(
        &mut self,
        msg: ToDownstream,
        out: &mut Outbox<'_, H, O>,
    ) {
        let ToDownstream::Write {
            pid,
            incarnation,
            owner,
            token,
            unit,
        } = msg;
        let outcome = self
            .store
            .write(&self.resource, token, &owner, unit, out.local_now());
        let names = out.names;
        out.observe(&Observation::WriteHandled {
            from: names.sender_ref(pid, incarnation, &owner),
            token,
            unit,
            outcome: &outcome,
        });
    }
}
