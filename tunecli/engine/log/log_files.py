"""Log files as places: the tuning lock, checks before reading, and writes that never tear a log.

A tuning run holds ``<log>.lock`` (an exclusive ``flock``) while it appends to ``<log>``.  The
lock belongs to the *file*, not to the name used for it: the path is resolved first, so a
symbolic link or a relative path to a log locks the same ``.lock`` file as its real path.
Writing a whole log (``best -o``, ``pick_best``) goes through a temporary file in the same
directory, renamed over the destination, and is refused when the destination is one of the
logs being read or a tune holds its lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from tunecli.errors import LogInUseError, RecordError


def real_log_path(path: str | os.PathLike) -> Path:
    """Return the resolved path of a log (symbolic links followed, made absolute).

    Parameters
    ----------
    path : str or path
        The log, which need not exist yet.

    Returns
    -------
    Path
    """
    return Path(path).expanduser().resolve()


def lock_path(path: str | os.PathLike) -> Path:
    """Return the lock file of the log at ``path``: ``<resolved log>.lock``.

    Parameters
    ----------
    path : str or path

    Returns
    -------
    Path
    """
    real = real_log_path(path)
    return real.with_name(real.name + ".lock")


@contextlib.contextmanager
def exclusive_log(path: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of the log at ``path`` for the duration of the block.

    Parameters
    ----------
    path : str or path

    Raises
    ------
    LogInUseError
        When another process holds it (the message names the log and that process).
    """
    with open(lock_path(path), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise LogInUseError(f"{os.fspath(path)}: another tuning run ({holder}) is writing this log: wait "
                                "for it, or write to another log") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}")
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def lock_holder(path: str | os.PathLike) -> str | None:
    """Return who holds the lock of the log at ``path`` (``"pid N"``), or None when it is free.

    The lock file is not created when it does not exist.

    Parameters
    ----------
    path : str or path

    Returns
    -------
    str or None
    """
    try:
        fd = os.open(lock_path(path), os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd) as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return lock.read().strip() or "another process"
        fcntl.flock(lock, fcntl.LOCK_UN)
    return None


#: Longest file name of a log (its lock file ``<log>.lock`` must fit the file system's 255).
MAX_LOG_NAME = 255 - len(".lock")


def log_problem(log: str | os.PathLike, reading: bool = False) -> str | None:
    """What keeps ``log`` from being a tuning log, or None.

    One rule for every command: ``tune`` appends to a log (with ``<log>.lock`` beside it), so a
    log it writes may not exist yet; ``best``, ``inspect`` and ``apply`` read one.  A FIFO or a
    device would block or never end, a directory is not a log.

    Parameters
    ----------
    log : str or path
    reading : bool
        The log must exist and be readable.

    Returns
    -------
    str or None
        E.g. ``"is a directory, not a log file"``.
    """
    path = Path(log)
    if any(len(os.fsencode(part)) > MAX_LOG_NAME for part in path.parts):
        return f"a file name in the path is longer than {MAX_LOG_NAME} bytes"
    try:
        mode: int | None = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as err:
        return err.strerror or str(err)
    if mode is not None:
        if stat.S_ISDIR(mode):
            return "is a directory, not a log file"
        if not stat.S_ISREG(mode):
            return "is not a regular file (a FIFO or a device cannot be a log)"
        if reading and not os.access(path, os.R_OK):
            return f"cannot read this log: {os.strerror(errno.EACCES)}"
        return None
    if reading:
        return "no such log file"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is not a directory"
    return None


def check_log_file(path: str | os.PathLike) -> None:
    """Raise unless ``path`` is a regular file this process may read (``log_problem``).

    Parameters
    ----------
    path : str or path

    Raises
    ------
    RecordError
        Naming the path and what it is instead.
    """
    problem = log_problem(path, reading=True)
    if problem:
        raise RecordError(f"{os.fspath(path)}: {problem}")


def check_output_log(out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Raise unless a whole log may be written at ``out`` while ``inputs`` are read.

    Parameters
    ----------
    out : str or path
        The log to write.
    inputs : iterable of str or path
        The logs read to make it.

    Raises
    ------
    LogInUseError
        When ``out`` is one of ``inputs`` (the same file, by any name) or a tune holds its lock.
    RecordError
        When ``out`` exists and is not a regular file.
    """
    real = real_log_path(out)
    for source in inputs:
        if real_log_path(source) == real or _same_file(source, out):
            raise LogInUseError(f"{os.fspath(out)}: is the input log {os.fspath(source)}: writing it "
                                "would replace the records being read; write to another log")
    holder = lock_holder(out)
    if holder is not None:
        raise LogInUseError(f"{os.fspath(out)}: a tuning run ({holder}) is writing this log: wait for it, "
                            "or write to another log")
    if real.exists() and not real.is_file():
        raise RecordError(f"{os.fspath(out)}: is not a regular file; cannot write a log there")


def _same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write_log(out: str | os.PathLike, lines: Iterable[str]) -> None:
    """Write ``lines`` as the whole log ``out``, through a temporary file renamed over it.

    A reader never sees half a log and a failed write leaves the old log as it was.  A symbolic
    link at ``out`` stays a link: the file it points to is replaced.

    Parameters
    ----------
    out : str or path
    lines : iterable of str
        Each with its newline.
    """
    real = real_log_path(out)
    real.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.writelines(lines)
            file.flush()
            os.fsync(file.fileno())
        mode = real.stat().st_mode & 0o7777 if real.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
