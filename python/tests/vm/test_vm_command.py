# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore vm` itself, beside the boots the other checks read."""

import os
import pathlib
import signal
import subprocess
import time

from conftest import BIN


def emulators(pid):
    """The QEMU processes @pid started."""
    try:
        kids = pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids if pathlib.Path(f"/proc/{k}/comm").read_text(errors="replace").startswith("qemu")]


def running(pid):
    """Whether @pid exists and is not a zombie."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_until(what, deadline_s):
    end = time.monotonic() + deadline_s
    while not (got := what()):
        if time.monotonic() > end:
            return got
        time.sleep(0.1)
    return got


def test_the_emulator_ends_with_warmcore_vm_however_it_ends(main_vm, tmp_path):
    # After the main boot (main_vm), so that the two emulators never share a
    # CPU. SIGKILL, which no handler sees: an orphaned QEMU would run its
    # guest's command to the end on a CPU that what runs next needs. The
    # files of the boot it leaves go with the test's own (TMPDIR).
    vm = subprocess.Popen([str(BIN), "vm", "--cpus", "1", "--timeout", "600", "--", "sleep", "600"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        qemu = wait_until(lambda: emulators(vm.pid), 300)
        assert qemu, "warmcore vm started no emulator within 300 s"
    finally:
        vm.kill()
        vm.wait()
    ended = wait_until(lambda: not running(qemu[0]), 60)
    if not ended:
        os.kill(qemu[0], signal.SIGKILL)
    assert ended, f"QEMU {qemu[0]} still ran 60 s after warmcore vm was killed"
