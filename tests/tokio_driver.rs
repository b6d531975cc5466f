#![cfg(feature = "tokio")]
//! The tokio driver (`fenced::tokio`): elections, takeovers, shutdown and
//! cancellation, mostly on tokio's paused clock (exact, instant), once on the
//! real clock with bounded waits.

mod tokio_support;

use tokio_support::*;

// Proves: a lone elector is elected at once, its work runs with token 1 and
// its writes are accepted, and shutdown ends the work and frees the lease.
#[tokio::test(start_paused = true)]
async fn elected_work_runs_with_its_fencing_token() {
    let world = World::new();
    let node = world.writer_node("node-a", short(), ms(100));
    node.leads().await;
    assert_eq!(node.handle.token(), Some(token(1)));
    assert!(node.handle.is_leader());
    let observed = node.handle.observed_leader().expect("the leader is known");
    assert_eq!(
        (observed.owner, observed.token),
        (owner("node-a"), token(1))
    );

    sleep(ms(5_050)).await; // several renewals: the term goes on
    assert_eq!(node.handle.token(), Some(token(1)));
    let handle = node.handle.clone();
    assert_eq!(node.stop().await, Ok(()));

    let records = world.records("node-a");
    assert_eq!(
        records.first().map(|r| (r.at_ms, &r.what)),
        Some((0, &What::Started))
    );
    let writes: Vec<_> = records
        .iter()
        .filter(|r| matches!(r.what, What::Wrote(_)))
        .collect();
    assert_eq!(writes.len(), 50, "a write every 100 ms for 5 s");
    assert!(writes
        .iter()
        .all(|r| r.token == 1 && r.what == What::Wrote(WriteOutcome::Accepted)));
    assert_eq!(records.last().map(|r| &r.what), Some(&What::Exited));
    assert_eq!(
        world.backend.holder(&role()),
        Ok(None),
        "shutdown released the lease"
    );
    assert!(!handle.is_leader());
    assert_eq!(handle.snapshot().phase(), Phase::Idle);
    assert_eq!(
        handle.snapshot().last_step_down().cloned(),
        Some((token(1), StepDownReason::Stopped))
    );
}

// Proves audit item 3 in the driver: a store whose every answer takes longer
// than retry_interval (300 ms against 200 ms) still elects a leader, which
// keeps leading through its renewals; the late answers are applied, anchored
// at their requests' send times.
#[tokio::test(start_paused = true)]
async fn a_store_slower_than_retry_interval_still_elects_a_leader() {
    let world = World::new();
    let backend = Faulty::new(world.backend.clone());
    backend.set(Fault::Slow(ms(300)));
    let node = Node::spawn(
        backend,
        world.clock,
        "node-a",
        short(),
        world.writer("node-a", ms(100)),
    );
    let leading = timeout(ms(1_000), node.leads()).await;
    assert!(leading.is_ok(), "nobody led within 1 s");
    assert_eq!(
        world.first("node-a", &What::Started).map(|r| r.at_ms),
        Some(300)
    );
    sleep(ms(10_000)).await;
    assert_eq!(node.handle.token(), Some(token(1)), "the term goes on");
    assert_eq!(node.stop().await, Ok(()));
    assert!(world
        .records("node-a")
        .iter()
        .all(|r| !matches!(r.what, What::Wrote(WriteOutcome::RejectedStale { .. }))));
}

// Proves: with two electors on one store only one runs work at any moment;
// the other observes it as the leader, and takes over (with a higher token)
// only after the first has stopped its work.
#[tokio::test(start_paused = true)]
async fn a_second_elector_never_runs_work_concurrently() {
    let world = World::new();
    let a = world.writer_node("node-a", short(), ms(100));
    let b = world.writer_node("node-b", short(), ms(100));
    a.leads().await;
    sleep(ms(20_000)).await;
    assert_eq!(a.handle.token(), Some(token(1)));
    assert!(!b.handle.is_leader());
    let seen = b
        .handle
        .observed_leader()
        .expect("the follower knows the leader");
    assert_eq!((seen.owner, seen.token), (owner("node-a"), token(1)));
    assert!(world.first("node-b", &What::Started).is_none());

    assert_eq!(a.stop().await, Ok(()));
    b.leads().await;
    sleep(ms(2_000)).await;
    assert_eq!(b.handle.token(), Some(token(2)));
    assert_eq!(b.stop().await, Ok(()));

    assert_eq!(
        world.max_active.load(Ordering::SeqCst),
        1,
        "never two works at once"
    );
    let a_exit = world
        .first("node-a", &What::Exited)
        .expect("a's work ended");
    let b_start = world.first("node-b", &What::Started).expect("b's work ran");
    assert!(a_exit.at_ms <= b_start.at_ms);
    assert_eq!(world.store.highest_token(&resource()), Ok(Some(token(2))));
}

