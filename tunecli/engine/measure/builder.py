"""Builders: turn MeasureInputs into kernel object files, in parallel worker processes.

``LocalBuilder.build(inputs)`` returns, per input, a :class:`BuildResult` (the object bytes and
how to call them) or a :class:`MeasureResult` carrying the error, which runners pass through
unchanged. Builds run in ``n_parallel`` persistent spawned :class:`Worker` children: llvmlite
holds one lock around LLVM in a process (threads would not compile in parallel) and leaks
memory with every compile, so each child is recycled after ``worker_max_jobs`` builds, which
keeps memory flat over long tunes.

A child receives a :class:`BuildJob`: the task pickled by name (the child imports
``task.template_module`` — a ``__main__`` script is re-imported as ``__mp_main__`` by the spawn
start method — and finds the template by name), the config as its JSON dict, and the target.
It runs :func:`build_job`: ``task.instantiate(config)`` then ``tunecli.engine.build.build``.

Outcomes (TVM's numbers): the template raised, ``not config.valid()`` or a GPU kernel exceeds
the target's limits (``engine.lower.verify_gpu``) → INSTANTIATION_ERROR;
the compiler raised → COMPILE_HOST; the build ran past ``timeout`` → BUILD_TIMEOUT (child
killed and replaced, ``all_cost = timeout``); the child died (a template calling ``os._exit``, a
compiler crash) → COMPILE_HOST, as TVM's builders record a build process that fails without a
Python exception: nothing was run on a device.
"""

from __future__ import annotations

import copy
import os
import pickle
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunecli.engine.build import build as default_build
from tunecli.engine.codegen import ArgSpec
from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.measure.arrays import output_indices_of
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.worker import CallOutcome, CallStatus
from tunecli.engine.measure.worker_pool import WorkerPool
from tunecli.engine.runtime import Module
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.te import Tensor
from tunecli.errors import InstantiationError, TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task

#: Builds a builder child runs before it is replaced (LLVM leaks memory with every compile).
WORKER_MAX_JOBS = 200
BUILD_JOB_FUNC = "tunecli.engine.measure.builder:build_job"
#: ``build_func(sch, tensors, target, **build_kwargs)``: compiles a schedule into a module.
BuildFunc = Callable[..., Module]


@dataclass(frozen=True)
class BuildResult:
    """A built kernel, ready for a runner.

    Attributes
    ----------
    obj : bytes
        Relocatable object file for the task's target.
    entry_name : str
        Symbol of ``void entry(void* arg0, ...)`` in ``obj``.
    arg_specs : tuple
        The module's ArgSpec (name, shape, dtype) per argument, in call order.
    time_cost : float
        Seconds spent instantiating and compiling.
    output_indices : tuple of int
        Which arguments the kernel writes (outputs of the schedule; at least the last one).
    launch : LaunchShape or None
        Grid and block of a GPU kernel (``obj`` is then PTX text); None for a CPU object.
    """

    obj: bytes
    entry_name: str
    arg_specs: tuple
    time_cost: float
    output_indices: tuple[int, ...] = ()
    launch: LaunchShape | None = None


@dataclass(frozen=True)
class BuildJob:
    """What a builder child needs to build one config (pure, picklable data)."""

    task_key: tuple
    task_blob: bytes
    config: dict
    target: Target
    build_func: BuildFunc | None = None
    build_kwargs: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class BuildFailure:
    """An expected build failure, as sent back by a child."""

    error_no: int
    traceback: str
    exception: BaseException
    time_cost: float


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling, else a TuneError carrying its type and message."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:  # noqa: BLE001 - any pickling problem means: send a plain copy
        return TuneError(f"{type(err).__name__}: {err}")


_TASKS: dict[tuple, Task] = {}


def _task_of(job: BuildJob) -> Task:
    """The job's Task, unpickled (and its template module imported) once per child."""
    task = _TASKS.get(job.task_key)
    if task is None:
        task = _TASKS[job.task_key] = pickle.loads(job.task_blob)
    return task


def output_arguments(sch: Schedule, tensors: Sequence[Tensor],
                     arg_specs: Sequence[ArgSpec]) -> tuple[int, ...]:
    """Which arguments of a built kernel are its outputs: the one rule of the builder and ``apply``.

    Those the codegen flags (``is_output``), else the results of the schedule's output ops, else
    the last argument.

    Parameters
    ----------
    sch : Schedule
    tensors : sequence of te.Tensor
        The kernel's arguments, in order.
    arg_specs : sequence of ArgSpec
        The built module's.

    Returns
    -------
    tuple of int
    """
    if any(getattr(s, "is_output", False) for s in arg_specs):
        return output_indices_of(arg_specs)
    out_ops = list(getattr(sch, "outputs", None) or ())
    found = tuple(i for i, t in enumerate(tensors) if any(getattr(t, "op", None) is op for op in out_ops))
    return found or output_indices_of(arg_specs)


