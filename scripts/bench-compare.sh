#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The simulator's speed, two builds side by side: the same `warmcore sim`
# runs with BEFORE and AFTER in turn, ROUNDS times each (default 3), so that
# the machine's load falls on both alike. Prints, per run, the median wall
# time and events/s of each build and their ratios (AFTER over BEFORE: a
# wall-time ratio above 1 is slower, an events/s ratio below 1 is slower).
#
#   scripts/bench-compare.sh BEFORE_BINARY AFTER_BINARY
#
# scripts/bench.sh calls it when BEFORE=path/to/warmcore is set.
. "$(dirname "$0")/bench-builds.sh" "$@"

runs=(
    "--machine xeon-gold-5218-2s --workload configure:checks=20000"
    "--machine xeon-e7-8870v4 --workload kbuild:jobs=320,files=100000"
    "--machine xeon-gold-5218-2s --workload hackbench:groups=100,loops=100 --policy nest --governor schedutil"
    "--machine xeon-e7-8870v4 --workload periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=2000"
)
sim_run() {  # RUN BUILD ROUND BINARY
    # shellcheck disable=SC2086 # the run's options are words
    "$4" sim ${runs[$1]} --json >"$work/$1.$2.$3.json"
}
each_round "${#runs[@]}" sim_run
python3 - "$work" "$rounds" "${runs[@]}" <<'PY'
import json, statistics, sys
work, rounds, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
walls = []
for i, run in enumerate(runs):
    fig = {}
    for b in ("before", "after"):
        rs = [json.load(open(f"{work}/{i}.{b}.{r}.json")) for r in range(1, rounds + 1)]
        wall = statistics.median(x["wall_ns"] / 1e9 for x in rs)
        evs = statistics.median(x["sim_events"] / (x["wall_ns"] / 1e9) for x in rs)
        fig[b] = (wall, evs, rs[0]["makespan_ns"] / 1e9)
    (wb, eb, mb), (wa, ea, ma) = fig["before"], fig["after"]
    walls.append(wa / wb)
    print(f"{run}\n  before {wb:.3f} s wall, {eb / 1e6:.2f} M events/s, {mb:.3f} simulated s"
          f"\n  after  {wa:.3f} s wall, {ea / 1e6:.2f} M events/s, {ma:.3f} simulated s"
          f"\n  ratio after/before: wall {wa / wb:.2f}, events/s {ea / eb:.2f}")
print(f"geometric mean of the wall-time ratios: {statistics.geometric_mean(walls):.2f}")
PY
