# SPDX-License-Identifier: GPL-2.0-only
# The VM's side of the cross-host agreement check (scripts/bench-agree.sh,
# docs/agreement.md), after lib.sh: in $ROT rotations, each scheduler of
# $SCHEDS (kernel: the VM kernel's own fair class; a policy of warmcore
# sched; scx_NAME: a peer's loader with its default options) runs each
# workload of $WORKLOADS (NAME=ARGS of `warmcore vm workload`) under
# `warmcore record`, and the trace's placement figures are printed:
#   AGREE ROT SCHED WORKLOAD {trace stats --placement --json}
#   RUN ROT SCHED WORKLOAD {the workload's own line}
# A run that ended with the scheduler no longer attached as itself (an
# ejection: its own error or the watchdog's stall), or whose loader did not
# exit with status 0, prints EJECTED ROT SCHED and the kernel's sched_ext
# lines, and that scheduler's rotation is tried again, at most $TRIES times.
attach() {
  case $1 in
  kernel) S=; return 0 ;;
  scx_*) $1 > /tmp/s.out 2>&1 & ;;
  *) warmcore sched --policy $1 --stats 1000 > /tmp/s.out 2>&1 & ;;
  esac
  S=$!
  up_or_gone() { is_state enabled || ! kill -0 $S 2>/dev/null; }
  wait_for $LOAD_DEADLINE up_or_gone
  is_state enabled
}
# Still attached as the one loaded at the start (enable_seq unchanged).
attached() { [ -z "$S" ] || { is_state enabled && [ "$(cat /sys/kernel/sched_ext/enable_seq)" = "$SEQ" ]; }; }
detach() {
  [ -z "$S" ] && return 0
  kill -INT $S 2>/dev/null; wait $S; _rc=$?
  wait_for 10 is_state disabled
  return $_rc
}
one() {  # ROT SCHED: every workload under SCHED; status 1 if it was ejected
  dmesg -c > /dev/null
  attach $2 || { echo "NOT_ENABLED $1 $2"; sed "s/^/OUT $2 /" /tmp/s.out; detach; return 1; }
  SEQ=$(cat /sys/kernel/sched_ext/enable_seq)
  ok=0
  for w in $WORKLOADS; do
    name=${w%%=*}; args=$(echo "${w#*=}" | tr ',' ' ')
    rm -f /tmp/a.wct
    warmcore record --cgroup $CG -o /tmp/a.wct -- \
      sh -c "echo \$\$ > $CG/cgroup.procs && exec warmcore vm workload $name $args" > /tmp/w.out 2> /tmp/r.err \
      || { echo "RECORD_FAILED $1 $2 $name"; sed "s/^/RECERR /" /tmp/r.err; ok=1; }
    attached || ok=1
    [ $ok = 0 ] || break
    echo "RUN $1 $2 $name $(cat /tmp/w.out)"
    echo "AGREE $1 $2 $name $(warmcore trace stats --placement --json /tmp/a.wct | tr -d '\n ')"
  done
  detach || ok=1
  if [ $ok != 0 ]; then
    echo "EJECTED $1 $2"
    sed "s/^/OUT $2 /" /tmp/s.out | tail -20
    dmesg | grep -i -E "sched_ext|stall|watchdog" | sed "s/^/KMSG $2 /"
  fi
  return $ok
}
# The workload alone is recorded: it runs in a cgroup of its own (the
# kernel's threads, the loader and the recorder stay outside, as the
# simulator runs nothing beside the workload).
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
CG=/sys/fs/cgroup/agree; mkdir -p $CG
# What the machine file of the VM (machines/qemu-tcg-4.toml) assumes,
# as this guest sees it.
echo "GUEST cpus $(cat /sys/devices/system/cpu/online)"
echo "GUEST llc $(cat /sys/devices/system/cpu/cpu*/cache/index3/shared_cpu_list 2>/dev/null | sort -u | tr '\n' ' ')"
echo "GUEST smt $(cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list | sort -u | tr '\n' ' ')"
echo "GUEST cpufreq $(ls /sys/devices/system/cpu/cpufreq 2>/dev/null | tr '\n' ' ')"
echo "GUEST cpuidle $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null)"
echo "GUEST mhz $(grep -m1 'cpu MHz' /proc/cpuinfo | cut -d: -f2)"
r=1
while [ $r -le $ROT ]; do
  for s in $SCHEDS; do
    t=1
    while ! one $r $s && [ $t -lt $TRIES ]; do t=$((t + 1)); done
  done
  r=$((r + 1))
done
echo DONE
