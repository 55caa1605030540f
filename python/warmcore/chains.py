# SPDX-License-Identifier: GPL-2.0-only
"""Wake-up chains in the viewer: hovering a task's segment names who woke or
forked it (pid, name, CPU, frequency); clicking it, or giving a pid, draws
the chain of wake-ups and forks back and forth in time as arrows across the
CPU rows of the timeline, each labelled with the waker's and the wakee's
frequencies: the fork/wait pattern behind frequency inversion (Fewer Cores,
More Hertz, section 2), seen directly.

The links and the chains are the Rust analysis' (warmcore_trace::chains,
`warmcore trace chains`): `Trace.links()` once per trace, `_native.chain` per
click. server.py calls `attach` and the hook it returns."""

from __future__ import annotations

import html
import threading
from typing import Optional

import numpy as np
import pandas as pd

from . import _native

MS = 1e6
# Arrows drawn at most: a fork/wait chain can span a whole build; beyond
# this the links nearest in time to the followed one are drawn.
ARROWS_MAX = 2_000
ARROW_COLOR = "#d62728"
# Traces up to this many events get their links with the first page.
SYNC_MAX_EVENTS = 2_000_000
PENDING = "(deriving the wake-up links)"
# A trace drawn from its summary: links only on request.
ON_REQUEST = "(click a segment or give a pid to derive the wake-up links)"
# Columns chains add to the timeline's exact segments.
SEGMENT_COLUMNS = ("waker", "link")
TOOLTIP = ("woken by", "@waker")


def _mhz(khz) -> str:
    return "?" if khz != khz else f"{khz / 1e3:.0f}"  # NaN: unknown


