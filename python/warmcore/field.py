# SPDX-License-Identifier: GPL-2.0-only
"""``warmcore field``: a field study's results ranked per machine and workload.

Reads the results.parquet that ``warmcore field`` (or ``warmcore sweep`` on
workloads/sweeps/field.toml) wrote, takes the median of every figure over
the seeds, ranks the schedulers of each machine and workload by the
workload's own measure in its direction, and writes DIR/field.md (one table
per workload, then who wins where, with the figures that differ most from
the runner-up and from the baseline) and DIR/field.png (each scheduler's
measure relative to the winner's, one panel per workload).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from warmcore import output  # noqa: E402
from warmcore.sweep_plot import load, save_panels  # noqa: E402

# The figures of the table: column of results.parquet, heading, and how to
# show a value. Each is optional: a study that does not keep one shows "-".
FIGURES = [
    ("energy_j", "energy J", lambda v: f"{v:.1f}"),
    ("inversions.count", "inversions", lambda v: f"{v:.0f}"),
    ("underload_per_s", "underload/s", lambda v: f"{v:.1f}"),
    ("wakeup_latency_ns.p99", "wake-up p99", lambda v: _duration(v)),
    ("cpus_used", "CPUs used", lambda v: f"{v:.0f}"),
    ("migrations", "migrations", lambda v: f"{v:.0f}"),
]

# The figures that explain a ranking (what the schedulers decided), with how
# to say that the winner has more or less of them.
# A count below its floor in both schedulers says nothing (1 migration
# against none is not a reason).
DECISIONS = [
    ("cpus_used", "CPUs used", 0),
    ("underload_per_s", "underload per second", 1.0),
    ("inversions.count", "frequency inversions", 10),
    ("migrations", "migrations", 10),
    ("wakeup_latency_ns.p99", "wake-up latency p99", 0),
    ("energy_j", "energy", 0),
]


def _duration(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} us"


def _measure(name: str, v: float) -> str:
    if name.endswith("_ns"):
        return _duration(v)
    if name.endswith("_us"):
        return _duration(v * 1e3)
    return f"{v:.4g}"


def finished(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.Expr, pl.Expr]:
    """The study's rows (with a `partial` column, which a study without any
    run cut short may lack), the runs that ran (neither failed nor
    ejected) and those of them that finished their workload (not cut short
    at the study's limit of events or simulated time)."""
    if "partial" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("partial"))
    ran = pl.col("error").is_null() & ~pl.col("ejected").fill_null(False)
    return df, ran, ran & pl.col("partial").is_null()


def summarize(df: pl.DataFrame) -> pl.DataFrame:
    """One row per machine, governor, workload and scheduler: the median of each figure
    over the seeds that finished, with the counts of runs, failures,
    ejections and runs cut short. A run cut short (stopped at the study's
    limit of events or simulated time: the report's `partial`) did not
    finish its workload: its completion time is when it was stopped, so it
    is counted, never ranked."""
    figures = [c for c, _, _ in FIGURES if c in df.columns]
    df, ran, ok = finished(df)
    return (
        df.group_by(["machine", "governor", "workload", "policy"], maintain_order=True)
        .agg(
            pl.col("metric_name").drop_nulls().first(),
            pl.col("metric_better").drop_nulls().first(),
            pl.col("metric.value").filter(ok).median().alias("measure"),
            *[pl.col(c).filter(ok).median() for c in figures],
            pl.len().alias("runs"),
            pl.col("error").is_not_null().sum().alias("failed"),
            pl.col("ejected").fill_null(False).sum().alias("ejected"),
            (ran & pl.col("partial").is_not_null()).sum().alias("cut"),
        )
    )


def ranked(part: pl.DataFrame) -> list[dict]:
    """The schedulers of one machine and workload, best first; those with no
    finished run last."""
    rows = part.to_dicts()
    higher = any(r["metric_better"] == "higher" for r in rows)
    done = [r for r in rows if r["measure"] is not None]
    done.sort(key=lambda r: -r["measure"] if higher else r["measure"])
    return done + [r for r in rows if r["measure"] is None]


