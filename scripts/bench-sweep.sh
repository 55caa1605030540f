#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The sweep engines' overhead, side by side in one run: a sweep of 200 short
# runs through the local engine and through a local Ray instance (inside
# network and PID namespaces with only loopback up, as the tests run Ray).
# Overhead = the sweep's wall time / (the sum of the runs' own simulation
# times / the workers). Targets: local <= 1.3, Ray <= 2. Needs root (unshare).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
PY=${PY:-.venv/bin/python}
JOBS=${JOBS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/spec.toml" <<'SPEC'
machines = "default"
seeds = { from = 1, to = 10 }
[[workloads]]
name = "hackbench"
groups = [1, 2]
loops = 1000
[[policies]]
name = "cfs"
[[policies]]
name = "smove"
delay_us = { from = 10, to = 90, step = 10 }
SPEC
overhead() {  # DIR WALL_NS: print the overhead of the sweep in DIR
    "$PY" - "$1" "$2" "$JOBS" <<'PY'
import sys, polars as pl
d = pl.read_parquet(sys.argv[1] + "/results.parquet")
wall, jobs = int(sys.argv[2]) / 1e9, int(sys.argv[3])
ideal = d["wall_s"].sum() / jobs
print(f"  {d.height} runs, {d['error'].null_count()} without error; sum of runs {d['wall_s'].sum():.2f} s "
      f"/ {jobs} workers = {ideal:.2f} s; sweep {wall:.2f} s; overhead {wall / ideal:.2f}x")
PY
}
echo "== warmcore sweep: 200 short runs, $JOBS workers (targets: local <= 1.3x, Ray <= 2x of sum(run times) / workers)"
t0=$(date +%s%N)
"$BIN" sweep "$work/spec.toml" --out "$work/local" --jobs "$JOBS" >/dev/null
t1=$(date +%s%N)
echo "local engine"; overhead "$work/local" $((t1 - t0))
t0=$(date +%s%N)
unshare --net --pid --fork --mount-proc sh -ec "ip link set lo up; '$BIN' sweep '$work/spec.toml' --out '$work/ray' --ray auto --jobs $JOBS >/dev/null 2>&1"
t1=$(date +%s%N)
echo "Ray engine (a local instance started and stopped by the sweep)"; overhead "$work/ray" $((t1 - t0))