class Chains:
    """The links of one trace, times relative to its first event (ns)."""

    def __init__(self, trace):
        self.error: Optional[str] = None
        try:
            batch = trace.links()
        except _native.TraceError as e:  # the analysis' one line (no wake-up events), shown on the page
            self.error = str(e)
            batch = None
        t0 = trace.start_ns
        # Nullable columns come as float64 with NaN for null.
        f = batch.to_pandas() if batch is not None and batch.num_rows else None
        cols = ("id", "ts", "fork", "waker", "waker_cpu", "waker_khz", "wakee", "target_cpu", "cpu", "start",
                "khz", "end", "run_ns", "below_ns", "parent")
        if f is None:
            f = pd.DataFrame({c: pd.Series([], dtype="float64") for c in cols})
        f = f.astype({c: "float64" for c in ("waker_khz", "cpu", "start", "khz", "below_ns", "parent")})
        for c in ("ts", "start", "end"):
            f[c] = f[c] - t0
        self.links = f
        # The Rust traversal's input, built once: -1 for no parent.
        self.parents = np.nan_to_num(f["parent"].to_numpy(np.float64), nan=-1).astype(np.int64).tolist()
        # Columns hover reads, as arrays.
        self._col = {c: f[c].to_numpy() for c in ("fork", "waker", "waker_cpu", "waker_khz", "ts", "wakee", "end")}
        pt = trace._t.process_table()
        self._pids = pt.column("pid").to_numpy()
        self._comms = pt.column("comm").to_pylist()
        # Links by (wakee, ts): a segment's link is its task's last one begun before it.
        wakee = f["wakee"].to_numpy(np.int64)
        ts = f["ts"].to_numpy(np.int64)
        self._shift = np.int64(max(int(f["end"].max()) if len(f) else 0, 0) + 1)
        key = wakee * self._shift + ts
        self._order = np.argsort(key, kind="stable")
        self._key = key[self._order]

    def tasks(self, pids) -> list:
        """Each pid as 'comm (pid)', '<idle>' for 0."""
        pids = np.asarray(pids, dtype=self._pids.dtype if len(self._pids) else np.int64)
        j = np.minimum(np.searchsorted(self._pids, pids), max(len(self._pids) - 1, 0))
        hit = (self._pids[j] == pids) if len(self._pids) else np.zeros(len(pids), dtype=bool)
        return ["<idle>" if p == 0 else f"{(self._comms[i] if h else '') or '-'} ({p})"
                for p, i, h in zip(pids.tolist(), j.tolist(), hit.tolist())]

    def task(self, pid: int) -> str:
        return self.tasks([pid])[0]

    def link_of(self, pids, begins) -> np.ndarray:
        """The link whose wakee runs each segment (task `pids[i]` from
        `begins[i]` ns): its last wake-up at or before the segment that has
        not ended before it; -1 for none."""
        pids = np.asarray(pids, dtype=np.int64)
        begins = np.asarray(begins, dtype=np.int64)
        out = np.full(len(pids), -1, dtype=np.int64)
        if not len(self._key) or not len(pids):
            return out
        b = np.clip(begins, 0, self._shift - 1)
        j = np.searchsorted(self._key, pids * self._shift + b, side="right") - 1
        cand = self._order[np.maximum(j, 0)]
        c = self._col
        ok = (j >= 0) & (c["wakee"][cand] == pids) & (pids != 0) & (c["end"][cand] >= begins)
        out[ok] = cand[ok]
        return out

    def describe(self, ids) -> list:
        """Who made each link of `ids`, where and how fast: what hover shows
        (-1: a task not woken in the trace)."""
        ids = np.asarray(ids, dtype=np.int64)
        if not len(self.links):
            return ["not woken in the trace"] * len(ids)
        c = self._col
        i = np.maximum(ids, 0)
        who = self.tasks(c["waker"][i])
        out = []
        for k, w, fork, cpu, khz, ts in zip(ids.tolist(), who, c["fork"][i].tolist(), c["waker_cpu"][i].tolist(),
                                             c["waker_khz"][i].tolist(), c["ts"][i].tolist()):
            out.append("not woken in the trace" if k < 0 else
                       f"{w} on CPU {cpu} at {_mhz(khz)} MHz ({'forked' if fork else 'woken'} at {ts / MS:.3f} ms)")
        return out

    def hover(self, src: dict) -> dict:
        """The exact segments' columns with each segment's waker added."""
        task = np.asarray(src["task"], dtype=np.int64)
        link = self.link_of(task, np.round(np.asarray(src["left"], dtype=np.float64) * MS))
        src["link"] = link
        # Each link described once, however many segments it has.
        u, inv = np.unique(link, return_inverse=True)
        text = np.asarray(self.describe(u) + [""], dtype=object)
        src["waker"] = text[np.where(task == 0, len(u), inv.reshape(-1))].tolist()
        return src

    def chain(self, seeds) -> np.ndarray:
        """Link ids of the chain through `seeds` (the Rust analysis' chain)."""
        return np.asarray(_native.chain(self.parents, [int(s) for s in seeds]), dtype=np.int64)

    @staticmethod
    def nearest(ids: np.ndarray, seeds, n: Optional[int] = None) -> np.ndarray:
        """At most `n` (ARROWS_MAX) of `ids`: those nearest in time (in link
        order) to the first seed."""
        n = ARROWS_MAX if n is None else n
        if len(ids) <= n:
            return ids
        centre = int(min(seeds))
        return np.sort(ids[np.argsort(np.abs(ids - centre), kind="stable")[:n]])

    def seeds_of_pid(self, pid: int) -> np.ndarray:
        """The links through a task: those that woke it and those it made
        (as `warmcore trace chains --pid`)."""
        f = self.links
        return f.index[(f["wakee"] == pid) | (f["waker"] == pid)].to_numpy()

    def arrows(self, ids) -> dict:
        """Arrow columns for links `ids`: from the waker's CPU at the wake-up
        to the CPU the wakee ran on when it started (to the chosen CPU at the
        wake-up if it never ran), in ms; labelled waker -> wakee MHz."""
        f = self.links.iloc[np.asarray(ids, dtype=np.int64)]
        ran = f["cpu"].notna().to_numpy()
        x0 = f["ts"].to_numpy(np.float64) / MS
        x1 = np.where(ran, f["start"].to_numpy(np.float64), f["ts"].to_numpy(np.float64)) / MS
        y0 = f["waker_cpu"].to_numpy(np.float64)
        y1 = np.where(ran, f["cpu"].to_numpy(np.float64), f["target_cpu"].to_numpy(np.float64))
        label = [f"{_mhz(a)}\u2192{_mhz(b)} MHz" for a, b in zip(f["waker_khz"], f["khz"])]
        return {"x0": x0, "y0": y0, "x1": x1, "y1": y1, "lx": (x0 + x1) / 2, "ly": (y0 + y1) / 2,
                "label": label, "link": f["id"].to_numpy(np.int64),
                "waker": self.tasks(f["waker"].to_numpy()), "wakee": self.tasks(f["wakee"].to_numpy()),
                "below_us": f["below_ns"].to_numpy(np.float64) / 1e3}

    def summary(self, ids) -> str:
        if not len(ids):
            return "no links"
        f = self.links.iloc[np.asarray(ids, dtype=np.int64)]
        cpus = sorted(set(f["waker_cpu"].astype(int)) | set(f["cpu"].dropna().astype(int)))
        below = f["below_ns"].dropna()
        b = f"{below.sum() / MS:.3f} ms below the waker's frequency" if len(below) else "no frequency data"
        return (f"<span id='chain-links'>{len(f)}</span> links across <span id='chain-cpus'>{len(cpus)}</span> "
                f"CPUs ({', '.join(map(str, cpus))}) from {f['ts'].min() / MS:.3f} to {f['end'].max() / MS:.3f} ms; "
                f"{b}")


