# SPDX-License-Identifier: GPL-2.0-only
"""The level-of-detail summary: on random traces, its bins hold the exact
pictures' segments summed into them (freq, runqueue and idle views); a
window read with the summary's context draws what the whole trace draws
there; a summary that does not
match its trace is rebuilt, never used."""

import os

import datashader.transfer_functions as tf
import numpy as np
import pytest
from bokeh.document import Document

import warmcore
from warmcore import EVENT_IDS as ID
from warmcore import lod, render, server
from warmcore import views as V


def random_trace(path, seed):
    rng = np.random.default_rng(seed)
    cpus = int(rng.integers(1, 5))
    w = warmcore.Writer(str(path), cpus, 1_000_000, 2_000_000, 3_000_000, name="random")
    for c in range(cpus):
        ts = int(rng.integers(0, 50_000))
        for _ in range(int(rng.integers(1, 1500))):
            ts += 0 if rng.random() < 0.2 else int(rng.integers(1, 20_000))
            k = int(rng.integers(0, 6))
            if k <= 1:
                w.push(c, ts, 1, ID["CTX_SWITCH"], 0 if rng.random() < 0.3 else int(rng.integers(1, 50)), 0)
                if rng.random() < 0.05:
                    w.push_comm(c, ts, int(rng.integers(1, 50)), ID["EXEC"], f"t{int(rng.integers(0, 9))}")
            elif k == 2:
                w.push(c, ts, 0, ID["FREQ_CHANGE"], int(rng.integers(0, 3_200_000)))
            elif k == 3:
                w.push(c, ts, 0, ID["TICK"], 0 if rng.random() < 0.3 else int(rng.integers(900_000, 3_200_000)))
            elif k == 4:
                w.push(c, ts, 0, ID["RQ_SIZE"], int(rng.integers(0, 7)), 0)
            else:
                w.push(c, ts, 0, ID["IDLE_ENTER" if rng.random() < 0.6 else "IDLE_EXIT"], int(rng.integers(0, 5)), 0)
    w.finish()
    return path


@pytest.mark.parametrize("seed", range(6))
def test_bins_are_the_exact_pictures_aggregated(tmp_path, seed):
    t = warmcore.open(random_trace(tmp_path / "r.wct", seed))
    L = lod.Lod(t)
    assert L.origin.startswith("built")
    data = V.TraceData(t)
    for view, cols in (("freq", lod.FREQ_COLS), ("runqueue", lod.RQ_COLS), ("idle", lod.IDLE_STATE_COLS)):
        layer = V.apply(V.load(view), data)
        f = layer.frame
        # The summary's columns are the view's categories, in its order.
        labels = list(f["cat"].cat.categories)
        assert labels == L.columns[cols][:len(labels)]
        want = lod.bin_segments(f["begin"], f["end"], f["cpu"], f["cat"].cat.codes, len(labels),
                                L.nr_cpus, L.width, L.bins)
        got = L.levels[0][2][:, :, cols][:, :, :len(labels)]
        np.testing.assert_array_equal(got, want)
        assert (L.levels[0][2][:, :, cols][:, :, len(labels):] == 0).all()
        # The picture of the whole trace from a coarser level is the exact
        # segments summed into its bins, shaded.
        x1 = float(L.levels[1][0] * L.levels[1][1] - 1)
        img, x, dw = L.time_image(cols, list(layer.colors.values())[:len(L.columns[cols])], 0.0, x1, 300)
        li = L.level_for(0.0, x1, 300)
        w, bins = L.levels[li][:2]
        exact = lod.bin_segments(f["begin"], f["end"], f["cpu"], f["cat"].cat.codes, len(L.columns[cols]),
                                 L.nr_cpus, w, bins)
        agg = render._as_agg(exact, [str(i) for i in range(exact.shape[2])], 0, w * bins, -0.5, L.nr_cpus - 0.5)
        want = tf.shade(agg, color_key=list(layer.colors.values())[:len(L.columns[cols])], how="linear",
                        min_alpha=255)
        assert li > 0 and (x, dw) == (0, w * bins)
        np.testing.assert_array_equal(img, np.asarray(want.data, dtype=np.uint32))
    # Counts by kind, per CPU, and coarser levels as sums of the finest.
    c = data.cols
    for cpu in range(L.nr_cpus):
        want = np.bincount(c["id"][c["cpu"] == cpu], minlength=L.kinds)
        np.testing.assert_array_equal(L.levels[0][3][cpu].sum(axis=0), want)
    for w, bins, time, counts in L.levels[1:]:
        assert time.sum() == L.levels[0][2].sum() and counts.sum() == data.n
    assert warmcore.open(t.path)._t.lod()["origin"] == "read"


