#!/usr/bin/env python3
"""Seeds to first find of the ten subtle planted bugs (README, issue 26): for
each, `explore --plant BUG --seeds 2000 --start S --jobs 2 --json` at S = 0,
10000, 20000, 30000, 40000; prints the first finds (1 = the first seed fails,
>2000 a miss), their median / worst, the failing seeds of the 2 000 at offset
0 and of all 10 000.

usage: scripts/seeds-to-find.py FENCED_SIM_BINARY [BUG...]
(a release build with --features planted-bugs)"""
import json, statistics, subprocess, sys
BUGS = ["elector-anchors-at-arrival", "elector-matches-newest-request",
        "elector-deadline-without-margin", "elector-applies-stale-answer",
        "store-release-deletes-unconditionally", "store-renews-lapsed-lease",
        "store-truncates-expiry-to-seconds", "store-keys-lease-by-host",
        "store-forgets-token-on-release", "downstream-trusts-same-host"]
OFFSETS = [0, 10000, 20000, 30000, 40000]
binary = sys.argv[1]
bugs = sys.argv[2:] or BUGS
print(f"{'bug':40} {'firsts (offsets 0..40000)':32} {'median':>6} {'worst':>6} {'fail@0':>6} {'fail/10k':>8}", flush=True)
for bug in bugs:
    firsts, failing0, total = [], None, 0
    for start in OFFSETS:
        out = subprocess.run([binary, "explore", "--plant", bug, "--seeds", "2000",
                              "--start", str(start), "--jobs", "2", "--json"],
                             capture_output=True, text=True).stdout
        fails = [json.loads(l)["seed"] for l in out.splitlines()
                 if l.startswith("{") and not json.loads(l)["ok"]]
        n = sum(1 for l in out.splitlines() if l.startswith("{"))
        assert n == 2000, (bug, start, n)
        firsts.append(min(fails) - start + 1 if fails else 2001)
        total += len(fails)
        if start == 0:
            failing0 = len(fails)
    med = statistics.median(firsts)
    show = lambda v: ">2000" if v > 2000 else str(int(v))
    print(f"{bug:40} {' '.join(show(f) for f in firsts):32} {show(med):>6} {show(max(firsts)):>6} {failing0:>6} {total:>8}", flush=True)
