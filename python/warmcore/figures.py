# SPDX-License-Identifier: GPL-2.0-only
"""The figures of ``warmcore reproduce``, drawn with matplotlib.

``python -m warmcore.figures DIR`` reads DIR/figures.json (which figures, from
which runs), DIR/runs.json (every run's report) and the traces in
DIR/traces/, and writes the PNG files figures.json names:

- ``freq``: the frequency of each core over time, one panel per policy, as in
  Fewer Cores, More Hertz, Figures 1 and 7: a mark at each tick (ticks stop
  on idle cores, so a blank means idle);
- ``underload``: the underload of each 4 ms interval, as in Nest, Figure 3
  (section 5.2 defines it);
- ``speedup``: the improvement of each policy over CFS, per machine and
  workload, as in Nest Figure 5, with +-5 % lines.
"""

from __future__ import annotations

import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import warmcore  # noqa: E402
from warmcore._native import UNDERLOAD_INTERVAL_NS as INTERVAL_NS  # noqa: E402
from warmcore import output, status  # noqa: E402

WINDOW_S = 0.3  # the span of Nest Figure 3 (Nest, section 5.2)


def _cols(batch, *names):
    return [batch.column(n).to_numpy(zero_copy_only=False) for n in names]


def freq_samples(trace):
    """(time s, cpu, GHz) of every TICK with a known frequency."""
    b = trace.read(events=["TICK"], order="cpu")
    ts, cpu, a = _cols(b, "ts", "cpu", "a")
    keep = a > 0
    t0 = trace.start_ns
    return (ts[keep] - t0) / 1e9, cpu[keep], a[keep] / 1e6


def underload_series(trace):
    """(interval start s, underload) of every 4 ms interval from the first
    event: the Rust analyzer's (crates/trace/src/stats.rs), through the
    bindings, so that the figure draws the underload the report counts."""
    u = np.asarray(trace.underload(), dtype=np.int64)
    return np.arange(len(u)) * INTERVAL_NS / 1e9, u


