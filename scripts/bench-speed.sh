#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The simulator's speed (issue 34), two builds side by side: each run with
# BEFORE, then with AFTER, ROUNDS times (default 3), so that the machine's
# load falls on both alike. Prints, per run, the range over the rounds of
# each build's simulated s per wall s and events/s, and the range of the
# ratios AFTER / BEFORE of the rounds (above 1: faster). The two builds must
# simulate the same events (the run's sim_events and makespan are checked).
# Beside the wall-clock ratio, the ratio of the processes' CPU time (user +
# system, /usr/bin/time), which other processes on a loaded machine disturb
# less than wall time.
#
#   scripts/bench-speed.sh BEFORE_BINARY AFTER_BINARY
#
# QUICK=1 adds `warmcore reproduce --quick` (wall time, and whether the two
# claims.json are the same). scripts/bench.sh calls this when BEFORE is set.
# STORM=1 runs the storm's rows alone (every policy, both governors).
. "$(dirname "$0")/bench-builds.sh" "$@"

storm=periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=3000
runs=()
for p in cfs scx:default scx:bpfland scx:flash scx:cosmos; do
    for g in powersave schedutil; do
        runs+=("--machine xeon-e7-8870v4 --workload $storm --policy $p --governor $g")
    done
done
[ -n "${STORM:-}" ] || runs+=(
    "--machine xeon-gold-5218-2s --workload configure:checks=20000 --policy cfs"
    "--machine xeon-e7-8870v4 --workload kbuild:jobs=320,files=100000 --policy cfs"
    "--machine xeon-gold-5218-2s --workload hackbench:groups=100,loops=100 --policy cfs"
    "--machine xeon-gold-5218-2s --workload configure:checks=20000 --policy scx:nest"
    "--machine xeon-e7-8870v4 --workload kbuild:jobs=320,files=3000 --policy scx:nest"
    "--machine xeon-gold-5218-2s --workload hackbench:groups=100,loops=100 --policy scx:nest"
)
sim_run() {  # RUN BUILD ROUND BINARY
    # shellcheck disable=SC2086 # the run's options are words
    /usr/bin/time -f "%U %S" -o "$work/$1.$2.$3.cpu" "$4" sim ${runs[$1]} --json >"$work/$1.$2.$3.json"
}
each_round "${#runs[@]}" sim_run
python3 - "$work" "$rounds" "${runs[@]}" <<'PY'
import json, statistics, sys
work, rounds, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def rng(xs, f="%.2f"):
    return (f + "-" + f) % (min(xs), max(xs))
for i, run in enumerate(runs):
    got = {b: [json.load(open(f"{work}/{i}.{b}.{r}.json")) for r in range(1, rounds + 1)]
           for b in ("before", "after")}
    same = all((x["sim_events"], x["makespan_ns"]) == (got["before"][0]["sim_events"], got["before"][0]["makespan_ns"])
               for b in got for x in got[b])
    sps = {b: [x["makespan_ns"] / x["wall_ns"] for x in got[b]] for b in got}
    eps = {b: [x["sim_events"] / x["wall_ns"] * 1e3 for x in got[b]] for b in got}
    # The same events in less wall time: the speed ratio is the wall ratio.
    ratio = [b["wall_ns"] / a["wall_ns"] for a, b in zip(got["after"], got["before"])]
    cpu = {b: [sum(map(float, open(f"{work}/{i}.{b}.{r}.cpu").read().split())) for r in range(1, rounds + 1)]
           for b in ("before", "after")}
    cpu_ratio = [b / max(a, 0.01) for a, b in zip(cpu["after"], cpu["before"])]
    print(f"{run}\n  before {rng(sps['before'])} simulated s per wall s, {rng(eps['before'])} M events/s"
          f"\n  after  {rng(sps['after'])} simulated s per wall s, {rng(eps['after'])} M events/s"
          f"\n  speed after/before, round by round: wall {rng(ratio)} (median {statistics.median(ratio):.2f}),"
          f" CPU time {rng(cpu_ratio)} (median {statistics.median(cpu_ratio):.2f})"
          f"{'' if same else '  SIMULATED DIFFERENT EVENTS'}")
PY
if [ -n "${QUICK:-}" ]; then
    quick_run() {  # 0 BUILD ROUND BINARY
        /usr/bin/time -f "$2 %e %U %S" -a -o "$work/quick" "$4" reproduce --quick --out "$work/rq.$2" >/dev/null 2>&1
    }
    each_round 1 quick_run
    python3 - "$work/quick" <<'PY'
import sys
t = {"before": [], "after": []}
c = {"before": [], "after": []}
for line in open(sys.argv[1]):
    b, e, u, s = line.split()
    t[b].append(float(e))
    c[b].append(float(u) + float(s))
r = [a / b for a, b in zip(t["after"], t["before"])]
rc = [a / b for a, b in zip(c["after"], c["before"])]
print("reproduce --quick: before %.1f-%.1f s, after %.1f-%.1f s wall; after/before, round by round: wall %.2f-%.2f,"
      " CPU time %.2f-%.2f" % (min(t["before"]), max(t["before"]), min(t["after"]), max(t["after"]),
                              min(r), max(r), min(rc), max(rc)))
PY
    if cmp -s "$work/rq.before/claims.json" "$work/rq.after/claims.json"; then
        echo "reproduce --quick: claims.json identical"
    else
        echo "reproduce --quick: claims.json DIFFERS"
    fi
fi