_lock = threading.Lock()   # one computation per model
_start = threading.Lock()  # one thread per model, started without waiting for a computation


def of(model) -> Chains:
    """The chains of a server model's trace, computed once for all its pages."""
    with _lock:
        ch = getattr(model, "_chains", None)
        if ch is None:
            ch = model._chains = Chains(model.trace)
        return ch


def ready(model, asked: bool = False) -> Optional[Chains]:
    """The chains if computed, else None: a large trace's are computed on a
    thread (a pass of the analysis), so that its first picture does not wait.
    A trace drawn from its summary is never read whole unasked: its links
    (about 170 MB per 10 M events) are derived only when a click or the pid
    box asks for a chain."""
    if getattr(model, "_chains", None) is None and model.trace.event_count() > SYNC_MAX_EVENTS:
        if getattr(model, "lod", None) is not None and not asked and getattr(model, "_chains_thread", None) is None:
            return None
        with _start:
            if getattr(model, "_chains_thread", None) is None:
                model._chains_thread = threading.Thread(target=of, args=(model,), daemon=True)
                model._chains_thread.start()
        return None
    return of(model)


class Follow:
    """What `attach` adds to a page: `controls` for its layout, and `hover`,
    through which the exact segments' columns pass."""

    def __init__(self, controls, hover):
        self.controls = controls
        self.hover = hover


