#!/usr/bin/env python3
"""Summarise a cargo-mutants run of scripts/mutants.sh (issue 14).

usage: scripts/mutants-report.py MUTANTS_DIR [MUTANTS_DIR...]

Each MUTANTS_DIR is an output directory of scripts/mutants.sh (e.g.
mutants-sim). Runs made with --iterate accumulate: a directory's
previously_caught.txt (and an older run's caught/unviable lists) count as
caught/unviable. Prints, as Markdown: per file, caught / missed / unviable /
timeout, the score over viable mutants, and — for the sim oracle, whose log
says "oracle: caught by X at seed N" — the seeds each caught mutant needed
(median and worst) and what caught it. Then the missed mutants, one per line.
"""

import collections
import json
import os
import re
import statistics
import sys

SEED = re.compile(r"oracle: caught by (.+?) at seed (\d+)")


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def file_of(name):
    return name.split(":", 1)[0]


def load(directory):
    out = os.path.join(directory, "mutants.out")
    outcome = {}
    seeds = {}
    # --iterate lumps an earlier run's caught and unviable mutants together
    # as previously_caught.txt; previously_unviable.txt (written by hand from
    # the earlier run's unviable.txt) tells them apart again.
    unviable_before = set(read_lines(os.path.join(out, "previously_unviable.txt")))
    for name in read_lines(os.path.join(out, "previously_caught.txt")):
        outcome[name] = "unviable" if name in unviable_before else "caught"
    outcomes_path = os.path.join(out, "outcomes.json")
    if os.path.exists(outcomes_path):
        with open(outcomes_path, encoding="utf-8") as f:
            data = json.load(f)
        for o in data["outcomes"]:
            scenario = o.get("scenario")
            if not isinstance(scenario, dict) or "Mutant" not in scenario:
                continue  # the baseline
            name = scenario["Mutant"]["name"]
            summary = o["summary"]
            kind = {
                "CaughtMutant": "caught",
                "MissedMutant": "missed",
                "Unviable": "unviable",
                "Timeout": "timeout",
            }.get(summary, summary)
            outcome[name] = kind
            log = os.path.join(out, o.get("log_path", ""))
            if kind == "caught" and os.path.isfile(log):
                with open(log, encoding="utf-8", errors="replace") as f:
                    m = SEED.search(f.read())
                if m:
                    what = m.group(1).split()[0]  # "scenario <file>" -> "scenario"
                    seeds[name] = (what, int(m.group(2)))
                else:
                    seeds[name] = ("panic or timeout", 0)
    # Lists written by an interrupted run (outcomes.json is rewritten as
    # it goes, but be lenient).
    for kind in ("caught", "missed", "unviable", "timeout"):
        for name in read_lines(os.path.join(out, f"{kind}.txt")):
            outcome.setdefault(name, kind)
    return outcome, seeds


def main(dirs):
    for directory in dirs:
        outcome, seeds = load(directory)
        per_file = collections.defaultdict(collections.Counter)
        for name, kind in outcome.items():
            per_file[file_of(name)][kind] += 1
        print(f"## {directory}\n")
        print("| file | caught | missed | unviable | timeout | caught / viable |")
        print("|---|---|---|---|---|---|")
        total = collections.Counter()
        for f in sorted(per_file):
            c = per_file[f]
            total.update(c)
            viable = c["caught"] + c["missed"] + c["timeout"]
            score = f"{100 * (c['caught'] + c['timeout']) / viable:.0f}%" if viable else "-"
            print(f"| `{f}` | {c['caught']} | {c['missed']} | {c['unviable']} | {c['timeout']} | {score} |")
        viable = total["caught"] + total["missed"] + total["timeout"]
        score = f"{100 * (total['caught'] + total['timeout']) / viable:.0f}%" if viable else "-"
        print(f"| **all** | {total['caught']} | {total['missed']} | {total['unviable']} | {total['timeout']} | {score} |\n")
        if seeds:
            n = [s for w, s in seeds.values() if w != "panic or timeout"]
            by = collections.Counter(w for w, _ in seeds.values())
            print(f"Seeds needed by the {len(n)} caught mutants with a recorded seed: "
                  f"median {statistics.median(n):g}, worst {max(n)} "
                  f"(seed 0 = a shipped scenario caught it).\n")
            print("Caught by: " + ", ".join(f"{w} {k}" for w, k in by.most_common()) + "\n")
        missed = sorted(n for n, k in outcome.items() if k == "missed")
        if missed:
            print(f"Missed ({len(missed)}):\n")
            for name in missed:
                print(f"- `{name}`")
            print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
