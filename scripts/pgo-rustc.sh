#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The rustc wrapper of scripts/build-pgo.sh: passes PGO_RUSTFLAGS (the
# instrumentation, or the profile to use) to warmcore's own crates alone,
# whose code is what the runs spend their time in. The dependencies compile
# as in the ordinary build, so the compiler cache serves them, and a new
# profile compiles again only the crates that read it. Runs rustc through
# the wrapper that was set before it (sccache), if any.
#
#   RUSTC_WRAPPER=scripts/pgo-rustc.sh PGO_RUSTFLAGS=... cargo build
set -euo pipefail
rustc=$1
shift
extra=()
prev=
for a in "$@"; do
    if [ "$prev" = --crate-name ] && [[ $a == warmcore* ]]; then
        read -ra extra <<<"$PGO_RUSTFLAGS"
    fi
    prev=$a
done
exec ${PGO_INNER_WRAPPER:+"$PGO_INNER_WRAPPER"} "$rustc" "$@" "${extra[@]}"
