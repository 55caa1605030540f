# SPDX-License-Identifier: GPL-2.0-only
"""Declarative views, in the spirit of SchedDisplay's scripts (Fork/wait,
section 3.2): decorate events with derived columns, select rows by queries,
attach a colour and a label to each selection. A view file is TOML or JSON
and never runs code: its queries are in the small language of ``expr``.

A view file::

    name = "freq"                 # how --view names it
    title = "Running task by frequency band"
    shape = "segments"            # "segments" (begin..end on a CPU row) or "marks" (instants)
    events = ["CTX_SWITCH"]       # the input events (all if absent)
    where = "task != 0"           # optional: rows to keep, after derivation
    begin = "ts"                  # segments: the columns that bound a segment
    end = "end"
    hover = ["task", "comm", "freq"]   # columns shown on hover, besides the event's own

    [[derive]]                    # derived columns, computed in order
    name = "end"
    next = "ts"                   # the next event of the same kind on the same CPU: its ts
    [[derive]]
    name = "task"
    expr = "a"                    # arithmetic on columns
    [[derive]]
    name = "comm"
    comm_of = "task"              # the comm of a pid column
    [[derive]]
    name = "freq"
    frequency = true              # the CPU's frequency at ts, kHz (TICK, FREQ_CHANGE)
    [[derive]]
    name = "stop"
    pair = { begin = "IDLE_ENTER", end = ["IDLE_EXIT"] }   # begin/end pairs: for
                                  # begin rows, the ts of the next end event on the CPU

    [[category]]                  # the first category whose query holds colours a row
    label = "slow"
    query = "freq < FBASE"
    color = "#2c7bb6"
    [[category]]
    label = "task"
    query = "True"
    color_by = "comm"             # one colour per value (the most frequent ones; the rest "other")

Columns every view has: ts (ns from the trace's first event), cpu, pid, id,
a, b, event (the name). Constants: FMIN, FBASE, FMAX (kHz, from the machine
description), NCPUS, END (the trace's last ts).

The data a view reads, a trace loaded as columns, is ``tracedata.TraceData``;
this module parses views and applies them to it.
"""

from __future__ import annotations

import json
import pathlib
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from . import expr as E
# Both are used here, and stay importable from here as before the split.
from .tracedata import TraceData, ViewError

BUILTIN_DIR = pathlib.Path(__file__).parent / "views"
BASE_COLUMNS = {"ts", "cpu", "pid", "id", "a", "b", "event"}
CONSTANTS = {"FMIN", "FBASE", "FMAX", "NCPUS", "END"}
DERIVE_KINDS = ("next", "comm_of", "frequency", "pair", "expr")
# Categorical colours for `color_by`: how many values get their own colour.
TOP_VALUES = 20
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
           "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
           "#dbdb8d", "#9edae5", "#393b79", "#637939"]
OTHER_COLOR = "#7f7f7f"


@dataclass
class Derive:
    name: str
    kind: str
    arg: Any
    expr: Optional[E.Expr] = None


@dataclass
class Category:
    label: str
    query: E.Expr
    color: str = OTHER_COLOR
    color_by: Optional[str] = None


@dataclass
class View:
    name: str
    title: str
    shape: str
    events: Optional[list]
    begin: str
    end: str
    where: Optional[E.Expr]
    derive: list
    categories: list
    hover: list
    source: str = ""

    def colors(self) -> dict:
        return {c.label: c.color for c in self.categories if not c.color_by}


@dataclass
class Layer:
    """A view applied to a trace: one row per segment or mark, in CPU order."""
    view: View
    frame: pd.DataFrame          # cpu, begin, end (ns), cat (Categorical), hover columns
    colors: dict = field(default_factory=dict)   # label -> colour, in legend order
    deferred: set = field(default_factory=set)   # hover-only columns: see complete()


# ---------------------------------------------------------------- loading

def _line_of(text: str, needle: str, after: str = "") -> int:
    """The 1-based line of the first occurrence of `needle` (a key or value),
    after the first match of the regular expression `after` if given."""
    start = 0
    if after:
        m = re.search(after, text)
        start = m.start() if m else 0
    if needle:
        i = text.find(needle, start)
        if i < 0:
            i = text.find(needle)
        if i >= 0:
            return text.count("\n", 0, i) + 1
    return text.count("\n", 0, start) + 1


