//! A run's whole state, hashed: what `fenced-sim verify` deduplicates by.
//!
//! Two runs whose states here are equal at the same instant have the same
//! future: the simulation is deterministic in its state, and the
//! fingerprint writes every part of it that a later event can read — the
//! instant, the pending events in the order they will be handled (their
//! due times, without the sequence numbers whose order alone decides), the
//! network (its faults, its RNG's position, the script's choices still to
//! come), the lives, the servers' pauses, the streams, every host's state
//! machines, the checker's whole model and findings, the anchored faults'
//! watch and the faults in effect. It leaves out only records that decide
//! nothing: counts of events handled, the trace's hash, the timeline, the
//! abstract states, the logs and the instants a search notes.
//!
//! The parts are written with their `Debug` representations, which
//! `derive(Debug)` makes complete field by field; the one type in the state
//! whose `Debug` hides what it holds, `rand_chacha`'s generator, is written
//! as its seed and word position wherever the simulator owns one (the
//! network, the recurring faults) and has a `Debug` that shows them where
//! the machines own one (`fenced`'s elector jitter, the zoo clients'
//! retries). Times are absolute: two states are compared only at the same
//! instant (the search compares runs right after the same fault began).
//!
//! The hash is 128 bits (two SipHash-1-3 streams over the same text, keyed
//! apart): among the few million states a bounded search keeps, a collision
//! — two different states taken for one, a schedule wrongly pruned — has a
//! probability below 10⁻²⁵.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::Hasher;

use super::symmetry::{Symmetry, SymmetryError};
use super::{Core, NotedInstants, SimHosts};

/// What a run watches for: the scheduled fault after whose start the
/// fingerprint is taken, and, once taken, the fingerprint and the
/// instants noted by then.
#[derive(Debug)]
pub(crate) struct Watch {
    fault: u32,
    /// When set, the fingerprint is the state's canonical one under
    /// renamings of interchangeable nodes (`symmetry`).
    symmetry: Option<Symmetry>,
    taken: Option<Result<StateFingerprint, SymmetryError>>,
}

/// A state's fingerprint, and the boundary instants noted up to it (a
/// search's candidate starts after it come from these and from what
/// follows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateFingerprint {
    /// The state's 128-bit hash.
    pub state: u128,
    /// The instant it was taken at, ns of true time.
    pub at_ns: u64,
    /// The instants noted so far (when the run notes them).
    pub instants: Option<NotedInstants>,
    /// With a symmetry: the renaming of nodes that gives the canonical
    /// form (node `i` of the run is node `permutation[i]` there).
    pub permutation: Option<Vec<u32>>,
}

/// A `fmt::Write` that hashes what is written instead of keeping it (the
/// fingerprint's, and a renamed state's in `symmetry`).
///
/// What is written is gathered into a buffer and handed to the two
/// hashers a buffer at a time: `Debug` and the tree's renderer write a
/// state in pieces of a byte or a few, and SipHash's `write` costs a call
/// and its tail handling per piece (a quarter of `verify --symmetry`'s
/// time, measured). SipHash streams, so the hash is that of the bytes in
/// order however they are cut: the values are those of writing each piece.
pub(super) struct Hashing {
    a: DefaultHasher,
    b: DefaultHasher,
    buffer: [u8; HASHING_BUFFER],
    buffered: usize,
}

/// Bytes gathered before they are hashed.
const HASHING_BUFFER: usize = 512;

impl Hashing {
    pub(super) fn new() -> Self {
        let (a, mut b) = (DefaultHasher::new(), DefaultHasher::new());
        // Keys the second stream apart from the first.
        b.write_u64(0x9e37_79b9_7f4a_7c15);
        Hashing {
            a,
            b,
            buffer: [0; HASHING_BUFFER],
            buffered: 0,
        }
    }

    fn flush(&mut self) {
        let bytes = &self.buffer[..self.buffered];
        self.a.write(bytes);
        self.b.write(bytes);
        self.buffered = 0;
    }

    pub(super) fn finish(mut self) -> u128 {
        self.flush();
        (u128::from(self.a.finish()) << 64) | u128::from(self.b.finish())
    }
}

impl fmt::Write for Hashing {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let bytes = s.as_bytes();
        if self.buffered + bytes.len() > HASHING_BUFFER {
            self.flush();
            if bytes.len() > HASHING_BUFFER {
                self.a.write(bytes);
                self.b.write(bytes);
                return Ok(());
            }
        }
        self.buffer[self.buffered..self.buffered + bytes.len()].copy_from_slice(bytes);
        self.buffered += bytes.len();
        Ok(())
    }
}

