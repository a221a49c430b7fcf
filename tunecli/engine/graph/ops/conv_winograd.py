"""Winograd convolution on channel-blocked data (the graph form of ``conv2d_NCHWc_winograd.x86``):
``nn.contrib_conv2d_NCHWc_winograd`` and the kernel transform it reads,
``nn.contrib_conv2d_NCHWc_winograd_weight_transform`` (TVM's pair
``nn.contrib_conv2d_winograd_without_weight_transform`` / ``nn.contrib_conv2d_winograd_weight_transform``
with the blocked layouts of the x86 template).

``AlterOpLayout`` makes a 3x3, stride-1 ``nn.conv2d`` the convolution of ``NCHW{ic_bn}c`` data with
the transform of its ``OIHW`` kernel, ``[alpha, alpha, O/oc_bn, I/ic_bn, ic_bn, oc_bn]``
(``alpha = tile_size + 2``); the transform of a constant kernel is folded at build time.  The
convolution is OUT_ELEMWISE_FUSABLE (an anchor, like ``nn.conv2d``), the transform OPAQUE (a
kernel of its own when the weight is not a constant).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine import te
from tunecli.engine.ops.reference import conv2d_winograd_NCHWc_python, winograd_kernel_transform
from tunecli.engine.ops.x86.conv2d_winograd import kernel_transform_stage

from ..layout import layout_shape, primal_sizes
from ..op_registry import COMPUTE_ATTR, OPS, Attrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, Type
from .conv import Conv2DNCHWcAttrs, conv2d_padding
from .define import out_dtype_of, register_op

CONV_OP = "nn.contrib_conv2d_NCHWc_winograd"
TRANSFORM_OP = "nn.contrib_conv2d_NCHWc_winograd_weight_transform"


@dataclass(frozen=True)
class WinogradWeightTransformAttrs(Attrs):
    """Attributes of the kernel transform: the output tile size ``m`` and the channel blocks."""

    tile_size: int = 4
    ic_bn: int = 8
    oc_bn: int = 8


def _transform_relation(op_name: str, arg_types: Sequence[Type | None],
                        attrs: WinogradWeightTransformAttrs) -> Type | Solved:
    weight = tensor_arg(op_name, arg_types, 0, "weight")
    expect(len(weight.shape) == 4 and tuple(weight.shape[2:]) == (3, 3), op_name,
           f"the weight must be an OIHW 3x3 kernel, got {weight.shape}")
    o, i = weight.shape[:2]
    expect(o % attrs.oc_bn == 0 and i % attrs.ic_bn == 0, op_name,
           f"the blocks ic_bn={attrs.ic_bn}, oc_bn={attrs.oc_bn} do not divide the weight {weight.shape}")
    alpha = attrs.tile_size + 2
    shape = (alpha, alpha, o // attrs.oc_bn, i // attrs.ic_bn, attrs.ic_bn, attrs.oc_bn)
    return Solved(TensorType(shape, weight.dtype), (weight,))


def _transform_reference(attrs: WinogradWeightTransformAttrs, weight: np.ndarray) -> np.ndarray:
    return winograd_kernel_transform(weight, attrs.tile_size, attrs.ic_bn, attrs.oc_bn)


def _conv_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Conv2DNCHWcAttrs) -> Type | Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    weight = tensor_arg(op_name, arg_types, 1, "weight")
    d = primal_sizes(data.shape, attrs.data_layout)
    expect(set(d) == set("NCHW") and len(data.shape) == 5, op_name,
           f"data_layout {attrs.data_layout!r} must be NCHW{{c}}c")
    expect(len(weight.shape) == 6 and weight.shape[0] == weight.shape[1], op_name,
           f"the weight must be a transformed kernel [alpha, alpha, O/oc_bn, I/ic_bn, ic_bn, oc_bn], "
           f"got {weight.shape}")
    alpha, _, kb, cb, ic_bn, oc_bn = weight.shape
    expect(cb * ic_bn == d["C"] and ic_bn == data.shape[4], op_name,
           f"data {data.shape} ({attrs.data_layout}) does not match the weight's channel blocks "
           f"{weight.shape}")
    expect(tuple(attrs.strides) == (1, 1) and tuple(attrs.dilation) == (1, 1) and attrs.groups == 1,
           op_name, "only stride 1, dilation 1 and one group")
    top, left, bottom, right = conv2d_padding(attrs, (3, 3))
    out_sizes = {"N": d["N"], "C": kb * oc_bn, "H": d["H"] + top + bottom - 2, "W": d["W"] + left + right - 2}
    expect(out_sizes["H"] >= 1 and out_sizes["W"] >= 1, op_name, "the 3x3 window does not fit the input")
    out_layout = attrs.out_layout or f"NCHW{oc_bn}c"
    out = TensorType(layout_shape(out_sizes, out_layout), out_dtype_of(attrs.out_dtype, data.dtype))
    return Solved(out, (data, weight))


def _conv_reference(attrs: Conv2DNCHWcAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    out = conv2d_winograd_NCHWc_python(data, weight, attrs.strides, conv2d_padding(attrs, (3, 3)),
                                       attrs.dilation)
    return out.astype(out_dtype_of(attrs.out_dtype, str(data.dtype)))


register_op(TRANSFORM_OP, ("weight",), _transform_relation, _transform_reference, OpPattern.OPAQUE,
            WinogradWeightTransformAttrs)
register_op(CONV_OP, ("data", "weight"), _conv_relation, _conv_reference, OpPattern.OUT_ELEMWISE_FUSABLE,
            Conv2DNCHWcAttrs, strategy_op="conv2d_NCHWc_winograd")


def _transform_compute(attrs: WinogradWeightTransformAttrs, inputs: Sequence[te.Tensor],
                       out: TensorType) -> te.Tensor:
    return kernel_transform_stage(inputs[0], attrs.tile_size, attrs.ic_bn, attrs.oc_bn)


OPS.set_attr(TRANSFORM_OP, COMPUTE_ATTR, _transform_compute)
