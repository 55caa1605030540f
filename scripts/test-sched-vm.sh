#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler's tests inside VMs with sched_ext (python/tests/vm: four
# boots, the guest scripts under guest/, the checks in pytest). Run by
# `make test` and `make test-vm`; arguments go to pytest (-k NAME runs one
# check and boots only what it reads). WC_TEST_SECS shortens the stress;
# WARMCORE_VM_OUTPUT=DIR re-checks kept outputs (out/test-vm) without
# booting.
#
# The peers' boot builds the scx project's loaders it runs into the cache
# first, once (`warmcore vm peers`: 10 to 40 minutes on 2 cores the first
# time, nothing after; python/tests/vm/conftest.py, build_peers), and
# WARMCORE_VM_BOOTS (the same file) picks the boots.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q -rfEs python/tests/vm "$@"
