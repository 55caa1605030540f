# SPDX-License-Identifier: GPL-2.0-only
# A second boot: two sockets, each a NUMA node with its own cache, and a CPU
# present but offline (maxcpus=3). Nest with warmer threads (one made for the
# offline CPU would stall) runs a stress; where the nest searches of a
# fork/wait chain started on CPU 0 find their cores is reported. Then the
# Debian package's service (below).
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

# The Debian package's service: the command its unit runs with the defaults
# file's options ($SERVICE, from packaging/ as the package installs it),
# stopped as systemd stops it ($SERVICE_SIGNAL): what warmcore sched
# changed (the CPUs' PM QoS values, nest's default) is put back.
echo "SERVICE_CMD $SERVICE"
echo "SERVICE_SIGNAL $SERVICE_SIGNAL"
echo "SERVICE_QOS_BEFORE $(qos)"
[ -e /usr/bin/warmcore ] || { mkdir -p /usr/bin && ln -s /bin/warmcore /usr/bin/warmcore; }
sh -c "exec $SERVICE" > /tmp/svc.out 2> /tmp/svc.err & V=$!
wait_enabled
echo "SERVICE_STATE $(state) $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
setsid warmcore vm workload mixed --secs 20 > /dev/null & W=$!
held=""
while kill -0 $W 2>/dev/null; do
  v=$(qos)
  case "$v" in *n/a*) held=$v; break;; esac
  sleep 0.1
done
stop_group $W
echo "SERVICE_QOS_HELD $held"
kill -s $SERVICE_SIGNAL $V; wait $V; echo "SERVICE_RC $?"
wait_for 10 is_state disabled
echo "SERVICE_STATE_END $(state)"
echo "SERVICE_QOS_AFTER $(qos)"
sed "s/^/SERVICE_ERR /" /tmp/svc.err
echo DONE
