"""What may be a tuning log: one rule for the commands that write one and those that read one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Longest file name of a log (its lock file ``<log>.lock`` must fit the file system's 255).
MAX_LOG_NAME = 255 - len(".lock")


def log_problem(log: str, reading: bool = False) -> str | None:
    """What keeps ``log`` from being a tuning log, or None.

    One rule for every command: ``tune`` appends to a log (with ``<log>.lock`` beside it), so a
    log it writes may not exist yet; ``best``, ``inspect`` and ``apply`` read one.

    Parameters
    ----------
    log : str
    reading : bool
        The log must exist.

    Returns
    -------
    str or None
        E.g. ``"is a directory, not a log file"``.
    """
    path = Path(log)
    if any(len(os.fsencode(part)) > MAX_LOG_NAME for part in path.parts):
        return f"a file name in the path is longer than {MAX_LOG_NAME} bytes"
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as err:
        return err.strerror or str(err)
    if mode is not None:
        if stat.S_ISDIR(mode):
            return "is a directory, not a log file"
        if not stat.S_ISREG(mode):
            return "is not a regular file (a FIFO or a device cannot be a log)"
        return None
    if reading:
        return "no such log file"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is not a directory"
    return None
