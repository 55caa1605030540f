#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The scheduler's tests, inside a VM with sched_ext (one boot, 4 vCPUs): for
# each policy, load it, run a 30 s mixed stress and the policy's own checks,
# unload; then the tracer on the same kernel; then check what the guest
# reported. Run by `make test`.
# Placement checks count the share of forks placed as the policy says. For
# smove, whose 2 ms timer races with emulated forks and waits, the bounds
# leave room below the ranges measured over repeated boots (child on the
# parent's CPU 79-93 %, busy parent's child elsewhere 65-100 %), so that
# emulator noise does not fail the suite while a policy that ignores the
# rule still does (the default policy puts about 1 in 4 on the parent's CPU).
# No check is timed: emulated time is too noisy. What emulation cannot show
# reliably (S_move's timers firing, Nest keeping a fork/wait chain on two
# cores, anything about frequency) is checked deterministically by the
# simulator running this same program (crates/sim/tests/scx.rs), and only
# reported here.
# The stress runs as users run the scheduler: no --profile (it changes the
# hot path), and frequency steering on, so that the kernel's verifier and
# the stress see the code a machine with schedutil runs (this VM has no
# cpufreq, where `auto` would leave it off). One short run checks --profile.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
SECS=${WC_TEST_SECS:-30}
out=$(mktemp)
trap 'rm -f "$out" "$out.topo" "$out.wide"' EXIT

