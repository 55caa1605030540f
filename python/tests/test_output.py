# SPDX-License-Identifier: GPL-2.0-only
"""warmcore.output's handling of SIGINT and SIGTERM (docs/conventions.md,
Exit statuses), in this process."""

import os
import signal
import time

import pytest

from warmcore import output


@pytest.fixture
def handlers():
    """The process's signal handlers back as they were, and no signal kept."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    output._received.clear()


def test_an_interrupt_an_import_turned_into_its_own_error_still_ends_as_interrupted(handlers, capsys):
    # SIGTERM while a C extension module is imported: the module reports
    # the interrupt as its own failure to import (numba does).
    def main():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        except output.Interrupted:
            raise ImportError("numba._devicearray failed to import") from None
        return 0

    assert output.interruptible(main) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip().splitlines()[-1] == "warmcore: interrupted"


def test_an_error_without_a_signal_is_not_an_interrupt(handlers):
    def main():
        raise ImportError("no such module")

    with pytest.raises(ImportError, match="no such module"):
        output.interruptible(main)
