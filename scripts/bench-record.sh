#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Overhead of `warmcore record` against no tracing and `perf sched record`,
# on three workloads: a hackbench-like pipe workload (perf bench sched
# messaging -p), a fork/exec/wait loop and `make -j2` of a small C project.
# Each workload times itself inside the traced command, so tracer start-up
# and write-out are not counted. Rounds are paired: each traced run is
# compared with the untraced run of its own round (see paired_stats).
# Then, for one run of each workload traced by both tools at once (perf with CLOCK_MONOTONIC, the BPF
# clock), the events of each kind that both record inside perf's time window
# are counted and compared (target: within 1 %).
#
# Last, the direct cost, free of the machine's timing noise: for runs
# recorded with --bpf-stats, the BPF programs' own run time (the kernel's
# count) plus the recorder's CPU time, over the workload's CPU time.
#
# A benchmark, not a test: it prints numbers and checks, and exits 0 unless
# it could not run. Needs root (BPF) and perf.  ROUNDS=N sets the rounds;
# PART=overhead, PART=counts or PART=cost runs only that part.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
PART=${PART:-all}
BIN=target/release/warmcore
LOAD=target/release/warmcore-testload

if [ "$(id -u)" != 0 ]; then
    echo "bench-record: skipped: loading BPF programs needs root (CAP_BPF, CAP_PERFMON)"
    exit 0
fi
for t in perf make cc; do
    command -v "$t" >/dev/null || { echo "bench-record: skipped: $t not found (scripts/setup.sh installs linux-perf)"; exit 0; }
done
[ -x "$BIN" ] && [ -x "$LOAD" ] || { echo "bench-record: build first (make build)"; exit 1; }

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# A small C project: 24 units of a few functions each, and a program.
mkdir -p "$OUT/proj"
for i in $(seq 1 24); do
    {
        echo "#include <stdint.h>"
        for j in $(seq 1 12); do
            echo "uint64_t f${i}_$j(uint64_t x) { for (int k = 0; k < $((j * 7)); k++) x = x * 6364136223846793005ULL + $i$j; return x ^ (x >> 17); }"
        done
        echo "uint64_t unit$i(uint64_t x) { return f${i}_1(x)$(for j in $(seq 2 12); do printf ' + f%s_%s(x)' "$i" "$j"; done); }"
    } >"$OUT/proj/u$i.c"
done
{
    echo "#include <stdint.h>"
    echo "#include <stdio.h>"
    for i in $(seq 1 24); do echo "uint64_t unit$i(uint64_t);"; done
    echo "int main(void) { uint64_t s = 0;$(for i in $(seq 1 24); do printf ' s += unit%s(s);' "$i"; done) printf(\"%llu\\n\", (unsigned long long)s); return 0; }"
} >"$OUT/proj/main.c"
cat >"$OUT/proj/Makefile" <<'EOF'
SRCS := $(wildcard *.c)
OBJS := $(SRCS:.c=.o)
all: prog
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
%.o: %.c
	$(CC) -O2 -c -o $@ $<
clean:
	rm -f $(OBJS) prog
EOF

declare -A WL t
WL[hackbench]="perf bench sched messaging -p -g 4 -l 400"
WL[forkexec]="$LOAD forks 1500"
WL[make-j2]="make -s -C $OUT/proj clean && make -s -j2 -C $OUT/proj"
ORDER=(hackbench forkexec make-j2)

# The workload, timing itself into $OUT/t: wall, user and system seconds.
timed() { echo "TIMEFORMAT='%R %U %S'; { time ( { $1; } >/dev/null 2>&1 ); } 2>$OUT/t"; }

run() { # mode workload -> "wall cpu" seconds on stdout
    local mode=$1 w=$2 cmd
    cmd=$(timed "${WL[$w]}")
    case $mode in
        none) bash -c "$cmd" ;;
        warmcore) "$BIN" record -o "$OUT/w.wct" -- bash -c "$cmd" 2>"$OUT/wlog" ;;
        perf) perf sched record -o "$OUT/p.data" -- bash -c "$cmd" >/dev/null 2>"$OUT/plog" ;;
    esac
    awk '{ print $1, $2 + $3 }' "$OUT/t"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# Slowdowns from paired rounds. Input: one line per round, "untraced
