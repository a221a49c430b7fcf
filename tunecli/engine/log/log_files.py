"""Log files as places: the tuning lock, checks before reading, and writes that never tear a log.

A tuning run holds an exclusive ``flock`` on ``<log>`` itself while it appends to it.  The lock
belongs to the *file*, not to the name used for it: a symbolic link, a relative path or a hard
link to a log takes the same lock, and no lock file is left behind.
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
from collections.abc import Iterable, Iterator
from pathlib import Path

from tunecli.engine.atomic_file import write_lines
from tunecli.errors import LogInUseError, LogPathError, RecordError


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


@contextlib.contextmanager
def exclusive_log(path: str | os.PathLike) -> Iterator[None]:
    """Hold the tuning lock of the log at ``path`` for the duration of the block.

    The lock is an exclusive ``flock`` on the log file itself, created empty when missing, so
    every name of the file (a symbolic link, a relative path, a hard link) takes the same lock
    and no lock file is left beside the log.  A log this block created and left empty is removed
    at its end.

    Parameters
    ----------
    path : str or path

    Raises
    ------
    LogInUseError
        When another process holds it (the message names the log and that process).
    LogPathError
        When the log cannot be created, or exists and cannot be written.
    """
    real = real_log_path(path)
    fd, created = _open_locked(real, path)
    if not os.access(real, os.W_OK):  # refused before anything is measured for it
        os.close(fd)
        raise LogPathError(f"{os.fspath(path)}: cannot append to this log: it is not writable (a read-only "
                           "file or file system)")
    try:
        yield
    finally:
        try:
            if created and os.fstat(fd).st_size == 0 and _same_inode(fd, real):
                with contextlib.suppress(OSError):
                    os.unlink(real)
        finally:
            os.close(fd)  # closing the last descriptor releases the flock


def _open_locked(real: Path, shown: str | os.PathLike) -> tuple[int, bool]:
    """Open ``real`` (creating it) and take its flock; return the descriptor and whether it was made.

    A writer that removed the file between our open and our lock leaves us holding a lock on a
    file no name reaches: the open is repeated until the lock is on the file ``real`` names.
    """
    while True:
        try:
            fd = os.open(real, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            created = True
        except FileExistsError:
            try:
                fd = os.open(real, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            except OSError as err:
                raise LogPathError(f"{os.fspath(shown)}: cannot open this log: {err.strerror}") from None
            created = False
        except OSError as err:
            raise LogPathError(f"{os.fspath(shown)}: cannot create this log: {err.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _flock_holder(fd) or "another process"
            os.close(fd)
            raise LogInUseError(f"{os.fspath(shown)}: another tuning run ({holder}) is writing this log: "
                                "wait for it, or write to another log") from None
        except BaseException:
            os.close(fd)
            raise
        if _same_inode(fd, real):
            return fd, created
        os.close(fd)


def _same_inode(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _flock_holder(fd: int) -> str | None:
    """``"pid N"`` of the process holding a flock on the file of ``fd``, from ``/proc/locks``."""
    st = os.fstat(fd)
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                fields = line.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device:
                    return f"pid {fields[4]}"
    except OSError:
        pass
    return None


def lock_holder(path: str | os.PathLike) -> str | None:
    """Return who holds the tuning lock of the log at ``path`` (``"pid N"``), or None when it is free.

    Nothing is created when the log does not exist.

    Parameters
    ----------
    path : str or path

    Returns
    -------
    str or None
    """
    try:
        fd = os.open(real_log_path(path), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _flock_holder(fd) or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


#: Longest file name of a log (the file system's limit).
MAX_LOG_NAME = 255


def log_problem(log: str | os.PathLike, reading: bool = False) -> str | None:
    """What keeps ``log`` from being a tuning log, or None.

    One rule for every command: ``tune`` appends to a log, so a log it writes may not exist
    yet; ``best``, ``inspect`` and ``apply`` read one.  A FIFO or a
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
    LogPathError
        When its directory (or the nearest that exists) is not a directory or not writable.
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
    where = real.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise LogPathError(f"{os.fspath(out)}: cannot write a log there: {where} is not a directory")
    if not os.access(where, os.W_OK | os.X_OK):  # a read-only file system or directory
        raise LogPathError(f"{os.fspath(out)}: cannot write a log in {where}: it is not writable")


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
    write_lines(real_log_path(out), lines, sync=True)
