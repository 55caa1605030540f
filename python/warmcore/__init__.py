# SPDX-License-Identifier: GPL-2.0-only
"""warmcore's trace reader for Python.

    >>> import warmcore
    >>> t = warmcore.open("run.wct")
    >>> t.machine["freq_max_khz"]
    >>> df = t.to_pandas(cpus=[0, 1], events=["CTX_SWITCH"], start=0, end=10_000_000)

Times given to ``read``/``to_pandas``/``to_polars`` are ns relative to the
trace's first event unless ``absolute=True``.
"""

from ._native import EVENT_IDS, TraceError, Writer
from .trace import Trace, open

__all__ = ["EVENT_IDS", "Trace", "TraceError", "Writer", "open"]
