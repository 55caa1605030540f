# SPDX-License-Identifier: GPL-2.0-only
"""warmcore.sim(): the simulator from Python, with the CLI's report."""

import json
import subprocess
import threading

import pytest

import warmcore
from conftest import BIN, require


def cli_json(*args):
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    out = subprocess.run([str(BIN), "sim", "--json", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_sim_gives_the_cli_report():
    args = dict(workload="configure:checks=20", machine="default", policy="cfs", governor="schedutil", seed=3)
    py = warmcore.sim(**args)
    cli = cli_json("--workload", args["workload"], "--machine", "default", "--policy", "cfs",
                   "--governor", "schedutil", "--seed", "3")
    assert py.keys() == cli.keys()
    # Everything but the wall time of the run is the same.
    py.pop("wall_ns"), cli.pop("wall_ns")
    assert py == cli
    assert py["makespan_ns"] > 0 and py["metric"]["name"] == "completion_time_ns"


def test_sim_writes_a_trace_the_reader_opens(tmp_path):
    out = tmp_path / "run.wct"
    r = warmcore.sim("configure:checks=20", trace=str(out))
    t = warmcore.open(out)
    assert t.event_count() == r["sim_events"]
    assert t.header["provenance"]["seed"] == 1


def test_sim_runs_in_threads_with_distinct_seeds():
    results = {}

    def one(seed):
        results[seed] = warmcore.sim("configure:checks=20", seed=seed)["makespan_ns"]

    threads = [threading.Thread(target=one, args=(s,)) for s in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results[1] == warmcore.sim("configure:checks=20", seed=1)["makespan_ns"]
    assert set(results) == {1, 2}


def test_sim_bad_input_is_one_line():
    with pytest.raises(warmcore.SimError, match=r"unknown policy 'nope'; valid: .*cfs"):
        warmcore.sim("configure", policy="nope")
    with pytest.raises(warmcore.SimError, match="workload"):
        warmcore.sim("no-such-workload")
    with pytest.raises(ValueError, match="max_time"):
        warmcore.sim("configure", max_time=-1)


def test_sim_runs_the_sched_ext_program_in_threads():
    # scx:NAME is the program of `warmcore sched`; each run has its own copy.
    results = {}

    def one(name):
        results[name] = warmcore.sim("configure:checks=20", policy=name)

    names = ["scx:nest:warm=threads", "scx:nest:warm=off", "scx:smove:delay_us=100"]
    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    again = warmcore.sim("configure:checks=20", policy="scx:nest:warm=threads")
    assert results["scx:nest:warm=threads"]["makespan_ns"] == again["makespan_ns"]
    assert results["scx:nest:warm=threads"]["policy_stats"]["nest_primary"] > 0
    assert results["scx:nest:warm=threads"]["policy_stats"]["warm_spins"] > 0
    assert results["scx:nest:warm=off"]["policy_stats"]["warm_spins"] == 0
    assert not results["scx:nest:warm=threads"]["ejected"]
    with pytest.raises(warmcore.SimError, match="scx:nest has no parameter 'spin'"):
        warmcore.sim("configure", policy="scx:nest:spin=off")


def test_sim_takes_the_drivers_epp_with_the_governor():
    # The machine's driver's energy-performance preference rides on the
    # governor, as in the CLI (docs/model.md, Frequency drivers of today).
    w = "configure:checks=20"
    fast = warmcore.sim(w, machine="xeon-gold-5218-2s", governor="powersave:epp=performance")
    slow = warmcore.sim(w, machine="xeon-gold-5218-2s", governor="powersave:epp=power")
    assert (fast["governor"], slow["governor"]) == ("powersave:epp=0", "powersave:epp=255")
    assert fast["makespan_ns"] < slow["makespan_ns"]
    with pytest.raises(warmcore.SimError, match="acpi-cpufreq"):
        warmcore.sim(w, machine="ryzen5-3400g", governor="powersave:epp=power")
