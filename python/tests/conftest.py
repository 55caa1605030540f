# SPDX-License-Identifier: GPL-2.0-only
"""Shared fixtures: small traces written through the bindings' Writer, whose
every event is known, and a synthetic trace from the CLI; and what the tests
need of the machine.

A test that cannot run here fails with one line naming what is missing and
how to get it. Skipping is only on request: WARMCORE_TEST_SKIP holds a
comma-separated list of the names of PREREQS (the same as the Rust tests',
crates/test-support). Every skipped test is appended to the file
WARMCORE_SKIP_LOG names, so that `make test` can say what it did not run."""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

import warmcore
from warmcore import EVENT_IDS as ID

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("WARMCORE_BIN", ROOT / "target" / "release" / "warmcore"))

# Every prerequisite a test may name, with how to get it: the names and
# words of crates/test-support, which checks that the two agree.
PREREQS = {
    "root": "run the tests as root (make test as root)",
    "btf": "boot a kernel built with CONFIG_DEBUG_INFO_BTF=y",
    "tmpfs": "run as root where mount may mount a tmpfs (a container needs CAP_SYS_ADMIN)",
    "cgroup2": "run as root with the cgroup v2 hierarchy mounted on /sys/fs/cgroup",
    "setpriv": "install util-linux",
    "browser": "run scripts/setup.sh (Debian's chromium and chromium-driver)",
    "binary": "run make build",
    "vm": "run scripts/setup.sh (qemu-system-x86, busybox-static, cpio)",
}


def skip_requested():
    names = {n.strip() for n in os.environ.get("WARMCORE_TEST_SKIP", "").split(",") if n.strip()}
    unknown = names - PREREQS.keys()
    if unknown:
        pytest.fail(f"WARMCORE_TEST_SKIP names {', '.join(sorted(unknown))}, not a prerequisite: "
                    f"one of {', '.join(PREREQS)}", pytrace=False)
    return names


def require(name, missing):
    """Fail the test when `missing` (what is missing, or None) says so, or
    skip it when WARMCORE_TEST_SKIP names `name`."""
    how = PREREQS[name]
    # Checked even when nothing is missing, so that a misspelt name fails.
    requested = skip_requested()
    if missing is None:
        return
    if name in requested:
        pytest.skip(f"{name}: {missing}")
    pytest.fail(f"needs {name}: {missing}: {how}, or set WARMCORE_TEST_SKIP={name} to skip", pytrace=False)


@pytest.fixture
def needs_binary():
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")


@pytest.fixture
def needs_browser():
    from warmcore import browser

    require("browser", None if browser.available() else
            f"no Chromium and its WebDriver ({browser.CHROMIUM}, {browser.DRIVER})")


# The scheduler's tests in a VM (vm/) boot QEMU for minutes: they run as a
# phase of their own (scripts/test-sched-vm.sh), collected only when named.
VM_TESTS = pathlib.Path(__file__).resolve().parent / "vm"


def pytest_ignore_collect(collection_path, config):
    if collection_path.resolve() != VM_TESTS:
        return None
    named = [pathlib.Path(a.split("::")[0]).resolve() for a in config.args]
    return None if any(p == VM_TESTS or VM_TESTS in p.parents for p in named) else True


def pytest_runtest_logreport(report):
    # Every skip, whoever asked for it, so that the log misses none.
    if not report.skipped or not os.environ.get("WARMCORE_SKIP_LOG"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    name, sep, what = reason.partition(": ")
    if not (sep and name in PREREQS):
        name, what = "other", reason
    with open(os.environ["WARMCORE_SKIP_LOG"], "a") as f:
        f.write(f"{name}: {report.nodeid}: {what}\n")


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
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    p = tmp_path_factory.mktemp("synth") / "synth.wct"
    subprocess.run([str(BIN), "trace", "synth", "-o", str(p), "--events", "200000", "--cpus", "8"],
                   check=True, capture_output=True)
    return p


RAY = pathlib.Path(sys.executable).parent / "ray"
# Where the shared cluster's head listens, inside its namespace.
RAY_ADDRESS = "127.0.0.1:6390"
# A cluster starts well within this, even on a loaded machine.
RAY_START_WITHIN_S = 300


class RayCluster:
    """A Ray cluster started once for the tests that join one (a start
    costs seconds), in network, PID and mount namespaces of its own with
    only loopback up, from a directory of its own. Its files, and the
    address file that `ray.init()` would otherwise find and join in
    /tmp/ray, are in a temporary directory of its own (with a short path:
    Ray's sockets live there). `run` runs a shell script in those
    namespaces; ending the namespace's first process ends every process
    Ray started there."""

    def __init__(self, home):
        require("root", None if os.geteuid() == 0 else "unshare needs root")
        self.temp = pathlib.Path(tempfile.mkdtemp(prefix="wc-ray-"))
        ready = home / "ready"
        self.holder = subprocess.Popen(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child", "sh", "-ec",
             f"ip link set lo up\n"
             f"{RAY} start --head --port {RAY_ADDRESS.split(':')[1]} --num-cpus 2 --include-dashboard false "
             f"--disable-usage-stats --temp-dir {self.temp} > start.log 2>&1\n"
             f"touch {ready}\nexec sleep infinity"],
            cwd=home, stdin=subprocess.DEVNULL)
        deadline = time.time() + RAY_START_WITHIN_S
        while not ready.exists():
            if self.holder.poll() is not None or time.time() > deadline:
                self.stop()
                log = home / "start.log"
                raise AssertionError(f"no Ray cluster started: {log.read_text() if log.exists() else 'no output'}")
            time.sleep(0.1)
        # The namespace's first process: unshare's child.
        children = pathlib.Path(f"/proc/{self.holder.pid}/task/{self.holder.pid}/children").read_text().split()
        self.init = int(children[0])

    def run(self, script, timeout=600):
        env = dict(os.environ, WC=str(BIN))
        return subprocess.run(
            ["nsenter", "--target", str(self.init), "--net", "--pid", "--mount", "sh", "-ec", script],
            capture_output=True, text=True, timeout=timeout, env=env)

    def stop(self):
        # unshare's end ends its child (--kill-child), the namespace's
        # first process, and so every process in the namespace.
        self.holder.kill()
        self.holder.wait()
        deadline = time.time() + RAY_START_WITHIN_S
        while subprocess.run(["pgrep", "-f", str(self.temp)], capture_output=True).returncode == 0 \
                and time.time() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    cluster = RayCluster(tmp_path_factory.mktemp("ray-head"))
    yield cluster
    cluster.stop()
