#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The cross-host agreement check (docs/agreement.md): the same two small
# workloads, a fork/wait chain and a pipe pair, under the same schedulers
# in the VM (`warmcore vm --cpus 4 --peers`, recorded by `warmcore record`)
# and in the simulator (the 4-CPU machine file of that VM), and the
# placement decisions that do not depend on timing side by side, each
# trace measured by the same code (`warmcore trace stats --placement`).
#
# The VM part is one boot: WC_AGREE_ROTATIONS rotations (3) of every
# scheduler, each retried up to WC_AGREE_TRIES times (3) when it was
# ejected (an emulated guest starved by a busy host trips the sched_ext
# watchdog). The simulator part runs each pair at WC_AGREE_SEEDS seeds.
# WC_AGREE_VM_LOG=FILE reads a kept boot's output instead of booting.
# The table goes to standard output and to out/bench/agree/table.md, the
# boot's output to out/bench/agree/vm.log. Run by `make bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
ROT=${WC_AGREE_ROTATIONS:-3}
TRIES=${WC_AGREE_TRIES:-3}
SEEDS=${WC_AGREE_SEEDS:-1 2 3}
MACHINE=machines/qemu-tcg-4.toml
OUT=out/bench/agree
# Each scheduler as the VM runs it and as the simulator does.
PAIRS="kernel=eevdf default=scx:default nest=scx:nest"
for p in $("$BIN" vm peers | cut -d' ' -f1); do
    PAIRS="$PAIRS $p=scx:${p#scx_}"
done
# Each workload as `warmcore vm workload` runs it (its arguments, comma-
# separated) and as the simulator's file says it (workloads/agree/).
WORKLOADS="chain=--n,100,--work-us,1000 pipe=--msgs,2000"
mkdir -p "$OUT/sim"

if [ -z "${WC_AGREE_VM_LOG:-}" ]; then
    SCHEDS=$(for p in $PAIRS; do printf '%s ' "${p%%=*}"; done)
    echo "bench-agree: one 4-CPU VM boot, $ROT rotations of $SCHEDS; host load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    GUEST=python/tests/vm/guest
    script="$(cat $GUEST/lib.sh)
ROT=$ROT; TRIES=$TRIES; SCHEDS='$SCHEDS'; WORKLOADS='$WORKLOADS'
$(cat $GUEST/agree.sh)"
    "$BIN" vm --cpus 4 --peers --timeout $((1800 * ROT)) -- sh -c "$script" > "$OUT/vm.log"
    echo "bench-agree: boot done; host load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    vmlog=$OUT/vm.log
else
    vmlog=$WC_AGREE_VM_LOG
fi

for p in $PAIRS; do
    pol=${p#*=}
    for w in $WORKLOADS; do
        w=${w%%=*}
        for s in $SEEDS; do
            f="$OUT/sim/$w-${pol//:/_}-$s"
            "$BIN" sim --machine $MACHINE --workload workloads/agree/$w.toml --policy "$pol" --seed "$s" --governor performance \
                --trace "$f.wct" --json > "$f.json"
            "$BIN" trace stats --placement --json "$f.wct" | tr -d '\n ' > "$f.placement.json"
        done
    done
done

python3 - "$vmlog" "$OUT" "$PAIRS" "$WORKLOADS" "$SEEDS" <<'PY' | tee "$OUT/table.md"
import json, pathlib, statistics, sys
vmlog, out, pairs, workloads, seeds = sys.argv[1:]
pairs = [p.split("=", 1) for p in pairs.split()]
workloads = [w.split("=", 1)[0] for w in workloads.split()]
seeds = seeds.split()
vm, ejected, guest = {}, [], []
for l in open(vmlog, errors="replace").read().splitlines():
    parts = l.split(" ", 4)
    if parts[0] == "AGREE" and len(parts) == 5:
        vm.setdefault((parts[2], parts[3]), []).append(json.loads(parts[4]))
    elif parts[0] in ("EJECTED", "NOT_ENABLED", "RECORD_FAILED"):
        ejected.append(l)
    elif parts[0] == "GUEST":
        guest.append(l[6:])
sim = {}
for vmname, pol in pairs:
    for w in workloads:
        for s in seeds:
            f = pathlib.Path(out) / "sim" / f"{w}-{pol.replace(':', '_')}-{s}.placement.json"
            sim.setdefault((pol, w), []).append(json.loads(f.read_text()))

# Each figure: (column, how to read it from a run, format).
def pct(k):
    return lambda r: None if r["placement"][k] is None else 100 * r["placement"][k]
figs = [
    ("on prev %", pct("on_prev"), "{:.0f}"),
    ("on waker %", pct("on_waker"), "{:.0f}"),
    ("migr/wake", lambda r: r["placement"]["migrations_per_wakeup"], "{:.2f}"),
    ("ran on target %", pct("ran_on_target"), "{:.0f}"),
    ("forks on parent %", pct("forks_on_parent"), "{:.0f}"),
    ("CPUs >=5%", lambda r: r["placement"]["cpus_used"], "{:.0f}"),
    ("wake-ups", lambda r: r["placement"]["wakeups"], "{:.0f}"),
]
def cell(runs, get, fmt):
    v = [x for x in (get(r) for r in runs) if x is not None]
    if not v:
        return "-"
    med, lo, hi = statistics.median(v), min(v), max(v)
    s = fmt.format(med)
    if fmt.format(lo) != fmt.format(hi):
        s += f" [{fmt.format(lo)}-{fmt.format(hi)}]"
    return s
print("Each cell: VM / simulator, the median over the VM's rotations and the simulator's seeds, [min-max] where they differ.")
print()
for w in workloads:
    print(f"### {w}")
    print()
    print("| scheduler (VM / simulator) | " + " | ".join(f[0] for f in figs) + " |")
    print("|---|" + "---|" * len(figs))
    for vmname, pol in pairs:
        a, b = vm.get((vmname, w), []), sim[(pol, w)]
        cells = [f"{cell(a, g, fmt)} / {cell(b, g, fmt)}" for _, g, fmt in figs]
        print(f"| {vmname} / {pol} ({len(a)} runs in the VM) | " + " | ".join(cells) + " |")
    print()
print("The guest: " + "; ".join(guest))
print("Ejections and failures in the VM (each retried): " + ("; ".join(ejected) if ejected else "none"))
PY
