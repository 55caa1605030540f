# SPDX-License-Identifier: GPL-2.0-only
"""The viewer's own aggregation counts exactly what Datashader's Canvas
counts for the same glyphs (render.py says why it does not call Canvas)."""

import numpy as np
import pandas as pd
import datashader as ds

from warmcore import render


def _segments(rng, n, x0, x1, nr_cpus):
    span = x1 - x0
    begin = rng.uniform(x0 - 0.3 * span, x1 + 0.1 * span, n)
    length = rng.choice([0.0, span * 1e-4, span * 0.01, span * 0.5, span * 2], n)
    end = begin + length * rng.uniform(0, 1, n)
    # Ends on the window's bounds and on pixel edges, where rounding matters.
    begin[:20] = x0
    end[20:40] = x1
    begin[40:60] = x0 + span * np.arange(20) / 16
    end[40:60] = begin[40:60]
    cpu = rng.integers(0, nr_cpus, n).astype(np.float64)
    return begin, end, cpu


def test_segments_count_as_datashader_lines(monkeypatch):
    monkeypatch.setattr(render, "_SLICE", 1024)  # several slices per call
    rng = np.random.default_rng(7)
    nr_cpus, cats = 12, ["idle", "low", "high"]
    for x0, x1, width in [(0.0, 1e9, 320), (123.25, 4567.5, 97), (1e6, 1e6 + 3.0, 16)]:
        b, e, y = _segments(rng, 5000, x0, x1, nr_cpus)
        codes = rng.integers(0, len(cats), len(b))
        df = pd.DataFrame({"b": b, "e": e, "y": y, "cat": pd.Categorical.from_codes(codes, categories=cats)})
        cvs = ds.Canvas(plot_width=width, plot_height=nr_cpus, x_range=(x0, x1), y_range=(-0.5, nr_cpus - 0.5))
        want = cvs.line(df, x=["b", "e"], y=["y", "y"], axis=1, agg=ds.count_cat("cat")).data
        got = render.count_segments(b, e, y, codes, len(cats), x0, x1, width, -0.5, nr_cpus - 0.5, nr_cpus)
        assert got.shape == want.shape
        assert got.sum() > 0
        np.testing.assert_array_equal(got, want)


def test_points_count_as_datashader_points(monkeypatch):
    monkeypatch.setattr(render, "_SLICE", 4096)
    rng = np.random.default_rng(11)
    nrows = 9
    for x0, x1, width in [(0.0, 5e8, 400), (17.0, 18.0, 7)]:
        x = rng.uniform(x0 - 0.1 * (x1 - x0), x1 + 0.1 * (x1 - x0), 20000)
        x[:10] = x1
        x[10:20] = x0
        y = rng.integers(0, nrows, len(x))  # whole rows, as the events panel has them
        y = y if width == 400 else y.astype(np.float64)
        cvs = ds.Canvas(plot_width=width, plot_height=nrows, x_range=(x0, x1), y_range=(-0.5, nrows - 0.5))
        want = cvs.points(pd.DataFrame({"x": x, "y": y}), "x", "y", agg=ds.count()).data
        got = render.count_points(x, y, None, 1, x0, x1, width, -0.5, nrows - 0.5, nrows)[:, :, 0]
        assert got.sum() > 0
        np.testing.assert_array_equal(got, want)
        # Integer times (ns), as the events panel passes them, count the same.
        xi = np.round(x).astype(np.int64)
        want = cvs.points(pd.DataFrame({"x": xi.astype(np.float64), "y": y}), "x", "y", agg=ds.count()).data
        got = render.count_points(xi, y, None, 1, x0, x1, width, -0.5, nrows - 0.5, nrows)[:, :, 0]
        np.testing.assert_array_equal(got, want)
