"""Tuning logs: one JSON record per line, TVM's v0.2 format (v0.1 rows are read too).

A v0.2 line is ``json.dumps`` of (key order as written)::

    {"input": [TARGET, TASK_NAME, ARGS, KWARGS],
     "config": {"index": INT, "code_hash": null, "entity": [[NAME, TAG, VALUE], ...]},
     "result": [COSTS, ERROR_NO, ALL_COST, TIMESTAMP], "version": 0.2, "tvm_version": "0.14.0"}

Readers skip comments (``#``) and blank lines and warn once per malformed line, naming the file
and the line, then go on.  A decoded config remembers the ``tvm_version`` of its line, so a
record read and written back is byte-identical.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.target import parse_target
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.task import Task
from tunecli.errors import RecordError, TuneError

logger = logging.getLogger("autotvm")

AUTOTVM_LOG_VERSION = 0.2
TVM_VERSION = "0.14.0"
_ERROR_COSTS = (1e9,)


def encode(inp: MeasureInput, result: MeasureResult, protocol: str = "json") -> str:
    """Return the log line (without newline) of one measurement.

    Parameters
    ----------
    inp : MeasureInput
    result : MeasureResult
    protocol : {"json"}

    Returns
    -------
    str
    """
    if protocol != "json":
        raise RecordError(f"encode: Invalid log protocol: {protocol}")
    costs = result.costs if result.ok else _ERROR_COSTS
    row = {
        "input": (str(inp.target), inp.task.name, inp.task.args, inp.task.kwargs),
        "config": inp.config.to_json_dict(),
        "result": (tuple(costs), int(result.error_no), result.all_cost, result.timestamp),
        "version": AUTOTVM_LOG_VERSION,
        "tvm_version": getattr(inp.config, "tvm_version", None) or TVM_VERSION,
    }
    return json.dumps(row)


def _as_tuple(x: Any) -> Any:
    return tuple(_as_tuple(a) for a in x) if isinstance(x, list) else x


def _error_no(value: Any) -> Any:
    try:
        return MeasureErrorNo(value)
    except ValueError:
        return value


def _make_pair(target: str, name: str, args: Any, config: ConfigEntity, result: list) -> tuple:
    tgt = parse_target(target)
    task = Task(str(name), _as_tuple(args))
    task.target = tgt
    costs, error_no, all_cost, timestamp = result
    res = MeasureResult(tuple(costs), _error_no(error_no), all_cost, timestamp)
    config.cost = float(np.mean(res.costs)) if res.costs else None
    return MeasureInput(tgt, task, config), res


def decode(row: str, protocol: str = "json") -> tuple[MeasureInput, MeasureResult]:
    """Parse one log line (v0.2 or v0.1) into ``(MeasureInput, MeasureResult)``.

    Parameters
    ----------
    row : str
    protocol : {"json"}

    Returns
    -------
    tuple of (MeasureInput, MeasureResult)

    Raises
    ------
    RecordError
        When the line is not a well-formed record.
    """
    if protocol != "json":
        raise RecordError(f"decode: Invalid log protocol: {protocol}")
    try:
        obj = json.loads(row)
        if "v" in obj and "input" not in obj:  # v0.1: {"i": [tgt, name, args, kwargs, wkl, cfg], "r", "v"}
            target, name, args, _kwargs, _workload, cfg = obj["i"]
            config = ConfigEntity.from_json_dict(
                {"index": cfg["i"], "code_hash": cfg["c"], "entity": cfg["e"]})
            return _make_pair(target, name, args, config, obj["r"])
        target, name, args, _kwargs = obj["input"]
        config = ConfigEntity.from_json_dict(obj["config"])
        config.tvm_version = obj.get("tvm_version")
        return _make_pair(target, name, args, config, obj["result"])
    except RecordError:
        raise
    except (TuneError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise RecordError(f"malformed record ({type(err).__name__}: {err})") from None


def load_from_buffer(file: IO[str], name: str | None = None) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Yield the records of an open log, skipping comments and blank lines.

    A malformed line is skipped with one warning naming the file and the line number.

    Parameters
    ----------
    file : text file object
    name : str, optional
        Name used in warnings (defaults to the file's ``name``).

    Yields
    ------
    tuple of (MeasureInput, MeasureResult)
    """
    name = name or getattr(file, "name", "<buffer>")
    for lineno, line in enumerate(file, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            logger.warning("%s:%d: skipping a line that is not UTF-8 text", name, lineno)
            continue
        try:
            yield decode(text)
        except RecordError as err:
            logger.warning("%s:%d: skipping %s", name, lineno, err)


def load_from_file(filename: str | os.PathLike) -> Iterator[tuple[MeasureInput, MeasureResult]]:
    """Yield the records of a log file (see ``load_from_buffer``).

    Parameters
    ----------
    filename : str or path

    Yields
    ------
    tuple of (MeasureInput, MeasureResult)
    """
    try:
        # surrogateescape: a stray non-UTF-8 byte spoils its own line only (skipped with a warning)
        with open(filename, encoding="utf-8", errors="surrogateescape") as file:
            yield from load_from_buffer(file, os.fspath(filename))
    except OSError as err:
        raise RecordError(f"cannot read log {os.fspath(filename)}: {err.strerror}") from None


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
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(encode(inp, res) + "\n" for inp, res in records)
        written.append(path)
    return written
