//! A release's I/O, and backend calls awaited past their bound.
//!
//! Why apart from the driver: a lease call or a release that outlives the
//! driver's bound is not simply dropped — the store may still decide it, and
//! a history that misses the decision judges the next one wrongly
//! (`sim/src/history/order.rs`); and a call dropped mid-way would escape its
//! backend's own bounds (a connection whose query times out is retired, one
//! whose call is dropped is not). The call runs as its own task
//! ([`LateCall`], aborted when dropped) so the driver can report the failure
//! at the bound and still await (and record) the answer when it comes, the
//! same with a history on or off.

use std::sync::Arc;
use std::time::Duration;

use ::tokio::time::timeout;
use tracing::Instrument;

use super::{BackendError, LeaseBackend};
use crate::history::{Event, Recorder};
use crate::id::{FencingToken, OwnerId, Role};
use crate::lease::ReleaseResult;
use crate::time::Instant;

/// A backend call running as its own task, aborted when dropped (so a
/// request abandoned at shutdown does not run on, detached).
pub(super) struct LateCall<T>(pub(super) ::tokio::task::JoinHandle<Result<T, BackendError>>);

impl<T> Drop for LateCall<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A release task's output: (its bound elapsed) the release still running,
/// awaited one bound more for its answer.
pub(super) type ReleaseLanded = Option<(FencingToken, LateCall<(ReleaseResult, Option<Instant>)>)>;

/// Sends one release and logs what came of it; never takes longer than
/// `bound`. A release unanswered at the bound is handed back still running,
/// for its answer to be awaited (and recorded) when it comes (see
/// `Driver::late_calls`).
pub(super) async fn release_lease<B: LeaseBackend>(
    backend: Arc<B>,
    role: Role,
    owner: OwnerId,
    token: FencingToken,
    bound: Duration,
    recorder: &Recorder,
) -> ReleaseLanded {
    recorder.record(|| Event::ReleaseSent { token });
    let call = ::tokio::spawn(
        async move { backend.release_dated(&role, &owner, token).await }.in_current_span(),
    );
    let mut call = LateCall(call);
    let (answer, late) = match timeout(bound, &mut call.0).await {
        Ok(Ok(answer)) => (Ok(answer), None),
        Ok(Err(failed)) => (Ok(Err(BackendError::unavailable(failed))), None),
        Err(elapsed) => (Err(elapsed), Some((token, call))),
    };
    if let Ok(Ok((result, at))) = &answer {
        record_release(recorder, token, *result, *at);
    }
    match answer.map(|done| done.map(|(result, _)| result)) {
        Ok(Ok(ReleaseResult::Released)) => tracing::info!(token = token.get(), "lease released"),
        Ok(Ok(ReleaseResult::NotHeld)) => {
            tracing::debug!(
                token = token.get(),
                "release: lease no longer held with this token"
            );
        }
        Ok(Err(error)) => {
            tracing::warn!(token = token.get(), %error, "release failed; the lease lapses at its expiry");
        }
        Err(_) => tracing::warn!(
            token = token.get(),
            "release unanswered; the lease lapses at its expiry"
        ),
    }
    late
}

/// Records the store's answer to a release of `token`.
pub(super) fn record_release(
    recorder: &Recorder,
    token: FencingToken,
    result: ReleaseResult,
    at: Option<Instant>,
) {
    recorder.record(|| Event::ReleaseHandled {
        token,
        released: result == ReleaseResult::Released,
        store_now_ns: at.map(Instant::as_nanos),
    });
}
