"""``tune_job``: tune every task of a job, appending to its log, resuming from it.

For each task: create the task (all tasks are created, and so checked, before any is tuned),
read the records the log already holds for it (``log.task_records``: same workload, target and
config), and hand the log to the tuner with ``load_history``, which applies the same rule: the
tuner never proposes a config index that is in the log, and a model-based tuner starts from
what those records taught it.  Configs in the log count toward
``n_trial``: a task is done when the log holds ``n_trial`` of its configs (or its whole space).
Every measurement is appended to the log and flushed as soon as it finishes — not when its
batch is over (``log_to_file`` streams through the ``on_result`` hook of ``measure_batch``) — so
an interrupted or killed run loses no finished measurement, only the ones still in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tunecli.engine.job.measure_setup import close_measure_option, make_measure_option
from tunecli.engine.job.spec import Job, load_job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.job.text import config_text, workload_text
from tunecli.engine.log.log_files import exclusive_log, log_problem, real_log_path
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import read_log
from tunecli.engine.log.task_records import records_of
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.tuner_kinds import tuner_kind
from tunecli.errors import JobError


@dataclass(frozen=True)
class TuneEvent:
    """Progress of one task, sent to the ``on_event`` callback of ``tune_job``.

    Attributes
    ----------
    kind : {"start", "batch", "end"}
        ``"batch"`` is sent after every finished measurement (not only at the end of a batch).
    index, n_tasks : int
        Which task of how many (0-based index).
    label : str
        The task's template name and arguments.
    total : int
        Trials wanted for this task (``n_trial``, at most the size of its space).
    done : int
        Trials in the log for this task, including those of this run.
    cur_flops, best_flops : float
        FLOPS of the last measurement (0 when it failed), and the best so far (log included).
    errors : int
        Failed measurements in this run.
    elapsed : float
        Seconds since this task started.
    """

    kind: str
    index: int
    n_tasks: int
    label: str
    total: int
    done: int
    cur_flops: float = 0.0
    best_flops: float = 0.0
    errors: int = 0
    elapsed: float = 0.0


@dataclass
class TaskOutcome:
    """What tuning did for one task (part of ``TuneSummary``)."""

    index: int
    template: str
    args: list
    flop: float
    space: int
    n_trial: int
    previous: int = 0
    measured: int = 0
    errors: int = 0
    best_flops: float = 0.0
    best_cost: float | None = None
    best_index: int | None = None
    best_config: str | None = None
    first_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when a valid config is known for this task (measured now or before)."""
        return self.best_index is not None


