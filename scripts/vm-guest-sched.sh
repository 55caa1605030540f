# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# The guest side that the VM benchmarks (bench-sched.sh, bench-haiku-path.sh)
# put before their own guest script: a scheduler attached and detached.
#
# attach POLICY [ARG...]: starts it and waits until sched_ext says enabled
# (NOT_ENABLED and the loader's errors otherwise). POLICY is a policy of
# `warmcore sched` (ARGs are its options), nest-nowarm or nest-threads
# (nest with --nest-warm off or threads), a peer's loader scx_NAME (its
# default options), or kernel: the kernel's own scheduler, nothing to
# attach. The loader's stats go to /tmp/s.json, its errors to /tmp/s.err;
# S is its process, empty under kernel.
# detach ROTATION POLICY: stops it; EJECTED and its errors if it did not
# end cleanly.
attach() {
  pol=$1; shift
  S=
  [ $pol = kernel ] && return 0
  [ $pol = nest-nowarm ] && set -- --nest-warm off "$@" && pol=nest
  [ $pol = nest-threads ] && set -- --nest-warm threads "$@" && pol=nest
  case $pol in
  scx_*) $pol > /tmp/s.json 2> /tmp/s.err & ;;
  *) warmcore sched --policy $pol "$@" --stats 1000 > /tmp/s.json 2> /tmp/s.err & ;;
  esac
  S=$!
  i=0; while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
  [ "$(cat /sys/kernel/sched_ext/state)" = enabled ] || { echo "NOT_ENABLED $pol"; cat /tmp/s.err; }
}
detach() {
  [ -n "$S" ] || return 0
  kill -INT $S; wait $S || { echo "EJECTED $1 $2"; cat /tmp/s.err; }
}
