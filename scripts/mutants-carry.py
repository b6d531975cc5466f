#!/usr/bin/env python3
"""Carry a mutation run's outcome lists across an edit (issue 14).

usage: scripts/mutants-carry.py OLD_REV [NEW_REV] < NAMES > CARRIED

cargo-mutants names a mutant by file, line and column
(`src/lease.rs:267:17: replace < with <= in ...`), so after an edit that
moves lines, `--iterate` no longer recognises the mutants an earlier run
caught and tests them all again. This reads mutant names (a caught.txt or
unviable.txt of a run made at OLD_REV) and writes them with their lines moved
to where the same source line sits at NEW_REV (default: the working tree).
A mutant whose line was itself changed or deleted by the edit is dropped: it
is a different mutant now, and must be tested again. Names of files the edit
did not touch pass through unchanged.
"""

import difflib
import re
import subprocess
import sys

NAME = re.compile(r"^([^:]+):(\d+):(\d+):(.*)$")


def source(rev, path):
    if rev is None:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    out = subprocess.run(
        ["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def line_map(old, new):
    """Old 1-based line -> new 1-based line, for lines the edit left alone."""
    mapping = {}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            mapping[block.a + k + 1] = block.b + k + 1
    return mapping


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    old_rev = sys.argv[1]
    new_rev = sys.argv[2] if len(sys.argv) == 3 else None
    maps = {}
    dropped = 0
    for raw in sys.stdin:
        name = raw.rstrip("\n")
        m = NAME.match(name)
        if not m:
            continue
        path, line, col, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if path not in maps:
            maps[path] = line_map(source(old_rev, path), source(new_rev, path))
        moved = maps[path].get(line)
        if moved is None:
            dropped += 1
            continue
        print(f"{path}:{moved}:{col}:{rest}")
    print(f"mutants-carry: {dropped} dropped (their lines changed)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
