# SPDX-License-Identifier: GPL-2.0-only
"""The scheduler on a real kernel: `warmcore vm` boots a Debian kernel with
sched_ext under QEMU, a guest script (guest/*.sh, after guest/lib.sh) runs
the scheduler and its workloads and prints one line per fact, TAG [POLICY]
VALUE, and the tests check those lines. A boot is slow (minutes under
emulation), so each runs once per session, when the first test that needs
it asks for it, and every check reads its output: any one check runs alone
(`pytest python/tests/vm -k hotplug`) against one boot.

Each boot's output is kept in out/test-vm/BOOT.log. WARMCORE_VM_OUTPUT=DIR
checks DIR/BOOT.log instead of booting (a kept output re-checked after a
change to a check). WC_TEST_SECS shortens the stress of each policy (30 s),
WIDE_CPUS sets the CPUs of the wide boot (72). WARMCORE_VM_BOOTS picks the
boots whose checks run: names (main,topo), or every boot but those named
with a leading - (-main); make test runs the main boot and the others in
two lanes that way (scripts/test-phases.sh)."""

import contextlib
import functools
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import tomllib

import pytest

from conftest import BIN, ROOT, require
import unit_file

GUEST = pathlib.Path(__file__).resolve().parent / "guest"
KEPT = ROOT / "out" / "test-vm"
POLICIES = ["default", "slocal", "smove", "nest", "haiku-low-latency", "haiku-power-saving", "warm"]
# The scx project's schedulers run beside them (their loaders' names), as
# peers/Cargo.toml names them.
PEERS = list(tomllib.loads((ROOT / "peers" / "Cargo.toml").read_text())["dependencies"])

# Each boot: `warmcore vm` options and its guest script.
BOOTS = {
    # 7 policies x the stress, then the rest, with nine loads of the
    # program: 7 to 17 minutes with the host's load average at 7 to 13.
    "main": ["--cpus", "4", "--timeout", "3600"],
    "topo": ["--cpus", "4", "--sockets", "2", "--append", "maxcpus=3", "--timeout", "900"],
    "wide": ["--cpus", os.environ.get("WIDE_CPUS", "72"), "--mem", "2048", "--timeout", "1200"],
    # The peers' loaders, each under the stress: 2 to 3 minutes once they
    # are built (`warmcore vm --peers` builds what is missing, 10 to 40
    # minutes on 2 cores; scripts/test-sched-vm.sh does it first).
    "peers": ["--cpus", "4", "--peers", "--timeout", "2400"],
}

REPORTS = []


def boots_selected():
    """The boots WARMCORE_VM_BOOTS names (every boot when unset), or a usage
    error naming what is wrong."""
    names = os.environ.get("WARMCORE_VM_BOOTS", "").replace(",", " ").split()
    if not names:
        return set(BOOTS)
    leaving = {n.startswith("-") for n in names}
    bare = [n.removeprefix("-") for n in names]
    unknown = [n for n in bare if n not in BOOTS]
    if unknown or len(leaving) > 1:
        raise pytest.UsageError(f"WARMCORE_VM_BOOTS={os.environ['WARMCORE_VM_BOOTS']}: give boots among "
                                f"{', '.join(BOOTS)}, all with a leading - (every boot but those) or none")
    return set(BOOTS) - set(bare) if leaving == {True} else set(bare)


def pytest_configure(config):
    boots_selected()


def pytest_collection_modifyitems(config, items):
    # A check belongs to the boot whose fixture it reads (BOOT_vm).
    leave = {f"{b}_vm" for b in set(BOOTS) - boots_selected()}
    kept = [i for i in items if not leave & set(getattr(i, "fixturenames", ()))]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


def report(what):
    """What a boot shows but cannot assert (emulated timing): printed in the
    session's summary."""
    REPORTS.append(what)


def pytest_terminal_summary(terminalreporter):
    if REPORTS:
        terminalreporter.section("what the VM showed (not asserted)")
        for r in REPORTS:
            terminalreporter.write_line(r)


class Guest:
    """One boot's output: its lines, and where they are kept."""

    def __init__(self, name, path, rc=None, err=""):
        self.name, self.path, self.rc, self.err = name, path, rc, err
        self.lines = path.read_text(errors="replace").splitlines()

    def all(self, tag, pol=None):
        """The values of every TAG [POL] line."""
        head = f"{tag} {pol} " if pol else f"{tag} "
        return [l[len(head):] for l in self.lines if l.startswith(head)]

    def get(self, tag, pol=None):
        """The value of the first TAG [POL] line, stripped, or None."""
        v = self.all(tag, pol)
        return v[0].strip() if v else None

    def js(self, tag, pol=None):
        """The first TAG [POL] line's JSON value, or None."""
        try:
            return json.loads(self.get(tag, pol) or "")
        except ValueError:
            return None

    def info(self, tag, key):
        """`KEY: VALUE` of warmcore trace info under TAG."""
        for v in self.all(tag):
            k, sep, val = v.partition(":")
            if sep and k.strip() == key:
                return val.strip()
        return None

    def __str__(self):
        return str(self.path)


def ejections(lines):
    """What a loader's output says of an ejection: its error lines, then the
    tasks that had waited longest in the kernel's debug dump it prints
    first (kernel/sched/ext.c, scx_dump_state: a CPU's header, then each
    runnable task as `R COMM[PID] ... -MSms`, relative to the dump), so that a
    stall names its victims in the one line a failed check prints."""
    errs = [l for l in lines if "eject" in l or "EXIT:" in l]
    if not errs:
        return []
    cpu, waits = "?", []
    for l in lines:
        if m := re.match(r"\s*CPU\s+(\d+)\s*:", l):
            cpu = m[1]
        elif m := re.match(r"\s*\*?R (.+?\[\d+\]).* ([+-]\d+)ms$", l):
            waits.append((int(m[2]), f"{m[1]} on CPU {cpu} runnable for {-int(m[2])} ms"))
    return [l.strip() for l in errs] + [w for _, w in sorted(waits)[:5]]


