//! The `downstream` host: a [`FencedStore`] (or an unfenced one) that the
//! leader's writes go to.

use fenced::{FencedStore, ResourceId};

use super::messages::ToDownstream;
use super::FencedHosts;
use crate::engine::Outbox;
use crate::observation::{Observation, Observer};

/// The downstream store, as a sans-IO host.
#[derive(Debug)]
pub(crate) struct DownstreamHost {
    pub(crate) resource: ResourceId,
    pub(crate) store: FencedStore<u64>,
}

impl DownstreamHost {
    pub(super) fn receive<O: Observer>(
        &mut self,
        msg: ToDownstream,
        out: &mut Outbox<'_, FencedHosts, O>,
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
