# SPDX-License-Identifier: GPL-2.0-only
import numpy as np
import pyarrow as pa
import pytest

import warmcore
from warmcore import EVENT_IDS as ID

from conftest import MS


def test_header_machine_processes(known_trace):
    t = warmcore.open(known_trace)
    assert t.nr_cpus == 4
    assert t.machine["freq_base_khz"] == 2_000_000
    assert t.header["machine"]["name"] == "known"
    procs = t.processes()
    assert procs[102]["comm"] == "cc1" and procs[102]["ppid"] == 101
    assert t.span() == (0, 100 * MS)
    assert t.event_count() == 21
    assert t.event_names()[ID["CTX_SWITCH"]] == "CTX_SWITCH"


def test_read_is_arrow_with_the_written_events(known_trace):
    t = warmcore.open(known_trace)
    b = t.read()
    assert isinstance(b, pa.RecordBatch)
    assert b.schema.names == ["ts", "cpu", "pid", "id", "a", "b"]
    assert b.schema.field("ts").type == pa.uint64()
    assert b.num_rows == 21
    # CPU order: CPU 0's ten events first, each CPU in time order.
    cpu = b.column("cpu").to_numpy()
    assert list(cpu[:10]) == [0] * 10
    assert (np.diff(cpu) >= 0).all()
    # Arguments round-trip, including the high half.
    rq = t.read(events=["RQ_SIZE"])
    assert rq.column("a").to_pylist() == [2, 1]
    assert rq.column("b").to_pylist() == [1, 0xFFFFFFFF]


def test_ranges_cpus_and_events(known_trace):
    t = warmcore.open(known_trace)
    # [start, end): 10 ms is in, 60 ms is out.
    b = t.read(cpus=[0], events=["CTX_SWITCH"], start=10 * MS, end=60 * MS)
    assert b.column("ts").to_pylist() == [10 * MS]
    b = t.read(cpus=[0, 1], events=["ctx_switch", ID["MIGRATE"]])
    assert sorted(set(b.column("id").to_pylist())) == [ID["CTX_SWITCH"], ID["MIGRATE"]]
    assert set(b.column("cpu").to_pylist()) == {0, 1}
    # Global time order merges CPUs.
    ts = t.read(order="time").column("ts").to_numpy()
    assert (np.diff(ts.astype(np.int64)) >= 0).all()
    assert not (np.diff(t.read(order="cpu").column("ts").to_numpy().astype(np.int64)) >= 0).all()
    assert t.read(start=200 * MS).num_rows == 0


def test_pandas_and_polars_agree(known_trace):
    t = warmcore.open(known_trace)
    pdf = t.to_pandas(events=["TICK"])
    pl_df = t.to_polars(events=["TICK"])
    assert list(pdf["ts"]) == pl_df["ts"].to_list() == [4 * MS, 12 * MS, 100 * MS, 90 * MS]
    assert set(pdf["event"]) == {"TICK"}
    assert pl_df["event"].to_list() == ["TICK"] * 4
    assert list(pdf["a"]) == [1_100_000, 2_900_000, 0, 1_000_000]


def test_synthetic_trace_reads_whole(synth_trace):
    t = warmcore.open(synth_trace)
    b = t.read()
    assert b.num_rows == t.event_count() >= 200_000
    sw = t.to_pandas(events=["CTX_SWITCH"], names=False)
    # The synthesiser's invariant, seen from Python: a switch's previous task
    # is the one the last switch on that CPU put on.
    for _, g in sw.groupby("cpu"):
        assert (g["pid"].to_numpy()[1:] == g["a"].to_numpy()[:-1]).all()


def test_bad_file_raises_the_readers_line(tmp_path):
    bad = tmp_path / "bad.wct"
    bad.write_bytes(b"not a trace at all, just some bytes" * 4)
    with pytest.raises(warmcore.TraceError) as e:
        warmcore.open(bad)
    msg = str(e.value)
    assert "\n" not in msg and str(bad) in msg and "magic" in msg
    with pytest.raises(warmcore.TraceError, match="check the path"):
        warmcore.open(tmp_path / "missing.wct")


