"""What `apply` compares a tuned kernel with: the same operator in numpy, in the kernel's dtype.

The numpy references of the built-in templates (``engine.ops.reference``) accumulate floats in
float64: right for checking an answer, wrong as a speed baseline (float64 BLAS is half as fast
and a float32 kernel does not pay for it).  So a strategy row may carry a *timing baseline*
(``Strategy.baseline``): the way a numpy user computes that operator in the kernel's dtype
(float32 ``a @ w.T`` for dense, im2col + matmul for a convolution), taking the same seeded inputs
as the kernel.  Rows without one get no numpy time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import DTypeLike

from tunecli.engine.ops import reference as ref
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, pair


def _in(dtype: DTypeLike | None, *arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays in ``dtype`` (integer kernels accumulate in their output type)."""
    return [a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype) for a in arrays]


def dense(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
          out_dtype: DTypeLike | None = None, units: int | None = None) -> np.ndarray:
    """``data @ weight.T (+ bias)`` in the kernel's dtype (the first ``units`` rows of a padded
    weight)."""
    data, weight = _in(out_dtype, data, weight[:units])
    out = data @ weight.T
    return out if bias is None else out + bias


def batch_matmul(x: np.ndarray, y: np.ndarray, out_dtype: DTypeLike | None = None, trans_x: bool = False,
                 trans_y: bool = True) -> np.ndarray:
    """Batched ``x @ y^T`` in the kernel's dtype."""
    x, y = _in(out_dtype, x, y)
    return np.matmul(np.swapaxes(x, 1, 2) if trans_x else x, np.swapaxes(y, 1, 2) if trans_y else y)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in the kernel's dtype."""
    return a @ b


def _windows(data: np.ndarray, kernel_hw: tuple[int, int], stride: IntPair, padding: Padding,
             dilation: IntPair) -> np.ndarray:
    """``[n, c, oh, ow, kh, kw]`` view of the padded NCHW ``data`` under each output's window."""
    oh, ow, (pt, pl, pb, pr) = conv2d_output_shape(data.shape[2:], kernel_hw, stride, padding, dilation)
    (sh, sw), (dh, dw) = pair(stride, "stride"), pair(dilation, "dilation")
    padded = np.pad(data, [(0, 0), (0, 0), (pt, pb), (pl, pr)])
    span = ((kernel_hw[0] - 1) * dh + 1, (kernel_hw[1] - 1) * dw + 1)
    view = sliding_window_view(padded, span, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    return view[:, :, :oh, :ow]


def conv2d_nchw(data: np.ndarray, weight: np.ndarray, stride: IntPair, padding: Padding,
                dilation: IntPair = 1, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """NCHW convolution as im2col + one matrix product (BLAS), in the kernel's dtype."""
    data, weight = _in(out_dtype, data, weight)
    cols = _windows(data, weight.shape[2:], stride, padding, dilation)
    return np.tensordot(weight, cols, axes=([1, 2, 3], [1, 4, 5])).transpose(1, 0, 2, 3)


def depthwise_conv2d_nchw(data: np.ndarray, weight: np.ndarray, stride: IntPair, padding: Padding,
                          dilation: IntPair = 1, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """Depthwise NCHW convolution (``[C, multiplier, KH, KW]`` filter) as one einsum over the windows."""
    data, weight = _in(out_dtype, data, weight)
    cols = _windows(data, weight.shape[2:], stride, padding, dilation)
    out = np.einsum("nchwyx,cmyx->ncmhw", cols, weight, optimize=True)
    return out.reshape(out.shape[0], -1, *out.shape[3:])


def dense_weight_unpacked(data: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(data, weight [N, K])`` for a kernel that takes its weight in panels ``[N/NR, K, NR]``."""
    return data, np.ascontiguousarray(ref.unpack_dense_weight(weight))


@dataclass(frozen=True)
class Baseline:
    """A timing baseline: what it computes, in words, and the function.

    ``prepare`` (optional) maps the kernel's input arrays to the function's, once, outside the
    timed calls: a kernel that takes its weight pre-packed is compared with numpy on the weight a
    numpy user has (``dense.x86``'s panels become ``[N, K]`` again).  ``func`` and ``prepare`` are
    module-level functions (or partials of them), so a baseline pickles to a measurement worker.
    """

    text: str
    func: Callable[..., np.ndarray]
    prepare: Callable[..., tuple[np.ndarray, ...]] | None = None

    def inputs(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The arrays ``func`` takes for the kernel's input arrays."""
        return tuple(arrays) if self.prepare is None else self.prepare(*arrays)

    def bound(self, **attrs: object) -> Baseline:
        """This baseline with the operator's attributes (strides, ``out_dtype``...) bound."""
        return Baseline(self.text, partial(self.func, **attrs), self.prepare)


DENSE = Baseline("a @ w.T", dense)
DENSE_PACKED = Baseline("a @ w.T", dense, dense_weight_unpacked)
BATCH_MATMUL = Baseline("np.matmul(x, y^T)", batch_matmul)
CONV2D_NCHW = Baseline("im2col + matmul", conv2d_nchw)
DEPTHWISE_CONV2D_NCHW = Baseline("einsum over windows", depthwise_conv2d_nchw)
MATMUL = Baseline("a @ b", matmul)
