#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Convert `perf script` text of a `perf sched record` into SchedLog's dump
layout, for a fixture of warmcore's SchedLog importer (SchedLog itself needs
its patched kernel, which these machines do not run).

Output directory: `events` ("ID NAME" lines) and cpu0, cpu1, ...: 24-byte
little-endian entries (u64 ns, u32 pid, u32 event id, 8 bytes of arguments),
Fork/wait, section 3.1. Events are what SchedLog logs (docs/papers.md,
Fork/wait): BLOCK / BLOCK_IO before a switch away from a sleeping task,
CTX_SWITCH with the next pid only, WAKEUP (from sched_waking), WAKEUP_NEW,
FORK, EXEC, EXIT, MIGRATE. Ids follow that list's order from 0, unlike
warmcore's, and power:cpu_idle becomes CPU_IDLE (id 40), an event that is
not one of warmcore's, so the importer's handling of foreign ids is tested.

usage: perf2schedlog.py PERF_SCRIPT_TEXT[.zst] OUTDIR
"""
import os
import re
import struct
import subprocess
import sys

NAMES = ["EXEC", "EXIT", "WAKEUP", "WAKEUP_NEW", "BLOCK", "BLOCK_IO", "FORK",
         "WAIT_PID", "TICK", "CTX_SWITCH", "MIGRATE", "RQ_SIZE",
         "IDLE_BALANCE_BEGIN", "IDLE_BALANCE_END", "PERIODIC_BALANCE_BEGIN",
         "PERIODIC_BALANCE_END", "FUTEX_WAIT", "FUTEX_WAKE"]
ID = {n: i for i, n in enumerate(NAMES)}
ID["CPU_IDLE"] = 40

HEAD = re.compile(r"^\s*(.*?)\s+(-?\d+)(?:/\d+)?\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(?:\d+\s+)?(\S+):\s+(.*)$")
KEY = re.compile(r"(?:^|\s)(\w+)=")


def fields(text):
    """key=value pairs; values run to the next key (names may hold spaces)."""
    keys = list(KEY.finditer(text))
    out = {}
    for k, nxt in zip(keys, keys[1:] + [None]):
        end = nxt.start() if nxt else len(text)
        out[k.group(1)] = text[k.end():end].strip()
    return out


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    if src.endswith(".zst"):
        text = subprocess.run(["zstd", "-dc", src], check=True, capture_output=True).stdout.decode()
    else:
        text = open(src, encoding="utf-8").read()
    cpus = {}

    def put(cpu, ts, pid, name, a=0, b=0, raw=None):
        arg = raw if raw is not None else struct.pack("<II", a, b)
        cpus.setdefault(cpu, []).append(struct.pack("<QII", ts, pid, ID[name]) + arg)

    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = HEAD.match(line)
        if not m:
            sys.exit(f"{src}: not a perf script line: {line!r}")
        tid, cpu = int(m.group(2)), int(m.group(3))
        frac = m.group(5)
        ts = int(m.group(4)) * 10**9 + int(frac) * 10**(9 - len(frac))
        event = m.group(6).split(":")[-1]
        f = fields(m.group(7).replace(" ==> ", " "))
        if event == "sched_switch":
            prev, state = int(f["prev_pid"]), f["prev_state"]
            if prev != 0 and state[0] in "SIT":
                put(cpu, ts, prev, "BLOCK")
            elif prev != 0 and "D" in state:
                put(cpu, ts, prev, "BLOCK_IO")
            put(cpu, ts, prev, "CTX_SWITCH", int(f["next_pid"]))
        elif event == "sched_waking":
            put(cpu, ts, int(f["pid"]), "WAKEUP", int(f["target_cpu"]), max(tid, 0))
        elif event == "sched_wakeup_new":
            put(cpu, ts, int(f["pid"]), "WAKEUP_NEW", int(f["target_cpu"]), max(tid, 0))
        elif event == "sched_process_fork":
            put(cpu, ts, int(f["child_pid"]), "FORK", int(f["pid"]))
        elif event == "sched_process_exec":
            comm = os.path.basename(f["filename"]).encode()[:8]
            put(cpu, ts, int(f["pid"]), "EXEC", raw=comm.ljust(8, b"\0"))
        elif event == "sched_process_exit":
            put(cpu, ts, int(f["pid"]), "EXIT")
        elif event == "sched_migrate_task":
            put(cpu, ts, int(f["pid"]), "MIGRATE", int(f["orig_cpu"]), int(f["dest_cpu"]))
        elif event == "cpu_idle":
            put(int(f["cpu_id"]), ts, 0, "CPU_IDLE", int(f["state"]))

    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "events"), "w") as t:
        t.write("# SchedLog event table: ID NAME (converted from perf sched record)\n")
        for name, i in sorted(ID.items(), key=lambda x: x[1]):
            t.write(f"{i} {name}\n")
    for cpu in range(max(cpus) + 1):
        with open(os.path.join(outdir, f"cpu{cpu}"), "wb") as o:
            o.write(b"".join(cpus.get(cpu, [])))


if __name__ == "__main__":
    main()
