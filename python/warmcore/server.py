# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore view`: a Bokeh server on 127.0.0.1 showing one trace.

Panels, sharing one time axis: the per-CPU timeline (the running task
coloured by frequency band or by process, idle periods, and events as
vertical marks filtered by type, ticks among them), the run-queue size per
CPU, under- and overload over time, idle states, nest membership and S_move
timers when the trace has them, and the density of events by type. Zoomed out, each
panel is a raster (render.py); below `render.EXACT_MAX` segments in the window
the timeline draws exact segments and marks with hover details.

A trace of more than `LOD_EVENTS` events is not read whole: the page draws
from its level-of-detail summary (lod.py), built beside the trace on first
open, and reads the events of a window that holds at most `WINDOW_EVENTS`.
"""

from __future__ import annotations

import html
import os
import socket
import signal
import sys
import threading
import time
import types
from typing import Optional

import numpy as np

from . import chains, lod, render, status, views
from .trace import Trace

# Largest trace whose run-queue sizes the page derives (see Model).
RQ_DERIVE_MAX_EVENTS = 2_000_000
WIDTH = 1300          # the figures' width in CSS pixels
PLOT_W = WIDTH - 70   # about the width of the plotting frame: the rasters' width
EVENT_MARKS_MAX = 5_000
LOAD_BINS = 400
# Views that colour the per-CPU timeline, offered in the page's selector.
TIMELINE_VIEWS = ["freq", "process"]
# Events whose presence decides the page's panels.
PANEL_EVENTS = ("RQ_SIZE", "NEST_CHANGE", "MOVE_TIMER_ARMED", "CTX_SWITCH", "IDLE_ENTER")
# Per-CPU panels below the timeline: (view, the event it needs, title).
CPU_PANELS = (("idle", "IDLE_ENTER", "Idle state per CPU (beside the timeline's running task and frequency)"),
              ("nest", "NEST_CHANGE", "Nest membership"), ("smove", "MOVE_TIMER_ARMED", "S_move timers"))
# A trace of more events than this is drawn from its level-of-detail summary
# (reading it whole would take 160 bytes an event), and a window of at most
# WINDOW_EVENTS from its events. Environment variables override both (tests
# force the summary on small traces).
LOD_EVENTS = int(os.environ.get("WARMCORE_VIEW_LOD_EVENTS", 20_000_000))
WINDOW_EVENTS = int(os.environ.get("WARMCORE_VIEW_WINDOW_EVENTS", 2_000_000))


class Model:
    """What every page of the server shares: the trace, loaded once, and the
    views applied to it, computed once each."""

    def __init__(self, path: str, first_view: str, lod_events: Optional[int] = None,
                 window_events: Optional[int] = None):
        self.path = path
        self.error: Optional[str] = None
        self.lock = threading.Lock()
        self.layers: dict = {}
        self.view_specs: dict = {}
        self.lod: Optional[lod.Lod] = None
        self.window_events = WINDOW_EVENTS if window_events is None else window_events
        self._window: Optional[Model] = None
        # The page's drawing modules load while the trace is read (the read
        # releases the GIL): most of a second of the first picture.
        self._imports = threading.Thread(target=_import_drawing, daemon=True)
        self._imports.start()
        try:
            self.trace = Trace(path)
            self.n_events = self.trace.event_count()
            if self.n_events > (LOD_EVENTS if lod_events is None else lod_events):
                t = time.perf_counter()
                print(f"warmcore view: {self.n_events:,} events: reading the level-of-detail summary "
                      f"(built on first open)...", file=sys.stderr, flush=True)
                self.lod = lod.Lod(self.trace, progress=True)
                print(f"warmcore view: summary {self.lod.origin} in {time.perf_counter() - t:.1f} s",
                      file=sys.stderr, flush=True)
                self.data = None
            else:
                self.data = views.TraceData(self.trace)
        except Exception as e:  # the reader's one-line message, shown on the page
            self.error = str(e)
            return
        span = self.trace.span() or (0, 0)
        self.end = span[1] - span[0]
        self.nr_cpus = self.trace.nr_cpus
        for name in TIMELINE_VIEWS + [first_view]:
            if name not in self.view_specs:
                self.view_specs[name] = views.load(name)
        self.first_view = self.view_specs[first_view].name
        self.view_specs = {v.name: v for v in self.view_specs.values()}
        names = PANEL_EVENTS
        if self.lod is not None:
            # From the summary's counts; run-queue sizes only from RQ_SIZE events
            # (deriving them takes a pass over the whole trace).
            self.has = {n: self._lod_count(n) > 0 for n in names}
            self.rq_source = "events" if self.has["RQ_SIZE"] else None
            self._rq_thread = None
            self.rq_error = None
            self._rq_listeners = []
            names = self.trace.event_names()
            self.event_counts = {names.get(i, f"EVENT_{i}"): int(c) for i, c in enumerate(self.lod.kind_counts)
                                 if c and i > 0}
            self.event_types = sorted(self.event_counts)
            self.palette = render.event_palette(self.event_types)
            return
        self._init_data()

    def _lod_count(self, name: str) -> int:
        i = self.trace.event_id(name)
        return int(self.lod.kind_counts[i]) if i is not None and 0 < i < len(self.lod.kind_counts) else 0

    def _init_data(self):
        """What the model knows once its events are loaded (self.data)."""
        self.has = {n: self.data.has(n) for n in PANEL_EVENTS}
        # Without RQ_SIZE events, run-queue sizes are derived from the switches,
        # wake-ups and migrations: a pass of the trace analysis and a segment
        # per change. Small traces get them with the first picture; larger ones
        # on a thread once the first page is drawn (start_runqueue), and the
        # run-queue panel and the load lines fill in when they are ready.
        self.rq_source = ("events" if self.has["RQ_SIZE"] else None if not self.data.runqueue_derived
                          else "derived" if self.data.n <= RQ_DERIVE_MAX_EVENTS else "background")
        self.has["RQ_SIZE"] = self.rq_source is not None
        self._rq_thread: Optional[threading.Thread] = None
        self.rq_error: Optional[str] = None
        self._rq_listeners: list = []
        self.event_counts = {self.data.names.get(int(i), f"EVENT_{i}"): int(c)
                             for i, c in enumerate(self.data.id_counts) if c}
        self.event_types = sorted(self.event_counts)
        self.palette = render.event_palette(self.event_types)

    def source(self, x0: float, x1: float) -> Optional["Model"]:
        """What draws the window [x0, x1] (ns): this model when it holds the
        trace's events, a model of the window's events when the trace is drawn
        from its summary and the window holds few enough, None when the
        summary draws it."""
        if self.lod is None:
            return self
        with self.lock:
            w = self._window
            if w is not None and w.x_from <= x0 and x1 <= w.x_to:
                return w
        if self.lod.events_in(x0, x1) > self.window_events:
            return None
        # Read whole bins, so that panning within them reuses the read.
        start, stop, extra = self.lod.context(self.trace, x0, x1)
        w = Model.__new__(Model)
        w.path, w.error, w.lock, w.layers, w.lod = self.path, None, threading.Lock(), {}, None
        w.trace, w.view_specs, w.first_view = self.trace, self.view_specs, self.first_view
        w.n_events, w.end, w.nr_cpus, w.window_events, w._window = self.n_events, self.end, self.nr_cpus, 0, None
        w.data = views.TraceData(self.trace, start=start, end=stop + 1, extra=extra)
        w._init_data()
        # The page's panels and event types are the whole trace's.
        w.has, w.rq_source = self.has, self.rq_source
        w.event_types, w.palette = self.event_types, self.palette
        w.x_from, w.x_to = start, stop
        with self.lock:
            self._window = w
        return w

    def start_process_table(self):
        """Decode the whole trace's process table and read its EXECs on a
        thread (at most once), for the hover names of exact windows: seconds
        for millions of processes, which the first zoom in would wait for
        otherwise; the EXECs, the names a task took before the window, come
        from the summary."""
        with self.lock:
            if self.lod is None or getattr(self, "_procs_thread", None) is not None:
                return
            table = types.SimpleNamespace(trace=self.trace, _procs=None)

            def work():
                views.TraceData.processes(table)
                views.TraceData.whole_trace_execs(self.trace, self.lod)

            self._procs_thread = threading.Thread(target=work, daemon=True)
            self._procs_thread.start()

    def colors(self, name: str) -> dict:
        """A view's legend: its layer's colours, or its categories' without one."""
        if self.lod is None or name in self.layers:
            return self.layer(name).colors
        return (self.view_specs.get(name) or views.load(name)).colors()

    def layer(self, name: str) -> views.Layer:
        with self.lock:
            if name not in self.layers:
                spec = self.view_specs.get(name) or views.load(name)
                self.layers[name] = views.apply(spec, self.data)
            return self.layers[name]

    def events_xy(self):
        """Every event as (x = ts, y = its type's row), for the density panel."""
        with self.lock:
            if getattr(self, "_events_xy", None) is None:
                c = self.data.cols
                rowmap = np.full(int(c["id"].max()) + 1 if self.data.n else 1, -1, dtype=np.int32)  # -1: not drawn
                for i, tn in enumerate(self.event_types):
                    eid = self.data.trace.event_id(tn)
                    if eid is not None and eid < len(rowmap):
                        rowmap[eid] = i
                self._events_xy = (c["ts"], rowmap[c["id"]])
            return self._events_xy

    @property
    def rq_derived(self) -> bool:
        """Run-queue sizes come from the switches, not from RQ_SIZE events."""
        return self.rq_source in ("derived", "background")

    @property
    def rq_ready(self) -> bool:
        with self.lock:
            return self.has["RQ_SIZE"] and (self.rq_source != "background" or "runqueue" in self.layers)

    def start_runqueue(self, on_ready=None):
        """Derive run-queue sizes on a thread if this trace needs it (at most
        once); `on_ready()` is called when they are ready, on that thread (or
        at once if they already are)."""
        with self.lock:
            if self.rq_source != "background":
                return
            done = "runqueue" in self.layers or self.rq_error is not None
            if not done:
                if on_ready is not None:
                    self._rq_listeners.append(on_ready)
                if self._rq_thread is None:
                    self._rq_thread = threading.Thread(target=self._derive_runqueue, daemon=True)
                    self._rq_thread.start()
        if done and on_ready is not None:
            on_ready()

    def _derive_runqueue(self):
        try:
            spec = self.view_specs.get("runqueue") or views.load("runqueue")
            layer = views.apply(spec, self.data)  # without the lock: pages stay live meanwhile
        except Exception as e:  # the reader's or the view's one line, shown in the panel
            layer, self.rq_error = None, str(e)
        with self.lock:
            if layer is not None:
                self.layers["runqueue"] = layer
            listeners, self._rq_listeners = self._rq_listeners, []
        for f in listeners:
            f()

    def warm_up(self):
        """Compute the layers the first page draws."""
        self._imports.join()
        if self.lod is not None:
            return
        names = [self.first_view] + (["freq"] if self.has["CTX_SWITCH"] else [])
        for vname, cond in (("runqueue", "RQ_SIZE"),) + tuple(p[:2] for p in CPU_PANELS):
            if self.has[cond] and not (vname == "runqueue" and self.rq_source == "background"):
                names.append(vname)
        for n in dict.fromkeys(names):
            self.layer(n)
        self.events_xy()

    def rq_at(self, ts: np.ndarray) -> Optional[np.ndarray]:
        """nr_running of every CPU at the times `ts` (cpus x len(ts)), from
        RQ_SIZE events or those derived from the switches; None without either
        or while they are being derived."""
        if not self.rq_ready:
            return None
        f = self.layer("runqueue").frame
        return self._step_at(f, f["nr_running"].to_numpy(), ts)

    def busy_at(self, ts: np.ndarray) -> np.ndarray:
        """1 where a task runs on each CPU at the times `ts`, from the switches."""
        f = self.layer("freq").frame
        return self._step_at(f, f["task"].to_numpy() != 0, ts)

    def _step_at(self, f, values: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """Each CPU's value at the times `ts` (cpus x len(ts)): that of the
        last of its segments (rows of `f`, in CPU order) begun at or before
        each time, 0 before the first."""
        cpu, beg = f["cpu"].to_numpy(), f["begin"].to_numpy()
        bounds = np.searchsorted(cpu, np.arange(self.data.nr_cpus + 1))
        out = np.zeros((self.data.nr_cpus, len(ts)), dtype=np.int64)
        for c in range(self.data.nr_cpus):
            s, e = bounds[c], bounds[c + 1]
            if s == e:
                continue
            j = np.searchsorted(beg[s:e], ts, side="right") - 1
            ok = j >= 0
            out[c, ok] = values[s:e][j[ok]]
        return out


def _import_drawing():
    import bokeh.application.handlers.function  # noqa: F401
    import bokeh.layouts  # noqa: F401
    import bokeh.models  # noqa: F401
    import bokeh.plotting  # noqa: F401
    import bokeh.server.server  # noqa: F401
    import datashader.transfer_functions  # noqa: F401
    import xarray  # noqa: F401


def _fig(title, height, x_range, nrows, name, ylabel="CPU"):
    from bokeh.models import Range1d
    from bokeh.plotting import figure

    p = figure(title=title, width=WIDTH, height=height, x_range=x_range,
               y_range=Range1d(-0.5, nrows - 0.5), tools="xpan,xwheel_zoom,xbox_zoom,reset",
               active_scroll="xwheel_zoom", name=name, y_axis_label=ylabel, min_border_left=60,
               min_border_right=10, output_backend="canvas")
    from bokeh.models import BasicTicker

    p.yaxis.ticker = BasicTicker(min_interval=1, desired_num_ticks=min(nrows, 16))
    p.xaxis.axis_label = "time (ms from the trace's start)"
    p.toolbar.logo = None
    return p


def make_document(doc, model: Model):
    from bokeh.layouts import column, row
    from bokeh.models import (Button, ColumnDataSource, Div, HoverTool, MultiChoice, Range1d, Select,
                              TextInput)

    doc.title = f"warmcore view: {model.path}"
    if model.error is not None:
        doc.add_root(Div(text=f"<h3>warmcore view</h3><p id='trace-error' style='color:#b00020'>"
                              f"{html.escape(model.error)}</p>", name="error"))
        return
    n = model.nr_cpus
    m = model.trace.machine
    end_ms = max(model.end, 1) / render.MS
    header = Div(text=(f"<b>{html.escape(model.path)}</b>: {html.escape(m.get('name', ''))}, {n} CPUs, "
                       f"{model.n_events:,} events over {end_ms:.3f} ms; frequency {m.get('freq_min_khz', 0) / 1e3:.0f}-"
                       f"{m.get('freq_max_khz', 0) / 1e3:.0f} MHz (base {m.get('freq_base_khz', 0) / 1e3:.0f})"),
                 width=WIDTH)
    status = Div(text="", name="status", width=WIDTH)
    x_range = Range1d(0, end_ms, bounds=(-0.01 * end_ms, end_ms * 1.01), name="x_range")

    # The per-CPU timeline.
    tl_h = int(min(900, max(240, 70 + n * 6)))
    tl = _fig(f"Per-CPU timeline", tl_h, x_range, n, "timeline")
    img_src = ColumnDataSource({"image": [np.zeros((1, 1), np.uint32)], "x": [0], "y": [-0.5], "dw": [1], "dh": [n]})
    tl.image_rgba(image="image", x="x", y="y", dw="dw", dh="dh", source=img_src, name="timeline_image")
    seg_src = ColumnDataSource({k: [] for k in ("left", "right", "bottom", "top", "color", "cpu", "task", "comm",
                                                "label", "dur_us", "freq_mhz", "event", "pid", "a", "b")})
    segs = tl.quad(left="left", right="right", bottom="bottom", top="top", color="color", line_width=0,
                   source=seg_src, name="segments")
    ev_src = ColumnDataSource({k: [] for k in ("x", "y0", "y1", "cpu", "event", "pid", "comm", "a", "b",
                                               "freq_mhz", "color")})
    marks = tl.segment(x0="x", x1="x", y0="y0", y1="y1", color="color", line_width=2, source=ev_src,
                       name="event_marks")
    tl.add_tools(HoverTool(renderers=[segs], tooltips=render.SEGMENT_TOOLTIPS, name="segment_hover"))
    tl.add_tools(HoverTool(renderers=[marks], tooltips=render.EVENT_TOOLTIPS, name="event_hover"))
    # Wake-up chains: wakers in the segments' hover, chains followed as arrows.
    follow = chains.attach(model, tl, segs, x_range)
    legend = Div(text="", width=WIDTH, name="legend")

    panels = []
    # Run-queue size per CPU.
    rq_img = rq_legend = None
    if model.has["RQ_SIZE"]:
        title = "Run-queue size per CPU" + (" (derived from switches, wake-ups and migrations)" if model.rq_derived else "")
        rq = _fig(title, int(min(500, max(160, 60 + n * 3))), x_range, n, "runqueue")
        rq_img = ColumnDataSource({"image": [np.zeros((1, 1), np.uint32)], "x": [0], "y": [-0.5], "dw": [1], "dh": [n]})
        rq.image_rgba(image="image", x="x", y="y", dw="dw", dh="dh", source=rq_img)
        rq_legend = Div(text=(_legend(model.colors("runqueue")) if model.rq_ready else
                              f"<i id='rq-pending'>Deriving run-queue sizes from {model.n_events:,} events; "
                              f"this panel and the load lines fill in when they are ready.</i>"),
                        width=WIDTH, name="runqueue_legend")
        panels += [rq, rq_legend]
    else:
        why = ("the trace has no RQ_SIZE events and no context switches to derive them from" if model.lod is None
               else "the trace has no RQ_SIZE events, and this large trace's are not derived from its switches")
        panels.append(Div(text=f"<i>Run-queue size: {why}.</i>", width=WIDTH))
    # Under- and overload over time.
    load = _fig("Load: CPUs over time", 200, x_range, n + 1, "load", ylabel="CPUs")
    load.y_range = Range1d(0, n + 0.5)
    load.yaxis.ticker.desired_num_ticks = 5
    load_src = ColumnDataSource({"t": [], "busy": [], "over": [], "under": []})
    load.line("t", "busy", source=load_src, color="#636363", legend_label="busy CPUs")
    load.line("t", "over", source=load_src, color="#d7191c", legend_label="overloaded (2+ tasks)")
    load.line("t", "under", source=load_src, color="#2c7bb6", legend_label="underloaded (idle while another is overloaded)")
    load.legend.label_text_font_size = "8pt"
    load.legend.location = "top_left"
    load.legend.orientation = "horizontal"
    load.legend.background_fill_alpha = 0.5
    panels.append(load)
    # Nest membership and S_move timers.
    extra = []
    for vname, cond, title in CPU_PANELS:
        if model.has[cond]:
            f = _fig(title, int(min(400, max(140, 60 + n * 2))), x_range, n, vname)
            src = ColumnDataSource({"image": [np.zeros((1, 1), np.uint32)], "x": [0], "y": [-0.5], "dw": [1], "dh": [n]})
            f.image_rgba(image="image", x="x", y="y", dw="dw", dh="dh", source=src)
            extra.append((vname, src))
            panels += [f, Div(text=_legend(model.colors(vname)), width=WIDTH)]
    # Events by type.
    types = model.event_types
    evf = _fig("Events by type (every event counted)", int(max(160, 40 + 16 * len(types))), x_range, len(types),
               "events", ylabel="")
    from bokeh.models import FixedTicker

    evf.yaxis.ticker = FixedTicker(ticks=list(range(len(types))))
    evf.yaxis.major_label_overrides = {i: t for i, t in enumerate(types)}
    ev_img = ColumnDataSource({"image": [np.zeros((1, 1), np.uint32)], "x": [0], "y": [-0.5], "dw": [1], "dh": [len(types)]})
    evf.image_rgba(image="image", x="x", y="y", dw="dw", dh="dh", source=ev_img)
    panels.append(evf)

    # Controls.
    options = [(v, model.view_specs[v].title) for v in model.view_specs]
    colour = Select(title="Colour the running task by", value=model.first_view, options=options, name="colour", width=280)
    default_marks = [t for t in ("TICK",) if t in types]
    ev_choice = MultiChoice(title="Event marks on the timeline (when zoomed in)", value=default_marks, options=types,
                            name="event_types", width=520)
    t_from = TextInput(title="From (ms)", value="0", name="from", width=120)
    t_to = TextInput(title="To (ms)", value=f"{end_ms:.3f}", name="to", width=120)
    go = Button(label="Go", name="go", width=60)
    whole = Button(label="Whole trace", name="whole", width=100)
    controls = row(colour, t_from, t_to, go, whole, ev_choice)

    state = {"pending": False, "busy": False}

    def refresh():
        state["pending"] = False
        x0 = max(0.0, float(x_range.start)) * render.MS
        x1 = min(float(model.end), float(x_range.end) * render.MS)
        if x1 <= x0:
            x1 = x0 + 1
        t = time.perf_counter()
        src = model.source(x0, x1)
        if src is None:
            summary(x0, x1, t)
        else:
            exact_or_raster(src, x0, x1, t)
        t_from.value, t_to.value = f"{x0 / render.MS:.3f}", f"{x1 / render.MS:.3f}"

    def summary(x0, x1, t):
        """The window drawn from the level-of-detail summary: time per
        category in each bin, one image column a bin."""
        L = model.lod
        spec = model.view_specs["freq"]
        img, x, dw = L.time_image(lod.FREQ_COLS, [c.color for c in spec.categories], x0, x1, PLOT_W)
        geom = {"x": [x / render.MS], "y": [-0.5], "dw": [dw / render.MS]}
        img_src.data = {"image": [img], **geom, "dh": [n]}
        seg_src.data = {k: [] for k in seg_src.data}
        ev_src.data = {k: [] for k in ev_src.data}
        note = "" if colour.value == "freq" else f" (the summary has no {html.escape(colour.value)} colours: zoom in)"
        legend.text = _legend(spec.colors()) + note
        if rq_img is not None:
            rspec = model.view_specs.get("runqueue") or views.load("runqueue")
            img, x, dw = L.time_image(lod.RQ_COLS, [c.color for c in rspec.categories], x0, x1, PLOT_W)
            rq_img.data = {"image": [img], "x": [x / render.MS], "y": [-0.5], "dw": [dw / render.MS], "dh": [n]}
        for vname, esrc in extra:
            # The summary has idle states; nest and S_move appear when zoomed in.
            img = np.zeros((1, 1), np.uint32)
            if vname == "idle":
                ispec = model.view_specs.get("idle") or views.load("idle")
                img = L.time_image(lod.IDLE_STATE_COLS, [c.color for c in ispec.categories], x0, x1, PLOT_W)[0]
            esrc.data = {"image": [img], **geom, "dh": [n]}
        ts, busy, over = L.load(x0, x1, LOAD_BINS)
        load_src.data = {"t": ts / render.MS, "busy": busy, "over": over if rq_img is not None else busy * 0,
                         "under": np.zeros(len(ts))}
        kinds = [model.trace.event_id(tn) for tn in types]
        img, x, dw = L.counts_image(kinds, x0, x1, PLOT_W)
        ev_img.data = {"image": [img], "x": [x / render.MS], "y": [-0.5], "dw": [dw / render.MS], "dh": [len(types)]}
        li = L.level_for(x0, x1, PLOT_W)
        ms = (time.perf_counter() - t) * 1e3
        status.text = (f"<span id='mode'>summary</span>: window {x0 / render.MS:.3f}-{x1 / render.MS:.3f} ms; "
                       f"{L.events_in(x0, x1):,} events, drawn from the level-of-detail summary "
                       f"(bins of {L.levels[li][0] / 1e3:,.1f} us; zoom in to a window of at most "
                       f"{model.window_events:,} events for exact segments); "
                       f"rendered in <span id='render-ms'>{ms:.0f}</span> ms")

    def exact_or_raster(model, x0, x1, t):
        data = model.data
        layer = model.layer(colour.value)
        count = render.count_in_window(layer, x0, x1)
        exact = count <= render.EXACT_MAX
        geom = {"x": [x0 / render.MS], "y": [-0.5], "dw": [(x1 - x0) / render.MS]}
        if exact:
            img_src.data = {"image": [np.zeros((1, 1), np.uint32)], **geom, "dh": [n]}
            seg_src.data = follow.hover(render.hover_source(data, render.in_window(layer, x0, x1), layer))
            ids = data.ids(ev_choice.value) if ev_choice.value else np.zeros(0, np.uint32)
            idx = render.events_in_window(data, ids, x0, x1, limit=EVENT_MARKS_MAX) if len(ids) else np.zeros(0, np.int64)
            if idx is None:
                ev_src.data = {k: [] for k in ev_src.data}
                marks_note = f"more than {EVENT_MARKS_MAX:,} marks in the window: zoom in to see them"
            else:
                ev_src.data = render.event_source(data, idx, model.palette)
                marks_note = f"{len(idx):,} event marks"
        else:
            img_src.data = {"image": [render.raster(layer, x0, x1, PLOT_W, n)], **geom, "dh": [n]}
            seg_src.data = {k: [] for k in seg_src.data}
            ev_src.data = {k: [] for k in ev_src.data}
            marks_note = "event marks appear when zoomed in"
        legend.text = _legend(layer.colors)
        if rq_img is not None and model.rq_ready:
            rq_img.data = {"image": [render.raster(model.layer("runqueue"), x0, x1, PLOT_W, n)], **geom, "dh": [n]}
        for vname, src in extra:
            src.data = {"image": [render.raster(model.layer(vname), x0, x1, PLOT_W, n)], **geom, "dh": [n]}
        # Load over time, sampled at bin centres.
        ts = x0 + (np.arange(LOAD_BINS) + 0.5) * (x1 - x0) / LOAD_BINS
        rq = model.rq_at(ts)
        busy = model.busy_at(ts).sum(axis=0) if model.has["CTX_SWITCH"] else np.zeros(LOAD_BINS)
        if rq is not None:
            over = (rq >= 2).sum(axis=0)
            under = np.where(over > 0, (rq == 0).sum(axis=0), 0)
        else:
            over = under = np.zeros(LOAD_BINS, dtype=np.int64)
        load_src.data = {"t": ts / render.MS, "busy": busy, "over": over, "under": under}
        # Events by type: every event in the window counted into its pixel.
        ev_img.data = {"image": [render.raster_counts(*model.events_xy(), x0, x1, PLOT_W, len(types))],
                       **geom, "dh": [len(types)]}
        ms = (time.perf_counter() - t) * 1e3
        mode = f"exact: {count:,} segments with hover, {marks_note}" if exact else f"raster: {count:,} segments"
        status.text = (f"<span id='mode'>{'exact' if exact else 'raster'}</span>: window {x0 / render.MS:.3f}-"
                       f"{x1 / render.MS:.3f} ms; {mode}; rendered in <span id='render-ms'>{ms:.0f}</span> ms")

    def schedule(attr, old, new):
        if not state["pending"]:
            state["pending"] = True
            doc.add_timeout_callback(refresh, 120)

    x_range.on_change("start", schedule)
    x_range.on_change("end", schedule)
    colour.on_change("value", schedule)
    ev_choice.on_change("value", schedule)

    def goto():
        try:
            a, b = float(t_from.value), float(t_to.value)
        except ValueError:
            status.text = "<span style='color:#b00020'>From and To: expected numbers of ms</span>"
            return
        if b <= a:
            status.text = "<span style='color:#b00020'>From must be before To</span>"
            return
        x_range.start, x_range.end = a, b

    def reset():
        x_range.start, x_range.end = 0, end_ms

    go.on_click(goto)
    whole.on_click(reset)
    doc.add_root(column(header, controls, follow.controls, status, tl, legend, *panels, name="root"))
    refresh()

    def runqueue_ready():
        if model.rq_error is not None:
            rq_legend.text = f"<i style='color:#b00020'>Run-queue sizes: {html.escape(model.rq_error)}</i>"
            return
        rq_legend.text = _legend(model.colors("runqueue"))
        refresh()

    if model.lod is not None:
        # Once this page has reached the browser, as below.
        doc.add_timeout_callback(model.start_process_table, 1000)
    if rq_legend is not None and not model.rq_ready:
        # Once this page has reached the browser (the thread competes with
        # serving it); the callback comes on the deriving thread, so the
        # document is changed on its own loop.
        doc.add_timeout_callback(
            lambda: model.start_runqueue(lambda: doc.add_next_tick_callback(runqueue_ready)), 1000)
    return refresh, x_range, status


def _legend(colors: dict) -> str:
    items = "".join(f"<span style='display:inline-block;margin-right:12px'><span style='display:inline-block;"
                    f"width:11px;height:11px;background:{c};border:1px solid #777;margin-right:4px'></span>"
                    f"{html.escape(l)}</span>" for l, c in colors.items())
    return f"<div style='font-size:9pt'>{items}</div>"


# The BokehJS bundles the page uses: its widgets, but no MathJax (1.8 MB; no
# label is LaTeX), no WebGL (the figures draw on a canvas) and no tables.
PAGE_BUNDLES = ["bokeh", "bokeh-widgets"]


def _trim_resources(server):
    """Serve pages that load only PAGE_BUNDLES: a Bokeh server page loads
    every bundle, not knowing in advance what its documents use."""
    app = server._tornado
    full = app.resources

    def resources(absolute_url=None):
        return full(absolute_url).clone(components=list(PAGE_BUNDLES))

    app.resources = resources


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _suggest(port: int) -> Optional[int]:
    for p in list(range(port + 1, min(port + 50, 65535))):
        if _port_free(p):
            return p
    return None


def serve(path: str, port: int, view: str = "freq") -> int:
    if not 1 <= port <= 65535:
        print(f"warmcore: port {port}: expected 1-65535", file=sys.stderr)
        return status.USAGE
    if not _port_free(port):
        alt = _suggest(port)
        hint = f": try --port {alt}" if alt else ": choose another with --port"
        print(f"warmcore: port {port} on 127.0.0.1 is in use{hint}", file=sys.stderr)
        return status.USAGE
    views.load(view)  # a bad view file fails here, before the server starts
    model = Model(path, view)
    if model.error:
        # A file it cannot open ends the command before a server starts.
        print(f"warmcore: {model.error}", file=sys.stderr)
        return status.USAGE
    # Compute the first view before the URL is printed, so that the first
    # picture only costs a raster.
    model.warm_up()
    from bokeh.application import Application
    from bokeh.application.handlers.function import FunctionHandler
    from bokeh.server.server import Server

    app = Application(FunctionHandler(lambda doc: make_document(doc, model)))
    try:
        server = Server({"/": app}, port=port, address="127.0.0.1",
                        allow_websocket_origin=[f"127.0.0.1:{port}", f"localhost:{port}"])
    except OSError as e:
        alt = _suggest(port)
        print(f"warmcore: port {port} on 127.0.0.1: {e.strerror}{f': try --port {alt}' if alt else ''}", file=sys.stderr)
        return status.of(e)
    _trim_resources(server)
    server.start()
    try:
        # The URL inside the try: a Ctrl-C right after it is a stop too.
        print(f"warmcore view: serving {path} at http://127.0.0.1:{port}/ (Ctrl-C to stop)", flush=True)
        server.io_loop.start()
    except KeyboardInterrupt:
        # Ctrl-C is how a person stops it: 130, as every command says
        # it was interrupted (docs/conventions.md, Exit statuses).
        return 128 + signal.SIGINT
    return 0
