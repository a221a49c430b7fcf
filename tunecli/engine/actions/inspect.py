"""``inspect``: what a job describes — each task's config space (and one config's loop nest), or a
model job's network.

``inspect_kernels`` prints each task's space exactly as ``print(task.config_space)`` does and, for
one config index, the loop nest the template lowers to (``task_view``); with each task the
template it runs as (when not the one the job names) and the config ``apply`` would build, with
where it came from (the job's log, a package, a nearest record, the fallback).  ``inspect_network``
describes a model job's network: the tasks extracted from it (workload, how often the network
calls each) and the operators they implement (each operator's tasks, calls and share of the
network's FLOPs in tunable operators: a convolution's direct and Winograd tasks are alternatives
of one operator, whose FLOPs count once), the fused kernels of its untuned build (count and
names), the peak intermediate memory of the executor's memory plan (beside what one buffer per
value would take and the largest activation) and the size of the built graph's parameters
(weights, transformed at build time).  The network is built as ``apply`` builds it without the
graph tuner: with the job's log when it exists (else untuned); each task the build ran says where
its config came from (``task.config_source``: log, package, nearest record, default), and the
build's summary line is kept.  A text model of several sequence lengths has one network per
length: each is built and described (``NetworkView.networks``), its tasks those of all of them.
What a log holds is ``log.log_summary.inspect_log``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from tunecli.engine.build import lower
from tunecli.engine.job.network import Network, build_network, extract_network_tasks, job_tasks, load_network
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tasks import check_task_index, create_tasks
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.plausibility import plausible
from tunecli.engine.log.record import JsonValue, read_log
from tunecli.engine.runtime import NDArray
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.scope import fallback_warnings_silenced
from tunecli.engine.task.task import Task
from tunecli.engine.task.text import config_text, task_label, workload_text
from tunecli.errors import JobError


@dataclass(frozen=True)
class TaskView:
    """One task of ``inspect_job``: its space text and, with a config, the lowered loop nest."""

    index: int
    label: str
    flop: float
    space: str
    config: str | None = None
    lowered: str | None = None
    #: the template the job names, when the task runs as another (a kernel job's ``conv2d_nchw.x86``)
    named: str | None = None
    #: the config ``apply`` builds (the job's log, else a package, a nearest record or the fallback)
    chosen: str | None = None
    #: where that config came from (``ConfigSource.text()``)
    config_source: str | None = None
    #: why the log's record answers (``ApplyHistoryBest.why``: the fastest, or the untuned config
    #: within the margin); None when the config is not the log's
    why: str | None = None


def inspect_kernels(job: Job, task: int | None = None, config: int | None = None) -> list[TaskView]:
    """Describe the tasks of a job: config spaces, and one config's loop nest.

    Parameters
    ----------
    job : Job
    task : int, optional
        Only this task (0-based); all by default.
    config : int, optional
        A config index: also lower the template with that config.

    Returns
    -------
    list of TaskView

    Raises
    ------
    JobError
        For an invalid task number or config index.
    """
    indices = check_task_index(job, task)
    tasks = create_tasks(job, indices)
    log = Path(job.log)
    history = ApplyHistoryBest(list(plausible(read_log(str(log)))) if log.is_file() else [])
    views = []
    for i, t in zip(indices, tasks, strict=True):
        with fallback_warnings_silenced(), t.target, history:  # the view says it falls back
            chosen = history.query(t.target, t.workload)
        named = job.tasks[i].template
        source = config_source(chosen)
        views.append(replace(task_view(job.path, i, t, config), chosen=config_text(chosen),
                             config_source=source.text(),
                             why=history.why(t.target, t.workload) if source.kind == "log" else None,
                             named=named if named != t.name else None))
    return views


def task_view(path: str, index: int, task: Task, config: int | None = None) -> TaskView:
    """The view of one task of the job file ``path``: its space and, with ``config``, its loop nest.

    Raises
    ------
    JobError
        For a config index outside the task's space.
    """
    space = task.config_space
    view = TaskView(index, task_label(task), float(task.flop or 0), str(space))
    if config is None:
        return view
    if not 0 <= config < space.range_length or not space.is_index_valid(config):
        raise JobError(f"{path}: config {config} is not a valid config index of task {index} "
                       f"(the space has {len(space)} configs, indices 0..{space.range_length - 1})")
    entity = space.get(config)
    with task.target:
        sch, args = task.instantiate(entity)
        lowered = str(lower(sch, args, name="main"))
    return TaskView(index, view.label, view.flop, view.space, config_text(entity), lowered)


@dataclass(frozen=True)
class NetworkTaskView:
    """One extracted task: its workload, the calls that may run it, their FLOPs and, when the build
    ran it, where its config came from (``ConfigSource.text()``; None: the build ran an alternative)."""

    index: int
    label: str
    occurrences: int
    flop: float
    config_source: str | None = None


@dataclass(frozen=True)
class NetworkOperatorView:
    """One tunable operator: its alternative tasks (indices), calls and share of the tunable FLOPs."""

    index: int
    tasks: tuple[int, ...]
    occurrences: int
    flop: float
    share: float


@dataclass
class NetworkBuildView:
    """One network of a model job (a text model's: one per sequence length) as its build is: inputs,
    fused kernels, memory plan, weights, where each task's config came from."""

    model: str
    inputs: dict[str, list[list[int] | str]]  #: input name -> [shape, dtype]
    kernels: dict[str, int] = field(default_factory=dict)  #: kernel name -> calls
    intermediate_bytes: int = 0
    unplanned_bytes: int = 0
    largest_activation_bytes: int = 0
    weight_bytes: int = 0
    summary: str = ""  #: the build's line: tasks tuned, chosen from the nearest records, fallen back
    #: workload text -> where its config came from, for each task the build ran (extracted or not)
    configs: dict[str, str] = field(default_factory=dict)
    #: workload text -> why the log's record answers, where it is not simply the fastest record
    #: (``ApplyHistoryBest.why``: the untuned config within the margin, or a record beyond it)
    why: dict[str, str] = field(default_factory=dict)

    @property
    def kernel_calls(self) -> int:
        """Kernel calls in one run of the network."""
        return sum(self.kernels.values())


@dataclass
class NetworkView(NetworkBuildView):
    """What ``inspect_network`` found; ``as_dict()`` is the JSON form (sizes in bytes).

    ``model`` is the job's model (every sequence length), ``tasks`` and ``operators`` those of all its
    networks; ``networks`` describes each network, and the fields of :class:`NetworkBuildView` are
    the first's (a job of one network: its own).
    """

    job: str = ""
    target: str = ""
    tasks: list[NetworkTaskView] = field(default_factory=list)
    operators: list[NetworkOperatorView] = field(default_factory=list)
    networks: list[NetworkBuildView] = field(default_factory=list)
    #: The indices of the job's ``tasks`` entries the network does not call (tuned after its tasks).
    listed: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, JsonValue]:
        """Return a JSON-serialisable dict."""
        networks = [dict(asdict(n), kernel_calls=n.kernel_calls) for n in self.networks]
        return dict(asdict(self), kernel_calls=self.kernel_calls, networks=networks)