def gain_pct(best: dict, other: dict) -> float:
    """How much better `best` is than `other`, in percent of `other`, in the
    measure's direction."""
    a, b = best["measure"], other["measure"]
    if not b:
        return 0.0
    return (a - b) / b * 100 if best["metric_better"] == "higher" else (b - a) / b * 100


def why(best: dict, other: dict) -> str:
    """The decision figures on which `best` and `other` differ most, as words."""
    diffs = []
    for col, words, floor in DECISIONS:
        a, b = best.get(col), other.get(col)
        if a is None or b is None or max(abs(a), abs(b)) <= floor:
            continue
        rel = (a - b) / max(abs(a), abs(b))
        if abs(rel) >= 0.01:
            diffs.append((abs(rel), col, words, a, b))
    diffs.sort(reverse=True)
    parts = []
    for _, col, words, a, b in diffs[:3]:
        show = next(f for c, _, f in FIGURES if c == col)
        parts.append(f"{words} {show(a)} against {show(b)}")
    return "; ".join(parts) or "no decision figure differs by 1 % or more"


def versus(best: dict, other: dict) -> str:
    gain = gain_pct(best, other)
    if gain < 0.1:
        return f"tied with {other['policy']} (within 0.1 %)"
    return f"{gain:.1f} % better than {other['policy']} ({why(best, other)})"


