#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make test's phases, after make build. The scheduler's VM suite runs in
# the background from the start, on a CPU of its own (taskset): QEMU
# emulates the guest on one host thread for several minutes, while the other
# phases (cargo test, pytest, the fuzz pass) run one after another on the
# remaining CPUs. The guest's clock follows the host's, so a QEMU thread
# that shares its CPU with a compile runs the guest too slowly for the
# kernel's sched_ext watchdog (haiku-power-saving was ejected with
# "watchdog failed to check in for 5.0s" in three runs beside unconfined
# builds on 2 cores, and in none alone): the other phases are confined to
# the other CPUs. With one CPU, or WARMCORE_TEST_VM_BESIDE=0, the
# VM suite runs last, alone. Every phase runs even when one before it
# failed; each phase's output is kept in LOGDIR/PHASE.log (the foreground
# phases also print theirs), and the last lines name each phase with its
# status and time. Exit status: 0 when every phase passed.
#
# Usage: test-phases.sh LOGDIR VM-COMMAND
set -uo pipefail
cd "$(dirname "$0")/.."
logdir=${1:?usage: test-phases.sh LOGDIR VM-COMMAND}
vm_cmd=${2:?usage: test-phases.sh LOGDIR VM-COMMAND}
mkdir -p "$logdir"
rm -f "$logdir"/*.log "$logdir"/*.status

# A phase's status goes to a file, so that the background phase reports the
# same way as the others.
run_phase() {
    local name=$1; shift
    local start=$SECONDS status=0
    "$@" || status=$?
    echo "$status $((SECONDS - start))" > "$logdir/$name.status"
    return "$status"
}

ncpu=$(nproc)
beside=${WARMCORE_TEST_VM_BESIDE:-$(( ncpu >= 2 ))}
vm_cpu=$((ncpu - 1))
others=()
if [ "$beside" = 1 ] && [ "$ncpu" -ge 2 ]; then
    # The last CPU for QEMU, the others for everything else.
    others=(taskset -c "0-$((ncpu - 2))")
fi
vm_pid=
start_vm() {
    # In a session of its own, so that an interrupted make test ends QEMU
    # too (a background job of a script does not get the terminal's Ctrl-C).
    export logdir vm_cmd
    local pin=()
    [ ${#others[@]} = 0 ] || pin=(taskset -c "$vm_cpu")
    setsid "${pin[@]}" bash -c 'start=$SECONDS status=0
        bash -c "$vm_cmd" < /dev/null > "$logdir/vm.log" 2>&1 || status=$?
        echo "$status $((SECONDS - start))" > "$logdir/vm.status"' &
    vm_pid=$!
    trap 'kill -- -$vm_pid 2>/dev/null; exit 130' INT TERM
}
if [ "$beside" = 1 ]; then
    echo "make test: the VM suite runs in the background on CPU $vm_cpu ($vm_cmd), its output in $logdir/vm.log"
    start_vm
fi

foreground() {
    local name=$1; shift
    echo "== make test: $name"
    # The compiler cache's server is the phase's own, inside its CPU set.
    run_phase "$name" "${others[@]}" scripts/with-sccache.sh "$@" 2>&1 | tee "$logdir/$name.log"
}

foreground cargo-test "${CARGO:-cargo}" test --release --workspace
if [ -d python/tests ]; then
    foreground pytest .venv/bin/python -m pytest -q -rs python/tests
fi
foreground fuzz scripts/fuzz-short.sh
if [ "$beside" != 1 ]; then
    echo "== make test: the VM suite ($vm_cmd), its output in $logdir/vm.log"
    start_vm
fi

if [ ! -e "$logdir/vm.status" ]; then
    echo "== make test: waiting for the VM suite (tail -f $logdir/vm.log)"
fi
wait "$vm_pid"
trap - INT TERM

failed=()
for f in cargo-test pytest fuzz vm; do
    [ -e "$logdir/$f.status" ] || continue
    read -r status secs < "$logdir/$f.status"
    if [ "$status" = 0 ]; then
        echo "make test: $f passed (${secs} s)"
    else
        echo "make test: $f FAILED (exit $status, ${secs} s): see $logdir/$f.log"
        failed+=("$f")
    fi
done
if ((${#failed[@]})); then
    if [[ " ${failed[*]} " == *" vm "* ]]; then
        echo "== the VM suite's last lines ($logdir/vm.log):"
        tail -n 30 "$logdir/vm.log"
    fi
    echo "make test: FAILED: ${failed[*]}"
    exit 1
fi
