//! A small pool of scoped threads for campaigns and sweeps: results are
//! handed on in item order, whatever the number of threads, as soon as they
//! are ready — and forgotten — so memory stays bounded however many items
//! there are.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, PoisonError};

/// The most worker threads a subcommand may ask for with `--jobs`. Runs are
/// CPU-bound, so more threads than cores only cost memory; beyond a few
/// hundred a machine may refuse to start them.
pub const MAX_JOBS: usize = 256;

/// How many results each worker may run ahead of the oldest one not yet
/// handed on: the bound on the results held in memory is `jobs` times this.
pub const WINDOW_PER_JOB: u64 = 256;

/// A worker thread could not be started.
#[derive(Debug)]
pub struct SpawnError {
    /// Threads started before the failure.
    pub started: usize,
    /// Threads asked for.
    pub jobs: usize,
    /// Why the system refused.
    pub source: std::io::Error,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot start worker thread {} of {} ({}); ask for fewer with --jobs",
            self.started + 1,
            self.jobs,
            self.source
        )
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Why `stream` stopped early.
#[derive(Debug)]
pub enum StreamError<E> {
    /// A worker thread could not be started (before any result was handed
    /// on).
    Spawn(SpawnError),
    /// The sink refused a result; the items after it were not run.
    Sink(E),
}

/// The queue the workers share: the items not yet taken, and how far the
/// sink has got.
struct Queue<I> {
    items: I,
    /// The index of the next item to take.
    next: u64,
    /// How many results the sink has taken.
    handed_on: u64,
    /// Stop taking items (the sink failed, a worker panicked, or a thread
    /// could not be started).
    stop: bool,
}

/// Wakes the other workers and stops the queue if a worker panics, so that
/// none waits forever for the result the panicking one will never send.
struct StopOnPanic<'a, I> {
    queue: &'a Mutex<Queue<I>>,
    moved: &'a Condvar,
}

impl<I> Drop for StopOnPanic<'_, I> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.stop = true;
            self.moved.notify_all();
        }
    }
}

/// Runs `f` on every item with `jobs` threads (1..=[`MAX_JOBS`]) and hands
/// each result to `sink` in item order; `progress` is called after each
/// item (from any thread). At most `jobs` × [`WINDOW_PER_JOB`] results are
/// held at once, so the items may be endless in practice.
///
/// A panic in `f` is resumed on the calling thread.
///
/// # Errors
/// [`StreamError::Spawn`] if a worker thread cannot be started — found
/// before any result reaches `sink`; [`StreamError::Sink`] with the sink's
/// first error, after which no further item is started.
pub(crate) fn stream<T: Send, R: Send, E>(
    items: impl Iterator<Item = T> + Send,
    jobs: usize,
    f: &(dyn Fn(T) -> R + Sync),
    progress: &(dyn Fn() + Sync),
    sink: &mut dyn FnMut(R) -> Result<(), E>,
) -> Result<(), StreamError<E>> {
    let jobs = jobs.clamp(1, MAX_JOBS);
    if jobs == 1 {
        // No thread to start: the calling thread does the work.
        for item in items {
            let result = f(item);
            progress();
            sink(result).map_err(StreamError::Sink)?;
        }
        return Ok(());
    }
    let window = jobs as u64 * WINDOW_PER_JOB;
    let queue = Mutex::new(Queue {
        items,
        next: 0,
        handed_on: 0,
        stop: false,
    });
    let moved = Condvar::new();
    let lock = || queue.lock().unwrap_or_else(PoisonError::into_inner);
    let stop = || {
        lock().stop = true;
        moved.notify_all();
    };
    std::thread::scope(|scope| {
        let (results, received) = mpsc::channel::<(u64, R)>();
        let mut workers = Vec::with_capacity(jobs);
        let mut spawn_error = None;
        for started in 0..jobs {
            let results = results.clone();
            let (queue, moved) = (&queue, &moved);
            let worker = std::thread::Builder::new()
                .name(format!("fenced-sim-{started}"))
                .spawn_scoped(scope, move || {
                    let _guard = StopOnPanic { queue, moved };
                    loop {
                        let (index, item) = {
                            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
                            while !q.stop && q.next - q.handed_on >= window {
                                q = moved.wait(q).unwrap_or_else(PoisonError::into_inner);
                            }
                            if q.stop {
                                return;
                            }
                            let Some(item) = q.items.next() else {
                                return;
                            };
                            q.next += 1;
                            (q.next - 1, item)
                        };
                        let result = f(item);
                        progress();
                        if results.send((index, result)).is_err() {
                            return;
                        }
                    }
                });
            match worker {
                Ok(worker) => workers.push(worker),
                Err(source) => {
                    spawn_error = Some(SpawnError {
                        started,
                        jobs,
                        source,
                    });
                    break;
                }
            }
        }
        // Only the workers hold senders now: the channel ends when they do.
        drop(results);
        if spawn_error.is_some() {
            stop();
        }
        let mut sink_error = None;
        let mut waiting: BTreeMap<u64, R> = BTreeMap::new();
        let mut expected = 0u64;
        for (index, result) in received.iter() {
            if spawn_error.is_some() || sink_error.is_some() {
                continue; // Draining: the workers stop at their next item.
            }
            waiting.insert(index, result);
            let before = expected;
            while let Some(result) = waiting.remove(&expected) {
                expected += 1;
                if let Err(e) = sink(result) {
                    sink_error = Some(e);
                    stop();
                    break;
                }
            }
            if expected != before {
                lock().handed_on = expected;
                moved.notify_all();
            }
        }
        for worker in workers {
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        }
        match (spawn_error, sink_error) {
            (Some(e), _) => Err(StreamError::Spawn(e)),
            (None, Some(e)) => Err(StreamError::Sink(e)),
            (None, None) => {
                debug_assert!(waiting.is_empty(), "every result was handed on");
                Ok(())
            }
        }
    })
}

