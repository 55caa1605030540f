#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench: the hunt's reliability figures (docs/hunt.md). For each
# hosted policy (the sched_ext programs, and the simulator's own models:
# the fair class, the papers' policies on it, the Haiku references), one
# `warmcore hunt` of RUNS generated workloads (1,000 unless told) with
# seed SEED (1) on one thread, and one line: workloads
# tried, simulated seconds, runnable task-seconds (the time tasks spent
# waiting or running, summed over the tasks), failures found, wall
# seconds, and the hunt's own overhead against the simulator alone on
# the same runs (wall time outside building the policy and running the
# simulator, over the time inside: summary.json's wall_s and
# simulator_wall_s). BENCHMARKS.md
# records the figures with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
RUNS=${RUNS:-1000}
SEED=${SEED:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

policies="scx:default scx:slocal scx:smove scx:nest:warm=pmqos scx:nest:warm=threads scx:nest:warm=off
scx:haiku-low-latency scx:haiku-power-saving scx:warm scx:bpfland scx:flash scx:cosmos
cfs eevdf slocal smove nest haiku-low-latency haiku-power-saving haiku-old"

echo "== hunt: $RUNS generated workloads per policy, seed $SEED, one thread"
printf '%-26s %8s %12s %11s %9s %8s %9s\n' policy runs "simulated s" "runnable s" failures "wall s" overhead
for p in $policies; do
    out="$work/${p//[:=]/-}"
    # Exit 1 is a failure found: a figure, not an error of the benchmark.
    "$BIN" hunt --policy "$p" --runs "$RUNS" --seed "$SEED" --jobs 1 --out "$out" >/dev/null 2>"$work/err" || [ $? -eq 1 ] || {
        cat "$work/err" >&2
        exit 1
    }
    python3 - "$p" "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[2]))
own = s["wall_s"] - s["simulator_wall_s"]
print("%-26s %8d %12.1f %11.1f %9d %8.1f %8.1f%%" % (sys.argv[1], s["runs"], s["simulated_s"], s["runnable_task_s"],
      s["failure"] is not None, s["wall_s"], 100 * own / s["simulator_wall_s"]))
PY
done