# warmcore perf" seconds. A traced run is compared with the untraced run of
# its own round, which ran next to it, so that slow drifts of the machine
# (other jobs, frequency, caches) cancel; the median of these per-round
# slowdowns gets a 95 % bootstrap interval (2000 resamples of the rounds),
# and so does the unpaired estimate (median time over median time, each
# resampled on its own) for comparison. Output, in %: paired warmcore
# median lo hi q1 q3, paired perf median lo hi q1 q3, unpaired warmcore
# median lo hi, unpaired perf median lo hi.
paired_stats() {
    awk 'function qs(v, lo, hi,   i, j, t, x) { if (lo >= hi) return; x = v[int((lo + hi) / 2)]; i = lo; j = hi
             while (i <= j) { while (v[i] < x) i++; while (v[j] > x) j--; if (i <= j) { t = v[i]; v[i] = v[j]; v[j] = t; i++; j-- } }
             qs(v, lo, j); qs(v, i, hi) }
         function q(v, k, f,   x, i) { for (i = 1; i <= k; i++) s_[i] = v[i]; qs(s_, 1, k); x = 1 + (k - 1) * f; i = int(x)
             return (i >= k) ? s_[k] : s_[i] + (x - i) * (s_[i + 1] - s_[i]) }
         function boot_paired(r,   b, i) { for (b = 1; b <= B; b++) { for (i = 1; i <= N; i++) t_[i] = r[1 + int(rand() * N)]; m_[b] = q(t_, N, 0.5) }
             return q(m_, B, 0.025) " " q(m_, B, 0.975) }
         function boot_unpaired(x,   b, i, mn, mx) { for (b = 1; b <= B; b++) {
                 for (i = 1; i <= N; i++) t_[i] = n[1 + int(rand() * N)]; mn = q(t_, N, 0.5)
                 for (i = 1; i <= N; i++) t_[i] = x[1 + int(rand() * N)]; mx = q(t_, N, 0.5); m_[b] = 100 * (mx / mn - 1) }
             return 100 * (q(x, N, 0.5) / q(n, N, 0.5) - 1) " " q(m_, B, 0.025) " " q(m_, B, 0.975) }
         { N++; n[N] = $1; w[N] = $2; p[N] = $3; rw[N] = 100 * ($2 / $1 - 1); rp[N] = 100 * ($3 / $1 - 1) }
         END { srand(1); B = 2000
               print q(rw, N, 0.5), boot_paired(rw), q(rw, N, 0.25), q(rw, N, 0.75),
                     q(rp, N, 0.5), boot_paired(rp), q(rp, N, 0.25), q(rp, N, 0.75),
                     boot_unpaired(w), boot_unpaired(p) }'
}