/// [`stream`] into a vector: every result, in item order.
///
/// # Errors
/// A worker thread could not be started.
pub(crate) fn map<T: Send, R: Send>(
    items: impl Iterator<Item = T> + Send,
    jobs: usize,
    f: &(dyn Fn(T) -> R + Sync),
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<R>, SpawnError> {
    let mut out = Vec::new();
    stream(items, jobs, f, progress, &mut |r| {
        out.push(r);
        Ok::<(), std::convert::Infallible>(())
    })
    .map_err(|e| match e {
        StreamError::Spawn(e) => e,
        StreamError::Sink(never) => match never {},
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn results_come_in_item_order_whatever_the_jobs() {
        let slow_odd = |i: u64| {
            if i % 7 == 3 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            i * 10
        };
        for jobs in [1, 2, 3, 8] {
            let out = map(0..2000u64, jobs, &slow_odd, &|| {}).unwrap();
            assert_eq!(out, (0..2000).map(|i| i * 10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn no_worker_runs_more_than_the_window_ahead() {
        // The first item is slow: the others may not pile up past the window.
        let started = AtomicU64::new(0);
        let high = AtomicU64::new(0);
        let jobs = 2;
        let mut handed = 0u64;
        stream(
            0..5000u64,
            jobs,
            &|i| {
                started.fetch_add(1, Ordering::SeqCst);
                if i == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                high.fetch_max(i, Ordering::SeqCst);
                i
            },
            &|| {},
            &mut |i: u64| {
                assert_eq!(i, handed);
                handed += 1;
                // While item 0 was pending, nothing past the window started.
                if i == 0 {
                    assert!(high.load(Ordering::SeqCst) < jobs as u64 * WINDOW_PER_JOB);
                }
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(handed, 5000);
        assert_eq!(started.load(Ordering::SeqCst), 5000);
    }

    #[test]
    fn a_sink_error_stops_the_run() {
        let ran = AtomicU64::new(0);
        let result = stream(
            0..1_000_000u64,
            2,
            &|i| {
                ran.fetch_add(1, Ordering::SeqCst);
                i
            },
            &|| {},
            &mut |i| if i == 10 { Err("full") } else { Ok(()) },
        );
        assert!(matches!(result, Err(StreamError::Sink("full"))));
        assert!(ran.load(Ordering::SeqCst) < 10 + 2 * WINDOW_PER_JOB + 2);
    }

    #[test]
    #[should_panic(expected = "seed 77")]
    fn a_panic_in_a_worker_reaches_the_caller() {
        let _ = map(
            0..1000u64,
            3,
            &|i| {
                assert!(i != 77, "seed 77");
                i
            },
            &|| {},
        );
    }
}
