# SPDX-License-Identifier: GPL-2.0-only
# The main boot (4 vCPUs): for each policy, load it, run a mixed stress of
# $SECS s beside pinned, cpuset and niced tasks and the policy's own
# workloads, unload; then Nest's warm cores through PM QoS (held, kept by
# kill -9, restored by the next start), CPU hotplug, --profile, and the
# tracer on this kernel. Each line is TAG [POLICY] VALUE, read by
# test_sched.py and the tests beside it.
#
# The stress runs as users run the scheduler: no --profile (it changes the
# hot path), and frequency steering on, so that the kernel's verifier and
# the stress see the code a machine with schedutil runs (this VM has no
# cpufreq, where `auto` would leave it off). One short run checks --profile.
cpuset_setup
echo "QOS_BEFORE $(qos)"
# Statistics every second: each check's fresh_stats waits for the next line
# (with 5 s, 3.7 s for the default policy's).
run_policy_once() {
  P=$1; shift
  t0=$(now)
  warmcore sched --policy $P --stats 1 --freq-steer on "$@" > /tmp/$P.stats 2> /tmp/$P.err &
  S=$!
  wait_enabled
  echo "STATE $P $(state) $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
  echo "LOAD_S $P $(since $t0)"
  stress_beside $P
  echo "STATE_AFTER $P $(state)"
  case $P in
  default)
    warmcore vm workload chain --n 100 --work-us 5000 | sed "s/^/CHAIN $P /"
    warmcore vm workload forkcpu --n 40 --busy-us 5000 | sed "s/^/FORKBUSY $P /"
    warmcore vm workload hogs --n 4 --secs 5 | sed "s/^/HOGS $P /";;
  slocal)
    B=$(fresh_stats /tmp/$P.stats)
    warmcore vm workload forkcpu --n 100 | sed "s/^/FORKCPU $P /"
    echo "STATS_BEFORE $P $B"
    fresh_stats /tmp/$P.stats | sed "s/^/STATS_FORK $P /";;
  smove)
    for c in 0 1 2 3; do warmcore sched freq set $c 800000; done
    B=$(fresh_stats /tmp/$P.stats)
    warmcore vm workload forkcpu --n 100 | sed "s/^/FORKWAIT $P /"
    # Every child has exited: its timer has fired or been cancelled.
    echo "STATS_BEFORE $P $B"
    fresh_stats /tmp/$P.stats | sed "s/^/STATS_WAIT $P /"
    warmcore vm workload forkcpu --n 40 --busy-us 5000 | sed "s/^/FORKBUSY $P /";;
  nest|warm)
    warmcore vm workload chain --n 100 --work-us 5000 | sed "s/^/CHAIN $P /"
    warmcore vm workload hogs --n 4 --secs 5 | sed "s/^/HOGS $P /";;
  esac
  fresh_stats /tmp/$P.stats | sed "s/^/STATS_MID $P /"
  kill -INT $S; wait $S; echo "SCHED_RC $P $?"
  tail -1 /tmp/$P.stats | sed "s/^/FINAL $P /"
  sed "s/^/ERR $P /" /tmp/$P.err
  wait_for 10 is_state disabled
  echo "STATE_END $P $(state)"
}
# A policy the kernel ejected during its stress while the whole guest stood
# still for a second or more runs once more: the watchdog's clock jumped by
# that time (kernel/sched/ext.c reads jiffies), whatever the scheduler did.
# The checks read the last run; a RETRY line gives the first run's span of
# uptime (its kernel lines are in it) and why there was another, and the
# first run's lines are kept after FIRST.
run_policy() {
  _t0=$(now)
  run_policy_once "$@" > /tmp/run.out
  if grep -q "^STATE_AFTER $1 disabled" /tmp/run.out && stood_still /tmp/run.out $1; then
    echo "RETRY $1 $_t0 $(now) $(grep "^STILL $1 " /tmp/run.out | cut -d' ' -f3-)"
    sed "s/^/FIRST /" /tmp/run.out
    run_policy_once "$@" > /tmp/run.out
  fi
  cat /tmp/run.out
}
run_policy default
run_policy slocal
# D = 2 ms instead of 50 us: under emulation a fork and a wait are some 40
# times slower than on hardware.
run_policy smove --freq-source=map --smove-threshold-khz 800000 --smove-delay-us 2000
run_policy nest
run_policy haiku-low-latency
run_policy haiku-power-saving
run_policy warm
echo "QOS_AFTER_EXIT $(qos)"

# Nest holds the CPUs of its primary nest in polling during a stress, and
# kill -9 leaves them so. The nest changes under the stress (a core its
# task left by exiting leaves it, compaction takes back idle ones), so the
# values are polled while the stress runs, each read with the loader
# stopped: what is read is what kill -9 then leaves.
t0=$(now)
warmcore sched --policy nest --stats 1 > /tmp/qk.stats 2> /tmp/qk.err & K=$!
wait_enabled
echo "QOS_ENABLED $(state)"
echo "LOAD_S qos $(since $t0)"
setsid warmcore vm workload mixed --secs 20 > /dev/null & W=$!
t0=$(now); held=""; n=0
while kill -0 $W 2>/dev/null; do
  kill -STOP $K; v=$(qos); n=$((n + 1))
  case "$v" in *n/a*) held=$v; break;; esac
  kill -CONT $K; sleep 0.1
