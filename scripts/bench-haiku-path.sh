#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Where a pipe ping-pong wake-up's time goes under each scheduler: the
# program's own time, the kernel's own part of the sched_ext path (the hooks
# that call the program, the kick's and the BPF timer's irq_work
# interrupts) and the rest. One 4-CPU VM boot (timings drift across boots
# under emulation), interleaved rotations of the kernel's own scheduler,
# default, warm and Haiku's two modes. Each rotation attaches a scheduler
# once and runs four pipe passes (`warmcore vm workload pipe`):
#  - plain: the rate, nothing else on;
#  - stats: the kernel's BPF run-time statistics on (kernel.bpf_stats_enabled,
#    read from the loader's program descriptors before and after): each
#    struct_ops program's own time and calls, the kfuncs and helpers it
#    calls included, without the clock reads that --profile puts inside the
#    program (the quantum timer's callback is no struct_ops program and is
#    not counted there);
#  - hooks: the same statistics, and ftrace's function_graph on the kernel's
#    sched_ext hooks that call the program (select_task_rq_scx,
#    enqueue_task_scx, dequeue_task_scx, do_pick_task_scx,
#    set_next_task_scx, put_prev_task_scx), on kick_cpus_irq_workfn and on
#    clockevents_program_event (the timer hardware reprogrammed), with
#    sched_waking, sched_switch and the irq_work interrupts' entry and exit
#    only: the hooks' time less the program's in the same pass is the
#    kernel's own part of those hooks;
#  - traced (fewer messages): the same and the wake-ups, IPIs sent and
#    received, the tick and hrtimer expiries, for the path's structure;
# then attaches it again with --profile for one pass, the profile's figures
# beside the statistics'. The first rotation also records one pass with
# `warmcore record` and prints `warmcore trace stats` of it.
#
# From each trace, per wake-up of a pipe end by the other on another CPU
# (half a round trip, from the waker's sched_waking to the wakee's own
# sched_waking of the waker), the time split at the waker's dequeue (A1:
# the wake-up and the waker's way back to its read; A2: its block until
# its CPU switches to idle), at the wakee CPU's first hook (B1: idle entry,
# the emulator's turn to the other vCPU, the IPI's arrival; B2: the pick
# and the switch-in) and the wakee's run until it wakes the other end (C),
# each with the hooks and irq_work interrupts inside it and what is left.
# Under single-threaded TCG one vCPU runs at a time, so the parts add up to
# the round trip. Tracing slows every part (2 to 5 us a trace line, from
# the traced passes' rates against the stats passes'): compare the
# policies within a pass, and the passes' totals with the plain rates. The
# last table puts each Haiku mode beside warm (whose wake-up takes
# default's direct path and whose ends never meet on one CPU), rotation by
# rotation: the program, the kernel's own part of the hooks, the kick's
# irq_work, the BPF timer start's irq_work, idle entry and the IPI, the
# rest; and the plain passes' gap with the stats passes' program part.
# About 6 minutes on 2 cores.
#
# Usage: taskset -c 1 scripts/bench-haiku-path.sh [RAW]
# RAW, when given, keeps the VM's output there; if it already exists and is
# not empty, it is analysed again without a boot.
# WC_BENCH_ROTATIONS (4), WC_BENCH_PIPE_MSGS (5000 a plain, stats, hooks or
# profiled pass), WC_BENCH_TRACE_MSGS (800 a traced pass).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/warmcore}
ROT=${WC_BENCH_ROTATIONS:-4}
MSGS=${WC_BENCH_PIPE_MSGS:-5000}
TMSGS=${WC_BENCH_TRACE_MSGS:-800}
POLS="kernel default warm haiku-low-latency haiku-power-saving"
raw=${1:-}
if [ -z "$raw" ]; then
    raw=$(mktemp)
    trap 'rm -f "$raw"' EXIT
fi

read -r -d '' GUEST <<'GUEST_EOF' || true
T=/sys/kernel/debug/tracing
FUN=
for f in select_task_rq_scx enqueue_task_scx dequeue_task_scx do_pick_task_scx set_next_task_scx \
         put_prev_task_scx kick_cpus_irq_workfn clockevents_program_event; do
  grep -q "^$f\$" $T/available_filter_functions && FUN="$FUN $f" || echo "NOTE no function $f to trace"
