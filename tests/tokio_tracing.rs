#![cfg(feature = "tokio")]
//! The tokio driver's `tracing` events. A test binary of its own: `tracing`
//! caches each callsite's interest process-wide, and a test running on
//! another thread without this test's subscriber could hit a callsite first
//! and have it cached as uninteresting — about 1 run in 40 lost an event when
//! this test shared a process with the others.

mod tokio_support;

use tokio_support::*;

/// Collects what `tracing` writes, for the test below.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .expect("capture lock")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// Proves: the driver reports term start, renewal, refusal with the holder, and
// step-down with its reason as `tracing` events inside a span naming the role
// and the owner.
#[tokio::test(start_paused = true)]
async fn the_driver_traces_terms_renewals_refusals_and_step_downs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .without_time()
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let world = World::new();
    let a_backend = Faulty::new(world.backend.clone());
    let a = Node::spawn(
        a_backend.clone(),
        world.clock,
        "node-a",
        short(),
        world.writer("node-a", ms(500)),
    );
    a.leads().await;
    let b = world.writer_node("node-b", short(), ms(500));
    sleep(ms(1_500)).await;
    a_backend.set(Fault::Hang);
    sleep(ms(3_000)).await;
    a_backend.set(Fault::Healthy);
    assert_eq!(a.stop().await, Ok(()));
    assert_eq!(b.stop().await, Ok(()));

    let text = String::from_utf8(captured.0.lock().expect("capture lock").clone()).expect("utf-8");
    for expected in [
        "lease_elector{role=reports owner=node-a}",
        "term started: leading token=1",
        "lease renewed",
        "lease refused: held by another",
        "holder=node-a",
        "stepped down token=1 reason=local deadline",
        "term started: leading token=2",
    ] {
        let found = text.contains(expected)
            || text
                .lines()
                .any(|line| expected.split(' ').all(|word| line.contains(word)));
        assert!(found, "missing {expected:?} in:\n{text}");
    }
}
