# SPDX-License-Identifier: GPL-2.0-only
"""``warmcore plot sweep``: a sweep's results.parquet as a picture.

A metric (y) against an axis (x): one line per value of ``--by`` (the mean
over seeds, with their range shaded), or with ``--heat`` a heat map of the
mean over x and ``--by``; one panel per combination of the other axes that
vary in the table, so that no two different runs are averaged together
except over seeds.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from warmcore import output, status  # noqa: E402



def refused(msg: str) -> SystemExit:
    """The one line of a usage error (a results file or column that is not
    there) and its status (docs/conventions.md, Exit statuses)."""
    print(f"warmcore: {msg}", file=sys.stderr)
    return SystemExit(status.USAGE)


# Spelled-out forms that repeat an axis of their own (workload = name + parameters).
DERIVED = {"workload_name", "policy_name"}


def load(path: pathlib.Path) -> tuple[pl.DataFrame, list[str]]:
    """The table, and its axis columns (written by warmcore sweep into the
    file's metadata: every other column describes or measures a run)."""
    f = path / "results.parquet" if path.is_dir() else path
    if not f.is_file():
        raise refused(f"no results at {f}: give the --out directory of warmcore sweep")
    meta = pq.read_schema(f).metadata or {}
    if b"warmcore.axes" not in meta:
        raise refused(f"{f} does not say which columns are axes: run warmcore sweep again on its directory to rewrite it")
    return pl.read_parquet(f), json.loads(meta[b"warmcore.axes"])


def summarize(df: pl.DataFrame, keys: list[str], y: str) -> pl.DataFrame:
    """Mean, min and max of y over the seeds of each combination of keys."""
    return (
        df.filter(pl.col(y).is_not_null())
        .group_by(keys, maintain_order=True)
        .agg(pl.col(y).mean().alias("mean"), pl.col(y).min().alias("lo"), pl.col(y).max().alias("hi"))
        .sort(keys)
    )


def panels(df: pl.DataFrame, axes: list[str], x: str, by: str | None) -> list[str]:
    """The other axes that vary, seeds aside: one panel per combination of
    their values. The workload (or policy) string, its name and its
    parameter axes say the same thing at different detail: when x or --by
    uses one of them, the others are not panels."""
    used = [u for u in (x, by) if u]
    family = {u.split(".")[0].removesuffix("_name") for u in used}
    return [
        a for a in axes
        if a not in used and a != "seed" and a not in DERIVED and df[a].n_unique() > 1
        and a.split(".")[0] not in family & {"workload", "policy"}
    ]


def draw(df: pl.DataFrame, axes: list[str], x: str, y: str, by: str | None, heat: bool, out: pathlib.Path) -> int:
    for c in (x, y, by):
        if c is not None and c not in df.columns:
            raise refused(f"results.parquet has no column '{c}'; columns: {', '.join(df.columns)}")
    if not df[y].dtype.is_numeric():
        raise refused(f"--y {y} is not a number column")
    # Runs without the x axis (a policy that lacks the parameter) have no place on it.
    df = df.filter(pl.col(x).is_not_null())
    if df.height == 0:
        raise refused(f"no finished run has a value for {x}")
    facets = panels(df, axes, x, by)
    groups = df.partition_by(facets, as_dict=True, maintain_order=True) if facets else {(): df}
    n = len(groups)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for k, (key, part) in enumerate(groups.items()):
        ax = axs[k // cols][k % cols]
        title = ", ".join(f"{f}={v}" for f, v in zip(facets, key)) if facets else ""
        if heat:
            s = summarize(part, [by, x], y)
            xs = s[x].unique(maintain_order=True).sort().to_list()
            bs = s[by].unique(maintain_order=True).sort().to_list()
            grid = [[None] * len(xs) for _ in bs]
            for row in s.iter_rows(named=True):
                grid[bs.index(row[by])][xs.index(row[x])] = row["mean"]
            im = ax.imshow([[float("nan") if v is None else v for v in r] for r in grid], aspect="auto", origin="lower")
            ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=45, ha="right")
            ax.set_yticks(range(len(bs)), [str(v) for v in bs])
            ax.set_ylabel(by)
            fig.colorbar(im, ax=ax, label=y)
        else:
            lines = part.partition_by(by, as_dict=True, maintain_order=True) if by else {("",): part}
            numeric_x = part[x].dtype.is_numeric()
            for (label,), line in lines.items():
                s = summarize(line, [x], y)
                xs = s[x].to_list() if numeric_x else [str(v) for v in s[x].to_list()]
                ax.plot(xs, s["mean"].to_list(), marker="o", label=str(label) if by else None)
                ax.fill_between(xs, s["lo"].to_list(), s["hi"].to_list(), alpha=0.15)
            ax.set_ylabel(y)
            if by:
                ax.legend(title=by, fontsize="small")
            if not numeric_x:
                ax.tick_params(axis="x", rotation=30)
        ax.set_xlabel(x)
        ax.set_title(title, fontsize="small")
    return save_panels(fig, axs, n, out)


def save_panels(fig, axs, n: int, out: pathlib.Path) -> int:
    """Blank the grid's unused panels and write the picture as PNG under
    the output rules; the number of panels drawn."""
    rows, cols = len(axs), len(axs[0])
    for k in range(n, rows * cols):
        axs[k // cols][k % cols].axis("off")
    fig.tight_layout()
    with output.replacing(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return n


def main(argv=None):
    ap = argparse.ArgumentParser(prog="warmcore plot sweep", description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=pathlib.Path)
    ap.add_argument("--x", required=True)
    ap.add_argument("--y", required=True)
    ap.add_argument("--by")
    ap.add_argument("--heat", action="store_true")
    ap.add_argument("-o", "--output", type=pathlib.Path)
    a = ap.parse_args(argv)
    df, axes = load(a.dir)
    if df.height == 0:
        raise refused(f"{a.dir} has no finished runs yet")
    base = a.dir if a.dir.is_dir() else a.dir.parent
    out = a.output or base / f"{a.y}-by-{a.x}.png".replace("/", "_")
    try:
        n = draw(df, axes, a.x, a.y, a.by, a.heat, out)
    except ValueError as e:
        raise refused(f"{e}")
    print(f"{out} ({n} panel{'s' if n != 1 else ''})")


if __name__ == "__main__":
    sys.exit(output.interruptible(main))
