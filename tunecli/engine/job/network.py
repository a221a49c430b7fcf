"""The network of a model job and its tasks: what ``tune``, ``apply`` and ``inspect`` of a model
job share.

``load_network`` builds a built-in model (``network_models.MODELS``) or imports an ONNX file;
any problem (a corrupt file, an unsupported operator, a wrong input name or shape, an image too
small for the model) is one ``JobError`` naming the job's ``model`` field.  ``network_tasks``
extracts the tunable tasks as ``extract_from_program`` does (the job's target and ``ops``),
each with how often the network calls it; ``job_tasks`` puts them before the job's own
``tasks``, with their weights (occurrences, or the entries' ``weight``; a ``tasks`` entry of a
workload the network calls adds its ``weight`` to the network's task).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tunecli.engine.graph.extract import tunable_calls
from tunecli.engine.graph.frontend.onnx import from_onnx
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.type_infer import infer_types
from tunecli.engine.graph.types import TensorType
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.task.task import Task, create
from tunecli.errors import GraphError, JobError, TuneError


@dataclass(frozen=True)
class Network:
    """A model job's network, loaded.

    Attributes
    ----------
    label : str
        What the job names (``resnet-18 (1, 3, 224, 224) float32`` or the ONNX file).
    mod : IRModule
    params : dict of str to array
    inputs : dict of str to (shape, dtype)
        The data inputs (not the weights), in order.
    onnx : str or None
        The ONNX file it was imported from.
    """

    label: str
    mod: IRModule
    params: dict[str, Any] = field(repr=False)
    inputs: dict[str, tuple[tuple[int, ...], str]]
    onnx: str | None = None

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Seeded inputs in [0, 1) (integers in [0, 4)), by name."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, (shape, dtype) in self.inputs.items():
            kind = np.dtype(dtype).kind
            value = rng.integers(0, 4, size=shape) if kind in "iu" else rng.uniform(size=shape)
            out[name] = value.astype(dtype)
        return out


@dataclass(frozen=True)
class NetworkTask:
    """A tunable task of a network.

    Attributes
    ----------
    task : Task
    occurrences : int
        Calls of the network that run it.
    """

    task: Task
    occurrences: int

    @property
    def flop(self) -> float:
        """FLOPs of all its calls in one run of the network."""
        return float(self.task.flop or 0) * self.occurrences


def load_network(job: Job) -> Network:
    """Build or import the network of a model job.

    Parameters
    ----------
    job : Job
        A job with a ``model``.

    Returns
    -------
    Network

    Raises
    ------
    JobError
        Naming the ``model`` field: a corrupt ONNX file, an unsupported operator, an unknown input
        name, a shape of the wrong rank, an image the model cannot take.
    """
    spec = job.model
    if spec is None or spec.node is None:
        raise JobError(f"{job.path}: the job has no model")
    try:
        if spec.onnx is not None:
            mod, params = from_onnx(spec.onnx, shape=spec.inputs or None)
        else:
            model = MODELS[str(spec.name)]
            mod, params = model.load(spec.batch_size, spec.image_shape or model.image_shape, spec.dtype)
        fn = mod["main"]
        infer_types(fn)
    except TuneError as err:
        raise spec.node.error(str(err)) from None
    except (ValueError, TypeError, IndexError, ZeroDivisionError, AssertionError) as err:
        raise spec.node.error(f"{spec.label}: cannot build the model: {type(err).__name__}: {err}") from None
    inputs = {}
    for p in fn.params:
        if p.name_hint not in params:
            t = p.checked_type
            if not isinstance(t, TensorType):
                raise spec.node.error(f"input {p.name_hint!r} is not a tensor")
            inputs[p.name_hint] = (tuple(int(d) for d in t.shape), str(t.dtype))
    return Network(spec.label, mod, dict(params), inputs, spec.onnx)


def network_tasks(job: Job, network: Network) -> list[NetworkTask]:
    """The distinct tunable tasks of the job's network, in the order it first calls them.

    Raises
    ------
    JobError
        When the network has none of the job's ``ops``, or a template rejects a call's shapes.
    """
    where = job.model.node if job.model is not None and job.model.node is not None else None
    try:
        calls = tunable_calls(network.mod, network.params, job.target, job.ops)
    except GraphError as err:
        raise _error(job, where, str(err)) from None
    counts: dict[tuple, int] = {}
    first: dict[tuple, Any] = {}
    for impl in calls:
        counts[impl.workload] = counts.get(impl.workload, 0) + 1
        first.setdefault(impl.workload, impl)
    if not first:
        raise _error(job, where, f"{network.label} has no call of {', '.join(job.ops)} with a tunable "
                                 f"implementation for {job.target}")
    tasks = []
    for workload, impl in first.items():
        try:
            task = create(impl.task_name, impl.args, job.target)
        except TuneError as err:
            raise _error(job, where, f"template {impl.task_name} rejects {workload[1:]}: {err}") from None
        tasks.append(NetworkTask(task, counts[workload]))
    return tasks


def _error(job: Job, where: Any, message: str) -> JobError:
    return where.error(message) if where is not None else JobError(f"{job.path}: {message}")


def job_tasks(job: Job, network: Network | None = None) -> tuple[list[Task], list[float]]:
    """Every task of a job and its weight: the network's tasks (weight: occurrences), then ``tasks``.

    A ``tasks`` entry whose workload the network also calls is not a second task: its ``weight``
    (occurrences outside the network) is added to the network's call count.

    Parameters
    ----------
    job : Job
    network : Network, optional
        The job's network when already loaded.

    Returns
    -------
    (list of Task, list of float)

    Raises
    ------
    JobError
        Listing the problems of the job's tasks, or the network's one problem.
    """
    listed = create_tasks(job)
    weights = [spec.weight for spec in job.tasks]
    if job.model is None:
        return listed, weights
    found = network_tasks(job, network or load_network(job))
    in_network = {t.task.workload for t in found}
    extra: dict[tuple, float] = {}
    for task, weight in zip(listed, weights, strict=True):
        if task.workload in in_network:
            extra[task.workload] = extra.get(task.workload, 0.0) + weight
    others = [(task, weight) for task, weight in zip(listed, weights, strict=True)
              if task.workload not in in_network]
    return ([t.task for t in found] + [task for task, _ in others],
            [t.occurrences + extra.get(t.task.workload, 0.0) for t in found] + [w for _, w in others])


def input_shapes(network: Network) -> Mapping[str, tuple[int, ...]]:
    """Shape of each data input, by name (what the graph tuner takes)."""
    return {name: shape for name, (shape, _) in network.inputs.items()}