done
EV_HOOKS="sched/sched_waking sched/sched_switch irq_vectors/irq_work_entry irq_vectors/irq_work_exit"
EV_TRACE="$EV_HOOKS sched/sched_wakeup sched/sched_migrate_task ipi/ipi_send_cpu irq_vectors/call_function_single_entry irq_vectors/reschedule_entry irq_vectors/local_timer_entry timer/hrtimer_expire_entry"
echo 0 > $T/tracing_on
echo 16384 > $T/buffer_size_kb
echo mono > $T/trace_clock
echo $FUN | tr ' ' '\n' > $T/set_ftrace_filter
echo $FUN | tr ' ' '\n' > $T/set_graph_function
echo 1 > $T/max_graph_depth
# Each struct_ops program's (prog_type 27) run time and calls, by its tag;
# names() gives each tag's name, from /proc/kallsyms (slow under emulation:
# once per attach, after the passes).
progs() {
  [ -n "$S" ] || return 0
  awk -v r=$r -v p=$pol -v ph=$1 '/^prog_type/{t=$2} /^prog_tag/{g=$2} /^run_time_ns/{ns=$2}
    /^run_cnt/{if (t == 27) print "F", r, p, ph, g, ns, $2}' /proc/$S/fdinfo/* 2>/dev/null
}
names() {
  [ -n "$S" ] || return 0
  grep ' bpf_prog_[0-9a-f]*_wc_' /proc/kallsyms | sed 's/.* bpf_prog_\([0-9a-f]*\)_\(wc_[a-z_]*\).*/K \1 \2/'
}
stamp() {
  echo "U $r $pol $1 $(cut -d' ' -f1 /proc/uptime)"
}
pipe() {
  warmcore vm workload pipe --msgs $2 | sed "s/^/B $r $pol $1 /"
}
# One pipe pass under ftrace (events $2, function_graph on $FUN), the
# program statistics around it, the trace printed gzipped in base64.
traced() {
  echo > $T/trace
  for e in $2; do echo 1 > $T/events/$e/enable; done
  echo function_graph > $T/current_tracer
  for o in funcgraph-abstime funcgraph-proc funcgraph-duration; do echo $o > $T/trace_options; done
  progs ${1}0; echo 1 > $T/tracing_on
  pipe $1 $3
  echo 0 > $T/tracing_on; progs ${1}1
  echo "TRACE $r $pol $1"; gzip -c $T/trace | base64; echo "TRACE-END"
  echo nop > $T/current_tracer
  echo 0 > $T/events/enable
}
r=1
while [ $r -le $ROT ]; do
  for pol in $POLS; do
    stamp start; attach $pol
    pipe plain $MSGS
    echo 1 > /proc/sys/kernel/bpf_stats_enabled
    progs stats0; pipe stats $MSGS; progs stats1
    traced hooks "$EV_HOOKS" $MSGS
    traced trace "$EV_TRACE" $TMSGS
    echo 0 > /proc/sys/kernel/bpf_stats_enabled
    names
    if [ $r = 1 ]; then
      warmcore record -o /tmp/r.wct -- warmcore vm workload pipe --msgs $TMSGS > /dev/null 2> /tmp/r.err || cat /tmp/r.err
      warmcore trace stats /tmp/r.wct --json --placement 2>/dev/null | tr -d '\n' | sed "s/^/R $r $pol /"; echo
      rm -f /tmp/r.wct
    fi
    detach $r $pol
    if [ $pol != kernel ]; then
      attach $pol --profile; pipe profile $MSGS; detach $r $pol
      tail -1 /tmp/s.json | sed "s/^/P $r $pol /"
    fi
    stamp end
  done
  r=$((r+1))
done
echo DONE
GUEST_EOF

if [ ! -s "$raw" ]; then
    echo "bench-haiku-path: one 4-CPU VM boot, $ROT rotations of $POLS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
    t0=$(date +%s)
    "$BIN" vm --cpus 4 --timeout $((900 * ROT)) -- \
        sh -c "ROT=$ROT; MSGS=$MSGS; TMSGS=$TMSGS; POLS='$POLS'; $(cat scripts/vm-guest-sched.sh)
