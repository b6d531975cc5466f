#!/usr/bin/env python3
"""Assemble one oracle's outcome for every mutant at one commit (issue 14).

usage: scripts/mutants-assemble.py TARGET_REV LIST LAYER [LAYER...] > ORACLE.tsv

LIST holds every mutant's name at TARGET_REV (`cargo mutants --list` with the
files of scripts/mutants.sh). Each LAYER is `PATH@REV`: PATH is an output
directory of scripts/mutants.sh (its mutants.out is read as by
scripts/mutants-report.py, with the seeds its logs name) or a directory of
caught.txt / missed.txt / unviable.txt / timeout.txt lists, made at commit
REV. Layers are applied in order, a later one overriding an earlier one's
outcome (a seed is kept until a later layer records another); each
name is carried from its layer's REV to TARGET_REV the way
scripts/mutants-carry.py does (a mutant on a line the edits changed is
dropped). Names that are not in LIST — an older run's names for mutants
that moved — are ignored, so nothing is counted twice.

Writes a TSV, one line per mutant of LIST, sorted: name, outcome (caught,
missed, timeout, unviable, or untested), what caught it and at which seed
(from the sim oracle's `oracle: caught by X at seed N`; `-` when unknown).
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def module(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = module("mutants_report", "mutants-report.py")
carry = module("mutants_carry", "mutants-carry.py")


def layer(path):
    if os.path.isdir(os.path.join(path, "mutants.out")):
        return report.load(path)
    outcome = {}
    for kind in ("caught", "missed", "unviable", "timeout"):
        for name in report.read_lines(os.path.join(path, f"{kind}.txt")):
            outcome[name] = kind
    return outcome, {}


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    target, listing, layers = argv[1], argv[2], argv[3:]
    names = set(report.read_lines(listing))
    outcome, seeds = {}, {}
    for spec in layers:
        path, _, rev = spec.rpartition("@")
        got, got_seeds = layer(path)
        maps = {}
        for name, kind in got.items():
            m = carry.NAME.match(name)
            if not m:
                continue
            file, line = m.group(1), int(m.group(2))
            if file not in maps:
                maps[file] = carry.line_map(carry.source(rev, file), carry.source(target, file))
            moved = maps[file].get(line)
            if moved is None:
                continue
            new = f"{file}:{moved}:{m.group(3)}:{m.group(4)}"
            if new not in names:
                continue
            outcome[new] = kind
            if name in got_seeds:
                seeds[new] = got_seeds[name]
    for name in sorted(names):
        what, seed = seeds.get(name, ("-", "-"))
        print(f"{name}\t{outcome.get(name, 'untested')}\t{what}\t{seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
