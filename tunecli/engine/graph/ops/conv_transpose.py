"""Transposed 2-D convolution: ``nn.conv2d_transpose`` (NCHW data, IOHW weights as PyTorch and
ONNX store them; pattern OUT_ELEMWISE_FUSABLE, tunable: one group without dilation runs its
strategy row, ``conv2d_transpose_nchw.x86`` on a CPU; other calls, and targets without a row,
its plain definition)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, register_op, window_pads


@dataclass(frozen=True)
class Conv2DTransposeAttrs(Attrs):
    """Attributes of ``nn.conv2d_transpose`` (TVM's ``Conv2DTransposeAttrs``): the padding removed
    from the full output (1, 2 or 4 numbers) and the rows and columns added at its end
    (``output_padding``)."""

    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    output_padding: tuple[int, ...] = (0, 0)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None


def transpose_geometry(
    op_name: str, data: tuple[int, ...], weight: tuple[int, ...], attrs: Conv2DTransposeAttrs
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """``(top, left, bottom, right)`` padding and the output ``(height, width)``."""
    pads = window_pads(op_name, attrs.padding, weight[2:])
    out = []
    for axis in range(2):
        size, k = data[2 + axis], weight[2 + axis]
        s, d, extra = attrs.strides[axis], attrs.dilation[axis], attrs.output_padding[axis]
        expect(0 <= extra < max(s, d), op_name, f"output_padding {attrs.output_padding} must be below the "
               f"stride or dilation")
        out.append((size - 1) * s + d * (k - 1) + 1 + extra - pads[axis] - pads[axis + 2])
    expect(min(out) > 0, op_name, f"the output of {data} is empty ({tuple(out)})")
    return pads, (out[0], out[1])


def _relation(op_name: str, arg_types: Sequence[Type | None], attrs: Conv2DTransposeAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.ndim == 4, op_name, f"data must be NCHW, got {data.shape}")
    groups = attrs.groups
    divides = groups > 0 and data.shape[1] % groups == 0
    expect(divides, op_name, f"groups {groups} must divide {data.shape[1]}")
    if arg_types[1] is None:
        expect(attrs.channels is not None and attrs.kernel_size is not None, op_name,
               "give the weight a shape or set channels and kernel_size")
        weight = TensorType((data.shape[1], attrs.channels // groups, *attrs.kernel_size), data.dtype)
    else:
        weight = tensor_arg(op_name, arg_types, 1, "weight")
    expect(weight.ndim == 4 and weight.shape[0] == data.shape[1], op_name,
           f"weight {weight.shape} must be (in_channels={data.shape[1]}, out_channels / groups, kh, kw)")
    _, (oh, ow) = transpose_geometry(op_name, data.shape, weight.shape, attrs)
    return Solved(TensorType((data.shape[0], weight.shape[1] * groups, oh, ow), data.dtype), (data, weight))


def _reference(attrs: Conv2DTransposeAttrs, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    (pt, pl, _, _), (oh, ow) = transpose_geometry("nn.conv2d_transpose", x.shape, w.shape, attrs)
    n, c, h, wd = x.shape
    groups, per_in, per_out = attrs.groups, c // attrs.groups, w.shape[1]
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    kh, kw = w.shape[2:]
    full = np.zeros((n, per_out * groups, pt + oh + dh * kh + sh * h, pl + ow + dw * kw + sw * wd))
    for g in range(groups):
        xs = x[:, g * per_in : (g + 1) * per_in].astype(np.float64)
        ws = w[g * per_in : (g + 1) * per_in].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, ky, kx])
                full[:, g * per_out : (g + 1) * per_out, ky * dh : ky * dh + (h - 1) * sh + 1 : sh,
                     kx * dw : kx * dw + (wd - 1) * sw + 1 : sw] += contrib
    return full[:, :, pt : pt + oh, pl : pl + ow].astype(x.dtype)


register_op(
    "nn.conv2d_transpose", ("data", "weight"), _relation, _reference, OpPattern.OUT_ELEMWISE_FUSABLE,
    Conv2DTransposeAttrs, strategy_op="conv2d_transpose_nchw",
)


def conv2d_transpose(
    data: Expr,
    weight: Expr,
    strides: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    dilation: IntOrInts = (1, 1),
    output_padding: IntOrInts = (0, 0),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCHW",
    kernel_layout: str = "IOHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """The gradient of ``nn.conv2d`` with respect to its data (``relay.nn.conv2d_transpose``):
    each input pixel scatters ``weight`` into a ``strides``-spaced output, ``padding`` then cut.
    TVM's layout and dtype keywords are accepted with the values computed here (NCHW data, IOHW
    weights, the data's dtype)."""
    layouts = (data_layout, kernel_layout, out_layout or data_layout)
    if layouts != ("NCHW", "IOHW", "NCHW") or out_dtype not in ("", "same"):
        raise GraphError(f"nn.conv2d_transpose: only NCHW data, IOHW weights and the data's dtype are "
                         f"supported, got {'/'.join(layouts)} out_dtype={out_dtype!r}")
    attrs = Conv2DTransposeAttrs(
        int_tuple(strides, 2, "strides"),
        int_tuple(padding, 2, "padding"),
        int_tuple(dilation, 2, "dilation"),
        int_tuple(output_padding, 2, "output_padding"),
        int(groups),
        None if channels is None else int(channels),
        None if kernel_size is None else int_tuple(kernel_size, 2, "kernel_size"),
    )
    return make_call("nn.conv2d_transpose", [data, weight], attrs)
