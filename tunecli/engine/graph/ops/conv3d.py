"""3-D convolution ``nn.conv3d`` (NCDHW data, OIDHW weights, one group; pattern
OUT_ELEMWISE_FUSABLE, tunable: its x86 row is ``conv3d_ncdhw.x86``) and ``nn.global_avg_pool3d``
(NCDHW), the operators of TVM's ``relay.testing.resnet_3d``.  Both carry their te definition
(``FTVMCompute``); a ``conv3d`` call on a target without a row is computed by the plain one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.nn.conv3d import conv3d_ncdhw, conv3d_ncdhw_python, conv3d_output_shape, pad_tuple3d
from tunecli.errors import ExprError, GraphError

from ..graph_expr import Call, Expr
from ..op_registry import COMPUTE_ATTR, OPS, Attrs, OpPattern, Solved, expect, tensor_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, out_dtype_of, register_op


@dataclass(frozen=True)
class Conv3DAttrs(Attrs):
    """Attributes of ``nn.conv3d`` (TVM's ``Conv3DAttrs``); ``padding`` is normalised to six numbers
    (front, top, left, back, bottom, right), as ``relay.nn.conv3d`` does."""

    strides: tuple[int, ...] = (1, 1, 1)
    padding: tuple[int, ...] = (0, 0, 0, 0, 0, 0)
    dilation: tuple[int, ...] = (1, 1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCDHW"
    kernel_layout: str = "OIDHW"
    out_layout: str = ""
    out_dtype: str = ""


@dataclass(frozen=True)
class GlobalPool3DAttrs(Attrs):
    """Attributes of ``nn.global_avg_pool3d``."""

    layout: str = "NCDHW"
    out_layout: str = ""


def _conv3d_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Conv3DAttrs) -> Solved:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(
        attrs.data_layout == "NCDHW" and attrs.kernel_layout == "OIDHW" and attrs.out_layout in ("", "NCDHW"),
        op_name,
        f"only NCDHW data with OIDHW weights is supported, got {attrs.data_layout}/{attrs.kernel_layout}",
    )
    expect(attrs.groups == 1, op_name, f"only one group is supported, got groups={attrs.groups}")
    expect(data.ndim == 5, op_name, f"data must be NCDHW, got {data.shape}")
    if arg_types[1] is None:
        expect(
            attrs.channels is not None and attrs.kernel_size is not None,
            op_name,
            "the weight has no shape; give the weight a shape or the conv channels and kernel_size",
        )
        weight = TensorType((attrs.channels, data.shape[1], *attrs.kernel_size), data.dtype)
    else:
        weight = tensor_arg(op_name, arg_types, 1, "weight")
    expect(
        weight.ndim == 5 and weight.shape[1] == data.shape[1],
        op_name,
        f"weight {weight.shape} must be (out_channels, in_channels={data.shape[1]}, kd, kh, kw)",
    )
    expect(
        attrs.channels in (None, weight.shape[0]),
        op_name,
        f"channels={attrs.channels} but the weight has {weight.shape[0]} outputs",
    )
    try:
        out = conv3d_output_shape(
            data.shape[2:], weight.shape[2:], attrs.strides, attrs.padding, attrs.dilation
        )
    except ExprError as err:
        expect(False, op_name, str(err))
    out_type = TensorType((data.shape[0], weight.shape[0], *out), out_dtype_of(attrs.out_dtype, data.dtype))
    return Solved(out_type, (data, weight))


def _conv3d_reference(attrs: Conv3DAttrs, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    out_dtype = out_dtype_of(attrs.out_dtype, str(data.dtype))
    return conv3d_ncdhw_python(data, weight, attrs.strides, attrs.padding, attrs.dilation, out_dtype)


def _conv3d_compute(attrs: Conv3DAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    data, weight = inputs
    return conv3d_ncdhw(data, weight, attrs.strides, attrs.padding, attrs.dilation, out.dtype)


def _global_relation(op_name: str, arg_types: Sequence[Type | None], attrs: GlobalPool3DAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(
        attrs.layout == "NCDHW" and attrs.out_layout in ("", "NCDHW") and data.ndim == 5,
        op_name,
        f"only NCDHW data is supported, got {attrs.layout} {data.shape}",
    )
    return TensorType((*data.shape[:2], 1, 1, 1), data.dtype)


def _global_reference(attrs: GlobalPool3DAttrs, data: np.ndarray) -> np.ndarray:
    return data.mean(axis=(2, 3, 4), keepdims=True, dtype=np.float64).astype(data.dtype)


def _global_compute(attrs: GlobalPool3DAttrs, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    (x,) = inputs
    d, h, w = x.shape[2:]
    rd, rh, rw = (
        te.reduce_axis((0, d), name="rd"),
        te.reduce_axis((0, h), name="rh"),
        te.reduce_axis((0, w), name="rw"),
    )
    total = te.compute(
        out.shape,
        lambda b, c, *_: te.sum(x[b, c, rd, rh, rw], axis=[rd, rh, rw]),
        name="T_global_sum",
        tag="global_pool_sum",
    )
    return te.compute(
        out.shape,
        lambda *i: total(*i) / E.const(d * h * w, x.dtype),
        name="T_global_avg",
        tag="elemwise,pool_avg",
    )


register_op(
    "nn.conv3d",
    ("data", "weight"),
    _conv3d_relation,
    _conv3d_reference,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    Conv3DAttrs,
    strategy_op="conv3d_ncdhw",
)
register_op(
    "nn.global_avg_pool3d",
    ("data",),
    _global_relation,
    _global_reference,
    OpPattern.OUT_ELEMWISE_FUSABLE,
    GlobalPool3DAttrs,
)
OPS.set_attr("nn.conv3d", COMPUTE_ATTR, _conv3d_compute)
OPS.set_attr("nn.global_avg_pool3d", COMPUTE_ATTR, _global_compute)


def conv3d(
    data: Expr,
    weight: Expr,
    strides: IntOrInts = (1, 1, 1),
    padding: IntOrInts = (0, 0, 0),
    dilation: IntOrInts = (1, 1, 1),
    groups: int = 1,
    channels: int | None = None,
    kernel_size: IntOrInts | None = None,
    data_layout: str = "NCDHW",
    kernel_layout: str = "OIDHW",
    out_layout: str = "",
    out_dtype: str = "",
) -> Call:
    """3-D convolution (``relay.nn.conv3d``, TVM's arguments): ``padding`` 1, 3 or 6 numbers; a
    weight without a shape gets ``(channels, in_channels, *kernel_size)``."""
    try:
        pads = pad_tuple3d(padding)
    except ExprError as err:
        raise GraphError(f"nn.conv3d: {err}") from None
    attrs = Conv3DAttrs(
        int_tuple(strides, 3, "strides"),
        pads,
        int_tuple(dilation, 3, "dilation"),
        int(groups),
        None if channels is None else int(channels),
        None if kernel_size is None else int_tuple(kernel_size, 3, "kernel_size"),
        data_layout,
        kernel_layout,
        out_layout,
        str(np.dtype(out_dtype)) if out_dtype else "",
    )
    return make_call("nn.conv3d", [data, weight], attrs)


def global_avg_pool3d(data: Expr, layout: str = "NCDHW", out_layout: str = "") -> Call:
    """The mean of each channel over depth, height and width (``relay.nn.global_avg_pool3d``)."""
    return make_call("nn.global_avg_pool3d", [data], GlobalPool3DAttrs(layout, out_layout))