impl<H: SimHosts> Core<H> {
    /// From now on, take the state's fingerprint right after scheduled
    /// fault `fault` begins (see [`StateFingerprint`]); a fault that never begins
    /// (after the heal) takes none.
    pub(crate) fn fingerprint_after_fault(&mut self, fault: u32, symmetry: Option<Symmetry>) {
        self.fingerprint = Some(Watch {
            fault,
            symmetry,
            taken: None,
        });
    }

    /// The fingerprint taken, if its fault began (an error: the state
    /// could not be renamed).
    pub(crate) fn taken_fingerprint(&self) -> Option<Result<&StateFingerprint, &SymmetryError>> {
        self.fingerprint
            .as_ref()
            .and_then(|w| w.taken.as_ref())
            .map(Result::as_ref)
    }

    /// Takes the fingerprint if `began` is the fault watched for.
    pub(super) fn fingerprint_if_due(&mut self, began: Option<u32>) {
        let Some(watch) = self.fingerprint.as_ref() else {
            return;
        };
        if began != Some(watch.fault) || watch.taken.is_some() {
            return;
        }
        let state = match &watch.symmetry {
            None => Ok((self.state_fingerprint(), None)),
            Some(symmetry) => {
                let mut text = String::new();
                self.write_state(&mut text)
                    .expect("writing a state's text cannot fail");
                symmetry
                    .canonical(&text)
                    .map(|c| (c.state, Some(c.permutation)))
            }
        };
        let snapshot = state.map(|(state, permutation)| StateFingerprint {
            state,
            at_ns: self.engine.now.as_nanos(),
            instants: self.noted_instants(),
            permutation,
        });
        if let Some(watch) = self.fingerprint.as_mut() {
            watch.taken = Some(snapshot);
        }
    }

    /// The whole state's 128-bit hash (see the module documentation).
    pub(crate) fn state_fingerprint(&self) -> u128 {
        let mut out = Hashing::new();
        self.write_state(&mut out)
            .expect("hashing a state's text cannot fail");
        out.finish()
    }

    /// The whole state as text (what [`state_fingerprint`] hashes).
    pub(crate) fn write_state(&self, w: &mut dyn fmt::Write) -> fmt::Result {
        self.engine.write_state(w)?;
        let observers = &self.engine.observers;
        write!(
            w,
            "checker {:?}\nanchors {:?}\nfaults ",
            observers.checker, observers.anchors
        )?;
        self.faults.write_state(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fmt::Write as _;
    use proptest::prelude::*;

    /// The two streams' hash of `bytes` written at once, as `Hashing` did
    /// before it gathered its pieces.
    fn at_once(bytes: &[u8]) -> u128 {
        let (mut a, mut b) = (DefaultHasher::new(), DefaultHasher::new());
        b.write_u64(0x9e37_79b9_7f4a_7c15);
        a.write(bytes);
        b.write(bytes);
        (u128::from(a.finish()) << 64) | u128::from(b.finish())
    }

    proptest! {
        /// The buffer changes no hash: a text cut into pieces (of a byte
        /// to more than a buffer, as `cuts` says, the last piece the rest)
        /// hashes as the whole text written at once.
        #[test]
        fn gathering_the_pieces_changes_no_hash(
            text in "[ -~]{0,1600}",
            cuts in prop::collection::vec(
                prop_oneof![3 => 1usize..=8, 1 => 1usize..=2 * HASHING_BUFFER],
                0..256,
            ),
        ) {
            let mut hashing = Hashing::new();
            let mut rest = text.as_str();
            for cut in cuts {
                let (piece, tail) = rest.split_at(cut.min(rest.len()));
                hashing.write_str(piece).expect("hashing cannot fail");
                rest = tail;
            }
            hashing.write_str(rest).expect("hashing cannot fail");
            prop_assert_eq!(hashing.finish(), at_once(text.as_bytes()));
        }
    }

    /// And different texts hash apart (the buffer keeps every byte).
    #[test]
    fn different_texts_hash_apart() {
        let hash = |text: &str| {
            let mut hashing = Hashing::new();
            hashing.write_str(text).expect("hashing cannot fail");
            hashing.finish()
        };
        assert_ne!(hash("lives [0, 1]"), hash("lives [1, 0]"));
        let long = "x".repeat(HASHING_BUFFER + 1);
        assert_ne!(hash(&long), hash(&long[1..]));
    }
}