$GUEST" > "$raw"
    echo "bench-haiku-path: $(( $(date +%s) - t0 )) s; load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
python3 - "$raw" $POLS <<'PY'
import base64, gzip, json, re, statistics, sys
from collections import defaultdict

pols = sys.argv[2:]
rate = defaultdict(dict)        # (r, pol) -> pass -> msgs/s
same = defaultdict(dict)        # (r, pol) -> pass -> share of round trips on one CPU
progs = defaultdict(dict)       # (r, pol, snapshot) -> tag -> (ns, calls)
tagname = {}                    # program tag -> name
prof = {}                       # (r, pol) -> profile
rec = {}                        # (r, pol) -> warmcore trace stats
traces = {}                     # (r, pol, pass) -> trace text
stamps = []                     # (r, pol, phase, guest uptime s)
notes = []
lines = open(sys.argv[1], errors="replace").read().splitlines()
i = 0
while i < len(lines):
    l = lines[i]
    p = l.split(" ", 4)
    try:
        if p[0] == "B" and len(p) == 5:
            j = json.loads(p[4]); k = (int(p[1]), p[2])
            rate[k][p[3]] = j["msgs_per_s"]; same[k][p[3]] = j["same_cpu"]
        elif p[0] == "F" and len(p) == 5:
            tag, ns, cnt = p[4].split(" ")
            progs[(int(p[1]), p[2], p[3])][tag] = (int(ns), int(cnt))
        elif p[0] == "K" and len(p) == 3:
            tagname[p[1]] = p[2]
        elif p[0] == "U" and len(p) == 5:
            stamps.append((int(p[1]), p[2], p[3], float(p[4])))
        elif p[0] == "P" and len(p) >= 4:
            prof[(int(p[1]), p[2])] = json.loads(l.split(" ", 3)[3]).get("profile") or {}
        elif p[0] == "R" and len(p) >= 4:
            rec[(int(p[1]), p[2])] = json.loads(l.split(" ", 3)[3])
        elif p[0] == "TRACE" and len(p) == 4:
            j = i + 1
            while lines[j] != "TRACE-END":
                j += 1
            traces[(int(p[1]), p[2], p[3])] = gzip.decompress(base64.b64decode("".join(lines[i + 1:j]))).decode(errors="replace")
            i = j
        elif p[0] in ("EJECTED", "NOT_ENABLED", "NOTE"):
            notes.append(l)
    except (ValueError, IndexError) as e:
        notes.append(f"unread line ({e}): {l[:120]}")
    i += 1
if not rate:
    print("bench-haiku-path: no results from the VM"); sys.exit(1)
rots = sorted({r for r, _ in rate})

OPS = ["wc_select_cpu", "wc_enqueue", "wc_dispatch", "wc_running", "wc_stopping", "wc_tick"]

def per_wakeup(r, pol, a, b):
    """Between two snapshots: the program's ns per wake-up (select_cpu calls) in the operations
    the hooks call (all but the tick), and each op's (ns, calls) per wake-up."""
    x, y = progs.get((r, pol, a), {}), progs.get((r, pol, b), {})
    d = {tagname.get(t, t): (y[t][0] - x.get(t, (0, 0))[0], y[t][1] - x.get(t, (0, 0))[1]) for t in y}
    w = d.get("wc_select_cpu", (0, 0))[1]
    if not w:
        return None
    return sum(d[n][0] for n in d if n in OPS[:-1]) / w, {n: (d.get(n, (0, 0))[0] / w, d.get(n, (0, 0))[1] / w) for n in OPS}

# ---------------------------------------------------------------- traces
LINE = re.compile(r"^\s*(\d+\.\d+)\s\|\s+(\d+)\)\s+(.*?)-(\d+)\s+\|\s*(?:[+!#*@$]\s+)?(?:(\d+\.\d+) us)?\s*\|\s\s(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")
HOOKS = ["select_task_rq_scx", "enqueue_task_scx", "dequeue_task_scx", "do_pick_task_scx",
         "set_next_task_scx", "put_prev_task_scx"]
