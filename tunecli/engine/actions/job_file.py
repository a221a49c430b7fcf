"""Each job command's entry: the job file loaded once and handed, as a ``Job``, to the actions.

``tune_job`` (``tunecli tune``): kernel tuning (``actions.tune``) and, for a model job with a
``graph_tuner``, the graph tuner step after it (``actions.tune_graph``), under the log's lock and
with one set of worker pools.  ``apply_job_file`` (``tunecli apply``): a model job's network
(``actions.apply_network``) or each kernel of the job (``actions.apply_kernels``).
``inspect_job_file`` (``tunecli inspect JOB``): a model job's network or its tasks, or the tasks
of a job of kernels (``actions.inspect``).  This module is the only one of ``engine.actions``
that imports the others.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tunecli.engine.actions.apply_kernels import ApplyReport, apply_kernels
from tunecli.engine.actions.apply_network import NetworkApplyReport, apply_network
from tunecli.engine.actions.inspect import (
    NetworkView,
    TaskView,
    inspect_kernels,
    inspect_network,
    inspect_network_tasks,
)
from tunecli.engine.actions.tune import (
    TuneEvent,
    TuneSummary,
    measure_untuned_operators,
    prepare_log,
    tune_tasks,
)
from tunecli.engine.actions.tune_graph import tune_graph
from tunecli.engine.job.measure_setup import check_local_device, close_measure_option, make_measure_option
from tunecli.engine.job.network import job_task_set, load_network
from tunecli.engine.job.spec import load_job
from tunecli.engine.log.log_files import exclusive_log
from tunecli.engine.measure.batch import MeasureOption
from tunecli.engine.tuner.task_scheduler import budget_problem
from tunecli.errors import JobError


def tune_job(path: str, n_trial: int | None = None, tuner: str | None = None, log: str | None = None,
             seed: int | None = None, remeasure: int | None = None,
             on_event: Callable[[TuneEvent], None] | None = None, cluster: str | None = None,
             on_step: Callable[[str], None] | None = None) -> TuneSummary:
    """Tune every task of the job file at ``path``, resuming from its log.

    Parameters
    ----------
    path : str
        The YAML job file.
    n_trial, tuner, log, seed, remeasure : optional
        Command-line overrides of the job's values.
    cluster : str, optional
        The address of a cluster to build and time on (overrides ``cluster.address``).
    on_event : callable, optional
        Receives a ``TuneEvent`` when a task starts, after every measurement, and at its end.
    on_step : callable, optional
        Told when a step other than the tasks' tuning starts (a model job's extraction, the
        untuned build's operators, the graph tuner).

    Returns
    -------
    TuneSummary

    Raises
    ------
    JobError
        When the job file, a template or its arguments are invalid (before anything is measured).
    """
    job = load_job(path).with_overrides(n_trial=n_trial, tuner=tuner, log=log, seed=seed,
                                          remeasure=remeasure, cluster=cluster)
    check_local_device(job)
    network = load_network(job) if job.model is not None else None
    if network is not None and on_step is not None:
        on_step("extracting the tunable tasks")
    found = job_task_set(job, network)
    problem = budget_problem(job.tuner.budget, len(found.tasks))
    if problem:
        raise JobError(f"{job.path}: tuner.budget: {problem}")
    log_path = Path(job.log)
    prepare_log(log_path)
    options: list[MeasureOption] = []  # made when first needed (starts the worker pools), once

    def measure_option() -> MeasureOption:
        if not options:
            options.append(make_measure_option(job))
        return options[0]

    try:
        with exclusive_log(log_path):
            summary = tune_tasks(job, found, measure_option, on_event)
            if network is not None:
                measure_untuned_operators(job, network, found, measure_option, on_step)
                summary.model = job.model.label if job.model is not None else network.label
                if job.graph_tuner is not None and summary.ok:
                    if on_step is not None:
                        on_step(f"graph tuner ({job.graph_tuner.kind}): a layout for each convolution")
                    summary.graph = tune_graph(job, network, measure_option(), found.tasks)
    finally:
        for option in options:
            close_measure_option(option)
    return summary


def apply_job_file(path: str, log: str | None = None, export: str | None = None,
                   on_step: Callable[[str], None] | None = None) -> ApplyReport | NetworkApplyReport:
    """Apply a job file: a model job's network (``apply_network``), or each kernel of the job.

    Parameters
    ----------
    path : str
    log : str, optional
        The log of best configs (default: the job's log).
    export : str, optional
        Model job: the shared library to write; kernel job: the directory of kernel files.
    on_step : callable, optional
        Told what each long step starts doing (a model job's build and timing, a kernel job's tasks).

    Returns
    -------
    ApplyReport or NetworkApplyReport

    Raises
    ------
    JobError
        For an invalid job; RecordError when the log cannot be read; RPCError, TargetError when
        the job measures through RPC and no device of its key can run its kernels.
    """
    job = load_job(path)
    log = log if log is not None else job.log
    if job.model is None:
        return apply_kernels(job, log, export, on_step)
    return apply_network(job, log, export, on_step)


def inspect_job_file(path: str, task: int | None = None, config: int | None = None,
                     on_step: Callable[[str], None] | None = None) -> list[TaskView] | NetworkView:
    """Inspect a job file: a model job's network, or each task's space.

    Parameters
    ----------
    path : str
    task, config : int, optional
        Only this task; also the loop nest of this config (see ``inspect_kernels``).

    Returns
    -------
    list of TaskView or NetworkView

    Raises
    ------
    JobError
        For an invalid job, task number or config index.  A model job with ``task`` or ``config``
        gets the views of its network's tasks (``job_tasks`` order, as ``tune`` numbers them).
    """
    job = load_job(path)
    if job.model is None:
        return inspect_kernels(job, task=task, config=config)
    network = load_network(job)
    if task is None and config is None:
        return inspect_network(job, network, on_step)
    return inspect_network_tasks(job, network, task, config)
