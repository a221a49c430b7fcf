"""Image resizing: ``image.resize2d`` (the last two axes of NCHW data, nearest or linear
interpolation, ONNX's coordinate transformations; pattern INJECTIVE)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from tunecli.engine.ir import expr as E
from tunecli.errors import GraphError

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, expect, tensor_arg
from ..types import TensorType, Type
from .define import int_tuple, make_call, register_op

_Coordinate = TypeVar("_Coordinate", np.ndarray, E.Expr)

#: The interpolation methods.
METHODS = ("nearest_neighbor", "linear")
#: How an output coordinate maps to an input coordinate (ONNX's ``coordinate_transformation_mode``).
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
#: How nearest-neighbour interpolation rounds a fractional input coordinate.
ROUNDING = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class Resize2DAttrs(Attrs):
    """``image.resize2d``: the output height and width, the scale factors the coordinates are
    mapped by (0: output size / input size), the method, coordinate mode and rounding."""

    size: tuple[int, ...] = (1, 1)
    scale: tuple[float, ...] = (0.0, 0.0)
    layout: str = "NCHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = "round_prefer_floor"


def source_coordinate(x: _Coordinate, in_len: int, out_len: int, scale: float | np.floating,
                      mode: str) -> _Coordinate:
    """The input coordinate output coordinate ``x`` reads (the formulas of ONNX's Resize); works on
    float32 arrays and on tensor-expression values alike."""
    s = scale or np.float32(out_len / in_len)
    if mode == "half_pixel":
        return (x + 0.5) / s - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / s - 0.5 if out_len > 1 else x * 0.0
    if mode == "align_corners":
        return x * ((in_len - 1) / (out_len - 1)) if out_len > 1 else x * 0.0
    if mode == "asymmetric":
        return x / s
    return (x + 0.5) / s  # tf_half_pixel_for_nn


def _relation(op_name: str, arg_types: Sequence[Type | None], attrs: Resize2DAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.ndim == 4 and attrs.layout == "NCHW", op_name, f"only NCHW data is resized, got {data.shape} "
           f"({attrs.layout})")
    expect(attrs.method in METHODS, op_name, f"method {attrs.method!r}; supported: {', '.join(METHODS)}")
    expect(attrs.coordinate_transformation_mode in COORDINATE_MODES, op_name,
           f"coordinate_transformation_mode {attrs.coordinate_transformation_mode!r}; supported: "
           f"{', '.join(COORDINATE_MODES)}")
    expect(attrs.rounding_method in ROUNDING, op_name,
           f"rounding_method {attrs.rounding_method!r}; supported: {', '.join(ROUNDING)}")
    positive = len(attrs.size) == 2 and min(attrs.size) > 0
    expect(positive, op_name, f"size {attrs.size} must be 2 positive values")
    return TensorType((*data.shape[:2], *attrs.size), data.dtype)


def _round(x: np.ndarray, method: str) -> np.ndarray:
    if method == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if method == "round_prefer_ceil":
        return np.floor(x + 0.5)
    return np.floor(x) if method == "floor" else np.ceil(x)


def _axis_reads(attrs: Resize2DAttrs, axis: int, in_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index along ``axis``: the two input indices read and the second one's weight."""
    out_len = attrs.size[axis]
    # float32 arithmetic, as the compiled kernel's and onnxruntime's: a coordinate a float64 result
    # would put just below a rounding boundary lands on it
    x = source_coordinate(np.arange(out_len, dtype=np.float32), in_len, out_len,
                          np.float32(attrs.scale[axis]), attrs.coordinate_transformation_mode)
    if attrs.method == "nearest_neighbor":
        index = np.clip(_round(x, attrs.rounding_method), 0, in_len - 1).astype(np.int64)
        return index, index, np.zeros(out_len)
    low = np.floor(x)
    weight = x - low
    return (np.clip(low, 0, in_len - 1).astype(np.int64), np.clip(low + 1, 0, in_len - 1).astype(np.int64),
            weight)


def _reference(attrs: Resize2DAttrs, x: np.ndarray) -> np.ndarray:
    y0, y1, wy = _axis_reads(attrs, 0, x.shape[2])
    x0, x1, wx = _axis_reads(attrs, 1, x.shape[3])
    data = x.astype(np.float64)
    top = data[:, :, y0][:, :, :, x0] * (1 - wx) + data[:, :, y0][:, :, :, x1] * wx
    bottom = data[:, :, y1][:, :, :, x0] * (1 - wx) + data[:, :, y1][:, :, :, x1] * wx
    return (top * (1 - wy)[:, None] + bottom * wy[:, None]).astype(x.dtype)


register_op("image.resize2d", ("data",), _relation, _reference, OpPattern.INJECTIVE, Resize2DAttrs)


def resize2d(
    data: Expr,
    size: Sequence[int],
    scale: Sequence[float] = (0.0, 0.0),
    layout: str = "NCHW",
    method: str = "linear",
    coordinate_transformation_mode: str = "half_pixel",
    rounding_method: str = "round_prefer_floor",
) -> Call:
    """``data`` resized to ``size`` (height, width) (``relay.image.resize2d``); ``scale`` gives the
    factors coordinates are mapped by when they are not ``size / input size``."""
    scales = tuple(float(s) for s in scale)
    if len(scales) != 2 or any(math.isnan(s) or s < 0 for s in scales):
        raise GraphError(f"image.resize2d: scale {scale} must be 2 non-negative numbers")
    attrs = Resize2DAttrs(int_tuple(size, 2, "size"), scales, layout, method, coordinate_transformation_mode,
                          rounding_method)
    return make_call("image.resize2d", [data], attrs)