SEGS = ["A1", "A2", "B1", "B2", "C"]

def parse(text):
    """[ts_us, cpu, pid, kind ('ev' or 'fn'), name, dur_us, fields] in time order."""
    out, stack, lost = [], defaultdict(list), 0
    for l in text.splitlines():
        if "LOST" in l and "EVENTS" in l:
            lost += 1
        m = LINE.match(l)
        if not m:
            continue
        ts, cpu, pid = float(m.group(1)) * 1e6, int(m.group(2)), int(m.group(4))
        dur = float(m.group(5)) if m.group(5) else None
        body = m.group(6).strip()
        if body.startswith("/*"):
            name, _, rest = body[2:-2].strip().partition(":")
            out.append([ts, cpu, pid, "ev", name, None, dict(FIELD.findall(rest))])
        elif body.endswith("();"):
            out.append([ts, cpu, pid, "fn", body[:-3], dur, None])
        elif body.endswith("{"):
            e = [ts, cpu, pid, "fn", body[:-1].strip().removesuffix("()"), None, None]
            stack[cpu].append(e); out.append(e)
        elif body == "}" and stack[cpu]:
            stack[cpu].pop()[5] = dur
    return out, lost

def analyse(text):
    """Per wake-up of a pipe end by the other (half a round trip), its parts."""
    ev, lost = parse(text)
    pairs = defaultdict(int)
    for e in ev:
        if e[3] == "ev" and e[4] == "sched_waking":
            pairs[(e[2], int(e[6].get("pid", -1)))] += 1
    cand = sorted(((n + pairs.get((b, a), 0), a, b) for (a, b), n in pairs.items() if a and b > 0), reverse=True)
    if not cand:
        return None, lost
    ends = {cand[0][1], cand[0][2]}
    cur, halves, open_ = {}, [], {}
    for idx, e in enumerate(ev):
        ts, cpu, pid, kind, name, dur, f = e
        if kind != "ev":
            continue
        if name == "sched_switch":
            pp, np_ = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            for rcd in open_.values():
                if pp == rcd["V"] and cpu == rcd["Y"] and "t2" not in rcd:
                    rcd["t2"] = ts
            if np_ in open_ and "t5" not in open_[np_]:
                open_[np_].update(t5=ts, Z=cpu)
            cur[cpu] = np_
        elif name == "sched_wakeup" and int(f.get("pid", -1)) in open_:
            open_[int(f["pid"])].setdefault("t1", ts)
        elif name == "sched_waking" and pid in ends and int(f["pid"]) in ends and int(f["pid"]) != pid:
            if pid in open_ and "t5" in open_[pid] and "t2" in open_[pid]:
                rcd = open_.pop(pid); rcd.update(t6=ts, i6=idx); halves.append(rcd)
            else:
                open_.pop(pid, None)
            w = int(f["pid"])
            open_[w] = {"t0": ts, "i0": idx, "Y": cpu, "V": pid, "idle": {c: p == 0 for c, p in cur.items()}}
    res = []
    for h in halves:
        Y, Z = h["Y"], h["Z"]
        d = defaultdict(float)
        d["total"] = h["t6"] - h["t0"]
        d["n_same"] = float(Y == Z)
        if Y == Z:
            res.append(d); continue
        d["n_idle_target"] = float(h["idle"].get(Z, False))
        d["wake_to_run"] = h["t5"] - h["t0"]
        if "t1" in h and h["t1"] <= h["t5"]:
            d["waking_to_wakeup"] = h["t1"] - h["t0"]; d["wakeup_to_run"] = h["t5"] - h["t1"]
        seg = ev[h["i0"]:h["i6"]]
        deq = next((e[0] for e in seg if e[1] == Y and e[3] == "fn" and e[4] == "dequeue_task_scx"), None)
        z1 = next((e[0] for e in seg if e[1] == Z and e[3] == "fn" and e[0] > h["t2"]), None)
        if deq is None or deq > h["t2"]:
            deq = h["t2"]             # the kernel's scheduler: no hooks
        if z1 is None or z1 > h["t5"]:
            z1 = h["t5"]
        bounds = [h["t0"], deq, h["t2"], z1, h["t5"], h["t6"]]
        for s, a, b in zip(SEGS, bounds, bounds[1:]):
            d[s] = b - a
        def seg_of(ts):
            for s, a, b in zip(SEGS, bounds, bounds[1:]):
                if a <= ts < b:
                    return s
            return "C"
        iw, kick = {}, {}
        for e in seg:
            ts, cpu, pid, kind, name, dur, f = e
            if cpu not in (Y, Z):
                continue
            s = seg_of(ts)
            d["lines"] += 1; d["lines:" + s] += 1
            if kind == "fn" and dur is not None:
                if name in HOOKS:
                    d["fn:" + name] += dur; d["n:" + name] += 1; d["hooks:" + s] += dur
                elif name == "kick_cpus_irq_workfn":
                    kick[cpu] = True; d["fn:" + name] += dur; d["n:" + name] += 1
                    if cpu not in iw:
                        d["hooks:" + s] += dur
                elif name == "clockevents_program_event":
                    d["fn:" + name] += dur; d["n:" + name] += 1
                    if cpu not in iw:
                        d["clockevents:" + s] += dur
            elif kind == "ev":
                if name == "irq_work_entry":
                    iw[cpu] = (ts, s); kick[cpu] = False
                elif name == "irq_work_exit" and cpu in iw:
                    t, s0 = iw.pop(cpu)
                    # A kick's irq_work runs kick_cpus_irq_workfn; under Haiku the other one is
                    # the BPF timer's start (bpf_async_irq_worker).
                    k = "kick" if kick.get(cpu) else "other"
                    d["irq_work:" + k] += ts - t; d["n_irq_work:" + k] += 1; d["irqw:" + s0] += ts - t
                elif name == "ipi_send_cpu":
                    cs = f.get("callsite", "").split("+")[0]
                    if int(f.get("cpu", -1)) != cpu:
                        d["n_ipi_to_other:" + cs] += 1
                elif name == "reschedule_entry":
                    d["n_resched_ipi"] += 1
                elif name == "call_function_single_entry":
                    d["n_csf_ipi"] += 1
                elif name == "local_timer_entry":
                    d["n_timer_irq"] += 1
                elif name == "hrtimer_expire_entry" and "bpf_timer_cb" in f.get("function", ""):
                    d["n_bpf_timer_cb"] += 1
                elif name == "sched_switch":
                    d["n_switch"] += 1
                elif name == "sched_migrate_task":
                    d["n_migrate"] += 1
        for s in SEGS:
            d["rest:" + s] = d[s] - d["hooks:" + s] - d["irqw:" + s] - d["clockevents:" + s]
        res.append(d)
    return res, lost

