# SPDX-License-Identifier: GPL-2.0-only
"""``warmcore field --goals POLICY``: one scheduler's goals, read from a
field study's results (docs/warm.md, Goals).

Each goal compares means over the seeds that finished, on the same machine,
governor and workload:

- **best**: the workload's measure within 2 % of the best of every other
  scheduler;
- **baseline**: never more than 2 % worse than the baseline (eevdf);
- **sensitive** (the frequency-sensitive workloads only): at least as fast
  as the best of the others, with no more frequency inversions than it;
- **energy**: no higher than the baseline's, and lower on the sensitive
  workloads, which are the light ones (a chain of one or two tasks at a
  time);
- **p99**: the wake-up latency p99 no worse than the baseline's by more
  than 10 %.

A difference smaller than the seeds' own spread (the larger of the two
schedulers' max - min) is a tie: a tie meets a bound ("within", "no
higher", "at least as fast") and misses a strict one ("lower").
"""

from __future__ import annotations

import polars as pl

from warmcore.field import _measure, finished

GOALS = ["best", "baseline", "sensitive", "energy", "p99"]
FIGURES = ["metric.value", "energy_j", "inversions.count", "wakeup_latency_ns.p99"]


def means(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Mean and spread (max - min) of each figure over the finished seeds."""
    figures = [c for c in FIGURES if c in df.columns]
    df, _, ok = finished(df)
    return df.filter(ok).group_by(keys + ["policy"], maintain_order=True).agg(
        pl.col("metric_name").drop_nulls().first(),
        pl.col("metric_better").drop_nulls().first(),
        pl.len().alias("seeds"),
        *[pl.col(c).mean().alias(c) for c in figures],
        *[(pl.col(c).max() - pl.col(c).min()).alias(c + ".spread") for c in figures],
    )


def worse_pct(a: dict, b: dict, col: str, higher: bool) -> float:
    """How much worse a's figure is than b's, in percent of b's (negative:
    better)."""
    x, y = a[col], b[col]
    if not y:
        return 0.0 if not x else float("inf") * (-1 if higher else 1)
    return (y - x) / y * 100 if higher else (x - y) / y * 100


def tied(a: dict, b: dict, col: str) -> bool:
    return abs(a[col] - b[col]) < max(a[col + ".spread"] or 0, b[col + ".spread"] or 0)


def better_or_tied(a: dict, b: dict, col: str, higher: bool, slack_pct: float = 0.0) -> bool:
    """a no worse than b by more than slack_pct, or a tie."""
    return worse_pct(a, b, col, higher) <= slack_pct or tied(a, b, col)


def judge(rows: list[dict], policy: str, baseline: str, sensitive: bool) -> dict | None:
    """The goals of `policy` among the schedulers of one machine, governor
    and workload; None when it has no finished run."""
    me = next((r for r in rows if r["policy"] == policy), None)
    others = [r for r in rows if r["policy"] != policy and r["metric.value"] is not None]
    if me is None or me["metric.value"] is None or not others:
        return None
    higher = me["metric_better"] == "higher"
    best = max(others, key=lambda r: r["metric.value"] if higher else -r["metric.value"])
    base = next((r for r in others if r["policy"] == baseline), None)
    out = {"me": me, "best": best, "base": base, "goals": {}}
    g = out["goals"]
    g["best"] = better_or_tied(me, best, "metric.value", higher, 2.0)
    if base is not None:
        g["baseline"] = better_or_tied(me, base, "metric.value", higher, 2.0)
    if sensitive:
        fast = better_or_tied(me, best, "metric.value", higher)
        mine, theirs = me.get("inversions.count"), best.get("inversions.count")
        fewer = mine is None or theirs is None or mine <= theirs
        g["sensitive"] = fast and fewer
    if base is not None and me.get("energy_j") is not None and base.get("energy_j") is not None:
        if sensitive:
            g["energy"] = me["energy_j"] < base["energy_j"] and not tied(me, base, "energy_j")
        else:
            g["energy"] = better_or_tied(me, base, "energy_j", False)
    if base is not None and me.get("wakeup_latency_ns.p99") is not None and base.get("wakeup_latency_ns.p99") is not None:
        g["p99"] = worse_pct(me, base, "wakeup_latency_ns.p99", False) <= 10.0
    return out


def tally(judged: list[tuple[dict, dict]], name: str) -> tuple[int, int]:
    """Of the cases where goal `name` applies, how many met it, and how many
    there are."""
    vals = [j["goals"][name] for _, j in judged if name in j["goals"]]
    return sum(vals), len(vals)


def summary_line(judged: list[tuple[dict, dict]], policy: str) -> str:
    """One line: each goal's count met of those judged."""
    counts = [(name, *tally(judged, name)) for name in GOALS]
    return f"{policy}'s goals met: " + ", ".join(f"{name} {met}/{n}" for name, met, n in counts if n)


def _pct(v: float) -> str:
    return f"{v:+.1f} %" if v == v and abs(v) != float("inf") else "-"


def _mark(g: dict, name: str) -> str:
    return "-" if name not in g else ("met" if g[name] else "**missed**")


def judge_all(df: pl.DataFrame, policy: str, baseline: str, sensitive: list[str]) -> tuple[list[str], list[tuple[dict, dict]]]:
    """The goals of `policy` on each machine, governor and workload of the
    study, in the study's order."""
    if policy not in set(df["policy"].to_list()):
        raise SystemExit(f"warmcore: --goals {policy}: no run of that scheduler in the study; name one of its policies ({', '.join(sorted(set(df['policy'].to_list())))})")
    keys = ["machine", "governor", "workload"] if "governor" in df.columns else ["machine", "workload"]
    judged = []
    for key, part in means(df, keys).partition_by(keys, as_dict=True, maintain_order=True).items():
        j = judge(part.to_dicts(), policy, baseline, key[-1] in sensitive)
        if j is not None:
            judged.append((dict(zip(keys, key)), j))
    return keys, judged


