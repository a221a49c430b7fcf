"""Tuning logs: one JSON record per line, TVM's v0.2 format (v0.1 rows are read too).

A v0.2 line is ``json.dumps`` of (key order as written)::

    {"input": [TARGET, TASK_NAME, ARGS, KWARGS],
     "config": {"index": INT, "code_hash": null, "entity": [[NAME, TAG, VALUE], ...]},
     "result": [COSTS, ERROR_NO, ALL_COST, TIMESTAMP], "version": 0.2, "tvm_version": "0.14.0"}

The line of a task's untuned build's config (``tuner.untuned``) adds ``"untuned": SOURCE``
(``UNTUNED_SOURCES``), a key TVM's reader does not read; a decoded config keeps it as ``untuned``.
Readers skip comments (``#``), blank lines and lines that are not records a measurement could
have written (``decode`` checks each field), and go on: the first skipped line of each kind is
named with its file and line, the rest are counted.  A decoded config remembers the
``tvm_version`` of its line, so a record read and written back is byte-identical.

``encode``/``decode`` also take TVM's ``protocol="pickle"``: the same record as a base64 line of
a pickle of plain values, read back by an unpickler that refuses every class (a line names no
code to run).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import math
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TypeAlias

import numpy as np

from tunecli.engine.log.log_files import write_log
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.target import parse_target
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.task import Task
from tunecli.errors import RecordError, TuneError

logger = logging.getLogger("autotvm")

AUTOTVM_LOG_VERSION = 0.2
TVM_VERSION = "0.14.0"
_ERROR_COSTS = (1e9,)
_ERROR_NUMBERS = frozenset(int(e) for e in MeasureErrorNo)
#: A line's ``"untuned"`` values: where the untuned build takes its config from (``ConfigSource`` kinds).
UNTUNED_SOURCES = ("package", "nearest", "default")
#: Longer lines are skipped unread (a record of TVM's largest workloads is a few kilobytes).
MAX_LINE_CHARS = 1 << 20
#: A value of a parsed log line (untrusted: every field is checked before use).
JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
#: One measurement as logs hold it.
Record: TypeAlias = tuple[MeasureInput, MeasureResult]


def encode(inp: MeasureInput, result: MeasureResult, protocol: str = "json") -> str:
    """Return the log line (without newline) of one measurement.

    Parameters
    ----------
    inp : MeasureInput
    result : MeasureResult
    protocol : {"json", "pickle"}

    Returns
    -------
    str
    """
    if protocol not in ("json", "pickle"):
        raise RecordError(f"encode: Invalid log protocol: {protocol}")
    costs = result.costs if result.ok else _ERROR_COSTS
    row = {
        "input": (str(inp.target), inp.task.name, inp.task.args, inp.task.kwargs),
        "config": inp.config.to_json_dict(),
        "result": (tuple(costs), int(result.error_no), result.all_cost, result.timestamp),
        "version": AUTOTVM_LOG_VERSION,
        "tvm_version": getattr(inp.config, "tvm_version", None) or TVM_VERSION,
    }
    if (untuned := getattr(inp.config, "untuned", None)) in UNTUNED_SOURCES:
        row["untuned"] = untuned
    if protocol == "pickle":
        return base64.b64encode(pickle.dumps(json.loads(json.dumps(row)))).decode()
    return json.dumps(row)


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain values (dicts, lists, strings, numbers) and refuses every class."""

    def find_class(self, module: str, name: str) -> type:
        raise _bad("not a record", f"a pickled record naming {module}.{name}")


def _unpickled(row: str) -> JsonValue:
    """The plain value of a ``pickle`` protocol line (lists where the pickle had tuples)."""
    try:
        value = _PlainUnpickler(io.BytesIO(base64.b64decode(row.strip(), validate=True))).load()
    except (binascii.Error, ValueError, EOFError, pickle.UnpicklingError) as err:
        raise _bad("not a record", f"a line that is not a pickled record ({err})") from None
    return json.loads(json.dumps(value))


def _as_tuple(x: object) -> object:
    return tuple(_as_tuple(a) for a in x) if isinstance(x, list) else x


def _bad(kind: str, message: str) -> RecordError:
    return RecordError(message, kind=kind)


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _checked_index(index: object) -> int:
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise _bad("bad config index", f"config index {index!r} is not a non-negative integer")
    return index


