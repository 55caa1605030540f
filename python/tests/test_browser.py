# SPDX-License-Identifier: GPL-2.0-only
"""End to end: `warmcore view` serves a trace, headless Debian Chromium opens
it, the timeline raster appears, zooming into 1 ms gives exact segments,
hovering a known segment shows its details, and on a simulated configure
run hovering names a task's waker and a click draws its wake-up chain
across CPUs. Screenshots are kept in out/test-artifacts/ for a person to
look at."""

import io
import re
import socket
import subprocess

import numpy as np
import pytest
from PIL import Image

import warmcore
from warmcore import browser as browser_mod
from warmcore import views as V

from conftest import BIN, ROOT

ART = ROOT / "out" / "test-artifacts"

pytestmark = pytest.mark.usefixtures("needs_browser", "needs_binary")
wait_text = browser_mod.wait_text


@pytest.fixture
def server():
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield lambda trace, *extra: stack.enter_context(browser_mod.view_server(BIN, trace, *extra))


@pytest.fixture
def browser():
    with browser_mod.chromium() as d:
        yield d


def shot(d, name):
    ART.mkdir(parents=True, exist_ok=True)
    png = d.get_screenshot_as_png()
    (ART / name).write_bytes(png)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def frame_box(d, name):
    """The plotting frame of figure `name` in viewport pixels: left, top, width, height."""
    return d.execute_script("""
const p = Bokeh.documents[0].get_model_by_name(arguments[0]);
const v = Bokeh.index.find_one(p);
const r = v.el.getBoundingClientRect(); const f = v.frame.bbox;
return [r.left + f.left, r.top + f.top, f.width, f.height];""", name)


def to_screen(d, name, x_ms, y):
    return d.execute_script("""
const p = Bokeh.documents[0].get_model_by_name(arguments[0]);
const v = Bokeh.index.find_one(p);
const r = v.el.getBoundingClientRect();
return [r.left + v.frame.x_scale.compute(arguments[1]), r.top + v.frame.y_scale.compute(arguments[2])];""",
                            name, x_ms, y)


def zoom_to(d, w0, w1):
    """Type the window into From/To and press Go, as a person would; the
    pointer stays on Go, whose centre this returns."""
    from selenium.webdriver.common.action_chains import ActionChains

    d.execute_script("""
const doc = Bokeh.documents[0];
doc.get_model_by_name('from').value = String(arguments[0]);
doc.get_model_by_name('to').value = String(arguments[1]);""", w0, w1)
    gx, gy = d.execute_script("""
const v = Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('go'));
const r = v.el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2];""")
    ActionChains(d).move_by_offset(int(gx), int(gy)).click().perform()
    return gx, gy


def hex_rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def test_timeline_zoom_and_hover(server, browser, synth_trace):
    from selenium.webdriver.common.action_chains import ActionChains

    # The known event: a task's segment on CPU 2 lasting at least 150 us.
    t = warmcore.open(synth_trace)
    L = V.apply(V.load("freq"), V.TraceData(t))
    f = L.frame
    f = f[(f["cpu"] == 2) & (f["task"] != 0) & (f["end"] - f["begin"] >= 150_000) & (f["begin"] > 100e6)]
    seg = V.complete(L, V.TraceData(t), f.iloc[:1]).iloc[0]
    task, comm = int(seg["task"]), str(seg["comm"])
    b_ms = seg["begin"] / 1e6
    w0, w1 = b_ms - 0.3, b_ms + 0.7   # a 1 ms window holding the segment's start
    assert len(L.frame) > 20_000      # zoomed out, the timeline is a raster

    d = browser
    d.get(server(synth_trace))
    wait_text(d, lambda s: "raster:" in s and "rendered in" in s)
    img = shot(d, "view-overview.png")
    left, top, w, h = (int(round(x)) for x in frame_box(d, "timeline"))
    area = img[top + 2:top + h - 2, left + 2:left + w - 2].reshape(-1, 3).astype(np.int64)
    # The frame is filled: hardly any of the white background shows.
    white = (area.min(axis=1) >= 245).mean()
    assert white < 0.1, white
    # And mostly with the colours of the bands (blended where a pixel holds
    # several segments): near one of them, or a mix of two.
    bands = np.array([hex_rgb(c) for c in L.colors.values()], dtype=np.int64)
    dist = np.abs(area[:, None, :] - bands[None, :, :]).sum(axis=2).min(axis=1)
    assert (dist < 90).mean() > 0.4, (dist < 90).mean()

    gx, gy = zoom_to(d, w0, w1)
    text = wait_text(d, lambda s: "exact:" in s and f"{w0:.3f}" in s)
    assert "segments with hover" in text

    # Hover the segment's middle (within the window) on CPU 2's row.
    mid = (max(b_ms, w0) + min(seg["end"] / 1e6, w1)) / 2
    x, y = to_screen(d, "timeline", mid, 2)
    ActionChains(d).move_by_offset(int(x) - int(gx), int(y) - int(gy)).perform()
    text = wait_text(d, lambda s: f"{task} ({comm})" in s, timeout=30)
    shot(d, "view-zoomed-hover.png")
    assert "MHz" in text and "CTX_SWITCH" in text


