#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs a command that compiles (make build, make dist, a test phase) with
# sccache as the compiler cache of every rustc cargo runs (RUSTC_WRAPPER;
# the cc crate then caches the C of the build scripts too). Its cache lives
# outside the clone (sccache's default, ~/.cache/sccache), so a fresh clone
# compiles only the workspace's own crates: the dependencies are hits.
#
# The server is our own: on a free port of its own (SCCACHE_SERVER_PORT),
# so that we never use or stop anyone else's; started here, so that it
# compiles inside this command's CPU set (make test runs its foreground
# phases under taskset, off the VM suite's CPU, and the server inherits
# that); stopped when the command ends, also on failure or Ctrl-C (its
# hit counts are printed then). SCCACHE_IDLE_TIMEOUT ends it should this
# script be killed outright: an hour, since only a new request restarts
# sccache's idle clock, not a compile in progress (with 120 s the server
# left in the middle of arrow's crates on a loaded machine, and cargo
# compiled them again without the cache).
#
# Without sccache, or with RUSTC_WRAPPER already set (`RUSTC_WRAPPER=`
# builds without the cache), the command runs as it is. A command nested
# in another's (fuzz-short.sh in make test's phase) uses the outer server.
#
# Usage: with-sccache.sh COMMAND [ARG...]
set -euo pipefail
if [ -n "${RUSTC_WRAPPER+set}" ] || ! command -v sccache >/dev/null; then
    exec "$@"
fi
SCCACHE_SERVER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export SCCACHE_SERVER_PORT RUSTC_WRAPPER=sccache SCCACHE_IDLE_TIMEOUT=${SCCACHE_IDLE_TIMEOUT:-3600}
sccache --start-server >/dev/null
stop() {
    sccache --stop-server 2>/dev/null | awk '
        /^Compile requests /  { r = $NF } /^Cache hits /          { h = $NF }
        /^Cache misses /      { m = $NF } /^Non-cacheable calls / { n = $NF }
        END { if (r != "") printf "sccache: %d compile requests, %d hits, %d misses, %d not cacheable\n", r, h, m, n }' || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$@"