def trimmed(rows):
    """Means over the half round trips whose total is at most 3x the median (the others were held
    up by a tick or by another vCPU's turn); the number left out."""
    med = statistics.median(r["total"] for r in rows)
    keep = [r for r in rows if r["total"] <= 3 * med]
    keys = {k for r in keep for k in r}
    return {k: sum(r.get(k, 0.0) for r in keep) / len(keep) for k in keys}, len(rows) - len(keep)

def fmt(v, unit=1.0, f="{:,.1f}"):
    v = [x / unit for x in v]
    if not v:
        return "-"
    med = statistics.median(v)
    return (f + " [" + f + "-" + f + "]").format(med, min(v), max(v))

US = 1.0   # trace times are in us

tab = {ps: defaultdict(lambda: defaultdict(list)) for ps in ("hooks", "trace")}
means = {}                      # (r, pol, pass) -> trimmed means of the wake-ups on another CPU
for (r, pol, ps), t in sorted(traces.items()):
    rows, lost = analyse(t)
    if lost:
        notes.append(f"rotation {r} {pol} {ps}: the trace lost events ({lost} notices)")
    if not rows:
        notes.append(f"rotation {r} {pol} {ps}: no pipe wake-ups found in the trace")
        continue
    T = tab[ps][pol]
    T["same_share"].append(100 * sum(x["n_same"] for x in rows) / len(rows))
    cross = [x for x in rows if not x["n_same"]]
    if len(cross) < 50:
        continue
    m, dropped = trimmed(cross)
    means[(r, pol, ps)] = m
    T["dropped"].append(100 * dropped / len(cross))
    T["n_halves"].append(len(cross))
    for k, v in m.items():
        T[k].append(v)
    pw = per_wakeup(r, pol, ps + "0", ps + "1")
    if pw:
        hooks = sum(m.get("fn:" + h, 0) for h in HOOKS)
        T["hooks"].append(hooks)
        T["prog"].append(pw[0] / 1000)
        T["kernel_hooks"].append(hooks - pw[0] / 1000)
        T["prog_enqueue"].append(pw[1]["wc_enqueue"][0] / 1000)
        T["prog_dispatch"].append(pw[1]["wc_dispatch"][0] / 1000)
        T["prog_running"].append(pw[1]["wc_running"][0] / 1000)
        T["prog_select"].append(pw[1]["wc_select_cpu"][0] / 1000)
        T["prog_stopping"].append(pw[1]["wc_stopping"][0] / 1000)

