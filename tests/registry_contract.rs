//! The node registry's contract: liveness from heartbeats, one test per behaviour.
//!
//! The liveness TTL is 30 s throughout, so a node that heartbeats at `t` is
//! live on `[t, t + 30 s)`.

use std::time::Duration;

use fenced::{Heartbeat, Instant, MembershipChange, NodeId, NodeRegistry, RegistryError};

const TTL: Duration = Duration::from_secs(30);

fn node(name: &str) -> NodeId {
    NodeId::new(name).unwrap()
}

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

fn registry() -> NodeRegistry {
    NodeRegistry::new(TTL).unwrap()
}

fn live(reg: &NodeRegistry, now: Instant) -> Vec<String> {
    reg.live_nodes(now).map(|n| n.to_string()).collect()
}

fn changes(reg: &mut NodeRegistry) -> Vec<MembershipChange> {
    std::iter::from_fn(|| reg.poll_change()).collect()
}

#[test]
fn a_heartbeat_makes_a_node_live() {
    // Proves that the first heartbeat of an unknown node makes it live at once and reports it as joined.
    let mut reg = registry();
    let a = node("node-a");
    assert!(!reg.is_live(&a, secs(0)));
    assert_eq!(reg.heartbeat(&a, secs(5)), Heartbeat::Joined);
    assert!(reg.is_live(&a, secs(5)));
    assert_eq!(live(&reg, secs(5)), vec!["node-a"]);
    assert_eq!(reg.live_count(secs(5)), 1);
    assert_eq!(reg.len(), 1);
    assert!(!reg.is_empty());
    assert_eq!(reg.next_timeout(), Some(secs(35)));
}

#[test]
fn a_node_drops_out_exactly_after_the_liveness_ttl() {
    // Proves both sides of `live <=> now < last + ttl`: live one nanosecond before, gone at the instant itself.
    let mut reg = registry();
    let a = node("node-a");
    reg.heartbeat(&a, secs(5));
    let expiry = secs(35);
    let just_before = expiry - Duration::from_nanos(1);
    assert!(reg.is_live(&a, just_before));
    assert_eq!(reg.live_count(just_before), 1);
    assert!(!reg.is_live(&a, expiry));
    assert_eq!(reg.live_count(expiry), 0);
    // Pruning follows the same boundary.
    reg.handle_timeout(just_before);
    assert_eq!(reg.len(), 1);
    reg.handle_timeout(expiry);
    assert_eq!(reg.len(), 0);
    assert!(reg.is_empty());
}

#[test]
fn a_new_heartbeat_refreshes_liveness() {
    // Proves that a heartbeat from a live node extends its liveness to the new heartbeat + ttl without a second join.
    let mut reg = registry();
    let a = node("node-a");
    reg.heartbeat(&a, secs(0));
    assert_eq!(reg.heartbeat(&a, secs(20)), Heartbeat::Refreshed);
    assert!(reg.is_live(&a, secs(49)));
    assert!(!reg.is_live(&a, secs(50)));
    assert_eq!(reg.next_timeout(), Some(secs(50)));
    // Nothing expired at the old expiry (30 s).
    reg.handle_timeout(secs(30));
    assert_eq!(
        changes(&mut reg),
        vec![MembershipChange::Joined {
            node: a.clone(),
            at: secs(0)
        }]
    );
    // A repeated heartbeat at the same instant is a harmless refresh.
    assert_eq!(reg.heartbeat(&a, secs(30)), Heartbeat::Refreshed);
    assert_eq!(reg.heartbeat(&a, secs(30)), Heartbeat::Refreshed);
    assert_eq!(reg.next_timeout(), Some(secs(60)));
    assert_eq!(reg.len(), 1);
}

#[test]
fn the_live_set_is_sorted_by_node_id() {
    // Proves that live_nodes lists ids in ascending order whatever the heartbeat order, and skips expired ones.
    let mut reg = registry();
    for (name, at) in [
        ("node-c", 0),
        ("node-a", 1),
        ("node-e", 2),
        ("node-b", 3),
        ("node-d", 20),
    ] {
        reg.heartbeat(&node(name), secs(at));
    }
    assert_eq!(
        live(&reg, secs(20)),
        vec!["node-a", "node-b", "node-c", "node-d", "node-e"]
    );
    // At 31.5 s, node-c (0 s) and node-a (1 s) have expired.
    assert_eq!(
        live(&reg, Instant::from_millis(31_500)),
        vec!["node-b", "node-d", "node-e"]
    );
}