read -r -d '' GUEST <<GUEST_EOF || true
qos() { cat /sys/devices/system/cpu/cpu[0-9]*/power/pm_qos_resume_latency_us | tr '\n' ' '; }
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p /sys/fs/cgroup/wc; echo 2-3 > /sys/fs/cgroup/wc/cpuset.cpus
echo "QOS_BEFORE \$(qos)"
run_policy() {
  P=\$1; shift
  warmcore sched --policy \$P --stats 5 --freq-steer on "\$@" > /tmp/\$P.stats 2> /tmp/\$P.err &
  S=\$!
  i=0; while [ "\$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
  echo "STATE \$P \$(cat /sys/kernel/sched_ext/state) \$(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
  # Beside the stress: a task pinned to CPU 1, two in a cpuset of CPUs 2-3,
  # two at nice 19.
  taskset -c 1 warmcore vm workload hogs --n 1 --secs $SECS > /dev/null & B1=\$!
  sh -c 'echo \$\$ > /sys/fs/cgroup/wc/cgroup.procs && exec warmcore vm workload hogs --n 2 --secs $SECS' > /dev/null & B2=\$!
  sh -c 'renice -n 19 -p \$\$ > /dev/null && exec warmcore vm workload hogs --n 2 --secs $SECS' > /dev/null & B3=\$!
  warmcore vm workload mixed --secs $SECS | sed "s/^/MIXED \$P /"; echo "MIXED_RC \$P \$?"
  wait \$B1; R1=\$?; wait \$B2; R2=\$?; wait \$B3; R3=\$?
  echo "BESIDE_RC \$P \$R1 \$R2 \$R3"
  echo "STATE_AFTER \$P \$(cat /sys/kernel/sched_ext/state)"
  case \$P in
  default)
    warmcore vm workload chain --n 100 --work-us 5000 | sed "s/^/CHAIN \$P /"
    warmcore vm workload forkcpu --n 40 --busy-us 5000 | sed "s/^/FORKBUSY \$P /"
    warmcore vm workload hogs --n 4 --secs 5 | sed "s/^/HOGS \$P /";;
  slocal)
    warmcore vm workload forkcpu --n 100 | sed "s/^/FORKCPU \$P /";;
  smove)
    for c in 0 1 2 3; do warmcore sched freq set \$c 800000; done
    B=\$(tail -1 /tmp/\$P.stats)
    warmcore vm workload forkcpu --n 100 | sed "s/^/FORKWAIT \$P /"
    sleep 6
    echo "STATS_BEFORE \$P \$B"
    tail -1 /tmp/\$P.stats | sed "s/^/STATS_WAIT \$P /"
    warmcore vm workload forkcpu --n 40 --busy-us 5000 | sed "s/^/FORKBUSY \$P /";;
  nest)
    warmcore vm workload chain --n 100 --work-us 5000 | sed "s/^/CHAIN \$P /"
    warmcore vm workload hogs --n 4 --secs 5 | sed "s/^/HOGS \$P /";;
  esac
  sleep 5
  tail -1 /tmp/\$P.stats | sed "s/^/STATS_MID \$P /"
  kill -INT \$S; wait \$S; echo "SCHED_RC \$P \$?"
  tail -1 /tmp/\$P.stats | sed "s/^/FINAL \$P /"
  sed "s/^/ERR \$P /" /tmp/\$P.err
  echo "STATE_END \$P \$(cat /sys/kernel/sched_ext/state)"
}
run_policy default
run_policy slocal
# D = 2 ms instead of 50 us: under emulation a fork and a wait are some 40
# times slower than on hardware.
run_policy smove --freq-source=map --smove-threshold-khz 800000 --smove-delay-us 2000
run_policy nest
run_policy haiku-low-latency
run_policy haiku-power-saving
echo "QOS_AFTER_EXIT \$(qos)"
# PM QoS values after kill -9: the next start restores them.
# (Read during a stress: a core its task left by exiting leaves the nest.)
warmcore sched --policy nest > /dev/null 2>&1 & K=\$!
i=0; while [ "\$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
warmcore vm workload mixed --secs 6 > /dev/null & W=\$!
sleep 3; echo "QOS_HELD \$(qos)"
kill -9 \$K; wait \$K 2>/dev/null; sleep 1
echo "QOS_AFTER_KILL \$(qos)"
wait \$W
warmcore sched --policy default --run-for 1 2> /tmp/restore.err; echo "RESTORE_RC \$?"
sed "s/^/RESTORE_ERR /" /tmp/restore.err
echo "QOS_RESTORED \$(qos)"
# CPU hotplug during a run (warmer threads, so that one made for an offline
# CPU would stall): the kernel stops the scheduler and the loader restarts it.
warmcore sched --policy nest --nest-warm threads > /dev/null 2> /tmp/hp.err & H=\$!
i=0; while [ "\$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
echo 0 > /sys/devices/system/cpu/cpu3/online; sleep 2
warmcore vm workload forkcpu --n 20 > /dev/null; sleep 6
echo 1 > /sys/devices/system/cpu/cpu3/online; sleep 2
warmcore vm workload forkcpu --n 20 > /dev/null
# (CPU 3's return stopped the scheduler again: let the restart attach.)
i=0; while [ "\$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
echo "HOTPLUG_STATE \$(cat /sys/kernel/sched_ext/state)"
kill -INT \$H; wait \$H; echo "HOTPLUG_RC \$?"
sed "s/^/HOTPLUG_ERR /" /tmp/hp.err
warmcore sched --policy nest --profile --stats 1 --run-for 4 > /tmp/prof.stats 2> /tmp/prof.err &
S=\$!; sleep 1
warmcore vm workload forkcpu --n 20 > /dev/null
wait \$S; echo "PROF_RC \$?"
tail -1 /tmp/prof.stats | sed "s/^/PROF /"
# The tracer on this kernel (the host's may differ): a known workload, then
# an idle recording stopped by SIGINT.
warmcore record -o /tmp/rec.wct -- warmcore vm workload forkcpu --n 50 > /dev/null 2> /tmp/rec.err; echo "REC_RC \$?"
sed "s/^/REC_ERR /" /tmp/rec.err
warmcore trace info /tmp/rec.wct | sed "s/^/REC_INFO /"
echo "REC_FORKS \$(warmcore trace dump /tmp/rec.wct --event FORK | wc -l)"
warmcore trace stats --json /tmp/rec.wct > /dev/null; echo "REC_STATS_RC \$?"
warmcore record -o /tmp/int.wct 2> /dev/null & R=\$!
sleep 2; kill -INT \$R; wait \$R; echo "REC_INT_RC \$?"
warmcore trace info /tmp/int.wct | sed "s/^/REC_INT_INFO /"
dmesg | grep -i -E "sched_ext|stall|watchdog" | sed "s/^/KMSG /"
echo DONE
GUEST_EOF

# A second boot: two sockets, each a NUMA node with its own cache, and a CPU
# present but offline (maxcpus=3). Nest with warmer threads (one made for the
# offline CPU would stall) runs a stress; where the nest searches of a
# fork/wait chain started on CPU 0 find their cores is reported.
read -r -d '' TOPO <<TOPO_EOF || true
echo "TOPO_CPUS \$(cat /sys/devices/system/cpu/online) \$(cat /sys/devices/system/cpu/present)"
warmcore sched --policy nest --nest-warm threads --stats 2 > /tmp/t.stats 2> /tmp/t.err & S=\$!
i=0; while [ "\$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done
warmcore vm workload mixed --secs 10 | sed "s/^/TOPO_MIXED /"
sleep 2.5; tail -1 /tmp/t.stats | sed "s/^/TOPO_STATS_BEFORE /"
taskset -c 0 sh -c 'taskset -p -c 0-2 \$\$ > /dev/null && exec warmcore vm workload chain --n 50 --work-us 2000' | sed "s/^/TOPO_CHAIN /"
sleep 2.5; tail -1 /tmp/t.stats | sed "s/^/TOPO_STATS_AFTER /"
echo "TOPO_STATE \$(cat /sys/kernel/sched_ext/state)"
kill -INT \$S; wait \$S; echo "TOPO_RC \$?"
sed "s/^/TOPO_ERR /" /tmp/t.err
echo DONE
TOPO_EOF
# A smoke run on more than 64 CPUs (the masks span several words).
read -r -d '' WIDE <<WIDE_EOF || true
echo "WIDE_CPUS \$(cat /sys/devices/system/cpu/online)"
for P in default nest; do
  warmcore sched --policy \$P --run-for 8 2> /tmp/w.err & S=\$!
  sleep 2; warmcore vm workload mixed --secs 4 | sed "s/^/WIDE_MIXED \$P /"
  wait \$S; echo "WIDE_RC \$P \$?"
  sed "s/^/WIDE_ERR \$P /" /tmp/w.err
done
echo DONE
WIDE_EOF

echo "test-sched-vm: booting a 4-CPU VM, 6 policies x ${SECS} s of mixed stress"
"$BIN" vm --cpus 4 --timeout 1200 -- sh -c "$GUEST" | tee "$out"
echo "test-sched-vm: booting a 2-socket VM with a CPU present but offline"
"$BIN" vm --cpus 4 --sockets 2 --append maxcpus=3 --timeout 600 -- sh -c "$TOPO" | tee "$out.topo"
echo "test-sched-vm: booting a ${WIDE_CPUS:-72}-CPU VM"
"$BIN" vm --cpus "${WIDE_CPUS:-72}" --mem 2048 --timeout 900 -- sh -c "$WIDE" | tee "$out.wide"

python3 - "$out" "$out.topo" "$out.wide" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
topo = open(sys.argv[2]).read().splitlines()
wide = open(sys.argv[3]).read().splitlines()
fail = []
def get(tag, pol):
    for l in lines:
        if l.startswith(f"{tag} {pol} "):
            return l[len(tag) + len(pol) + 2:]
    return None
def js(tag, pol):
    v = get(tag, pol)
    try:
        return json.loads(v) if v else None
    except ValueError:
        return None
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fail.append(what)
def report(what):
    print("info " + what)
if not any(l == "DONE" for l in lines):
    check(False, "the guest script ran to the end")
# The instructions the kernel's verifier processed for each policy's
# programs (bpf_prog_info.verified_insns, in the statistics; what veristat
# counts), summed, as recorded on this VM's kernel (7.3.4, 4 CPUs,
# --freq-steer on): a change that grows a policy's total by more than a
# tenth fails here, so that the growth is seen and the record updated on
# purpose. The kernel refuses a program past 1,000,000; nest's select_cpu
# takes 139,780 of its 146,310.
VERIFIED = {"default": 5512, "slocal": 5518, "smove": 7178, "nest": 146310,
            "haiku-low-latency": 27804, "haiku-power-saving": 35211}
for p in ["default", "slocal", "smove", "nest", "haiku-low-latency", "haiku-power-saving"]:
    st = get("STATE", p) or ""
    check(st.startswith("enabled warmcore"), f"{p}: sched_ext enabled with warmcore ({st!r})")
    check(get("STATE_AFTER", p) == "enabled", f"{p}: still enabled after the stress")
    m = js("MIXED", p)
    check(get("MIXED_RC", p) == "0" and m is not None and m["failed"] == 0,
          f"{p}: every process of the mixed stress finished ({m})")
    check(get("SCHED_RC", p) == "0", f"{p}: detached on SIGINT with status 0")
    check(get("STATE_END", p) == "disabled", f"{p}: sched_ext disabled after the scheduler exits")
    f = js("FINAL", p)
    check(f is not None and f["counts"]["select_cpu"] > 0, f"{p}: stats show select_cpu decisions")
    vi = (f or {}).get("verified_insns") or {}
    total = sum(vi.values())
    report(f"{p}: the verifier processed {total} instructions ({', '.join(f'{k} {v}' for k, v in sorted(vi.items()))})")
    check(0 < total <= VERIFIED[p] * 1.1 and max(vi.values()) < 1_000_000,
          f"{p}: verified instructions {total}, at most the {VERIFIED[p]} recorded plus a tenth")
    check(get("BESIDE_RC", p) == "0 0 0",
          f"{p}: a pinned task, tasks in a cpuset and niced tasks beside the stress all finished ({get('BESIDE_RC', p)})")
    errs = [l for l in lines if l.startswith(f"ERR {p} ") and ("eject" in l or "EXIT" in l)]
    check(not errs, f"{p}: no ejection reported ({errs})")
    if p == "slocal":
        fc = js("FORKCPU", p)
        check(fc is not None and fc["same_cpu"] >= 0.9 * fc["n"],
              f"slocal: forked children start on the parent's CPU ({fc})")
        check(f is not None and f["counts"]["waker_placed"] > 0, "slocal: stats count waker placements")
    if p == "smove":
        fw = js("FORKWAIT", p); sw = js("STATS_WAIT", p); fb = js("FORKBUSY", p)
        check(fw is not None and fw["child_on_parent_cpu"] >= 0.6 * fw["n"],
              f"smove: a child whose parent waits runs on the parent's CPU ({fw})")
        sb = js("STATS_BEFORE", p)
        canc = sw and sb and sw["counts"]["timers_cancelled"] - sb["counts"]["timers_cancelled"]
        check(canc is not None and canc >= 0.6 * fw["n"],
              f"smove: and its timer is cancelled ({canc} cancelled for {fw and fw['n']} forks)")
        check(fb is not None and fb["other_cpu"] >= 0.5 * fb["n"],
              f"smove: a child whose parent keeps running runs on another CPU ({fb})")
        fd = js("FORKBUSY", "default")
        print(f"info smove: fork-to-start median {fb and fb['median_start_ns']} ns with D = 2 ms; "
              f"default policy {fd and fd['median_start_ns']} ns (no timed assertion: emulated time)")
        # Idle CPUs may pull a child before its 2 ms timer expires (each pull
        # cancels the timer), so how many fire here depends on the host.
        report(f"smove: {f and f['counts']['timers_fired']} timers fired for {fb and fb['n']} busy forks "
               "(checked in the simulator: scx_smove_moves_the_child_d_after_the_fork...)")
    if p == "nest":
        cn = js("CHAIN", p); cd = js("CHAIN", "default"); h = js("HOGS", p); sm = js("STATS_MID", p)
        # Right after the stress, short kernel tasks preempt links or take
        # the core a child is hinted to, so the CPUs a chain uses here depend
        # on the host.
        report(f"nest: a fork/wait chain used {cn and cn['cpus_used']} CPUs, the default policy "
               f"{cd and cd['cpus_used']} (checked in the simulator: scx_nest_keeps_a_fork_wait_chain_on_two_cpus)")
        check(sm is not None and sm["nest_primary_max"] >= 4, f"nest: the primary nest grows to 4 CPUs ({sm and sm['nest_primary_max']})")
        # Under single-threaded TCG every vCPU shares one host thread: when
        # the host is busy, guest wall time passes with no vCPU running, so
        # the share is compared with the default policy's in the same boot
        # rather than with 4 (one CPU left idle would give 0.75 of it).
        hd = js("HOGS", "default")
        share = lambda x: x["cpu_s"] / x["wall_s"] if x and x.get("wall_s") else 0.0
        check(h is not None and hd is not None and share(h) >= 0.9 * share(hd),
              f"nest: no CPU idle while a hog waits (CPU time / wall = {round(share(h), 2)} of 4; "
              f"default policy {round(share(hd), 2)})")
    if p.startswith("haiku-"):
        c = f and f["counts"]
        # The quantum timer is armed in ops.running: under the stress's hogs
        # it must end quanta before the tick would, on any host.
        check(c is not None and c["haiku_timer"] > 0 and c["haiku_quantum_end"] > 0,
              f"{p}: the quantum timer ended running threads' quanta "
              f"({c and c['haiku_timer']} by the timer, {c and c['haiku_quantum_end']} quanta used up)")
        check(c is not None and c["haiku_pinned"] > 0, f"{p}: pinned threads went to their CPU's queue ({c and c['haiku_pinned']})")
        # Which core a wake-up chooses depends on the emulator's timing; the
        # modes' rules are checked in the simulator (crates/sim/tests/scx.rs,
        # scx_haiku_*).
        report(f"{p}: wake-ups cache-warm {c and c['haiku_warm']}, cold {c and c['haiku_cold']}, "
               f"moved {c and c['haiku_moved']}, preemptions {c and c['haiku_preempt']}, "
               f"on the small task core {c and c['haiku_small_core']}")
def val(tag):
    for l in lines:
        if l.startswith(tag + " "):
            return l[len(tag) + 1:].strip()
    return None
def info(tag, key):
    for l in lines:
        if l.startswith(tag + " ") and l[len(tag) + 1:].split(":")[0].strip() == key:
            return l.split(":", 1)[1].strip()
    return None
before = val("QOS_BEFORE")
check(before is not None and "n/a" not in before, f"PM QoS: no CPU held before the runs ({before})")
check(val("QOS_AFTER_EXIT") == before, f"PM QoS: every value restored after nest exits ({val('QOS_AFTER_EXIT')})")
check("n/a" in (val("QOS_HELD") or ""), f"PM QoS: nest holds primary CPUs in polling ({val('QOS_HELD')})")
check("n/a" in (val("QOS_AFTER_KILL") or ""), f"PM QoS: kill -9 leaves them held ({val('QOS_AFTER_KILL')})")
restore = [l for l in lines if l.startswith("RESTORE_ERR ") and "restored the PM QoS" in l]
check(val("RESTORE_RC") == "0" and restore and val("QOS_RESTORED") == before,
      f"PM QoS: the next start restores them and says so ({val('QOS_RESTORED')}, {restore})")
hp = [l for l in lines if l.startswith("HOTPLUG_ERR ")]
check(val("HOTPLUG_STATE") == "enabled" and val("HOTPLUG_RC") == "0"
      and sum("starting it again" in l for l in hp) >= 1 and not any("eject" in l for l in hp),
      f"hotplug: the scheduler restarts after a CPU goes offline and back, never ejected ({val('HOTPLUG_STATE')}, {hp})")
try:
    prof = json.loads(val("PROF") or "")
except ValueError:
    prof = None
check(val("PROF_RC") == "0" and prof is not None and prof.get("profile", {}).get("select_cpu", {}).get("calls", 0) > 0,
      f"nest --profile: the profile counts select_cpu calls ({prof and prof.get('profile')})")
check(val("REC_RC") == "0", f"record: exit status 0 on this kernel ({[l for l in lines if l.startswith('REC_ERR')]})")
check(info("REC_INFO", "status") == "complete" and info("REC_INFO", "lost events") == "0",
      f"record: a complete trace, nothing lost ({info('REC_INFO', 'status')}, lost {info('REC_INFO', 'lost events')})")
forks = val("REC_FORKS")
check(forks is not None and forks.isdigit() and int(forks) >= 50, f"record: the 50 forks are in the trace ({forks})")
check(val("REC_STATS_RC") == "0", "record: trace stats accepts the recording")
check(val("REC_INT_RC") == "0" and info("REC_INT_INFO", "status") == "complete",
      f"record: SIGINT leaves a complete trace ({info('REC_INT_INFO', 'status')})")
def tval(ls, tag):
    for l in ls:
        if l.startswith(tag + " "):
            return l[len(tag) + 1:].strip()
    return None
check(tval(topo, "TOPO_CPUS") == "0-2 0-3", f"topology VM: CPUs 0-2 online of 0-3 present ({tval(topo, 'TOPO_CPUS')})")
try:
    tm = json.loads(tval(topo, "TOPO_MIXED") or "")
except ValueError:
    tm = None
terr = [l for l in topo if l.startswith("TOPO_ERR ") and ("eject" in l or "EXIT" in l)]
check(tm is not None and tm["failed"] == 0 and tval(topo, "TOPO_STATE") == "enabled" and tval(topo, "TOPO_RC") == "0" and not terr,
      f"topology VM: nest with warmer threads runs the stress with a CPU offline, never ejected ({tm}, {terr})")
try:
    tc = json.loads(tval(topo, "TOPO_CHAIN") or "")
except ValueError:
    tc = None
own = tc and sum(tc["per_cpu"][:2]) / max(1, sum(tc["per_cpu"]))
def tjs(tag):
    try:
        return json.loads(tval(topo, tag) or "")["counts"]
    except (ValueError, KeyError, TypeError):
        return None
sb, sa = tjs("TOPO_STATS_BEFORE"), tjs("TOPO_STATS_AFTER")
found = ["nest_attached", "nest_primary", "nest_reserve", "nest_fallback", "nest_fork_hint"]
placed = sa and sb and sum(sa[k] - sb[k] for k in found)
other = sa and sb and sa["nest_other_die"] - sb["nest_other_die"]
# Where a search lands is not a reliable pass or fail here: with two CPUs
# on a die, the shell, the loader's threads and the emulator's timing send
# searches to the other die when both are busy (8 % and 20 % of them in two
# boots). The rule (the die first) is checked in the simulator
# (scx_nest_keeps_a_fork_wait_chain_on_two_cpus, on two sockets); this boot
# reports it.
# What is reported must have been measured: the chain ran and the
# counters were read on both sides of it.
check(tc is not None and tc["status"] == 0 and tc["n"] > 0, f"topology VM: nest ran the fork/wait chain ({tc})")
check(placed is not None and placed > 0, f"topology VM: nest's search counters were read around the chain ({placed})")
report(f"topology VM: nest searches during the chain that found a core on the other die: {other} of {placed}")
report(f"topology VM: the chain's samples on its die: {own} ({tc}); idle CPUs may pull a link across")
for p in ["default", "nest"]:
    try:
        wm = json.loads(tval(wide, f"WIDE_MIXED {p}") or "")
    except ValueError:
        wm = None
    werr = [l for l in wide if l.startswith(f"WIDE_ERR {p} ") and ("eject" in l or "EXIT" in l)]
    check(tval(wide, f"WIDE_RC {p}") == "0" and wm is not None and wm["failed"] == 0 and not werr,
          f"{tval(wide, 'WIDE_CPUS')} CPUs: {p} runs a short stress, never ejected ({wm}, {werr})")
kmsg = [l for l in lines if l.startswith("KMSG ") and ("stall" in l or "error" in l.lower())]
check(not kmsg, f"the watchdog never fired and the kernel reported no scheduler error ({kmsg})")
print(f"test-sched-vm: {len(fail)} failures")
sys.exit(1 if fail else 0)
PY
