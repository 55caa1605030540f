# SPDX-License-Identifier: GPL-2.0-only
"""The viewer's document without a browser: the panels a trace gets, the
switch from raster to exact segments, and what hover shows."""

import html
import threading

import numpy as np
from bokeh.document import Document

import warmcore
from warmcore import render, server
from warmcore import views as V

from conftest import MS


def test_hover_details_of_a_known_event(known_trace):
    d = V.TraceData(warmcore.open(known_trace))
    idx = render.events_in_window(d, d.ids(["MIGRATE"]), 50 * MS, 51 * MS)
    src = render.event_source(d, idx, render.event_palette(["MIGRATE"]))
    assert list(src["event"]) == ["MIGRATE"]
    assert (int(src["cpu"][0]), int(src["pid"][0]), src["comm"][0]) == (1, 103, "ld")
    assert (int(src["a"][0]), int(src["b"][0]), float(src["freq_mhz"][0])) == (1, 2, 2000.0)
    assert src["x"][0] == 50.6


def test_document_panels_and_exact_mode(known_trace, monkeypatch):
    model = server.Model(str(known_trace), "process")
    assert model.error is None
    doc = Document()
    refresh, x_range, status = server.make_document(doc, model)
    names = {m.name for m in doc.models if m.name}
    # RQ_SIZE, NEST_CHANGE and MOVE_TIMER_* are in the trace: their panels are there.
    assert {"timeline", "runqueue", "load", "nest", "smove", "events"} <= names
    assert "id='mode'>exact" in status.text
    x_range.start, x_range.end = 50.0, 51.0
    refresh()
    seg = doc.get_model_by_name("segments").data_source.data
    ld = [i for i, c in enumerate(seg["comm"]) if c == "ld"]
    assert len(ld) == 1 and seg["cpu"][ld[0]] == 1 and seg["left"][ld[0]] == 50.5
    assert abs(seg["dur_us"][ld[0]] - 200.0) < 1e-6
    # Below the threshold nothing is rasterised; above it the timeline is an image.
    monkeypatch.setattr(render, "EXACT_MAX", 2)
    x_range.start, x_range.end = 0.0, 100.0
    refresh()
    assert "id='mode'>raster" in status.text
    img = doc.get_model_by_name("timeline_image").data_source.data["image"][0]
    assert img.shape == (4, server.PLOT_W) and np.count_nonzero(img) > 0
    assert len(doc.get_model_by_name("segments").data_source.data["left"]) == 0


def test_load_panel_counts_under_and_overload(known_trace):
    model = server.Model(str(known_trace), "freq")
    ts = np.array([25 * MS, 50.6 * MS, 80 * MS])
    rq = model.rq_at(ts)
    # CPU 0 has 2 tasks from 20 to 30 ms: overloaded while the other three idle.
    assert rq[:, 0].tolist() == [2, 0, 0, 0]
    busy = model.busy_at(ts)
    assert busy[:, 1].tolist() == [1, 1, 0, 0]   # cc1 on CPU 0, ld on CPU 1 at 50.6 ms
    assert busy[:, 2].tolist() == [0, 0, 0, 0]


def test_unreadable_trace_makes_an_error_page(tmp_path):
    bad = tmp_path / "bad.wct"
    bad.write_bytes(b"garbage" * 10)
    model = server.Model(str(bad), "freq")
    assert model.error and str(bad) in model.error
    doc = Document()
    server.make_document(doc, model)
    err = doc.get_model_by_name("error")
    assert html.escape(model.error) in err.text


def test_runqueue_derived_for_small_traces_only(tmp_path, monkeypatch):
    from warmcore import EVENT_IDS as ID

    path = tmp_path / "norq.wct"
    w = warmcore.Writer(str(path), 2)
    w.push(0, 1_000_000, 0, ID["CTX_SWITCH"], 10, 0)
    w.push(0, 2_000_000, 20, ID["WAKEUP"], 1, 10)
    w.push(1, 4_000_000, 0, ID["CTX_SWITCH"], 20, 0)
    w.push(1, 6_000_000, 20, ID["CTX_SWITCH"], 0, 1)
    w.finish()
    model = server.Model(str(path), "freq")
    assert model.rq_derived and model.has["RQ_SIZE"]
    assert model.rq_at(np.array([3_000_000]))[:, 0].tolist() == [1, 1]
    want = model.rq_at(np.array([0, 3_000_000, 5_000_000, 7_000_000]))
    # Above the limit the page derives them on a thread once it is drawn.
    monkeypatch.setattr(server, "RQ_DERIVE_MAX_EVENTS", 3)
    model = server.Model(str(path), "freq")
    assert model.rq_source == "background" and model.has["RQ_SIZE"]
    model.warm_up()
    assert not model.rq_ready and model.rq_at(np.array([0])) is None
    doc = Document()
    server.make_document(doc, model)
    assert "Deriving run-queue sizes" in doc.get_model_by_name("runqueue_legend").text
    ready = threading.Event()
    model.start_runqueue(ready.set)
    assert ready.wait(60) and model.rq_ready
    np.testing.assert_array_equal(model.rq_at(np.array([0, 3_000_000, 5_000_000, 7_000_000])), want)


def _signal_state(pid):
    """The process's state and signal masks (pending, blocked, ignored,
    caught), for a failure's message."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return "; ".join(" ".join(line.split()) for line in f
                             if line.startswith(("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")))
    except OSError as e:
        return f"no state: {e}"


def test_ctrl_c_stops_the_server_with_status_130(known_trace, needs_binary):
    """Stopped by Ctrl-C, the server exits 130 as the other commands do
    (docs/conventions.md, Exit statuses), not 0 as a run that ended by
    itself. view_process starts it with SIGINT at its default action,
    whatever this process inherited."""
    import signal
    import subprocess

    from warmcore.browser import view_process

    from conftest import BIN

    with view_process(BIN, known_trace) as served:
        p = served.process
        p.send_signal(signal.SIGINT)
        try:
            status = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            status = f"still running 60 s after SIGINT ({_signal_state(p.pid)})"
        assert status == 130, f"status {status}; stderr: {served.stderr()!r}"
