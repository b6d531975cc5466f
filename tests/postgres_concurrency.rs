#![cfg(feature = "postgres")]
//! Sixteen contenders hammering one role through PostgreSQL, each on its own
//! connection, on the database's real clock.
//!
//! Needs `FENCED_POSTGRES_URL`; without it the test prints `SKIPPED` and
//! passes, unless `FENCED_REQUIRE_POSTGRES=1`.

mod postgres_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced::postgres::{PostgresOptions, PostgresStore};
use fenced::tokio::LeaseBackend;
use fenced::{FencingToken, Instant, LeaseResult, OwnerId, ReleaseResult, Role};
use postgres_support::{admin, database_url, drop_schema, fresh_store, schema_for};

const CONTENDERS: u64 = 16;
const TTL: Duration = Duration::from_millis(60);
/// A stalled holder sleeps this long: past its TTL, so its lease lapses.
const STALL: Duration = Duration::from_millis(100);
const RUN_FOR: Duration = Duration::from_millis(2_500);

/// What one contender learned from one answer, on the database clock.
#[derive(Clone, Debug)]
enum Event {
    /// A new term: live on `[at, expires_at)` unless released.
    Granted {
        owner: u64,
        token: u64,
        at: Instant,
        expires_at: Instant,
    },
    /// The term `token` extended at `at` to `expires_at`.
    Renewed {
        token: u64,
        at: Instant,
        expires_at: Instant,
    },
    /// The holder of `token` released it after its answer at `after`.
    Released { token: u64, after: Instant },
}

/// A small deterministic generator per contender (no shared RNG, no
/// dependency): xorshift64*.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % sides
    }
}

/// One contender: acquire-or-renew in a loop; while holding, sometimes
/// release, sometimes stall past the TTL, otherwise renew soon.
async fn contend(store: PostgresStore, index: u64, events: Arc<Mutex<Vec<Event>>>) {
    let role = Role::new("hammered").expect("valid role");
    let owner = OwnerId::new(format!("contender-{index}")).expect("valid owner");
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ (index + 1));
    let record = |event: Event| events.lock().expect("events lock").push(event);
    let mut held: Option<FencingToken> = None;
    let mut stalled = false;
    let deadline = tokio::time::Instant::now() + RUN_FOR;
    while tokio::time::Instant::now() < deadline {
        let answer = store
            .acquire_or_renew(&role, &owner, TTL)
            .await
            .expect("the database answers");
        let at = match &answer {
            LeaseResult::Granted { token, expires_at } => {
                if let Some(previous) = held {
                    assert!(*token > previous, "a contender's tokens only grow");
                }
                let at = *expires_at - TTL;
                record(Event::Granted {
                    owner: index,
                    token: token.get(),
                    at,
                    expires_at: *expires_at,
                });
                held = Some(*token);
                at
            }
            LeaseResult::Renewed { token, expires_at } => {
                assert_eq!(Some(*token), held, "a renewal keeps the term's token");
                assert!(!stalled, "a lease that lapsed is never renewed");
                let at = *expires_at - TTL;
                record(Event::Renewed {
                    token: token.get(),
                    at,
                    expires_at: *expires_at,
                });
                at
            }
            LeaseResult::Held { holder } => {
                assert_ne!(holder.owner, owner, "never refused by oneself");
                held = None;
                stalled = false;
                tokio::time::sleep(Duration::from_millis(dice.roll(8))).await;
                continue;
            }
        };
        stalled = false;
        let token = held.expect("holding after a grant or renewal");
        match dice.roll(10) {
            0 | 1 => {
                let released = store
                    .release(&role, &owner, token)
                    .await
                    .expect("the database answers");
                assert_eq!(
                    released,
                    ReleaseResult::Released,
                    "the live holder releases"
                );
                record(Event::Released {
                    token: token.get(),
                    after: at,
                });
                held = None;
                tokio::time::sleep(Duration::from_millis(dice.roll(20))).await;
            }
            2 | 3 => {
                tokio::time::sleep(STALL).await;
                stalled = true;
            }
            _ => tokio::time::sleep(Duration::from_millis(dice.roll(20))).await,
        }
    }
}

