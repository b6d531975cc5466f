#!/usr/bin/env python3
"""Classify an oracle's missed mutants (docs/mutation.md) and count its score.

usage: docs/mutation/classify.py ORACLE.tsv [sim|suite]

ORACLE.tsv is written by scripts/mutants-assemble.py (one mutant per line:
name, outcome, caught by, seed), at commit 48ba347 — the rules below name
lines of that commit. Each rule is a regex over cargo-mutants' mutant name, a
class and the reason. For the sim oracle, the classes are: equivalent (no
behaviour can differ), equivalent without a planted bug (only a planted
bug's code path reads it; the oracle plants nothing), equivalent for the
sim oracle (text, a query or an input the simulation never makes), and blind
spot (behaviour the simulation runs but does not judge). For the suite
oracle only the first class excuses a miss: the suite plants bugs, reads
text and asks every query. Prints Markdown: the score, then every miss with
its class and reason.
"""
import collections
import re
import statistics
import sys

E_SIM = "equivalent for the sim oracle"
PLANT = "equivalent without a planted bug"
EQ = "equivalent"
BLIND = "blind spot"

M = r"src/elector/mod\.rs:"
RULES = [
    # Equivalent: no behaviour can differ.
    (M + r"360:20: replace match guard !self\.planted", EQ,
     "`!planted.is(..)` is `true` whenever no bug is planted"),
    (M + r"567:(42: replace match guard jitter\.fraction > 0\.0 with true|58: replace > with >=)", EQ,
     "reached only with a jitter fraction of 0, whose factor `1 - 0·u` is 1: the same interval"),
    (r"debug_check with \(\)", EQ,
     "debug assertions only: a correct elector behaves the same without them"),
    (r"fenced_store\.rs:139:18", EQ,
     "an equal token from the same writer: re-recording the same writer changes nothing "
     "(another writer's equal token is refused before, with fencing; without fencing the "
     "writer is never read)"),
    # Only a planted bug's path reads it.
    (r"::plant with \(\)", PLANT, "only `--plant` calls it"),
    (M + r"(471|476):.*handle_response", PLANT,
     "inside the `ElectorDropsSlowAnswers` / `ElectorMatchesNewestRequest` branches"),
    (M + r"642:.*on_acquired", PLANT, "inside the `ElectorDeadlineWithoutMargin` branch"),
    (r"fenced_store\.rs:125:", PLANT, "the `DownstreamTrustsSameHost` host comparison"),
    (r"lease\.rs:(263|267:59|270|274|297|299):", PLANT,
     "a condition or branch only a planted store bug enables"),
    (r"lease\.rs:282:33", PLANT,
     "renames the holder only when a planted bug lets another owner renew"),
    # Text, queries and inputs the simulation never makes.
    (r"Display for|Debug for", E_SIM,
     "text for humans: the simulation judges values, not their wording"),
    (r"Elector::(is_leader|observed_leader)|LeaseStore::(config|now|highest_token|role_count|holder)"
     r"|FencedStore<V>::(value|highest_token|accepted_count|last_write_at)"
     r"|LeaseStoreConfig::max_ttl|LeaseResult::acquired_token|ElectorConfig::safety_margin", E_SIM,
     "a query the simulation never makes: hosts act on outputs and answers, the checker "
     "keeps its own model"),
    (M + r"368:(20: replace match guard .* with true|50: replace && with \|\|)", E_SIM,
     "only `next_timeout`'s answer differs: an extra wake-up (a leader's, or with a zero rejoin "
     "delay) at which nothing is due, and `handle_timeout` acts only on what is due — the "
     "simulation's outputs cannot differ"),
    (r"Elector::observe_leader", E_SIM,
     "its only effect is the `LeaderObserved` output, which the simulated node ignores"),
    (r"fenced_store\.rs:144:", E_SIM, "only `accepted_count` reads the count"),
    (r"lease\.rs:81:", E_SIM, "the default maximum TTL (a day): every simulated TTL is far below"),
    (r"lease\.rs:241:", E_SIM, "the TTL-above-maximum refusal: validation keeps TTLs far below a day"),
    (r"lease\.rs:340:29", E_SIM,
     "a release at the lease's exact expiry instant: the lapsed lease is gone either way (the "
     "next grant bumps the token the same), only the answer differs — `Released` for "
     "`NotHeld` — which no machine reads"),
    (r"id\.rs:(62|65):", E_SIM, "id validation: scenario validation refuses bad ids first"),
    (r"src/time\.rs:", E_SIM,
     "time conversions the machines never compute; the simulation uses them only in wording"),
    (r"registry\.rs:(164|173):47: replace < with <=|registry\.rs:164:42: replace < with <=", E_SIM,
     "the host prunes at the expiry instant before anything asks `is_live`"),
    # Blind spots, with why they stay.
    (M + r"337:22", BLIND,
     "`token_at` asked at the deadline's exact nanosecond: a work tick and the deadline timer "
     "meet only on aligned timings, and then the timer, queued earlier, is handled first"),
    (M + r"368:", BLIND,
     "the deaf follower's quiet period starts at its next retry tick (at most one "
     "retry_interval late) instead of exactly one validity after it last heard: judging that "
     "needs the checker to mirror the elector's `unanswered_since`, which the stream does not show"),
    (r"handle_request_failed", BLIND,
     "no simulated request fails: the network loses messages silently and validated scenarios "
     "send no bad input; closing it needs a store fault that refuses connections"),
    (r"check_deafness", BLIND,
     "differs only with `rejoin_delay = 0` (a deaf follower then forgets its requests at one "
     "validity): the one shipped scenario with a zero rejoin delay never sees a late answer then"),
    (r"lease\.rs:267:17", BLIND,
     "a renewal by the holder at its lease's exact expiry instant: no schedule aligns a "
     "holder's request with its own expiry (it steps down a margin earlier)"),
]


