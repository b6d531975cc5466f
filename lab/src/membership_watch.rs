//! The live set, watched as a membership consumer watches it.
//!
//! The simulator's registry announces each change of the live set when it
//! happens — a join with the heartbeat that made it, a leave at the instant
//! the node's liveness TTL runs out — and the checker counts joins, leaves
//! and flaps from those announcements. PostgreSQL announces nothing: a node
//! leaves the live set when the database clock passes its `expires_at`, and
//! only a reader of the live set can tell. In a real run the nodes report
//! their own joins (a heartbeat answered `joined`), but nobody reports a
//! leave, and a join whose answer never reached its node (a heartbeat held
//! back by a cut, given up by its node, executed when the cut healed) is
//! not reported either: `membership-heartbeat-loss` then flapped in the
//! database and showed no flap in its history.
//!
//! So the runner reads the live set itself, as an application that follows
//! membership would: [`PostgresRegistry::try_live_nodes`] on a connection of
//! its own (straight to PostgreSQL, no proxy: the registry's own view; on
//! the store's clock when the run moves it), every [`poll_interval`], which
//! records each difference from the previous answer as `member-joined` /
//! `member-left` in the lab's history. A leave is seen at most one poll
//! after the TTL ran out; the history's merge deduplicates the joins the
//! nodes report too.

use std::time::Duration;

use fenced::history::Recorder;
use fenced::postgres::{Namespace, PostgresOptions, PostgresRegistry, PostgresStore};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How often the live set is read: a tenth of the heartbeat interval, at
/// least 5 ms and at most 100 ms.
pub fn poll_interval(heartbeat_interval: Duration) -> Duration {
    (heartbeat_interval / 10).clamp(Duration::from_millis(5), Duration::from_millis(100))
}

/// The watcher, running until [`stop`](Self::stop).
pub struct MembershipWatch {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl MembershipWatch {
    /// Starts reading the live set of the registry in `namespace` at `url`
    /// every `poll`, recording its changes into `recorder`.
    ///
    /// # Errors
    /// The URL or options are invalid (nothing is connected yet: a failed
    /// read is retried at the next poll).
    pub fn start(
        url: &str,
        namespace: Namespace,
        liveness_ttl: Duration,
        poll: Duration,
        recorder: Recorder,
    ) -> Result<MembershipWatch, String> {
        let options = PostgresOptions::default()
            .with_namespace(namespace)
            .with_query_timeout(Duration::from_secs(2))
            .with_recorder(recorder);
        let registry: PostgresRegistry = PostgresStore::new(url, options)
            .map_err(|e| e.to_string())?
            .registry(liveness_ttl)
            .map_err(|e| e.to_string())?;
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(poll);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = ticks.tick() => {
                        // A failed read changes nothing: the next one
                        // compares with the last answer that came.
                        let _ = registry.try_live_nodes().await;
                    }
                }
            }
        });
        Ok(MembershipWatch { stop, task })
    }

    /// Stops reading (after the read in flight, if any).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_is_a_tenth_of_the_heartbeat_within_bounds() {
        let ms = Duration::from_millis;
        assert_eq!(poll_interval(ms(500)), ms(50));
        assert_eq!(poll_interval(ms(10)), ms(5));
        assert_eq!(poll_interval(Duration::from_secs(5)), ms(100));
    }
}
