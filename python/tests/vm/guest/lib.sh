# SPDX-License-Identifier: GPL-2.0-only
# Helpers of the guest scripts (sourced first; busybox sh). Under emulation
# on a busy host guest time passes with no vCPU running, so nothing waits a
# fixed time for something to happen: each wait polls for it, with a
# deadline far above what a quiet host needs, and what is reported is what
# was seen when the wait ended.

# Seconds since boot, to the hundredth: the timeline of a step.
now() { cut -d' ' -f1 /proc/uptime; }

# wait_for SECS CMD...: run CMD every 0.1 s until it succeeds (status 0) or
# SECS pass (status 1).
wait_for() {
  _n=$(($1 * 10)); shift; _i=0
  while ! "$@"; do
    _i=$((_i + 1)); [ $_i -ge $_n ] && return 1
    sleep 0.1
  done
}

state() { cat /sys/kernel/sched_ext/state; }
is_state() { [ "$(state)" = "$1" ]; }
# Seconds from T0 (a `now`) to now.
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# Wait for the loader to attach (sched_ext enabled). Loading verifies the
# program, which emulation makes slow, and nest's most: with the host's
# load average between 6 and 13 on 2 cores, 2 to 18 s for the other
# policies, 6 to 61 s for nest and its restarts after CPU hotplug (timed
# over seven boots), so the deadline is far above that.
LOAD_DEADLINE=180
wait_enabled() { wait_for $LOAD_DEADLINE is_state enabled; }

qos() { cat /sys/devices/system/cpu/cpu[0-9]*/power/pm_qos_resume_latency_us | tr '\n' ' '; }

# Lines in FILE so far (0 if none).
nlines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
more_lines() { [ "$(nlines "$1")" -gt "$2" ]; }
# The first statistics line FILE gets after now: counts that include all
# that happened before this call (the scheduler prints one every period).
fresh_stats() {
  _k=$(nlines "$1")
  wait_for 120 more_lines "$1" "$_k"
  tail -1 "$1"
}
# A stress that is there only until what it makes happen is seen runs as
# `setsid warmcore vm workload mixed ... & W=$!` (a process group of its
# own), and `stop_group $W` ends it with its children rather than waiting out
# its seconds.
stop_group() { kill -- -$1 2>/dev/null; wait $1; }
# How many times the loader writing to FILE restarted the scheduler.
restarts() { grep -c "starting it again" "$1" 2>/dev/null; }

# A cgroup with a cpuset of CPUs 2-3, for stress_beside.
cpuset_setup() {
  mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
  echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
  mkdir -p /sys/fs/cgroup/wc; echo 2-3 > /sys/fs/cgroup/wc/cpuset.cpus
}
# $SECS is 30 (WC_TEST_SECS): the stress is there for the sched_ext watchdog
# (kernel/sched/ext.c, check_rq_for_timeouts: a task runnable for the
# program's timeout_ms, 5 s, ejects it), and the stalls it found came 8 to
# 28 s in (docs/peers-in-the-vm.md): a shorter one would miss some.
# stress_beside TAG [unniced]: the mixed stress of $SECS s, and beside it a
# task pinned to CPU 1, two in the cpuset of CPUs 2-3 (cpuset_setup), two
# at nice 19 unless `unniced` (then a task that ends at once stands in for
# them); MIXED, MIXED_RC and BESIDE_RC lines, and STILL: the longest time
# the whole guest stood still meanwhile (its host ran no vCPU), which the
# watchdog cannot tell from a stall.
stress_beside() {
  warmcore vm workload stillness --secs $SECS | sed "s/^/STILL $1 /" & B0=$!
  taskset -c 1 warmcore vm workload hogs --n 1 --secs $SECS > /dev/null & B1=$!
  sh -c "echo \$\$ > /sys/fs/cgroup/wc/cgroup.procs && exec warmcore vm workload hogs --n 2 --secs $SECS" > /dev/null & B2=$!
  if [ "$2" = unniced ]; then
    true & B3=$!
  else
    sh -c "renice -n 19 -p \$\$ > /dev/null && exec warmcore vm workload hogs --n 2 --secs $SECS" > /dev/null & B3=$!
  fi
  warmcore vm workload mixed --secs $SECS | sed "s/^/MIXED $1 /"; echo "MIXED_RC $1 $?"
  wait $B0; wait $B1; R1=$?; wait $B2; R2=$?; wait $B3; R3=$?
  echo "BESIDE_RC $1 $R1 $R2 $R3"
}

# Whether the STILL line of TAG $2 in FILE $1 says the whole guest stood
# still for a second or more (its threads woke every 20 ms otherwise).
stood_still() {
  grep "^STILL $2 " "$1" | sed 's/.*"longest_s":\([0-9.e+-]*\).*/\1/' | awk '{ v = $1 } END { exit !(NR == 1 && v >= 1) }'
}
