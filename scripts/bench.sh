#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench: every benchmark, figures printed beside a baseline of the same
# run. BENCHMARKS.md records the figures with these commands.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/warmcore
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== trace format: writing, opening, time windows"
cargo bench -q -p warmcore-trace --bench trace 2>&1 | grep -v -E "^(running|test result|$)"

echo "== trace stats over a 10 M-event, 160-CPU trace (target: <= 2 s, memory well under file + 100 MB)"
"$BIN" trace synth -o "$work/big.wct" --events 10000000 --cpus 160
ls -l "$work/big.wct" | awk '{print "file size: " $5 " bytes"}'
/usr/bin/time -f "trace stats: %e s elapsed, %U s user, %M KB max RSS" "$BIN" trace stats "$work/big.wct" --json >/dev/null
rm -f "$work/big.wct"

echo "== simulator (events/s = sim_events / wall_ns; simulated s per wall s = makespan_ns / wall_ns)"
sim() {
    /usr/bin/time -f "  max RSS %M KB" "$BIN" sim "$@" --json >"$work/sim.json" 2>"$work/time"
    python3 - "$work/sim.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["wall_ns"] / 1e9
print("  %.2f M events/s, %.2f simulated s per wall s, partial=%s"
      % (r["sim_events"] / w / 1e6, r["makespan_ns"] / 1e9 / w, r.get("partial")))
PY
    cat "$work/time"
}
echo "configure on xeon-gold-5218-2s"; sim --machine xeon-gold-5218-2s --workload configure
echo "kbuild, 320 jobs, on xeon-e7-8870v4"; sim --machine xeon-e7-8870v4 --workload kbuild:jobs=320,files=3000
echo "hackbench, 10,000 threads, on xeon-e7-8870v4"; sim --machine xeon-e7-8870v4 --workload hackbench:groups=250,loops=100
echo "wake-up storm: periodic, 1000 tasks, 100 us on / 100 us off, 160 CPUs, 10 s"
sim --machine xeon-e7-8870v4 --workload periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=10000

if [ "$(id -u)" = 0 ] && command -v perf >/dev/null; then
    echo "== tracer overhead: untraced vs warmcore record vs perf sched record"
    scripts/bench-record.sh
else
    echo "== tracer overhead: skipped (needs root and perf)"
fi