def test_a_large_trace_is_drawn_from_its_summary_then_exactly(server, browser, synth_trace, monkeypatch):
    """With the thresholds lowered, the synthetic trace is a large one: the
    first picture comes from the level-of-detail summary, and a 1 ms window
    is read from the events and drawn as exact segments with hover."""
    from selenium.webdriver.common.action_chains import ActionChains

    monkeypatch.setenv("WARMCORE_VIEW_LOD_EVENTS", "1000")
    monkeypatch.setenv("WARMCORE_VIEW_WINDOW_EVENTS", "20000")
    side = synth_trace.parent / (synth_trace.name + ".lod")
    side.unlink(missing_ok=True)
    t = warmcore.open(synth_trace)
    L = V.apply(V.load("freq"), V.TraceData(t))
    f = L.frame
    f = f[(f["cpu"] == 3) & (f["task"] != 0) & (f["end"] - f["begin"] >= 150_000) & (f["begin"] > 100e6)]
    seg = V.complete(L, V.TraceData(t), f.iloc[:1]).iloc[0]
    task, comm = int(seg["task"]), str(seg["comm"])
    b_ms = seg["begin"] / 1e6
    w0, w1 = b_ms - 0.3, b_ms + 0.7

    d = browser
    d.get(server(synth_trace))
    wait_text(d, lambda s: "drawn from the level-of-detail summary" in s and "rendered in" in s)
    assert side.exists()  # built on open, kept beside the trace
    img = shot(d, "view-summary.png")
    left, top, w, h = (int(round(x)) for x in frame_box(d, "timeline"))
    area = img[top + 2:top + h - 2, left + 2:left + w - 2].reshape(-1, 3).astype(np.int64)
    assert (area.min(axis=1) >= 245).mean() < 0.1  # the timeline is drawn

    d.execute_script("""
const r = Bokeh.documents[0].get_model_by_name('x_range');
r.start = arguments[0]; r.end = arguments[1];""", w0, w1)
    text = wait_text(d, lambda s: "exact:" in s and f"{w0:.3f}" in s)
    assert "segments with hover" in text
    x, y = to_screen(d, "timeline", (max(b_ms, w0) + min(seg["end"] / 1e6, w1)) / 2, 3)
    ActionChains(d).move_by_offset(int(x), int(y)).perform()
    text = wait_text(d, lambda s: f"{task} ({comm})" in s, timeout=30)
    shot(d, "view-summary-zoomed-hover.png")
    assert "MHz" in text and "CTX_SWITCH" in text


