# SPDX-License-Identifier: GPL-2.0-only
"""Pictures of a view: a raster when zoomed out (every segment and event
counted into the pixels it touches, nothing sampled away, shaded by
Datashader), exact segments with hover details when zoomed in
(Fork/wait, section 3.2: the two display modes). Shared by
`warmcore plot` and `warmcore view`."""

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
    key = (float(x0), float(x1), int(width), nr_cpus, rows)
    cache = layer.__dict__.setdefault("_rasters", {})
    if key in cache:
        return cache[key]
    img = _raster(layer, x0, x1, width, nr_cpus, rows)
    if len(cache) >= 8:
        cache.pop(next(iter(cache)))
    cache[key] = img
    return img


# Aggregation. Datashader's own aggregation compiles its kernels with Numba
# on first use in every process (a cost Numba cannot cache for Datashader's
# generated kernels): about 2.5 s of CPU for the line kernel and 0.5 s per
# point kernel here, more than the viewer's whole budget for a first picture.
# The viewer's glyphs are simple (horizontal segments on a CPU's row, and
# instants), so they are counted here with numpy, pixel for pixel as
# Datashader's Canvas.line(axis=1) and Canvas.points count them (same scale
# and translation, same clipping, both end pixels of a segment counted; the
# tests compare the two), and Datashader shades the counts.

# Values counted per pass: a slice's temporaries stay in the CPU's caches,
# where a whole trace's events at once would cost more in fresh arrays than
# in arithmetic.
_SLICE = 1 << 18


def _scale(lo: float, hi: float, n: int):
    """Datashader's linear map from data to pixels: pixel = int(v * s + t)."""
    s = n / (hi - lo)
    return s, -lo * s


def _pixels(v: np.ndarray, lo: float, hi: float, n: int, inclusive_end: bool) -> np.ndarray:
    """Pixel index of each value of `v` in [lo, hi] (callers drop those
    outside): int(v * s + t), a value on the upper bound in the last pixel."""
    s, t = _scale(lo, hi, n)
    p = np.multiply(v, s, dtype=np.float64)
    p += t
    p = p.astype(np.int64)
    last = round(hi * s + t) - 1
    if inclusive_end:  # points: anything at or past the bound (Datashader's points)
        np.minimum(p, last, out=p)
    else:              # line ends: exactly the bound (Datashader's snap)
        p[p == last + 1] = last
    return p


def _inside(v: np.ndarray, lo: float, hi: float):
    """A mask of `v` in [lo, hi], or None when every value is."""
    if len(v) == 0 or (v.min() >= lo and v.max() <= hi):
        return None
    return (v >= lo) & (v <= hi)


def count_segments(begin, end, y, codes, ncat: int, x0: float, x1: float, width: int,
                   y0: float, y1: float, height: int) -> np.ndarray:
    """Counts (height x width x ncat, uint32) of the horizontal segments
    [begin, end] on rows y, category `codes`: each pixel a segment touches
    counts it once, as Datashader's Canvas.line(axis=1) with count_cat."""
    begin, end, y, codes = np.asarray(begin), np.asarray(end), np.asarray(y), np.asarray(codes)
    # A difference array along x: +1 where a segment starts, -1 after it ends.
    diff = np.zeros(ncat * height * (width + 1), dtype=np.int64)
    for i in range(0, len(begin), _SLICE):
        sl = slice(i, i + _SLICE)
        p0, p1 = _segment_pixels(begin[sl], end[sl], y[sl], codes[sl], x0, x1, width, y0, y1, height)
        diff += np.bincount(p0, minlength=len(diff))
        diff -= np.bincount(p1, minlength=len(diff))
    counts = np.cumsum(diff.reshape(ncat, height, width + 1)[:, :, :width], axis=2)
    return np.ascontiguousarray(counts.transpose(1, 2, 0)).astype(np.uint32)


