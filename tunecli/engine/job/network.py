"""The network of a model job and its tasks: what ``tune``, ``apply`` and ``inspect`` of a model
job share.

``load_network`` builds a built-in model (``network_models.MODELS``) or imports an ONNX file;
any problem (a corrupt file, an unsupported operator, a wrong input name or shape, an image too
small for the model) is one ``JobError`` naming the job's ``model`` field.
``extract_network_tasks`` extracts the tunable tasks with ``extract_from_program``'s rule
(``graph.extract.operator_tasks``; the job's target and ``ops``), each with how often the
network calls it, and the operators they implement
(a convolution's direct and Winograd tasks are alternatives of one operator); ``job_task_set``
puts them before the job's own ``tasks``, with their weights (occurrences, or the entries'
``weight``; a ``tasks`` entry of a workload the network calls adds its ``weight`` to the
network's task) and the groups of alternatives.  ``build_network`` builds it (``apply``,
``inspect``), its summary line left out of the log.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import numpy as np

from tunecli.engine.graph.build_module import BuiltGraph, build
from tunecli.engine.graph.extract import operator_tasks, tunable_operators
from tunecli.engine.graph.frontend.onnx import MissingInputShape, from_onnx
from tunecli.engine.graph.graph_expr import Call, Function, Op
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.graph.traversal import free_vars, post_order
from tunecli.engine.graph.type_infer import infer_types
from tunecli.engine.graph.types import TensorType
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.job.nodes import Node
from tunecli.engine.job.spec import Job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.runtime.ndarray import NDArray
from tunecli.engine.target import Target
from tunecli.engine.task.task import Task
from tunecli.errors import GraphError, JobError, TuneError

#: The logger ``relay.build`` writes its tuning summary to (TVM's).
BUILD_LOGGER = "autotvm"


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
    index_rows : dict of str to int
        The rows of the table each integer input indexes (``take``: token ids into an embedding),
        the smallest when it indexes several.
    """

    label: str
    mod: IRModule
    params: dict[str, NDArray] = field(repr=False)
    inputs: dict[str, tuple[tuple[int, ...], str]]
    onnx: str | None = None
    index_rows: dict[str, int] = field(default_factory=dict)

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Seeded inputs by name: numbers in [0, 1); integers over the rows of the table they index
        (token ids over the vocabulary), other integers 0 or 1 (masks)."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, (shape, dtype) in self.inputs.items():
            if np.dtype(dtype).kind in "iu":
                value = rng.integers(0, self.index_rows.get(name, 2), size=shape)
            else:
                value = rng.uniform(size=shape)
            out[name] = value.astype(dtype)
        return out


def _index_rows(fn: Function, inputs: Mapping[str, tuple[tuple[int, ...], str]]) -> dict[str, int]:
    """The rows of the table each of ``inputs`` indexes through ``take`` (the fewest of several)."""
    rows: dict[str, int] = {}
    for node in post_order(fn.body, into_functions=False):
        if not (isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "take"):
            continue
        table = node.args[0].checked_type
        if node.attrs.axis is None or not isinstance(table, TensorType):
            continue
        count = int(table.shape[node.attrs.axis])
        for v in free_vars(node.args[1]):
            if v.name_hint in inputs:
                rows[v.name_hint] = min(count, rows.get(v.name_hint, count))
    return rows


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


@dataclass(frozen=True)
class NetworkOperator:
    """A distinct tunable operator of a network (``graph.extract.TunableOperator``).

    Attributes
    ----------
    tasks : tuple of int
        Indices (in ``NetworkTasks.tasks``) of its alternative tasks, of which a build runs one.
    occurrences : int
        Calls of the network that are this operator.
    flop : float
        FLOPs of all its calls in one run of the network (its first task's FLOPs per call).
    """

    tasks: tuple[int, ...]
    occurrences: int
    flop: float


