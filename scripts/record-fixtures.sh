#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Re-record the importer fixtures in fixtures/ (run as root: perf records
# system-wide scheduler tracepoints).
#
#   scripts/record-fixtures.sh perf       perf-configure.txt.zst, perf-make-j2.txt.zst
#   scripts/record-fixtures.sh schedlog   schedlog-make-j2/ from perf-make-j2.txt.zst
#   scripts/record-fixtures.sh trace-cmd  trace-cmd-forks{,-raw}.txt.zst, recorded in a QEMU guest
#
# perf sched record traces the whole machine, so the recordings also hold
# whatever else ran at the time; that is real data, and the tests check only
# facts that hold for any such recording.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/fixtures
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The events the perf importer reads, on top of perf sched record's own
# (sched_switch, sched_stat_runtime, sched_process_fork, sched_wakeup_new,
# sched_migrate_task, sched_waking).
EXTRA=(-e sched:sched_process_exec -e sched:sched_process_exit -e sched:sched_wakeup
       -e power:cpu_idle -e power:cpu_frequency)

record_perf() {
    command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 1; }
    # 1. A configure-like script: many short processes, each forked, exec'd
    #    and reaped in turn, as autoconf's checks do.
    cat > "$tmp/configure" <<'CONF'
#!/bin/sh
# A configure-like script: probe for tools and headers with short processes.
for tool in cc make sed awk grep tr cat sort uniq; do
    printf 'checking for %s... ' "$tool"
    if command -v "$tool" >/dev/null 2>&1; then echo yes; else echo no; fi
done
for h in stdio.h stdlib.h string.h unistd.h; do
    printf 'checking for %s... ' "$h"
    printf '#include <%s>\nint main(void){return 0;}\n' "$h" > conftest.c
    if cc -c conftest.c -o conftest.o 2>/dev/null; then echo yes; else echo no; fi
    rm -f conftest.c conftest.o
done
for i in 1 2 3 4 5 6 7 8; do
    echo "$i" | tr 1-8 a-h | sed 's/a/A/' | cat > /dev/null
done
echo 'creating config.h'; : > config.h
CONF
    chmod +x "$tmp/configure"
    (cd "$tmp" && perf sched record -o "$tmp/configure.data" "${EXTRA[@]}" -- ./configure > /dev/null)
    # Plain perf script: 6-digit (us) timestamps, no header: a flat machine.
    perf script -i "$tmp/configure.data" | zstd -19 -q -f -o "$out/perf-configure.txt.zst"

    # 2. make -j2 of a small C project.
    mkdir -p "$tmp/proj"
    for i in 1 2 3 4 5 6; do
        printf 'int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' "$i" "$i" > "$tmp/proj/f$i.c"
    done
    printf 'int f1(int);int f2(int);int f3(int);int f4(int);int f5(int);int f6(int);\nint main(void){return f1(1)+f2(2)+f3(3)+f4(4)+f5(5)+f6(6);}\n' > "$tmp/proj/main.c"
    cat > "$tmp/proj/Makefile" <<'MK'
OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o
prog: $(OBJS)
	cc -o $@ $(OBJS)
%.o: %.c
	cc -O2 -c $< -o $@
MK
    (cd "$tmp/proj" && perf sched record -o "$tmp/make.data" "${EXTRA[@]}" -- make -j2 > /dev/null)
    # --ns: 9-digit timestamps; --header -I: the machine's topology lines.
    perf script -i "$tmp/make.data" --ns --header -I | zstd -19 -q -f -o "$out/perf-make-j2.txt.zst"
    ls -l "$out"/perf-*.txt.zst
}

record_schedlog() {
    # SchedLog needs its patched kernel: convert the real perf recording into
    # SchedLog's dump layout (one binary file per CPU + the "id name" table).
    python3 "$here/scripts/perf2schedlog.py" "$out/perf-make-j2.txt.zst" "$out/schedlog-make-j2"
    ls -l "$out/schedlog-make-j2"
}

case "${1:-all}" in
    perf) record_perf ;;
    schedlog) record_schedlog ;;
    trace-cmd) "$here/scripts/record-trace-cmd-vm.sh" "$out" ;;
    all) record_perf; record_schedlog ;;
    *) echo "usage: $0 [perf|schedlog|trace-cmd|all]" >&2; exit 2 ;;
esac
