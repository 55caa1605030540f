# SPDX-License-Identifier: GPL-2.0-only
"""Shared fixtures: small traces written through the bindings' Writer, whose
every event is known, and a synthetic trace from the CLI."""

import os
import pathlib
import subprocess

import pytest

import warmcore
from warmcore import EVENT_IDS as ID

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("WARMCORE_BIN", ROOT / "target" / "release" / "warmcore"))

# The known trace: 4 CPUs, 1.0-3.0 GHz (base 2.0), 100 ms.
MS = 1_000_000


def write_known(path):
    w = warmcore.Writer(str(path), 4, 1_000_000, 2_000_000, 3_000_000, name="known")
    w.note_process(101, 1, "make", 0)
    w.note_process(102, 101, "cc1", 0)
    w.note_process(103, 101, "ld", 0)
    # CPU 0: make runs 0-10 ms slow, then cc1 runs 10-60 ms fast, then idle.
    w.push(0, 0, 101, ID["FREQ_CHANGE"], 1_100_000)
    w.push(0, 1 * MS, 0, ID["CTX_SWITCH"], 101, 0)
    w.push(0, 4 * MS, 101, ID["TICK"], 1_100_000)
    w.push(0, 5 * MS, 102, ID["WAKEUP"], 1, 101)
    w.push(0, 10 * MS, 101, ID["CTX_SWITCH"], 102, 1)
    w.push(0, 12 * MS, 102, ID["TICK"], 2_900_000)
    w.push(0, 20 * MS, 102, ID["RQ_SIZE"], 2, 1)
    w.push(0, 30 * MS, 102, ID["RQ_SIZE"], 1, 0xFFFFFFFF)
    w.push(0, 60 * MS, 102, ID["CTX_SWITCH"], 0, 1)
    w.push(0, 100 * MS, 0, ID["TICK"], 0)
    # CPU 1: ld runs 50.5-50.7 ms at base frequency: the known event to hover.
    w.push(1, 2 * MS, 0, ID["FREQ_CHANGE"], 2_000_000)
    w.push_comm(1, 3 * MS, 103, ID["EXEC"], "ld")
    w.push(1, 50_500_000, 0, ID["CTX_SWITCH"], 103, 0)
    w.push(1, 50_600_000, 103, ID["MIGRATE"], 1, 2)
    w.push(1, 50_700_000, 103, ID["CTX_SWITCH"], 0, 1)
    w.push_comm(1, 70 * MS, 103, ID["EXEC"], "ld.gold")
    w.note_process(103, 101, "ld.gold", 70 * MS)
    # CPU 2: nest membership and an S_move timer.
    w.push(2, 3 * MS, 0, ID["NEST_CHANGE"], 2)
    w.push(2, 40 * MS, 0, ID["NEST_CHANGE"], 1)
    w.push(2, 41 * MS, 102, ID["MOVE_TIMER_ARMED"], 2, 3)
    w.push(2, 42 * MS, 102, ID["MOVE_TIMER_FIRED"], 2, 1)
    # CPU 3: nothing but a tick.
    w.push(3, 90 * MS, 0, ID["TICK"], 1_000_000)
    return w.finish()


@pytest.fixture(scope="session")
def known_trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("known") / "known.wct"
    write_known(p)
    return p


@pytest.fixture(scope="session")
def synth_trace(tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"{BIN} not built: run make build")
    p = tmp_path_factory.mktemp("synth") / "synth.wct"
    subprocess.run([str(BIN), "trace", "synth", "-o", str(p), "--events", "200000", "--cpus", "8"],
                   check=True, capture_output=True)
    return p