@dataclass(frozen=True)
class NetworkTasks:
    """The tunable tasks of a network and the operators they implement.

    Attributes
    ----------
    tasks : tuple of NetworkTask
        Distinct, in the order the network first calls them.
    operators : tuple of NetworkOperator
        In the same order; every task implements at least one.
    """

    tasks: tuple[NetworkTask, ...]
    operators: tuple[NetworkOperator, ...]

    @property
    def alternatives(self) -> tuple[tuple[int, ...], ...]:
        """The task indices of each operator with more than one task."""
        return tuple(op.tasks for op in self.operators if len(op.tasks) > 1)


@dataclass(frozen=True)
class JobTasks:
    """Every task of a job, as ``tune`` numbers them.

    Attributes
    ----------
    tasks : tuple of Task
        The network's tasks, then the job's ``tasks``.
    weights : tuple of float
        How often each runs (occurrences in the network plus listed weights).
    alternatives : tuple of tuple of int
        Disjoint groups of indices of tasks that implement one operator (``tuner.alternatives``).
    """

    tasks: tuple[Task, ...]
    weights: tuple[float, ...]
    alternatives: tuple[tuple[int, ...], ...] = ()


def load_network(job: Job, sample_shape: tuple[int, ...] | None = None) -> Network:
    """Build or import the network of a model job.

    Parameters
    ----------
    job : Job
        A job with a ``model``.
    sample_shape : tuple of int, optional
        Which of a built-in model's ``sample_shapes`` (a text model's sequence lengths) to build
        (default: the first).

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
            spec = spec.single(sample_shape or spec.sample_shapes[0])
            mod, params = MODELS[str(spec.name)].load(spec.batch_size, spec.sample_shapes[0], spec.dtype,
                                                      **spec.sizes)
        fn = mod["main"]
        infer_types(fn)
    except MissingInputShape as err:
        shapes = ", ".join(f"{name}: [{'...' if dims is None else ', '.join(map(str, dims))}]"
                           for name, dims in err.inputs)
        raise spec.node.error(
            f"the ONNX model leaves input shapes open; give them in model.input, a number for each "
            f"named dimension: input: {{{shapes}}}"
        ) from None
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
    return Network(spec.label, mod, dict(params), inputs, spec.onnx, _index_rows(fn, inputs))


def extract_network_tasks(job: Job, network: Network) -> NetworkTasks:
    """The distinct tunable tasks of the job's network and the operators they implement (a text
    model of several sequence lengths: of every length's network, ``network`` one of them).

    Raises
    ------
    JobError
        When the network has none of the job's ``ops``, or a template rejects a call's shapes.
    """
    if job.model is not None and len(job.model.sample_shapes) > 1:
        return _all_network_tasks(job, network)
    return _network_tasks(job, network)


def _network_tasks(job: Job, network: Network) -> NetworkTasks:
    where = job.model.node if job.model is not None and job.model.node is not None else None
    try:
        found = tunable_operators(network.mod, network.params, job.target, job.ops)
    except GraphError as err:
        raise _error(job, where, str(err)) from None
    if not found:
        raise _error(job, where, f"{network.label} has no call of {', '.join(job.ops)} with a tunable "
                                 f"implementation for {job.target}")
    try:
        tasks = operator_tasks(found, job.target)
    except TuneError as err:
        raise _error(job, where, str(err)) from None
    counts: dict[tuple, int] = {}
    for op in found:
        for workload in op.workloads:
            counts[workload] = counts.get(workload, 0) + op.occurrences
    index = {workload: i for i, workload in enumerate(tasks)}
    operators = tuple(NetworkOperator(tuple(index[w] for w in op.workloads), op.occurrences,
                                      float(tasks[op.workloads[0]].flop or 0) * op.occurrences)
                      for op in found)
    return NetworkTasks(tuple(NetworkTask(task, counts[w]) for w, task in tasks.items()), operators)


def _error(job: Job, where: Node | None, message: str) -> JobError:
    return where.error(message) if where is not None else JobError(f"{job.path}: {message}")


def _all_network_tasks(job: Job, network: Network) -> NetworkTasks:
    """The tasks of every network of the job (a text model's sequence lengths, in the job's order;
    ``network``: one of them, loaded), each distinct workload once with the calls of all."""
    shapes = job.model.sample_shapes if job.model is not None else ()
    index: dict[tuple, int] = {}
    tasks: list[NetworkTask] = []
    operators: list[NetworkOperator] = []
    for shape in shapes:
        one = job.model.single(shape) if job.model is not None else None
        loaded = network if one is not None and one.label == network.label else load_network(job, shape)
        found = _network_tasks(job, loaded)
        for t in found.tasks:
            if t.task.workload in index:
                i = index[t.task.workload]
                tasks[i] = NetworkTask(tasks[i].task, tasks[i].occurrences + t.occurrences)
            else:
                index[t.task.workload] = len(tasks)
                tasks.append(t)
        operators += [NetworkOperator(tuple(index[found.tasks[i].task.workload] for i in op.tasks),
                                      op.occurrences, op.flop) for op in found.operators]
    return NetworkTasks(tuple(tasks), tuple(operators))


def job_task_set(job: Job, network: Network | None = None) -> JobTasks:
    """Every task of a job, its weight and the alternatives among them: the network's tasks
    (weight: occurrences; a text model of several sequence lengths: the tasks of each length's
    network, one log for all), then ``tasks``.

    A ``tasks`` entry whose workload the network also calls is not a second task: its ``weight``
    (occurrences outside the network) is added to the network's call count.

    Parameters
    ----------
    job : Job
    network : Network, optional
        The job's network when already loaded.

    Returns
    -------
    JobTasks

    Raises
    ------
    JobError
        Listing the problems of the job's tasks, or the network's one problem.
    """
    listed = create_tasks(job)
    weights = [spec.weight for spec in job.tasks]
    if job.model is None:
        return JobTasks(tuple(listed), tuple(weights))
    extracted = extract_network_tasks(job, network or load_network(job))
    found = extracted.tasks
    in_network = {t.task.workload for t in found}
    extra: dict[tuple, float] = {}
    for task, weight in zip(listed, weights, strict=True):
        if task.workload in in_network:
            extra[task.workload] = extra.get(task.workload, 0.0) + weight
    others = [(task, weight) for task, weight in zip(listed, weights, strict=True)
              if task.workload not in in_network]
    weights = [t.occurrences + extra.get(t.task.workload, 0.0) for t in found] + [w for _, w in others]
    return JobTasks(tuple([t.task for t in found] + [task for task, _ in others]), tuple(weights),
                    extracted.alternatives)


def job_tasks(job: Job, network: Network | None = None) -> tuple[list[Task], list[float]]:
    """Every task of a job and its weight (``job_task_set``'s, without the alternatives; ``network``:
    the job's network when already loaded).

    Returns
    -------
    (list of Task, list of float)

    Raises
    ------
    JobError
        Listing the problems of the job's tasks, or the network's one problem.
    """
    found = job_task_set(job, network)
    return list(found.tasks), list(found.weights)


def input_shapes(network: Network) -> Mapping[str, tuple[int, ...]]:
    """Shape of each data input, by name (what the graph tuner takes)."""
    return {name: shape for name, (shape, _) in network.inputs.items()}


def build_network(network: Network, target: Target,
                  *contexts: AbstractContextManager[object]) -> BuiltGraph:
    """The network built as ``relay.build`` at ``opt_level=3`` builds it, under ``contexts``
    (``apply_history_best`` of a log, the graph tuner's choice; none: the untuned build), without
    the build's summary line in the log (whoever builds it reports the summary).

    Parameters
    ----------
    network : Network
    target : Target
    contexts : context managers
        Entered in order around the build.

    Returns
    -------
    BuiltGraph
    """
    with contextlib.ExitStack() as stack:
        for context in contexts:
            stack.enter_context(context)
        stack.enter_context(PassContext(opt_level=3))
        stack.enter_context(_quiet_build())
        return build(network.mod, target=target, params=network.params)


@contextlib.contextmanager
def _quiet_build() -> Iterator[None]:
    """No summary line from ``relay.build`` in the log."""
    log = logging.getLogger(BUILD_LOGGER)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
