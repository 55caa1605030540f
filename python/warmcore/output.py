# SPDX-License-Identifier: GPL-2.0-only
"""The files the Python side writes (`warmcore plot`, `warmcore plot sweep`,
the figures of `warmcore reproduce`), under the rules of the Rust side's
`warmcore_trace::output` (docs/conventions.md, Outputs): never over an input
(by file identity), a regular file written aside and renamed only on
success, a link followed, a stream written in place, a directory or a
missing directory refused. SIGINT and SIGTERM remove what is being written
as a failure does (`interruptible`)."""

import contextlib
import os
import pathlib
import signal
import stat
import sys
import tempfile


class Interrupted(BaseException):
    """SIGINT or SIGTERM, raised where the command is, so that the outputs
    being written are removed as on any failure."""

    def __init__(self, sig):
        super().__init__(sig)
        self.sig = sig


# While `interruptible` runs: the SIGINTs and SIGTERMs received, in order,
# and the outputs an interrupt left as they were (not written). The signal is
# kept apart from the exception it raised: a C extension module imported
# when it came may report it as its own failure to import (numba's
# "numba._devicearray failed to import" is an ImportError raised in its
# place), so what reaches `interruptible` need not be `Interrupted`.
_received = []
_left = []


def interruptible(main):
    """Run `main()` with SIGINT and SIGTERM raising `Interrupted`: an
    interrupted command says in one line which outputs it left as they were
    and returns 128 + the signal's number, 130 or 143, as the Rust side does
    (docs/conventions.md, Exit statuses). A signal received while `main`
    runs ends the command so, whatever exception it became on its way out
    or if something swallowed it. A closed standard output ends it as it
    ends the Rust side's commands, killed by SIGPIPE (141), where Python
    would raise BrokenPipeError: the commands print once their files are in
    place. The previous handlers are back when it returns."""
    armed = True

    def interrupt(sig, _frame):
        nonlocal armed
        _received.append(sig)
        # Raised once, and only while `main` runs: a second signal must not
        # cut short the removal of what the first one abandons, nor the
        # report below.
        if armed:
            armed = False
            raise Interrupted(sig)

    def excepthook(kind, e, tb):
        # Printed by a C extension module that turns the interrupt into its
        # own error (numba does): the command's one line below says it.
        if not issubclass(kind, Interrupted):
            saved_hook(kind, e, tb)

    _received.clear()
    _left.clear()
    saved_hook, sys.excepthook = sys.excepthook, excepthook
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE)}
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, interrupt)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        try:
            try:
                status = main()
                # Written while SIGPIPE still ends the command (stdout is
                # buffered when it is a pipe; None when it was closed).
                if sys.stdout is not None:
                    sys.stdout.flush()
            finally:
                # A signal that comes before this raises here, inside the
                # handling below.
                armed = False
        except BaseException:
            if not _received:
                raise
        if not _received:
            return status
        left = f": not written, left as they were: {', '.join(_left)}" if _left else ""
        print(f"warmcore: interrupted{left}", file=sys.stderr)
        return 128 + _received[0]
    finally:
        sys.excepthook = saved_hook
        for s, h in saved.items():
            # None: a handler set outside Python, which cannot be put back.
            signal.signal(s, signal.SIG_DFL if h is None else h)
        _received.clear()
        _left.clear()


def _identity(p):
    try:
        s = os.stat(p)
    except OSError:
        return None
    return (s.st_dev, s.st_ino)


@contextlib.contextmanager
def replacing(path, inputs=()):
    """Yield the path to write to (a temporary file beside `path`, or `path`
    itself for a stream); on success it is put in place, on failure removed.
    Raises ValueError with one line for an output that is refused."""
    path = pathlib.Path(path)
    ident = _identity(path)
    if ident is not None and any(_identity(i) == ident for i in inputs):
        raise ValueError(f"{path}: is an input of this command: choose another output file")
    target = path
    if path.is_symlink():
        if not path.exists():
            raise ValueError(f"{path}: is a symbolic link to nothing: give the file to write itself")
        target = path.resolve()
    if target.exists():
        mode = target.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ValueError(f"{path}: is a directory: give a file name for the output")
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            yield target
            return
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path}: is not a regular file (a block device or a socket): give a file name")
    parent = target.parent
    if not parent.is_dir():
        raise ValueError(f"{path}: no directory {parent}: create it first")
    # SIGINT and SIGTERM wait until the temporary file is made and its
    # removal on an interrupt (below) in place: none is left behind.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part" + target.suffix, dir=parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(fd)
        # The mode a new file gets (the umask applies), not mkstemp's 0600.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        yield pathlib.Path(tmp)
        os.replace(tmp, target)
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        # Still blocked if mkstemp failed.
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        # The interrupt may reach here as another exception (see _received).
        if isinstance(e, Interrupted) or _received:
            _left.append(str(path))
        raise