R = defaultdict(lambda: defaultdict(list))
for (r, pol), ph in sorted(rate.items()):
    for k in ("plain", "stats", "hooks", "trace", "profile"):
        if k in ph:
            R[pol]["rate_" + k].append(ph[k]); R[pol]["same_" + k].append(same[(r, pol)][k])
    pw = per_wakeup(r, pol, "stats0", "stats1")
    if pw:
        R[pol]["prog_stats"].append(pw[0])
        for n, (ns, c) in pw[1].items():
            R[pol]["op_ns:" + n].append(ns); R[pol]["op_calls:" + n].append(c)
    pf = prof.get((r, pol))
    if pf and pf.get("select_cpu", {}).get("calls"):
        w = pf["select_cpu"]["calls"]
        R[pol]["prog_profile"].append(sum(v["total_ns"] for k, v in pf.items() if k not in ("quantum_timer", "tick")) / w)
        R[pol]["prof_timer_cb"].append(pf.get("quantum_timer", {}).get("total_ns", 0) / w)

print(f"rotations: {len(rots)}; per scheduler the median over rotations [min-max]; emulated (guest clock) time")
print("\npipe round trips/s, plain pass, each rotation (share of round trips with both ends on one CPU")
print("when 5 % or more); the other passes' medians:")
for pol in pols:
    P = R[pol]
    pr = " ".join(f"{x:,.0f}" + (f" ({100 * sm:.0f} % one CPU)" if sm >= 0.05 else "")
                  for x, sm in zip(P["rate_plain"], P["same_plain"]))
    extra = ", ".join(f"{k} {statistics.median(P['rate_' + k]):,.0f}" for k in ("stats", "hooks", "trace", "profile") if P["rate_" + k])
    print(f"  {pol:19} {pr}   ({extra})")

print("\nprogram ns per wake-up (select_cpu calls), the operations but the tick: BPF run-time statistics")
print("(stats pass); --profile's (clock reads inside the program; the quantum timer's callback apart):")
for pol in pols[1:]:
    P = R[pol]
    if not P["prog_stats"]:
        continue
    print(f"  {pol:19} stats {fmt(P['prog_stats'], f='{:,.0f}')}, profile {fmt(P['prog_profile'], f='{:,.0f}')}, "
          f"the timer's callback {fmt(P['prof_timer_cb'], f='{:,.0f}')}")
    print(f"  {'':19} per op, ns per wake-up / calls per wake-up: " + ", ".join(
        f"{n[3:]} {statistics.median(P['op_ns:' + n]):,.0f}/{statistics.median(P['op_calls:' + n]):.2f}" for n in OPS))

def gaps(a, b):
    """Per wake-up (half a round trip), plain passes: a's time less b's, and the stats passes'
    program difference, in ns, over rotations where neither ran 5 % or more of its round trips on
    one CPU."""
    g, dp = [], []
    for r in rots:
        x, y = rate.get((r, a), {}), rate.get((r, b), {})
        pa, pb = per_wakeup(r, a, "stats0", "stats1"), per_wakeup(r, b, "stats0", "stats1")
        if "plain" in x and "plain" in y and same[(r, a)]["plain"] < 0.05 and same[(r, b)]["plain"] < 0.05 and pa and pb:
            g.append(1e9 / x["plain"] / 2 - 1e9 / y["plain"] / 2); dp.append(pa[0] - pb[0])
    return g, dp