def load(spec: str) -> View:
    """A built-in view by name, or a view file (.toml or .json)."""
    p = pathlib.Path(spec)
    if not p.suffix and not p.exists():
        b = BUILTIN_DIR / f"{spec}.toml"
        if not b.exists():
            raise ViewError(f"{spec}: no such view: expected a file or one of {', '.join(builtin_names())}")
        p = b
    try:
        text = p.read_text()
    except OSError as e:
        raise ViewError(f"{p}: {e.strerror or e}: expected a readable view file") from None
    return parse(text, str(p), json_format=p.suffix.lower() == ".json")


def builtin_names() -> list:
    return sorted(f.stem for f in BUILTIN_DIR.glob("*.toml"))


def parse(text: str, path: str = "<view>", json_format: bool = False) -> View:
    if json_format:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ViewError(f"{path}:{e.lineno}: expected JSON: {e.msg}") from None
        except RecursionError:
            raise ViewError(f"{path}:1: expected JSON nested less deeply") from None
    else:
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            m = re.search(r"line (\d+)", str(e))
            line = m.group(1) if m else "1"
            raise ViewError(f"{path}:{line}: expected TOML: {str(e).split(' (at')[0]}") from None
        except RecursionError:
            raise ViewError(f"{path}:1: expected TOML nested less deeply") from None
    if not isinstance(d, dict):
        raise ViewError(f"{path}:1: expected a table of view settings")

    def fail(msg, near="", after=""):
        raise ViewError(f"{path}:{_line_of(text, near, after)}: {msg}")

    def expr(s, what, known, after=""):
        if not isinstance(s, str):
            fail(f"{what}: expected an expression in quotes", str(s), after)
        try:
            return E.parse(s, known)
        except E.ExprError as e:
            fail(f"{what}: {s!r}: {e.msg}", s, after)

    allowed = {"name", "title", "shape", "events", "where", "begin", "end", "derive", "category", "hover"}
    for k in d:
        if k not in allowed:
            fail(f"unknown setting {k!r}: expected one of {', '.join(sorted(allowed))}", k)
    shape = d.get("shape", "segments")
    if shape not in ("segments", "marks"):
        fail(f"shape: expected \"segments\" or \"marks\", found {shape!r}", "shape")
    events = d.get("events")
    if events is not None and (not isinstance(events, list) or not all(_is_event(e) for e in events)):
        fail("events: expected a list of event names", "events")
    for k in ("name", "title"):
        if k in d and not isinstance(d[k], str):
            fail(f"{k}: expected a string, found {d[k]!r}", k)
    for k in ("derive", "hover"):
        if not isinstance(d.get(k, []), list):
            fail(f"{k}: expected a list, found {d[k]!r}", k)

    known = set(BASE_COLUMNS) | CONSTANTS
    derives = []
    for i, dv in enumerate(d.get("derive", [])):
        here = rf"name\s*[=:]\s*[\"']{re.escape(str(dv.get('name', '')))}[\"']" if isinstance(dv, dict) else ""
        if not isinstance(dv, dict) or "name" not in dv:
            fail(f"derive #{i + 1}: expected a table with a name and one of {', '.join(DERIVE_KINDS)}", "derive")
        name = dv["name"]
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            fail(f"derive #{i + 1}: expected a name made of letters, digits and _", "derive")
        kinds = [k for k in DERIVE_KINDS if k in dv]
        extra = set(dv) - set(DERIVE_KINDS) - {"name"}
        if len(kinds) != 1 or extra:
            fail(f"derive {name!r}: expected exactly one of {', '.join(DERIVE_KINDS)}", "", here)
        kind, arg = kinds[0], dv[kinds[0]]
        ex = None
        if kind == "expr":
            ex = expr(arg, f"derive {name!r}", known, here)
        elif kind in ("next", "comm_of"):
            if not isinstance(arg, str) or arg not in known:
                fail(f"derive {name!r}: {kind} = {arg!r}: expected a column, one of {', '.join(sorted(known))}", kind, here)
        elif kind == "pair":
            if (not isinstance(arg, dict) or set(arg) - {"begin", "end", "column"}
                    or not all(_is_event_or_events(arg.get(k)) for k in ("begin", "end"))):
                fail(f"derive {name!r}: expected pair = {{ begin = \"EVENT\", end = [\"EVENT\", ...] }}", "pair", here)
            column = arg.get("column", "ts")
            if not isinstance(column, str) or column not in known:
                fail(f"derive {name!r}: pair column = {column!r}: expected a column, one of {', '.join(sorted(known))}",
                     "column", here)
            arg = {"begin": _as_list(arg["begin"]), "end": _as_list(arg["end"]), "column": column}
        elif kind == "frequency" and arg is not True:
            fail(f"derive {name!r}: expected frequency = true", "frequency", here)
        derives.append(Derive(name, kind, arg, ex))
        known.add(name)

    where = expr(d["where"], "where", known) if "where" in d else None
    begin, end = d.get("begin", "ts"), d.get("end", "ts" if shape == "marks" else "end")
    for k, v in (("begin", begin), ("end", end)):
        if not isinstance(v, str) or v not in known:
            fail(f"{k}: expected a column, one of {', '.join(sorted(known))}; found {v!r}", k)
    hover = d.get("hover", [])
    for h in hover:
        if not isinstance(h, str) or h not in known:
            fail(f"hover: expected columns, one of {', '.join(sorted(known))}; found {h!r}", "hover")

    cats = []
    raw_cats = d.get("category", [])
    if not isinstance(raw_cats, list) or not raw_cats:
        fail("expected at least one [[category]] with a label and a query", "category")
    for i, c in enumerate(raw_cats):
        if not isinstance(c, dict) or "query" not in c:
            fail(f"category #{i + 1}: expected a label and a query", "category")
        label = str(c.get("label", f"#{i + 1}"))
        q = expr(c["query"], f"category {label!r} query", known)
        color = c.get("color", OTHER_COLOR)
        if not isinstance(color, str) or not re.fullmatch(r"#[0-9A-Fa-f]{6}|[a-z]+", color):
            fail(f"category {label!r}: color: expected \"#rrggbb\" or a CSS colour name", str(color))
        cb = c.get("color_by")
        if cb is not None and (not isinstance(cb, str) or cb not in known):
            fail(f"category {label!r}: color_by: expected a column; found {cb!r}", str(cb))
        bad = set(c) - {"label", "query", "color", "color_by"}
        if bad:
            fail(f"category {label!r}: unknown setting {sorted(bad)[0]!r}: expected label, query, color, color_by", sorted(bad)[0])
        cats.append(Category(label, q, color, cb))

    name = d.get("name", pathlib.Path(path).stem)
    return View(name=name, title=d.get("title", name), shape=shape, events=events, begin=begin, end=end,
                where=where, derive=derives, categories=cats, hover=list(hover), source=path)


