"""FLOP counts of TVM workloads computed from the workload tuple itself, without the template.

A log records a workload as ``(template name, serialized arguments)``.  When the template is
registered here the FLOP count comes from tracing it (``task.create``); the rules below count
TVM's x86 workloads whose arithmetic is fixed by their arguments, so the records of TVM's own
logs (tophub) get GFLOPS even where tracing the template fails for them.  Each rule sits on the
strategy row of its template (``Strategy.workload_flop``); ``RETIRED_WORKLOAD_FLOP`` holds those
of TVM's template names that no row has any more (its v0.1 logs).  The counts follow TVM's
``compute_flop``: one multiply and one add per step of each reduction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from tunecli.engine.task.workload_args import WorkloadArg, is_tensor_arg
from tunecli.engine.te.window import conv2d_output_shape
from tunecli.errors import ExprError


def _shape(arg: WorkloadArg) -> list[int]:
    """The shape of a serialized tensor argument ``["TENSOR", shape, dtype]``."""
    if not is_tensor_arg(arg):
        raise ValueError(f"not a tensor argument: {arg!r}")
    shape = [int(d) for d in arg[1]]  # type: ignore[index]
    if any(d <= 0 for d in shape):
        raise ValueError(f"a tensor shape with a non-positive extent: {shape}")
    return shape


def _data_nchw(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(N, C, H, W) of NCHW data or of blocked NCHW[x]c data."""
    if len(shape) == 4:
        n, c, h, w = shape
        return n, c, h, w
    if len(shape) == 5:
        n, c_outer, h, w, c_inner = shape
        return n, c_outer * c_inner, h, w
    raise ValueError(f"data of rank {len(shape)}")


def _kernel_oihw(shape: Sequence[int]) -> tuple[int, int, int, int]:
    """(O, I, KH, KW) of an OIHW kernel or of a blocked OIHW[x]i[y]o kernel."""
    if len(shape) == 4:
        o, i, kh, kw = shape
        return o, i, kh, kw
    if len(shape) == 6:
        o_outer, i_outer, kh, kw, i_inner, o_inner = shape
        return o_outer * o_inner, i_outer * i_inner, kh, kw
    raise ValueError(f"kernel of rank {len(shape)}")


def _conv_flop(args: Sequence[WorkloadArg], out_channels: int, in_channels_per_output: int) -> int:
    """FLOPs of a 2-D convolution workload ``(data, kernel, strides, padding, dilation, ...)`` whose
    every output reads ``in_channels_per_output`` channels through a KH x KW window."""
    n, _, h, w = _data_nchw(_shape(args[0]))
    _, _, kh, kw = _kernel_oihw(_shape(args[1]))
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), args[2], args[3], args[4])
    return 2 * n * out_channels * oh * ow * in_channels_per_output * kh * kw


# Each rule below is a ``WorkloadFlop``: the serialized workload arguments -> FLOPs.

def conv2d_nchwc_flop(args: Sequence[WorkloadArg]) -> int:
    """``conv2d_NCHWc.x86(data, kernel, strides, padding, dilation, layout, out_layout, dtype)``."""
    oc, ic, _, _ = _kernel_oihw(_shape(args[1]))
    return _conv_flop(args, oc, ic)


def old_conv2d_nchwc_flop(args: Sequence[WorkloadArg]) -> int:
    """TVM's v0.1 ``topi_x86_conv2d_NCHWc(data, kernel, num_filter, kernel_size, strides, padding,
    layout, out_layout, dtype)`` (old tophub logs)."""
    return conv2d_nchwc_flop([args[0], args[1], args[4], args[5], 1])


def depthwise_conv2d_nchwc_flop(args: Sequence[WorkloadArg]) -> int:
    """``depthwise_conv2d_NCHWc.x86(data, kernel, strides, padding, dilation, ...)``, the kernel
    ``[C, multiplier, KH, KW]`` (or blocked ``[OC/oc, 1, KH, KW, 1, oc]``)."""
    kernel = _shape(args[1])
    oc = kernel[0] * kernel[1] if len(kernel) == 4 else kernel[0] * kernel[5]
    return _conv_flop(args, oc, 1)


def dense_flop(args: Sequence[WorkloadArg]) -> int:
    """``dense_pack.x86`` / ``dense_nopack.x86(data [M, K], weight [N, K], bias, out_dtype)``."""
    m, k = _shape(args[0])
    weight = _shape(args[1])
    n = weight[0] if len(weight) == 2 else weight[0] * weight[2]  # [N, K] or packed [N/n, K, n]
    bias = 0 if len(args) < 3 or args[2] is None else m * n
    return 2 * m * n * k + bias


def batch_matmul_flop(args: Sequence[WorkloadArg]) -> int:
    """``batch_matmul.x86(tensor_a, tensor_b, out_shape, out_dtype, transpose_a, transpose_b)`` (a
    batch of 1 broadcasts)."""
    a, b = _shape(args[0]), _shape(args[1])
    if len(a) != 3 or len(b) != 3:
        raise ValueError(f"batch_matmul operands must be 3-D: {a}, {b}")
    transpose_a = bool(args[4]) if len(args) > 4 else False
    transpose_b = bool(args[5]) if len(args) > 5 else True
    m, k = (a[2], a[1]) if transpose_a else (a[1], a[2])
    n = b[1] if transpose_b else b[2]
    return 2 * max(a[0], b[0]) * m * n * k


#: ``count(serialized args) -> FLOPs``: a strategy row's ``workload_flop`` (raises ValueError,
#: TypeError or IndexError for arguments it cannot read).
WorkloadFlop = Callable[[Sequence[WorkloadArg]], int]

#: TVM's template names of old logs that no strategy row has -> FLOP count of their arguments.
RETIRED_WORKLOAD_FLOP: dict[str, WorkloadFlop] = {
    "topi_x86_conv2d_NCHWc": old_conv2d_nchwc_flop,
}


def count_workload_flop(count: WorkloadFlop | None, args: Sequence[WorkloadArg]) -> int | None:
    """Apply a FLOP rule to a workload's arguments; None without a rule or for bad arguments.

    Parameters
    ----------
    count : callable or None
        A row's ``workload_flop`` (or a ``RETIRED_WORKLOAD_FLOP`` entry).
    args : sequence
        Serialized arguments, as in the log.

    Returns
    -------
    int or None
    """
    if count is None:
        return None
    try:
        flop = count(args)
    except (ExprError, ValueError, TypeError, IndexError):
        return None
    return flop if 0 < flop < math.inf else None
