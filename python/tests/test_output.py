# SPDX-License-Identifier: GPL-2.0-only
"""warmcore.output's handling of SIGINT and SIGTERM (docs/conventions.md,
Exit statuses), in this process. The signals are raised in the thread that
handles them (signal.raise_signal), so that their handlers run at once."""

import signal
import sys

import pytest

from warmcore import output

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)


def previous_handler(sig, frame):
    raise AssertionError(f"the handler from before interruptible got signal {sig}")


# What the excepthook from before interruptible was called with.
hooked = []


def previous_hook(kind, e, tb):
    hooked.append(kind)


@pytest.fixture
def previous():
    """Handlers of this test's own in place of this process's, which are put
    back after it whatever happens: interruptible must put back these."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    saved_hook = sys.excepthook
    for s in SIGNALS:
        signal.signal(s, previous_handler)
    sys.excepthook = previous_hook
    hooked.clear()
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    sys.excepthook = saved_hook


def assert_put_back():
    assert {s: signal.getsignal(s) for s in SIGNALS} == {s: previous_handler for s in SIGNALS}
    assert sys.excepthook is previous_hook
    assert output._received == [] and output._left == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_that_became_another_error_still_ends_as_interrupted(previous, sig, tmp_path, capsys):
    # As numba reports an interrupt that came while it imported one of its
    # modules: as its own ImportError, with the interrupt printed first.
    out = tmp_path / "p.png"
    out.write_bytes(b"old")

    def main():
        with output.replacing(out) as tmp:
            tmp.write_bytes(b"half")
            try:
                signal.raise_signal(sig)
            except output.Interrupted as e:
                sys.excepthook(type(e), e, e.__traceback__)
                raise ImportError("numba._devicearray failed to import") from None
        return 0

    assert output.interruptible(main) == 128 + sig
    assert capsys.readouterr().err == f"warmcore: interrupted: not written, left as they were: {out}\n"
    assert out.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["p.png"]
    # The interrupt printed by the module is not: the one line says it.
    assert hooked == []
    assert_put_back()


def test_the_first_signal_decides_even_if_its_interrupt_is_swallowed(previous, capsys):
    carried_on = []

    def main():
        try:
            signal.raise_signal(signal.SIGTERM)
        except output.Interrupted:
            # A second signal while the first is handled raises nothing:
            # it would cut short the removal of what the first abandons.
            signal.raise_signal(signal.SIGINT)
            carried_on.append(True)
        return 0

    assert output.interruptible(main) == 128 + signal.SIGTERM
    assert carried_on == [True]
    assert capsys.readouterr().err == "warmcore: interrupted\n"
    assert_put_back()


def test_an_error_without_a_signal_is_not_an_interrupt(previous):
    def main():
        raise ImportError("no such module")

    with pytest.raises(ImportError, match="no such module"):
        output.interruptible(main)
    assert_put_back()


def test_a_command_that_ends_by_itself_keeps_its_status(previous, capsys):
    def main():
        # The handlers while it runs: the interrupt's, and SIGPIPE's default.
        assert signal.getsignal(signal.SIGINT) is signal.getsignal(signal.SIGTERM) is not previous_handler
        assert signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL
        print("wrote it")
        return 2

    assert output.interruptible(main) == 2
    assert capsys.readouterr() == ("wrote it\n", "")
    assert_put_back()
