//! Contract tests of the DynamoDB lock client model.

mod common;

use std::time::Duration;

use common::{millis, secs, Clock, Sim};
use fenced_zoo::dynamodb::{Condition, DynamoDb, DynamoDbRequest, DynamoDbSettings};
use fenced_zoo::{ClientId, Protocol, SettingsError};

/// Settings whose `acquireLock` call never gives up, so a contender's wait is
/// one uninterrupted `leaseDuration`.
fn patient() -> DynamoDbSettings {
    DynamoDbSettings {
        additional_time_to_wait: Duration::from_secs(600),
        ..DynamoDbSettings::default()
    }
}

/// A's heartbeats (successful `UpdateItem`s), as (global ns, sent).
fn heartbeats(sim: &Sim<DynamoDb>, client: ClientId) -> Vec<u64> {
    sim.requests
        .iter()
        .filter(|(_, from, _, request)| {
            *from == client
                && matches!(
                    request,
                    DynamoDbRequest::Put {
                        condition: Condition::OwnerAndRvn(_),
                        ..
                    }
                )
        })
        .map(|(at, ..)| *at)
        .collect()
}

/// A holder cut off after its 5 s heartbeat is taken over only after a full
/// `leaseDuration` on the contender's clock from when it first read that
/// RVN: ~20 s on a true clock (after the holder's own expiry: no overlap),
/// ~40 s on a half-speed clock, ~10 s on a double-speed clock — while the
/// holder still believes: two holders.
#[test]
fn contender_waits_a_lease_duration_on_its_own_clock() {
    for (clock, band, overlap) in [
        (Clock::default(), (20, 22), false),
        (Clock::rate(1, 2), (40, 43), false),
        (Clock::rate(2, 1), (10, 12), true),
    ] {
        let mut sim = Sim::<DynamoDb>::new(patient());
        let a = sim.add_client(1, Clock::default());
        sim.run_for(Duration::from_secs(1));
        let b = sim.add_client(2, clock);
        sim.run_for(Duration::from_millis(4_500));
        sim.cut(a);
        let last_beat = *heartbeats(&sim, a).last().expect("A heartbeat at 5 s");
        assert_eq!(last_beat, secs(5) + millis(1));
        let mut both = false;
        for _ in 0..600 {
            sim.run_for(Duration::from_millis(100));
            both |= sim.leader_ids().len() == 2;
        }
        let took_over = sim.became_leader_at(b).expect("B took over");
        let after = took_over - last_beat;
        assert!(
            after > secs(band.0) && after < secs(band.1),
            "{clock:?}: {after}"
        );
        assert_eq!(both, overlap, "{clock:?}");
        assert_eq!(sim.leader_ids(), vec![b]);
        assert_eq!(
            sim.lost_leadership(a).map(|(_, r)| r),
            Some("lease expired")
        );
    }
}

/// A live holder's heartbeat writes a new RVN every 5 s; each one restarts
/// the contender's wait, so it never takes over.
#[test]
fn heartbeats_change_the_rvn_and_reset_the_wait() {
    let mut sim = Sim::<DynamoDb>::new(DynamoDbSettings::default());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    let mut rvns = Vec::new();
    for _ in 0..24 {
        sim.run_for(Duration::from_secs(5));
        let (rvn, since) = sim.client(b).waiting_on().expect("B waits");
        assert!(sim.client_now(b).saturating_duration_since(since) < Duration::from_secs(6));
        assert_eq!(sim.server(0).item().map(|item| item.rvn), Some(rvn));
        rvns.push(rvn);
    }
    rvns.dedup();
    assert_eq!(rvns.len(), 24, "a new RVN every heartbeat");
    assert_eq!(sim.leader_ids(), vec![a]);
    assert!(sim.became_leader_at(b).is_none());
    let beats = heartbeats(&sim, a);
    assert!(beats.windows(2).all(|pair| pair[1] - pair[0] == secs(5)));
}

/// Two contenders waiting out the same silent holder both put conditioned
/// on its RVN; the first write changes the RVN, so the second one's
/// condition fails and it goes back to waiting on the winner's RVN.
#[test]
fn conditional_put_loses_on_a_changed_rvn() {
    let mut sim = Sim::<DynamoDb>::new(patient());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    let c = sim.add_client(3, Clock::default());
    sim.run_for(Duration::from_millis(4_500));
    let held = sim.server(0).item().expect("A holds").rvn;
    sim.cut(a);
    sim.run_for(Duration::from_secs(30));
    let takeovers: Vec<ClientId> = sim
        .requests
        .iter()
        .filter(|(.., request)| {
            matches!(
                request,
                DynamoDbRequest::Put {
                    condition: Condition::Rvn(rvn),
                    ..
                } if *rvn == held
            )
        })
        .map(|(_, from, ..)| *from)
        .collect();
    assert_eq!(takeovers, vec![b, c]);
    assert_eq!(sim.leader_ids(), vec![b]);
    let (rvn, _) = sim.client(c).waiting_on().expect("C waits again");
    assert_eq!(Some(rvn), sim.server(0).item().map(|item| item.rvn));
}

/// A holder whose clock runs at half speed is cut off and taken over ~20 s
/// later; it believes for 40 s of real time, and when the link heals its
/// next heartbeat's condition fails: only then does it let go.
#[test]
fn slow_holder_believes_until_its_heartbeat_fails() {
    let mut sim = Sim::<DynamoDb>::new(patient());
    let a = sim.add_client(1, Clock::rate(1, 2));
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(10));
    sim.cut(a);
    sim.run_for(Duration::from_secs(24));
    assert_eq!(sim.leader_ids(), vec![a, b], "two holders");
    sim.heal(a);
    sim.run_for(Duration::from_secs(10));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(
        sim.lost_leadership(a).map(|(_, r)| r),
        Some("heartbeat rejected")
    );
}

