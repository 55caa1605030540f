#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The last line of make test: what the tests skipped, from the log they
# append to (WARMCORE_SKIP_LOG, one "PREREQUISITE: TEST: WHAT" a line).
set -euo pipefail
log=${1:?usage: test-skipped.sh LOG}
if [ ! -s "$log" ]; then
    echo "make test: nothing skipped"
    exit 0
fi
n=$(wc -l < "$log")
by=$(cut -d: -f1 "$log" | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')
echo "make test: skipped $n test(s), by prerequisite: $by (WARMCORE_TEST_SKIP; list in $log)"
