"""Callbacks run by ``Tuner.tune`` after every measured batch: ``cb(tuner, inputs, results)``.

A callback may also *stream*: when it has an ``on_result(tuner, inp, res)`` method,
``Tuner.tune`` calls that as soon as each measurement of a batch finishes and does not call the
callback for the batch (each record reaches it exactly once).  ``log_to_file`` streams: it
appends each record and flushes it the moment it is measured (the log is the database: a crash
or kill loses no finished measurement).  ``progress_bar`` prints TVM's one-line progress.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING, Protocol

import numpy as np

from tunecli.engine.log.record import Record, encode
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.errors import LogPathError, TuneError

if TYPE_CHECKING:
    from tunecli.engine.tuner.tuner import Tuner

logger = logging.getLogger("autotvm")

SI_PREFIXES = "yzafpn\xb5m kMGTPEZY"


def format_si_prefix(x: float, si_prefix: str) -> float:
    """Scale ``x`` by an SI prefix (``"G"`` divides by 1e9, ``" "`` by 1).

    Parameters
    ----------
    x : float
    si_prefix : str
        One of ``yzafpnµm kMGTPEZY``.

    Returns
    -------
    float
    """
    if len(si_prefix) != 1 or si_prefix not in SI_PREFIXES:
        raise TuneError(f"Invalid SI prefix: {si_prefix!r} (use one of {SI_PREFIXES!r})")
    return float(x) / 10 ** (SI_PREFIXES.index(si_prefix) * 3 - 24)


class LogToFile:
    """The callback of :func:`log_to_file`: ``cb(tuner, inputs, results)`` appends a batch,
    ``cb.on_result(tuner, inp, res)`` one record (what ``Tuner.tune`` calls per measurement)."""

    def __init__(self, file_out: str | os.PathLike | IO[str], protocol: str = "json") -> None:
        self.file_out = file_out
        self.protocol = protocol

    def _write(self, pairs: Iterable[Record]) -> None:
        if isinstance(self.file_out, (str, os.PathLike)):
            lines = "".join(encode(inp, res, self.protocol) + "\n" for inp, res in pairs)
            if _ends_inside_a_line(self.file_out):  # a crash mid-write left half a line
                lines = "\n" + lines
            append_whole(self.file_out, lines.encode("utf-8"))
        else:
            self._write_to(self.file_out, pairs)

    def _write_to(self, file: IO[str], pairs: Iterable[Record]) -> None:
        for inp, res in pairs:
            file.write(encode(inp, res, self.protocol) + "\n")
            file.flush()

    def __call__(self, _tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        self._write(zip(inputs, results, strict=True))

    def on_result(self, _tuner: Tuner, inp: MeasureInput, res: MeasureResult) -> None:
        """Append one record and flush it."""
        self._write([(inp, res)])


def append_whole(path: str | os.PathLike, data: bytes) -> None:
    """Append ``data`` to the file at ``path`` whole, or not at all.

    Raises
    ------
    LogPathError
        When the write fails (a full or read-only disk): the file is cut back to its size before
        the write, so no torn record stays, and the message names the file and how to resume.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as err:
        raise LogPathError(f"{os.fspath(path)}: cannot append to the log: {err.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        done = 0
        try:
            while done < len(data):
                done += os.write(fd, data[done:])
        except OSError as err:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise LogPathError(
                f"{os.fspath(path)}: cannot append to the log: {err.strerror}; every record written "
                "before is kept: make room (or fix the disk) and run the same command again to resume"
            ) from None
    finally:
        os.close(fd)


def _ends_inside_a_line(path: str | os.PathLike) -> bool:
    """True when the file exists, is not empty, and its last byte is not a newline."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            if file.tell() == 0:
                return False
            file.seek(-1, os.SEEK_END)
            return file.read(1) != b"\n"
    except FileNotFoundError:
        return False


def log_to_file(file_out: str | os.PathLike | IO[str], protocol: str = "json") -> LogToFile:
    """Return a callback appending every record to ``file_out``, flushed as soon as it is measured.

    Parameters
    ----------
    file_out : str, path or writable text file object
        A path is opened in append mode on every write.
    protocol : {"json"}

    Returns
    -------
    LogToFile
        Callable as ``cb(tuner, inputs, results)`` (TVM's protocol); ``Tuner.tune`` uses its
        ``on_result(tuner, inp, res)`` to write each record the moment its measurement finishes.
    """
    return LogToFile(file_out, protocol)


class RecordDatabase(Protocol):
    """Where :func:`log_to_database` saves records."""

    def save(self, inp: MeasureInput, res: MeasureResult) -> None:
        """Store one measurement."""


def log_to_database(db: RecordDatabase) -> Callable[..., None]:
    """Return a callback saving every record with ``db.save(inp, res)``.

    Parameters
    ----------
    db : object with ``save(inp, res)``

    Returns
    -------
    callable
    """

    def _callback(_tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        for inp, res in zip(inputs, results, strict=True):
            db.save(inp, res)

    return _callback


class Monitor:
    """A callback recording the FLOPS (0 on error) and timestamp of every measurement."""

    def __init__(self) -> None:
        self.scores: list[float] = []
        self.timestamps: list[float] = []

    def __call__(self, tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        for inp, res in zip(inputs, results, strict=True):
            self.scores.append(res.flops(inp.task.flop))
            self.timestamps.append(res.timestamp)

    def reset(self) -> None:
        """Forget everything recorded."""
        self.scores = []
        self.timestamps = []

    def trial_scores(self) -> np.ndarray:
        """Return the FLOPS of every trial in order.

        Returns
        -------
        numpy.ndarray
        """
        return np.array(self.scores)

    def trial_timestamps(self) -> np.ndarray:
        """Return the timestamp of every trial in order.

        Returns
        -------
        numpy.ndarray
        """
        return np.array(self.timestamps)


class _ProgressBar:
    """TVM's progress line, rewritten in place after every batch."""

    def __init__(self, total: int, prefix: str, si_prefix: str, out: IO[str] | None):
        format_si_prefix(0, si_prefix)
        self.total, self.prefix, self.si_prefix = total, prefix, si_prefix
        self.out = out
        self.ct = 0
        self.cur_flops = 0.0
        self.best_flops = 0.0
        self.tic = time.time()
        self.finished = False
        self._show()

    def _stream(self) -> IO[str]:
        return self.out if self.out is not None else sys.stdout

    def _enabled(self) -> bool:
        return not logger.isEnabledFor(logging.DEBUG)

    def _show(self) -> None:
        if not self._enabled():
            return
        stream = self._stream()
        stream.write("\r%s Current/Best: %7.2f/%7.2f %sFLOPS | Progress: (%d/%d) | %.2f s" % (  # noqa: UP031
            self.prefix, format_si_prefix(self.cur_flops, self.si_prefix),
            format_si_prefix(self.best_flops, self.si_prefix), self.si_prefix, self.ct, self.total,
            time.time() - self.tic))
        stream.flush()

    def __call__(self, tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        self.ct += len(inputs)
        flops = 0.0
        for inp, res in zip(inputs, results, strict=True):
            if res.ok:
                flops = res.flops(inp.task.flop)
        self.cur_flops = flops
        self.best_flops = tuner.best_flops
        self._show()

    def done(self) -> None:
        """Finish the line with `` Done.`` (also done when the callback is garbage-collected)."""
        if not self.finished:
            self.finished = True
            if self._enabled():
                self._stream().write(" Done.\n")

    def __del__(self) -> None:
        try:
            self.done()
        except (ValueError, AttributeError):  # stream already closed at interpreter exit
            pass


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G",
                 out: IO[str] | None = None) -> Callable[..., None]:
    """Return a callback printing ``<prefix> Current/Best: ... | Progress: (ct/total) | s``.

    Parameters
    ----------
    total : int
        Number of trials planned.
    prefix : str
    si_prefix : str
        Unit prefix of the FLOPS shown (``"G"``: GFLOPS).
    out : text stream, optional
        Defaults to ``sys.stdout`` at the time of writing.

    Returns
    -------
    callable
        Also has ``done()`` to finish the line explicitly.
    """
    return _ProgressBar(total, prefix, si_prefix, out)
