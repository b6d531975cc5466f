//! redlock-rb's read-only queries — `get_remaining_ttl_for_resource`,
//! `get_remaining_ttl_for_lock`, `locked?`, `valid_lock?` — as pure functions
//! of the instances' `PTTL_SCRIPT` answers
//! ([`RedisInstance::pttl`](super::RedisInstance::pttl)), so a driver can ask
//! what redlock-rb would answer about a lock without a client doing it.

/// `try_get_remaining_ttl`'s answer: the value a quorum of instances hold
/// and the lock's remaining time as redlock-rb computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemainingTtl {
    /// The authoritative value.
    pub value: u128,
    /// `min_ttl - time_elapsed - drift(min_ttl)` in milliseconds; negative
    /// when the elapsed time and drift exceed what is left.
    pub ttl_ms: i64,
}

/// redlock-rb's `try_get_remaining_ttl` (`lib/redlock/client.rb`): `answers`
/// are the instances' `{ GET, PTTL }` replies in order (`None` for an absent
/// key or an instance that could not be reached — `get_remaining_ttl`
/// rescues a connection error into `nil`), `elapsed_ms` the `timed` duration
/// of asking them all. The replies are grouped by value; the value held by
/// the most instances (the first such in reply order on a tie, as Ruby's
/// `max_by` keeps the first maximum) is authoritative if at least `quorum`
/// hold it; its TTL is the `quorum`-th largest of theirs
/// (`ttls.sort.last(@quorum).first`) minus the elapsed time and
/// `drift(min_ttl) = (min_ttl * 0.01).to_i + 2`. `None` when no value is
/// held by a quorum.
pub fn remaining_ttl(
    quorum: u16,
    answers: &[Option<(u128, u64)>],
    elapsed_ms: u64,
) -> Option<RemainingTtl> {
    let mut groups: Vec<(u128, Vec<u64>)> = Vec::new();
    for (value, ttl_ms) in answers.iter().flatten() {
        match groups.iter_mut().find(|(v, _)| v == value) {
            Some((_, ttls)) => ttls.push(*ttl_ms),
            None => groups.push((*value, vec![*ttl_ms])),
        }
    }
    let mut best: Option<&(u128, Vec<u64>)> = None;
    for group in &groups {
        if best.is_none_or(|b| group.1.len() > b.1.len()) {
            best = Some(group);
        }
    }
    let (value, ttls) = best?;
    let quorum = usize::from(quorum);
    if quorum == 0 || ttls.len() < quorum {
        return None;
    }
    let mut sorted = ttls.clone();
    sorted.sort_unstable();
    let min_ttl = sorted[sorted.len() - quorum];
    let min_ttl = i64::try_from(min_ttl).unwrap_or(i64::MAX);
    let elapsed = i64::try_from(elapsed_ms).unwrap_or(i64::MAX);
    let drift = min_ttl / 100 + 2;
    Some(RemainingTtl {
        value: *value,
        ttl_ms: min_ttl.saturating_sub(elapsed).saturating_sub(drift),
    })
}

/// `get_remaining_ttl_for_lock(lock_info)`: the remaining TTL if the
/// authoritative value is the lock's `value`, else `None`.
pub fn remaining_ttl_for_lock(
    quorum: u16,
    value: u128,
    answers: &[Option<(u128, u64)>],
    elapsed_ms: u64,
) -> Option<i64> {
    remaining_ttl(quorum, answers, elapsed_ms)
        .filter(|remaining| remaining.value == value)
        .map(|remaining| remaining.ttl_ms)
}

/// `locked?` / `valid_lock?` given a remaining TTL: `!(ttl.nil? ||
/// ttl.zero?)` — so a *negative* remaining TTL counts as locked, as in
/// redlock-rb.
pub fn counts_as_locked(ttl_ms: Option<i64>) -> bool {
    ttl_ms.is_some_and(|ttl| ttl != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quorum-th largest TTL is used, minus its own drift.
    #[test]
    fn quorum_th_largest_ttl() {
        let answers = [Some((7, 20_000)), Some((7, 15_000)), Some((7, 10_000))];
        let remaining = remaining_ttl(2, &answers, 0).expect("a quorum holds 7");
        assert_eq!(remaining.ttl_ms, 15_000 - 152);
        assert_eq!(remaining_ttl_for_lock(2, 8, &answers, 0), None);
    }

    /// No quorum, no answer; a negative TTL still counts as locked.
    #[test]
    fn no_quorum_and_negative_ttls() {
        assert_eq!(
            remaining_ttl(2, &[Some((1, 5)), Some((2, 5)), None], 0),
            None
        );
        assert!(counts_as_locked(Some(-3)));
        assert!(!counts_as_locked(Some(0)) && !counts_as_locked(None));
    }
}
