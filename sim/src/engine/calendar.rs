//! The queue's heap of timers: a binary heap while it is small, a calendar
//! (buckets of fixed width on a wheel) once a fleet keeps thousands of timers.
//!
//! Why: a 10 000-node fleet keeps 30 000 timers pending. In one binary heap
//! every pop sifts a hole from the root to a leaf — fifteen levels, the lower
//! ones cold in the cache, so each pop paid several cache misses (measured
//! with `perf record`: the heap's sift was the hottest loop of a 10 000-node
//! run). A calendar appends each key to the bucket of its time, and a pop
//! takes from a small heap of the keys of the buckets already reached: pushes
//! are sequential writes, pops sift a heap of a few hundred keys.
//!
//! Once on, the keys of the bucket reached are sorted into a run that pops
//! from its front (see [`Calendar::run`]); the few keys pushed into a bucket
//! already reached wait in the small `near` heap beside it.
//!
//! The order is exactly a heap's: keys are unique integers (time, sequence,
//! slot), and every key in `near` or the run is smaller than every key on
//! the wheel, which is smaller than every key in `far` — because a key's
//! bucket is its time's high bits, and buckets are reached in order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Bucket width: 2^26 ns (67 ms). Timers are due in tens of milliseconds
/// (a unit of work) to tens of seconds (renewals, heartbeats, TTLs).
const WIDTH_BITS: u32 = 26;
/// Buckets on the wheel: 1024 × 67 ms = 68.7 s ahead; later keys wait in
/// `far` until the wheel reaches them.
const BUCKETS: usize = 1024;
const WORDS: usize = BUCKETS / 64;
/// The calendar is switched on when this many keys are pending: below it a
/// binary heap is as fast (its levels stay in the cache) and a calendar's
/// empty buckets would cost a small run more than they save. Not higher:
/// a 500-node fleet keeps one to three thousand timers, and each pop from
/// a heap of them sifted a dozen levels — about 200 instructions a pop,
/// 17 % of the run's (callgrind); a calendar pops from a sorted run.
const CALENDAR_FROM: usize = 1024;
/// The queue counts as large (see [`Calendar::is_large`]) once this many
/// keys are pending at a bucket's start: what the calendar's switch meant
/// before it came down to [`CALENDAR_FROM`].
const LARGE_FROM: usize = 4096;

/// A min-queue of unique `u128` keys whose top 64 bits are a time in
/// nanoseconds. Pops in key order.
#[derive(Debug)]
pub(super) struct Calendar {
    /// Before the calendar is switched on, every key; after, the keys pushed
    /// into a bucket already reached (a timer due within the bucket being
    /// popped: rare).
    near: BinaryHeap<Reverse<u128>>,
    /// The keys of the last bucket reached, sorted, popped from `pos` on
    /// (empty before the switch). Why not a heap: a fleet that runs in step
    /// keeps a bucket of ten thousand keys, and each pop from a heap of them
    /// sifted fourteen levels — the hottest loop of a 10 000-node run, with
    /// an L1 miss and a mispredicted branch a level. Sorted once, they pop
    /// in order from sequential memory; and a bucket is a concatenation of a
    /// few sorted runs (the timers pushed 2 s, 5 s, 10 s before it, each in
    /// push order), which a merge sort (`slice::sort`) sorts in about linear
    /// time.
    run: Vec<u128>,
    /// The next key of `run`.
    pos: usize,
    /// Whether [`LARGE_FROM`] keys were ever pending at a bucket's start.
    large: bool,
    /// `None` until [`CALENDAR_FROM`] keys are pending. While on, `near` or
    /// the run holds a key whenever any is pending.
    wheel: Option<Box<Wheel>>,
}

#[derive(Debug)]
struct Wheel {
    /// Keys of buckets `horizon .. horizon + BUCKETS`, at `bucket % BUCKETS`.
    buckets: Vec<Vec<u128>>,
    /// One bit per non-empty bucket.
    occupied: [u64; WORDS],
    /// Keys on the wheel.
    len: usize,
    /// Keys of buckets from `horizon + BUCKETS` on.
    far: BinaryHeap<Reverse<u128>>,
    /// The first bucket not yet moved into `near`.
    horizon: u64,
}

#[inline]
fn bucket(key: u128) -> u64 {
    (key >> (64 + WIDTH_BITS)) as u64
}

