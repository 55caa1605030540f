#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make test's phases, after make build. The scheduler's VM suite runs beside
# the others in two lanes, each a run of VM-COMMAND over some of its boots
# (WARMCORE_VM_BOOTS, python/tests/vm/conftest.py): vm-main, the main boot,
# on the last CPU from the start; vm-rest, the other boots, on whichever
# CPUs free first, the last one once the main boot is done or the others
# once the foreground phases (cargo test, pytest, the fuzz pass, one after
# another) are done. QEMU emulates a guest on one host thread for minutes,
# so two boots on two CPUs take half the time of one after the other.
# Every lane and phase is pinned (taskset) so that no compile shares a
# QEMU's CPU: the guest's clock follows the host's, so a QEMU thread that
# shares its CPU with a compile runs the guest too slowly for the kernel's
# sched_ext watchdog (haiku-power-saving was ejected with "watchdog failed
# to check in for 5.0s" in three runs beside unconfined builds on 2 cores,
# and in none alone). With one CPU, or WARMCORE_TEST_VM_BESIDE=0, the VM
# suite runs last, alone, as one phase (vm). Every phase runs even when one
# before it failed; each phase's output is kept in LOGDIR/PHASE.log (the
# foreground phases also print theirs), and the last lines name each phase
# with its status and time. Exit status: 0 when every phase passed.
#
# Usage: test-phases.sh LOGDIR VM-COMMAND
set -uo pipefail
cd "$(dirname "$0")/.."
logdir=${1:?usage: test-phases.sh LOGDIR VM-COMMAND}
vm_cmd=${2:?usage: test-phases.sh LOGDIR VM-COMMAND}
mkdir -p "$logdir"
rm -f "$logdir"/*.log "$logdir"/*.status "$logdir/foreground.done"

# A phase's status goes to a file, so that the background phases report the
# same way as the others.
run_phase() {
    local name=$1; shift
    local start=$SECONDS status=0
    "$@" || status=$?
    echo "$status $((SECONDS - start))" > "$logdir/$name.status"
    return "$status"
}

# The VM command over BOOTS (all when empty) on CPUS (any when empty), its
# output in LOGDIR/NAME.log.
vm_lane() {
    local name=$1 boots=$2 cpus=$3
    local pin=()
    [ -z "$cpus" ] || pin=(taskset -c "$cpus")
    run_phase "$name" env WARMCORE_VM_BOOTS="$boots" "${pin[@]}" bash -c "$vm_cmd" \
        < /dev/null > "$logdir/$name.log" 2>&1
}
export -f run_phase vm_lane
export logdir vm_cmd

ncpu=$(nproc)
beside=${WARMCORE_TEST_VM_BESIDE:-1}
[ "$ncpu" -ge 2 ] || beside=0
vm_cpu=$((ncpu - 1))
fg_cpus=
lane_pids=()
# Each lane in a session of its own, so that an interrupted make test ends
# its QEMU too (a background job of a script does not get the terminal's
# Ctrl-C).
trap 'for p in "${lane_pids[@]}"; do kill -- -"$p" 2>/dev/null; done; exit 130' INT TERM
if [ "$beside" = 1 ]; then
    fg_cpus=0
    [ "$ncpu" = 2 ] || fg_cpus=0-$((ncpu - 2))
    echo "make test: the VM suite's main boot runs in the background on CPU $vm_cpu, its output in $logdir/vm-main.log; its other boots follow on whichever CPUs free first ($logdir/vm-rest.log)"
    setsid bash -c 'vm_lane vm-main main "$0"' "$vm_cpu" &
    lane_pids+=($!)
    export vm_cpu fg_cpus
    setsid bash -c '
        while [ ! -e "$logdir/vm-main.status" ] && [ ! -e "$logdir/foreground.done" ]; do sleep 1; done
        cpus=$fg_cpus
        [ ! -e "$logdir/vm-main.status" ] || cpus=$vm_cpu
        echo "make test: the VM suite'\''s other boots start on CPU $cpus"
        vm_lane vm-rest -main "$cpus"' &
    lane_pids+=($!)
fi

foreground() {
    local name=$1; shift
    local pin=()
    [ -z "$fg_cpus" ] || pin=(taskset -c "$fg_cpus")
    echo "== make test: $name"
    # The compiler cache's server is the phase's own, inside its CPU set.
    run_phase "$name" "${pin[@]}" scripts/with-sccache.sh "$@" 2>&1 | tee "$logdir/$name.log"
}

foreground cargo-test "${CARGO:-cargo}" test --release --workspace
if [ -d python/tests ]; then
    foreground pytest .venv/bin/python -m pytest -q -rs python/tests
fi
foreground fuzz scripts/fuzz-short.sh
touch "$logdir/foreground.done"
if [ "$beside" != 1 ]; then
    echo "== make test: the VM suite ($vm_cmd), its output in $logdir/vm.log"
    setsid bash -c 'vm_lane vm "" ""' &
    lane_pids+=($!)
fi

echo "== make test: waiting for the VM suite (tail -f $logdir/vm*.log)"
wait "${lane_pids[@]}"
trap - INT TERM

failed=()
for f in cargo-test pytest fuzz vm vm-main vm-rest; do
    [ -e "$logdir/$f.status" ] || continue
    read -r status secs < "$logdir/$f.status"
    if [ "$status" = 0 ]; then
        echo "make test: $f passed (${secs} s)"
    else
        echo "make test: $f FAILED (exit $status, ${secs} s): see $logdir/$f.log"
        failed+=("$f")
    fi
done
for f in "${failed[@]}"; do
    if [[ $f == vm* ]]; then
        echo "== the last lines of $logdir/$f.log:"
        tail -n 30 "$logdir/$f.log"
    fi
done
if ((${#failed[@]})); then
    echo "make test: FAILED: ${failed[*]}"
    exit 1
fi
