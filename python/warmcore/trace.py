# SPDX-License-Identifier: GPL-2.0-only
"""A Python face for the native reader: Arrow first, pandas and Polars on top."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Union

import pyarrow as pa

from . import _native

EventSel = Optional[Iterable[Union[str, int]]]


class Trace:
    """An open .wct trace. ``warmcore.open(path)`` makes one; a file that cannot
    be read raises ``warmcore.TraceError`` with the reader's one-line message."""

    def __init__(self, path):
        self._t = _native.Trace(str(path))
        self._names = dict(self._t.event_names())

    # What the trace says about itself.
    @property
    def path(self) -> str:
        return self._t.path

    @property
    def header(self) -> dict:
        return self._t.header

    @property
    def machine(self) -> dict:
        return self._t.machine

    @property
    def nr_cpus(self) -> int:
        return self._t.nr_cpus

    @property
    def lost(self) -> list:
        return self._t.lost

    @property
    def incomplete(self) -> Optional[str]:
        return self._t.incomplete

    def processes(self) -> dict:
        """pid -> {pid, ppid, comm, first_ns, last_ns}."""
        return self._t.processes()

    def event_names(self) -> dict:
        """This file's event table, id -> name."""
        return dict(self._names)

    def event_id(self, name: str) -> Optional[int]:
        """This file's id for an event name (built-in or its own)."""
        up = name.upper()
        for i, n in self._names.items():
            if n.upper() == up:
                return i
        return None

    def span(self):
        """(first, last) timestamps in ns, or None for an empty trace."""
        return self._t.span()

    @property
    def start_ns(self) -> int:
        s = self._t.span()
        return s[0] if s else 0

    def runqueue(self) -> pa.RecordBatch:
        """Each CPU's run-queue size over time (cpu, ts, nr_running), derived
        from switches, wake-ups and migrations: for traces without RQ_SIZE."""
        return self._t.runqueue()

    def underload(self) -> list:
        """The underload of each 4 ms interval from the first event (Nest,
        section 5.2), as `warmcore trace stats` and a simulated run's report
        compute it (their underload per second is this list's sum over the
        trace's span)."""
        return self._t.underload()

    def links(self) -> pa.RecordBatch:
        """The wake-up and fork links (`warmcore trace chains`), one row per
        link in time order: id, ts, fork, waker, waker_cpu, waker_khz, wakee,
        target_cpu, cpu, start, khz, end, run_ns, below_ns, parent; absolute
        ns. Raises TraceError for a trace without wake-up or fork events."""
        return self._t.links()

    def event_count(self) -> int:
        return self._t.event_count()

    # Reading events.
    def read(self, cpus: Optional[Sequence[int]] = None, events: EventSel = None,
             start: Optional[int] = None, end: Optional[int] = None,
             absolute: bool = False, order: str = "cpu") -> pa.RecordBatch:
        """Events as a pyarrow.RecordBatch (ts, cpu, pid, id, a, b), built in
        Rust and handed over without a copy. ``start``/``end`` are ns, relative
        to the first event unless ``absolute``; the window is [start, end)."""
        base = 0 if absolute else self.start_ns
        s = None if start is None else max(0, int(start) + base)
        e = None if end is None else max(0, int(end) + base)
        ev = None if events is None else list(events)
        return self._t.read(cpus=None if cpus is None else list(cpus), events=ev,
                            start=s, end=e, order=order)

    def to_arrow(self, *args, **kw) -> pa.Table:
        return pa.Table.from_batches([self.read(*args, **kw)])

    def to_pandas(self, *args, names: bool = True, **kw):
        """A pandas DataFrame; with ``names``, an ``event`` column (categorical)."""
        import pandas as pd

        df = self.read(*args, **kw).to_pandas()
        if names:
            cats = sorted(set(self._names.values()))
            df["event"] = pd.Categorical(df["id"].map(self._names).fillna("?"), categories=cats + ["?"])
        return df

    def to_polars(self, *args, names: bool = True, **kw):
        """A Polars DataFrame (zero-copy from Arrow); with ``names``, an ``event`` column."""
        import polars as pl

        df = pl.from_arrow(self.read(*args, **kw))
        if names:
            df = df.with_columns(
                pl.col("id").replace_strict(self._names, default="?", return_dtype=pl.Utf8).alias("event"))
        return df

    def __repr__(self):
        return repr(self._t)


def open(path) -> Trace:  # noqa: A001 - the natural name, as in builtins
    """Open a .wct trace."""
    return Trace(path)