def build_job(job: BuildJob) -> BuildResult | BuildFailure:
    """Instantiate the task's template with the job's config and compile it (runs in a child).

    Parameters
    ----------
    job : BuildJob

    Returns
    -------
    BuildResult or BuildFailure
        A failure carries INSTANTIATION_ERROR (template raised, config invalid, template not
        found, GPU kernel beyond the target's limits) or COMPILE_HOST (the compiler raised).
    """
    start = time.perf_counter()
    try:
        task = _task_of(job)
        config = ConfigEntity.from_json_dict(job.config)
        sch, tensors = task.instantiate(config)
        if not config.valid():
            raise InstantiationError(f"invalid config {config.index}: {'; '.join(map(str, config.errors))}")
    except Exception as err:  # noqa: BLE001 - a template failure is data
        return BuildFailure(int(MeasureErrorNo.INSTANTIATION_ERROR), traceback.format_exc(),
                            _portable(err), time.perf_counter() - start)
    try:
        func = job.build_func or default_build
        mod = func(sch, tensors, job.target, **dict(job.build_kwargs))
        specs = tuple(mod.arg_specs)
        return BuildResult(mod.object_bytes(), mod.entry_name, specs, time.perf_counter() - start,
                           output_arguments(sch, tensors, specs), getattr(mod, "launch", None))
    except Exception as err:  # noqa: BLE001 - a compile failure is data
        # a kernel beyond the device's limits (GPU verification) is the config's fault, as in TVM
        error = MeasureErrorNo.INSTANTIATION_ERROR if isinstance(err, InstantiationError) \
            else MeasureErrorNo.COMPILE_HOST
        return BuildFailure(int(error), traceback.format_exc(), _portable(err), time.perf_counter() - start)


def make_build_job(task: Task, config: ConfigEntity, target: Target | str | None = None,
                   build_func: BuildFunc | None = None,
                   build_kwargs: dict | None = None) -> BuildJob:
    """Describe building ``config`` of ``task`` for a child process.

    Parameters
    ----------
    task : Task
        Sent by name (template module, args, target), without its config space.
    config : ConfigEntity
    target : Target or str, optional
        What to compile for (the MeasureInput's target); default ``task.target``.
    build_func : callable, optional
        ``build_func(sch, tensors, target, **build_kwargs)`` returning a module with
        ``object_bytes()``, ``entry_name`` and ``arg_specs``; importable by the child.
    build_kwargs : dict, optional

    Returns
    -------
    BuildJob
    """
    light = copy.copy(task)
    light.config_space = None
    light.reference = None  # the numpy reference (maybe a lambda) is the runner's business
    key = (task.name, task.args, str(task.target))
    return BuildJob(key, pickle.dumps(light), config.to_json_dict(), as_target(target or task.target),
                    build_func, tuple(sorted((build_kwargs or {}).items())))


def failure_result(outcome: CallOutcome | BuildFailure, timeout: float) -> MeasureResult:
    """The MeasureResult of a failed build (child failure or BuildFailure)."""
    if isinstance(outcome, BuildFailure):
        return MeasureResult.failure(MeasureErrorNo(outcome.error_no), outcome.traceback, outcome.time_cost,
                                     outcome.exception)
    if outcome.status is CallStatus.TIMEOUT:
        return MeasureResult.failure(MeasureErrorNo.BUILD_TIMEOUT, outcome.detail, timeout,
                                     TimeoutError(outcome.detail))
    if outcome.status is CallStatus.DIED:  # as TVM's builders: a build process that dies is a build error
        return MeasureResult.failure(MeasureErrorNo.COMPILE_HOST, f"the build process died: {outcome.detail}",
                                     outcome.elapsed)
    return MeasureResult.failure(MeasureErrorNo.UNKNOWN_ERROR, outcome.detail, outcome.elapsed,
                                 TuneError("build worker raised"))


