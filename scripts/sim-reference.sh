#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The reference set of the simulator's speed work: a change that only makes
# the simulator faster must leave every run's trace and report byte for byte
# the same. Runs `warmcore sim --trace --json` for every policy x workload x
# machine x governor x seed below and prints one line per run: its options,
# the SHA-256 of its trace and of its JSON report without `wall_ns` (the one
# field that is the host's, not the model's).
#
#   scripts/sim-reference.sh BINARY > before.txt   # the build before
#   scripts/sim-reference.sh BINARY > after.txt    # the build after
#   diff before.txt after.txt                      # no output: identical
#
# JOBS runs that many at once (default 2). The workloads are smaller than
# the benchmarks' (a run takes well under a second) so that the set can be
# rerun after every change; the storm keeps its shape (1,000 tasks).
# The set (672 runs) takes about a minute on 2 cores.
#
# SET=scx runs instead every policy of warmcore's sched_ext program (each
# of Nest's ways of keeping cores warm, warm with and without its polling
# set) on fewer workloads, machines and seeds: the set for a change to the
# program (crates/sched/src/bpf) that must not change what it does.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 BINARY (a warmcore executable)" >&2
    exit 2
fi
bin=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

policies="cfs eevdf nest smove scx:default scx:nest scx:bpfland"
workloads="configure kbuild:files=200 hackbench:groups=4,loops=30 periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=40 schbench:runtime_ms=300"
# Tasks that spin: on pipes (nas-lu), at barriers (nas, mkl-dnn).
workloads="$workloads nas-lu:planes=50,iterations=10 nas:iterations=20,spin_us=50 mkl-dnn:iterations=200,spin_us=20"
machines="default xeon-gold-5218-2s xeon-e7-8870v4"
governors="powersave schedutil"
seeds="1 7"
case "${SET:-}" in
    "") ;;
    scx)
        policies="scx:default scx:slocal scx:smove scx:nest:warm=pmqos scx:nest:warm=threads scx:nest:warm=off scx:haiku-low-latency scx:haiku-power-saving scx:warm scx:warm:poll_cpus=0"
        workloads="configure kbuild:files=200 hackbench:groups=4,loops=30 periodic:tasks=1000,run_us=100,sleep_us=100,duration_ms=40"
        machines="default xeon-gold-5218-2s"
        seeds="1"
        ;;
    *)
        echo "$0: SET=$SET: unknown set; valid: scx (or unset for the simulator's set)" >&2
        exit 2
        ;;
esac

for p in $policies; do for w in $workloads; do for m in $machines; do
    for g in $governors; do for s in $seeds; do
        echo "--policy $p --workload $w --machine $m --governor $g --seed $s"
    done; done
done; done; done >"$work/runs"

one() {  # the options of one run
    local id
    id=$(printf '%s' "$*" | sha256sum | cut -c1-16)
    # shellcheck disable=SC2068 # the options are words
    if "$bin" sim $@ --json --trace "$work/$id.wct" >"$work/$id.json" 2>"$work/$id.err"; then
        local t j
        t=$(sha256sum <"$work/$id.wct" | cut -c1-64)
        j=$(grep -v '"wall_ns"' "$work/$id.json" | sha256sum | cut -c1-64)
        echo "$* trace=$t report=$j"
    else
        echo "$* failed: $(head -c 200 "$work/$id.err" | tr '\n' ' ')"
    fi
    rm -f "$work/$id.wct" "$work/$id.json" "$work/$id.err"
}
export -f one
export bin work
xargs -P "${JOBS:-2}" -I{} bash -c 'one {}' <"$work/runs" | sort