print("\nper wake-up, plain passes (1e9 / rate / 2, ns): each scheduler's time, and Haiku's gap to default and")
print("warm in the same rotation (rotations with both below 5 % on one CPU); program: the stats passes'")
for pol in pols:
    P = R[pol]
    cross = [1e9 / x / 2 for x, sm in zip(P["rate_plain"], P["same_plain"]) if sm < 0.05]
    print(f"  {pol:19} {fmt(cross, f='{:,.0f}')} ns ({len(cross)} rotations)")
for h in [p for p in pols if p.startswith("haiku")]:
    for base in ("default", "warm"):
        g, dp = gaps(h, base)
        if g:
            print(f"  {h} - {base}: gap {fmt(g, f='{:,.0f}')} ({len(g)} rotations), program {fmt(dp, f='{:,.0f}')}, "
                  f"the rest {fmt([x - y for x, y in zip(g, dp)], f='{:,.0f}')}")

for ps, title in (("hooks", "hooks pass (function_graph on the hooks, sched_waking, sched_switch, irq_work)"),
                  ("trace", "traced pass (everything)")):
    print(f"\n{title}: per wake-up of a pipe end on another CPU, trimmed means, us")
    for pol in pols:
        T = tab[ps][pol]
        if not T["total"]:
            continue
        print(f"  {pol}: total {fmt(T['total'])}; on one CPU {fmt(T['same_share'], f='{:.0f}')} %, "
              f"target idle {fmt([100 * x for x in T['n_idle_target']], f='{:.0f}')} %, "
              f"left out {fmt(T['dropped'], f='{:.0f}')} % of {fmt(T['n_halves'], f='{:.0f}')}, trace lines {fmt(T['lines'])}")
        print(f"    waking to the wakee's switch-in {fmt(T['wake_to_run'])}" + (
            f" = waking to sched_wakeup {fmt(T['waking_to_wakeup'])} + sched_wakeup to switch-in {fmt(T['wakeup_to_run'])}"
            if T["waking_to_wakeup"] else ""))
        for s in SEGS:
            print(f"    {s:3} {fmt(T[s]):>26} = hooks {fmt(T['hooks:' + s]):>24} + irq_work {fmt(T['irqw:' + s]):>22}"
                  f" + timer hw {fmt(T['clockevents:' + s]):>20} + rest {fmt(T['rest:' + s]):>24}  ({fmt(T['lines:' + s])} lines)")
        hk = [h for h in HOOKS + ["kick_cpus_irq_workfn", "clockevents_program_event"] if T["fn:" + h]]
        if hk:
            print("    calls: " + ", ".join(f"{h} {fmt(T['fn:' + h])} x{statistics.median(T['n:' + h]):.2f}" for h in hk))
        if T["prog"]:
            print(f"    hooks {fmt(T['hooks'])} - program {fmt(T['prog'])} (enqueue {fmt(T['prog_enqueue'])}, dispatch "
                  f"{fmt(T['prog_dispatch'])}, running {fmt(T['prog_running'])}) = kernel's own in the hooks {fmt(T['kernel_hooks'])}")
        iw = sorted(k[9:] for k in T if k.startswith("irq_work:"))
        cnt = sorted(k for k in T if k.startswith("n_") and k not in ("n_same", "n_idle_target", "n_halves") and not k.startswith("n_irq_work"))
        print("    irq_work: " + (", ".join(f"{k} {fmt(T['irq_work:' + k])} x{statistics.median(T['n_irq_work:' + k]):.2f}" for k in iw) or "none")
              + "; per wake-up: " + ", ".join(f"{k[2:]} {statistics.median(T[k]):.2f}" for k in cnt))

