#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs a command that compiles (make build, make dist, a test phase) with
# sccache as the compiler cache of every rustc cargo runs (RUSTC_WRAPPER;
# the cc crate then caches the C of the build scripts too). Its cache lives
# outside the clone (sccache's default, ~/.cache/sccache), so a fresh clone
# at the path of an earlier one (as CI's) takes most compiles from it; at
# another path almost none hit, as the keys carry the clone's path
# (BENCHMARKS.md, The compiler cache).
#
# The server is our own: on a free port of its own (SCCACHE_SERVER_PORT),
# so that we never use or stop anyone else's; started here, in the
# foreground (SCCACHE_NO_DAEMON) as this script's child, so that it and the
# compiles it runs stay in this command's CPU set (make test runs its
# foreground phases under taskset, off the VM suite's CPU) and process
# group (Ctrl-C ends them with the command; a daemon's compiles went on);
# stopped when the command ends, also on failure (its hit counts are
# printed then). SCCACHE_IDLE_TIMEOUT ends it should this script be
# killed outright: an hour, since only a new request restarts
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
SCCACHE_START_SERVER=1 SCCACHE_NO_DAEMON=1 sccache >/dev/null 2>&1 &
server=$!
# Until it listens: a client that finds no server starts a daemon of its own
# (and `sccache --start-server` gives up after 10 s, which a loaded machine
# exceeded). Without a server in a minute, the command runs without it.
tries=0
until (exec 3<>"/dev/tcp/127.0.0.1/$SCCACHE_SERVER_PORT") 2>/dev/null; do
    tries=$((tries + 1))
    if ! kill -0 "$server" 2>/dev/null || [ "$tries" -gt 600 ]; then
        echo "with-sccache: the sccache server did not start: running without the cache" >&2
        kill "$server" 2>/dev/null || true
        unset RUSTC_WRAPPER
        exec "$@"
    fi
    sleep 0.1
done
stop() {
    sccache --stop-server 2>/dev/null | awk '
        /^Compile requests +[0-9]+$/ { r = $NF } /^Cache hits +[0-9]+$/          { h = $NF }
        /^Cache misses +[0-9]+$/     { m = $NF } /^Non-cacheable calls +[0-9]+$/ { n = $NF }
        END { if (r != "") printf "sccache: %d compile requests, %d hits, %d misses, %d not cacheable\n", r, h, m, n }' || true
    wait "$server" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$@"