def _segment_pixels(lo, hi, y, codes, x0, x1, width, y0, y1, height):
    """Indices into the difference array of where each segment begins and
    where it has ended."""
    lo = lo.astype(np.float64, copy=False)
    hi = hi.astype(np.float64, copy=False)
    if (lo > hi).any():
        lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    keep = (hi >= x0) & (lo <= x1)
    ym = _inside(y, y0, y1)
    if ym is not None:
        keep &= ym
    if not keep.all():
        lo, hi, y, codes = lo[keep], hi[keep], y[keep], codes[keep]
    # Liang-Barsky clipping of a horizontal segment, in the same arithmetic:
    # both ends from the unclipped start.
    cut0, cut1 = lo < x0, hi > x1
    if cut0.any() or cut1.any():
        d = hi - lo
        new_lo, new_hi = lo.copy(), hi.copy()
        new_lo[cut0] = lo[cut0] + ((x0 - lo[cut0]) / d[cut0]) * d[cut0]
        new_hi[cut1] = lo[cut1] + ((x1 - lo[cut1]) / d[cut1]) * d[cut1]
        lo, hi = new_lo, new_hi
    base = codes.astype(np.int64)
    base *= height
    base += _pixels(y, y0, y1, height, False)
    base *= width + 1
    p0 = _pixels(lo, x0, x1, width, False)
    p0 += base
    p1 = _pixels(hi, x0, x1, width, False)
    p1 += base
    p1 += 1
    return p0, p1


def count_points(x, y, codes, ncat: int, x0: float, x1: float, width: int,
                 y0: float, y1: float, height: int) -> np.ndarray:
    """Counts (height x width x ncat, uint32) of instants, as Datashader's
    Canvas.points with count_cat (codes None: one category)."""
    x, y = np.asarray(x), np.asarray(y)
    codes = None if codes is None else np.asarray(codes)
    counts = np.zeros(height * width * ncat, dtype=np.int64)
    for i in range(0, len(x), _SLICE):
        xs, ys = x[i:i + _SLICE], y[i:i + _SLICE]
        cs = None if codes is None else codes[i:i + _SLICE]
        keep = _inside(xs, x0, x1)
        ym = _inside(ys, y0, y1)
        if ym is not None:
            keep = ym if keep is None else keep & ym
        if keep is not None:
            xs, ys = xs[keep], ys[keep]
            cs = None if cs is None else cs[keep]
        if ys.dtype.kind in "iu" and y0 == -0.5 and y1 - y0 == height:
            flat = ys.astype(np.int64)  # whole rows, one pixel each: the pixel is the row
        else:
            flat = _pixels(ys, y0, y1, height, True)
        flat *= width
        flat += _pixels(xs, x0, x1, width, True)
        if ncat > 1:
            flat *= ncat
            flat += cs
        counts += np.bincount(flat, minlength=len(counts))
    return counts.reshape(height, width, ncat).astype(np.uint32)


def _as_agg(counts: np.ndarray, categories, x0, x1, y0, y1):
    """Counts as the xarray Datashader's shading takes (dims y, x[, cat])."""
    import xarray as xr

    h, w = counts.shape[:2]
    xs = x0 + (np.arange(w) + 0.5) * (x1 - x0) / w
    ys = y0 + (np.arange(h) + 0.5) * (y1 - y0) / h
    if categories is None:
        return xr.DataArray(counts[:, :, 0], coords={"y": ys, "x": xs}, dims=("y", "x"))
    return xr.DataArray(counts, coords={"y": ys, "x": xs, "cat": list(categories)}, dims=("y", "x", "cat"))


def _raster(layer, x0, x1, width, nr_cpus, rows):
    import datashader.transfer_functions as tf

    height = max(1, rows or nr_cpus)
    width = max(1, int(width))
    f = layer.frame
    if len(f) == 0 or not layer.colors:
        return np.zeros((height, width), dtype=np.uint32)
    cat = f["cat"].array
    y0, y1 = -0.5, nr_cpus - 0.5
    args = (len(cat.categories), float(x0), float(x1), width, y0, y1, height)
    if layer.view.shape == "segments":
        counts = count_segments(f["begin"].to_numpy(), f["end"].to_numpy(), f["cpu"].to_numpy(), cat.codes, *args)
    else:
        counts = count_points(f["begin"].to_numpy(), f["cpu"].to_numpy(), cat.codes, *args)
    agg = _as_agg(counts, cat.categories, x0, x1, y0, y1)
    img = tf.shade(agg, color_key=layer.colors, how="linear", min_alpha=255)
    return np.asarray(img.data, dtype=np.uint32)


def raster_counts(xs: np.ndarray, ys: np.ndarray, x0, x1, width, nrows, color="#303030"):
    """A density image of instants (rows `ys`, e.g. events by type): every event counted."""
    import datashader.transfer_functions as tf

    width, nrows = max(1, int(width)), max(1, nrows)
    if len(xs) == 0:
        return np.zeros((nrows, width), dtype=np.uint32)
    y0, y1 = -0.5, nrows - 0.5
    counts = count_points(xs, ys, None, 1, float(x0), float(x1), width, y0, y1, nrows)
    agg = _as_agg(counts, None, x0, x1, y0, y1)
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
