#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make test's phases, after make build, on two lanes that take them from one
# queue: the VM lane (the last CPU) and the build lane (the other CPUs).
# The VM lane starts with the scheduler's main boot (vm-main, its longest
# phase), the build lane with cargo test; then each lane, when free, takes
# the next phase of the queue: the packages and pytest, the VM suite's
# other boots (vm-rest), the fuzz build and then each fuzz target alone, so
# that neither CPU waits at the end while the other still has a queue.
# A VM boot is a run of VM-COMMAND over some of its boots
# (WARMCORE_VM_BOOTS, python/tests/vm/conftest.py). QEMU emulates a guest on
# one host thread for minutes, so two boots on two CPUs take half the time
# of one after the other.
#
# Every phase runs pinned (taskset) to its lane's CPUs, so that no compile
# shares a QEMU's CPU: the guest's clock follows the host's, so a QEMU
# thread that shares its CPU with a compile runs the guest too slowly for
# the kernel's sched_ext watchdog (haiku-power-saving was ejected with
# "watchdog failed to check in for 5.0s" in three runs beside unconfined
# builds on 2 cores, and in none alone). With one CPU, or
# WARMCORE_TEST_VM_BESIDE=0, one lane runs every phase, the VM suite last
# and whole (vm).
#
# Every phase runs even when one before it failed, but for a fuzz target,
# which needs the fuzz build. Each phase's output is in LOGDIR/PHASE.log; the
# terminal gets a line as each starts and ends, and the last lines name
# each phase with its status and time, then the end of each failed one's
# log. Exit status: 0 when every phase passed.
#
# Usage: test-phases.sh LOGDIR VM-COMMAND
set -uo pipefail
cd "$(dirname "$0")/.."
logdir=${1:?usage: test-phases.sh LOGDIR VM-COMMAND}
vm_cmd=${2:?usage: test-phases.sh LOGDIR VM-COMMAND}
mkdir -p "$logdir"
rm -rf "$logdir"/*.log "$logdir"/*.status "$logdir"/*.claim

# The fuzz targets (fuzz/fuzz_targets), each a phase of its own.
fuzz_targets=$(scripts/fuzz-short.sh --list) || exit 1

ncpu=$(nproc)
beside=${WARMCORE_TEST_VM_BESIDE:-1}
[ "$ncpu" -ge 2 ] || beside=0
# pytest before the VM's other boots: two QEMUs side by side slow each
# other (the main boot took 359 s beside the other boots, 317 to 329 s
# beside builds and tests), so the other boots wait for the main one's
# lane unless the build lane runs out of other phases first.
if [ "$beside" = 1 ]; then
    vm_first=vm-main
    queue=(pytest vm-rest fuzz-build)
else
    vm_first=
    queue=(pytest fuzz-build)
fi
for t in $fuzz_targets; do queue+=("fuzz-$t"); done
[ "$beside" = 1 ] || queue+=(vm)
phases=(cargo-test $vm_first "${queue[@]}")

# What a phase runs. The compiler cache's server is the phase's own, inside
# its CPU set.
phase_command() {
    case $1 in
    cargo-test) echo 'scripts/with-sccache.sh "${CARGO:-cargo}" test --release --workspace' ;;
    pytest) echo 'scripts/with-sccache.sh scripts/dist.sh && .venv/bin/python -m pytest -q -rs --durations=10 python/tests' ;;
    fuzz-build) echo 'scripts/with-sccache.sh scripts/fuzz-short.sh --build' ;;
    fuzz-*) echo "scripts/fuzz-short.sh --run ${1#fuzz-}" ;;
    vm-main) echo 'WARMCORE_VM_BOOTS=main bash -c "$vm_cmd"' ;;
    vm-rest) echo 'WARMCORE_VM_BOOTS=-main bash -c "$vm_cmd"' ;;
    vm) echo 'WARMCORE_VM_BOOTS= bash -c "$vm_cmd"' ;;
    esac
}

# The phase a phase needs finished first, if any.
needs() {
    case $1 in
    fuzz-build) ;;
    fuzz-*) echo fuzz-build ;;
    esac
}

# A phase's status ("STATUS SECONDS") goes to a file, so that every lane
# reports the same way.
run_phase() {
    local name=$1 cpus=$2 start=$SECONDS status=0 pin=()
    [ -z "$cpus" ] || pin=(taskset -c "$cpus")
    echo "make test: $name started${cpus:+ on CPU $cpus} ($logdir/$name.log)"
    "${pin[@]}" bash -c "$(phase_command "$name")" < /dev/null > "$logdir/$name.log" 2>&1 || status=$?
    local secs=$((SECONDS - start))
    echo "$status $secs" > "$logdir/$name.status"
    if [ "$status" = 0 ]; then
        echo "make test: $name passed ($secs s)"
    else
        echo "make test: $name FAILED (exit $status)"
    fi
}

# A lane: its first phase, then the queue's next unclaimed phase whose
# need is met, until none is left. A phase is claimed by making its claim
# directory, which only one lane can.
lane() {
    local cpus=$1 first=$2 name need left
    if [ -n "$first" ] && mkdir "$logdir/$first.claim" 2>/dev/null; then
        run_phase "$first" "$cpus"
    fi
    while :; do
        left=0
        for name in "${queue[@]}"; do
            [ ! -d "$logdir/$name.claim" ] || continue
            left=1
            need=$(needs "$name")
            if [ -n "$need" ] && [ ! -e "$logdir/$need.status" ]; then
                continue
            fi
            mkdir "$logdir/$name.claim" 2>/dev/null || continue
            if [ -n "$need" ] && [ "$(cut -d' ' -f1 "$logdir/$need.status")" != 0 ]; then
                echo "$need failed: not run" > "$logdir/$name.log"
                echo "1 0" > "$logdir/$name.status"
                continue 2
            fi
            run_phase "$name" "$cpus"
            continue 2
        done
        [ "$left" = 1 ] || return 0
        sleep 1
    done
}
export -f run_phase phase_command needs lane
export logdir vm_cmd

lane_pids=()
# Each lane in a session of its own, so that an interrupted make test ends
# its QEMU and builds too (a background job of a script does not get the
# terminal's Ctrl-C).
trap 'for p in "${lane_pids[@]}"; do kill -- -"$p" 2>/dev/null; done; exit 130' INT TERM
if [ "$beside" = 1 ]; then
    build_cpus=0
    [ "$ncpu" = 2 ] || build_cpus=0-$((ncpu - 2))
    setsid bash -c 'queue=($2); lane "$0" "$1"' "$((ncpu - 1))" vm-main "${queue[*]}" &
    lane_pids+=($!)
    setsid bash -c 'queue=($2); lane "$0" "$1"' "$build_cpus" cargo-test "${queue[*]}" &
    lane_pids+=($!)
else
    setsid bash -c 'queue=($2); lane "$0" "$1"' "" cargo-test "${queue[*]}" &
    lane_pids+=($!)
fi
wait "${lane_pids[@]}"
trap - INT TERM
rm -rf "$logdir"/*.claim

failed=()
for f in "${phases[@]}"; do
    if [ ! -e "$logdir/$f.status" ]; then
        echo "make test: $f did not run"
        failed+=("$f")
        continue
    fi
    read -r status secs < "$logdir/$f.status"
    if [ "$status" = 0 ]; then
        echo "make test: $f passed (${secs} s)"
    else
        echo "make test: $f FAILED (exit $status, ${secs} s): see $logdir/$f.log"
        failed+=("$f")
    fi
done
for f in "${failed[@]}"; do
    [ -e "$logdir/$f.log" ] || continue
    echo "== the last lines of $logdir/$f.log:"
    tail -n 40 "$logdir/$f.log"
done
if ((${#failed[@]})); then
    echo "make test: FAILED: ${failed[*]}"
    exit 1
fi
