"""``best_of_logs``: the best configs per workload found in one or more tuning logs.

Logs are read tolerantly (TVM's own logs included: v0.2 and v0.1 rows, comments, malformed lines
skipped with a warning naming the line).  Records are grouped by task (target and workload, as
``log.task_records.record_key`` says) and ranked by mean cost; GFLOPS are shown where the FLOP
count of the workload is known, that is where its template is registered here (the built-ins,
or one already imported) and accepts the arguments.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tunecli.engine.job.log_path import log_problem
from tunecli.engine.job.text import config_text, workload_text
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.log.task_records import record_key
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.task import TASK_TABLE, create
from tunecli.errors import RecordError, TuneError


@dataclass(frozen=True)
class BestEntry:
    """One ranked record of a workload."""

    rank: int
    cost: float
    gflops: float | None
    index: int
    config: str
    timestamp: float


@dataclass
class WorkloadBest:
    """The best records of one (target, workload)."""

    target: str
    name: str
    args: tuple
    flop: float | None
    records: int
    errors: int
    best: list[BestEntry] = field(default_factory=list)

    @property
    def workload(self) -> str:
        """``name(args)`` for display."""
        return workload_text(self.name, self.args)


@dataclass
class BestReport:
    """What ``best_of_logs`` found; ``as_dict()`` is what ``tunecli best --json`` prints."""

    logs: list[str]
    records: int = 0
    errors: int = 0
    workloads: list[WorkloadBest] = field(default_factory=list)
    written: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            "logs": self.logs, "records": self.records, "errors": self.errors, "written": self.written,
            "workloads": [
                {"target": w.target, "workload": [w.name, *_plain(w.args)], "flop": w.flop,
                 "records": w.records, "errors": w.errors,
                 "best": [vars(e) for e in w.best]}
                for w in self.workloads
            ],
        }


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def best_of_logs(paths: list[str], top: int = 1, out: str | os.PathLike | None = None) -> BestReport:
    """Rank the valid records of the logs by mean cost, per (target, workload).

    Parameters
    ----------
    paths : list of str
        Tuning logs (tunecli's or TVM's).
    top : int
        How many records to keep per workload.
    out : path, optional
        Write the kept records there (a log ``apply`` / ``apply_history_best`` can use).

    Returns
    -------
    BestReport

    Raises
    ------
    RecordError
        When a log cannot be read.
    """
    report = BestReport(logs=[str(p) for p in paths])
    groups: dict[tuple, list[tuple]] = {}
    for path in paths:
        problem = log_problem(path, reading=True)
        if problem:
            raise RecordError(f"{path}: {problem}")
        for inp, res in load_from_file(path):
            report.records += 1
            groups.setdefault(record_key(inp), []).append((inp, res))
    kept: list[tuple] = []
    for pairs in groups.values():
        first = pairs[0][0]
        target, name, args = str(first.target), first.task.name, first.task.args
        valid = [(inp, res) for inp, res in pairs if res.ok]
        n_errors = len(pairs) - len(valid)
        report.errors += n_errors
        valid.sort(key=lambda pair: pair[1].mean_cost)
        flop = workload_flop(name, args, first.target)
        entry = WorkloadBest(target, name, args, flop, len(pairs), n_errors)
        for rank, (inp, res) in enumerate(valid[:top], start=1):
            entry.best.append(BestEntry(rank, res.mean_cost, res.gflops(flop) or None, int(inp.config.index),
                                        config_text(inp.config), float(res.timestamp)))
            kept.append((inp, res))
        report.workloads.append(entry)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as file:
            for inp, res in kept:
                file.write(encode(inp, res) + "\n")
        report.written = str(out)
    return report


def workload_flop(name: str, args: tuple, target: str | Target) -> float | None:
    """Return the FLOP count of a workload whose template is known here, else None.

    Parameters
    ----------
    name : str
        Template name.
    args : tuple
        Serialized arguments (as in the log).
    target : str or Target

    Returns
    -------
    float or None
    """
    if name not in TASK_TABLE:
        return None
    try:
        task = create(name, args, target)
    except (TuneError, ValueError, TypeError, AssertionError, ZeroDivisionError, IndexError):
        return None
    return float(task.flop) if task.flop else None
