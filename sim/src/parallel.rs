//! A small pool of scoped threads sharing one queue, for campaigns and
//! sweeps.

/// Runs `f` on every item with `jobs` threads, calling `progress` after
/// each; results come back in item order whatever the number of threads.
pub(crate) fn map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: &(dyn Fn(&T) -> R + Sync),
    progress: &(dyn Fn() + Sync),
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let jobs = jobs.clamp(1, items.len().max(1));
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else {
                            break;
                        };
                        mine.push((i, f(item)));
                        progress();
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}
