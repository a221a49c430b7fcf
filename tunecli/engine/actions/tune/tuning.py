"""Tuning a job's tasks in order or with one budget, resuming from its log (see ``actions.tune``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tunecli.engine.actions.tune.tune_report import TaskOutcome, TuneEvent, TuneSummary
from tunecli.engine.job.network import JobTasks, Network
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tuning_spec import DEFAULT_TASK_SCHEDULER
from tunecli.engine.log.log_files import log_problem, real_log_path
from tunecli.engine.log.record import Record, read_log
from tunecli.engine.log.task_history import TaskHistory, task_histories
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.time_stats import LoadWindow
from tunecli.engine.task.task import Task
from tunecli.engine.task.text import config_text, task_label
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.remeasure import remeasure_candidates, remeasure_top
from tunecli.engine.tuner.task_scheduler import TaskScheduler
from tunecli.engine.tuner.tuner import Tuner
from tunecli.engine.tuner.tuner_kinds import tuner_kind
from tunecli.engine.tuner.untuned import (
    measure_untuned,
    measure_untuned_implementations,
    rematch_inputs,
    rematch_untuned,
    untuned_implementations,
    with_records,
)
from tunecli.errors import JobError


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


def tune_tasks(job: Job, found: JobTasks, measure_option: Callable[[], MeasureOption],
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
    window = LoadWindow()
    if job.tuner.budget is not None:
        summary.tasks.extend(_tune_scheduled(job, found, history, histories, measure_option, emit))
    else:
        all_trials = sum(min(job.tuner.n_trial, len(task.config_space)) for task in tasks)
        for index, task in enumerate(tasks):
            before = sum(t.previous + t.measured for t in summary.tasks)
            summary.tasks.append(_tune_task(job, index, len(tasks), task, weights[index], history,
                                            histories[index], measure_option, emit, (before, all_trials)))
    if job.runner.kind == "local" and job.cluster is None and any(t.measured for t in summary.tasks):
        summary.load = window.finish()  # timed on this machine
    return summary


def measure_untuned_operators(job: Job, network: Network, found: JobTasks,
                              measure_option: Callable[[], MeasureOption],
                              on_step: Callable[[str], None] | None = None) -> None:
    """Measure the untuned config of each implementation the network's untuned build runs where
    the job tunes another (``tuner.untuned.untuned_implementations``), unless the log holds it.

    Parameters
    ----------
    job : Job
    network : Network
    found : JobTasks
        The job's tasks (their workloads are the tuned ones).
    measure_option : callable
        Returns the ``measure_option`` to measure with (called only when something is measured).
    on_step : callable, optional
        Told when the step starts measuring.
    """
    others = untuned_implementations(network.mod, network.params, job.target,
                                     {task.workload for task in found.tasks})
    log_path = Path(job.log)
    logged = [(r.inp, r.result) for r in read_log(log_path)] if log_path.exists() else []
    told = "measuring what the untuned build runs in operators the job does not tune"
    measure_untuned_implementations(others, logged, measure_option, [log_to_file(job.log)],
                                    on_first=(lambda: on_step(told)) if on_step else None)


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

    def remeasure(self, k: int, log: str, measure_option: Callable[[], MeasureOption]) -> None:
        """Measure the task's ``k`` best configs again (those not measured again yet), logging them."""
        due = len(remeasure_candidates(self.task, self.records, k))
        if not due:
            return
        self.emit(replace(self._event("remeasure"), remeasuring=due))

        remeasure_top(self.task, self.records, k, measure_option(), callbacks=[log_to_file(log), self.count])

    def rematch(self, log: str, measure_option: Callable[[], MeasureOption]) -> None:
        """Measure the untuned config and the config that beats it again, in turns, when one does
        (``tuner.untuned.rematch_untuned``), logging them."""
        if rematch_inputs(self.task, self.records):
            rematch_untuned(self.task, self.records, measure_option(),
                            callbacks=[log_to_file(log), self.count])

    def count(self, _tuner: Tuner | None, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Count measurements made again (not trials)."""
        for inp, res in zip(inputs, results, strict=True):
            self.outcome.remeasured += 1
            self.records.append((inp, res))
            self.event("batch", _consider(self.outcome, self.task, inp, res))


def _outcome(index: int, task: Task, n_trial: int, weight: float = 1.0) -> TaskOutcome:
    space = len(task.config_space)
    return TaskOutcome(index, task.name, list(task.args), float(task.flop or 0), space, min(n_trial, space),
                       weight=weight)


def _tune_task(job: Job, index: int, n_tasks: int, task: Task, weight: float, history: list[Record],
               known: TaskHistory, measure_option: Callable[[], MeasureOption],
               emit: Callable[[TuneEvent], None], totals: tuple[int, int] = (0, 0)) -> TaskOutcome:
    """Tune one task and return its outcome (``totals``: trials of the tasks before it, of all); its
    new records are appended to ``history``, so the next tasks' tuners learn from them."""
    network_records, outcome = history, _outcome(index, task, job.tuner.n_trial, weight)
    progress = _TaskProgress(outcome, task, n_tasks, known, emit,
                             spent=lambda: totals[0] + outcome.previous + outcome.measured,
                             all_trials=totals[1])
    n_known = len(progress.records)
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
    if job.tuner.rematch:
        progress.rematch(job.log, measure_option)
    if job.tuner.remeasure:
        progress.remeasure(job.tuner.remeasure, job.log, measure_option)
    network_records.extend(progress.records[n_known:])
    progress.event("end")
    return outcome


def _tune_scheduled(job: Job, found: JobTasks, history: list[Record], histories: list[TaskHistory],
                    measure_option: Callable[[], MeasureOption],
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
        if job.tuner.rematch:
            p.rematch(job.log, measure_option)
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
