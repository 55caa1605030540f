# SPDX-License-Identifier: GPL-2.0-only
# A second boot: two sockets, each a NUMA node with its own cache, and a CPU
# present but offline (maxcpus=3). Nest with warmer threads (one made for the
# offline CPU would stall) runs a stress; where the nest searches of a
# fork/wait chain started on CPU 0 find their cores is reported.
echo "TOPO_CPUS $(cat /sys/devices/system/cpu/online) $(cat /sys/devices/system/cpu/present)"
warmcore sched --policy nest --nest-warm threads --stats 2 > /tmp/t.stats 2> /tmp/t.err & S=$!
wait_enabled
warmcore vm workload mixed --secs 10 | sed "s/^/TOPO_MIXED /"
fresh_stats /tmp/t.stats | sed "s/^/TOPO_STATS_BEFORE /"
taskset -c 0 sh -c 'taskset -p -c 0-2 $$ > /dev/null && exec warmcore vm workload chain --n 50 --work-us 2000' | sed "s/^/TOPO_CHAIN /"
fresh_stats /tmp/t.stats | sed "s/^/TOPO_STATS_AFTER /"
echo "TOPO_STATE $(state)"
kill -INT $S; wait $S; echo "TOPO_RC $?"
sed "s/^/TOPO_ERR /" /tmp/t.err
echo DONE
