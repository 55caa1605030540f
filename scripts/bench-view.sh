#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The viewer's benchmark, side by side on a 10 M-event trace (read whole) and
# a 100 M-event one (2.4 GB, drawn from its level-of-detail summary), both on
# 160 CPUs (made once by `warmcore trace synth`, kept in out/bench/): building
# the summary, time to the first picture, re-rendering per zoom and pan, and
# peak memory (python/warmcore/bench_view.py), then the first picture as a
# person sees it: `warmcore view` and headless Chromium.
# Usage: scripts/bench-view.sh [EVENTS [CPUS]]   (one size; both without arguments)
# The billion-event figures: scripts/bench-view.sh 1000000000 (24.9 GB of disk).
set -euo pipefail
cd "$(dirname "$0")/.."
CPUS=${2:-160}
SIZES=${1:-"10000000 100000000"}
BIN=target/release/warmcore
PY=.venv/bin/python
[ -x "$BIN" ] && [ -x "$PY" ] || { echo "bench-view: run make build first" >&2; exit 1; }
mkdir -p out/bench
for EVENTS in $SIZES; do
    TRACE=out/bench/view-${EVENTS}-${CPUS}.wct
    if [ ! -s "$TRACE" ]; then
        "$BIN" trace synth -o "$TRACE" --events "$EVENTS" --cpus "$CPUS"
    fi
    echo "== warmcore view: $EVENTS events, $CPUS CPUs"
    # The summary, built from scratch (the viewer builds it on first open of
    # a large trace, and keeps it).
    "$BIN" trace lod --force "$TRACE" | sed -n 1p
    "$PY" -m warmcore.bench_view "$TRACE"
    "$PY" -m warmcore.bench_view "$TRACE" --browser "$BIN"
done