@dataclass
class TuneSummary:
    """The result of ``tune_job``; ``as_dict()`` is what ``tunecli tune --json`` prints."""

    job: str
    log: str
    target: str
    tuner: str
    seed: int | None
    tasks: list[TaskOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every task has a valid config."""
        return all(t.ok for t in self.tasks)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        out = asdict(self)
        for task, entry in zip(self.tasks, out["tasks"], strict=True):
            entry["ok"] = task.ok
        out["ok"] = self.ok
        return out


def tune_job(path: str, n_trial: int | None = None, tuner: str | None = None, log: str | None = None,
             seed: int | None = None, on_event: Callable[[TuneEvent], None] | None = None) -> TuneSummary:
    """Tune every task of the job file at ``path``, resuming from its log.

    Parameters
    ----------
    path : str
        The YAML job file.
    n_trial, tuner, log, seed : optional
        Command-line overrides of the job's values.
    on_event : callable, optional
        Receives a ``TuneEvent`` when a task starts, after every measurement, and at its end.

    Returns
    -------
    TuneSummary

    Raises
    ------
    JobError
        When the job file, a template or its arguments are invalid (before anything is measured).
    """
    job = load_job(path).with_overrides(n_trial=n_trial, tuner=tuner, log=log, seed=seed)
    tasks = create_tasks(job)
    log_path = Path(job.log)
    _prepare_log(log_path)
    with exclusive_log(log_path):
        return _tune_tasks(job, tasks, log_path, on_event)


def _prepare_log(log_path: Path) -> None:
    """Make the log's directory; refuse a path that cannot be a log (``log_files.log_problem``)."""
    problem = log_problem(log_path)
    if problem:
        raise JobError(f"{log_path}: {problem}")
    try:
        real_log_path(log_path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JobError(f"{log_path}: cannot create the log's directory {log_path.parent}: "
                       f"{err.strerror}") from None


def _tune_tasks(job: Job, tasks: list, log_path: Path,
                on_event: Callable[[TuneEvent], None] | None) -> TuneSummary:
    """Tune ``tasks`` of ``job`` in order, resuming from the records in ``log_path``."""
    logged = list(read_log(log_path)) if log_path.exists() else []
    history = [(r.inp, r.result) for r in logged]
    # a record faster than any machine still marks its config as measured, but is nobody's best
    implausible = {id(r.result) for r in logged} - {id(r.result) for r in plausible(logged)}
    summary = TuneSummary(job.name, job.log, str(tasks[0].target), job.tuner.kind, job.tuner.seed)
    emit = on_event or (lambda event: None)
    options: list[dict] = []  # made once, when a task first needs measuring (starts the workers)

    def measure_option() -> dict:
        if not options:
            options.append(make_measure_option(job))
        return options[0]

    try:
        for index, task in enumerate(tasks):
            summary.tasks.append(_tune_task(job, index, len(tasks), task, history, implausible,
                                            measure_option, emit))
    finally:
        for option in options:
            close_measure_option(option)
    return summary


def task_label(task: Any) -> str:
    """Return ``name(arg, ...)`` for display."""
    return workload_text(task.name, task.args)


def _tune_task(job: Job, index: int, n_tasks: int, task: Any, history: list[tuple], implausible: set[int],
               measure_option: Callable[[], dict], emit: Callable[[TuneEvent], None]) -> TaskOutcome:
    """Tune one task and return its outcome."""
    records = records_of(history, task)
    measured = {inp.config.index for inp, _ in records}
    space = len(task.config_space)
    total = min(job.tuner.n_trial, space)
    outcome = TaskOutcome(index, task.name, list(task.args), float(task.flop or 0), space, total,
                          previous=len(measured))
    for inp, res in records:
        if id(res) not in implausible:
            _consider(outcome, task, inp, res)
    label = task_label(task)
    tic = time.time()

    def event(kind: str, cur: float = 0.0) -> TuneEvent:
        return TuneEvent(kind, index, n_tasks, label, total, outcome.previous + outcome.measured, cur,
                         outcome.best_flops, outcome.errors, time.time() - tic)

    emit(event("start"))
    remaining = total - len(measured)
    if remaining > 0:
        tuner = tuner_kind(job.tuner.kind).make(task, seed=job.tuner.seed, **job.tuner.options)
        if history:
            tuner.load_history(history)

        def on_result(_tuner: Any, inp: Any, res: Any) -> None:
            outcome.measured += 1
            if not res.ok:
                outcome.errors += 1
                outcome.first_error = outcome.first_error or _error_text(res)
            emit(event("batch", _consider(outcome, task, inp, res)))

        tuner.tune(n_trial=remaining, measure_option=measure_option(),
                   early_stopping=job.tuner.early_stopping,
                   callbacks=[log_to_file(job.log), _Streaming(on_result)])
    emit(event("end"))
    return outcome


class _Streaming:
    """A tuner callback that takes each measurement as it finishes (``Tuner.tune`` streams to it)."""

    def __init__(self, on_result: Callable[[Any, Any, Any], None]) -> None:
        self.on_result = on_result

    def __call__(self, tuner: Any, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results, strict=True):
            self.on_result(tuner, inp, res)


def _error_text(res: Any) -> str:
    """``KIND: message`` of a failed measurement (its exception, when the result carries one)."""
    kind = MeasureErrorNo(int(res.error_no)).name
    return f"{kind}: {res.error}" if res.error is not None else kind


def _consider(outcome: TaskOutcome, task: Any, inp: Any, res: Any) -> float:
    """Update the outcome's best with one record; return its FLOPS (0 for an error)."""
    if not res.ok:
        return 0.0
    cost = res.mean_cost
    flops = res.flops(task.flop)
    if outcome.best_cost is None or cost < outcome.best_cost:
        outcome.best_cost = cost
        outcome.best_flops = flops
        outcome.best_index = int(inp.config.index)
        outcome.best_config = config_text(inp.config)
    return flops
