#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The viewer's benchmark: a 10 M-event trace on 160 CPUs (made once by
# `warmcore trace synth`, kept in out/bench/), then time to the first picture,
# re-rendering per zoom and pan, and peak memory (python/warmcore/bench_view.py),
# then the first picture as a person sees it: `warmcore view` and headless Chromium.
# Usage: scripts/bench-view.sh [EVENTS] [CPUS]
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${1:-10000000}
CPUS=${2:-160}
BIN=target/release/warmcore
PY=.venv/bin/python
[ -x "$BIN" ] && [ -x "$PY" ] || { echo "bench-view: run make build first" >&2; exit 1; }
mkdir -p out/bench
TRACE=out/bench/view-${EVENTS}-${CPUS}.wct
if [ ! -s "$TRACE" ]; then
    "$BIN" trace synth -o "$TRACE" --events "$EVENTS" --cpus "$CPUS"
fi
echo "== warmcore view: $EVENTS events, $CPUS CPUs"
"$PY" -m warmcore.bench_view "$TRACE"
"$PY" -m warmcore.bench_view "$TRACE" --browser "$BIN"