def draw_freq(fig_spec, out_dir):
    series = fig_spec["series"]
    traces = [warmcore.open(out_dir / s["trace"]) for s in series]
    m = traces[0].machine
    lo, hi = m.get("freq_min_khz", 0) / 1e6, m.get("freq_max_khz", 0) / 1e6
    ncpu = traces[0].nr_cpus
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 2.2 + 2.2 * len(series)), squeeze=False, sharex=True)
    sc = None
    for ax, s, t in zip(axes[:, 0], series, traces):
        x, cpu, ghz = freq_samples(t)
        sc = ax.scatter(x, cpu, c=ghz, s=1.5, marker="s", cmap="plasma", vmin=lo or None, vmax=hi or None,
                        linewidths=0)
        ax.set_ylim(-1, ncpu)
        ax.set_ylabel("core")
        ax.set_title(s["label"], fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("time (s)")
    if sc is not None:
        fig.colorbar(sc, ax=axes[:, 0].tolist(), label="frequency (GHz)")
    fig.suptitle(fig_spec["title"], fontsize=11)
    save(fig, out_dir / fig_spec["file"], out_dir)
    plt.close(fig)


def draw_underload(fig_spec, out_dir):
    """One panel per policy over the first 0.3 s, as Nest Figure 3; the mean
    is over the whole run."""
    series = fig_spec["series"]
    fig, axes = plt.subplots(len(series), 1, figsize=(10, 1.2 + 1.8 * len(series)), squeeze=False, sharex=True,
                             sharey=True)
    for ax, s in zip(axes[:, 0], series):
        x, u = underload_series(warmcore.open(out_dir / s["trace"]))
        keep = x < WINDOW_S
        ax.bar(x[keep], u[keep], width=INTERVAL_NS / 1e9, align="edge", color="tab:red")
        ax.set_title(f"{s['label']}: mean {u.mean():.2f} per 4 ms interval over the run", fontsize=9, loc="left")
        ax.set_ylabel("underload")
    axes[-1, 0].set_xlabel("time (s)")
    axes[-1, 0].set_xlim(0, WINDOW_S)
    fig.suptitle(fig_spec["title"] + f", first {WINDOW_S} s", fontsize=11)
    fig.tight_layout()
    save(fig, out_dir / fig_spec["file"], out_dir)
    plt.close(fig)


def save(fig, path, out_dir):
    """A figure as PNG, under the rules of every output (warmcore.output): never
    over one of the figures' inputs, written aside and renamed, so that a
    failure or an interrupt leaves an older picture whole."""
    inputs = [out_dir / "figures.json", out_dir / "runs.json"]
    with output.replacing(path, inputs) as tmp:
        fig.savefig(tmp, dpi=110, format="png")


def improvement(base, x, lower_is_better):
    """Percent, higher is better (as `warmcore compare`)."""
    if base == 0:
        return 0.0
    return (base - x) / base * 100 if lower_is_better else (x - base) / base * 100


def draw_speedup(fig_spec, runs, out_dir):
    groups = fig_spec["groups"]
    labels = sorted({b["label"] for g in groups for b in g["bars"]})
    width = 0.8 / max(1, len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(groups) + 2), 4.5))
    for j, lab in enumerate(labels):
        xs, ys, es = [], [], []
        for gi, g in enumerate(groups):
            bar = next((b for b in g["bars"] if b["label"] == lab), None)
            if bar is None or not g["baseline"]:
                continue
            rep = [runs[i]["report"] for i in g["baseline"]]
            lower = rep[0]["metric"]["better"] == "lower"
            base = float(np.mean([r["metric"]["value"] for r in rep]))
            vals = [improvement(base, runs[i]["report"]["metric"]["value"], lower) for i in bar["runs"]]
            xs.append(gi + (j - (len(labels) - 1) / 2) * width)
            ys.append(float(np.mean(vals)))
            es.append(float(np.std(vals)))
        bars = ax.bar(xs, ys, width, yerr=es, label=lab, capsize=2)
        ax.bar_label(bars, labels=[f"{y:+.0f}" for y in ys], fontsize=6, padding=2)
    # Losses of thousands of percent and gains of a few: a linear scale up to
    # +-10 %, logarithmic beyond.
    ax.set_yscale("symlog", linthresh=10)
    for y in (5, -5):
        ax.axhline(y, color="grey", linestyle=":", linewidth=0.8)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g["label"] for g in groups], fontsize=7)
    ax.set_ylabel("improvement over CFS (%, symlog)")
    ax.legend(fontsize=7, ncol=min(4, len(labels)))
    ax.set_title(fig_spec["title"], fontsize=10)
    fig.tight_layout()
    save(fig, out_dir / fig_spec["file"], out_dir)
    plt.close(fig)


def draw_all(out_dir) -> list:
    out_dir = pathlib.Path(out_dir)
    plan = json.loads((out_dir / "figures.json").read_text())
    runs = json.loads((out_dir / "runs.json").read_text())
    written = []
    for f in plan:
        if f["kind"] == "freq":
            draw_freq(f, out_dir)
        elif f["kind"] == "underload":
            draw_underload(f, out_dir)
        elif f["kind"] == "speedup":
            draw_speedup(f, runs, out_dir)
        else:
            raise ValueError(f"{out_dir / 'figures.json'}: unknown figure kind {f['kind']!r}")
        written.append(out_dir / f["file"])
    return written


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m warmcore.figures DIR (the output directory of warmcore reproduce)", file=sys.stderr)
        return status.USAGE
    try:
        for p in draw_all(argv[0]):
            print(f"wrote {p}")
    except (OSError, ValueError, KeyError, warmcore.TraceError) as e:
        print(f"warmcore.figures: {e}", file=sys.stderr)
        return status.of(e)
    return 0


if __name__ == "__main__":
    sys.exit(output.interruptible(main))
