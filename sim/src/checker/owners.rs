//! `unique-owner`: no two live processes share one owner identity.
//!
//! Owner ids are what the lease store and the downstream tell holders apart
//! by; two processes behind one id would both lead on one token and every
//! other invariant would be blind to it. The part keeps its own index of
//! live owners (the model knows each slot's owner, but answering "who else
//! runs as this id?" from it would be a scan per start).

use std::collections::BTreeMap;

use fenced::OwnerId;

use super::findings::Findings;
use crate::observation::{ProcessId, ProcessRef, SimTime};
use crate::report::Invariant;

/// Every live process by owner id.
#[derive(Clone, Debug, Default)]
pub(super) struct UniqueOwner {
    live: BTreeMap<OwnerId, ProcessId>,
}

impl UniqueOwner {
    /// A process started as `p.owner`: a violation if another live process
    /// already runs as that id.
    pub(super) fn started(&mut self, now: SimTime, p: ProcessRef<'_>, sink: &mut Findings) {
        if let Some(other) = self.live.insert(p.owner.clone(), p.id) {
            let detail = format!(
                "process {} started as owner {} while process {} still runs as {}: two live processes share one owner id",
                p.id.0, p.owner, other.0, p.owner
            );
            sink.violate(Invariant::UniqueOwner, now, detail, Vec::new());
        }
    }

    /// Process `p` died: its id is free again — unless another process
    /// took it over meanwhile (a violation already reported).
    pub(super) fn ended(&mut self, p: ProcessRef<'_>) {
        if self.live.get(p.owner) == Some(&p.id) {
            self.live.remove(p.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::tests::{at, invariants_of, Cast};

    /// Proves the part alone flags a second live process under a live id
    /// (another slot), and not the same id again after its process died.
    #[test]
    fn a_twin_breaks_it_a_restart_under_the_same_id_does_not() {
        let cast = Cast::new();
        let (mut part, mut sink) = (UniqueOwner::default(), Findings::default());
        part.started(at(0.0), cast.a(), &mut sink);
        part.ended(cast.a());
        // Almost: the same id in the same slot once the first died.
        part.started(at(2.0), cast.a(), &mut sink);
        assert!(invariants_of(&sink).is_empty());
        // Broken: another slot under the id of a live process.
        part.started(at(4.0), cast.process(5, 1, 1, 0), &mut sink);
        assert_eq!(invariants_of(&sink), ["unique-owner"]);
        // The first's death does not free the id the twin still runs as.
        part.ended(cast.a());
        part.started(at(6.0), cast.process(6, 1, 1, 0), &mut sink);
        assert_eq!(invariants_of(&sink), ["unique-owner", "unique-owner"]);
    }
}