/// A holder paused past `leaseDuration` is taken over; `hasLock` stops
/// counting it once its own lease has run out, and on waking its heartbeat
/// thread drops the lock without writing (`isExpired()`).
#[test]
fn paused_holder_is_taken_over() {
    let mut sim = Sim::<DynamoDb>::new(DynamoDbSettings::default());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_millis(4_500));
    sim.pause(a, Duration::from_secs(60));
    sim.run_for(Duration::from_secs(19));
    assert_eq!(sim.leader_ids(), vec![a], "A's own lease has not run out");
    sim.run_for(Duration::from_secs(2));
    assert!(sim.leader_ids().is_empty());
    sim.run_for(Duration::from_secs(40));
    let took_over = sim.became_leader_at(b).expect("B took over");
    assert!(took_over > secs(25), "{took_over}");
    let (lost_at, reason) = sim.lost_leadership(a).expect("A woke");
    assert_eq!(reason, "lease expired");
    assert_eq!(lost_at, secs(65) + millis(500));
    assert_eq!(sim.leader_ids(), vec![b]);
}

/// Release is a conditional delete: the next contender's read finds no item
/// and it acquires at once.
#[test]
fn release_deletes_the_item() {
    let mut sim = Sim::<DynamoDb>::new(DynamoDbSettings::default());
    let a = sim.add_client(1, Clock::default());
    sim.run_for(Duration::from_secs(1));
    let b = sim.add_client(2, Clock::default());
    sim.run_for(Duration::from_secs(10));
    sim.stop(a);
    sim.run_for(Duration::from_millis(1_100));
    assert_eq!(sim.leader_ids(), vec![b]);
    assert_eq!(sim.holder(0), Some((Some(b), None)));
}

/// Zero durations and a heartbeat longer than half the lease are rejected
/// (the latter is upstream's own check).
#[test]
fn settings_validation() {
    let settings = DynamoDbSettings {
        lease_duration: Duration::ZERO,
        ..DynamoDbSettings::default()
    };
    assert_eq!(
        DynamoDb::validate(&settings),
        Err(SettingsError::Zero {
            setting: "lease_duration"
        })
    );
    let settings = DynamoDbSettings {
        heartbeat_period: Duration::from_secs(11),
        ..DynamoDbSettings::default()
    };
    assert_eq!(
        DynamoDb::validate(&settings).unwrap_err().to_string(),
        "heartbeat_period: must be no more than half of lease_duration"
    );
    let settings = DynamoDbSettings {
        heartbeat_period: Duration::from_secs(10),
        ..DynamoDbSettings::default()
    };
    assert_eq!(DynamoDb::validate(&settings), Ok(()));
    assert_eq!(DynamoDb::validate(&DynamoDbSettings::default()), Ok(()));
}

/// A heartbeat sent just before the lock's local expiry and answered just
/// after it revives the lock in the heartbeat thread
/// (`updateRecordVersionNumber` sets `lookupTime` to the send), while the
/// application — which saw `isExpired()` and is back in a non-reentrant
/// `acquireLock` — never takes it back. The thread then heartbeats the
/// abandoned lock for ever: its RVN changes every period, so neither A's
/// own `acquireLock` nor a newcomer's ever sees it unchanged for a lease.
/// Nobody leads until A closes its client (`releaseAllLocks` releases the
/// stale lock too); then B takes it at once.
#[test]
fn a_heartbeat_answered_after_the_local_expiry_revives_an_abandoned_lock_and_locks_everyone_out() {
    let mut sim = Sim::<DynamoDb>::new(patient());
    let a = sim.add_client(1, Clock::default());
    // A's last heartbeat that arrives is the one at 5 s; then it is cut off
    // until just before its lease runs out at 25 s, and its round trip is
    // slow from then on: the heartbeat of 25.0 s is answered at 25.3 s.
    sim.run_for(Duration::from_millis(5_500));
    sim.cut(a);
    sim.run_for(Duration::from_millis(19_400));
    sim.heal(a);
    sim.client_latency.insert(a, Duration::from_millis(150));
    sim.run_for(Duration::from_secs(35));
    let (lost_at, reason) = sim.lost_leadership(a).expect("A's lease ran out");
    assert_eq!(reason, "lease expired");
    assert!(
        lost_at > secs(25) && lost_at < secs(25) + millis(10),
        "{lost_at}"
    );
    let b = sim.add_client(2, Clock::default());
    let beats_before = heartbeats(&sim, a).len();
    sim.run_for(Duration::from_secs(300));
    let became: Vec<ClientId> = sim
        .log
        .iter()
        .filter_map(|(_, event)| match event {
            common::Event::BecameLeader { client, .. } => Some(*client),
            _ => None,
        })
        .collect();
    assert_eq!(became, [a], "nobody leads again after A's first term");
    let beats = heartbeats(&sim, a).len() - beats_before;
    assert!(
        beats >= 55,
        "the abandoned lock is heartbeated every 5 s: {beats}"
    );
    sim.stop(a);
    sim.run_for(Duration::from_secs(5));
    assert_eq!(sim.leader_ids(), [b], "B takes the released lock");
}
