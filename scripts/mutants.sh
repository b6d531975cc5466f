#!/usr/bin/env bash
# Mutation testing of the core machines with cargo-mutants (issue 14), with
# two oracles reported separately:
#
#   scripts/mutants.sh suite [FILE...]   oracle (a): every test of the fenced
#                                        package, the oracle of (b) included
#   scripts/mutants.sh sim   [FILE...]   oracle (b): the simulator alone —
#                                        tests/mutation_oracle.rs: every
#                                        shipped fenced scenario's expectations
#                                        and FENCED_ORACLE_SEEDS (default 2000)
#                                        seeds of explore's default mix
#
# Files default to the core machines. Results go to mutants-<oracle>/
# (cargo-mutants' outcomes.json, caught/missed/timeout/unviable lists and a
# log per mutant; the sim oracle's logs say "oracle: caught by X at seed N").
# Not run in CI: on this 2-core machine a mutant costs 10-18 s of
# incremental build and 2-4 s of oracle (measured with --in-place), so the
# 272 mutants of the default files take about 1.5 h per oracle; use
# MUTANTS_EXTRA="--shard K/N --in-place" or a FILE to split the work. Needs `cargo install cargo-mutants
# --locked` (27.1 was used).

set -euo pipefail
cd "$(dirname "$0")/.."
oracle=${1:-}
shift || true
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
    files=(src/lease.rs src/elector/mod.rs src/elector/config.rs src/registry.rs
           src/fenced_store.rs src/time.rs src/id.rs)
fi
args=()
for f in "${files[@]}"; do args+=(-f "$f"); done
command -v cargo-mutants >/dev/null || { echo "cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2; exit 2; }
case "$oracle" in
    suite)
        # Every test of the mutated package, `fenced` (unit, integration
        # and doc tests, all features), which includes the simulator's
        # oracle tests/mutation_oracle.rs: oracle (a) contains oracle (b).
        # The other packages' tests (fenced-sim, fenced-zoo, fenced-lab)
        # are not run per mutant: minutes each.
        exec cargo mutants --package fenced "${args[@]}" \
            --cargo-arg=--all-features --profile mutants --timeout 300 -o mutants-suite ${MUTANTS_EXTRA:-}
        ;;
    sim)
        # The oracle is a test of the mutated package itself (cargo-mutants
        # 27.1 runs the mutated package's tests whatever --test-workspace or
        # --test-package say): tests/mutation_oracle.rs, dev-depending on
        # fenced-sim.
        # --cargo-arg reaches the build too: only the oracle's test binary
        # is built for each mutant, not every test target of the package.
        exec cargo mutants --package fenced "${args[@]}" \
            --profile mutants --timeout 120 -o mutants-sim ${MUTANTS_EXTRA:-} \
            --cargo-arg=--test=mutation_oracle \
            -- -- --nocapture
        ;;
    *)
        echo "usage: scripts/mutants.sh suite|sim [FILE...]" >&2
        exit 2
        ;;
esac