if [ "$PART" = all ] || [ "$PART" = overhead ]; then
echo "bench-record: $(nproc) CPUs, kernel $(uname -r), $ROUNDS paired rounds (untraced, warmcore, perf; reversed every other"
echo "round, so that warmcore always runs next to the untraced run); slowdowns are per round, traced time over the"
echo "untraced time of the same round: their median, [95 % bootstrap interval] and quartiles q1..q3. 'unpaired' is"
echo "median time over median time, with its own bootstrap interval. Load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %9s %-26s %-16s %-26s %-16s %7s %11s %8s %9s %8s %9s\n' workload untraced 'wc slow [95% CI]' 'wc q1..q3' 'perf slow [95% CI]' 'perf q1..q3' 'wc/perf' 'wc events/s' 'wc B/ev' 'perf B/ev' 'wc lost' 'perf lost'
unpaired=""
cputime=""
declare -A c
for w in "${ORDER[@]}"; do
    : >"$OUT/rounds.$w"
    : >"$OUT/cpu.$w"
    run none "$w" >/dev/null # warm-up
    for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then modes="none warmcore perf"; else modes="perf warmcore none"; fi
        for mode in $modes; do read -r t[$mode] c[$mode] < <(run "$mode" "$w"); done
        echo "${t[none]} ${t[warmcore]} ${t[perf]}" >>"$OUT/rounds.$w"
        echo "${c[none]} ${c[warmcore]} ${c[perf]}" >>"$OUT/cpu.$w"
    done
    read -r wm wlo whi wq1 wq3 pm plo phi pq1 pq3 uw uwlo uwhi up uplo uphi < <(paired_stats <"$OUT/rounds.$w")
    n=$(cut -d' ' -f1 "$OUT/rounds.$w" | median)
    # From the last traced runs: events, bytes, losses (perf's: the samples
    # its reader could not keep, of all its events).
    wev=$(sed -n 's/.*: \([0-9]*\) events in \([0-9.]*\) s (\([0-9]*\) events\/s), \([0-9]*\) bytes on disk (\([0-9.]*\) bytes\/event).*/\3 \5/p' "$OUT/wlog")
    wlost=$(grep -q 'no event lost' "$OUT/wlog" && echo 0 || sed -n 's/.*: \([0-9]*\) events lost.*/\1/p' "$OUT/wlog")
    psamples=$(perf script -i "$OUT/p.data" 2>/dev/null | wc -l)
    pbytes=$(stat -c %s "$OUT/p.data")
    plost=$(perf report -i "$OUT/p.data" --stats 2>/dev/null | awk '/ stats:$/ { s = 1 } s && /LOST_SAMPLES events:/ { n += $3 } END { print n + 0 }')
    awk -v w="$w" -v n="$n" -v wm="$wm" -v wlo="$wlo" -v whi="$whi" -v wq1="$wq1" -v wq3="$wq3" \
        -v pm="$pm" -v plo="$plo" -v phi="$phi" -v pq1="$pq1" -v pq3="$pq3" \
        -v wev="$wev" -v ps="$psamples" -v pb="$pbytes" -v wl="${wlost:-?}" -v pl="$plost" 'BEGIN {
        split(wev, x, " ");
        # Only where perf slows the workload down beyond the noise.
        ratio = (plo > 0) ? sprintf("%.2f", wm / pm) : "n/a";
        printf "%-10s %8.3fs %-26s %-16s %-26s %-16s %7s %11d %8.1f %9.1f %8s %9d\n", w, n,
            sprintf("%+.1f%% [%+.1f, %+.1f]", wm, wlo, whi), sprintf("%+.1f..%+.1f", wq1, wq3),
            sprintf("%+.1f%% [%+.1f, %+.1f]", pm, plo, phi), sprintf("%+.1f..%+.1f", pq1, pq3),
            ratio, x[1], x[2], pb / (ps > 0 ? ps : 1), wl, pl }'
    unpaired+=$(printf '%-10s unpaired: warmcore %+.1f%% [%+.1f, %+.1f], perf %+.1f%% [%+.1f, %+.1f]' "$w" "$uw" "$uwlo" "$uwhi" "$up" "$uplo" "$uphi")$'\n'
    read -r wm wlo whi _ _ pm plo phi _ _ _ < <(paired_stats <"$OUT/cpu.$w")
    cputime+=$(printf '%-10s workload CPU time %6.3fs: warmcore %+.1f%% [%+.1f, %+.1f], perf %+.1f%% [%+.1f, %+.1f]' "$w" \
        "$(cut -d' ' -f1 "$OUT/cpu.$w" | median)" "$wm" "$wlo" "$whi" "$pm" "$plo" "$phi")$'\n'
done
printf '%s' "$unpaired"
echo "The same rounds in the workload's CPU time (user + system of all its processes; the tracers' own processes"
echo "not included), paired likewise: what the programs and handlers in the kernel add, without the wall clock's waits."
printf '%s' "$cputime"
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

