# SPDX-License-Identifier: GPL-2.0-only
# The peers' boot (4 vCPUs, `warmcore vm --peers`): each of the scx
# project's loaders named in $PEERS, as released and with its default
# options, under the mixed stress of $SECS s beside pinned and cpuset
# tasks (as each policy of warmcore sched in main.sh, without its nice-19
# pair: with it, the watchdog ejects all three for the niced task's stall,
# docs/peers-in-the-vm.md), then SIGINT.
# The kernel's log is cleared before each, so that the sched_ext lines read
# after it are its own. Each line is TAG PEER VALUE, read by test_peers.py.
cpuset_setup
for P in $PEERS; do
  dmesg -c > /dev/null
  seq0=$(cat /sys/kernel/sched_ext/enable_seq)
  t0=$(now)
  $P > /tmp/$P.out 2>&1 & S=$!
  # Attached, or the loader gave up (a program the kernel refuses).
  up_or_gone() { is_state enabled || ! kill -0 $S 2>/dev/null; }
  wait_for $LOAD_DEADLINE up_or_gone
  echo "STATE $P $(state) $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
  echo "LOAD_S $P $(since $t0)"
  if is_state enabled; then
    stress_beside $P unniced
    echo "STATE_AFTER $P $(state) $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
    kill -INT $S 2>/dev/null
  fi
  wait $S; echo "SCHED_RC $P $?"
  wait_for 10 is_state disabled
  echo "STATE_END $P $(state)"
  echo "ENABLES $P $(($(cat /sys/kernel/sched_ext/enable_seq) - seq0))"
  sed "s/^/OUT $P /" /tmp/$P.out
  dmesg | grep -i -E "sched_ext|stall|watchdog" | sed "s/^/KMSG $P /"
done
echo DONE
