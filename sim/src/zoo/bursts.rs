//! A server's transactions in bursts: which tokens a write racing other
//! clients' writes could have taken.
//!
//! ZooKeeper's zxid and etcd's revision count every write of every client
//! ([`LockServer::transactions`](fenced_zoo::LockServer::transactions)), and
//! the lock's token is one of them: the czxid of the lowest latch node, the
//! create revision of the lowest election key. When several clients write
//! at nearly the same instant — three sessions re-established together
//! after the server's `SIGCONT`, two followers started at the same moment
//! creating their nodes — the order in which the server takes their
//! requests is decided by the real network and scheduler, and the
//! simulator's seeded latency draws pick one of the possible orders. A
//! real ZooKeeper, given those writes, numbers them in another order as
//! often as not (read in its transaction log: `TxnLogToolkit`).
//!
//! So the simulation notes its servers' transactions in *bursts*: a run of
//! transactions each at most `window` after the one before (the run uses
//! one round trip at the scenario's highest latency, within which two
//! clients' requests may arrive in either order), written by at least two
//! clients, or a client and the server itself (an expiry). A token inside
//! such a burst could, in another order of the same writes, have been any
//! number of the burst: [`TxnBursts::race`] gives that span, which the report
//! carries for its highest token (`max_token_race`) and the lab uses to tell
//! a race from a disagreement. A lone client's chain of writes is no race
//! (its writes are ordered by its own round trips) and gives no span. An
//! input's writes are all its writer's: expiries the server makes on a
//! client's request count as that client's, so a burst of them and that
//! client's own writes alone gives no span either (the conservative side:
//! compared exactly).
//!
//! A record, not state: it decides nothing in the run, so a state's
//! fingerprint leaves it out (its `Debug` writes only its name).

use std::collections::VecDeque;
use std::fmt;

use crate::time::SimTime;

/// The most bursts kept: older ones are forgotten (a token in one of them
/// is then compared exactly), so a long run's memory stays bounded.
const MAX_BURSTS: usize = 4096;

/// Who wrote a transaction: a client, or the server itself (`None`: an
/// expiry, a restart).
pub(crate) type Writer = Option<u32>;

/// A server's transactions, noted in bursts (see the module docs).
pub(crate) struct TxnBursts {
    /// How far apart two transactions of one burst may be, ns.
    window_ns: u64,
    /// The last transaction count seen, and when its last transaction was.
    last: Option<(u64, SimTime)>,
    /// Whether the next transaction may join the last burst (not after a
    /// restart's new epoch).
    open: bool,
    /// The bursts, oldest first, by increasing transaction number.
    bursts: VecDeque<Burst>,
}

/// One burst: its first and last transaction numbers, who wrote its first,
/// and whether another writer wrote in it too (a race).
struct Burst {
    first: u64,
    last: u64,
    writer: Writer,
    raced: bool,
}

impl TxnBursts {
    /// No transactions yet; the server's count starts at `initial` (`None`:
    /// a protocol whose tokens count no one else's writes, noted never).
    pub(crate) fn new(window: std::time::Duration, initial: Option<u64>) -> Self {
        TxnBursts {
            window_ns: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            last: initial.map(|count| (count, SimTime::ZERO)),
            open: false,
            bursts: VecDeque::new(),
        }
    }

    /// The server's transaction count is `count` after `writer`'s input at
    /// `at`: the transactions since the last count join the last burst if
    /// the last of them was at most the window before, or begin a new one.
    /// A count that went down or whose upper 32 bits changed (ZooKeeper's
    /// restart starts a new epoch's numbers there; no simulated etcd
    /// reaches 2^32 revisions) is no transaction: it only resets.
    pub(crate) fn note(&mut self, count: Option<u64>, at: SimTime, writer: Writer) {
        let Some(count) = count else {
            return;
        };
        let Some((before, last_at)) = self.last else {
            self.last = Some((count, at));
            return;
        };
        if count == before {
            return;
        }
        self.last = Some((count, at));
        if count < before || count >> 32 != before >> 32 {
            self.open = false;
            if count < before {
                // Numbers starting over (no model here does): the old
                // bursts are of another numbering, and the search below
                // needs them in increasing order.
                self.bursts.clear();
            }
            return;
        }
        let near = at.as_nanos().saturating_sub(last_at.as_nanos()) <= self.window_ns;
        match self.bursts.back_mut() {
            Some(burst) if self.open && near => {
                burst.last = count;
                burst.raced |= burst.writer != writer;
            }
            _ => {
                if self.bursts.len() == MAX_BURSTS {
                    self.bursts.pop_front();
                }
                self.bursts.push_back(Burst {
                    first: before + 1,
                    last: count,
                    writer,
                    raced: false,
                });
            }
        }
        self.open = true;
    }