impl Calendar {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Calendar {
            near: BinaryHeap::with_capacity(capacity),
            run: Vec::new(),
            pos: 0,
            large: false,
            wheel: None,
        }
    }

    /// The smallest key.
    #[inline]
    pub(super) fn peek(&self) -> Option<u128> {
        let near = self.near.peek().map(|&Reverse(key)| key);
        match (near, self.run.get(self.pos)) {
            (Some(a), Some(&b)) => Some(a.min(b)),
            (Some(a), None) => Some(a),
            (None, b) => b.copied(),
        }
    }

    /// The key `d` places after the next one in the run (`d` = 0: the
    /// run's next key), if the run reaches that far: a hint, for
    /// prefetching (keys in `near`, rare, may come before it).
    #[inline(always)]
    pub(super) fn run_ahead(&self, d: usize) -> Option<u128> {
        self.run.get(self.pos + d).copied()
    }

    /// Whether [`LARGE_FROM`] keys were pending when a bucket was reached
    /// (once true, true for good): thousands of rows that no longer fit in
    /// the cache, the queue's gate for prefetching. Its own flag, not the
    /// calendar's switch: the switch came down to [`CALENDAR_FROM`], and
    /// prefetching in a 500-node fleet, whose rows stay in the cache, costs
    /// 30 % more instructions for nothing.
    #[inline(always)]
    pub(super) fn is_large(&self) -> bool {
        self.large
    }

    pub(super) fn len(&self) -> usize {
        self.near.len()
            + (self.run.len() - self.pos)
            + self.wheel.as_ref().map_or(0, |w| w.len + w.far.len())
    }

    /// Whether neither `near` nor the run holds a key.
    #[inline(always)]
    fn front_empty(&self) -> bool {
        self.near.is_empty() && self.pos == self.run.len()
    }

    #[inline(always)]
    pub(super) fn push(&mut self, key: u128) {
        if self.wheel.is_some() {
            return self.push_on_wheel(key);
        }
        self.near.push(Reverse(key));
        if self.near.len() >= CALENDAR_FROM {
            self.switch_on();
        }
    }

    /// [`push`](Self::push) once the calendar is on: out of line, so that a
    /// small run's push stays a heap push.
    #[inline(never)]
    fn push_on_wheel(&mut self, key: u128) {
        let Some(wheel) = self.wheel.as_deref_mut() else {
            return self.near.push(Reverse(key));
        };
        let b = bucket(key);
        if b < wheel.horizon {
            self.near.push(Reverse(key));
        } else {
            wheel.place(key, b);
            if self.front_empty() {
                self.refill();
            }
        }
    }

    /// Every pending key, in no particular order, appended to `out` (a
    /// state's fingerprint sorts them; see `EventQueue::write_pending`).
    pub(super) fn keys(&self, out: &mut Vec<u128>) {
        out.extend(self.near.iter().map(|&Reverse(key)| key));
        out.extend_from_slice(&self.run[self.pos..]);
        if let Some(wheel) = self.wheel.as_deref() {
            for bucket in &wheel.buckets {
                out.extend_from_slice(bucket);
            }
            out.extend(wheel.far.iter().map(|&Reverse(key)| key));
        }
    }

    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<u128> {
        let key = match self.run.get(self.pos) {
            Some(&next) if self.near.peek().is_none_or(|&Reverse(near)| next < near) => {
                self.pos += 1;
                next
            }
            _ => self.near.pop()?.0,
        };
        if self.wheel.is_some() && self.front_empty() {
            self.refill();
        }
        Some(key)
    }

    /// Moves from a heap to a calendar: keys of the minimum's bucket go to
    /// the run, the rest to the wheel or `far`.
    #[cold]
    fn switch_on(&mut self) {
        let Some(&Reverse(min)) = self.near.peek() else {
            return;
        };
        let mut wheel = Box::new(Wheel {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: [0; WORDS],
            len: 0,
            far: BinaryHeap::new(),
            horizon: bucket(min) + 1,
        });
        let keys = std::mem::take(&mut self.near).into_vec();
        let mut run = Vec::with_capacity(keys.len());
        for Reverse(key) in keys {
            let b = bucket(key);
            if b < wheel.horizon {
                run.push(key);
            } else {
                wheel.place(key, b);
            }
        }
        run.sort();
        self.run = run;
        self.pos = 0;
        self.wheel = Some(wheel);
        debug_assert!(!self.front_empty(), "the minimum stays in the run");
    }

    /// `near` and the run are empty: the next non-empty bucket becomes the
    /// run (jumping to `far`'s minimum when the wheel is empty).
    #[inline(never)]
    fn refill(&mut self) {
        let Some(wheel) = self.wheel.as_deref_mut() else {
            return;
        };
        debug_assert!(self.near.is_empty() && self.pos == self.run.len());
        if wheel.len == 0 {
            let Some(&Reverse(min)) = wheel.far.peek() else {
                return;
            };
            wheel.horizon = bucket(min);
            wheel.migrate();
        }
        let b = wheel.next_occupied();
        let at = (b % BUCKETS as u64) as usize;
        // The bucket's vector becomes the run, and the run's spent vector
        // the bucket's: the keys are not copied (in a fleet that runs in
        // step a bucket holds a key per node, and copying them wrote as
        // many cold cache lines).
        let keys = &mut wheel.buckets[at];
        let drained = keys.len();
        wheel.len -= drained;
        self.run.clear();
        self.pos = 0;
        std::mem::swap(keys, &mut self.run);
        self.run.sort();
        // A fleet that starts in step fills some buckets with a key per node
        // (every heartbeat due at the same instant); a bucket keeps no more
        // than twice what it last held, so memory follows the keys pending.
        if keys.capacity() > 2 * drained.max(32) {
            keys.shrink_to(drained.max(32));
        }
        wheel.occupied[at / 64] &= !(1 << (at % 64));
        wheel.horizon = b + 1;
        wheel.migrate();
        if !self.large && self.len() >= LARGE_FROM {
            self.large = true;
        }
        debug_assert!(!self.front_empty(), "an occupied bucket has a key");
    }
}

