# SPDX-License-Identifier: GPL-2.0-only
"""Pictures of a view: a Datashader raster when zoomed out (every segment
and event drawn into the pixels it touches, nothing sampled away), exact
segments with hover details when zoomed in (shared/seeds/004, section 3.2:
the two display modes). Shared by `warmcore plot` and `warmcore view`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .views import Layer, TraceData

# Below this many segments (or marks) in the window, draw them exactly.
EXACT_MAX = 20_000
MS = 1e6


def in_window(layer: Layer, x0: float, x1: float) -> pd.DataFrame:
    f = layer.frame
    b, e = f["begin"].to_numpy(), f["end"].to_numpy()
    return f[(e >= x0) & (b <= x1)]


def count_in_window(layer: Layer, x0: float, x1: float) -> int:
    f = layer.frame
    return int(np.count_nonzero((f["end"].to_numpy() >= x0) & (f["begin"].to_numpy() <= x1)))


def raster(layer: Layer, x0: float, x1: float, width: int, nr_cpus: int, rows: int = 0):
    """An RGBA image (uint32, one row per CPU, bottom row CPU 0) of the
    layer's segments or marks in [x0, x1] ns, `width` pixels wide."""
    import datashader as ds
    import datashader.transfer_functions as tf

    key = (float(x0), float(x1), int(width), nr_cpus, rows)
    cache = layer.__dict__.setdefault("_rasters", {})
    if key in cache:
        return cache[key]
    img = _raster(layer, x0, x1, width, nr_cpus, rows)
    if len(cache) >= 8:
        cache.pop(next(iter(cache)))
    cache[key] = img
    return img


def _raster(layer, x0, x1, width, nr_cpus, rows):
    import datashader as ds
    import datashader.transfer_functions as tf

    height = max(1, rows or nr_cpus)
    cvs = ds.Canvas(plot_width=max(1, int(width)), plot_height=height,
                    x_range=(float(x0), float(x1)), y_range=(-0.5, nr_cpus - 0.5))
    f = layer.frame
    if len(f) == 0 or not layer.colors:
        return np.zeros((height, max(1, int(width))), dtype=np.uint32)
    # The layer's own columns, not a copy: begin, end, y (the CPU as float), cat.
    m = (f["end"].to_numpy() >= x0) & (f["begin"].to_numpy() <= x1)
    if np.count_nonzero(m) < 0.8 * len(f):
        # Only what reaches into the window: a zoomed-in raster costs what it shows.
        df = f[["begin", "end", "y", "cat"]][m]
    else:
        df = f
    if layer.view.shape == "segments":
        agg = cvs.line(df, x=["begin", "end"], y=["y", "y"], axis=1, agg=ds.count_cat("cat"))
    else:
        agg = cvs.points(df, "begin", "y", agg=ds.count_cat("cat"))
    img = tf.shade(agg, color_key=layer.colors, how="linear", min_alpha=255)
    return np.asarray(img.data, dtype=np.uint32)


def raster_counts(xs: np.ndarray, ys: np.ndarray, x0, x1, width, nrows, color="#303030"):
    """A density image of instants (events by type): every event counted."""
    import datashader as ds
    import datashader.transfer_functions as tf

    cvs = ds.Canvas(plot_width=max(1, int(width)), plot_height=max(1, nrows),
                    x_range=(float(x0), float(x1)), y_range=(-0.5, nrows - 0.5))
    if len(xs) == 0:
        return np.zeros((max(1, nrows), max(1, int(width))), dtype=np.uint32)
    df = xs if isinstance(xs, pd.DataFrame) else pd.DataFrame({"x": xs.astype(np.float64), "y": ys.astype(np.float64)})
    x = df["x"].to_numpy()
    m = (x >= x0) & (x <= x1)
    if np.count_nonzero(m) < 0.8 * len(df):
        df = df[m]
    agg = cvs.points(df, "x", "y", agg=ds.count())
    return np.asarray(tf.shade(agg, cmap=["#c6dbef", color], how="log", min_alpha=255).data, dtype=np.uint32)


