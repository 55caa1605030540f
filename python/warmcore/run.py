# SPDX-License-Identifier: GPL-2.0-only
"""The launcher of the Python side's commands: `python -m warmcore.run
MODULE ARGS...` runs MODULE as `python -m MODULE ARGS...` would. The Rust
binary starts `warmcore view`, `plot`, `plot sweep`, the figures of
`reproduce` and of `field` through it, so that a package the viewer's extra
brings, missing from a wheel's install, is one line saying which `pip
install` brings it, instead of a traceback."""

import runpy
import sys

from . import status

EXTRA = "pip install 'warmcore[viewer]'"


def main(argv):
    if not argv:
        print("usage: python -m warmcore.run MODULE [ARGS...]", file=sys.stderr)
        return status.USAGE
    module, sys.argv = argv[0], argv
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except ModuleNotFoundError as e:
        # The base package's own modules are there: what is missing is one of
        # the extra's (bokeh, datashader, matplotlib, ...).
        if not e.name or e.name.split(".")[0] == "warmcore":
            raise
        print(f"warmcore: {module.removeprefix('warmcore.')} needs {e.name}, which the viewer's packages bring: {EXTRA}",
              file=sys.stderr)
        return status.FAILURE
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