def test_truncated_file_is_an_error_not_a_crash(known_trace, tmp_path):
    data = known_trace.read_bytes()
    cut = tmp_path / "cut.wct"
    cut.write_bytes(data[: len(data) // 2])
    try:
        t = warmcore.open(cut)
    except warmcore.TraceError as e:
        assert str(cut) in str(e)
        return
    # A reader that salvages a cut file says so.
    assert t.incomplete


def test_bad_arguments(known_trace):
    t = warmcore.open(known_trace)
    with pytest.raises(ValueError, match='no event named "NOPE"'):
        t.read(events=["NOPE"])
    with pytest.raises(ValueError, match="no CPU 9: the trace has CPUs 0-3"):
        t.read(cpus=[9])
    with pytest.raises(ValueError, match="order"):
        t.read(order="random")


def test_underload_per_interval_is_the_analyzers(tmp_path):
    # crates/trace/tests/stats_scenarios.rs's known pattern, on 4 CPUs
    # (prev_state 0 is RUNNABLE, 1 BLOCKED): in [0, 4 ms) one task hops over
    # three CPUs, never two at once (3 used, 1 runnable: underload 2); in
    # [4, 8 ms) tasks 1 and 2 run together on CPUs 0 and 1, then 1 alone on
    # CPU 3 (3 used, 2 runnable: underload 1).
    from warmcore import _native

    path = tmp_path / "under.wct"
    w = warmcore.Writer(str(path), 4)
    sw, wk = ID["CTX_SWITCH"], ID["WAKEUP"]
    for cpu, ts, pid, eid, a, b in [
        (0, 0, 0, sw, 1, 0), (0, MS, 1, sw, 0, 1), (0, 3 * MS // 2, 1, wk, 1, 0),
        (1, 3 * MS // 2, 0, sw, 1, 0), (1, 5 * MS // 2, 1, sw, 0, 1), (1, 3 * MS, 1, wk, 2, 0),
        (2, 3 * MS, 0, sw, 1, 0), (2, 7 * MS // 2, 1, sw, 0, 1),
        (0, 9 * MS // 2, 1, wk, 0, 0), (0, 9 * MS // 2, 0, sw, 1, 0), (1, 5 * MS, 2, wk, 1, 0),
        (1, 5 * MS, 0, sw, 2, 0), (0, 6 * MS, 1, sw, 0, 1), (1, 6 * MS, 2, sw, 0, 1),
        (3, 7 * MS, 1, wk, 3, 0), (3, 7 * MS, 0, sw, 1, 0), (3, 15 * MS // 2, 1, sw, 0, 1),
    ]:
        w.push(cpu, ts, pid, eid, a, b)
    w.finish()
    assert _native.UNDERLOAD_INTERVAL_NS == 4 * MS
    assert warmcore.open(path).underload() == [2, 1]


def test_writer_follows_the_output_rules(tmp_path):
    """`warmcore.Writer` writes aside and renames at `finish` (the rules of
    every output, docs/conventions.md): an unfinished writer leaves the older
    file whole and no temporary file; a link is followed and kept; a
    directory or a link to nothing is refused."""
    import gc
    import os

    path = tmp_path / "w.wct"
    path.write_bytes(b"old")
    w = warmcore.Writer(str(path), 2)
    w.push(0, 1000, 1, ID["TICK"])
    assert path.read_bytes() == b"old"
    del w
    gc.collect()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.wct"], "the temporary file is removed"
    w = warmcore.Writer(str(path), 2)
    w.push(0, 1000, 1, ID["TICK"])
    assert w.finish() == 1
    assert warmcore.open(path).event_count() == 1
    link = tmp_path / "link.wct"
    os.symlink("w.wct", link)
    w = warmcore.Writer(str(link), 1)
    assert w.finish() == 0
    assert link.is_symlink() and warmcore.open(path).event_count() == 0
    os.symlink("nowhere", tmp_path / "dangling")
    for bad, why in [(tmp_path, "is a directory"), (tmp_path / "dangling", "symbolic link to nothing"),
                     (tmp_path / "no" / "w.wct", "create it first")]:
        with pytest.raises(warmcore.TraceError, match=why):
            warmcore.Writer(str(bad), 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "link.wct", "w.wct"]
