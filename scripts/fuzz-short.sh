#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A short fuzz pass over every fuzz target, seeded from the kept corpus
# (fuzz/corpus/<target>). New inputs go to a scratch directory, so a test run
# leaves the tree as it was; a crash fails the run and leaves its input in
# fuzz/artifacts/. FUZZ_SECONDS sets the time per target (default 20: with
# the 7 targets, the trace reader and importers and the machine, workload and
# rt-app parsers, about 2.5 minutes once built; keep the total under about 3
# minutes when adding targets, lowering the default if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-20}
# cargo fuzz wants a nightly compiler for its default sanitizer; without a
# sanitizer (safe Rust needs none) stable works with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1
# fuzz/Cargo.lock pins what the workspace's Cargo.lock pins. cargo fuzz
# passes no --locked to cargo: the fetch checks the lock instead, so that a
# stale one fails here rather than being resolved and rewritten in the tree.
if ! cargo fetch --locked --manifest-path fuzz/Cargo.toml; then
    echo "fuzz: fuzz/Cargo.lock is not current: run 'cargo metadata --manifest-path fuzz/Cargo.toml' and commit it" >&2
    exit 1
fi
# Every target in one build; each then runs as cargo fuzz run would run it.
cargo fuzz build -s none --release
bin=fuzz/target/$(rustc -vV | sed -n 's/^host: //p')/release
targets=$(cargo fuzz list)
for t in $targets; do
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
echo "fuzz: all targets ran clean"
