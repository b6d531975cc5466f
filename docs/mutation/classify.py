#!/usr/bin/env python3
"""Classify the sim oracle's missed mutants (docs/mutation.md): each rule is a
regex over cargo-mutants' mutant name, a class and the reason. Prints Markdown.
usage: docs/mutation/classify.py MISSED_LIST"""
import re, sys

E_SIM = "equivalent for the sim oracle"
PLANT = "equivalent without a planted bug"
EQ = "equivalent"
BLIND = "blind spot"

RULES = [
    (r"Display for|Debug for", E_SIM, "text for humans (error messages, ids, reasons); the simulation judges values, not their wording"),
    (r"::plant with \(\)", PLANT, "only `--plant` calls it; the oracle plants nothing"),
    (r"debug_check with \(\)", EQ, "debug assertions only: a correct elector behaves the same without them"),
    (r"mod.rs:(472|477|482):.*handle_response", PLANT, "inside `planted.is(ElectorDropsSlowAnswers | ElectorMatchesNewestRequest)` branches"),
    (r"mod.rs:(643|648):.*on_acquired", PLANT, "inside the `ElectorDeadlineWithoutMargin` branch of `on_acquired`"),
    (r"mod.rs:364:20: replace match guard .* with true", EQ, "`!planted.is(..)` is `true` whenever no bug is planted"),
    (r"(fraction > 0\.0 with true|(568|573):58: replace > with >=).*jittered", EQ, "with a fraction of 0 the factor is `1 - 0·u = 1`: the same interval"),
    (r"fenced_store.rs:125:", PLANT, "the `DownstreamTrustsSameHost` host comparison"),
    (r"lease.rs:(263|267:59|270|274|297|299):", PLANT, "a condition or branch that only a planted bug enables"),
    (r"lease.rs:282:33", EQ, "renaming the holder to the same owner changes nothing (without a planted bug the owners are equal here)"),
    (r"Elector::(is_leader|observed_leader)|LeaseStore::(config|now|highest_token|role_count)|FencedStore<V>::(value|highest_token|accepted_count|last_write_at)|LeaseStoreConfig::max_ttl|LeaseResult::acquired_token", E_SIM,
     "an accessor the simulation never calls (the hosts act on outputs and answers, not on queries)"),
    (r"LeaseStore::holder", E_SIM, "`holder` is a query the simulation never calls (the checker keeps its own lease view)"),
    (r"lease.rs:81:", E_SIM, "the default `max_ttl` (one day): every simulated TTL is far below either value"),
    (r"lease.rs:241:", E_SIM, "the TTL-above-maximum refusal: scenario validation keeps TTLs far below the store's one-day maximum"),
    (r"id.rs:(62|65):", E_SIM, "id validation: the scenario file's own validation refuses bad ids before any machine sees them"),
    (r"config.rs:.*(owner|role) ->", E_SIM, "an accessor the simulation never calls"),
    (r"src/time.rs:", E_SIM, "time conversions and differences the machines never compute; the simulation uses them only in the wording of violation details"),
    (r"ElectorConfig::safety_margin", E_SIM, "an accessor the simulation never calls (the elector uses `validity`)"),
    (r"ElectorConfig::release_on_deadline", BLIND, "no release after a deadline step-down: the lease lapses a TTL later instead — hand-over time, measured, not judged"),
    (r"ElectorConfig::jitter", BLIND, "jitter turned off: the spread of intervals is a distribution, not a per-run property"),
    (r"Elector::observe_leader", E_SIM, "its only effect is the `LeaderObserved` output, which the simulated node ignores"),
    (r"fenced_store.rs:139:18", EQ, "an equal token from the same writer: re-recording the same writer changes nothing (another writer's equal token is refused before, with fencing; without fencing the writer is never read)"),
    (r"fenced_store.rs:144:", E_SIM, "only `accepted_count` reads the count"),
    (r"registry.rs:(164|173):47: replace < with <=|registry.rs:164:42: replace < with <=", E_SIM, "the host prunes at the expiry instant before anything asks `is_live`, so the boundary is never asked"),
    (r"mod.rs:341:", BLIND, "the simulated worker brings the elector up to date (`handle_timeout`) before it asks `token_at`, so `token_at` is never asked past the deadline; real callers ask between inputs — the suite's unit tests judge it"),
    (r"mod.rs:372:", BLIND, "the deaf follower's quiet period starts at its next retry tick instead of exactly one validity after it last heard; no output differs unless an answer lands in that window"),
    (r"check_deafness", BLIND, "deafness checked for a leader too: a leader unheard for a validity is past its deadline already, so nothing observable differs"),
    (r"Elector::stop", BLIND, "requests outstanding at a stop are forgotten, so a grant answering one is not released on arrival and the lease lapses a TTL later: hand-over time after a stop is measured, not judged"),
    (r"mod.rs:(456|461):.*handle_response", BLIND, "a stopped elector releases grants that answer requests it had already forgotten (it releases more, never less): only hand-over time differs"),
    (r"handle_request_failed", BLIND, "the simulated network never reports a failed request (messages are lost silently; `LeaseFailed` answers only bad input, which validated scenarios never send): no fault injects a refused connection"),
    (r"jittered", BLIND, "jitter turned off (intervals exact instead of shortened) or, before the renewal-time rule, lengthened: the spread of intervals is a distribution, not a per-run property"),
    (r"lease.rs:(267:17|340:29)", BLIND, "an expiry boundary at the exact nanosecond: no schedule puts a request or a release at a lease's exact expiry instant"),
    (r"registry.rs:135:", BLIND, "pruning that runs only at the exact expiry instant: it differs only when the registry acts after the instant (its host paused or its clock stepped), and explore never pauses the lease store"),
]

def classify(name):
    for rx, cls, why in RULES:
        if re.search(rx, name):
            return cls, why
    return BLIND, None

def main(path):
    names = [l.strip() for l in open(path) if l.strip()]
    groups = {}
    for n in names:
        cls, why = classify(n)
        groups.setdefault(cls, []).append((n, why))
    for cls in (EQ, PLANT, E_SIM, BLIND):
        items = groups.get(cls, [])
        print(f"### {cls} ({len(items)})\n")
        for n, why in items:
            print(f"- `{n}`" + (f" — {why}" if why else ""))
        print()

main(sys.argv[1])