#[test]
fn joins_and_departures_are_observable_with_exact_instants() {
    // Proves that a join is stamped with its heartbeat and a departure with `last + ttl`, even when noticed much later, and a return is a new join.
    let mut reg = registry();
    let (a, b) = (node("node-a"), node("node-b"));
    reg.heartbeat(&a, secs(1));
    reg.heartbeat(&b, secs(2));
    reg.heartbeat(&a, secs(10));
    assert_eq!(
        changes(&mut reg),
        vec![
            MembershipChange::Joined {
                node: a.clone(),
                at: secs(1)
            },
            MembershipChange::Joined {
                node: b.clone(),
                at: secs(2)
            },
        ]
    );
    // Noticed at 100 s; they left at 32 s (b) and 40 s (a), in that order.
    reg.handle_timeout(secs(100));
    assert_eq!(
        changes(&mut reg),
        vec![
            MembershipChange::Left {
                node: b.clone(),
                at: secs(32)
            },
            MembershipChange::Left {
                node: a.clone(),
                at: secs(40)
            },
        ]
    );
    // A heartbeat also prunes first, so a returning node leaves before it rejoins.
    reg.heartbeat(&a, secs(110));
    reg.heartbeat(&b, secs(150));
    assert_eq!(
        changes(&mut reg),
        vec![
            MembershipChange::Joined {
                node: a.clone(),
                at: secs(110)
            },
            MembershipChange::Left {
                node: a.clone(),
                at: secs(140)
            },
            MembershipChange::Joined {
                node: b.clone(),
                at: secs(150)
            },
        ]
    );
    assert_eq!(reg.poll_change(), None);
}

#[test]
fn memory_follows_the_live_set_after_pruning() {
    // Proves that len() shrinks with the live set as entries expire, so a churning cluster does not grow the registry.
    let mut reg = registry();
    for i in 0..1_000u64 {
        // Each node heartbeats once, 1 s apart: at most 30 are ever live at once.
        reg.heartbeat(&node(&format!("node-{i:04}")), secs(i));
        assert!(reg.len() <= 30, "len {} at {i} s", reg.len());
        assert_eq!(reg.len(), reg.live_count(secs(i)));
    }
    assert_eq!(reg.len(), 30);
    reg.handle_timeout(secs(2_000));
    assert_eq!(reg.len(), 0);
    assert_eq!(reg.next_timeout(), None);
    // Every node joined and left exactly once.
    let all = changes(&mut reg);
    assert_eq!(all.len(), 2_000);
    assert_eq!(
        all.iter()
            .filter(|c| matches!(c, MembershipChange::Left { .. }))
            .count(),
        1_000
    );
}

#[test]
fn registry_time_never_runs_backwards() {
    // Proves that an earlier `now` counts as the latest seen: a node cannot be revived or queried live in the past.
    let mut reg = registry();
    let a = node("node-a");
    reg.heartbeat(&a, secs(0));
    reg.handle_timeout(secs(40));
    assert!(!reg.is_live(&a, secs(10)));
    assert_eq!(reg.live_count(secs(10)), 0);
    // A heartbeat dated 10 s is recorded at 40 s.
    assert_eq!(reg.heartbeat(&a, secs(10)), Heartbeat::Joined);
    assert_eq!(reg.next_timeout(), Some(secs(70)));
}

#[test]
fn a_zero_liveness_ttl_is_an_error() {
    // Proves that a registry in which every node would be dead on arrival cannot be built.
    let err = NodeRegistry::new(Duration::ZERO).unwrap_err();
    assert_eq!(err, RegistryError::ZeroLivenessTtl);
    assert_eq!(err.to_string(), "liveness_ttl must be greater than zero");
    let reg = NodeRegistry::new(Duration::from_nanos(1)).unwrap();
    assert_eq!(reg.liveness_ttl(), Duration::from_nanos(1));
}

proptest::proptest! {
    /// Proves that `live_count` (counted from the expiry order, not by
    /// listing) agrees with `live_nodes` and `is_live` at every instant,
    /// including instants past expiries the registry has not pruned yet.
    #[test]
    fn live_count_agrees_with_the_listing_at_any_instant(
        steps in proptest::collection::vec((0u64..8, 0u64..20_000, proptest::bool::ANY), 1..80),
        probes in proptest::collection::vec(0u64..60_000, 1..8),
    ) {
        let mut reg = NodeRegistry::new(Duration::from_millis(3_000)).unwrap();
        let mut now = 0;
        for (who, advance, timeout) in steps {
            now += advance / 4;
            let at = Instant::from_nanos(now * 1_000_000);
            if timeout {
                reg.handle_timeout(at);
            } else {
                reg.heartbeat(&node(&format!("n{who}")), at);
            }
            for &ahead in &probes {
                let probe = Instant::from_nanos((now + ahead / 8) * 1_000_000);
                let listed = reg.live_nodes(probe).count();
                proptest::prop_assert_eq!(reg.live_count(probe), listed);
                let asked = (0..8).filter(|w| reg.is_live(&node(&format!("n{w}")), probe)).count();
                proptest::prop_assert_eq!(listed, asked);
            }
        }
    }
}