def _is_event(e) -> bool:
    """An event name, or an event id."""
    return isinstance(e, str) or (isinstance(e, int) and not isinstance(e, bool))


def _is_event_or_events(v) -> bool:
    return _is_event(v) or (isinstance(v, list) and bool(v) and all(_is_event(e) for e in v))


def _as_list(v):
    return [v] if isinstance(v, (str, int)) else list(v)


# ---------------------------------------------------------------- applying

def _id_mask(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Rows whose event id is one of `wanted` (a lookup table: event ids are small)."""
    top = int(ids.max()) if len(ids) else 0
    if top >= 1 << 20:
        return np.isin(ids, wanted)
    lut = np.zeros(top + 1, dtype=bool)
    wanted = wanted[wanted <= top]
    lut[wanted] = True
    return lut[ids]


def _next_same(cpu, ids, col, fill):
    """For each row, `col` of the next row with the same id on the same CPU."""
    n = len(cpu)
    out = np.full(n, fill, dtype=np.float64 if np.isnan(fill) else col.dtype)
    if n < 2:
        return out
    if (ids == ids[0]).all():
        order = None
        same = cpu[1:] == cpu[:-1]
        out[:-1][same] = col[1:][same]
        return out
    key = cpu.astype(np.int64) * 65536 + ids.astype(np.int64)
    order = np.argsort(key, kind="stable")
    k, c = key[order], col[order]
    same = k[1:] == k[:-1]
    tmp = np.full(n, fill, dtype=out.dtype)
    tmp[:-1][same] = c[1:][same]
    out[order] = tmp
    return out


def _pair(cpu, ids, col, begin_ids, end_ids):
    """For begin rows, `col` of the next end row on the same CPU; NaN elsewhere."""
    n = len(cpu)
    out = np.full(n, np.nan)
    is_end = np.isin(ids, end_ids)
    idx = np.where(is_end, np.arange(n), n)
    # nxt[i]: the first end row strictly after i.
    nxt = np.minimum.accumulate(idx[::-1])[::-1]
    nxt = np.append(nxt[1:], n)
    beg = np.isin(ids, begin_ids) & (nxt < n)
    j = nxt[beg]
    ok = cpu[j] == cpu[beg]
    rows = np.flatnonzero(beg)[ok]
    out[rows] = col[j[ok]]
    return out


def _deferrable(view: View) -> set:
    """Derived columns that only hover shows: computed later, for the rows in
    view (Fork/wait, section 3.2: what is outside the local view is
    not computed). Columns that need their neighbours (next, pair) never are."""
    needed = {view.begin, view.end}
    if view.where is not None:
        needed |= view.where.names
    for c in view.categories:
        needed |= c.query.names
        if c.color_by:
            needed.add(c.color_by)
    by_name = {dv.name: dv for dv in view.derive}
    for dv in reversed(view.derive):
        if dv.name in needed or dv.kind in ("next", "pair"):
            needed.add(dv.name)
            if dv.kind == "expr":
                needed |= dv.expr.names
            elif dv.kind in ("next", "comm_of"):
                needed.add(dv.arg)
            elif dv.kind == "pair":
                needed.add(dv.arg["column"])
    return {n for n in by_name if n not in needed}


def _derive(derives, data: TraceData, env: dict, skip=frozenset()):
    for dv in derives:
        if dv.name in skip:
            continue
        if dv.kind == "expr":
            v = dv.expr.eval(env)
            env[dv.name] = np.broadcast_to(np.asarray(v), env["ts"].shape).copy() if np.ndim(v) == 0 else v
        elif dv.kind == "next":
            col = np.asarray(env[dv.arg])
            fill = float(data.end) if dv.arg == "ts" else np.nan
            env[dv.name] = _next_same(env["cpu"], env["id"], col, fill)
        elif dv.kind == "comm_of":
            env[dv.name] = data.comm_of(env[dv.arg], env["ts"])
        elif dv.kind == "frequency":
            env[dv.name] = data.frequency_at(env["cpu"], env["ts"])
        elif dv.kind == "pair":
            col = np.asarray(env[dv.arg["column"]], dtype=np.float64)
            env[dv.name] = _pair(env["cpu"], env["id"], col, data.ids(dv.arg["begin"]), data.ids(dv.arg["end"]))


def complete(layer: Layer, data: TraceData, rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` of a layer's frame with the deferred (hover-only) columns added."""
    todo = [dv for dv in layer.view.derive if dv.name in layer.deferred]
    if not todo or len(rows) == 0:
        out = rows.copy()
        for dv in todo:
            out[dv.name] = np.zeros(0)
        return out
    env = {k: rows[k].to_numpy() for k in ("ts", "cpu", "pid", "id", "a", "b")}
    env["cpu"] = env["cpu"].astype(np.uint32)
    env["event"] = data.event_labels(env["id"])
    for k in rows.columns:
        if k not in env and k not in ("begin", "end", "cat"):
            env[k] = rows[k].to_numpy() if not isinstance(rows[k].dtype, pd.CategoricalDtype) else rows[k].array
    env.update(data.consts)
    _derive(todo, data, env)
    out = rows.copy()
    for dv in todo:
        out[dv.name] = env[dv.name]
    return out


def apply(view: View, data: TraceData, start: Optional[int] = None, end: Optional[int] = None) -> Layer:
    """Evaluate a view over loaded data. `start`/`end` (ns from the first event)
    keep only rows that reach into the window, after derivation, so that a
    segment that began before the window still shows."""
    c = data.cols
    if view.events is not None and set(view.events) == {"RQ_SIZE"} and data.runqueue_derived:
        c = data.derived_runqueue()
    if view.events is not None:
        wanted = list(view.events)
        # Pair ends are inputs too, though not listed.
        for dv in view.derive:
            if dv.kind == "pair":
                wanted += dv.arg["begin"] + dv.arg["end"]
        m = _id_mask(c["id"], data.ids(wanted))
        take = np.flatnonzero(m)
        env = {k: v[take] for k, v in c.items()}
    else:
        env = dict(c)
    env["event"] = data.event_labels(env["id"])
    env.update(data.consts)
    deferred = _deferrable(view)
    _derive(view.derive, data, env, skip=deferred)
    keep = np.ones(len(env["ts"]), dtype=bool)
    if view.where is not None:
        keep &= np.asarray(view.where.eval(env), dtype=bool)
    b = np.asarray(env[view.begin], dtype=np.float64)
    e = np.asarray(env[view.end], dtype=np.float64)
    keep &= ~np.isnan(b) & ~np.isnan(e)
    if start is not None:
        keep &= e >= start
    if end is not None:
        keep &= b < end

    # Categories: the first whose query holds.
    n = len(keep)
    which = np.full(n, -1, dtype=np.int64)
    for ci, cat in enumerate(view.categories):
        free = keep & (which < 0)
        if not free.any():
            break
        q = cat.query.eval(env)
        q = np.broadcast_to(np.asarray(q, dtype=bool), (n,))
        which[free & q] = ci
    keep &= which >= 0
    labels, colors, codes = [], {}, np.full(n, -1, dtype=np.int64)
    for ci, cat in enumerate(view.categories):
        rows = keep & (which == ci)
        if cat.color_by is None:
            codes[rows] = len(labels)
            labels.append(cat.label)
            colors[cat.label] = cat.color
            continue
        col = env[cat.color_by]
        ridx = np.flatnonzero(rows)
        if not len(ridx):
            continue
        if isinstance(col, pd.Categorical):
            vcodes, vnames = col.codes[ridx], [str(x) for x in col.categories]
        else:
            vcodes, uniq = pd.factorize(np.asarray(col)[ridx])
            vnames = [str(x) for x in uniq]
        # The values that cover the most time (or rows, for marks) get colours.
        weight = (e - b)[ridx] if view.shape == "segments" else None
        total = np.bincount(vcodes, weights=weight, minlength=len(vnames))
        top = np.argsort(-total, kind="stable")[:TOP_VALUES]
        top = top[total[top] > 0]
        remap = np.full(len(vnames) + 1, -1, dtype=np.int64)
        for k, vc in enumerate(top.tolist()):
            v = vnames[vc]
            lab = v if v not in colors else f"{cat.label}: {v}"
            remap[vc] = len(labels)
            labels.append(lab)
            colors[lab] = PALETTE[k % len(PALETTE)]
        sub = remap[vcodes]
        if (sub < 0).any():
            other = f"{cat.label}: other"
            sub[sub < 0] = len(labels)
            labels.append(other)
            colors[other] = OTHER_COLOR
        codes[ridx] = sub
    # Rows kept: all of them (views, no copy) or a selection.
    idx = slice(None) if keep.all() else np.flatnonzero(keep)
    cpu = np.asarray(env["cpu"])[idx].astype(np.int32)
    cols = {"cpu": cpu, "begin": b[idx], "end": e[idx]}
    cols["cat"] = pd.Categorical.from_codes(codes[idx], categories=labels) if labels else pd.Categorical([])
    cols["ts"] = env["ts"][idx]
    cols["id"] = env["id"][idx]
    for h in ["pid", "event", "a", "b"] + [x for x in view.hover if x not in ("pid", "event", "a", "b") and x not in deferred]:
        v = env[h]
        cols[h] = v[idx] if isinstance(v, (np.ndarray, pd.Categorical)) else np.broadcast_to(v, cpu.shape)
    # Needed derived columns the categories used stay too (e.g. task).
    for dv in view.derive:
        if dv.name not in cols and dv.name not in deferred and dv.name in env:
            v = env[dv.name]
            if isinstance(v, (np.ndarray, pd.Categorical)) and len(v) == n:
                cols[dv.name] = v[idx]
    # One frame over the columns as they are: pandas would otherwise copy
    # each column and stack those of a type together (a second copy).
    frame = pd.DataFrame(cols, copy=False)
    return Layer(view, frame, colors, deferred)
