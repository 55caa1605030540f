#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make test's phases, after make build. The scheduler's VM suite runs in the
# background from the start: QEMU emulates the guest on one host thread for
# several minutes, while the other phases (cargo test, pytest, the fuzz pass)
# run one after another beside it. Every phase runs even when one before it
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

echo "make test: the VM suite runs in the background ($vm_cmd), its output in $logdir/vm.log"
# In a session of its own, so that an interrupted make test ends QEMU too
# (a background job of a script does not get the terminal's Ctrl-C).
export logdir vm_cmd
setsid bash -c 'start=$SECONDS status=0
    bash -c "$vm_cmd" < /dev/null > "$logdir/vm.log" 2>&1 || status=$?
    echo "$status $((SECONDS - start))" > "$logdir/vm.status"' &
vm_pid=$!
trap 'kill -- -$vm_pid 2>/dev/null; exit 130' INT TERM

foreground() {
    local name=$1; shift
    echo "== make test: $name"
    run_phase "$name" "$@" 2>&1 | tee "$logdir/$name.log"
}

foreground cargo-test "${CARGO:-cargo}" test --release --workspace
if [ -d python/tests ]; then
    foreground pytest .venv/bin/python -m pytest -q -rs python/tests
fi
foreground fuzz scripts/fuzz-short.sh

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