# Haiku's extra time per wake-up over warm's (the same direct path as default's, and never on one
# CPU), rotation by rotation, in the hooks pass (traced time) and in the plain and stats passes.
def split(r, h, b, ps="hooks"):
    x, y = means.get((r, h, ps)), means.get((r, b, ps))
    px, py = per_wakeup(r, h, ps + "0", ps + "1"), per_wakeup(r, b, ps + "0", ps + "1")
    if not (x and y and px and py):
        return None
    hooks = lambda m: sum(m.get("fn:" + k, 0) for k in HOOKS)
    D = lambda k: x.get(k, 0) - y.get(k, 0)
    prog = (px[0] - py[0]) / 1000
    out = {"total": D("total"), "program": prog, "kernel in hooks": hooks(x) - hooks(y) - prog,
           "kick irq_work": D("irqw:A1") + D("rest:A1") + D("clockevents:A1"),
           "timer-start irq_work": D("irqw:C") + D("rest:C") + D("clockevents:C"),
           "idle entry, IPI (B1)": D("B1") - D("hooks:B1"),
           "other": D("rest:A2") + D("rest:B2") + D("clockevents:A2") + D("clockevents:B2") + D("irqw:A2") + D("irqw:B2")}
    return out
PS_SPLIT = "hooks" if any(k[2] == "hooks" for k in means) else "trace"
for h in [p for p in pols if p.startswith("haiku")]:
    rows = [(r, split(r, h, "warm", PS_SPLIT)) for r in rots]
    rows = [(r, x) for r, x in rows if x]
    if not rows:
        continue
    print(f"\n{h} - warm per wake-up, {PS_SPLIT} pass (traced us), each rotation; then the plain passes' gap and the")
    print("stats passes' program difference (untraced us):")
    for k in rows[0][1]:
        print(f"  {k:22} " + " ".join(f"{x[k]:7.1f}" for _, x in rows) + f"   share {100 * sum(x[k] for _, x in rows) / sum(x['total'] for _, x in rows):4.0f} %")
    g = {r: 1e9 / rate[(r, h)]["plain"] / 2e3 - 1e9 / rate[(r, "warm")]["plain"] / 2e3 for r, _ in rows
         if "plain" in rate.get((r, h), {}) and "plain" in rate.get((r, "warm"), {})}
    dp = {r: (per_wakeup(r, h, "stats0", "stats1")[0] - per_wakeup(r, "warm", "stats0", "stats1")[0]) / 1000 for r, _ in rows}
    print(f"  {'plain gap':22} " + " ".join(f"{g.get(r, float('nan')):7.1f}" for r, _ in rows))
    print(f"  {'stats program':22} " + " ".join(f"{dp.get(r, float('nan')):7.1f}" for r, _ in rows)
          + f"   share {100 * sum(dp.values()) / sum(g.values()):4.0f} %")

print("\ntracing's cost per trace line, (1/pass rate - 1/stats rate) / 2 / lines per wake-up, ns:")
for pol in pols:
    for ps in ("hooks", "trace"):
        T, P = tab[ps][pol], R[pol]
        if P["rate_" + ps] and P["rate_stats"] and T["lines"] and len(T["lines"]) == len(P["rate_" + ps]):
            v = [(1e9 / t - 1e9 / s) / 2 / n for t, s, n in zip(P["rate_" + ps], P["rate_stats"], T["lines"])]
            print(f"  {pol:19} {ps:6} {fmt(v, f='{:,.0f}')}")
if rec:
    print("\nwarmcore record, rotation 1: wake-up to switch-in latency and placement (the recorder's view):")
    for (r, pol), j in sorted(rec.items()):
        wl = j.get("wakeup_latency_ns") or {}
        pl = j.get("placement") or {}
        print(f"  {pol:19} wakeup_latency_ns " + ", ".join(f"{k} {v:,}" for k, v in wl.items() if isinstance(v, (int, float)))
              + f"; wake-ups {pl.get('wakeups')}, on the previous CPU {pl.get('on_prev', 0):.3f}, "
              f"on the waker's {pl.get('on_waker', 0):.3f}, ran on the target {pl.get('ran_on_target', 0):.3f}")
if stamps:
    d = defaultdict(list)
    for r, pol, ph, t in stamps:
        d[(r, pol)].append(t)
    print("\nguest s per rotation and scheduler: " + ", ".join(f"{r}/{pol} {max(v) - min(v):.0f}" for (r, pol), v in sorted(d.items())))
for n in notes:
    print("note:", n)
PY