/// One term as the answers describe it.
#[derive(Debug)]
struct Term {
    owner: u64,
    start: Instant,
    /// The latest expiry answered for the term.
    expires_at: Instant,
    /// The last answered instant before its holder released it, if it did.
    released_after: Option<Instant>,
}

impl Term {
    /// Where the term surely was still live: up to its last expiry, or, if
    /// released, up to the last answer before the release (the release
    /// itself came later, so the real term covers at least this).
    fn surely_live_until(&self) -> Instant {
        self.released_after
            .map_or(self.expires_at, |after| after.min(self.expires_at))
    }
}

// Proves: with 16 contenders on 16 connections hammering one role (renewing,
// releasing, stalling past the TTL), every grant gets a token no other grant
// got, tokens rise in the order the database granted them with no gaps, and
// no two terms were ever live at the same instant of the database clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_contenders_never_share_a_term() {
    let Some(url) = database_url("sixteen_contenders_never_share_a_term") else {
        return;
    };
    let first = fresh_store(&url, "hammer", PostgresOptions::default()).await;
    let namespace = first.options().namespace().clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let contenders: Vec<_> = (0..CONTENDERS)
        .map(|index| {
            // A store each: a connection each.
            let options = PostgresOptions::default().with_namespace(namespace.clone());
            let store = PostgresStore::new(&url, options).expect("valid URL");
            tokio::spawn(contend(store, index, Arc::clone(&events)))
        })
        .collect();
    for contender in contenders {
        contender.await.expect("a contender's checks held");
    }
    let events = events.lock().expect("events lock").clone();

    let mut terms: BTreeMap<u64, Term> = BTreeMap::new();
    for event in &events {
        match *event {
            Event::Granted {
                owner,
                token,
                at,
                expires_at,
            } => {
                let term = Term {
                    owner,
                    start: at,
                    expires_at,
                    released_after: None,
                };
                assert!(
                    terms.insert(token, term).is_none(),
                    "token {token} granted twice"
                );
            }
            Event::Renewed {
                token,
                at,
                expires_at,
            } => {
                let term = terms.get_mut(&token).expect("renewed terms were granted");
                assert!(
                    term.start <= at && at < term.expires_at,
                    "token {token} renewed at {at}, outside its live term {term:?}"
                );
                term.expires_at = term.expires_at.max(expires_at);
            }
            Event::Released { token, after } => {
                let term = terms.get_mut(&token).expect("released terms were granted");
                term.released_after = Some(after);
            }
        }
    }
    let role = Role::new("hammered").expect("valid role");
    let highest = first.highest_token(&role).await.expect("an answer");
    let grants = terms.len() as u64;
    assert!(
        grants >= 20,
        "only {grants} grants: the test did not contend"
    );
    assert_eq!(highest.map(FencingToken::get), Some(grants));
    assert_eq!(
        terms.keys().copied().collect::<Vec<_>>(),
        (1..=grants).collect::<Vec<_>>(),
        "every token from 1 to the highest was granted exactly once"
    );
    let owners: std::collections::BTreeSet<u64> = terms.values().map(|t| t.owner).collect();
    assert!(owners.len() > 1, "leadership moved between contenders");
    for (token, pair) in terms.values().zip(terms.values().skip(1)).enumerate() {
        let (earlier, later) = pair;
        let token = token + 1;
        assert!(
            earlier.start < later.start,
            "token {} granted at {} is not after token {token} at {}",
            token + 1,
            later.start,
            earlier.start
        );
        assert!(
            later.start >= earlier.surely_live_until(),
            "two live holders: token {token} ({:?}) and token {} ({:?})",
            earlier,
            token + 1,
            later
        );
    }
    let renewals = events
        .iter()
        .filter(|e| matches!(e, Event::Renewed { .. }))
        .count();
    let releases = events
        .iter()
        .filter(|e| matches!(e, Event::Released { .. }))
        .count();
    eprintln!("{grants} grants, {renewals} renewals, {releases} releases");
    assert!(renewals > 0 && releases > 0);
    drop_schema(&admin(&url).await, &schema_for("hammer")).await;
}
