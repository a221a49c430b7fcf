"""What `apply` compares a tuned kernel with: the same operator in numpy, in the kernel's dtype.

The numpy references of the built-in templates (``engine.ops.reference``) accumulate floats in
float64: right for checking an answer, wrong as a speed baseline (float64 BLAS is half as fast
and a float32 kernel does not pay for it).  So each reference has a *timing baseline* here: the
way a numpy user computes that operator in the kernel's dtype (float32 ``a @ w.T`` for dense,
im2col + matmul for a convolution), taking the same seeded inputs as the kernel.  References
without one get no numpy time.

A baseline is timed like a kernel (``time_baseline`` runs in the same measurement worker as the
kernels, with the same warm-up and ``number``/``repeat``/``min_repeat_ms``) and with numpy's BLAS
limited to the threads the kernels use (``runtime.openmp.get_num_threads``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tunecli.engine.measure.arrays import ArgSpecT, random_arguments
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops import tutorial
from tunecli.engine.runtime import time_calls
from tunecli.engine.runtime.openmp import get_num_threads
from tunecli.engine.te.window import conv2d_output_shape, pair

#: ``"module:function"`` of :func:`time_baseline`, for :class:`Worker` calls.
BASELINE_FUNC = "tunecli.engine.job.numpy_baseline:time_baseline"
_BLAS_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                 "scipy_openblas_set_num_threads", "openblas_set_num_threads64_", "MKL_Set_Num_Threads")
_BLAS_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
                 "scipy_openblas_get_num_threads", "openblas_get_num_threads64_", "MKL_Get_Max_Threads")


def _in(dtype: Any, *arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays in ``dtype`` (integer kernels accumulate in their output type)."""
    return [a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype) for a in arrays]


def dense(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None, out_dtype: Any = None) -> Any:
    """``data @ weight.T (+ bias)`` in the kernel's dtype."""
    data, weight = _in(out_dtype, data, weight)
    out = data @ weight.T
    return out if bias is None else out + bias


def batch_matmul(x: np.ndarray, y: np.ndarray, out_dtype: Any = None, trans_x: bool = False,
                 trans_y: bool = True) -> Any:
    """Batched ``x @ y^T`` in the kernel's dtype."""
    x, y = _in(out_dtype, x, y)
    return np.matmul(np.swapaxes(x, 1, 2) if trans_x else x, np.swapaxes(y, 1, 2) if trans_y else y)


def matmul(a: np.ndarray, b: np.ndarray) -> Any:
    """``a @ b`` in the kernel's dtype."""
    return a @ b