class Builder:
    """Base of builders: ``build(measure_inputs) -> [BuildResult | MeasureResult]``.

    Parameters
    ----------
    timeout : float
        Seconds one build may take.
    n_parallel : int, optional
        Builds at once; None means ``os.cpu_count()``.
    build_kwargs : dict, optional
        Extra keyword arguments for the build function; they override the runner's.
    """

    def __init__(self, timeout: float = 10, n_parallel: int | None = None,
                 build_kwargs: dict | None = None) -> None:
        self.timeout = timeout
        self.n_parallel = n_parallel or os.cpu_count() or 1
        self.user_build_kwargs = dict(build_kwargs or {})
        self.build_kwargs: dict = {}
        self.task: Task | None = None

    def set_task(self, task: Task, build_kwargs: dict | None = None) -> None:
        """Prepare to build configs of ``task``; ``build_kwargs`` come from the runner.

        Parameters
        ----------
        task : Task
        build_kwargs : dict, optional
        """
        self.task = task
        self.build_kwargs = dict(build_kwargs or {})
        if any(k in self.build_kwargs for k in self.user_build_kwargs):
            warnings.warn("Overriding these runtime arguments with user-specified build kwargs: "
                          f"{sorted(k for k in self.user_build_kwargs if k in self.build_kwargs)}",
                          stacklevel=2)
        self.build_kwargs.update(self.user_build_kwargs)

    def build(self, measure_inputs: Sequence[MeasureInput]) -> list[BuildResult | MeasureResult]:
        """Build each input; failures are MeasureResults with an error number."""
        raise NotImplementedError

    def iter_build(self, measure_inputs: Sequence[MeasureInput]
                   ) -> Iterator[tuple[int, BuildResult | MeasureResult]]:
        """Yield ``(index, result)`` for each input as its build finishes (here: after all of them)."""
        yield from enumerate(self.build(measure_inputs))

    def close(self) -> None:
        """Release what the builder holds (worker processes)."""


class LocalBuilder(Builder):
    """Build kernels in ``n_parallel`` persistent local worker processes.

    Parameters
    ----------
    timeout : float
        Seconds one build may take; a child still building then is killed (BUILD_TIMEOUT).
    n_parallel : int, optional
        Number of builder children; None means ``os.cpu_count()``.
    build_kwargs : dict, optional
        Keyword arguments for ``build_func``.
    build_func : "default", "ndk" or callable
        ``"default"`` uses ``tunecli.engine.build.build``; ``"ndk"`` (TVM's Android export) is the
        same, as a build reaches an RPC device as an object its server loads, so no NDK link is
        needed; a callable
        ``f(sch, tensors, target, **build_kwargs) -> module`` must be importable by name.
    worker_max_jobs : int
        Builds per child before it is recycled.
    """

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_kwargs: dict | None = None,
                 build_func: str | BuildFunc = "default",
                 worker_max_jobs: int = WORKER_MAX_JOBS) -> None:
        super().__init__(timeout, n_parallel, build_kwargs)
        if isinstance(build_func, str):
            if build_func not in ("default", "ndk"):
                raise ValueError(f"Invalid build_func {build_func!r}: 'default', 'ndk' or a callable")
            build_func = None
        elif not callable(build_func):
            raise ValueError(f"Invalid build_func {build_func!r}")
        self.build_func = build_func
        self.pool = WorkerPool(self.n_parallel, worker_max_jobs, preload=(__name__,),
                               name="tunecli-builder")

    def set_task(self, task: Task, build_kwargs: dict | None = None) -> None:
        """Prepare to build configs of ``task`` and start the children warming up."""
        super().set_task(task, build_kwargs)
        self.pool.start()

    def iter_build(self, measure_inputs: Sequence[MeasureInput]
                   ) -> Iterator[tuple[int, BuildResult | MeasureResult]]:
        """Yield ``(index, result)`` for each input as its build finishes (other builds go on)."""
        jobs = [make_build_job(inp.task, inp.config, inp.target, self.build_func, self.build_kwargs)
                for inp in measure_inputs]
        for index, outcome in self.pool.map_unordered(BUILD_JOB_FUNC, jobs, self.timeout):
            value = outcome.value
            if outcome.status is CallStatus.OK and isinstance(value, BuildResult):
                yield index, value
            else:
                yield index, failure_result(value if isinstance(value, BuildFailure) else outcome,
                                            self.timeout)

    def build(self, measure_inputs: Sequence[MeasureInput]) -> list[BuildResult | MeasureResult]:
        """Build every input in parallel; results in input order."""
        results: dict[int, BuildResult | MeasureResult] = {}
        for index, result in self.iter_build(measure_inputs):
            results[index] = result
        return [results[index] for index in range(len(measure_inputs))]

    def close(self) -> None:
        """Stop the builder children (they are started again on the next build)."""
        self.pool.close()