def service():
    """The Debian package's service as the guest runs it (guest/topo.sh):
    SERVICE, the command its unit starts with the defaults file's options,
    and SERVICE_SIGNAL, the signal that stops it."""
    unit = unit_file.UNIT.read_text()
    argv = unit_file.command(unit, unit_file.DEFAULTS.read_text())
    sig = unit_file.settings(unit)[("Service", "KillSignal")].removeprefix("SIG")
    return f"SERVICE={shlex.quote(shlex.join(argv))}\nSERVICE_SIGNAL={sig}\n"


@functools.cache
def vm_binary():
    """BIN without its debug information, for the boots' initramfs: the
    release build keeps line tables (109 MB of the binary's 130), which each
    boot would gzip and the emulated guest unpack (12 s of a 37 s empty boot
    on the shared 2-core machine, BENCHMARKS.md). Its symbols stay, so a
    panic's backtrace in the guest still names its functions."""
    KEPT.mkdir(parents=True, exist_ok=True)
    out = KEPT / "warmcore"
    # Written aside and renamed: make test's two lanes of boots each write
    # it, one while the other's boot may be packing it.
    part = KEPT / f"warmcore.{os.getpid()}"
    r = subprocess.run(["strip", "--strip-debug", "-o", str(part), str(BIN)], capture_output=True, text=True)
    if r.returncode != 0:
        part.unlink(missing_ok=True)
        pytest.fail(f"strip --strip-debug {BIN} failed: {r.stderr.strip()} (is binutils installed?)", pytrace=False)
    part.replace(out)
    return out


def boot(name, config):
    saved = os.environ.get("WARMCORE_VM_OUTPUT")
    if saved:
        path = pathlib.Path(saved) / f"{name}.log"
        if not path.is_file():
            pytest.fail(f"WARMCORE_VM_OUTPUT={saved}: no {name}.log there (a boot's output, as out/test-vm keeps it)",
                        pytrace=False)
        return Guest(name, path)
    require("binary", None if BIN.exists() else f"no warmcore binary at {BIN}")
    require("vm", None if shutil.which("qemu-system-x86_64") else "no qemu-system-x86_64")
    secs = os.environ.get("WC_TEST_SECS", "30")
    script = (GUEST / "lib.sh").read_text() + f"SECS={secs}\nPEERS='{' '.join(PEERS)}'\n" \
        + service() + (GUEST / f"{name}.sh").read_text()
    KEPT.mkdir(parents=True, exist_ok=True)
    path, errpath = KEPT / f"{name}.log", KEPT / f"{name}.err"
    tr, cm = config.pluginmanager.get_plugin("terminalreporter"), config.pluginmanager.get_plugin("capturemanager")
    if tr and cm:
        with cm.global_and_fixture_disabled():
            tr.write_line(f"test-vm: booting {name} ({' '.join(BOOTS[name])}), output in {path}")
    with open(path, "w") as out, open(errpath, "w") as err:
        rc = subprocess.run([str(BIN), "vm", *BOOTS[name], "--warmcore", str(vm_binary()), "--", "sh", "-c", script],
                            stdout=out, stderr=err, stdin=subprocess.DEVNULL).returncode
    g = Guest(name, path, rc, errpath.read_text(errors="replace"))
    if rc != 0 and not g.lines:
        pytest.fail(f"warmcore vm failed (status {rc}) before the guest printed anything:\n{g.err[-3000:]}",
                    pytrace=False)
    return g


def check_stress(vm, who):
    """The mixed stress and the pinned, cpuset and niced tasks beside it
    (guest/lib.sh, stress_beside) all finished with status 0."""
    m = vm.js("MIXED", who)
    assert vm.get("MIXED_RC", who) == "0" and m is not None and m["failed"] == 0, f"{who}: {m}"
    assert vm.get("BESIDE_RC", who) == "0 0 0", f"{who}: exit statuses {vm.get('BESIDE_RC', who)}"


@pytest.fixture(scope="session")
def main_vm(request):
    return boot("main", request.config)


@pytest.fixture(scope="session")
def topo_vm(request):
    return boot("topo", request.config)


@pytest.fixture(scope="session")
def wide_vm(request):
    return boot("wide", request.config)


def build_peers(config):
    """The scx project's loaders into the cache before the boot that runs
    them (`warmcore vm peers`: 10 to 40 minutes on 2 cores the first time,
    nothing after), with cargo's progress where the tests' output goes
    rather than in the boot's kept stderr. A loader that does not build
    fails the peers' checks, the boot saying which."""
    if os.environ.get("WARMCORE_VM_OUTPUT") or not BIN.exists():
        return  # a kept output is checked, or boot() fails on the binary
    tr, cm = config.pluginmanager.get_plugin("terminalreporter"), config.pluginmanager.get_plugin("capturemanager")
    with cm.global_and_fixture_disabled() if cm else contextlib.nullcontext():
        rc = subprocess.run([str(BIN), "vm", "peers"], stdin=subprocess.DEVNULL).returncode
        if rc != 0 and tr:
            tr.write_line("test-vm: the peers' loaders did not all build (above): their checks fail below")


@pytest.fixture(scope="session")
def peers_vm(request):
    build_peers(request.config)
    return boot("peers", request.config)