def hover_source(data: TraceData, f: pd.DataFrame, layer: Layer) -> dict:
    """Columns for exact segments: geometry in ms, and what hover shows."""
    from .views import complete

    f = complete(layer, data, f)
    out = {
        "left": f["begin"].to_numpy() / MS, "right": f["end"].to_numpy() / MS,
        "bottom": f["cpu"].to_numpy() - 0.4, "top": f["cpu"].to_numpy() + 0.4,
        "cpu": f["cpu"].to_numpy(),
        "color": [layer.colors.get(c, "#7f7f7f") for c in f["cat"].astype(str)],
        "label": f["cat"].astype(str).to_numpy(),
        "event": f["event"].astype(str).to_numpy(),
        "pid": f["pid"].to_numpy(), "a": f["a"].to_numpy(), "b": f["b"].to_numpy(),
        "dur_us": (f["end"].to_numpy() - f["begin"].to_numpy()) / 1e3,
    }
    task = f["task"].to_numpy() if "task" in f else f["pid"].to_numpy()
    out["task"] = task
    out["comm"] = (f["comm"].astype(str).to_numpy() if "comm" in f
                   else np.asarray(data.comm_of(task, f["begin"].to_numpy().astype(np.int64))).astype(str))
    freq = f["freq"].to_numpy() if "freq" in f else data.frequency_at(f["cpu"].to_numpy(), f["begin"].to_numpy().astype(np.int64))
    out["freq_mhz"] = np.asarray(freq, dtype=np.float64) / 1e3
    return out


SEGMENT_TOOLTIPS = [("CPU", "@cpu"), ("task", "@task (@comm)"), ("category", "@label"),
                    ("from", "@left{0.000} ms"), ("for", "@dur_us{0.0} us"), ("freq", "@freq_mhz{0} MHz"),
                    ("event", "@event pid=@pid a=@a b=@b")]
EVENT_TOOLTIPS = [("event", "@event"), ("CPU", "@cpu"), ("at", "@x{0.000000} ms"), ("pid", "@pid (@comm)"),
                  ("arguments", "a=@a b=@b"), ("freq", "@freq_mhz{0} MHz")]


def events_in_window(data: TraceData, ids, x0, x1, limit=None):
    """Row indices of events with chosen ids and x0 <= ts <= x1 (ns)."""
    c = data.cols
    m = (c["ts"] >= x0) & (c["ts"] <= x1)
    if ids is not None:
        m &= np.isin(c["id"], np.asarray(ids, dtype=np.uint32))
    idx = np.flatnonzero(m)
    if limit is not None and len(idx) > limit:
        return None
    return idx


def event_source(data: TraceData, idx: np.ndarray, palette: dict) -> dict:
    c = data.cols
    names = data.event_labels(c["id"][idx]).astype(str)
    cpu = c["cpu"][idx]
    ts = c["ts"][idx]
    return {
        "x": ts / MS, "y0": cpu - 0.45, "y1": cpu + 0.45, "cpu": cpu, "event": np.asarray(names),
        "pid": c["pid"][idx], "comm": np.asarray(data.comm_of(c["pid"][idx], ts)).astype(str),
        "a": c["a"][idx], "b": c["b"][idx],
        "freq_mhz": data.frequency_at(cpu, ts) / 1e3,
        "color": [palette.get(n, "#000000") for n in names],
    }


def event_palette(names) -> dict:
    from .views import PALETTE

    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(sorted(names))}


def warm_up(layers=(), nr_cpus=1):
    """Compile Datashader's kernels now, on a window too small to cost
    anything, rather than on the first picture a person waits for. The
    kernels depend on the data's types and categories: warm them on the
    layers that will be drawn."""
    for layer in layers:
        f = layer.frame
        if len(f):
            b = float(f["begin"].iloc[0])
            _raster(layer, b, b + 1.0, 4, nr_cpus, 0)
    raster_counts(np.array([1, 2], np.int64), np.array([0, 1], np.int64), 0, 10, 8, 2)


def warm_up_views(specs, nr_cpus=2):
    """Compile the kernels of views whose categories are known before the
    data is (those without `color_by`), on a made-up layer: this can run on
    a thread while the trace is read."""
    from .views import Layer

    for v in specs:
        if any(c.color_by for c in v.categories):
            continue
        labels = [c.label for c in v.categories]
        codes = [i % len(labels) for i in range(2)]
        f = pd.DataFrame({"cpu": np.array([0, 1], np.int32), "begin": [0.0, 5.0], "end": [4.0, 9.0],
                          "y": [0.0, 1.0], "cat": pd.Categorical.from_codes(codes, categories=labels)})
        _raster(Layer(v, f, {lab: "#000000" for lab in labels}), 0, 10, 4, 2, 0)
    raster_counts(np.array([1, 2], np.int64), np.array([0, 1], np.int64), 0, 10, 8, 2)
