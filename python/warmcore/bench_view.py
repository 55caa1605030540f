# SPDX-License-Identifier: GPL-2.0-only
"""The viewer's benchmark (scripts/bench-view.sh): time to the first picture,
re-rendering per zoom and pan, peak memory. It runs what the server runs for a
page (the document with all its panels, rasters included) without a browser:
the browser's own drawing is not counted."""

from __future__ import annotations

import argparse
import resource
import statistics
import time

T_START = time.perf_counter()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--view", default="freq")
    ap.add_argument("--browser", metavar="WARMCORE",
                    help="instead: time `WARMCORE view FILE` until headless Chromium shows the first picture")
    a = ap.parse_args()
    if a.browser:
        return in_browser(a.browser, a.file)
    from bokeh.document import Document

    from . import render, server

    t_import = time.perf_counter()
    model = server.Model(a.file, a.view)
    if model.error:
        raise SystemExit(f"warmcore: {model.error}")
    t_load = time.perf_counter()
    if model.lod is None:
        model.layer(model.first_view)
    t_view = time.perf_counter()
    model.warm_up()
    t_warm = time.perf_counter()
    doc = Document()
    refresh, x_range, status = server.make_document(doc, model)
    t_first = time.perf_counter()
    what = (f"view {model.first_view}: {len(model.layer(model.first_view).frame):,} segments" if model.lod is None
            else f"drawn from the level-of-detail summary ({model.lod.origin})")
    print(f"trace: {a.file}: {model.n_events:,} events, {model.nr_cpus} CPUs, {model.end / 1e9:.3f} s; {what}")
    print(f"first picture: {t_first - T_START:.2f} s from process start "
          f"(imports {t_import - T_START:.2f}, open+read {t_load - t_import:.2f}, "
          f"first view {t_view - t_load:.2f}, other panels' data {t_warm - t_view:.2f}, "
          f"page with all panels {t_first - t_warm:.2f})")

    if model.rq_source == "background":
        import threading

        ready = threading.Event()
        model.start_runqueue(ready.set)
        ready.wait()
        print(f"run-queue sizes derived on a thread after the first picture: ready "
              f"{time.perf_counter() - t_first:.2f} s later{'' if model.rq_ready else ': ' + str(model.rq_error)}")
        refresh()

    if model.lod is not None:
        # The page starts it a second after it is out.
        t = time.perf_counter()
        model.start_process_table()
        model._procs_thread.join()
        print(f"process table and EXECs for hover read on a thread after the first picture: "
              f"{time.perf_counter() - t:.2f} s")

    # Zoom in by 4x steps towards the middle, panning half a window at each level.
    end_ms = model.end / 1e6
    steps = []
    w = end_ms
    centre = end_ms / 2
    while w > 0.5:
        for shift in (0.0, 0.5):
            x0 = max(0.0, centre - w / 2 + shift * w)
            t = time.perf_counter()
            x_range.start, x_range.end = x0, x0 + w
            refresh()
            dt = time.perf_counter() - t
            mode = status.text.split("id='mode'>")[1].split("<")[0]
            steps.append((w, "pan" if shift else "zoom", mode, dt))
        w /= 4
    for w, kind, mode, dt in steps:
        print(f"  {kind:4} window {w:12.3f} ms  {mode:7}  {dt * 1e3:7.0f} ms")
    dts = [s[3] for s in steps]
    print(f"re-render per zoom/pan: median {statistics.median(dts) * 1e3:.0f} ms, max {max(dts) * 1e3:.0f} ms "
          f"over {len(dts)} steps")
    print(f"peak memory (max RSS): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def in_browser(binary: str, path: str):
    """From the command's start to the timeline's picture in a browser that is
    already open: what a person waits for."""
    from . import browser

    if not browser.available():
        print("first picture in Chromium: skipped (needs Debian's chromium and chromium-driver)")
        return
    with browser.chromium() as d:
        d.get("about:blank")
        t0 = time.perf_counter()
        with browser.view_server(binary, path) as url:
            t_url = time.perf_counter()
            d.get(url)
            browser.wait_text(d, lambda s: ("raster:" in s or "level-of-detail summary" in s) and "rendered in" in s,
                              timeout=300, poll=0.05)
            t_pic = time.perf_counter()
    print(f"first picture in Chromium: {t_pic - t0:.2f} s from `warmcore view` (URL printed at {t_url - t0:.2f} s)")


if __name__ == "__main__":
    main()