def attach(model, tl, segs, x_range) -> Follow:
    """Add wakers to the segments' hover, a tap that follows the clicked
    segment's chain, a pid box that follows a task's, and the arrows."""
    from bokeh.layouts import row
    from bokeh.models import Arrow, Button, ColumnDataSource, Div, HoverTool, LabelSet, TapTool, TextInput, VeeHead

    seg_src = segs.data_source
    seg_src.data.update({k: [] for k in SEGMENT_COLUMNS})
    for t in tl.select(type=HoverTool, name="segment_hover"):
        t.tooltips = list(t.tooltips) + [TOOLTIP]
    src = ColumnDataSource({k: [] for k in ("x0", "y0", "x1", "y1", "lx", "ly", "label", "link", "waker", "wakee",
                                            "below_us")}, name="chain_arrows")
    tl.add_layout(Arrow(end=VeeHead(size=9, fill_color=ARROW_COLOR, line_color=ARROW_COLOR), x_start="x0",
                        y_start="y0", x_end="x1", y_end="y1", line_color=ARROW_COLOR, line_width=2, source=src,
                        name="chain_arrow"))
    tl.add_layout(LabelSet(x="lx", y="ly", text="label", source=src, text_font_size="8pt", text_color=ARROW_COLOR,
                           x_offset=3, name="chain_labels"))
    tl.add_tools(TapTool(renderers=[segs], name="chain_tap"))
    pid_box = TextInput(title="Follow the wake-up chain of pid", value="", name="chain_pid", width=200)
    follow = Button(label="Follow chain", name="follow_chain", width=110)
    clear = Button(label="Clear chain", name="clear_chain", width=100)
    hint = "<i>Click a task's segment (zoomed in) to follow its wake-up chain.</i>"
    ch = ready(model)
    status = Div(text=(f"<i>Wake-up chains: {html.escape(ch.error)}</i>" if ch is not None and ch.error else hint),
                 name="chain_status", width=700)
    pid_box.disabled = follow.disabled = ch is not None and ch.error is not None

    def show(ch, ids, seeds, what):
        drawn = ch.nearest(ids, seeds)
        src.data = ch.arrows(drawn)
        note = f" (the {len(drawn):,} links nearest the followed one are drawn)" if len(drawn) < len(ids) else ""
        status.text = f"Chain {what}: {ch.summary(ids)}{note}"

    def tapped(attr, old, new):
        ch = ready(model, asked=True)
        if not new or new[0] >= len(seg_src.data["link"]):
            return
        if ch is None:
            status.text = f"<i>Chain: {PENDING}; click again in a moment</i>"
            return
        # From the segment itself: its hover may predate the links.
        pid, left = int(seg_src.data["task"][new[0]]), float(seg_src.data["left"][new[0]])
        i = int(ch.link_of(np.asarray([pid], np.int64), np.round(np.asarray([left]) * MS))[0])
        task = ch.task(pid)
        if i < 0:
            status.text = f"Chain: task {html.escape(task)} was not woken in the trace"
            return
        # Who woke it, as hover says, then the chain.
        what = f"of link {i}, {html.escape(task)} by {html.escape(ch.describe([i])[0])}"
        show(ch, ch.chain([i]), [i], what)

    def by_pid():
        ch = ready(model, asked=True)
        if ch is None:
            status.text = f"<i>Chain: {PENDING}; try again in a moment</i>"
            return
        try:
            pid = int(pid_box.value)
        except ValueError:
            status.text = "<span style='color:#b00020'>Follow chain: expected a pid</span>"
            return
        seeds = ch.seeds_of_pid(pid)
        ids = ch.chain(seeds)
        if not len(ids):
            status.text = f"<span style='color:#b00020'>Follow chain: pid {pid} woke no task and was woken by none</span>"
            return
        show(ch, ids, seeds, f"of pid {pid}")
        f = ch.links.iloc[ch.nearest(ids, seeds)]
        pad = max((f["end"].max() - f["ts"].min()) * 0.02, 0.01 * MS)
        x_range.start, x_range.end = max(0.0, (f["ts"].min() - pad) / MS), (f["end"].max() + pad) / MS

    def cleared():
        src.data = {k: [] for k in src.data}
        status.text = hint

    def hover(data: dict) -> dict:
        # New segments: a selection's indices would name other ones, and a
        # click on the same index again would not be seen as a change.
        seg_src.selected.indices = []
        ch = ready(model)
        if ch is None:
            why = PENDING if getattr(model, "_chains_thread", None) is not None else ON_REQUEST
            return {**data, "link": np.full(len(data["task"]), -1), "waker": [why] * len(data["task"])}
        return ch.hover(data)

    seg_src.selected.on_change("indices", tapped)
    follow.on_click(by_pid)
    clear.on_click(cleared)
    return Follow(row(pid_box, follow, clear, status), hover)