@pytest.mark.parametrize("seed", range(4))
def test_a_window_read_with_the_prefix_draws_what_the_whole_trace_draws(tmp_path, seed):
    path = random_trace(tmp_path / "r.wct", 100 + seed)
    whole = server.Model(str(path), "freq")
    big = server.Model(str(path), "freq", lod_events=0, window_events=10**9)
    assert big.lod is not None and big.data is None
    big.start_process_table()  # the page starts it once it is out
    big._procs_thread.join()
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x0 = float(rng.integers(0, max(whole.end, 1)))
        x1 = x0 + float(rng.integers(1, max(whole.end // 4, 2)))
        win = big.source(x0, x1)
        assert win is not None and win is not big
        for view in ("freq", "runqueue", "idle"):
            a, b = whole.layer(view).frame, win.layer(view).frame
            clip = lambda f: sorted(zip(f["cpu"], np.maximum(f["begin"], x0), np.minimum(f["end"], x1),
                                        f["cat"].astype(str)))
            a = a[(a["end"] > x0) & (a["begin"] < x1) & (a["end"] > a["begin"])]
            b = b[(b["end"] > x0) & (b["begin"] < x1) & (b["end"] > b["begin"])]
            assert clip(a) == clip(b), (view, x0, x1)
        # Hover names: those of the whole trace, EXECs before the window included.
        f = win.layer("freq").frame
        f = f[(f["end"] > x0) & (f["begin"] < x1)]
        task, ts = f["task"].to_numpy(), f["begin"].to_numpy().astype(np.int64)
        assert (np.asarray(win.data.comm_of(task, ts)) == np.asarray(whole.data.comm_of(task, ts))).all()


def test_the_page_draws_the_summary_then_exact_segments(tmp_path):
    path = random_trace(tmp_path / "r.wct", 7)
    model = server.Model(str(path), "freq", lod_events=0, window_events=200)
    doc = Document()
    refresh, x_range, status = server.make_document(doc, model)
    assert "id='mode'>summary<" in status.text
    img = doc.get_model_by_name("timeline_image").data_source.data["image"][0]
    assert img.shape[0] == model.nr_cpus and (img != 0).any()
    # The idle states, from the summary too.
    idle = doc.get_model_by_name("idle").renderers[0].data_source.data["image"][0]
    assert idle.shape == img.shape and (idle != 0).any()
    # A narrow window: read from the events, exact segments with hover.
    x_range.start, x_range.end = model.end / 2 / 1e6, (model.end / 2 + 30_000) / 1e6
    refresh()
    assert "id='mode'>exact<" in status.text, status.text
    assert len(doc.get_model_by_name("segments").data_source.data["left"]) > 0


def test_a_stale_truncated_or_foreign_summary_is_rebuilt(tmp_path):
    a = random_trace(tmp_path / "a.wct", 1)
    b = random_trace(tmp_path / "b.wct", 2)
    first = lod.Lod(warmcore.open(a))
    side = str(a) + ".lod"
    assert first.origin == "built (none yet)" and os.path.exists(side)
    good = open(side, "rb").read()
    open(side, "wb").write(good[:-100])
    again = lod.Lod(warmcore.open(a))
    assert "truncated" in again.origin
    np.testing.assert_array_equal(again.levels[0][2], first.levels[0][2])
    # Another trace's summary put beside this one.
    lod.Lod(warmcore.open(b))
    os.replace(str(b) + ".lod", side)
    assert "stale" in lod.Lod(warmcore.open(a)).origin
    assert lod.Lod(warmcore.open(a)).origin == "read"


def test_the_summary_keeps_every_exec(tmp_path):
    """The EXECs that name a window's tasks come from the summary: the same as
    a pass over the file finds."""
    path = random_trace(tmp_path / "r.wct", 7)
    rows = []
    for use_lod in (False, True):
        t = warmcore.open(path)
        V.TraceData.whole_trace_execs(t, lod.Lod(t) if use_lod else None)
        pid, ts, codes, names = t._execs
        rows.append(sorted(zip(pid.tolist(), ts.tolist(), (names[c] for c in codes))))
    assert len(rows[0]) > 10 and rows[0] == rows[1]