def classify(name):
    for rx, cls, why in RULES:
        if re.search(rx, name):
            return cls, why
    return BLIND, "(unclassified)"


def main(path, oracle):
    rows = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8") if line.strip()]
    count = collections.Counter(r[1] for r in rows)
    missed = [r[0] for r in rows if r[1] == "missed"]
    groups = collections.defaultdict(list)
    for name in missed:
        cls, why = classify(name)
        if oracle == "suite" and cls != EQ:
            cls, why = BLIND, f"not killed by the suite ({why})"
        groups[cls].append((name, why))
    viable = count["caught"] + count["timeout"] + count["missed"]
    excused = sum(len(groups[c]) for c in (EQ, PLANT, E_SIM))
    nonequiv = viable - excused
    detected = count["caught"] + count["timeout"]
    print(f"{len(rows)} mutants: {count['caught']} caught, {count['timeout']} timeouts, "
          f"{count['missed']} missed, {count['unviable']} unviable, {count['untested']} untested. "
          f"Viable {viable}; excused as equivalent {excused}; **non-equivalent {nonequiv}, "
          f"detected {detected} ({100 * detected / nonequiv:.1f} %)**.\n")
    per_file = collections.defaultdict(collections.Counter)
    for r in rows:
        per_file[r[0].split(":", 1)[0]][r[1]] += 1
    print("| file | caught | timeout | missed | unviable | detected / viable |")
    print("|---|---|---|---|---|---|")
    for f in sorted(per_file):
        c = per_file[f]
        v = c["caught"] + c["timeout"] + c["missed"]
        score = f"{100 * (c['caught'] + c['timeout']) / v:.0f} %" if v else "-"
        print(f"| `{f}` | {c['caught']} | {c['timeout']} | {c['missed']} | {c['unviable']} | {score} |")
    print()
    with_seed = [(r[2], int(r[3])) for r in rows if r[1] == "caught" and r[3] != "-"
                 and r[2] != "panic or timeout"]
    if with_seed and oracle == "sim":
        n = [s for _, s in with_seed]
        by = collections.Counter(w for w, _ in with_seed)
        print(f"Seeds needed, for the {len(n)} caught mutants whose catching seed was recorded: "
              f"median {statistics.median(n):g}, worst {max(n)} (seed 0: a shipped scenario "
              f"caught it; n: the n-th seed of the default mix). Caught by: "
              + ", ".join(f"{w} {k}" for w, k in by.most_common()) + ".\n")
    for cls in (EQ, PLANT, E_SIM, BLIND):
        items = groups.get(cls, [])
        if not items:
            continue
        print(f"#### {cls} ({len(items)})\n")
        for name, why in items:
            print(f"- `{name}` — {why}")
        print()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else "sim")