// Proves: a leader that stalls (its work and its lease requests hang, like a
// GC pause) is replaced by a follower with a higher token once its lease
// lapses, its work token is cancelled at its local deadline, and the write it
// makes when it resumes is rejected by the fenced store.
#[tokio::test(start_paused = true)]
async fn a_stalled_leader_is_replaced_and_its_late_write_is_rejected() {
    let world = World::new();
    let a_backend = Faulty::new(world.backend.clone());
    let stalled_work = {
        let (world, a_backend) = (world.clone(), a_backend.clone());
        move |token: FencingToken, cancel: CancellationToken| {
            let (world, a_backend) = (world.clone(), a_backend.clone());
            async move {
                world.record("node-a", token, What::Started);
                let watcher = world.clone();
                let cancelled = cancel.clone();
                tokio::spawn(async move {
                    cancelled.cancelled().await;
                    watcher.record("node-a", token, What::Cancelled);
                });
                sleep(ms(500)).await;
                world.write("node-a", token);
                // The pause: nothing this node sends is answered, and the work
                // is stuck in a wait that ignores its cancellation token.
                a_backend.set(Fault::Hang);
                sleep(ms(5_000)).await;
                world.write("node-a", token);
            }
        }
    };
    let a = Node::spawn(
        a_backend.clone(),
        world.clock,
        "node-a",
        short(),
        stalled_work,
    );
    a.leads().await;
    let b = world.writer_node("node-b", short(), ms(100));
    sleep(ms(6_000)).await;

    let a_records = world.records("node-a");
    let late_write = a_records.last().expect("a wrote after its pause");
    assert_eq!(late_write.at_ms, 5_500);
    assert_eq!(
        late_write.what,
        What::Wrote(WriteOutcome::RejectedStale {
            stale: token(1),
            highest: token(2)
        })
    );
    // The deadline: last successful request sent at 0 + TTL 3 s - margin 0.3 s.
    let cancelled = world
        .first("node-a", &What::Cancelled)
        .expect("a's work was cancelled");
    assert_eq!(cancelled.at_ms, 2_700);
    let b_start = world.first("node-b", &What::Started).expect("b took over");
    assert_eq!(b_start.token, 2);
    assert!(
        (3_000..3_200).contains(&b_start.at_ms),
        "b waits for a's lease to lapse at 3 s"
    );
    assert!(!a.handle.is_leader());
    assert_eq!(b.handle.token(), Some(token(2)));

    a_backend.set(Fault::Healthy);
    assert_eq!(a.stop().await, Ok(()));
    assert_eq!(b.stop().await, Ok(()));
    let value = world.store.value(&resource()).expect("store usable");
    assert!(
        value.is_some_and(|v| v.starts_with("node-b")),
        "the stale write did not land"
    );
}

// Proves: shutdown stops the work and releases the lease, so a follower takes
// over within one retry interval of `run` returning, not after the lease TTL.
#[tokio::test(start_paused = true)]
async fn shutdown_releases_the_lease_so_a_follower_takes_over_within_one_retry_interval() {
    let world = World::new();
    let slow = timings(ms(10_000), ms(3_000), ms(1_000));
    let (a, b) = world.leader_and_follower(slow, ms(100)).await;
    sleep(ms(5_500)).await;
    assert!(!b.handle.is_leader());

    assert_eq!(a.stop().await, Ok(()));
    let a_returned_ms = world.now_ms();
    assert!(world
        .first("node-a", &What::Exited)
        .is_some_and(|r| r.at_ms <= a_returned_ms));
    let b_leads = b.leads().await;
    let taken_over_ms = world.now_ms();
    assert_eq!(b_leads.token(), Some(token(2)));
    assert!(
        taken_over_ms - a_returned_ms <= 1_000,
        "took {} ms; the retry interval is 1000 ms, the TTL 10000 ms",
        taken_over_ms - a_returned_ms
    );
    assert_eq!(b.stop().await, Ok(()));
}

