# SPDX-License-Identifier: GPL-2.0-only
"""warmcore's trace reader for Python.

    >>> import warmcore
    >>> t = warmcore.open("run.wct")
    >>> t.machine["freq_max_khz"]
    >>> df = t.to_pandas(cpus=[0, 1], events=["CTX_SWITCH"], start=0, end=10_000_000)

Simulator runs give the same report as ``warmcore sim --json``:

    >>> r = warmcore.sim("configure", machine="default", policy="cfs")
    >>> r["makespan_ns"], r["energy_j"]

Times given to ``read``/``to_pandas``/``to_polars`` are ns relative to the
trace's first event unless ``absolute=True``.
"""

from ._native import EVENT_IDS, SimError, TraceError, Writer, sim
from .trace import Trace, open

__all__ = ["EVENT_IDS", "SimError", "Trace", "TraceError", "Writer", "open", "sim"]
