# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore trace export`, checked from outside the Rust code.

The test writes its own .wct traces through the bindings' writer, with an
event table of its own numbering, runs the warmcore binary on them, and reads the
results back with other people's code: the Perfetto trace with Perfetto's own
proto definitions (the `perfetto` package's generated perfetto_trace_pb2),
the parquet table with pyarrow and Polars.
"""

import collections
import json
import random
import struct
import subprocess
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import warmcore

from conftest import BIN, require

# The built-in event names; the test's files number them their own way.
NAMES = [
    "EXEC", "EXIT", "WAKEUP", "WAKEUP_NEW", "BLOCK", "BLOCK_IO", "FORK", "WAIT_PID", "TICK",
    "CTX_SWITCH", "MIGRATE", "RQ_SIZE", "IDLE_BALANCE_BEGIN", "IDLE_BALANCE_END",
    "PERIODIC_BALANCE_BEGIN", "PERIODIC_BALANCE_END", "FUTEX_WAIT", "FUTEX_WAKE", "FREQ_CHANGE",
    "IDLE_ENTER", "IDLE_EXIT", "NEST_CHANGE", "MOVE_TIMER_ARMED", "MOVE_TIMER_FIRED",
    "MOVE_TIMER_CANCELLED",
]
# Ids 300, 299, ... in reverse order, and one event the table names but
# warmcore does not know.
TABLE = [(300 - i, n) for i, n in enumerate(NAMES)] + [(7000, "MY_MARK")]
ID = dict((n, i) for i, n in TABLE)
PREV_STATE = {0: 0, 1: 1, 2: 2, 3: 16}  # R, S, D, X as Linux reports them
IDLE_EXIT = 0xFFFFFFFF


def pad8(n):
    return (n + 7) & ~7


def write_wct(path, ncpu, events, procs, freq, chunk=300):
    """Write a .wct file through the bindings' writer, with the test's own
    event table. events: (cpu, ts, pid, name, a, b) in time order, or with
    `a` a bytes comm for EXEC; procs: pid -> (ppid, comm)."""
    w = warmcore.Writer(
        str(path), ncpu,
        800000 if freq else 0, 2000000 if freq else 0, 3600000 if freq else 0,
        name="pytest", events=TABLE, cores=[c // 2 for c in range(ncpu)], chunk_events=chunk,
        description="pytest",
    )
    for cpu in range(ncpu):
        for _, ts, pid, name, a, b in (e for e in events if e[0] == cpu):
            eid = ID.get(name, name if isinstance(name, int) else 0)
            if isinstance(a, bytes):
                w.push_comm(cpu, ts, pid, eid, a.split(b"\0")[0].decode())
            else:
                w.push(cpu, ts, pid, eid, a, b)
    for p, (pp, c) in sorted(procs.items()):
        w.note_process(p, pp, c, 0)
    assert w.finish() == len(events)


def scenario(ncpu=4, steps=6000, freq=True, seed=1):
    """Plausible scheduling: returns (events in (ts, cpu) order, procs)."""
    rnd = random.Random(seed)
    procs = {p: (1, f"proc-{p}") for p in range(200, 210)}
    procs[1] = (0, "init")
    tasks = list(range(200, 210))
    running = [0] * ncpu
    nextpid = 5000
    ev = []
    ts = 5_000_000_000
    for _ in range(steps):
        ts += rnd.randint(3, 30_000)
        cpu = rnd.randrange(ncpu)
        cur = running[cpu]
        r = rnd.randrange(100)
        if r < 30:
            nxt = 0 if rnd.random() < 0.25 else rnd.choice(tasks)
            if nxt != cur:
                ev.append((cpu, ts, cur, "CTX_SWITCH", nxt, rnd.randrange(4) if cur else 0))
                running[cpu] = nxt
        elif r < 50:
            ev.append((cpu, ts, rnd.choice(tasks), "WAKEUP", rnd.randrange(ncpu), cur))
        elif r < 68:
            ev.append((cpu, ts, cur, "TICK", rnd.randrange(8, 37) * 100_000 if freq else 0, 0))
        elif r < 72 and freq:
            ev.append((cpu, ts, cur, "FREQ_CHANGE", rnd.randrange(8, 37) * 100_000, 0))
        elif r < 77:
            ev.append((cpu, ts, rnd.choice(tasks), "MIGRATE", cpu, rnd.randrange(ncpu)))
        elif r < 81 and len(tasks) < 40:
            parent = cur or 1
            child, nextpid = nextpid, nextpid + 1
            name = f"job{child}"
            procs[child] = (parent, name)
            ev.append((cpu, ts, child, "FORK", parent, 0))
            ev.append((cpu, ts + 1, child, "WAKEUP_NEW", rnd.randrange(ncpu), parent))
            ev.append((cpu, ts + 2, child, "EXEC", name.encode(), 0))
            tasks.append(child)
        elif r < 83 and cur in tasks and len(tasks) > 4:
            ev.append((cpu, ts, cur, "EXIT", 0, 0))
            tasks.remove(cur)
        elif r < 90:
            ev.append((cpu, ts, cur, "BLOCK", 0, 0))
        elif r < 93:
            ev.append((cpu, ts, cur, "MY_MARK", 7, 9))
        elif r < 95:
            ev.append((cpu, ts, cur, 4242, 0xABCD, 0x1234))  # an id the table does not name
    ev.sort(key=lambda e: (e[1], e[0]))
    return ev, procs


def run(*args, ok=True):
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    p = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def comm(pid, cpu, procs):
    return f"swapper/{cpu}" if pid == 0 else procs[pid][1]


def expected_perfetto(events, procs, derive_idle):
    """(cpu, ts, common_pid, kind, fields) for every ftrace event the export
    must hold."""
    out = []
    running = collections.defaultdict(int)
    for cpu, ts, pid, name, a, b in events:
        c = lambda p: comm(p, cpu, procs)  # noqa: E731
        if name == "CTX_SWITCH":
            if derive_idle and pid == 0 and a != 0:
                out.append((cpu, ts, 0, "cpu_idle", (IDLE_EXIT, cpu)))
            out.append((cpu, ts, pid, "sched_switch", (c(pid), pid, 120, PREV_STATE[b], c(a), a, 120)))
            running[cpu] = a
            if derive_idle and a == 0 and pid != 0:
                out.append((cpu, ts, 0, "cpu_idle", (0, cpu)))
        elif name == "WAKEUP":
            out.append((cpu, ts, b, "sched_waking", (c(pid), pid, 120, 1, a)))
        elif name == "WAKEUP_NEW":
            out.append((cpu, ts, b, "sched_wakeup_new", (c(pid), pid, 120, 1, a)))
        elif name == "FORK":
            out.append((cpu, ts, a, "task_newtask", (pid, c(pid), 0)))
        elif name == "EXEC":
            out.append((cpu, ts, pid, "task_rename", (pid, c(pid), a.decode())))
        elif name == "EXIT":
            out.append((cpu, ts, pid, "sched_process_exit", (c(pid), pid, pid, 120)))
        elif name == "MIGRATE":
            out.append((cpu, ts, running[cpu], "sched_migrate_task", (c(pid), pid, 120, a, b)))
        elif name == "TICK":
            running[cpu] = pid
            if a:
                out.append((cpu, ts, pid, "cpu_frequency", (a, cpu)))
        elif name == "FREQ_CHANGE":
            out.append((cpu, ts, running[cpu], "cpu_frequency", (a, cpu)))
    return out


def fields(kind, m):
    if kind == "sched_switch":
        return (m.prev_comm, m.prev_pid, m.prev_prio, m.prev_state, m.next_comm, m.next_pid, m.next_prio)
    if kind in ("sched_waking", "sched_wakeup_new"):
        return (m.comm, m.pid, m.prio, m.success, m.target_cpu)
    if kind == "task_newtask":
        return (m.pid, m.comm, m.clone_flags)
    if kind == "task_rename":
        return (m.pid, m.oldcomm, m.newcomm)
    if kind == "sched_process_exit":
        return (m.comm, m.pid, m.tgid, m.prio)
    if kind == "sched_migrate_task":
        return (m.comm, m.pid, m.prio, m.orig_cpu, m.dest_cpu)
    if kind in ("cpu_frequency", "cpu_idle"):
        return (m.state, m.cpu_id)
    raise AssertionError(f"unexpected ftrace event {kind}")


def no_unknown_fields(msg, where="Trace"):
    """Every field the exporter wrote is one Perfetto's definitions know."""
    assert len(unknown_fields.UnknownFieldSet(msg)) == 0, f"unknown fields in {where}"
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        for v in (value if fd.is_repeated else [value]):
            no_unknown_fields(v, f"{where}.{fd.name}")


def decode_perfetto(path):
    trace = pb.Trace()
    trace.ParseFromString(Path(path).read_bytes())
    no_unknown_fields(trace)
    got, names, bundles = [], {}, 0
    last_ts = collections.defaultdict(int)
    for pkt in trace.packet:
        if pkt.HasField("process_tree"):
            for p in pkt.process_tree.processes:
                names[p.pid] = (p.ppid, list(p.cmdline))
            continue
        assert pkt.HasField("ftrace_events"), pkt
        bundles += 1
        b = pkt.ftrace_events
        for e in b.event:
            kind = e.WhichOneof("event")
            assert e.timestamp >= last_ts[b.cpu], "each CPU's events in time order"
            last_ts[b.cpu] = e.timestamp
            got.append((b.cpu, e.timestamp, e.pid, kind, fields(kind, getattr(e, kind))))
    return got, names, bundles


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    out = {}
    for label, freq, seed in (("freq", True, 1), ("nofreq", False, 2)):
        events, procs = scenario(freq=freq, seed=seed)
        path = d / f"{label}.wct"
        write_wct(path, 4, events, procs, freq)
        out[label] = (path, events, procs)
    return d, out


@pytest.mark.parametrize("label", ["freq", "nofreq"])
def test_perfetto_has_every_event(traces, label):
    d, t = traces
    path, events, procs = t[label]
    pf = d / f"{label}.pftrace"
    p = run("trace", "export", path, "--perfetto", pf)
    assert str(pf) in p.stdout
    got, names, bundles = decode_perfetto(pf)
    want = expected_perfetto(events, procs, derive_idle=(label == "freq"))
    assert collections.Counter(got) == collections.Counter(want)
    assert len(got) == len(want)
    kinds = collections.Counter(k for _, _, _, k, _ in got)
    for k in ("sched_switch", "sched_waking", "sched_wakeup_new", "task_newtask", "task_rename",
              "sched_process_exit", "sched_migrate_task"):
        assert kinds[k] > 5, kinds
    freq_in = [(c, ts, a) for c, ts, _, n, a, _ in events if (n == "TICK" and a) or n == "FREQ_CHANGE"]
    freq_out = [(c, ts, f[0]) for c, ts, _, k, f in got if k == "cpu_frequency"]
    assert sorted(freq_in) == sorted(freq_out)
    if label == "freq":
        assert len(freq_in) > 1000 and kinds["cpu_idle"] > 500
        assert "derived" in p.stdout
    else:
        assert not freq_in and kinds["cpu_idle"] == 0
    # Left-out events are reported by the file's own names.
    assert "BLOCK" in p.stdout and "MY_MARK" in p.stdout and "EVENT_4242" in p.stdout
    assert bundles > 4  # more than one bundle per CPU: written as it goes
    for pid, (ppid, c) in procs.items():
        assert names[pid] == (ppid, [c])


def test_perfetto_window(traces):
    d, t = traces
    path, events, procs = t["freq"]
    t0 = events[0][1]
    lo, hi = 20_000_000, 40_000_000  # ns after the first event
    pf = d / "window.pftrace"
    run("trace", "export", path, "--perfetto", pf, "--from", "20ms", "--to", "40ms")
    got, _, _ = decode_perfetto(pf)
    part = [e for e in events if t0 + lo <= e[1] < t0 + hi]
    assert 100 < len(part) < len(events)
    assert collections.Counter(got) == collections.Counter(expected_perfetto(part, procs, True))


def expected_rows(events, procs):
    names = dict(TABLE)
    rows = []
    for cpu, ts, pid, name, a, b in events:
        arg = a.ljust(8, b"\0")[:8] if isinstance(a, bytes) else struct.pack("<II", a, b)
        lo, hi = struct.unpack("<II", arg)
        ev = name if isinstance(name, str) else names.get(name, f"EVENT_{name}")
        rows.append((ts, cpu, pid, ev, lo, hi, struct.unpack("<Q", arg)[0], procs[pid][1] if pid in procs else None))
    return rows


COLUMNS = ["ts_ns", "cpu", "pid", "event", "arg_a", "arg_b", "arg", "comm"]


def test_parquet_pyarrow_and_polars(traces):
    d, t = traces
    path, events, procs = t["freq"]
    out = d / "freq.parquet"
    p = run("trace", "export", path, "--parquet", out)
    assert f"{len(events)} rows" in p.stdout
    want = expected_rows(events, procs)

    table = pq.read_table(out)
    assert table.num_rows == len(events)
    assert table.schema.names == COLUMNS
    types = [table.schema.field(c).type for c in COLUMNS]
    assert types == [pa.uint64(), pa.uint32(), pa.uint32(), pa.dictionary(pa.int32(), pa.string()),
                     pa.uint32(), pa.uint32(), pa.uint64(), pa.string()]
    assert [table.schema.field(c).nullable for c in COLUMNS] == [False] * 7 + [True]
    cols = [table.column(c).to_pylist() for c in COLUMNS]
    assert list(zip(*cols)) == want
    # Dictionary-encoded, with the file's own names (and unnamed ids).
    dictionary = table.column("event").chunk(0).dictionary.to_pylist()
    assert len(dictionary) == len(set(dictionary)) < 40
    assert {"CTX_SWITCH", "MY_MARK", "EVENT_4242"} <= set(dictionary)
    assert table.column("comm").null_count == sum(1 for e in events if e[2] not in procs)
    assert table.column("comm").null_count > 0

    df = pl.read_parquet(out)
    assert df.height == len(events)
    assert df.columns == COLUMNS
    assert [df.schema[c] for c in COLUMNS] == [pl.UInt64, pl.UInt32, pl.UInt32, pl.Categorical, pl.UInt32,
                                               pl.UInt32, pl.UInt64, pl.String]
    assert list(df.iter_rows()) == want
    by_event = dict(df.group_by("event").len().with_columns(pl.col("event").cast(pl.String)).iter_rows())
    assert by_event == dict(collections.Counter(r[3] for r in want))


def test_parquet_window_and_both_outputs(traces):
    d, t = traces
    path, events, procs = t["nofreq"]
    pf, out = d / "both.pftrace", d / "both.parquet"
    run("trace", "export", path, "--perfetto", pf, "--parquet", out, "--from", "10ms", "--to", "30ms")
    t0 = events[0][1]
    part = [e for e in events if t0 + 10_000_000 <= e[1] < t0 + 30_000_000]
    assert pl.read_parquet(out).height == len(part) > 0
    assert list(pl.read_parquet(out).iter_rows()) == expected_rows(part, procs)
    got, _, _ = decode_perfetto(pf)
    assert collections.Counter(got) == collections.Counter(expected_perfetto(part, procs, False))


def test_bad_input_and_outputs(traces, tmp_path):
    d, t = traces
    path = t["freq"][0]
    # No output asked for.
    p = run("trace", "export", path, ok=False)
    assert p.returncode != 0 and "--perfetto" in p.stderr and "--parquet" in p.stderr
    # A file that is not a trace: the reader's one line, no output left.
    bogus = tmp_path / "bogus.wct"
    bogus.write_bytes(b"this is not a trace at all, just some text" * 3)
    out = tmp_path / "x.parquet"
    p = run("trace", "export", bogus, "--parquet", out, ok=False)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bogus) in lines[0] and "offset 0" in lines[0], p.stderr
    assert not out.exists()
    # A truncated trace.
    data = path.read_bytes()
    cut = tmp_path / "cut.wct"
    cut.write_bytes(data[:30])
    p = run("trace", "export", cut, "--perfetto", tmp_path / "c.pftrace", ok=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and str(cut) in p.stderr
    # A corrupt chunk: found while exporting; the partial output is removed.
    bad = bytearray(data)
    bad[pad8(24 + struct.unpack("<I", data[16:20])[0]) + 40 + 5] ^= 0xFF
    corrupt = tmp_path / "corrupt.wct"
    corrupt.write_bytes(bytes(bad))
    pf = tmp_path / "corrupt.pftrace"
    p = run("trace", "export", corrupt, "--perfetto", pf, ok=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "checksum" in p.stderr and str(corrupt) in p.stderr
    assert not pf.exists()
    # The trace itself as the output: refused, the trace left whole.
    copy = tmp_path / "self.wct"
    copy.write_bytes(data)
    p = run("trace", "export", copy, "--parquet", copy, ok=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and str(copy) in p.stderr, p.stderr
    assert copy.read_bytes() == data
    # Unwritable outputs: one line naming them.
    for flag, name in (("--perfetto", "t.pftrace"), ("--parquet", "t.parquet")):
        target = tmp_path / "no-such-dir" / name
        p = run("trace", "export", path, flag, target, ok=False)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
        assert str(target) in p.stderr, p.stderr