def _windows(data: np.ndarray, kernel_hw: tuple[int, int], stride: Any, padding: Any,
             dilation: Any) -> np.ndarray:
    """``[n, c, oh, ow, kh, kw]`` view of the padded NCHW ``data`` under each output's window."""
    oh, ow, (pt, pl, pb, pr) = conv2d_output_shape(data.shape[2:], kernel_hw, stride, padding, dilation)
    (sh, sw), (dh, dw) = pair(stride, "stride"), pair(dilation, "dilation")
    padded = np.pad(data, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    span = ((kernel_hw[0] - 1) * dh + 1, (kernel_hw[1] - 1) * dw + 1)
    view = sliding_window_view(padded, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    return view[:, :, :oh, :ow]


def conv2d_nchw(data: np.ndarray, weight: np.ndarray, stride: Any, padding: Any, dilation: Any = 1,
                out_dtype: Any = None) -> Any:
    """NCHW convolution as im2col + one matrix product (BLAS), in the kernel's dtype."""
    data, weight = _in(out_dtype, data, weight)
    cols = _windows(data, weight.shape[2:], stride, padding, dilation)
    return np.tensordot(weight, cols, axes=([1, 2, 3], [1, 4, 5])).transpose(1, 0, 2, 3)


def depthwise_conv2d_nchw(data: np.ndarray, weight: np.ndarray, stride: Any, padding: Any, dilation: Any = 1,
                          out_dtype: Any = None) -> Any:
    """Depthwise NCHW convolution (``[C, multiplier, KH, KW]`` filter) as one einsum over the windows."""
    data, weight = _in(out_dtype, data, weight)
    cols = _windows(data, weight.shape[2:], stride, padding, dilation)
    out = np.einsum("nchwyx,cmyx->ncmhw", cols, weight, optimize=True)
    return out.reshape(out.shape[0], -1, *out.shape[3:])


@dataclass(frozen=True)
class Baseline:
    """A timing baseline: what it computes, in words, and the function.

    ``prepare`` (optional) maps the kernel's input arrays to the function's, once, outside the
    timed calls: a kernel that takes its weight pre-packed is compared with numpy on the weight a
    numpy user has (``dense.x86``'s panels become ``[N, K]`` again).
    """

    text: str
    func: Callable[..., Any]
    prepare: Callable[..., tuple[np.ndarray, ...]] | None = None

    def inputs(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The arrays ``func`` takes for the kernel's input arrays."""
        return tuple(arrays) if self.prepare is None else self.prepare(*arrays)


def _dense_weight_unpacked(data: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, ...]:
    return data, np.ascontiguousarray(ref.unpack_dense_weight(weight))


#: Reference function (``engine.ops.reference``) -> its timing baseline.
BASELINES: dict[Callable[..., Any], Baseline] = {
    ref.dense_python: Baseline("a @ w.T", dense),
    ref.dense_packed_python: Baseline("a @ w.T", dense, _dense_weight_unpacked),
    ref.batch_matmul: Baseline("np.matmul(x, y^T)", batch_matmul),
    ref.conv2d_nchw_python: Baseline("im2col + matmul", conv2d_nchw),
    ref.depthwise_conv2d_python_nchw: Baseline("einsum over windows", depthwise_conv2d_nchw),
    tutorial._matmul_wrapping: Baseline("a @ b", matmul),
}


def baseline_of(reference: Callable[..., Any] | None) -> Baseline | None:
    """Return the timing baseline of a task's reference (a ``functools.partial`` with the task's
    attributes), bound to the same attributes; None when the reference has none.

    Parameters
    ----------
    reference : callable or None
        ``Task.reference``.

    Returns
    -------
    Baseline or None
    """
    if reference is None:
        return None
    func = reference.func if isinstance(reference, functools.partial) else reference
    found = BASELINES.get(func)
    if found is None:
        return None
    if isinstance(reference, functools.partial):
        return Baseline(found.text, functools.partial(found.func, *reference.args, **reference.keywords),
                        found.prepare)
    return found


@dataclass(frozen=True)
class BaselineRequest:
    """One baseline to time in a worker: the task's reference, its kernel's arguments and timing."""

    reference: Callable[..., Any]
    arg_specs: tuple[ArgSpecT, ...]
    output_indices: tuple[int, ...]
    seed: int
    timing: TimingOptions


def _blas_function(names: tuple[str, ...]) -> Any:
    """The first of ``names`` exported by a BLAS library loaded in this process, or None."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        libs = {line.split()[-1] for line in maps if "blas" in line.lower() or "mkl" in line.lower()}
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            func = getattr(lib, name, None)
            if func is not None:
                return func
    return None


def set_blas_threads(n: int) -> bool:
    """Limit the BLAS numpy loaded in this process to ``n`` threads; False when it cannot be told.

    Parameters
    ----------
    n : int

    Returns
    -------
    bool
    """
    setter = _blas_function(_BLAS_SETTERS)
    if setter is None:
        return False
    setter(ctypes.c_int(n))
    return True


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread inside the block, its thread count restored after.

    The threads of a multi-threaded OpenBLAS spin for a while after each call, on the cores
    that kernels are timed on; in the process that starts the timing workers they made a
    2-thread kernel measure up to 3x slower.
    """
    getter = _blas_function(_BLAS_GETTERS)
    before = int(getter()) if getter is not None else 0
    set_blas_threads(1)
    try:
        yield
    finally:
        if before > 0:
            set_blas_threads(before)


def time_baseline(request: BaselineRequest) -> MeasureReply:
    """Time the baseline of ``request.reference`` on the kernel's seeded inputs (in a worker).

    Parameters
    ----------
    request : BaselineRequest

    Returns
    -------
    MeasureReply
        Seconds per call; UNKNOWN_ERROR when the reference has no baseline or BLAS threads
        cannot be limited to the kernels' count.
    """
    baseline = baseline_of(request.reference)
    if baseline is None:
        return MeasureReply((), int(MeasureErrorNo.UNKNOWN_ERROR), "no numpy baseline for this operator")
    if not set_blas_threads(get_num_threads()):
        return MeasureReply((), int(MeasureErrorNo.UNKNOWN_ERROR), "cannot set the threads of numpy's BLAS")
    outputs = set(request.output_indices)
    inputs = baseline.inputs(*(a for i, a in enumerate(random_arguments(request.arg_specs, request.seed))
                               if i not in outputs))
    t = request.timing
    costs = time_calls(lambda: baseline.func(*inputs), (), t.number, t.repeat, t.min_repeat_ms,
                       warmup_ms=t.warmup_ms)
    return MeasureReply(tuple(costs))