def report(summary: pl.DataFrame, baseline: str) -> str:
    lines = ["# The field table", ""]
    lines.append(
        "Each row is the median over the seeds that finished; a failed or ejected run, or one cut short at the "
        "study's limit of events or simulated time (`max_events`, `max_time`), is counted, not averaged. "
        "Rank 1 is best by the workload's own measure. Frequency inversions: Fewer Cores, More Hertz, section 2; "
        "underload: Nest, section 5.2."
    )
    wins = []
    groups = summary.partition_by(["machine", "governor", "workload"], as_dict=True, maintain_order=True)
    several = summary["governor"].n_unique() > 1
    for (machine, governor, workload), part in groups.items():
        rows = ranked(part)
        name = rows[0]["metric_name"] or "measure"
        better = rows[0]["metric_better"] or "lower"
        # A study of one governor keeps the plain heading; of several, each table names its own.
        machine = f"{machine}, {governor}" if several else machine
        lines += ["", f"## {workload} on {machine}", ""]
        head = ["rank", "scheduler", f"{name} ({better} is better)", "vs best"] + [h for c, h, _ in FIGURES if c in part.columns] + ["runs", "failed", "ejected", "cut short"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        best = rows[0]
        for i, r in enumerate(rows, 1):
            measure = "-" if r["measure"] is None else _measure(name, r["measure"])
            if r["measure"] is None or best["measure"] is None:
                vs = "-"
            elif r is best:
                vs = "best"
            else:
                vs = f"{-gain_pct(best, r):+.1f} %"
            figs = ["-" if r.get(c) is None or (isinstance(r[c], float) and math.isnan(r[c])) else f(r[c]) for c, _, f in FIGURES if c in part.columns]
            lines.append("| " + " | ".join([str(i), r["policy"], measure, vs] + figs + [str(r["runs"]), str(r["failed"]), str(r["ejected"]), str(r["cut"])]) + " |")
        if best["measure"] is None:
            cut = sum(r["cut"] for r in rows)
            wins.append(f"- {workload} on {machine}: no scheduler finished"
                        + (f" ({cut} runs cut short: raise the spec's max_events or max_time)." if cut else "."))
            continue
        text = f"- **{workload} on {machine}: {best['policy']}**"
        if len(rows) > 1 and rows[1]["measure"] is not None:
            text += f", {versus(best, rows[1])}"
        base = next((r for r in rows if r["policy"] == baseline), None)
        if base is not None and base is not best and base is not rows[1] and base["measure"] is not None:
            text += f"; {versus(best, base)}"
        wins.append(text + ".")
    lines += ["", "## Who wins where", "", f"The winner of each workload, against the runner-up and the baseline {baseline}, with the decision figures that differ most.", ""]
    lines += wins
    return "\n".join(lines) + "\n"


def draw(summary: pl.DataFrame, out: pathlib.Path) -> int:
    """Each scheduler's measure relative to the winner's (1 = the winner),
    one panel per machine and workload, best at the top."""
    groups = summary.partition_by(["machine", "governor", "workload"], as_dict=True, maintain_order=True)
    several = summary["governor"].n_unique() > 1
    n = len(groups)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(5.5 * cols, 0.35 * summary["policy"].n_unique() * rows + 1.5 * rows), squeeze=False)
    for k, ((machine, governor, workload), part) in enumerate(groups.items()):
        ax = axs[k // cols][k % cols]
        rs = [r for r in ranked(part) if r["measure"] is not None]
        if not rs:
            ax.axis("off")
            continue
        best = rs[0]["measure"]
        higher = rs[0]["metric_better"] == "higher"
        rel = [(best / r["measure"] if higher else r["measure"] / best) if r["measure"] and best else float("nan") for r in rs]
        names = [r["policy"] for r in rs]
        ax.barh(range(len(rs)), rel, color=["tab:green"] + ["tab:blue"] * (len(rs) - 1))
        ax.set_yticks(range(len(rs)), names, fontsize="small")
        ax.invert_yaxis()
        ax.axvline(1.0, color="black", linewidth=0.8)
        # A panel whose worst is many times the winner (schbench's p99 under a
        # scheduler that stacks threads) would flatten every other bar to 1.
        wide = max((x for x in rel if x == x), default=1.0) > 10
        if wide:
            ax.set_xscale("log")
        scale = ", log scale" if wide else ""
        ax.set_xlabel(f"{rs[0]['metric_name']} relative to the winner (1 = best{scale})", fontsize="small")
        ax.set_title(f"{workload}\n{machine}" + (f", {governor}" if several else ""), fontsize="small")
    return save_panels(fig, axs, n, out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="warmcore field", description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=pathlib.Path, help="the --out directory of warmcore field or warmcore sweep")
    ap.add_argument("--baseline", default="eevdf", help="the scheduler every winner is also compared with (default eevdf, the fair class of today)")
    ap.add_argument("--goals", metavar="POLICY", help="also write DIR/goals.md: POLICY's goals against the others and the baseline (docs/warm.md, Goals)")
    ap.add_argument("--sensitive", default="", metavar="W,...", help="the frequency-sensitive workloads of --goals, as the study names them (warmcore field gives its default)")
    a = ap.parse_args(argv)
    df, _ = load(a.dir)
    if df.height == 0:
        raise SystemExit(f"warmcore: {a.dir} has no finished runs yet")
    for c in ("metric.value", "metric_name", "metric_better"):
        if c not in df.columns:
            raise SystemExit(f"warmcore: {a.dir}/results.parquet has no column {c}: keep metric.value in the study's metrics and run it again")
    summary = summarize(df)
    md = a.dir / "field.md"
    with output.replacing(md) as tmp:
        pathlib.Path(tmp).write_text(report(summary, a.baseline))
    png = a.dir / "field.png"
    n = draw(summary, png)
    print(f"{md}\n{png} ({n} panel{'s' if n != 1 else ''})")
    if a.goals:
        from warmcore import goals  # it reads this module's definitions

        sensitive = [w for w in a.sensitive.split(",") if w]
        keys, judged = goals.judge_all(df, a.goals, a.baseline, sensitive)
        path = a.dir / "goals.md"
        with output.replacing(path) as tmp:
            pathlib.Path(tmp).write_text(goals.report(keys, judged, a.goals, a.baseline, sensitive))
        goals.draw(judged, a.goals, a.dir / "goals.png")
        print(f"{path}\n{a.dir / 'goals.png'}\n{goals.summary_line(judged, a.goals)}")


if __name__ == "__main__":
    sys.exit(main())