if [ "$PART" = all ] || [ "$PART" = counts ]; then
echo
echo "bench-record: event counts of one run traced by both (perf sched record -k mono, plus the wakeup/exec/exit"
echo "tracepoints), inside the window where perf had all CPUs enabled; warmcore's ids: CTX_SWITCH WAKEUP WAKEUP_NEW MIGRATE FORK EXEC EXIT."
echo "Compared like with like: events raised while a CPU ran its idle task are counted apart, per kind and"
echo "CPU after the bar (perf, warmcore), and per CPU in the last lines of each workload."
printf '%-10s %-26s %10s %10s %8s %-10s | %s\n' workload 'event (not in idle tasks)' perf warmcore diff check 'in idle tasks: perf warmcore'
for w in "${ORDER[@]}"; do
    cmd=$(timed "${WL[$w]}")
    # perf drops samples when its reader falls behind (its ring buffer full:
    # LOST_SAMPLES in `perf report --stats`, per event), which happened on
    # hackbench with perf sched record's own 4 MiB per CPU when other jobs
    # ran. Hence 16 MiB per CPU (-m 4096 pages, after perf sched's own -m),
    # and a run in which perf still lost any of the compared events is done
    # again (up to 5 attempts; the losses are printed).
    for attempt in 1 2 3 4 5; do
        "$BIN" record -o "$OUT/both.wct" -- perf sched record -k mono -m 4096 -o "$OUT/both.data" \
            -e sched:sched_wakeup -e sched:sched_process_exec -e sched:sched_process_exit \
            -- bash -c "$cmd" >/dev/null 2>"$OUT/bothlog"
        plost=$(perf report -i "$OUT/both.data" --stats 2>/dev/null | awk '
            / stats:$/ { e = $1; sub(/:$/, "", e) }
            /LOST_SAMPLES events:/ && e ~ /^sched:sched_(switch|wakeup|wakeup_new|migrate_task|process_fork|process_exec|process_exit)$/ {
                n += $3; d = d sprintf(" %s %d", e, $3) }
            END { printf "%d%s", n, d }')
        [ "${plost%% *}" = 0 ] && break
        echo "$w: perf lost events in attempt $attempt (${plost#* }); running again" >&2
    done
    # perf's sample tid is the task current on the CPU when the event fired.
    perf script -i "$OUT/both.data" --ns -F tid,cpu,time,event 2>/dev/null |
        awk '{ c = $2; gsub(/[][]/, "", c); t = $3; sub(":", "", t); e = $4; sub(":$", "", e); print t, e, c + 0, $1 }' >"$OUT/perf.txt"
    # The window where perf had every CPU's events enabled: from the latest
    # first event of a CPU to the earliest last one (perf enables and
    # disables CPU by CPU, moving itself from CPU to CPU as it does).
    read -r from to < <(awk '{ if (!($3 in f)) f[$3] = $1; l[$3] = $1 }
        END { a = 0; b = 1e18; for (c in f) { if (f[c] > a) a = f[c]; if (l[c] < b) b = l[c] }; printf "%.9f %.9f\n", a, b }' "$OUT/perf.txt")
    awk -v from="$from" -v to="$to" '$1 >= from && $1 <= to' "$OUT/perf.txt" >"$OUT/perf.win"
    "$BIN" trace dump "$OUT/both.wct" --absolute >"$OUT/wc.txt"
    # Events raised while a CPU runs its idle task (switches out of idle,
    # wake-ups and migrations done in interrupts or load balancing on an idle
    # CPU) are counted apart, per CPU. On this machine's kernel perf receives
    # none of them on CPU 1 (nor does ftrace get CPU 1's switches out of
    # idle), while it receives those of CPU 0; warmcore's BPF programs get
    # them on every CPU, and only warmcore's switches chain on CPU 1 (each
    # switch's previous task is the one the switch before it put on the
    # CPU). Counting them together made warmcore's switches and wake-ups
    # look 3-13 % and its migrations 15-53 % too many (BENCHMARKS.md, "The
    # tracer"). The task current on a CPU is perf's sample tid; for warmcore
    # it is the next task of the CPU's last CTX_SWITCH (or a TICK's task).
    awk -v from="$from" -v to="$to" -v w="$w" '
        BEGIN { m["sched:sched_switch"] = "CTX_SWITCH"; m["sched:sched_wakeup"] = "WAKEUP";
                m["sched:sched_wakeup_new"] = "WAKEUP_NEW"; m["sched:sched_migrate_task"] = "MIGRATE";
                m["sched:sched_process_fork"] = "FORK"; m["sched:sched_process_exec"] = "EXEC";
                m["sched:sched_process_exit"] = "EXIT"; for (k in m) want[m[k]] = 1; want["TICK"] = 1 }
        FNR == NR { if (!($2 in m)) next; cpus[$3] = 1; if ($3 > maxc) maxc = $3
                    if ($4 == 0) pidle[m[$2], $3]++; else perf[m[$2]]++; next }
        { c = $2; gsub(/[][]/, "", c); c += 0; k = ""
          for (i = 4; i <= NF; i++) if ($i in want) { k = $i; break }
          if (k == "") next
          if (k == "TICK") { cur[c] = $3; next }
          inw = ($1 >= from - 1e-9 && $1 <= to + 1e-9)
          # A switch names the task it switches out: when that is not the
          # task the previous switch put on the CPU, a switch was not
          # recorded (by any tool: it happens around a few threads outside
          # the workload), and the events since then may be classed wrong.
          if (k == "CTX_SWITCH") { if ((c in cur) && cur[c] != $3 + 0 && inw) unsure[c] += since[c]; cur[c] = $3 + 0; since[c] = 0 }
          if (inw) {
              since[c]++
              if ((c in cur) && cur[c] == 0) { widle[k, c]++; cpus[c] = 1; if (c > maxc) maxc = c } else wc[k]++ }
          if (k == "CTX_SWITCH") for (j = i + 1; j <= NF; j++) if ($j ~ /^next=/) { n = $j; sub(/^next=/, "", n); cur[c] = n + 0 } }
        END { split("sched:sched_migrate_task sched:sched_process_exec sched:sched_process_exit " \
                    "sched:sched_process_fork sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new", order, " ")
              for (o = 1; o <= 7; o++) { k = order[o]; id = m[k]
                d = (perf[id] > 0) ? (wc[id] - perf[id]) * 100.0 / perf[id] : (wc[id] > 0 ? 100 : 0)
                idl = ""
                for (c = 0; c <= maxc; c++) if (c in cpus) {
                    idl = idl sprintf(" cpu%d %d %d", c, pidle[id, c], widle[id, c]); pt[c] += pidle[id, c]; wt[c] += widle[id, c] }
                printf "%-10s %-26s %10d %10d %+7.2f%% %-10s |%s\n", w, k, perf[id], wc[id], d,
                       (d <= 1 && d >= -1) ? "ok" : "OUTSIDE 1%", idl }
              for (c = 0; c <= maxc; c++) if (c in cpus) {
                d = (pt[c] > 0) ? (wt[c] - pt[c]) * 100.0 / pt[c] : 0
                # Within 1 %, or within the events warmcore could not class
                # for want of a switch.
                dn = wt[c] - pt[c]; if (dn < 0) dn = -dn
                printf "%-10s %-26s %10d %10d %8s %s\n", w, "in CPU " c "'"'"'s idle task", pt[c], wt[c],
                       (pt[c] > 0) ? sprintf("%+7.2f%%", d) : "-",
                       (pt[c] == 0 && wt[c] > 0) ? "perf got none" : (d <= 1 && d >= -1) ? "ok" : \
                       (dn <= unsure[c]) ? sprintf("ok (%d events after an unrecorded switch)", unsure[c]) : "OUTSIDE 1%" } }' "$OUT/perf.win" "$OUT/wc.txt"
    [ "${plost%% *}" = 0 ] || echo "$w: perf lost events in every attempt (last: ${plost#* }): its counts above are short by as many"
done
fi

if [ "$PART" = all ] || [ "$PART" = cost ]; then
echo
echo "bench-record: direct cost, median of 3 runs of warmcore record --bpf-stats per workload: the BPF programs' run"
echo "time as the kernel counts it (its statistics add two clock reads to each run, so this errs high) plus the"
echo "recorder's own CPU time, over the workload's CPU time (user + system of all its processes)."
printf '%-10s %9s %10s %9s %10s %8s %11s %9s\n' workload wall 'cpu time' events 'bpf ms' 'ns/run' 'recorder ms' 'direct'
for w in "${ORDER[@]}"; do
    cmd="TIMEFORMAT='%R %U %S'; { time ( { ${WL[$w]}; } >/dev/null 2>&1 ); } 2>$OUT/t"
    for r in 1 2 3; do
        "$BIN" record --bpf-stats -o "$OUT/c.wct" -- bash -c "$cmd" 2>"$OUT/clog"
        read -r wall user sys <"$OUT/t"
        sed -n 's/.*: \([0-9]*\) events in .*/\1/p' "$OUT/clog" | tr '\n' ' '
        sed -n 's/.*cost: BPF programs \([0-9.]*\) ms in [0-9]* runs (\([0-9]*\) ns each); recorder \([0-9.]*\) ms.*/\1 \2 \3/p' "$OUT/clog" |
            tr '\n' ' '
        echo "$wall $user $sys"
    done | awk -v w="$w" 'NF != 7 { bad = 1; next } { n++; ev[n] = $1; b[n] = $2; ns[n] = $3; rc[n] = $4; wl[n] = $5; cpu[n] = $6 + $7
                           d[n] = 100 * ($2 + $4) / (1000 * ($6 + $7)) }
        function med(v,   i, j, t, k) { for (i = 1; i <= n; i++) s[i] = v[i]
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
            return s[int((n + 1) / 2)] }
        END { if (n == 0 || bad) { printf "%-10s no cost line from warmcore record\n", w; exit }
              printf "%-10s %8.3fs %9.3fs %9d %10.1f %8d %11.1f %8.2f%%\n", w, med(wl), med(cpu), med(ev), med(b), med(ns), med(rc), med(d) }'
done
fi
