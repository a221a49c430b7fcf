"""Reference outputs for the correctness check (``check_correctness=True``).

A measurement compares a kernel's outputs on the seeded random inputs with reference outputs
made once per task (and argument layout):

* when the task has a numpy reference (the ``Task.reference`` field: a callable taking the input
  arrays and returning the expected output array, or a tuple of them), it is called here, in the tuner,
  on :func:`tunecli.engine.measure.arrays.random_arguments` of the same seed;
* otherwise the first valid config of the task's space (index 0 unless a filter removed it) is
  built in a worker and run once where the candidates run (the local runner's worker, or a
  device of the RPC runner's key), which sends its outputs back — TVM's check before v0.7 did
  the same with config 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.measure.arrays import ArgSpecT, random_arguments
from tunecli.engine.measure.builder import BUILD_JOB_FUNC, BuildResult, make_build_job
from tunecli.engine.measure.timing import MEASURE_FUNC, MeasureReply, MeasureRequest
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.target import as_target
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.space import ConfigEntity, ConfigSpace
    from tunecli.engine.task.task import Task

RefOutputs = tuple[tuple[int, bytes], ...]


def numpy_reference(func: Callable[..., np.ndarray | tuple[np.ndarray, ...]], specs: Sequence[ArgSpecT],
                    outputs: Sequence[int], seed: int) -> RefOutputs:
    """Expected outputs from a numpy reference function.

    Parameters
    ----------
    func : callable
        ``func(*input_arrays) -> array or tuple of arrays`` (inputs: the non-output arguments).
    specs : sequence of (shape, dtype)
    outputs : sequence of int
        Indices of the output arguments.
    seed : int

    Returns
    -------
    tuple of (arg index, raw bytes)

    Raises
    ------
    TuneError
        When the reference returns the wrong number or shapes of outputs.
    """
    arrays = random_arguments(specs, seed)
    inputs = [a for i, a in enumerate(arrays) if i not in outputs]
    got = func(*inputs)
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    if len(got) != len(outputs):
        raise TuneError(f"measure: the task's reference returned {len(got)} arrays for "
                        f"{len(outputs)} outputs")
    ref = []
    for index, value in zip(outputs, got, strict=True):
        shape, dtype = specs[index]
        value = np.asarray(value)
        if value.size != int(np.prod(shape)):
            raise TuneError(f"measure: the task's reference output for argument {index} has shape "
                            f"{value.shape}, the kernel's is {shape}")
        ref.append((index, np.ascontiguousarray(value, dtype=dtype).tobytes()))
    return tuple(ref)


def first_config(space: ConfigSpace) -> ConfigEntity:
    """The first config of ``space`` allowed by its filters (index 0 for unfiltered spaces)."""
    is_valid = getattr(space, "is_index_valid", None)
    if is_valid is not None:
        for index in range(getattr(space, "range_length", len(space))):
            if is_valid(index):
                return space.get(index)
    return space.get(0)


def reference_request(worker: Worker, task: Task, specs: Sequence[ArgSpecT], outputs: Sequence[int],
                      seed: int, timeout: float) -> MeasureRequest:
    """Build the task's first config in ``worker``; return the request that runs it once and sends
    its outputs back (on this host or, through RPC, on a device).

    Raises
    ------
    TuneError
        When the reference config does not build; the message says why.
    """
    job = make_build_job(task, first_config(task.config_space))
    built = worker.call(BUILD_JOB_FUNC, job, timeout)
    if built.status is not CallStatus.OK or not isinstance(built.value, BuildResult):
        why = getattr(built.value, "traceback", None) or built.detail
        raise TuneError(f"measure: the reference config of task {task.name} does not build:\n{why}")
    result: BuildResult = built.value
    target = as_target(task.target)
    return MeasureRequest(result.obj, result.entry_name, tuple(specs), TimingOptions(number=1, repeat=1),
                          seed=seed, output_indices=tuple(outputs), return_outputs=True,
                          target=None if target.kind == "llvm" else target, launch=result.launch)


def reference_from_reply(task: Task, reply: MeasureReply | None, detail: str = "") -> RefOutputs:
    """The outputs a run of :func:`reference_request` sent back.

    Raises
    ------
    TuneError
        When the reference config did not run (``reply`` None or an error; ``detail`` says why
        when there is no reply).
    """
    if reply is None or reply.error_no:
        why = reply.error if reply is not None else detail
        raise TuneError(f"measure: the reference config of task {task.name} does not run: {why}")
    return reply.outputs


def built_reference(worker: Worker, task: Task, specs: Sequence[ArgSpecT], outputs: Sequence[int],
                    seed: int, timeout: float) -> RefOutputs:
    """Expected outputs from building and running the task's first config in ``worker``.

    Raises
    ------
    TuneError
        When the reference config does not build or run; the message says why.
    """
    ran = worker.call(MEASURE_FUNC, reference_request(worker, task, specs, outputs, seed, timeout), timeout)
    return reference_from_reply(task, ran.value if ran.status is CallStatus.OK else None, ran.detail)