def test_unreadable_trace_shows_the_readers_line_and_serves_nothing(tmp_path):
    # The reader's own line reaches the user, and no server starts for a
    # file that cannot be opened (docs/conventions.md).
    bad = tmp_path / "broken.wct"
    bad.write_bytes(b"WCTRACE\0" + b"\xff" * 200)
    with pytest.raises(warmcore.TraceError) as e:
        warmcore.open(bad)
    r = subprocess.run([str(BIN), "view", str(bad), "--port", "0"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert str(e.value) in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_port_in_use_says_so_and_suggests_another(known_trace):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = subprocess.run([str(BIN), "view", str(known_trace), "--port", str(port)], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use: try --port" in r.stderr and r.stderr.count("\n") == 1


def test_hover_names_the_waker_and_a_click_follows_the_chain(server, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    from warmcore import chains

    # A simulated configure run: a shell forks one child after another, each
    # placed on an idle CPU; the chain of the first child crosses CPUs.
    trace = tmp_path / "configure.wct"
    subprocess.run([str(BIN), "sim", "--machine", "default", "--workload", "configure", "--policy", "cfs",
                    "--governor", "powersave", "--trace", str(trace)], check=True, capture_output=True)
    t = warmcore.open(trace)
    k = chains.Chains(t).links.iloc[1]
    wakee, waker, cpu = int(k["wakee"]), int(k["waker"]), int(k["cpu"])
    f = V.apply(V.load("freq"), V.TraceData(t)).frame
    seg = f[(f["task"] == wakee) & (f["begin"] == k["start"])].iloc[0]
    b_ms, e_ms = seg["begin"] / 1e6, seg["end"] / 1e6
    w0, w1 = b_ms - 0.2, b_ms + 0.5

    d = browser
    d.get(server(trace))
    wait_text(d, lambda s: "rendered in" in s and "Follow chain" in s)
    gx, gy = zoom_to(d, w0, w1)
    wait_text(d, lambda s: "exact:" in s and f"{w0:.3f}" in s)

    # Hover the child's first segment: its waker, the shell, on its CPU.
    x, y = to_screen(d, "timeline", (b_ms + min(e_ms, w1)) / 2, cpu)
    ActionChains(d).move_by_offset(int(x) - int(gx), int(y) - int(gy)).perform()
    text = wait_text(d, lambda s: f"sh ({waker}) on CPU {int(k['waker_cpu'])} at " in s, timeout=30)
    assert "woken by" in text and "forked at" in text
    shot(d, "view-chain-hover.png")

    # Click it: the chain is drawn as arrows across at least three CPUs.
    ActionChains(d).click().perform()
    text = wait_text(d, lambda s: "links across" in s, timeout=30)
    arrows = d.execute_script("""
const a = Bokeh.documents[0].get_model_by_name('chain_arrows').data;
return {link: Array.from(a.link), y0: Array.from(a.y0), y1: Array.from(a.y1), label: Array.from(a.label)};""")
    assert 0 in arrows["link"] and 1 in arrows["link"]
    cpus = set(arrows["y0"]) | set(arrows["y1"])
    assert len(cpus) >= 3, cpus
    assert all(lab.endswith(" MHz") for lab in arrows["label"])
    # The page says so too, naming the waker of the clicked segment.
    status = d.execute_script("return Bokeh.documents[0].get_model_by_name('chain_status').text")
    assert f"by sh ({waker}) on CPU {int(k['waker_cpu'])} at " in status, status
    m = re.search(r"(\d+)\s+links across\s+(\d+)\s+CPUs", text)
    assert m and int(m.group(1)) >= len(arrows["link"]) and int(m.group(2)) >= 3, text
    # And they are on the picture: the arrows' red in the timeline's frame.
    img = shot(d, "view-chain.png")
    left, top, w, h = (int(round(v)) for v in frame_box(d, "timeline"))
    area = img[top:top + h, left:left + w].reshape(-1, 3).astype(np.int64)
    red = (np.abs(area - np.array(hex_rgb(chains.ARROW_COLOR))).sum(axis=1) < 40).sum()
    assert red > 50, red
