# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore sweep` end to end: an interrupted sweep started again, the same
rows from a real local Ray cluster as from local threads, a Ray worker killed
mid-run, files named relative to the caller's directory read by workers that
run in another, bad input, and `warmcore plot sweep`.

Ray binds its servers to the machine's network address, and tests here talk
to loopback only: Ray runs inside network and PID namespaces of its own
(`unshare`), with only loopback up; the PID namespace also ends every
process Ray started when its first process ends. The tests that join a
running cluster share one (the ray_cluster fixture), started once."""

import json
import signal
import subprocess
import time

import polars as pl
from conftest import BIN, RAY_ADDRESS, ROOT, require

SPEC = """
machines = "default"
seeds = [1, 2]
metrics = ["makespan_ns", "metric.value", "energy_j", "migrations", "policy_stats.armed"]

[[workloads]]
name = "hackbench"
groups = [1, 2]
loops = {loops}

[[policies]]
name = "cfs"

[[policies]]
name = "smove"
delay_us = {{ from = 10, to = {to}, step = 10 }}
"""


# A refused Ray address ends the command well within this, even on a loaded
# machine; only a hang reaches it.
REFUSED_WITHIN_S = 300


def spec(tmp_path, loops=20, to=30):
    p = tmp_path / "spec.toml"
    p.write_text(SPEC.format(loops=loops, to=to))
    return p


def sweep(*args, check=True, **kw):
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    r = subprocess.run([str(BIN), "sweep", *map(str, args)], capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"warmcore sweep failed ({r.returncode}): {r.stderr}")
    return r


def table(out):
    """results.parquet without wall time, which differs between runs."""
    return pl.read_parquet(out / "results.parquet").drop("wall_s")


def journal(out):
    return [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]


def test_an_interrupted_sweep_started_again_loses_and_repeats_nothing(tmp_path):
    s = spec(tmp_path, loops=400, to=200)  # 2 x 21 x 2 = 84 runs
    whole = tmp_path / "whole"
    sweep(s, "--out", whole, "--jobs", "1")
    out = tmp_path / "cut"
    p = subprocess.Popen([str(BIN), "sweep", str(s), "--out", str(out), "--jobs", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        j = out / "runs.jsonl"
        if j.exists() and j.read_text().count("\n") >= 5:
            break
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "run the same command again" in err
    first = journal(out)
    assert 5 <= len(first) < 84, len(first)
    # What the interrupted sweep wrote is a readable table of its finished runs.
    assert table(out).height == len(first)
    r = sweep(s, "--out", out, "--jobs", "1")
    assert f"{84 - len(first)} ran now, {len(first)} done before" in r.stdout, r.stdout
    keys = [x["key"] for x in journal(out)]
    assert len(keys) == 84 and len(set(keys)) == 84, "a run was done twice"
    assert table(out).equals(table(whole))


def test_ray_gives_the_rows_of_local_threads_and_survives_a_killed_worker(tmp_path, ray_cluster):
    # The rows of a sweep on a Ray cluster, a worker killed among them, must
    # be the local threads' rows. Runs of about half a second each: kill the
    # first worker seen running one.
    s = spec(tmp_path, loops=3000, to=10)
    local = tmp_path / "local-long"
    sweep(s, "--out", local)
    killed = tmp_path / "killed"
    r = ray_cluster.run(f"""
"$WC" sweep {s} --out {killed} --ray {RAY_ADDRESS} &
S=$!
i=0
while ! P=$(pgrep -f '^ray::run_one' | head -1) || [ -z "$P" ]; do
  i=$((i+1)); [ $i -lt 3000 ] || {{ echo "no Ray worker ran a task"; exit 3; }}; sleep 0.01