done
echo "QOS_HELD $held"
echo "QOS_POLL $n reads from $t0 to $(now) s"
kill -9 $K; wait $K 2>/dev/null
echo "QOS_AFTER_KILL $(qos)"
sed "s/^/QOSK_ERR /" /tmp/qk.err
tail -3 /tmp/qk.stats | sed "s/^/QOSK_STATS /"
# The stress was there to make the nest grow: what it held is read.
stop_group $W
warmcore sched --policy default --run-for 1 2> /tmp/restore.err; echo "RESTORE_RC $?"
sed "s/^/RESTORE_ERR /" /tmp/restore.err
echo "QOS_RESTORED $(qos)"

# CPU hotplug during a run (warmer threads, so that one made for an offline
# CPU would stall): the kernel stops the scheduler at each change and the
# loader starts it again on the CPUs then online.
# Each restart loads the program again, as long as a first start; a change
# while it loads makes the kernel refuse it (the hotplug sequence number it
# was opened with is stale) and the loader starts once more.
t0=$(now)
warmcore sched --policy nest --nest-warm threads > /dev/null 2> /tmp/hp.err & H=$!
wait_enabled
echo "LOAD_S hotplug $(since $t0)"
hp_back() { [ "$(restarts /tmp/hp.err)" -ge "$1" ] && is_state enabled; }
t0=$(now)
echo 0 > /sys/devices/system/cpu/cpu3/online
wait_for $((2 * LOAD_DEADLINE)) hp_back 1
echo "HOTPLUG_OFF $(state) after $(since $t0) s, $(restarts /tmp/hp.err) restarts, seq $(cat /sys/kernel/sched_ext/hotplug_seq)"
warmcore vm workload forkcpu --n 20 > /dev/null
t0=$(now)
echo 1 > /sys/devices/system/cpu/cpu3/online
wait_for $((2 * LOAD_DEADLINE)) hp_back 2
warmcore vm workload forkcpu --n 20 > /dev/null
# Still enabled after the stress: no restart left pending.
wait_enabled
echo "HOTPLUG_STATE $(state)"
echo "HOTPLUG_ON $(state) after $(since $t0) s, $(restarts /tmp/hp.err) restarts, seq $(cat /sys/kernel/sched_ext/hotplug_seq)"
kill -INT $H; wait $H; echo "HOTPLUG_RC $?"
sed "s/^/HOTPLUG_ERR /" /tmp/hp.err

warmcore sched --policy nest --profile --stats 1 > /tmp/prof.stats 2> /tmp/prof.err & S=$!
wait_enabled
warmcore vm workload forkcpu --n 20 > /dev/null
kill -INT $S; wait $S; echo "PROF_RC $?"
tail -1 /tmp/prof.stats | sed "s/^/PROF /"
sed "s/^/PROF_ERR /" /tmp/prof.err

# The tracer on this kernel (the host's may differ): a known workload, then
# an idle recording stopped by SIGINT once it has begun (it takes SIGINT
# from before it creates its output).
warmcore record -o /tmp/rec.wct -- warmcore vm workload forkcpu --n 50 > /dev/null 2> /tmp/rec.err; echo "REC_RC $?"
sed "s/^/REC_ERR /" /tmp/rec.err
warmcore trace info /tmp/rec.wct | sed "s/^/REC_INFO /"
echo "REC_FORKS $(warmcore trace dump /tmp/rec.wct --event FORK | wc -l)"
warmcore trace stats --json /tmp/rec.wct > /dev/null; echo "REC_STATS_RC $?"
# Recording once each of its programs is attached (a bpf_link for each
# bpf-prog among its files): the trace is written aside and appears under
# its name only when finished, so waiting for /tmp/int.wct waited out the
# whole deadline.
attached() {
  _fds=$(ls -l /proc/$1/fd 2>/dev/null)
  _l=$(echo "$_fds" | grep -c bpf_link); _p=$(echo "$_fds" | grep -c bpf-prog)
  [ "$_l" -gt 0 ] && [ "$_l" -ge "$_p" ]
}
warmcore record -o /tmp/int.wct 2> /dev/null & R=$!
wait_for 60 attached $R
echo "REC_INT_ATTACHED $(ls -l /proc/$R/fd 2>/dev/null | grep -c bpf_link) links"
kill -INT $R; wait $R; echo "REC_INT_RC $?"
warmcore trace info /tmp/int.wct | sed "s/^/REC_INT_INFO /"
dmesg | grep -i -E "sched_ext|stall|watchdog" | sed "s/^/KMSG /"
echo DONE
