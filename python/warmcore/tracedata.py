# SPDX-License-Identifier: GPL-2.0-only
"""The data a view reads: a trace's events loaded once as numpy columns,
with what derived columns look up (the process table, EXEC names, every
CPU's frequency changes, run-queue sizes derived from switches). The view
language itself, and applying a view to this data, live in ``views``."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd


class ViewError(ValueError):
    """One line: the file, the line, what was expected. Defined here, below
    ``views`` that re-exports it, because the data raises it too: a view that
    names an event the trace has not."""


class TraceData:
    """A trace's events loaded once as numpy columns in CPU order (each CPU's
    events in time order), plus what derived columns need: the process
    table and every CPU's frequency changes. Times are ns from the first event."""

    def __init__(self, trace, start: Optional[int] = None, end: Optional[int] = None, extra: Optional[dict] = None):
        """The events of [start, end) (ns from the first event; all if
        None). `extra`: columns of events (ts relative) before and after the
        window, put in (cpu, ts) order among its events: what a window read
        alone does not know (lod.Lod.context)."""
        self.trace = trace
        self.t0 = trace.start_ns
        span = trace.span() or (0, 0)
        self.end = span[1] - self.t0
        self.nr_cpus = trace.nr_cpus
        m = trace.machine
        self.consts = {"FMIN": m.get("freq_min_khz", 0), "FBASE": m.get("freq_base_khz", 0),
                       "FMAX": m.get("freq_max_khz", 0), "NCPUS": self.nr_cpus, "END": self.end}
        b = trace.read(start=start, end=end)
        cols = {n: b.column(n).to_numpy() for n in b.schema.names}
        cols["ts"] = (cols["ts"] - np.uint64(self.t0)).view(np.int64)
        if extra is not None and len(extra["ts"]):
            # A stable sort: events of one time keep their order.
            both = {k: np.concatenate([np.asarray(extra[k]).astype(v.dtype), v]) for k, v in cols.items()}
            o = np.lexsort((both["ts"], both["cpu"]))
            cols = {k: v[o] for k, v in both.items()}
        self.cols = cols
        self.n = len(cols["ts"])
        # How many events of each id (index): what the trace has, counted once.
        self.id_counts = np.bincount(cols["id"]) if self.n else np.zeros(0, np.int64)
        self.names = trace.event_names()
        self._procs = None
        self._freq = None
        self._execs = None

    def ids(self, names) -> np.ndarray:
        out = []
        for n in names:
            i = n if isinstance(n, int) else self.trace.event_id(n)
            if i is None:
                raise ViewError(f"{self.trace.path}: no event named {n!r}: the trace has "
                                + ", ".join(sorted(set(self.names.values()))))
            out.append(i)
        return np.asarray(out, dtype=np.uint32)

    @property
    def runqueue_derived(self) -> bool:
        """The trace has no RQ_SIZE events but switches to derive them from."""
        return not self.has("RQ_SIZE") and self.has("CTX_SWITCH")

    def derived_runqueue(self) -> dict:
        """RQ_SIZE rows derived by the trace analysis (Trace.runqueue), in
        the columns and the (cpu, ts) order of `cols`."""
        if getattr(self, "_rq", None) is None:
            rid = self.trace.event_id("RQ_SIZE")
            if rid is None:
                raise ViewError(f"{self.trace.path}: the event table has no RQ_SIZE to derive run-queue sizes into")
            b = self.trace.runqueue()  # in (cpu, ts) order
            cpu = b.column("cpu").to_numpy()
            ts = (b.column("ts").to_numpy() - np.uint64(self.t0)).view(np.int64)
            nr = b.column("nr_running").to_numpy()
            prev = np.concatenate([[0], nr[:-1]]).astype(np.int64)
            prev[np.flatnonzero(np.r_[True, cpu[1:] != cpu[:-1]])] = 0
            delta = (nr.astype(np.int64) - prev).astype(np.uint32)
            n = len(ts)
            self._rq = {"ts": ts, "cpu": cpu, "pid": np.zeros(n, np.uint32), "id": np.full(n, rid, np.uint32),
                        "a": nr.astype(np.uint32), "b": delta}
        return self._rq

    def has(self, name) -> bool:
        i = self.trace.event_id(name)
        return i is not None and i < len(self.id_counts) and self.id_counts[i] > 0

    def event_labels(self, ids: np.ndarray) -> pd.Categorical:
        cats = sorted(self.names)
        names = [self.names[c] for c in cats] + ["?"]
        if cats and cats[-1] < 65536:
            lut = np.full(cats[-1] + 2, len(cats), dtype=np.int32)
            lut[np.asarray(cats)] = np.arange(len(cats), dtype=np.int32)
            codes = lut[np.minimum(ids, cats[-1] + 1)]
        else:
            i = np.minimum(np.searchsorted(np.asarray(cats, dtype=np.uint32), ids), max(len(cats) - 1, 0))
            codes = np.where(np.asarray(cats, dtype=np.uint32)[i] == ids, i, len(cats)) if cats else np.zeros(len(ids), np.int32)
        return pd.Categorical.from_codes(codes, categories=names)

    def processes(self):
        """(pids sorted, comm codes, comm names): a task forked and never
        exec'd carries its parent's comm, as in Linux."""
        if self._procs is None:
            # Kept on the trace too: the windows of a large trace, each its own
            # TraceData, share the whole trace's table.
            self._procs = getattr(self.trace, "_procs", None)
        if self._procs is None:
            pt = self.trace._t.process_table()
            pids = pt.column("pid").to_numpy()
            ppids = pt.column("ppid").to_numpy()
            # Encoded in Arrow: one Python string per distinct name, not per
            # process (millions in a long trace).
            comm = pt.column("comm").dictionary_encode()
            names = comm.dictionary.to_pylist()
            codes = comm.indices.to_numpy().astype(np.int32)
            if "" in names:
                empty = names.index("")
                pidx = np.searchsorted(pids, ppids)
                pidx = np.minimum(pidx, max(len(pids) - 1, 0))
                has_parent = (len(pids) > 0) & (pids[pidx] == ppids)
                for _ in range(16):
                    e = (codes == empty) & has_parent
                    if not e.any():
                        break
                    codes[e] = codes[pidx[e]]
            self._procs = self.trace._procs = (pids, codes, names)
        return self._procs

    def execs(self):
        """(pid, ts, comm code) of EXEC events in (pid, ts) order, and the names:
        the whole trace's once `whole_trace_execs` has read them (a window's
        events miss the EXECs before it), this data's otherwise."""
        whole = getattr(self.trace, "_execs", None)
        if whole is not None:
            return whole
        if self._execs is None:
            self._execs = exec_table(self.cols, self.trace.event_id("EXEC"))
        return self._execs

    @staticmethod
    def whole_trace_execs(trace, lod=None):
        """Every EXEC of `trace`, kept on it for the windows of a large trace:
        from its level-of-detail summary `lod`, which keeps them, or else by a
        pass over the whole file."""
        eid = trace.event_id("EXEC")
        if eid is None:
            return
        if lod is not None:
            x = lod.execs
            cols = {"id": np.full(len(x), eid, dtype=np.uint32), "pid": x[:, 0].astype(np.uint32), "ts": x[:, 1],
                    "a": (x[:, 2] & 0xFFFFFFFF).astype(np.uint32), "b": (x[:, 2] >> 32).astype(np.uint32)}
        else:
            b = trace.read(events=["EXEC"])
            cols = {n: b.column(n).to_numpy() for n in b.schema.names}
        cols["ts"] = (cols["ts"] - np.uint64(trace.start_ns)).view(np.int64)
        trace._execs = exec_table(cols, eid)

    def comm_of(self, pids: np.ndarray, ts: Optional[np.ndarray] = None) -> pd.Categorical:
        """Each row's task name: with `ts`, the name from the pid's last EXEC at
        or before ts (Fork/wait, section 3.2: "the previous fork and
        exec events of this PID"), otherwise the process table's."""
        pids = np.asarray(pids, dtype=np.uint32)
        if len(pids) == 0:
            return pd.Categorical([], categories=["<idle>"])
        table, pcodes, pnames = self.processes()
        epid, ets, ecodes, enames = self.execs()
        names = ["<idle>", "<unknown>"] + pnames
        code = np.full(len(pids), 1, dtype=np.int32)
        if len(table):
            top = int(max(int(table[-1]), int(pids.max()) if len(pids) else 0))
            if top <= (1 << 23):
                # Pids are small (Linux's pid_max is at most 2^22): a lookup table.
                lut = np.full(top + 1, 1, dtype=np.int32)
                lut[table] = pcodes + 2
                code = lut[pids]
            else:
                i = np.minimum(np.searchsorted(table, pids), len(table) - 1)
                hit = table[i] == pids
                code[hit] = pcodes[i[hit]] + 2
        if ts is not None and len(epid):
            off = len(names)
            names = names + enames
            top = int(max(int(epid.max()), int(pids.max())))
            if top <= (1 << 23):
                has = np.zeros(top + 1, dtype=bool)
                has[epid] = True
                rows = np.flatnonzero(has[pids])
            else:
                rows = np.flatnonzero(np.isin(pids, epid))
            if len(rows):
                shift = np.int64(max(int(self.end), int(ts.max())) + 1)
                ekey = epid.astype(np.int64) * shift + ets
                rkey = pids[rows].astype(np.int64) * shift + np.asarray(ts)[rows]
                j = np.searchsorted(ekey, rkey, side="right") - 1
                ok = (j >= 0) & (epid[np.maximum(j, 0)] == pids[rows])
                code[rows[ok]] = ecodes[j[ok]] + off
        code[pids == 0] = 0
        # Names may repeat across the two tables: merge them.
        uniq, inv = np.unique(np.asarray(names, dtype=object), return_inverse=True)
        return pd.Categorical.from_codes(inv[code], categories=list(uniq))

    def freq_events(self):
        """(cpu, ts, khz) of frequency knowledge: FREQ_CHANGE and TICKs that carry one."""
        if self._freq is None:
            c = self.cols
            fc, tk = self.trace.event_id("FREQ_CHANGE"), self.trace.event_id("TICK")
            m = (c["id"] == fc) | ((c["id"] == tk) & (c["a"] > 0))
            self._freq = (c["cpu"][m], c["ts"][m], c["a"][m])
        return self._freq

    def frequency_at(self, cpu: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Each row's CPU frequency in kHz: the last known at or before ts (0 if none)."""
        fcpu, fts, fkhz = self.freq_events()
        out = np.zeros(len(ts), dtype=np.int64)
        if not len(fts) or not len(ts):
            return out
        # Rows and frequency events are both in (cpu, ts) order: one search on a
        # combined key finds each row's last frequency event.
        shift = np.int64(max(int(self.end), int(ts.max())) + 1)
        if getattr(self, "_fkey", (None,))[0] != shift:
            self._fkey = (shift, fcpu.astype(np.int64) * shift + fts)
        fkey = self._fkey[1]
        rkey = cpu.astype(np.int64)
        rkey *= shift
        rkey += np.asarray(ts, dtype=np.int64)
        i = np.searchsorted(fkey, rkey, side="right") - 1
        ok = (i >= 0) & (fcpu[np.maximum(i, 0)] == cpu)
        out[ok] = fkhz[i[ok]]
        return out


def exec_table(c: dict, eid: Optional[int]):
    """(pid, ts, comm code) of the EXEC events among columns `c`, in (pid, ts)
    order, and the comm names."""
    m = c["id"] == (eid if eid is not None else 0xFFFFFFFF)
    pid, ts = c["pid"][m], c["ts"][m]
    raw = np.stack([c["a"][m], c["b"][m]], axis=1).astype("<u4").view("S8").ravel()
    # Decoded once per distinct name, not per event (a build has millions).
    uniq, codes = np.unique(raw, return_inverse=True)
    names = [bytes(u).split(b"\0")[0].decode("utf-8", "replace") for u in uniq]
    o = np.lexsort((ts, pid))
    return pid[o], ts[o], codes.reshape(-1)[o].astype(np.int32), names
