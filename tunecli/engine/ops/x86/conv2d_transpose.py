"""``conv2d_transpose_nchw.x86``: the x86 transposed 2-D convolution (TVM's implementation name).

Template arguments are TVM's (its ``wrap_compute_conv2d_transpose``): ``data, kernel, strides,
padding, out_dtype, output_padding`` with ``data [N, C, H, W]`` and ``kernel [C, O, KH, KW]``
(IOHW) tensors, given as tensors or ``("TENSOR", shape, dtype)``; ``padding`` as
``relay.nn.conv2d_transpose`` normalises it (top, left, bottom, right).  Kernel arguments:
``data``, ``kernel`` and the output ``[N, O, OH, OW]``.

As TVM's x86 implementation it is a direct stride-1 convolution of the spread, padded data
(``nn.conv2d_transpose``) with the turned kernel, computed and scheduled by
``x86.conv_blocked`` (knobs ``tile_ic``, ``tile_oc``, ``tile_ow`` with ``reg_n <= 64``,
``unroll_kw``: those of ``conv2d_NCHWc.x86``, which TVM's implementation calls).  A graph
turns a constant kernel once, at build time.  TVM's extraction records that inner
``conv2d_NCHWc.x86`` call (spread data, turned kernel, stride 1) as the task; here the transposed
convolution is a task of its own, one per distinct layer as in TVM.
"""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.ops.nn.conv2d_transpose import (
    conv2d_transpose_nchw_python,
    spread_data,
    transpose_output_shape,
    turned_kernel,
)
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv_blocked import blocked_conv, define_blocked_space, schedule_blocked
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import deserialize_args
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.te.window import IntPair, Padding
from tunecli.errors import InstantiationError

MAX_REG_N = 64  # conv2d_NCHWc.x86's filter on the inner tile_ow factor
FALLBACK_REG_N = 8


def declare_conv2d_transpose_nchw(
    data: TaskArg,
    kernel: TaskArg,
    strides: IntPair,
    padding: Padding,
    out_dtype: str = "float32",
    output_padding: IntPair = (0, 0),
) -> OpCall:
    """TVM's workload of ``conv2d_transpose_nchw.x86``: ``data [N, C, H, W]``, ``kernel [C, O, KH, KW]``."""
    data, kernel = deserialize_args((data, kernel))
    if len(data.shape) != 4 or len(kernel.shape) != 4 or data.shape[1] != kernel.shape[0]:
        raise InstantiationError(
            f"conv2d_transpose_nchw.x86: data [N, C, H, W] and kernel [C, O, KH, KW] "
            f"expected, got {tuple(data.shape)} and {tuple(kernel.shape)}"
        )
    return OpCall(
        (data, kernel),
        {"strides": strides, "padding": padding, "out_dtype": out_dtype, "output_padding": output_padding},
    )


def conv2d_transpose_x86_compute(
    cfg: ConfigSpace,
    data: te.Tensor,
    kernel: te.Tensor,
    strides: IntPair,
    padding: Padding,
    out_dtype: str,
    output_padding: IntPair,
) -> te.Tensor:
    """Define the knobs, then the blocked direct convolution of the spread data."""
    n, ic, h, w = data.shape
    _, oc, kh, kw = kernel.shape
    oh, ow = transpose_output_shape((h, w), (kh, kw), strides, padding, output_padding)
    define_blocked_space(cfg, ic, oc, ow, MAX_REG_N, FALLBACK_REG_N)
    cfg.add_flop(2 * n * oc * oh * ow * ic * kh * kw)
    spread = spread_data(data, (kh, kw), strides, padding, output_padding)
    return blocked_conv(spread, turned_kernel(kernel), cfg["tile_oc"].size[-1], (1, 1), (1, 1), out_dtype)


CONV2D_TRANSPOSE_NCHW = Strategy(
    op="conv2d_transpose_nchw",
    target_key="cpu",
    name="conv2d_transpose_nchw.x86",
    declare=declare_conv2d_transpose_nchw,
    compute=conv2d_transpose_x86_compute,
    schedule=schedule_blocked,
    reference=conv2d_transpose_nchw_python,
    outputs=("out",),
    summary="TVM's implementation name and arguments; `data[N, C, H, W]`, `kernel[C, O, KH, KW]` (IOHW)",
)
