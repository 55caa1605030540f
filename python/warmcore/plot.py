# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore plot`: a view rendered without a server, as PNG or HTML."""

from __future__ import annotations

import pathlib

import numpy as np

from . import output, render, views
from .trace import Trace

WIDTH = 1400


def _bokeh_figure(data, layer, x0, x1, title, width=WIDTH):
    from bokeh.models import ColumnDataSource, HoverTool, Legend, LegendItem
    from bokeh.plotting import figure

    n = data.nr_cpus
    height = int(min(900, max(260, 60 + n * 6)))
    p = figure(title=title, width=width, height=height, x_range=(x0 / render.MS, x1 / render.MS),
               y_range=(-0.5, n - 0.5), x_axis_label="time (ms from the trace's start)", y_axis_label="CPU",
               tools="xpan,xwheel_zoom,box_zoom,reset,save", name="timeline")
    exact = render.count_in_window(layer, x0, x1) <= render.EXACT_MAX
    if exact:
        f = render.in_window(layer, x0, x1)
        src = ColumnDataSource(render.hover_source(data, f, layer))
        r = p.quad(left="left", right="right", bottom="bottom", top="top", color="color", source=src, line_width=0)
        p.add_tools(HoverTool(renderers=[r], tooltips=render.SEGMENT_TOOLTIPS))
    else:
        img = render.raster(layer, x0, x1, width - 80, n)
        p.image_rgba(image=[img], x=x0 / render.MS, y=-0.5, dw=(x1 - x0) / render.MS, dh=n)
    items = []
    for lab, col in layer.colors.items():
        g = p.scatter(x=[], y=[], color=col, marker="square", size=10)
        items.append(LegendItem(label=lab, renderers=[g]))
    p.add_layout(Legend(items=items, location="top_left", label_text_font_size="8pt"), "right")
    return p, exact


def _png(data, layer, x0, x1, title, out: pathlib.Path, width=WIDTH):
    from PIL import Image, ImageDraw, ImageFont

    n = data.nr_cpus
    row = max(2, min(24, 640 // max(n, 1)))
    left, top, bottom, legend_w = 60, 30, 42, 260
    plot_w, plot_h = width - left - legend_w, n * row
    img = render.raster(layer, x0, x1, plot_w, n)
    rgba = img.view(np.uint8).reshape(img.shape[0], img.shape[1], 4)[::-1]
    pic = Image.fromarray(np.ascontiguousarray(rgba), "RGBA").resize((plot_w, plot_h), Image.NEAREST)
    height = max(top + plot_h + bottom, top + 16 * len(layer.colors) + 8)
    canvas = Image.new("RGBA", (width, height), "white")
    canvas.alpha_composite(pic, (left, top))
    d = ImageDraw.Draw(canvas)
    font = ImageFont.load_default()
    d.text((left, 8), title, fill="black", font=font)
    d.rectangle([left - 1, top - 1, left + plot_w, top + plot_h], outline="#555555")
    # CPU labels: CPU 0 at the bottom, as in the interactive view.
    step = max(1, int(np.ceil(12 / row)))
    for cpu in range(0, n, step):
        y = top + (n - 1 - cpu) * row + row // 2 - 5
        d.text((8, y), f"CPU {cpu}", fill="#333333", font=font)
    for k in range(6):
        x = left + k * (plot_w - 1) / 5
        t = (x0 + k * (x1 - x0) / 5) / render.MS
        d.line([x, top + plot_h, x, top + plot_h + 5], fill="#333333")
        d.text((x - 20, top + plot_h + 8), f"{t:.3f} ms", fill="#333333", font=font)
    d.text((left + plot_w // 2 - 90, top + plot_h + 24), "time from the trace's start", fill="#333333", font=font)
    ly = top
    for lab, col in layer.colors.items():
        d.rectangle([width - legend_w + 10, ly, width - legend_w + 22, ly + 12], fill=col, outline="#555555")
        d.text((width - legend_w + 28, ly), lab[:34], fill="black", font=font)
        ly += 16
    canvas.convert("RGB").save(out)


def plot(path, view: str, start=None, end=None, out="out.png", width=WIDTH) -> str:
    """Render `view` of the trace at `path` over [start, end) ns from its first
    event to `out` (.png or .html). Returns a one-line summary."""
    out = pathlib.Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".png", ".html"):
        raise ValueError(f"{out}: expected an output ending in .png or .html")
    v = views.load(view)
    trace = Trace(path)
    data = views.TraceData(trace)
    if data.n == 0:
        raise ValueError(f"{trace.path}: the trace has no events: nothing to plot")
    x0 = 0 if start is None else int(start)
    x1 = data.end if end is None else int(end)
    if x1 <= x0:
        raise ValueError(f"--from {x0} ns is not before --to {x1} ns (the trace lasts {data.end} ns)")
    layer = views.apply(v, data)
    title = f"{pathlib.Path(trace.path).name}: {v.title}, {x0 / render.MS:.3f}-{x1 / render.MS:.3f} ms"
    with output.replacing(out, [path]) as tmp:
        if suffix == ".png":
            _png(data, layer, x0, x1, title, tmp, width)
            mode = "raster"
        else:
            from bokeh.io import save
            from bokeh.resources import INLINE

            p, exact = _bokeh_figure(data, layer, x0, x1, title, width)
            save(p, filename=str(tmp), resources=INLINE, title=title)
            mode = "exact segments" if exact else "raster"
    return f"wrote {out} ({v.name}, {render.count_in_window(layer, x0, x1)} segments, {mode})"
