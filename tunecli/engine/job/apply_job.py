"""``apply_job``: build each task of a job with its best logged config, check and benchmark it.

For every task: the best config of the log is looked up as TVM's ``apply_history_best`` does
(a task without a valid record gets the fallback config, with a warning); the kernel is built,
its output checked against the task's numpy reference (or, without one, against the untuned
default config), and timed next to the untuned default config (the fallback config: what a
schedule gives without tuning) and the numpy reference.  ``export`` writes ``.o``, ``.ll`` and
``.s`` files of the tuned kernels.

Kernels run where tuning runs them: in a measurement worker process
(:func:`tunecli.engine.measure.timing.measure_in_worker`), with the job's runner settings.  A
kernel that crashes or hangs, or a config that does not build, becomes that task's ``error``;
the other tasks are still built, checked and timed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tunecli.engine.build import build
from tunecli.engine.job.log_path import log_problem
from tunecli.engine.job.spec import Job, RunnerSpec, load_job
from tunecli.engine.job.tasks import create_task
from tunecli.engine.job.text import config_text
from tunecli.engine.job.tune_job import task_label
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure.arrays import ArgSpecT, normalize_arg_specs, random_arguments
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply, MeasureRequest, measure_in_worker
from tunecli.engine.measure.worker import Worker
from tunecli.engine.ops.registry import tolerance
from tunecli.engine.runtime import Module, time_calls
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
    error: str | None = None  #: why the tuned kernel was not built, checked or timed

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
        """False when a kernel gave a wrong answer or failed to build or run."""
        return all(t.correct is not False and t.error is None for t in self.tasks)

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
    problem = log_problem(log, reading=True)
    if problem:
        raise RecordError(f"{log}: {problem}")
    history = ApplyHistoryBest(log)
    report: ApplyReport | None = None
    worker = Worker(preload=("tunecli.engine.measure.timing",), name="tunecli-apply")
    try:
        for index in range(len(job.tasks)):
            task = create_task(job, index)
            if report is None:
                report = ApplyReport(job.name, log, str(task.target), task.target.is_host)
                if report.runs_here:
                    worker.start()  # warms up while the first kernel builds
            report.tasks.append(_apply_task(job, index, task, history, export, report.runs_here, worker))
    finally:
        worker.close()
    assert report is not None  # a job has at least one task
    return report


def _apply_task(job: Job, index: int, task: Any, history: ApplyHistoryBest, export: str | None,
                runs_here: bool, worker: Worker) -> AppliedTask:
    with history:
        config = history.query(task.target, task.workload)
    out = AppliedTask(index, task_label(task), float(task.flop or 0), config_text(config),
                      bool(getattr(config, "is_fallback", False)))
    try:
        tuned, outputs = _build(task, config, f"task{index}")
    except Exception as err:  # noqa: BLE001 - a config that does not build is this task's error
        out.error = f"the config does not build: {type(err).__name__}: {err}"
        return out
    if export is not None:
        out.files = _export(tuned, export, index, task.name)
    if not runs_here:
        return out
    specs = normalize_arg_specs(tuned.arg_specs)
    tuned_run = _measure(worker, tuned, specs, outputs, job.runner)
    if tuned_run.error_no:
        out.error = f"{MeasureErrorNo(tuned_run.error_no).name}: {tuned_run.error}"
        return out
    out.tuned = _mean(tuned_run.costs)
    try:
        default, _ = _build(task, FallbackConfigEntity(), f"task{index}_default")
        default_run = _measure(worker, default, specs, outputs, job.runner)
    except Exception as err:  # noqa: BLE001 - reported like a kernel that fails
        default_run = MeasureReply((), int(MeasureErrorNo.COMPILE_HOST), f"{type(err).__name__}: {err}")
    out.default = _mean(default_run.costs) if not default_run.error_no else None
    reference = task.reference  # built-in templates' numpy reference (see task.create)
    inputs = [a for i, a in enumerate(random_arguments(specs, _SEED)) if i not in outputs]
    if reference is not None:
        expected = reference(*inputs)
        expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        out.checked_against = "numpy"
    elif default_run.error_no:
        out.error = (f"the default config, the reference of the check, failed: "
                     f"{MeasureErrorNo(default_run.error_no).name}: {default_run.error}")
        return out
    else:
        expected = _outputs(default_run, specs)
        out.checked_against = "default config"
    out.correct, out.max_error = _compare(_outputs(tuned_run, specs), expected)
    if reference is not None:
        t = job.runner.timing
        out.numpy = _mean(time_calls(lambda: reference(*inputs), (), t.number, t.repeat, t.min_repeat_ms,
                                     warmup_ms=t.warmup_ms))
    return out


def _measure(worker: Worker, module: Module, specs: tuple[ArgSpecT, ...], outputs: list[int],
             runner: RunnerSpec) -> MeasureReply:
    """Run ``module`` once (sending its outputs back) and time it in ``worker``, as tuning does."""
    request = MeasureRequest(module.object_bytes(), module.entry_name, specs, timing=runner.timing,
                             seed=_SEED, output_indices=tuple(outputs), return_outputs=True)
    return measure_in_worker(worker, request)


def _outputs(reply: MeasureReply, specs: tuple[ArgSpecT, ...]) -> list[np.ndarray]:
    """The output arrays a reply sent back, in argument order."""
    return [np.frombuffer(raw, dtype=specs[i][1]).reshape(specs[i][0]) for i, raw in reply.outputs]


def _build(task: Any, config: Any, name: str) -> tuple[Module, list[int]]:
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