def inspect_network(job: Job, network: Network, on_step: Callable[[str], None] | None = None) -> NetworkView:
    """Describe a model job's network: tasks, operators, fused kernels, memory plan, weights.

    Parameters
    ----------
    job : Job
        A model job.
    network : Network
        Its network, loaded (``job.network.load_network``).
    on_step : callable, optional
        Told what each long step starts doing (``"extracting the tunable tasks"``).

    Returns
    -------
    NetworkView

    Raises
    ------
    JobError
        For a bad model.
    """
    step = on_step or (lambda text: None)
    step("extracting the tunable tasks")
    found = extract_network_tasks(job, network)
    total = sum(op.flop for op in found.operators) or 1.0
    shapes = job.model.sample_shapes if job.model is not None else ()
    log = Path(job.log)
    history = ApplyHistoryBest(list(plausible(read_log(str(log))))) if log.is_file() else None
    networks: list[NetworkBuildView] = []
    sources: dict[tuple, str] = {}  # workload -> where its config came from (the first build running it)
    for k, shape in enumerate(shapes if len(shapes) > 1 else [None]):
        one = network if k == 0 else load_network(job, shape)
        step("building the network" + (f" {one.label}" if len(shapes) > 1 else ""))
        built, built_sources = _build_view(one, job, history)
        networks.append(built)
        for workload, source in built_sources.items():
            sources.setdefault(workload, source)
    model = job.model.label if job.model is not None and len(shapes) > 1 else network.label
    view = NetworkView(**{**vars(networks[0]), "model": model}, job=job.name, target=str(job.target),
                       networks=networks)
    view.tasks = [NetworkTaskView(i, task_label(t.task), t.occurrences, t.flop, sources.get(t.task.workload))
                  for i, t in enumerate(found.tasks)]
    view.operators = [NetworkOperatorView(i, op.tasks, op.occurrences, op.flop, op.flop / total)
                      for i, op in enumerate(found.operators)]
    in_network = {t.task.workload for t in found.tasks}
    for task in create_tasks(job):  # numbered after the network's, as tune numbers them (job_task_set)
        if task.workload not in in_network:
            view.listed.append(len(view.tasks))
            view.tasks.append(NetworkTaskView(len(view.tasks), task_label(task), 0, task.flop))
    return view


