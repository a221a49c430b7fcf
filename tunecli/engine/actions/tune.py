"""``tune_tasks``: tune every task of a job, appending to its log, resuming from it.

The tasks are created (and so checked) before any is tuned (``job.network.job_task_set``).  The
log is read once: each task's ``TaskHistory`` (``log.task_history``: its records, trials and best)
goes to its progress, to the task scheduler and to its tuner (``Tuner.resume``): the tuner never
proposes a config index that is in the log, and a model-based tuner starts from what those
records taught it.  Configs in the log count toward
``n_trial``: a task is done when the log holds ``n_trial`` of its configs (or its whole space).
Every measurement is appended to the log and flushed as soon as it finishes — not when its
batch is over (``log_to_file`` streams through the ``on_result`` hook of ``measure_batch``) — so
an interrupted or killed run loses no finished measurement, only the ones still in flight.

Each task's first trial is the config its untuned build runs (``tuner.untuned``: the pre-tuned
package's record or the template's fallback), unless the log holds it already: the log's best
is then never a config slower than not tuning, so a short tune cannot make a network slower.

With ``tuner.budget`` the tasks share one trial budget instead: a task scheduler
(``engine.tuner.task_scheduler``, the job's ``tuner.task_scheduler``) gives it round by round to
the task where the weighted latency ``sum(weight * best latency)`` is expected to gain most
(tasks that are alternatives of one operator counted once, at the faster's latency).
The records already in the log count toward the budget, each for its task.

With ``tuner.remeasure`` (K) each task's K best configs are measured again once its tuning ends
(``engine.tuner.remeasure``; with a budget, after the budget is spent) and those records are
appended too: a time inflated by other load during tuning is then corrected, as whoever reads
the log takes each config's lowest cost.  They count as ``remeasured``, not as trials, and a
resumed run does not measure a config again twice (two records of a config mean it was).

A model job's tasks are extracted from its network (``network.job_task_set``), each weighted by
how often the network runs it, with the groups of tasks that implement one operator.  The tune
command's entry (``actions.job_file.tune_job``) loads the job once, holds the log's lock and runs
the graph tuner step after this one (``actions.tune_graph``) with the same worker pools.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tunecli.engine.job.model_spec import GraphTuning
from tunecli.engine.job.network import JobTasks
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tuning_spec import DEFAULT_TASK_SCHEDULER
from tunecli.engine.log.log_files import log_problem, real_log_path
from tunecli.engine.log.record import read_log
from tunecli.engine.log.task_history import TaskHistory, task_histories
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.task import Task
from tunecli.engine.task.text import config_text, task_label
from tunecli.engine.tuner.alternatives import operator_groups, weighted_latency
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.remeasure import remeasure_candidates, remeasure_top
from tunecli.engine.tuner.task_scheduler import TaskScheduler
from tunecli.engine.tuner.tuner import Tuner
from tunecli.engine.tuner.tuner_kinds import tuner_kind
from tunecli.engine.tuner.untuned import measure_untuned, with_records
from tunecli.errors import JobError


@dataclass(frozen=True)
class TuneEvent:
    """Progress of one task, sent to the ``on_event`` callback of ``tune_job``.

    Attributes
    ----------
    kind : {"start", "batch", "remeasure", "end"}
        ``"batch"`` is sent after every finished measurement (not only at the end of a batch),
        re-measurements included; ``"remeasure"`` when the task's best configs are about to be
        measured again.
    index, n_tasks : int
        Which task of how many (0-based index).
    label : str
        The task's template name and arguments.
    total : int
        Trials wanted for this task (``n_trial``, at most the size of its space); with a budget,
        the most it can get (the budget, at most the size of its space).
    done : int
        Trials in the log for this task, including those of this run.
    cur_flops, best_flops : float
        FLOPS of the last measurement (0 when it failed), and the best so far (log included).
    errors : int
        Failed measurements in this run.
    elapsed : float
        Seconds since this task started.
    budget : int or None
        The job's budget (trials for all tasks), None when it gives trials per task.
    spent : int
        Trials of all tasks in the log, this run's included (without a budget: of the tasks
        started so far).
    all_trials : int
        Trials wanted for all tasks: the budget, or the sum of the tasks' ``total``.
    remeasuring : int
        With ``"remeasure"``: how many configs are measured again.
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
    budget: int | None = None
    spent: int = 0
    all_trials: int = 0
    remeasuring: int = 0


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
    weight: float = 1.0
    remeasured: int = 0  #: measurements of configs measured before (``tuner.remeasure``), not trials

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
    budget: int | None = None
    task_scheduler: str | None = None
    remeasure: int = 0  #: the job's ``tuner.remeasure`` (K best configs of each task measured again)
    tasks: list[TaskOutcome] = field(default_factory=list)
    model: str | None = None  #: the network of a model job
    graph: GraphTuning | None = None  #: what the graph tuner chose (model jobs with graph_tuner)
    #: groups of task indices that implement one operator (a build runs the fastest of each)
    alternatives: list[list[int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every operator has a task with a valid config (an alternative without one is not
        needed: the build runs another of its operator's tasks)."""
        return not self.unconfigured()

    def unconfigured(self) -> list[TaskOutcome]:
        """The tasks without a valid config whose operator has no other task with one."""
        groups = operator_groups(len(self.tasks), self.alternatives)
        return [self.tasks[i] for g in groups if not any(self.tasks[j].ok for j in g) for i in g]

    @property
    def weighted_latency(self) -> float | None:
        """``sum(weight * best latency)`` in seconds over the tasks, the alternatives of an operator
        at the fastest's (``tuner.alternatives``; None while an operator has no config)."""
        if not self.tasks:
            return None
        latency = weighted_latency([t.best_cost if t.best_cost is not None else math.inf for t in self.tasks],
                                   [t.weight for t in self.tasks],
                                   operator_groups(len(self.tasks), self.alternatives))
        return latency if math.isfinite(latency) else None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        out = asdict(self)
        for task, entry in zip(self.tasks, out["tasks"], strict=True):
            entry["ok"] = task.ok
        out["ok"] = self.ok
        out["weighted_latency"] = self.weighted_latency
        return out


def prepare_log(log_path: Path) -> None:
    """Make the log's directory; refuse a path that cannot be a log (``log_files.log_problem``).

    Raises
    ------
    JobError
        Naming the log.
    """
    problem = log_problem(log_path)
    if problem:
        raise JobError(f"{log_path}: {problem}")
    try:
        real_log_path(log_path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise JobError(f"{log_path}: cannot create the log's directory {log_path.parent}: "
                       f"{err.strerror}") from None


def tune_tasks(job: Job, found: JobTasks, measure_option: Callable[[], dict],
               on_event: Callable[[TuneEvent], None] | None = None) -> TuneSummary:
    """Tune the tasks of ``job`` in order (or with its budget), resuming from the records of its log.

    Parameters
    ----------
    job : Job
    found : JobTasks
        Every task of the job (``job.network.job_task_set``).
    measure_option : callable
        Returns the ``measure_option`` to measure with (made when a task first needs measuring).
    on_event : callable, optional
        Receives a ``TuneEvent`` when a task starts, after every measurement, and at its end.

    Returns
    -------
    TuneSummary
    """
    log_path = Path(job.log)
    tasks, weights = list(found.tasks), list(found.weights)
    logged = list(read_log(log_path)) if log_path.exists() else []
    history = [(r.inp, r.result) for r in logged]
    histories = task_histories(tasks, logged)
    summary = TuneSummary(job.name, job.log, str(tasks[0].target), job.tuner.kind, job.tuner.seed,
                          job.tuner.budget, job.tuner.task_scheduler, job.tuner.remeasure,
                          alternatives=[list(group) for group in found.alternatives])
    emit = on_event or (lambda event: None)
    if job.tuner.budget is not None:
        summary.tasks.extend(_tune_scheduled(job, found, history, histories, measure_option, emit))
    else:
        all_trials = sum(min(job.tuner.n_trial, len(task.config_space)) for task in tasks)
        for index, task in enumerate(tasks):
            before = sum(t.previous + t.measured for t in summary.tasks)
            summary.tasks.append(_tune_task(job, index, len(tasks), task, weights[index], history,
                                            histories[index], measure_option, emit, (before, all_trials)))
    return summary


class _TaskProgress:
    """One task's outcome, kept up to date from its records and sent as ``TuneEvent``s."""

    def __init__(self, outcome: TaskOutcome, task: Task, n_tasks: int, known: TaskHistory,
                 emit: Callable[[TuneEvent], None], budget: int | None = None,
                 spent: Callable[[], int] = lambda: 0, all_trials: int = 0) -> None:
        self.outcome, self.task, self.n_tasks, self.emit = outcome, task, n_tasks, emit
        self.budget, self.spent, self.all_trials = budget, spent, all_trials or (budget or 0)
        self.records = list(known.records)  # the task's records, this run's appended
        outcome.previous = known.trials
        if known.best is not None:
            _consider(outcome, task, *known.best)
        self.label = task_label(task)
        self.tic = time.time()

    def event(self, kind: str, cur: float = 0.0) -> None:
        """Send an event of this task."""
        self.emit(self._event(kind, cur))

    def _event(self, kind: str, cur: float = 0.0) -> TuneEvent:
        o = self.outcome
        return TuneEvent(kind, o.index, self.n_tasks, self.label, o.n_trial, o.previous + o.measured, cur,
                         o.best_flops, o.errors, time.time() - self.tic, self.budget, self.spent(),
                         self.all_trials)

    def on_result(self, _tuner: Tuner, inp: MeasureInput, res: MeasureResult) -> None:
        """Count one measurement of this run."""
        o = self.outcome
        o.measured += 1
        self.records.append((inp, res))
        if not res.ok:
            o.errors += 1
            o.first_error = o.first_error or _error_text(res)
        self.event("batch", _consider(o, self.task, inp, res))

    def remeasure(self, k: int, log: str, measure_option: Callable[[], dict]) -> None:
        """Measure the task's ``k`` best configs again (those not measured again yet), logging them."""
        due = len(remeasure_candidates(self.task, self.records, k))
        if not due:
            return
        self.emit(replace(self._event("remeasure"), remeasuring=due))

        def count(_tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
            for inp, res in zip(inputs, results, strict=True):
                self.outcome.remeasured += 1
                self.records.append((inp, res))
                self.event("batch", _consider(self.outcome, self.task, inp, res))

        remeasure_top(self.task, self.records, k, measure_option(), callbacks=[log_to_file(log), count])


def _outcome(index: int, task: Task, n_trial: int, weight: float = 1.0) -> TaskOutcome:
    space = len(task.config_space)
    return TaskOutcome(index, task.name, list(task.args), float(task.flop or 0), space, min(n_trial, space),
                       weight=weight)


def _tune_task(job: Job, index: int, n_tasks: int, task: Task, weight: float, history: list[tuple],
               known: TaskHistory, measure_option: Callable[[], dict],
               emit: Callable[[TuneEvent], None], totals: tuple[int, int] = (0, 0)) -> TaskOutcome:
    """Tune one task and return its outcome (``totals``: trials of the tasks before it, of all)."""
    outcome = _outcome(index, task, job.tuner.n_trial, weight)
    progress = _TaskProgress(outcome, task, n_tasks, known, emit,
                             spent=lambda: totals[0] + outcome.previous + outcome.measured,
                             all_trials=totals[1])
    progress.event("start")
    remaining = outcome.n_trial - outcome.previous
    callbacks = [log_to_file(job.log), _Streaming(progress.on_result)]
    if remaining > 0:
        untuned = measure_untuned(task, known, measure_option(), callbacks)
        if untuned:
            known, history, remaining = with_records(known, untuned), history + untuned, remaining - 1
    if remaining > 0:
        tuner = tuner_kind(job.tuner.kind).make(task, seed=job.tuner.seed, **job.tuner.options)
        if history:
            tuner.resume(known, history)
        tuner.tune(n_trial=remaining, measure_option=measure_option(),
                   early_stopping=job.tuner.early_stopping, callbacks=callbacks)
    if job.tuner.remeasure:
        progress.remeasure(job.tuner.remeasure, job.log, measure_option)
    progress.event("end")
    return outcome


def _tune_scheduled(job: Job, found: JobTasks, history: list[tuple], histories: list[TaskHistory],
                    measure_option: Callable[[], dict],
                    emit: Callable[[TuneEvent], None]) -> list[TaskOutcome]:
    """Tune the job's tasks with one budget spent by its task scheduler; return their outcomes."""
    tasks, weights = list(found.tasks), list(found.weights)
    budget = int(job.tuner.budget or 0)
    outcomes = [_outcome(i, task, budget, weights[i]) for i, task in enumerate(tasks)]

    def spent() -> int:
        return sum(o.previous + o.measured for o in outcomes)

    progress = [_TaskProgress(outcome, task, len(tasks), known, emit, budget, spent)
                for outcome, task, known in zip(outcomes, tasks, histories, strict=True)]
    histories, history = list(histories), list(history)
    for p in progress:
        p.event("start")
    for i, (task, p) in enumerate(zip(tasks, progress, strict=True)):
        if spent() >= budget:
            break
        untuned = measure_untuned(task, histories[i], measure_option(),
                                  [log_to_file(job.log), _Streaming(p.on_result)])
        histories[i], history = with_records(histories[i], untuned), history + untuned
    kind = tuner_kind(job.tuner.kind)
    scheduler = TaskScheduler(tasks, lambda task: kind.make(task, seed=job.tuner.seed, **job.tuner.options),
                              budget, weights, job.tuner.task_scheduler or DEFAULT_TASK_SCHEDULER,
                              round_trials=job.tuner.options.get("plan_size"),
                              early_stopping=job.tuner.early_stopping, history=history,
                              task_histories=histories, seed=job.tuner.seed, alternatives=found.alternatives)
    by_task = {id(task): p for task, p in zip(tasks, progress, strict=True)}

    def on_result(tuner: Tuner, inp: MeasureInput, res: MeasureResult) -> None:
        by_task[id(tuner.task)].on_result(tuner, inp, res)

    if scheduler.next_task() is not None:
        scheduler.tune(measure_option(), callbacks=[log_to_file(job.log), _Streaming(on_result)])
    for p in progress:
        if job.tuner.remeasure:
            p.remeasure(job.tuner.remeasure, job.log, measure_option)
        p.event("end")
    return [p.outcome for p in progress]


class _Streaming:
    """A tuner callback that takes each measurement as it finishes (``Tuner.tune`` streams to it)."""

    def __init__(self, on_result: Callable[[Tuner, MeasureInput, MeasureResult], None]) -> None:
        self.on_result = on_result

    def __call__(self, tuner: Tuner, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        for inp, res in zip(inputs, results, strict=True):
            self.on_result(tuner, inp, res)


def _error_text(res: MeasureResult) -> str:
    """``KIND: message`` of a failed measurement (its exception, when the result carries one)."""
    kind = MeasureErrorNo(int(res.error_no)).name
    return f"{kind}: {res.error}" if res.error is not None else kind


def _consider(outcome: TaskOutcome, task: Task, inp: MeasureInput, res: MeasureResult) -> float:
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
