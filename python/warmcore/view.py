# SPDX-License-Identifier: GPL-2.0-only
"""Entry point of `warmcore view` and `warmcore plot` (the Rust CLI runs
`python -m warmcore.view ...` in the project's virtual environment).

    python -m warmcore.view plot FILE --view V [--from NS] [--to NS] -o OUT
    python -m warmcore.view serve FILE [--port N] [--view V]
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="warmcore")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plot", help="render a view to PNG or HTML")
    p.add_argument("file")
    p.add_argument("--view", default="freq")
    p.add_argument("--from", dest="start", type=int, default=None, help="ns from the trace's start")
    p.add_argument("--to", dest="end", type=int, default=None, help="ns from the trace's start")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--width", type=int, default=1400)
    s = sub.add_parser("serve", help="the interactive viewer")
    s.add_argument("file")
    s.add_argument("--port", type=int, default=5006)
    s.add_argument("--view", default="freq")
    s.add_argument("--no-browser", action="store_true", help="accepted for compatibility; no browser is opened")
    a = ap.parse_args(argv)
    if a.cmd == "plot":
        from . import output

        # Interruptible from before the drawing modules are imported: a
        # signal that comes while a C extension module is imported may come
        # out of it as another exception (output._received).
        return output.interruptible(lambda: _run(a))
    return _run(a)


def _run(a) -> int:
    from .views import ViewError
    from . import status
    import warmcore

    try:
        if a.cmd == "plot":
            from .plot import plot

            print(plot(a.file, a.view, a.start, a.end, a.output, a.width))
            return 0
        from .server import serve

        return serve(a.file, a.port, a.view)
    except (warmcore.TraceError, ViewError, ValueError, OSError) as e:
        print(f"warmcore: {e}", file=sys.stderr)
        return status.of(e)


if __name__ == "__main__":
    sys.exit(main())