def _build_view(network: Network, job: Job, history: ApplyHistoryBest | None
                ) -> tuple[NetworkBuildView, dict[tuple, str]]:
    """One network built as ``apply`` builds it (with the job's log when it exists), and where each
    workload's config came from."""
    lib = build_network(network, job.target, *([history] if history is not None else []))
    summary = lib.summary
    anchors = summary.tuned + summary.nearest + summary.fallback
    view = NetworkBuildView(network.label, {name: [list(shape), dtype] for name, (shape, dtype)
                                            in network.inputs.items()})
    view.summary = summary.line()
    view.configs = {workload_text(a.task_name, a.workload[1:]): a.source.text() for a in anchors}
    stale = {workload for _, workload in history.stale_marks} if history is not None else set()
    for a in anchors:
        why = history.why(job.target, a.workload) if history is not None and a.source.kind == "log" else None
        if why is not None and ("faster" in why or a.workload in stale):  # a margin or a stale mark decided
            view.why[workload_text(a.task_name, a.workload[1:])] = why
    plan = lib.plan
    view.kernels = dict(Counter(name for name, _ in plan.ops))
    view.intermediate_bytes, view.unplanned_bytes = plan.intermediate_bytes()
    view.largest_activation_bytes = plan.largest_output_bytes()
    view.weight_bytes = int(sum(np.asarray(_array(v)).nbytes for v in lib.get_params().values()))
    return view, {a.workload: a.source.text() for a in anchors}


def _array(value: np.ndarray | NDArray) -> np.ndarray:
    return value.numpy() if hasattr(value, "numpy") else value


def inspect_network_tasks(job: Job, network: Network, task: int | None = None,
                          config: int | None = None) -> list[TaskView]:
    """The views of a model job's tasks (``job_tasks`` order, as ``tune`` numbers them): spaces, and
    one config's loop nest (see :func:`inspect_kernels`).

    Parameters
    ----------
    job : Job
    network : Network
    task, config : int, optional

    Raises
    ------
    JobError
        For a task number or config index out of range.
    """
    tasks, _ = job_tasks(job, network)
    if task is not None and not 0 <= task < len(tasks):
        raise JobError(f"{job.path}: there is no task {task}: the network has {len(tasks)} task(s), numbered "
                       f"0..{len(tasks) - 1}")
    indices: Sequence[int] = range(len(tasks)) if task is None else [task]
    return [task_view(job.path, i, tasks[i], config) for i in indices]