done
kill -9 $P
echo "killed worker $P"
wait $S
""")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "killed worker" in r.stdout
    t = table(killed)
    assert t["error"].null_count() == t.height == 8
    assert t.equals(table(local))


def test_bad_input_is_one_line_before_any_run(tmp_path):
    s = spec(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(s.read_text().replace('name = "cfs"', 'name = "cfs"\nbalance = ["on", "sideways"]'))
    r = sweep(bad, "--out", tmp_path / "o", check=False)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and f"{bad}:13:" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()
    # An address nobody answers at: one line (a hang fails at the timeout).
    r = sweep(s, "--out", tmp_path / "o2", "--ray", "127.0.0.1:1", check=False, timeout=REFUSED_WITHIN_S)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in r.stderr, r.stderr
    r = sweep(s, "--out", tmp_path / "o3", "--jobs", "-1", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr


def test_plot_sweep_draws_a_panel_per_other_axis(tmp_path):
    s = spec(tmp_path)
    out = tmp_path / "o"
    sweep(s, "--out", out)
    png = tmp_path / "p.png"
    r = subprocess.run([str(BIN), "plot", "sweep", str(out), "--x", "policy.delay_us", "--y", "makespan_ns",
                        "--by", "workload.groups", "-o", str(png)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # A metric that varies (policy_stats.armed) is not an axis: one panel.
    assert pl.read_parquet(out / "results.parquet")["policy_stats.armed"].n_unique() > 1
    assert "(1 panel)" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Without --by, each workload is a panel of its own.
    r = subprocess.run([str(BIN), "plot", "sweep", str(out), "--x", "policy.delay_us", "--y", "energy_j",
                        "-o", str(png)], capture_output=True, text=True)
    assert r.returncode == 0 and "(2 panels)" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([str(BIN), "plot", "sweep", str(out), "--x", "nope", "--y", "energy_j"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no column 'nope'" in r.stderr


def test_reproduce_on_ray_gives_the_claims_of_local_threads(tmp_path, ray_cluster):
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    local = tmp_path / "local"
    # Two claims whose runs write traces: 63 runs of a few seconds in all.
    r = subprocess.run([str(BIN), "reproduce", "--quick", "--only", "1,4", "--out", str(local)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ray = tmp_path / "ray"
    r = ray_cluster.run(f'"$WC" reproduce --quick --only 1,4 --out {ray} --ray {RAY_ADDRESS}')
    assert r.returncode == 0, r.stderr
    assert (ray / "claims.json").read_text() == (local / "claims.json").read_text()
    # Every run's report but its wall time, and the traces the runs wrote.
    def runs(d):
        out = json.loads((d / "runs.json").read_text())
        for x in out:
            (x.get("report") or {}).pop("wall_ns", None)
        return out
    assert runs(ray) == runs(local)
    traces = sorted(p.name for p in (local / "traces").iterdir())
    assert traces and traces == sorted(p.name for p in (ray / "traces").iterdir())
    assert all((ray / "traces" / t).read_bytes() == (local / "traces" / t).read_bytes() for t in traces)


def test_a_sweep_joins_a_running_ray_cluster_and_auto_starts_its_own_beside_it(tmp_path, ray_cluster):
    s = spec(tmp_path)
    local = tmp_path / "local"
    sweep(s, "--out", local)
    joined, auto = tmp_path / "joined", tmp_path / "auto"
    r = ray_cluster.run(f"""
"$WC" sweep {s} --out {joined} --ray {RAY_ADDRESS}
"$WC" sweep {s} --out {auto} --ray auto --jobs 2
""")
    assert r.returncode == 0, r.stdout + r.stderr
    assert table(joined).equals(table(local))
    assert table(auto).equals(table(local))


def test_a_sweep_on_ray_reads_the_files_its_spec_names_from_the_callers_directory(tmp_path, ray_cluster):
    # A machine file and a workload file named relative to the directory
    # the sweep runs in; the cluster, and so its workers, started in another
    # (the fixture's).
    here = tmp_path / "here"
    here.mkdir()
    (here / "m.toml").write_text((ROOT / "machines" / "ryzen5-3400g.toml").read_text())
    (here / "w.toml").write_text((ROOT / "workloads" / "pipeline.toml").read_text())
    (here / "spec.toml").write_text('machines = "m.toml"\nseeds = [1, 2]\n'
                                    '[[workloads]]\nname = "w.toml"\n[[policies]]\nname = "cfs"\n')
    sweep("spec.toml", "--out", "local", cwd=here)
    r = ray_cluster.run(f"""
cd {here}
"$WC" sweep spec.toml --out joined --ray {RAY_ADDRESS}
""")
    assert r.returncode == 0, r.stdout + r.stderr
    t = table(here / "joined")
    assert t.height == 2 and t["error"].null_count() == 2, t["error"].to_list()
    assert t.equals(table(here / "local"))
    # The whole reports too: each names the run as the spec does.
    def reports(d):
        out = sorted((x["key"], x["report"]) for x in journal(d))
        for _, rep in out:
            rep.pop("wall_ns")
        return out
    assert reports(here / "joined") == reports(here / "local")

