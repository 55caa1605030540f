# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by the scripts that time two warmcore builds side by side
# (bench-compare.sh, bench-speed.sh) with their own arguments:
#
#   . "$(dirname "$0")/bench-builds.sh" "$@"
#
# Checks them (BEFORE_BINARY AFTER_BINARY), sets `before`, `after`, `rounds`
# (ROUNDS, default 3) and `work` (a temporary directory, removed at exit),
# and defines each_round.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: $0 BEFORE_BINARY AFTER_BINARY (two warmcore executables)" >&2
    exit 2
fi
before=$1
after=$2
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# each_round N FN: for each run 0..N-1, ROUNDS rounds of BEFORE then AFTER,
# each `FN RUN BUILD ROUND BINARY` (BUILD: before or after), so that the
# machine's load falls on both builds alike.
each_round() {
    local n=$1 fn=$2 i r b bin
    for ((i = 0; i < n; i++)); do
        for r in $(seq "$rounds"); do
            for b in before after; do
                bin=$before
                [ "$b" = after ] && bin=$after
                "$fn" "$i" "$b" "$r" "$bin"
            done
        done
    done
}