def _label(workload: str) -> str:
    """A workload as a short label: a file parameter by its file's name."""
    name, _, params = workload.partition(":")
    parts = [k + "=" + v.rsplit("/", 1)[-1] for k, _, v in (p.partition("=") for p in params.split(",") if p)]
    return name + (":" + ",".join(parts) if parts else "")


def draw(judged: list[tuple[dict, dict]], policy: str, out) -> None:
    """How far the policy is from the best of the others on each workload
    (a row) and machine and governor (a column): green ahead, red behind,
    the number of goals missed under the figure."""
    import matplotlib.pyplot as plt

    from warmcore.sweep_plot import save_panels

    rows = list(dict.fromkeys(k["workload"] for k, _ in judged))
    cols = list(dict.fromkeys(", ".join(str(v) for kk, v in k.items() if kk != "workload") for k, _ in judged))
    grid = [[float("nan")] * len(cols) for _ in rows]
    notes = [[""] * len(cols) for _ in rows]
    for k, j in judged:
        r, c = rows.index(k["workload"]), cols.index(", ".join(str(v) for kk, v in k.items() if kk != "workload"))
        v = worse_pct(j["me"], j["best"], "metric.value", j["me"]["metric_better"] == "higher")
        grid[r][c] = v
        miss = sum(1 for g in j["goals"].values() if g is False)
        notes[r][c] = f"{v:+.1f} %" + (f"\n{miss} missed" if miss else "")
    fig, ax = plt.subplots(figsize=(1.6 * len(cols) + 5, 0.45 * len(rows) + 2), squeeze=False)
    a = ax[0][0]
    im = a.imshow(grid, cmap="RdYlGn_r", vmin=-10, vmax=10, aspect="auto")
    for r in range(len(rows)):
        for c in range(len(cols)):
            a.text(c, r, notes[r][c], ha="center", va="center", fontsize="x-small")
    a.set_xticks(range(len(cols)), cols, rotation=30, ha="right", fontsize="small")
    a.set_yticks(range(len(rows)), [_label(w) for w in rows], fontsize="small")
    a.set_title(f"{policy} against the best of the others\n(% of its measure; + is behind)", fontsize="small")
    fig.colorbar(im, ax=a, shrink=0.6, label="% behind the best (clipped at 10)")
    save_panels(fig, ax, 1, out)


def report(keys: list[str], judged: list[tuple[dict, dict]], policy: str, baseline: str, sensitive: list[str]) -> str:
    lines = [f"# The goals of {policy}", "", __doc__.split("\n\n", 1)[1].strip().replace("(eevdf)", f"({baseline})"), ""]
    lines += [f"Frequency-sensitive workloads: {', '.join(sensitive)}.", ""]
    lines += ["## Summary", "", "| goal | met | missed | not applicable |", "|---|---|---|---|"]
    for name in GOALS:
        met, n = tally(judged, name)
        lines.append(f"| {name} | {met} | {n - met} | {len(judged) - n} |")
    lines += ["", "Per workload, over its machines and governors (goals met / judged):", ""]
    lines += ["| workload | " + " | ".join(GOALS) + " |", "|---|" + "---|" * len(GOALS)]
    workloads = list(dict.fromkeys(k["workload"] for k, _ in judged))
    for w in workloads:
        here = [(k, j) for k, j in judged if k["workload"] == w]
        cells = [f"{met} / {n}" if n else "-" for met, n in (tally(here, name) for name in GOALS)]
        lines.append(f"| {_label(w)} | " + " | ".join(cells) + " |")
    lines += ["", "## Each machine, governor and workload", ""]
    head = [*keys, "measure", "best of the others", "vs best", f"vs {baseline}", f"energy vs {baseline}", f"p99 vs {baseline}", "inversions (best's)", *GOALS]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    missed = []
    for k, j in judged:
        me, best, base = j["me"], j["best"], j["base"]
        higher = me["metric_better"] == "higher"
        inv = "-" if me.get("inversions.count") is None else f"{me['inversions.count']:.0f} ({best['inversions.count']:.0f})"
        vs = {
            "best": _pct(worse_pct(me, best, "metric.value", higher)),
            "baseline": _pct(worse_pct(me, base, "metric.value", higher)) if base else "-",
            "energy": _pct(worse_pct(me, base, "energy_j", False)) if base and me.get("energy_j") is not None else "-",
            "p99": _pct(worse_pct(me, base, "wakeup_latency_ns.p99", False)) if base and me.get("wakeup_latency_ns.p99") is not None else "-",
        }
        cells = [*k.values(), f"{_measure(me['metric_name'] or '', me['metric.value'])} ({me['metric_name'] or 'measure'})", best["policy"],
                 vs["best"], vs["baseline"], vs["energy"], vs["p99"], inv, *[_mark(j["goals"], name) for name in GOALS]]
        lines.append("| " + " | ".join(cells) + " |")
        why = {
            "best": f"{vs['best']} against {best['policy']}",
            "baseline": f"{vs['baseline']} against {baseline}",
            "sensitive": f"{vs['best']} against {best['policy']}, inversions {inv}",
            "energy": f"energy {vs['energy']} against {baseline}",
            "p99": f"wake-up p99 {vs['p99']} against {baseline}",
        }
        for name in GOALS:
            if j["goals"].get(name) is False:
                missed.append(f"- {name}: {k['workload']} on {k['machine']}" + (f", {k['governor']}" if "governor" in k else "") + f": {why[name]}")
    lines += ["", "## Missed", ""]
    lines += missed or ["None."]
    return "\n".join(lines) + "\n"