impl Wheel {
    /// Puts `key` (of bucket `b`, not before the horizon) on the wheel or in
    /// `far`.
    #[inline]
    fn place(&mut self, key: u128, b: u64) {
        debug_assert!(b >= self.horizon);
        if b - self.horizon >= BUCKETS as u64 {
            self.far.push(Reverse(key));
            return;
        }
        let at = (b % BUCKETS as u64) as usize;
        self.buckets[at].push(key);
        self.occupied[at / 64] |= 1 << (at % 64);
        self.len += 1;
    }

    /// Moves the keys of `far` the wheel now reaches onto it.
    fn migrate(&mut self) {
        while let Some(&Reverse(key)) = self.far.peek() {
            let b = bucket(key);
            if b - self.horizon >= BUCKETS as u64 {
                break;
            }
            self.far.pop();
            self.place(key, b);
        }
    }

    /// The first non-empty bucket from the horizon on (the wheel is not
    /// empty).
    fn next_occupied(&self) -> u64 {
        debug_assert!(self.len > 0);
        let start = (self.horizon % BUCKETS as u64) as usize;
        let (word, bit) = (start / 64, start % 64);
        let first = self.occupied[word] & (!0u64 << bit);
        let found = if first != 0 {
            word * 64 + first.trailing_zeros() as usize
        } else {
            (1..=WORDS)
                .map(|i| (word + i) % WORDS)
                .find_map(|w| {
                    let bits = self.occupied[w];
                    (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize)
                })
                .unwrap_or(start)
        };
        let distance = (found + BUCKETS - start) % BUCKETS;
        self.horizon + distance as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{uniform_inclusive, SeedDeriver};

    /// Keys as the queue makes them: time, then a unique sequence number.
    fn key(time: u64, seq: u64) -> u128 {
        (u128::from(time) << 64) | u128::from(seq)
    }

    /// Against a sorted model, through the switch to a calendar, with times
    /// near (same bucket), on the wheel and far beyond it.
    #[test]
    fn pops_in_key_order_before_and_after_the_switch() {
        let mut rng = SeedDeriver::new(11, "calendar").rng();
        let mut cal = Calendar::with_capacity(16);
        let mut model = std::collections::BTreeSet::new();
        let (mut now, mut seq) = (0u64, 0u64);
        for round in 0..200_000u64 {
            // Grow past the switch first, then hover around it.
            let push =
                model.len() < 6000 && (round < 20_000 || uniform_inclusive(&mut rng, 0, 1) == 0);
            if push || model.is_empty() {
                let span = match uniform_inclusive(&mut rng, 0, 3) {
                    0 => 1 << WIDTH_BITS,
                    1 => 10_000_000_000,
                    2 => 200_000_000_000,
                    _ => 0,
                };
                let time = now + uniform_inclusive(&mut rng, 0, span);
                cal.push(key(time, seq));
                model.insert(key(time, seq));
                seq += 1;
            } else {
                let expected = model.pop_first();
                assert_eq!(cal.peek(), expected);
                assert_eq!(cal.pop(), expected);
                now = (expected.unwrap_or(0) >> 64) as u64;
            }
            assert_eq!(cal.len(), model.len());
        }
        assert!(cal.wheel.is_some(), "the test reached the calendar");
        while let Some(expected) = model.pop_first() {
            assert_eq!(cal.pop(), Some(expected));
        }
        assert_eq!(cal.pop(), None);
    }

    /// A wheel emptied down to `far` alone jumps to it.
    #[test]
    fn an_empty_wheel_jumps_to_far() {
        let mut cal = Calendar::with_capacity(16);
        for seq in 0..CALENDAR_FROM as u64 {
            cal.push(key(seq, seq));
        }
        let far = 3_600_000_000_000;
        cal.push(key(far, 1 << 30));
        for seq in 0..CALENDAR_FROM as u64 {
            assert_eq!(cal.pop(), Some(key(seq, seq)));
        }
        assert_eq!(cal.peek(), Some(key(far, 1 << 30)));
        cal.push(key(far + 1, 1 << 31));
        cal.push(key(far - 1, 1 << 32));
        assert_eq!(cal.pop(), Some(key(far - 1, 1 << 32)));
        assert_eq!(cal.pop(), Some(key(far, 1 << 30)));
        assert_eq!(cal.pop(), Some(key(far + 1, 1 << 31)));
        assert_eq!(cal.pop(), None);
        assert_eq!(cal.len(), 0);
    }
}