def _checked_result(result: object) -> MeasureResult:
    """The MeasureResult of a log's ``result`` field, refused unless it is one a run can produce."""
    if not isinstance(result, list) or len(result) != 4:
        raise _bad("not a record", "result is not [costs, error_no, all_cost, timestamp]")
    costs, error_no, all_cost, timestamp = result
    if isinstance(error_no, bool) or not isinstance(error_no, int) or error_no not in _ERROR_NUMBERS:
        raise _bad("bad error number", f"error number {error_no!r} is not one of "
                                       f"{min(_ERROR_NUMBERS)}..{max(_ERROR_NUMBERS)}")
    if not isinstance(costs, list):
        raise _bad("bad cost", f"costs {costs!r} are not a list")
    if error_no == MeasureErrorNo.NO_ERROR:
        if not costs:
            raise _bad("bad cost", "a successful measurement has no costs")
        for cost in costs:
            if not _is_number(cost) or cost < 0:
                raise _bad("bad cost", f"cost {cost!r} is not a non-negative number of seconds")
    if not _is_number(all_cost) or all_cost < 0 or not _is_number(timestamp):
        raise _bad("not a record", f"all_cost {all_cost!r} or timestamp {timestamp!r} is not a number")
    return MeasureResult(tuple(costs), MeasureErrorNo(error_no), all_cost, timestamp)


def _make_pair(target: object, name: object, args: object, config: ConfigEntity, result: object) -> Record:
    if not isinstance(target, str) or not isinstance(name, str) or not isinstance(args, list):
        raise _bad("not a record", "input is not [target, template name, [args], {kwargs}]")
    _checked_index(config.index)
    res = _checked_result(result)
    tgt = parse_target(target)
    task = Task(name, _as_tuple(args))
    task.target = tgt
    config.cost = float(np.mean(res.costs)) if res.ok else None
    return MeasureInput(tgt, task, config), res


