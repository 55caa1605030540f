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
# Columns chains add to the timeline's exact segments.
SEGMENT_COLUMNS = ("waker", "link")
TOOLTIP = ("woken by", "@waker")


def _mhz(khz) -> str:
    return "?" if pd.isna(khz) else f"{khz / 1e3:.0f}"


class Chains:
    """The links of one trace, times relative to its first event (ns)."""

    def __init__(self, trace):
        self.error: Optional[str] = None
        try:
            batch = trace.links()
        except Exception as e:  # the analysis' one line (no wake-up events), shown on the page
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
        self.parents = [None if pd.isna(p) else int(p) for p in f["parent"]]
        procs = trace.processes()
        self.comms = {int(p): v["comm"] for p, v in procs.items() if v["comm"]}
        # Links by (wakee, ts): a segment's link is its task's last one begun before it.
        wakee = f["wakee"].to_numpy(np.int64)
        ts = f["ts"].to_numpy(np.int64)
        self._shift = np.int64(max(int(f["end"].max()) if len(f) else 0, 0) + 1)
        key = wakee * self._shift + ts
        self._order = np.argsort(key, kind="stable")
        self._key = key[self._order]

    def task(self, pid: int) -> str:
        return "<idle>" if pid == 0 else f"{self.comms.get(pid, '-')} ({pid})"

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
        f = self.links
        ok = ((j >= 0) & (f["wakee"].to_numpy(np.int64)[cand] == pids) & (pids != 0)
              & (f["end"].to_numpy(np.float64)[cand] >= begins))
        out[ok] = cand[ok]
        return out

    def describe(self, i: int) -> str:
        """Who made link i, where and how fast: what hover shows."""
        if i < 0:
            return "not woken in the trace"
        k = self.links.iloc[i]
        how = "forked" if k["fork"] else "woken"
        return (f"{self.task(int(k['waker']))} on CPU {int(k['waker_cpu'])} at {_mhz(k['waker_khz'])} MHz "
                f"({how} at {k['ts'] / MS:.3f} ms)")

    def hover(self, src: dict) -> dict:
        """The exact segments' columns with each segment's waker added."""
        task = np.asarray(src["task"], dtype=np.int64)
        link = self.link_of(task, np.round(np.asarray(src["left"], dtype=np.float64) * MS))
        src["link"] = link
        src["waker"] = ["" if p == 0 else self.describe(int(i)) for p, i in zip(task, link)]
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
                "waker": [self.task(int(p)) for p in f["waker"]], "wakee": [self.task(int(p)) for p in f["wakee"]],
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


_lock = threading.Lock()


def of(model) -> Chains:
    """The chains of a server model's trace, computed once for all its pages."""
    with _lock:
        ch = getattr(model, "_chains", None)
        if ch is None:
            ch = model._chains = Chains(model.trace)
        return ch


def ready(model) -> Optional[Chains]:
    """The chains if computed, else None: a large trace's are computed on a
    thread (a pass of the analysis), so that its first picture does not wait."""
    if getattr(model, "_chains", None) is None and model.trace.event_count() > SYNC_MAX_EVENTS:
        with _lock:
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
        ch = ready(model)
        if not new or new[0] >= len(seg_src.data["link"]):
            return
        if ch is None:
            status.text = f"<i>Chain: {PENDING}; click again in a moment</i>"
            return
        i = int(seg_src.data["link"][new[0]])
        task = ch.task(int(seg_src.data["task"][new[0]]))
        if i < 0:
            status.text = f"Chain: task {html.escape(task)} was not woken in the trace"
            return
        show(ch, ch.chain([i]), [i], f"of link {i} ({html.escape(task)})")

    def by_pid():
        ch = ready(model)
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
            return {**data, "link": np.full(len(data["task"]), -1), "waker": [PENDING] * len(data["task"])}
        return ch.hover(data)

    seg_src.selected.on_change("indices", tapped)
    follow.on_click(by_pid)
    clear.on_click(cleared)
    return Follow(row(pid_box, follow, clear, status), hover)
