# SPDX-License-Identifier: GPL-2.0-only
# A smoke run on more than 64 CPUs (the masks span several words): each
# policy attached, a short stress, detached on SIGINT.
echo "WIDE_CPUS $(cat /sys/devices/system/cpu/online)"
for P in default nest; do
  warmcore sched --policy $P 2> /tmp/w.err & S=$!
  wait_enabled
  echo "WIDE_STATE $P $(state)"
  warmcore vm workload mixed --secs 4 | sed "s/^/WIDE_MIXED $P /"
  kill -INT $S; wait $S; echo "WIDE_RC $P $?"
  sed "s/^/WIDE_ERR $P /" /tmp/w.err
  wait_for 10 is_state disabled
done
echo DONE
