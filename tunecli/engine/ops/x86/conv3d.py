"""``conv3d_ncdhw.x86``: TVM's x86 3-D convolution template (NCDHW data, OIDHW kernel).

Template arguments are TVM's workload: ``data, kernel, strides, padding, dilation, out_dtype``
with ``data [N, C, D, H, W]`` and ``kernel [O, C, KD, KH, KW]`` tensors (given as tensors or
``("TENSOR", shape, dtype)``), ``padding`` as ``relay.nn.conv3d`` normalises it (six numbers:
front, top, left, back, bottom, right), so TVM's records and ours name the same tasks.  Kernel
arguments: ``data``, ``kernel`` and the output ``[N, O, OD, OH, OW]``.

Knobs, in TVM's order: ``tile_ic``, ``tile_oc``, ``tile_ow`` (inner ``reg_n <= 8``),
``unroll_kw``; the computation and schedule are ``x86.conv_blocked``'s (the padded input at the
root).  int8 data and kernel with ``out_dtype="int32"`` accumulate in int32.
"""

from __future__ import annotations

from tunecli.engine import te
from tunecli.engine.ops.nn.conv3d import (
    IntTriple,
    Padding3d,
    conv3d_ncdhw_python,
    conv3d_output_shape,
    pad_ncdhw,
    triple,
)
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv_blocked import blocked_conv, define_blocked_space, schedule_blocked
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import deserialize_args
from tunecli.engine.task.workload_args import TaskArg
from tunecli.errors import InstantiationError

MAX_REG_N = 8  # TVM's filter on the inner tile_ow factor
FALLBACK_REG_N = 7  # TVM's largest fallback register tile


def declare_conv3d_ncdhw(data: TaskArg, kernel: TaskArg, strides: IntTriple, padding: Padding3d,
                         dilation: IntTriple = (1, 1, 1), out_dtype: str = "float32") -> OpCall:
    """TVM's workload of ``conv3d_ncdhw.x86``: ``data [N, C, D, H, W]``, ``kernel [O, C, KD, KH, KW]``."""
    data, kernel = deserialize_args((data, kernel))
    if len(data.shape) != 5 or len(kernel.shape) != 5 or data.shape[1] != kernel.shape[1]:
        raise InstantiationError(
            f"conv3d_ncdhw.x86: data [N, C, D, H, W] and kernel [O, C, KD, KH, KW] "
            f"expected, got {tuple(data.shape)} and {tuple(kernel.shape)}"
        )
    return OpCall(
        (data, kernel), {"strides": strides, "padding": padding, "dilation": dilation, "out_dtype": out_dtype}
    )


def conv3d_ncdhw_x86_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, strides: IntTriple,
                             padding: Padding3d, dilation: IntTriple, out_dtype: str) -> te.Tensor:
    """Define the knobs, then the blocked convolution of the padded input."""
    n, ic = data.shape[:2]
    oc, _, *window = kernel.shape
    od, oh, ow = conv3d_output_shape(data.shape[2:], window, strides, padding, dilation)
    define_blocked_space(cfg, ic, oc, ow, MAX_REG_N, FALLBACK_REG_N)
    cfg.add_flop(2 * n * oc * od * oh * ow * ic * window[0] * window[1] * window[2])
    return blocked_conv(
        pad_ncdhw(data, padding),
        kernel,
        cfg["tile_oc"].size[-1],
        triple(strides, "strides"),
        triple(dilation, "dilation"),
        out_dtype,
    )


CONV3D_NCDHW = Strategy(
    op="conv3d_ncdhw",
    target_key="cpu",
    name="conv3d_ncdhw.x86",
    declare=declare_conv3d_ncdhw,
    compute=conv3d_ncdhw_x86_compute,
    schedule=schedule_blocked,
    reference=conv3d_ncdhw_python,
    outputs=("out",),
    summary="TVM's; `data[N, C, D, H, W]`, `kernel[O, C, KD, KH, KW]`",
)
