"""Replacing a file whole: written under a temporary name beside it, then renamed over it.

A reader sees the old file or the whole new one, never part of one; a write that fails removes
its temporary file and leaves the old file as it was.  The one rule for every file tunecli
replaces: a log written whole, an exported library, a kernel cache entry.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

#: How a temporary file's name ends unless the caller asks for another ending.
TEMPORARY_SUFFIX = ".tmp"


def temporary_name(path: Path, suffix: str = TEMPORARY_SUFFIX) -> Path:
    """A hidden name beside ``path``, unique to this call, ending in ``suffix``."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")


def replace_file(path: str | os.PathLike[str], write: Callable[[Path], None], *,
                 suffix: str = TEMPORARY_SUFFIX, sync: bool = False) -> None:
    """Make the file at ``path`` the one ``write(temporary path)`` writes, renamed over it.

    Parameters
    ----------
    path : str or path
        The file to replace (its directory is created when missing).  A file already there
        keeps its permissions.
    write : callable
        Creates the file at the path it is given.
    suffix : str
        How the temporary name ends (a writer that picks its format by the name's suffix is
        given the destination's).
    sync : bool
        Flush the new file to the disk before the rename.

    Raises
    ------
    OSError
        When the file cannot be written or renamed (the temporary file is removed).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = temporary_name(target, suffix)
    try:
        write(partial)
        if sync:
            fd = os.open(partial, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if target.exists():
            os.chmod(partial, stat.S_IMODE(target.stat().st_mode))
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, *, sync: bool = False) -> None:
    """Replace the file at ``path`` by ``data`` (see :func:`replace_file`)."""
    def write(partial: Path) -> None:
        with open(partial, "xb") as file:
            file.write(data)
    replace_file(path, write, sync=sync)


def write_lines(path: str | os.PathLike[str], lines: Iterable[str], *, sync: bool = False) -> None:
    """Replace the file at ``path`` by ``lines`` (each with its newline; UTF-8; see :func:`replace_file`)."""
    def write(partial: Path) -> None:
        with open(partial, "x", encoding="utf-8") as file:
            file.writelines(lines)
    replace_file(path, write, sync=sync)
