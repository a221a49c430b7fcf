"""Timing numpy's way of computing an operator (its strategy row's ``baseline``) in a worker.

A baseline is timed like a kernel (in a measurement worker, with the same warm-up and
``number``/``repeat``/``min_repeat_ms``), on the kernel's seeded inputs, with numpy's BLAS
limited to the threads the kernels use (``runtime.threads.get_num_threads``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tunecli.engine.measure.arrays import ArgSpecT, random_arguments
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.ops.baseline import Baseline
from tunecli.engine.runtime import time_calls
from tunecli.engine.runtime.blas import set_blas_threads
from tunecli.engine.runtime.threads import get_num_threads

#: ``"module:function"`` of :func:`time_baseline`, for :class:`Worker` calls.
BASELINE_FUNC = "tunecli.engine.measure.baseline_timing:time_baseline"


@dataclass(frozen=True)
class BaselineRequest:
    """One baseline to time in a worker: the baseline (bound to the task's attributes), the
    kernel's arguments and the timing."""

    baseline: Baseline
    arg_specs: tuple[ArgSpecT, ...]
    output_indices: tuple[int, ...]
    seed: int
    timing: TimingOptions


def time_baseline(request: BaselineRequest) -> MeasureReply:
    """Time ``request.baseline`` on the kernel's seeded inputs (in a worker).

    Parameters
    ----------
    request : BaselineRequest

    Returns
    -------
    MeasureReply
        Seconds per call; UNKNOWN_ERROR when BLAS threads cannot be limited to the kernels' count.
    """
    if not set_blas_threads(get_num_threads()):
        return MeasureReply((), int(MeasureErrorNo.UNKNOWN_ERROR), "cannot set the threads of numpy's BLAS")
    outputs = set(request.output_indices)
    baseline = request.baseline
    inputs = baseline.inputs(*(a for i, a in enumerate(random_arguments(request.arg_specs, request.seed))
                               if i not in outputs))
    t = request.timing
    costs = time_calls(lambda: baseline.func(*inputs), (), t.number, t.repeat, t.min_repeat_ms,
                       warmup_ms=t.warmup_ms)
    return MeasureReply(tuple(costs))