// Proves: a leader whose work returns while it still holds the lease gives
// the role up (abdicates and releases) instead of keeping a lease nobody
// works under, so a follower takes over within one retry interval.
#[tokio::test(start_paused = true)]
async fn work_that_returns_while_leading_gives_the_role_up() {
    let world = World::new();
    let slow = timings(ms(10_000), ms(3_000), ms(1_000));
    let quitter = move |_token: FencingToken, _cancel: CancellationToken| async move {
        sleep(ms(2_000)).await;
    };
    let a = Node::spawn(world.backend.clone(), world.clock, "node-a", slow, quitter);
    a.leads().await;
    let b = world.writer_node("node-b", slow, ms(100));
    let b_leads = b.leads().await;
    assert_eq!(b_leads.token(), Some(token(2)));
    assert!(
        (2_000..=3_100).contains(&world.now_ms()),
        "took over at {} ms; the work quit at 2000 ms, retry 1000 ms, TTL 10000 ms",
        world.now_ms()
    );
    let a_state = a.handle.snapshot();
    assert_eq!(
        a_state.last_step_down(),
        Some(&(token(1), StepDownReason::Abdicated))
    );
    assert_eq!(a.stop().await, Ok(()));
    assert_eq!(b.stop().await, Ok(()));
}

// Proves, by contrast: a leader whose `run` future is dropped (a crash) does
// not release, so the follower has to wait for the lease to lapse.
#[tokio::test(start_paused = true)]
async fn a_dropped_run_does_not_release_so_the_follower_waits_for_the_ttl() {
    let world = World::new();
    let slow = timings(ms(10_000), ms(3_000), ms(1_000));
    let (a, b) = world.leader_and_follower(slow, ms(100)).await;
    sleep(ms(5_500)).await; // a's last renewal went out at 3 s: its lease ends at 13 s
    a.task.abort();
    let _ = a.task.await;
    b.leads().await;
    assert!(
        (13_000..=14_000).contains(&world.now_ms()),
        "at {} ms",
        world.now_ms()
    );
    assert_eq!(b.stop().await, Ok(()));
}

// Proves: losing leadership on the local deadline cancels the work's token at
// exactly that deadline, even while the lease request in flight hangs (a slow
// backend does not hold up the elector's timers).
#[tokio::test(start_paused = true)]
async fn losing_leadership_on_the_deadline_cancels_the_work_token() {
    let world = World::new();
    let (backend, a) = world.faulty_waiting_leader().await;
    let Phase::Leader { valid_until, .. } = a.handle.snapshot().phase() else {
        panic!("node-a leads");
    };
    assert_eq!(valid_until, Instant::from_millis(1_000 + 2_700));
    backend.set(Fault::Hang);
    sleep(ms(3_000)).await;

    let cancelled = world
        .first("node-a", &What::Cancelled)
        .expect("the token was cancelled");
    assert_eq!(cancelled.at_ms, valid_until.as_millis());
    assert!(!a.handle.is_leader());
    assert_eq!(a.handle.snapshot().phase(), Phase::Follower);
    assert_eq!(
        a.handle.snapshot().last_step_down().cloned(),
        Some((token(1), StepDownReason::LocalDeadline))
    );
    backend.set(Fault::Healthy);
    assert_eq!(a.stop().await, Ok(()));
}

// Proves: a renewal refused because another owner holds the lease cancels the
// work's token at once (well before the local deadline), and the handle then
// shows the new holder as the observed leader.
#[tokio::test(start_paused = true)]
async fn a_refused_renewal_cancels_the_work_token_and_names_the_holder() {
    let world = World::new();
    let (backend, a) = world.faulty_waiting_leader().await;
    let intruder = Lease {
        owner: owner("intruder"),
        token: token(9),
        expires_at: Instant::from_secs(60),
    };
    backend.set(Fault::Usurped(intruder));
    sleep(ms(1_000)).await;

    let cancelled = world
        .first("node-a", &What::Cancelled)
        .expect("the token was cancelled");
    assert_eq!(
        cancelled.at_ms, 2_000,
        "at the next renewal, not the 3.7 s deadline"
    );
    assert!(!a.handle.is_leader());
    let seen = a.handle.observed_leader().expect("the holder is known");
    assert_eq!((seen.owner, seen.token), (owner("intruder"), token(9)));
    let superseded = StepDownReason::Superseded {
        holder: owner("intruder"),
        token: token(9),
    };
    assert_eq!(
        a.handle.snapshot().last_step_down().cloned(),
        Some((token(1), superseded))
    );
    backend.set(Fault::Healthy);
    assert_eq!(a.stop().await, Ok(()));
}

