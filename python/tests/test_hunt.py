# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore hunt --ray` (docs/hunt.md, On Ray): a hunt on a real local Ray
cluster reports what one on local threads does for the same seed and runs,
with no failure and with the planted bug of the hunt's tests, whose
reproducer is the same; a budget of simulated time stops Ray once spent; a
Ray address nobody answers at is one line. The hunts join the cluster
the ray_cluster fixture (conftest.py) starts, in namespaces of its own with
only loopback up."""

import json
import subprocess

from conftest import BIN, RAY_ADDRESS, ROOT, require
from test_sweep import REFUSED_WITHIN_S

# Relative to ROOT, where the hunts run: the workers, which do not, get it
# as an absolute path.
BROKEN = "bpf:crates/cli/tests/fixtures/hunt-broken"
CLEAN = ["--policy", "scx:default", "--machine", "default,ryzen5-3400g", "--runs", "12", "--seed", "3"]
# The planted stall of crates/cli/tests/hunt.rs: with seed 6, runs 0 and 1
# pass, run 2 fails and so do most after it, which Ray may finish first.
FAILING = ["--policy", BROKEN, "--machine", "default", "--runs", "30", "--seed", "6", "--shrink-runs", "30"]


def hunt(*args, **kw):
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    return subprocess.run([str(BIN), "hunt", *map(str, args)], capture_output=True, text=True, cwd=ROOT, **kw)


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_a_hunt_on_ray_reports_what_local_threads_do(tmp_path, ray_cluster):
    local, local_fail = tmp_path / "local", tmp_path / "local-fail"
    r = hunt(*CLEAN, "--jobs", "2", "--out", local)
    assert r.returncode == 0, r.stderr
    r = hunt(*FAILING, "--jobs", "2", "--out", local_fail)
    assert r.returncode == 1, r.stderr
    ray, ray_fail, ray_time = tmp_path / "ray", tmp_path / "ray-fail", tmp_path / "ray-time"
    clean = " ".join(f"'{a}'" for a in CLEAN)
    failing = " ".join(f"'{a}'" for a in FAILING)
    r = ray_cluster.run(f"""
cd {ROOT}
"$WC" hunt {clean} --ray {RAY_ADDRESS} --out {ray}
"$WC" hunt {failing} --ray {RAY_ADDRESS} --out {ray_fail} || echo "hunt exit $?"
"$WC" hunt --policy scx:default --machine default --sim-time 5s --ray {RAY_ADDRESS} --out {ray_time}
""")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "hunt: 12 runs of scx:default" in r.stdout and "no failure" in r.stdout, r.stdout
    s, t = summary(ray), summary(local)
    for k in ["policy", "seed", "machines", "runs", "simulated_s", "failure"]:
        assert s[k] == t[k], (k, s[k], t[k])
    assert s["runnable_task_s"] is None
    # The planted stall: the same run, failure and shrunk reproducer.
    assert "hunt exit 1" in r.stdout, r.stdout + r.stderr
    s, t = summary(ray_fail)["failure"], summary(local_fail)["failure"]
    assert s["kind"] == "stall" and s["run"] == 2 and [s[k] for k in ("run", "kind", "what")] == [t[k] for k in ("run", "kind", "what")], (s, t)
    run = f"run-{t['run']}"
    for f in ["original.toml", "repro.toml"]:
        assert (ray_fail / run / f).read_text() == (local_fail / run / f).read_text(), f
    # A budget of simulated time: Ray is stopped once it is spent, far
    # short of the 256 runs sent (each of these simulates a second or so).
    s = summary(ray_time)
    assert s["simulated_s"] >= 5 and 0 < s["runs"] < 100 and s["failure"] is None, s


def test_a_ray_address_nobody_answers_at_is_one_line(tmp_path):
    r = hunt(*CLEAN, "--ray", "127.0.0.1:1", "--out", tmp_path / "o", timeout=REFUSED_WITHIN_S)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "cannot reach the Ray cluster at 127.0.0.1:1" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists(), "a refused hunt made its --out"