    /// The span of transaction numbers `token` could have been in another
    /// order of the writes it raced (its burst's first and last), or `None`
    /// when it raced no one (alone in its burst, or its burst forgotten).
    pub(crate) fn race(&self, token: u64) -> Option<(u64, u64)> {
        let at = self.bursts.partition_point(|b| b.last < token);
        let burst = self.bursts.get(at)?;
        (burst.first <= token && burst.raced).then_some((burst.first, burst.last))
    }
}

impl fmt::Debug for TxnBursts {
    /// Only the name: a record that decides nothing, left out of a state's
    /// fingerprint (`simulation::fingerprint`), which writes `Debug`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TxnBursts")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(n: u64) -> SimTime {
        SimTime::from_nanos(n * 1_000_000)
    }

    #[test]
    fn writes_of_two_clients_a_round_trip_apart_race_and_a_lone_chain_does_not() {
        let mut bursts = TxnBursts::new(Duration::from_millis(10), Some(100));
        // A lone client: 101 and 102, 5 ms apart.
        bursts.note(Some(101), ms(1_000), Some(0));
        bursts.note(Some(102), ms(1_005), Some(0));
        assert_eq!(bursts.race(102), None, "one writer is no race");
        // Seconds later: the server expires three sessions at once, then two
        // clients write within the window of each other.
        bursts.note(Some(105), ms(5_000), None);
        bursts.note(Some(106), ms(5_004), Some(1));
        bursts.note(Some(107), ms(5_012), Some(2));
        assert_eq!(bursts.race(106), Some((103, 107)));
        assert_eq!(bursts.race(103), Some((103, 107)));
        // Past the window: a new burst, alone.
        bursts.note(Some(108), ms(5_023), Some(2));
        assert_eq!(bursts.race(108), None);
        assert_eq!(bursts.race(107), Some((103, 107)));
        // Before every burst, and never written.
        assert_eq!(bursts.race(50), None);
        assert_eq!(bursts.race(200), None);
    }

    #[test]
    fn a_new_epoch_is_no_transaction_and_ends_the_burst() {
        let mut bursts = TxnBursts::new(Duration::from_millis(10), Some(1 << 32));
        bursts.note(Some((1 << 32) + 1), ms(1), None);
        bursts.note(Some((1 << 32) + 2), ms(2), Some(0));
        // A restart: epoch 2, counter 0, at once (from counter 2: less than
        // 2^32 above, still another epoch).
        bursts.note(Some(2 << 32), ms(3), None);
        bursts.note(Some((2 << 32) + 1), ms(4), Some(1));
        assert_eq!(
            bursts.race((1 << 32) + 2),
            Some(((1 << 32) + 1, (1 << 32) + 2))
        );
        assert_eq!(
            bursts.race((2 << 32) + 1),
            None,
            "a fresh burst, one writer"
        );
        assert_eq!(bursts.race(2 << 32), None, "the epoch's base was no write");
        // Numbers starting over forget the bursts of the old numbering.
        bursts.note(Some(5), ms(5), None);
        assert_eq!(bursts.race((1 << 32) + 2), None);
        assert!(bursts.bursts.is_empty());
    }

    #[test]
    fn a_protocol_without_a_count_notes_nothing_and_memory_is_bounded() {
        let mut none = TxnBursts::new(Duration::from_millis(10), None);
        none.note(None, ms(1), Some(0));
        assert_eq!(none.race(0), None);
        let mut many = TxnBursts::new(Duration::ZERO, Some(0));
        for i in 1..=(MAX_BURSTS as u64 + 10) {
            many.note(Some(i), ms(i * 100), Some((i % 2) as u32));
        }
        assert_eq!(many.bursts.len(), MAX_BURSTS);
    }
}
