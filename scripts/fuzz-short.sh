#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A short fuzz pass over every fuzz target, seeded from the kept corpus
# (fuzz/corpus/<target>). New inputs go to a scratch directory, so a test run
# leaves the tree as it was; a crash fails the run and leaves its input in
# fuzz/artifacts/. FUZZ_SECONDS sets the time per target (default 20: with
# the 7 targets, the trace reader and importers and the machine, workload and
# rt-app parsers, about 2.5 minutes once built; keep the total under about 3
# minutes when adding targets, lowering the default if needed).
#
# Usage: fuzz-short.sh            build, then run every target
#        fuzz-short.sh --build    build only
#        fuzz-short.sh --run T... run these targets, built before
#        fuzz-short.sh --list     the targets' names
# (make test runs the build and then each target as a phase of its own:
# scripts/test-phases.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-20}
mode=${1:-}
case $mode in
'' | --build | --list) [ $# -le 1 ] || { echo "fuzz-short.sh: $mode takes no target" >&2; exit 2; } ;;
--run) shift; [ $# -ge 1 ] || { echo "fuzz-short.sh: --run needs the targets to run (--list names them)" >&2; exit 2; } ;;
*) echo "fuzz-short.sh: unknown option $mode: use --build, --run TARGET..., --list or nothing" >&2; exit 2 ;;
esac
if [ "$mode" = --list ]; then
    exec cargo fuzz list
fi
# cargo fuzz wants a nightly compiler for its default sanitizer; without a
# sanitizer (safe Rust needs none) stable works with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1
bin=fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release
if [ "$mode" = --run ]; then
    targets=$*
else
    # fuzz/Cargo.lock pins what the workspace's Cargo.lock pins. cargo fuzz
    # passes no --locked to cargo: the fetch checks the lock instead, so that a
    # stale one fails here rather than being resolved and rewritten in the tree.
    if ! cargo fetch --locked --manifest-path fuzz/Cargo.toml; then
        echo "fuzz: fuzz/Cargo.lock is not current: run 'cargo metadata --manifest-path fuzz/Cargo.toml' and commit it" >&2
        exit 1
    fi
    # Every target in one build; each then runs as cargo fuzz run would run it.
    cargo fuzz build -s none --release
    [ "$mode" != --build ] || exit 0
    targets=$(cargo fuzz list)
fi
for t in $targets; do
    [ -x "$bin/$t" ] || { echo "fuzz: no built target $t in $bin: run scripts/fuzz-short.sh --build first (--list names the targets)" >&2; exit 1; }
    scratch=$(mktemp -d)
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    echo "fuzz: $t for ${secs}s"
    log="$scratch.log"
    status=0
    "$bin/$t" -artifact_prefix="fuzz/artifacts/$t/" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        "$scratch" "fuzz/corpus/$t" >"$log" 2>&1 || status=$?
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|ERROR|Done|panicked)" "$log" || true
    rm -rf "$scratch" "$log"
    if [ "$status" != 0 ]; then
        echo "fuzz: $t FAILED (exit $status): the input is in fuzz/artifacts/$t" >&2
        exit 1
    fi
done
echo "fuzz: $(echo $targets | wc -w) targets ran clean"
