#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler's speed beside the kernel's own scheduler and the scx
# project's schedulers (the peers of peers/Cargo.toml, their released
# loaders with their default options), in one VM boot (timings drift
# across boots under emulation), in interleaved rotations (kernel default
# slocal smove nest nest-threads nest-nowarm haiku-low-latency
# haiku-power-saving warm, then each peer, kernel default ...;
# nest is nest as it starts by default (PM QoS warm cores), nest-threads
# with warmer threads, nest-nowarm without warm cores). Each figure is the
# median of the per-rotation ratios to the kernel's scheduler (above 1: faster
# than the kernel's), with the lowest and highest ratio. The last lines
# compare default, smove, nest and warm with the fastest peer on each workload,
# as the median of their per-rotation ratios to it.
#
# The timed runs go without --profile (a diagnostic that reads the clock
# twice per operation); select_cpu's cost comes from one profiled pass per
# policy after the rotations. Each rotation also times the kernel's scheduler
# with both pipe ends held on one CPU: under emulation an address-space
# switch on one vCPU costs several times what it costs on hardware, and the
# pipe column says for each scheduler how often its two ends shared a CPU.
# The peers' loaders are built first if they are not in the cache yet
# (`warmcore vm peers`, 10 to 40 minutes on 2 cores).
# Run by `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
ROT=${WC_BENCH_ROTATIONS:-9}
CPUS=${WC_BENCH_CPUS:-4}
MSGS=${WC_BENCH_PIPE_MSGS:-20000}
OURS="default slocal smove nest nest-threads nest-nowarm haiku-low-latency haiku-power-saving warm"
PEERS=$("$BIN" vm peers | cut -d' ' -f1 | tr '\n' ' ')
out=$(mktemp)
trap 'rm -f "$out"' EXIT

read -r -d '' GUEST <<GUEST_EOF || true
workloads() {
  warmcore vm workload pipe --msgs $MSGS | sed "s/^/B \$1 \$2 /"
  warmcore vm workload hackbench --groups 4 --loops 100 | sed "s/^/B \$1 \$2 /"
  warmcore vm workload forkexec --n 200 | sed "s/^/B \$1 \$2 /"
}
r=1
while [ \$r -le $ROT ]; do
  workloads \$r kernel
  taskset -c 1 warmcore vm workload pipe --msgs $MSGS | sed "s/^/B \$r kernel-1cpu /"
  for s in $OURS $PEERS; do
    attach \$s; workloads \$r \$s; detach \$r \$s
  done
  r=\$((r+1))
done
for s in $OURS; do
  attach \$s --profile; workloads 0 \$s > /dev/null; detach 0 \$s
  tail -1 /tmp/s.json | sed "s/^/P 0 \$s /"
done
echo DONE
GUEST_EOF

echo "bench-sched: one ${CPUS}-CPU VM boot, ${ROT} rotations of kernel $OURS $PEERS"
"$BIN" vm --cpus "$CPUS" --peers --timeout $((600 * ROT)) -- sh -c "$(cat scripts/vm-guest-sched.sh)
$GUEST" > "$out"
python3 - "$out" $OURS -- $PEERS <<'PY'
import json, statistics, sys
from collections import defaultdict
res = defaultdict(dict)      # (rotation, sched) -> metric -> value
same = defaultdict(list)     # sched -> share of pipe round trips on one CPU
prof = {}                    # sched -> select_cpu mean ns (profiled pass)
ejected = []
ours = sys.argv[2:sys.argv.index("--")]
peers = sys.argv[sys.argv.index("--") + 1:]
for l in open(sys.argv[1]).read().splitlines():
    parts = l.split(" ", 3)
    if parts[0] == "B" and len(parts) == 4:
        j = json.loads(parts[3]); k = (int(parts[1]), parts[2])
        if j["workload"] == "pipe":
            res[k]["pipe"] = j["msgs_per_s"]; same[parts[2]].append(j["same_cpu"])
        if j["workload"] == "hackbench": res[k]["hackbench"] = 1.0 / j["secs"]
        if j["workload"] == "forkexec": res[k]["forkexec"] = j["procs_per_s"]
    elif parts[0] == "P" and len(parts) == 4:
        j = json.loads(parts[3])
        if j.get("profile"): prof[parts[2]] = j["profile"]["select_cpu"]["mean_ns"]
    elif parts[0] in ("EJECTED", "NOT_ENABLED"):
        ejected.append(l)
if not res:
    print("bench-sched: no results from the VM"); sys.exit(1)
rots = sorted({r for r, _ in res})
kern = {r: res[(r, "kernel")] for r in rots if (r, "kernel") in res}
print(f"rotations: {len(rots)}; ratios to the kernel's scheduler in the same rotation (>1: faster);")
print("kernel: [min-max] of its rates over their median; pipe: also the median share of round trips with both")
print("ends on one CPU")
print(f"{'policy':18} {'pipe msgs/s':>30} {'hackbench 1/time':>22} {'fork/exec procs/s':>22} {'select_cpu ns':>14}")
for s in ["kernel", "kernel-1cpu", *ours, *peers]:
    cells = []
    for m in ["pipe", "hackbench", "forkexec"]:
        if s == "kernel":
            # Its own spread: each rotation's rate over the median rate.
            v = [res[(r, s)][m] for r in rots if m in res.get((r, s), {})]
            med = statistics.median(v)
            cells.append((f"{med:.0f}/s" if m != "hackbench" else f"{1/med:.2f} s") + f" [{min(v)/med:.2f}-{max(v)/med:.2f}]")
            continue
        rat = [res[(r, s)][m] / kern[r][m] for r in rots if r in kern and m in res.get((r, s), {})]
        cells.append(f"{statistics.median(rat):.2f}x [{min(rat):.2f}-{max(rat):.2f}]" if rat else "-")
    if same.get(s):
        cells[0] += f" {100 * statistics.median(same[s]):3.0f}%"
    cells.append(f"{prof[s]:.0f}" if s in prof else "-")
    print(f"{s:18} {cells[0]:>30} " + " ".join(f"{c:>22}" for c in cells[1:3]) + f" {cells[3]:>14}")
# Ours against the fastest peer on each workload (the highest median ratio
# to the kernel's), in the same rotations.
def med_ratio(a, b, m):
    rat = [res[(r, a)][m] / res[(r, b)][m] for r in rots if m in res.get((r, a), {}) and m in res.get((r, b), {})]
    return (statistics.median(rat), min(rat), max(rat)) if rat else None
if peers:
    print("against the fastest peer on each workload (its median ratio to the kernel's): ratio of rates in the same rotation")
    for m in ["pipe", "hackbench", "forkexec"]:
        meds = {p: med_ratio(p, "kernel", m) for p in peers}
        meds = {p: v[0] for p, v in meds.items() if v}
        if not meds:
            continue
        best = max(meds, key=meds.get)
        cells = []
        for s in ["default", "smove", "nest", "warm"]:
            v = med_ratio(s, best, m)
            cells.append(f"{s} {v[0]:.2f}x [{v[1]:.2f}-{v[2]:.2f}]" if v else f"{s} -")
        print(f"  {m:9} vs {best} ({meds[best]:.2f}x): " + ", ".join(cells))
if ejected:
    print("ejections:", ejected)
PY
