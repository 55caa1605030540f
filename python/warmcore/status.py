# SPDX-License-Identifier: GPL-2.0-only
"""The exit statuses of the Python side's commands (`warmcore view`, `warmcore
plot`, `warmcore plot sweep`, the figures of `warmcore reproduce`), the Rust
side's (docs/conventions.md, Exit statuses)."""

FAILURE = 1  # the work failed: a write, a dependency
USAGE = 2  # a bad option, name, value or file


def of(e: BaseException) -> int:
    """The status of a command's error: an OSError is a failure of the work
    (a full disk, an I/O error), unless it is about the file named (missing,
    not permitted, a directory); every other error the commands catch (a
    trace that cannot be read, a bad view, a refused output) is a usage
    error."""
    about_the_file = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
    if isinstance(e, OSError) and not isinstance(e, about_the_file):
        return FAILURE
    return USAGE
