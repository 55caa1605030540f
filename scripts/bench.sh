#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make bench: every benchmark, figures printed beside a baseline of the same
# run. BENCHMARKS.md records the figures with these commands. With
# BEFORE=path/to/an/older/warmcore, the simulator runs also run with that
# build, side by side (scripts/bench-compare.sh, scripts/bench-speed.sh).
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

if [ -n "${BEFORE:-}" ]; then
    echo "== the simulator, this build beside BEFORE=$BEFORE (wall-time ratio target: <= 1.2)"
    scripts/bench-compare.sh "$BEFORE" "$BIN"
    echo "== the simulator's speed beside BEFORE=$BEFORE (issue 34: the storm >= 2.0 simulated s per wall s"
    echo "   under cfs, >= 1.0 under scx:default; configure, kbuild, hackbench >= 1.5x; reproduce --quick <= 2/3)"
    QUICK=1 scripts/bench-speed.sh "$BEFORE" "$BIN"
    echo "== the same, the build of make pgo beside BEFORE=$BEFORE"
    QUICK=1 scripts/bench-speed.sh "$BEFORE" target/pgo/release/warmcore
fi

echo "== the sched_ext program in the simulator (scx:NAME) beside the simulator's own models, one run each, side by side"
echo "   targets: the storm under scx:default >= 1 simulated s per wall s; scx:nest >= 1/3 of nest's events/s"
evs() {  # events/s and simulated s per wall s of one run
    "$BIN" sim "$@" --json >"$work/s.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); w=r["wall_ns"]/1e9; print(r["sim_events"]/w, r["makespan_ns"]/1e9/w, r.get("partial"))' "$work/s.json"
}
pair() {  # MACHINE WORKLOAD REFERENCE SCX
    read -r e1 s1 p1 < <(evs --machine "$1" --workload "$2" --policy "$3" --governor schedutil)
    read -r e2 s2 p2 < <(evs --machine "$1" --workload "$2" --policy "$4" --governor schedutil)
    python3 -c 'import sys; a=sys.argv; print("  %s on %s: %s %.2f M events/s (%.2f sim s/s), %s %.2f M events/s (%.2f sim s/s); ratio %.2f; partial: %s %s" % (a[2], a[1], a[3], float(a[5])/1e6, float(a[6]), a[4], float(a[7])/1e6, float(a[8]), float(a[7])/float(a[5]), a[9], a[10]))' "$1" "$2" "$3" "$4" "$e1" "$s1" "$e2" "$s2" "$p1" "$p2"
}
pair xeon-e7-8870v4 periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=5000 cfs scx:default
pair xeon-gold-5218-2s configure:checks=2000 nest scx:nest
pair xeon-e7-8870v4 kbuild:jobs=320,files=3000 nest scx:nest

echo "== the fair class of today (eevdf) beside the 5.9 model (cfs), one run each, side by side"
echo "   target: eevdf >= 0.8x cfs's events/s"
pair xeon-gold-5218-2s configure cfs eevdf
pair xeon-e7-8870v4 kbuild:jobs=320,files=3000 cfs eevdf
pair xeon-e7-8870v4 hackbench:groups=250,loops=100 cfs eevdf
pair xeon-e7-8870v4 periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=3000 cfs eevdf

echo "== the field table: every scheduler warmcore hosts, five workloads, four machines, three seeds (warmcore field)"
field_out=out/bench/field
mkdir -p "$field_out"
"$BIN" field --out "$field_out"
sed -n '/^## Who wins where/,$p' "$field_out/field.md"

echo "== the cross-host agreement check: two small workloads under the same schedulers in the VM and in the simulator, their placement decisions side by side (docs/agreement.md)"
scripts/bench-agree.sh
echo "== the claims' bands: each claim not reproduced across its unknown's range (warmcore reproduce --quick --bands); docs/model.md keeps the table"
bands_out=out/bench/bands
mkdir -p "$bands_out"
# Its own output kept whole, so that a failed run fails the bench; the
# lines that matter here are picked from it.
"$BIN" reproduce --quick --bands --jobs 2 --out "$bands_out" > "$work/bands.txt"
grep -E "band:|claims reproduced" "$work/bands.txt" || true
sed -n '/^## Bands/,$p' "$bands_out/report.md"
echo "== Haiku's power saving against low latency on light periodic tasks (workloads/sweeps/haiku-power.toml; docs/model.md)"
"$BIN" sweep workloads/sweeps/haiku-power.toml --out "$work/haiku-power" --jobs 2 --force | tail -4

if [ "$(id -u)" = 0 ] && command -v perf >/dev/null; then
    echo "== tracer overhead: untraced vs warmcore record vs perf sched record"
    scripts/bench-record.sh
else
    echo "== tracer overhead: skipped (needs root and perf)"
fi
