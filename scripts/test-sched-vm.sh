#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler's tests inside VMs with sched_ext (python/tests/vm: four
# boots, the guest scripts under guest/, the checks in pytest). Run by
# `make test` and `make test-vm`; arguments go to pytest (-k NAME runs one
# check and boots only what it reads). WC_TEST_SECS shortens the stress;
# WARMCORE_VM_OUTPUT=DIR re-checks kept outputs (out/test-vm) without
# booting.
#
# First the scx project's loaders that the peers' boot runs are built into
# the cache, once (`warmcore vm peers`: 10 to 40 minutes on 2 cores the
# first time, nothing after), with cargo's progress here rather than in a
# boot's kept stderr. A loader that does not build fails the peers' tests
# (the boot that needs it says why); the other boots run all the same.
# WARMCORE_VM_BOOTS (python/tests/vm/conftest.py) picks the boots: without
# the peers' boot, nothing is built.
set -euo pipefail
cd "$(dirname "$0")/.."
peers_boot() {
    local boots=${WARMCORE_VM_BOOTS:-}
    boots=" ${boots//,/ } "
    case $boots in
        *" -peers "*) return 1 ;;
        *" peers "* | *" -"* | "  ") return 0 ;;
        *) return 1 ;;
    esac
}
if [ -z "${WARMCORE_VM_OUTPUT:-}" ] && peers_boot; then
    "${WARMCORE_BIN:-target/release/warmcore}" vm peers >&2 \
        || echo "test-sched-vm: the peers' loaders did not all build (above): their tests fail below" >&2
fi
exec .venv/bin/python -m pytest -q -rfEs python/tests/vm "$@"