// Proves: inconsistent timings fail `run` at once with a typed error, before
// any request is sent or any work runs.
#[tokio::test(start_paused = true)]
async fn inconsistent_timings_fail_run_before_anything_happens() {
    let world = World::new();
    let bad = timings(ms(3_000), ms(3_000), ms(200));
    let node = world.writer_node("node-a", bad, ms(100));
    let result = node.task.await.expect("run returned");
    assert!(matches!(
        result,
        Err(RunError::Config(ConfigError::RenewIntervalTooLong { .. }))
    ));
    assert!(result.is_err_and(|e| e.to_string().starts_with("invalid elector configuration")));
    assert_eq!(world.backend.highest_token(&role()), Ok(None));
    assert!(world.records("node-a").is_empty());
}

// Proves: the heartbeat task keeps its node live in the registry while it
// runs, and after shutdown the node leaves exactly one liveness TTL after its
// last heartbeat; joins and departures are broadcast to subscribers.
#[tokio::test(start_paused = true)]
async fn the_heartbeat_task_keeps_a_node_live_until_shutdown() {
    let clock = Clock::new();
    let registry = NodeRegistry::new(ms(3_000)).expect("valid ttl");
    let registry = InProcessRegistry::new(registry, clock);
    let mut changes = registry.subscribe();
    let node = NodeId::new("node-a").expect("valid node");
    assert_eq!(
        HeartbeatTask::new(registry.clone(), node.clone(), Duration::ZERO).err(),
        Some(HeartbeatError::ZeroInterval)
    );
    let task =
        HeartbeatTask::new(registry.clone(), node.clone(), ms(1_000)).expect("valid interval");
    let shutdown = CancellationToken::new();
    let beating = tokio::spawn(task.run(shutdown.clone().cancelled_owned()));

    sleep(ms(5_500)).await;
    assert_eq!(registry.live_nodes().await.ok(), Some(vec![node.clone()]));
    shutdown.cancel();
    beating.await.expect("the heartbeat task ended");
    sleep(ms(2_400)).await; // last heartbeat at 5 s: live until 8 s
    assert_eq!(registry.live_nodes().await.ok(), Some(vec![node.clone()]));
    sleep(ms(200)).await;
    assert_eq!(registry.live_nodes().await.ok(), Some(vec![]));

    let joined = changes.recv().await.expect("a join");
    assert_eq!(
        joined,
        MembershipChange::Joined {
            node: node.clone(),
            at: Instant::ZERO
        }
    );
    let left = changes.recv().await.expect("a departure");
    assert_eq!(
        left,
        MembershipChange::Left {
            node,
            at: Instant::from_secs(8)
        }
    );
}

// Proves: on the real clock, with millisecond intervals and bounded waits, a
// leader is elected and writes, and after its shutdown the follower takes over
// and writes with a higher token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_real_clock_a_follower_takes_over_after_shutdown() {
    let bounded = timeout(Duration::from_secs(2), async {
        let world = World::new();
        let fast = timings(ms(300), ms(100), ms(50));
        let (a, b) = world.leader_and_follower(fast, ms(20)).await;
        let mut b_handle = b.handle.clone();
        b_handle
            .wait_for(|state| {
                state
                    .observed_leader()
                    .as_ref()
                    .is_some_and(|l| l.owner == owner("node-a"))
            })
            .await
            .expect("b observes a");
        sleep(ms(100)).await;
        assert!(world
            .first("node-a", &What::Wrote(WriteOutcome::Accepted))
            .is_some());

        assert_eq!(a.stop().await, Ok(()));
        let b_leads = b.leads().await;
        assert_eq!(b_leads.token(), Some(token(2)));
        sleep(ms(100)).await;
        assert_eq!(b.stop().await, Ok(()));
        let b_writes = world
            .records("node-b")
            .into_iter()
            .filter(|r| r.what == What::Wrote(WriteOutcome::Accepted))
            .count();
        assert!(b_writes > 0);
        assert_eq!(world.max_active.load(Ordering::SeqCst), 1);
        assert_eq!(world.store.highest_token(&resource()), Ok(Some(token(2))));
    })
    .await;
    assert!(
        bounded.is_ok(),
        "the real-clock handover took longer than 2 s"
    );
}
