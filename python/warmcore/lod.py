# SPDX-License-Identifier: GPL-2.0-only
"""A trace's level-of-detail summary (crates/trace/src/lod.rs) as numpy
arrays, and the pictures drawn from it: what `warmcore view` shows of a
window that holds more events than it reads. Per CPU and time bin, the
summary holds the time of each category of the built-in `freq` and
`runqueue` views, idle time by idle state, and event counts by kind; the
pictures here are those times (counts) per bin, shaded as the exact
pictures are."""

from __future__ import annotations

import numpy as np

from . import render

# Columns of the summary's time array (lod.rs TIME_COLUMNS).
FREQ_COLS = slice(0, 6)
IDLE_STATE_COLS = slice(6, 10)
RQ_COLS = slice(10, 15)
NT = 15
NS = 7
NONE = np.uint64(2**64 - 1)


class Lod:
    """The summary of `trace` (a warmcore.Trace): read from beside it, or
    built and saved there when missing or stale (`origin` says which)."""

    def __init__(self, trace, progress: bool = False):
        d = trace._t.lod(progress)
        self.meta = d["meta"]
        self.origin = d["origin"]
        self.columns = list(d["time_columns"])
        self.kinds = int(d["kinds"])
        n = self.nr_cpus = int(self.meta["nr_cpus"])
        self.t0 = int(self.meta["t0"])
        self.levels = []
        for lv in d["levels"]:
            bins = int(lv["bins"])
            self.levels.append((int(lv["width"]), bins,
                                lv["time"].to_numpy().reshape(n, bins, NT),
                                lv["counts"].to_numpy().reshape(n, bins, self.kinds)))
        self.width, self.bins = self.levels[0][0], self.levels[0][1]
        self.state = d["state"].to_numpy().reshape(n, self.bins, NS)
        # Every EXEC: pid, ns, the comm's two words as one.
        self.execs = d["execs"].to_numpy().reshape(-1, 3)
        # Events of each kind, and per finest bin (all CPUs), for counting a window.
        self.kind_counts = self.levels[-1][3].sum(axis=(0, 1), dtype=np.int64)
        self._bin_events = np.cumsum(np.r_[0, self.levels[0][3].sum(axis=(0, 2), dtype=np.int64)])

    def bin_range(self, width: int, bins: int, x0: float, x1: float):
        """The bins [lo, hi) of a level that [x0, x1] (ns from the first event) touches."""
        lo = int(min(max(x0 // width, 0), bins - 1))
        hi = int(min(max(x1 // width + 1, lo + 1), bins))
        return lo, hi

    def events_in(self, x0: float, x1: float) -> int:
        """Events in the finest bins that [x0, x1] touches: what reading the window costs."""
        lo, hi = self.bin_range(self.width, self.bins, x0, x1)
        return int(self._bin_events[hi] - self._bin_events[lo])

    def level_for(self, x0: float, x1: float, pixels: int) -> int:
        """The coarsest level with at least a bin per pixel over the window (the finest if none)."""
        per_px = (x1 - x0) / max(pixels, 1)
        best = 0
        for i, (w, *_rest) in enumerate(self.levels):
            if w <= per_px:
                best = i
        return best

    def window(self, x0: float, x1: float, pixels: int):
        """(level index, lo, hi, x of the first bin's start, width of the bins together) in ns."""
        li = self.level_for(x0, x1, pixels)
        w, bins = self.levels[li][:2]
        lo, hi = self.bin_range(w, bins, x0, x1)
        return li, lo, hi, lo * w, (hi - lo) * w

    def time_image(self, cols: slice, colors: list, x0, x1, pixels):
        """An RGBA image (one row per CPU, one column per bin) of the time
        of `cols` in each bin, the categories' colours mixed by their share;
        and the image's (x, dw) in ns."""
        import datashader.transfer_functions as tf

        li, lo, hi, x, dw = self.window(x0, x1, pixels)
        # As int64: Datashader's shading leaves some uint64 pixels transparent.
        t = self.levels[li][2][:, lo:hi, cols].astype(np.int64)
        agg = render._as_agg(t, [str(i) for i in range(t.shape[2])], x, x + dw, -0.5, self.nr_cpus - 0.5)
        img = tf.shade(agg, color_key=colors, how="linear", min_alpha=255)
        return np.asarray(img.data, dtype=np.uint32), x, dw

    def counts_image(self, kind_ids, x0, x1, pixels, color="#303030"):
        """A density image of events by kind (one row per id of `kind_ids`,
        all CPUs), as render.raster_counts draws events; and its (x, dw)."""
        import datashader.transfer_functions as tf

        li, lo, hi, x, dw = self.window(x0, x1, pixels)
        c = self.levels[li][3][:, lo:hi, :].sum(axis=0, dtype=np.int64)  # bins x kinds
        ids = np.asarray([i if 0 <= i < self.kinds else 0 for i in kind_ids], dtype=np.int64)
        rows = c[:, ids].T if len(ids) else np.zeros((1, hi - lo), np.int64)
        agg = render._as_agg(rows[:, :, None], None, x, x + dw, -0.5, max(len(ids), 1) - 0.5)
        img = tf.shade(agg, cmap=["#c6dbef", color], how="log", min_alpha=255)
        return np.asarray(img.data, dtype=np.uint32), x, dw

    def load(self, x0, x1, bins=400):
        """(t, busy, over) per bin of a level fine enough for `bins` points:
        CPUs busy and CPUs with 2 or more tasks, averaged over each bin."""
        li, lo, hi, x, dw = self.window(x0, x1, bins)
        w, _, t, _ = self.levels[li]
        tt = t[:, lo:hi, :]
        busy = tt[:, :, 1:6].sum(axis=(0, 2)) / w
        over = tt[:, :, 12:15].sum(axis=(0, 2)) / w
        return x + (np.arange(hi - lo) + 0.5) * w, busy, over

    def context(self, trace, x0: float, x1: float):
        """Events that give a read of the finest bins holding [x0, x1] what
        the CPUs were doing at its start, and the idle periods it leaves
        open an end: per CPU, the running task's switch at its segment's
        start with that segment's frequency, the frequency at the read's
        start, the run-queue size, the idle state entered, all before the
        read; an IDLE_EXIT just after it. Returns (start, stop: the read's
        bounds in ns from the first event, the columns of those events)."""
        k = int(min(max(x0 // self.width, 0), self.bins - 1))
        b = k * self.width
        k_end = int(x1 // self.width) + 1
        stop = k_end * self.width
        ids = {n: trace.event_id(n) for n in ("CTX_SWITCH", "FREQ_CHANGE", "RQ_SIZE", "IDLE_ENTER", "IDLE_EXIT")}
        none = int(NONE)
        rows = []  # (ts, cpu, id, a)
        for cpu in range(self.nr_cpus):
            pid, seg, seg_khz, khz, nr, idle_at, idle_state = (int(v) for v in self.state[cpu, k])
            if seg != none and ids["CTX_SWITCH"] is not None:
                rel = seg - self.t0
                if ids["FREQ_CHANGE"] is not None:
                    rows.append((rel, cpu, ids["FREQ_CHANGE"], seg_khz))
                rows.append((rel, cpu, ids["CTX_SWITCH"], pid))
                if khz != seg_khz and b - 1 > rel and ids["FREQ_CHANGE"] is not None:
                    rows.append((b - 1, cpu, ids["FREQ_CHANGE"], khz))
            elif khz and b > 0 and ids["FREQ_CHANGE"] is not None:
                rows.append((b - 1, cpu, ids["FREQ_CHANGE"], khz))
            if nr != none and b > 0 and ids["RQ_SIZE"] is not None:
                rows.append((b - 1, cpu, ids["RQ_SIZE"], nr))
            if idle_at != none and ids["IDLE_ENTER"] is not None:
                rows.append((idle_at - self.t0, cpu, ids["IDLE_ENTER"], idle_state))
            if k_end < self.bins and int(self.state[cpu, k_end, 5]) != none and ids["IDLE_EXIT"] is not None:
                rows.append((stop + 1, cpu, ids["IDLE_EXIT"], 0))
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
        cols = {"ts": arr[:, 0], "cpu": arr[:, 1].astype(np.uint32), "pid": np.zeros(len(arr), np.uint32),
                "id": arr[:, 2].astype(np.uint32), "a": arr[:, 3].astype(np.uint32), "b": np.zeros(len(arr), np.uint32)}
        return b, stop, cols


def bin_segments(begin, end, cpu, codes, ncat: int, nr_cpus: int, width: int, bins: int) -> np.ndarray:
    """The time of segments [begin, end) (ns from the first event) summed
    per (cpu, bin, category): the exact picture aggregated to the summary's
    bins (the last bin takes everything after its start)."""
    out = np.zeros((nr_cpus, bins, ncat), dtype=np.int64)
    begin, end = np.asarray(begin, dtype=np.int64), np.asarray(end, dtype=np.int64)
    edges = np.arange(bins + 1, dtype=np.int64) * width
    edges[-1] = np.iinfo(np.int64).max
    for b, e, c, k in zip(begin, end, np.asarray(cpu), np.asarray(codes)):
        lo, hi = min(b // width, bins - 1), min(max(e - 1, b) // width, bins - 1)
        for j in range(lo, hi + 1):
            out[c, j, k] += max(0, min(e, edges[j + 1]) - max(b, edges[j]))
    return out