def decode(row: str, protocol: str = "json") -> tuple[MeasureInput, MeasureResult]:
    """Parse one log line (v0.2 or v0.1) into ``(MeasureInput, MeasureResult)``.

    A record is refused unless a measurement could have written it: the config index is a
    non-negative integer, the error number is one of ``MeasureErrorNo``, and a successful
    measurement has at least one cost, each a finite number of seconds, not negative (TVM reads
    zero costs; ``log.plausibility`` drops them where a best record is chosen for a command).

    Parameters
    ----------
    row : str
    protocol : {"json", "pickle"}

    Returns
    -------
    tuple of (MeasureInput, MeasureResult)

    Raises
    ------
    RecordError
        When the line is not a well-formed record (its ``kind`` says what is wrong).
    """
    if protocol not in ("json", "pickle"):
        raise RecordError(f"decode: Invalid log protocol: {protocol}")
    try:
        obj = _unpickled(row) if protocol == "pickle" else json.loads(row)
    except ValueError as err:
        raise _bad("not JSON", f"a line that is not JSON ({err})") from None
    except RecursionError:
        raise _bad("not JSON", "a line of JSON nested too deeply to be a record") from None
    try:
        if not isinstance(obj, dict):
            raise _bad("not a record", "a JSON value that is not a record")
        if "v" in obj and "input" not in obj:  # v0.1: {"i": [tgt, name, args, kwargs, wkl, cfg], "r", "v"}
            target, name, args, _kwargs, _workload, cfg = obj["i"]
            config = ConfigEntity.from_json_dict(
                {"index": cfg["i"], "code_hash": cfg["c"], "entity": cfg["e"]})
            return _make_pair(target, name, args, config, obj["r"])
        target, name, args, _kwargs = obj["input"]
        config = ConfigEntity.from_json_dict(obj["config"])
        config.tvm_version = obj.get("tvm_version")
        if (untuned := obj.get("untuned")) not in (None, *UNTUNED_SOURCES):
            raise _bad("not a record", f"untuned {untuned!r} is not one of {', '.join(UNTUNED_SOURCES)}")
        config.untuned = untuned
        return _make_pair(target, name, args, config, obj["result"])
    except RecordError as err:
        raise _bad(err.kind, f"malformed record: {err}") from None
    except (TuneError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise _bad("not a record", f"malformed record ({type(err).__name__}: {err})") from None


@dataclass(frozen=True)
class LogRecord:
    """One record of a log and where it is: ``place`` is ``file:line``."""

    inp: MeasureInput
    result: MeasureResult
    path: str
    line: int

    @property
    def place(self) -> str:
        """``file:line`` of the record."""
        return f"{self.path}:{self.line}"


class SkipWarnings:
    """Warns of the first skipped line of each kind with its number, and sums up the others."""

    def __init__(self, name: str):
        self.name = name
        self.lines: dict[str, list[int]] = {}

    def add(self, lineno: int, kind: str, message: str) -> None:
        lines = self.lines.setdefault(kind, [])
        if not lines:
            logger.warning("%s:%d: skipping %s", self.name, lineno, message)
        lines.append(lineno)

    def summarise(self) -> None:
        for kind, lines in self.lines.items():
            more = lines[1:]
            if more:
                shown = ", ".join(map(str, more[:8])) + (", ..." if len(more) > 8 else "")
                logger.warning("%s: skipped %d more line%s of the same kind (%s): line%s %s", self.name,
                               len(more), "s" * (len(more) > 1), kind, "s" * (len(more) > 1), shown)


def _lines(file: IO[str]) -> Iterator[str | None]:
    """The lines of ``file``; None for a line longer than ``MAX_LINE_CHARS`` (read past, not kept)."""
    while True:
        line = file.readline(MAX_LINE_CHARS)
        if not line:
            return
        if len(line) < MAX_LINE_CHARS or line.endswith("\n"):
            yield line
            continue
        while (rest := file.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
            pass
        yield None


def read_records(file: IO[str], name: str | None = None) -> Iterator[LogRecord]:
    """Yield the records of an open log with their line numbers, skipping comments and blank lines.

    A line that is not a record (not UTF-8, not JSON, too long, or refused by ``decode``) is
    skipped: the first of each kind is named in a warning with its file and line, the others
    are counted in one warning at the end.

    Parameters
    ----------
    file : text file object
    name : str, optional
        Name used in warnings and places (defaults to the file's ``name``).

    Yields
    ------
    LogRecord
    """
    name = name or getattr(file, "name", "<buffer>")
    skipped = SkipWarnings(name)
    for lineno, line in enumerate(_lines(file), start=1):
        if line is None:
            skipped.add(lineno, "too long", f"a line longer than {MAX_LINE_CHARS} characters")
            continue
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            skipped.add(lineno, "not UTF-8", "a line that is not UTF-8 text")
            continue
        try:
            inp, res = decode(text)
        except RecordError as err:
            skipped.add(lineno, err.kind, str(err))
            continue
        yield LogRecord(inp, res, name, lineno)
    skipped.summarise()


def read_log(filename: str | os.PathLike) -> Iterator[LogRecord]:
    """Yield the records of a log file with their line numbers (see ``read_records``).

    Parameters
    ----------
    filename : str or path

    Yields
    ------
    LogRecord

    Raises
    ------
    RecordError
        When the file cannot be read.
    """
    try:
        # surrogateescape: a stray non-UTF-8 byte spoils its own line only (skipped with a warning)
        with open(filename, encoding="utf-8", errors="surrogateescape") as file:
            yield from read_records(file, os.fspath(filename))
    except IsADirectoryError:
        raise RecordError(f"{os.fspath(filename)}: is a directory, not a log file") from None
    except OSError as err:
        raise RecordError(f"cannot read log {os.fspath(filename)}: {err.strerror}") from None


def load_from_buffer(file: IO[str], name: str | None = None) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Yield the records of an open log, skipping comments, blank lines and malformed lines.

    Parameters
    ----------
    file : text file object
    name : str, optional
        Name used in warnings (defaults to the file's ``name``).

    Yields
    ------
    tuple of (MeasureInput, MeasureResult)
    """
    for record in read_records(file, name):
        yield record.inp, record.result


def load_from_file(filename: str | os.PathLike) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Yield the records of a log file (see ``read_records``).

    Parameters
    ----------
    filename : str or path

    Yields
    ------
    tuple of (MeasureInput, MeasureResult)
    """
    for record in read_log(filename):
        yield record.inp, record.result


def measure_str_key(inp: MeasureInput, include_config: bool = True) -> str:
    """Return a string identifying a measurement (target, task, args and optionally config).

    Parameters
    ----------
    inp : MeasureInput
    include_config : bool

    Returns
    -------
    str
    """
    config_str = str(inp.config) if include_config else ""
    return "".join([str(inp.target), inp.task.name, str(inp.task.args), str(inp.task.kwargs), config_str])


def split_workload(in_file: str | os.PathLike, clean: bool = True) -> list[str]:
    """Split a log into one file per workload: ``<in_file>.000.wkl``, ``.001.wkl``, ...

    Parameters
    ----------
    in_file : str or path
    clean : bool
        Keep one record per distinct config (the first one in the log).

    Returns
    -------
    list of str
        The files written.
    """
    groups: dict[str, list[tuple[MeasureInput, MeasureResult]]] = {}
    for inp, res in load_from_file(in_file):
        groups.setdefault(measure_str_key(inp, False), []).append((inp, res))
    written = []
    for i, records in enumerate(groups.values()):
        if clean:
            first: dict[str, tuple] = {}
            for inp, res in records:
                first.setdefault(measure_str_key(inp), (inp, res))
            records = list(first.values())
        path = f"{os.fspath(in_file)}.{i:03d}.wkl"
        write_log(path, (encode(inp, res) + "\n" for inp, res in records))
        written.append(path)
    return written
