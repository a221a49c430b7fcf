"""Pooling: nn.max_pool2d, nn.avg_pool2d, nn.global_avg_pool2d, nn.global_max_pool2d and
nn.adaptive_avg_pool2d (pattern OUT_ELEMWISE_FUSABLE), in any layout of N, C, H, W."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine.ops.reference import pool2d_nchw_python
from tunecli.engine.te.window import pool2d_output_shape
from tunecli.errors import ExprError, GraphError

from ..graph_expr import Call, Expr
from ..layout import convert_array, layout_shape, primal_sizes
from ..op_registry import Attrs, OpPattern, expect, tensor_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, register_op, window_pads


@dataclass(frozen=True)
class Pool2DAttrs(Attrs):
    """``nn.max_pool2d`` / ``nn.avg_pool2d`` (TVM's ``MaxPool2DAttrs`` / ``AvgPool2DAttrs``)."""

    pool_size: tuple[int, ...] = (1, 1)
    strides: tuple[int, ...] = (1, 1)
    dilation: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False


@dataclass(frozen=True)
class GlobalPool2DAttrs(Attrs):
    """``nn.global_*_pool2d`` / ``nn.adaptive_avg_pool2d``: layout and output size (None: 1x1)."""

    output_size: tuple[int, ...] | None = None
    layout: str = "NCHW"
    out_layout: str = ""


def _nchw_sizes(op_name: str, data: TensorType, layout: str) -> dict[str, int]:
    sizes = primal_sizes(data.shape, layout)
    expect(set(sizes) == set("NCHW"), op_name, f"layout {layout!r} must have the axes N, C, H, W")
    return sizes


def _pool_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Pool2DAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    d = _nchw_sizes(op_name, data, attrs.layout)
    pads = window_pads(op_name, attrs.padding, attrs.pool_size)
    try:
        out_h, out_w, _ = pool2d_output_shape((d["H"], d["W"]), attrs.pool_size, attrs.strides, pads,
                                              attrs.dilation, attrs.ceil_mode)
    except ExprError as err:
        raise GraphError(f"{op_name}: {err}") from None
    sizes = {"N": d["N"], "C": d["C"], "H": out_h, "W": out_w}
    return TensorType(layout_shape(sizes, attrs.out_layout or attrs.layout), data.dtype)


def _pool_reference(pool_type: str) -> Callable[[Pool2DAttrs, np.ndarray], np.ndarray]:
    def reference(attrs: Pool2DAttrs, data: np.ndarray) -> np.ndarray:
        x = convert_array(data, attrs.layout, "NCHW")
        out = pool2d_nchw_python(
            x,
            attrs.pool_size,
            attrs.strides,
            attrs.dilation,
            window_pads("pool2d", attrs.padding, attrs.pool_size),
            pool_type,
            attrs.ceil_mode,
            attrs.count_include_pad,
        )
        return convert_array(out, "NCHW", attrs.out_layout or attrs.layout)

    reference.__name__ = f"{pool_type}_pool2d"
    return reference


def _global_relation(op_name: str, arg_types: Sequence[Type | None], attrs: GlobalPool2DAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    d = _nchw_sizes(op_name, data, attrs.layout)
    oh, ow = attrs.output_size or (1, 1)
    expect(oh >= 1 and ow >= 1, op_name, f"output_size {attrs.output_size} must be positive")
    sizes = {"N": d["N"], "C": d["C"], "H": oh, "W": ow}
    return TensorType(layout_shape(sizes, attrs.out_layout or attrs.layout), data.dtype)


def adaptive_pool_nchw(x: np.ndarray, output_size: tuple[int, int], pool_type: str) -> np.ndarray:
    """Adaptive pooling of an NCHW array: output cell ``i`` covers rows
    ``floor(i*H/oh) .. ceil((i+1)*H/oh)`` (and likewise for columns)."""
    n, c, h, w = x.shape
    oh, ow = output_size
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    reduce = np.mean if pool_type == "avg" else np.max
    for i in range(oh):
        r0, r1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            c0, c1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = reduce(x[:, :, r0:r1, c0:c1].astype(np.float64), axis=(2, 3))
    return out


def _global_reference(pool_type: str) -> Callable[[GlobalPool2DAttrs, np.ndarray], np.ndarray]:
    def reference(attrs: GlobalPool2DAttrs, data: np.ndarray) -> np.ndarray:
        x = convert_array(data, attrs.layout, "NCHW")
        out = adaptive_pool_nchw(x, attrs.output_size or (1, 1), pool_type)
        return convert_array(out, "NCHW", attrs.out_layout or attrs.layout)

    reference.__name__ = f"adaptive_{pool_type}_pool2d"
    return reference


_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
register_op("nn.max_pool2d", ("data",), _pool_relation, _pool_reference("max"), _FUSABLE, Pool2DAttrs)
register_op("nn.avg_pool2d", ("data",), _pool_relation, _pool_reference("avg"), _FUSABLE, Pool2DAttrs)
register_op(
    "nn.global_avg_pool2d", ("data",), _global_relation, _global_reference("avg"), _FUSABLE, GlobalPool2DAttrs
)
register_op(
    "nn.global_max_pool2d", ("data",), _global_relation, _global_reference("max"), _FUSABLE, GlobalPool2DAttrs
)
register_op(
    "nn.adaptive_avg_pool2d",
    ("data",),
    _global_relation,
    _global_reference("avg"),
    _FUSABLE,
    GlobalPool2DAttrs,
)


def _pool_attrs(
    pool_size: IntOrInts,
    strides: IntOrInts,
    dilation: IntOrInts,
    padding: IntOrInts,
    layout: str,
    out_layout: str,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Pool2DAttrs:
    return Pool2DAttrs(
        int_tuple(pool_size, 2, "pool_size"),
        int_tuple(strides, 2, "strides"),
        int_tuple(dilation, 2, "dilation"),
        int_tuple(padding, 2, "padding"),
        layout,
        out_layout,
        bool(ceil_mode),
        bool(count_include_pad),
    )


def max_pool2d(
    data: Expr,
    pool_size: IntOrInts = (1, 1),
    strides: IntOrInts = (1, 1),
    dilation: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
) -> Call:
    """2-D max pooling (``relay.nn.max_pool2d``); padded cells never win."""
    attrs = _pool_attrs(pool_size, strides, dilation, padding, layout, out_layout, ceil_mode, False)
    return make_call("nn.max_pool2d", [data], attrs)


def avg_pool2d(
    data: Expr,
    pool_size: IntOrInts = (1, 1),
    strides: IntOrInts = (1, 1),
    dilation: IntOrInts = (1, 1),
    padding: IntOrInts = (0, 0),
    layout: str = "NCHW",
    out_layout: str = "",
    ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> Call:
    """2-D average pooling (``relay.nn.avg_pool2d``)."""
    attrs = _pool_attrs(
        pool_size, strides, dilation, padding, layout, out_layout, ceil_mode, count_include_pad
    )
    return make_call("nn.avg_pool2d", [data], attrs)


def global_avg_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Mean over H and W, keeping them as 1x1 (``relay.nn.global_avg_pool2d``)."""
    return make_call("nn.global_avg_pool2d", [data], GlobalPool2DAttrs(None, layout, out_layout))


def global_max_pool2d(data: Expr, layout: str = "NCHW", out_layout: str = "") -> Call:
    """Maximum over H and W, keeping them as 1x1 (``relay.nn.global_max_pool2d``)."""
    return make_call("nn.global_max_pool2d", [data], GlobalPool2DAttrs(None, layout, out_layout))


def adaptive_avg_pool2d(
    data: Expr, output_size: IntOrInts | None = None, layout: str = "NCHW", out_layout: str = ""
) -> Call:
    """Average pooling to ``output_size`` cells (``relay.nn.adaptive_avg_pool2d``; None is 1x1)."""
    size = None if output_size is None else int_tuple(output_size, 2, "output_size")
    return make_call("nn.adaptive_avg_pool2d", [data], GlobalPool2DAttrs(size, layout, out_layout))
