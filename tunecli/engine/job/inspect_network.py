"""``inspect_network``: what a model job's network is made of.

The tasks extracted from it (workload, how often the network calls each) and the operators they
implement (each operator's tasks, calls and share of the network's FLOPs in tunable operators:
a convolution's direct and Winograd tasks are alternatives of one operator, whose FLOPs count
once), the fused kernels of its untuned build (count and names),
the peak intermediate memory of the executor's memory plan (beside what one buffer per value
would take and the largest activation) and the size of the built graph's parameters (weights,
transformed at build time).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.job.apply_network import quiet_build
from tunecli.engine.job.inspect_job import TaskView, inspect_job, task_view
from tunecli.engine.job.network import extract_network_tasks, job_tasks, load_network
from tunecli.engine.job.spec import Job, load_job
from tunecli.engine.job.tune_job import task_label
from tunecli.errors import JobError


@dataclass(frozen=True)
class NetworkTaskView:
    """One extracted task: its workload, the calls that may run it and their FLOPs."""

    index: int
    label: str
    occurrences: int
    flop: float


@dataclass(frozen=True)
class NetworkOperatorView:
    """One tunable operator: its alternative tasks (indices), calls and share of the tunable FLOPs."""

    index: int
    tasks: tuple[int, ...]
    occurrences: int
    flop: float
    share: float


@dataclass
class NetworkView:
    """What ``inspect_network`` found; ``as_dict()`` is the JSON form (sizes in bytes)."""

    job: str
    model: str
    target: str
    inputs: dict[str, list]
    tasks: list[NetworkTaskView] = field(default_factory=list)
    operators: list[NetworkOperatorView] = field(default_factory=list)
    kernels: dict[str, int] = field(default_factory=dict)  #: kernel name -> calls
    intermediate_bytes: int = 0
    unplanned_bytes: int = 0
    largest_activation_bytes: int = 0
    weight_bytes: int = 0

    @property
    def kernel_calls(self) -> int:
        """Kernel calls in one run of the network."""
        return sum(self.kernels.values())

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return dict(asdict(self), kernel_calls=self.kernel_calls)


def inspect_network(job: Job) -> NetworkView:
    """Describe a model job's network: tasks, operators, fused kernels, memory plan, weights.

    Parameters
    ----------
    job : Job
        A model job.

    Returns
    -------
    NetworkView

    Raises
    ------
    JobError
        For a bad model.
    """
    network = load_network(job)
    found = extract_network_tasks(job, network)
    total = sum(op.flop for op in found.operators) or 1.0
    view = NetworkView(job.name, network.label, str(job.target),
                       {name: [list(shape), dtype] for name, (shape, dtype) in network.inputs.items()})
    view.tasks = [NetworkTaskView(i, task_label(t.task), t.occurrences, t.flop)
                  for i, t in enumerate(found.tasks)]
    view.operators = [NetworkOperatorView(i, op.tasks, op.occurrences, op.flop, op.flop / total)
                      for i, op in enumerate(found.operators)]
    with PassContext(opt_level=3), quiet_build():
        lib = build(network.mod, target=job.target, params=network.params)
    plan = lib.plan
    view.kernels = dict(Counter(name for name, _ in plan.ops))
    view.intermediate_bytes, view.unplanned_bytes = plan.intermediate_bytes()
    view.largest_activation_bytes = plan.largest_output_bytes()
    view.weight_bytes = int(sum(np.asarray(_array(v)).nbytes for v in lib.get_params().values()))
    return view


def _array(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def inspect_job_file(path: str, task: int | None = None,
                     config: int | None = None) -> list[TaskView] | NetworkView:
    """Inspect a job file: a model job's network (:func:`inspect_network`), or each task's space.

    Parameters
    ----------
    path : str
    task, config : int, optional
        Jobs of tasks: only this task; also the loop nest of this config (see ``inspect_job``).

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
        return inspect_job(path, task=task, config=config)
    if task is None and config is None:
        return inspect_network(job)
    tasks, _ = job_tasks(job)
    if task is not None and not 0 <= task < len(tasks):
        raise JobError(f"{path}: there is no task {task}: the network has {len(tasks)} task(s), numbered "
                       f"0..{len(tasks) - 1}")
    indices = range(len(tasks)) if task is None else [task]
    return [task_view(path, i, tasks[i], config) for i in indices]
