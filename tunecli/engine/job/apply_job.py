"""``apply_job``: build each task of a job with its best logged config, check and benchmark it.

For every task: the best config of the log is looked up as TVM's ``apply_history_best`` does
(a task without a valid record gets the fallback config, with a warning); the kernel is built,
its output checked against the task's numpy reference (or, without one, against the untuned
default config), and timed next to the untuned default config (the fallback config: what a
schedule gives without tuning) and the numpy reference.  ``export`` writes ``.o``, ``.ll`` and
``.s`` files of the tuned kernels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tunecli.engine.build import build
from tunecli.engine.codegen.timer import time_calls
from tunecli.engine.job.spec import Job, load_job
from tunecli.engine.job.tasks import create_task
from tunecli.engine.job.text import config_text
from tunecli.engine.job.tune_job import task_label
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure.arrays import random_arguments
from tunecli.engine.ops.registry import tolerance
from tunecli.engine.task.space import FallbackConfigEntity
from tunecli.errors import RecordError

_SEED = 0


@dataclass
class AppliedTask:
    """What ``apply_job`` found for one task (times in seconds; None where not measured)."""

    index: int
    label: str
    flop: float
    config: str
    fallback: bool
    checked_against: str | None = None
    correct: bool | None = None
    max_error: float | None = None
    tuned: float | None = None
    default: float | None = None
    numpy: float | None = None
    files: list[str] = field(default_factory=list)

    @property
    def gflops(self) -> float | None:
        """GFLOPS of the tuned kernel."""
        return self.flop / self.tuned / 1e9 if self.flop and self.tuned else None


@dataclass
class ApplyReport:
    """The result of ``apply_job``; ``as_dict()`` is the JSON form."""

    job: str
    log: str
    target: str
    runs_here: bool
    tasks: list[AppliedTask] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """False when a kernel gave a wrong answer."""
        return all(t.correct is not False for t in self.tasks)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {"job": self.job, "log": self.log, "target": self.target, "runs_here": self.runs_here,
                "ok": self.ok, "tasks": [dict(vars(t), gflops=t.gflops) for t in self.tasks]}


def apply_job(path: str, log: str, export: str | None = None) -> ApplyReport:
    """Build every task of a job with the best config of ``log``; check, benchmark, export.

    Parameters
    ----------
    path : str
        The job file.
    log : str
        Tuning log(s) holding the best configs.
    export : str, optional
        Directory to write ``task<i>_<name>.{o,ll,s}`` of the tuned kernels into.

    Returns
    -------
    ApplyReport

    Raises
    ------
    JobError
        For an invalid job.
    RecordError
        When the log does not exist.
    """
    job = load_job(path)
    if not Path(log).is_file():
        raise RecordError(f"{log}: no such log file")
    history = ApplyHistoryBest(log)
    report: ApplyReport | None = None
    for index in range(len(job.tasks)):
        task = create_task(job, index)
        if report is None:
            report = ApplyReport(job.name, log, str(task.target), task.target.is_host)
        report.tasks.append(_apply_task(job, index, task, history, export, report.runs_here))
    assert report is not None  # a job has at least one task
    return report


def _apply_task(job: Job, index: int, task: Any, history: ApplyHistoryBest, export: str | None,
                runs_here: bool) -> AppliedTask:
    with history:
        config = history.query(task.target, task.workload)
    fallback = bool(getattr(config, "is_fallback", False))
    tuned, sch_outputs = _build(task, config, f"task{index}")
    out = AppliedTask(index, task_label(task), float(task.flop or 0),
                      config_text(config), fallback)
    if export is not None:
        out.files = _export(tuned, export, index, task.name)
    if not runs_here:
        return out
    default, _ = _build(task, FallbackConfigEntity(), f"task{index}_default")
    arrays = random_arguments([(a.shape, a.dtype) for a in tuned.arg_specs], _SEED)
    inputs = [a for i, a in enumerate(arrays) if i not in sch_outputs]
    reference = task.reference  # built-in templates' numpy reference (see task.create)
    tuned(*arrays)
    got = [arrays[i].copy() for i in sch_outputs]
    if reference is not None:
        expected = reference(*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        out.checked_against = "numpy"
    else:
        other = [a.copy() for a in arrays]
        default(*other)
        expected = [other[i] for i in sch_outputs]
        out.checked_against = "default config"
    out.correct, out.max_error = _compare(got, expected)
    r = job.runner
    timing = (r.number, r.repeat, r.min_repeat_ms)
    out.tuned = _mean(tuned.time_evaluator(*timing, warmup_ms=r.warmup_ms)(*arrays))
    out.default = _mean(default.time_evaluator(*timing, warmup_ms=r.warmup_ms)(*arrays))
    if reference is not None:
        out.numpy = _mean(time_calls(lambda: reference(*inputs), (), *timing, warmup_ms=r.warmup_ms))
    return out


def _build(task: Any, config: Any, name: str) -> tuple[Any, list[int]]:
    """Build ``config`` of ``task``; return the module and the indices of its output arguments."""
    with task.target:
        sch, args = task.instantiate(config)
    outputs = list(getattr(sch, "outputs", None) or ())
    found = [i for i, t in enumerate(args) if any(getattr(t, "op", None) is op for op in outputs)]
    return build(sch, args, target=task.target, name=name), found or [len(args) - 1]


def _compare(got: Sequence[np.ndarray], expected: Sequence[Any]) -> tuple[bool, float]:
    if len(got) != len(expected):
        return False, float("inf")
    worst = 0.0
    ok = True
    for a, b in zip(got, expected, strict=True):
        b = np.asarray(b, dtype=a.dtype).reshape(a.shape)
        rtol, atol = tolerance(a.dtype)
        err = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
        worst = max(worst, err)
        ok = ok and bool(np.allclose(a, b, rtol=rtol, atol=atol))
    return ok, worst


def _mean(costs: Sequence[float]) -> float:
    return float(np.mean(costs))


def _export(module: Any, directory: str, index: int, name: str) -> list[str]:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"task{index}_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    files = []
    for suffix in (".o", ".ll", ".s"):
        target = folder / (stem + suffix)
        module.save(target)
        files.append(str(target))
    return files
