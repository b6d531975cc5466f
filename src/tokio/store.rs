//! An in-process handle on a [`FencedStore`], shared by the work of every
//! elector of the process.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{lock, Clock, SharedStateError};
use crate::fenced_store::{FencedStore, Fencing, WriteOutcome};
use crate::history::{Event, Recorder};
use crate::id::{FencingToken, OwnerId, ResourceId};

const FENCED_STORE: &str = "fenced store";

/// A [`FencedStore`] behind `Arc<Mutex<..>>`: the downstream that the leaders'
/// work writes to, stamping each write with its fencing token.
///
/// Cloning is cheap and shares the store. Each call holds the lock for one
/// synchronous state-machine call, so it is fine to call from async code.
/// Writes are stamped with the [`Clock`]'s now.
pub struct SharedFencedStore<V> {
    store: Arc<Mutex<FencedStore<V>>>,
    /// The number of the last decision, counted while the store's lock is
    /// held, so the numbers follow the store's order (`write-handled`'s
    /// `decision`).
    decisions: Arc<AtomicU64>,
    clock: Clock,
    recorder: Recorder,
}

impl<V> Clone for SharedFencedStore<V> {
    fn clone(&self) -> Self {
        SharedFencedStore {
            store: Arc::clone(&self.store),
            decisions: Arc::clone(&self.decisions),
            clock: self.clock,
            recorder: self.recorder.clone(),
        }
    }
}

impl<V> fmt::Debug for SharedFencedStore<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFencedStore")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl<V> SharedFencedStore<V> {
    /// An empty store; [`Fencing::Disabled`] accepts every write (to show
    /// split-brain, never for real use).
    pub fn new(fencing: Fencing, clock: Clock) -> Self {
        SharedFencedStore {
            store: Arc::new(Mutex::new(FencedStore::new(fencing))),
            decisions: Arc::new(AtomicU64::new(0)),
            clock,
            recorder: Recorder::off(),
        }
    }

    /// Records each write's outcome (`write-handled`, naming the writer, with
    /// the store's number for the decision) into `recorder`. Off by default. Clones made before this call keep
    /// their own recorder.
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = recorder;
        self
    }

    /// Writes `payload` to `resource` for `writer` holding `token`, with the
    /// contract of [`FencedStore::write`]: rejected when `token` is below the
    /// highest accepted one, or was first used by another writer. A rejection
    /// is an outcome, not an error: it is the fence doing its job.
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn write(
        &self,
        resource: &ResourceId,
        token: FencingToken,
        writer: &OwnerId,
        payload: V,
    ) -> Result<WriteOutcome, SharedStateError> {
        let now = self.clock.now();
        let (outcome, decision) = {
            let mut store = lock(&self.store, FENCED_STORE)?;
            let outcome = store.write(resource, token, writer, payload, now);
            (outcome, self.decisions.fetch_add(1, Ordering::Relaxed) + 1)
        };
        self.recorder
            .record(|| Event::write_handled(writer, token, None, &outcome).with_decision(decision));
        if let WriteOutcome::RejectedStale { stale, highest } = &outcome {
            tracing::warn!(%resource, %writer, stale = stale.get(), highest = highest.get(),
                "write rejected: stale fencing token");
        } else if let WriteOutcome::RejectedWrongWriter { token, bound_to } = &outcome {
            tracing::error!(%resource, %writer, token = token.get(), %bound_to,
                "write rejected: token bound to another writer (the lease layer is broken)");
        }
        Ok(outcome)
    }

    /// The highest token accepted for `resource`.
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn highest_token(
        &self,
        resource: &ResourceId,
    ) -> Result<Option<FencingToken>, SharedStateError> {
        Ok(lock(&self.store, FENCED_STORE)?.highest_token(resource))
    }

    /// How many writes `resource` has accepted.
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn accepted_count(&self, resource: &ResourceId) -> Result<u64, SharedStateError> {
        Ok(lock(&self.store, FENCED_STORE)?.accepted_count(resource))
    }
}

impl<V: Clone> SharedFencedStore<V> {
    /// A copy of the last accepted value of `resource`.
    ///
    /// # Errors
    /// [`SharedStateError::Poisoned`] if a thread panicked inside the store.
    pub fn value(&self, resource: &ResourceId) -> Result<Option<V>, SharedStateError> {
        Ok(lock(&self.store, FENCED_STORE)?.value(resource).cloned())
    }
}
