"""Reductions: sum, mean, max, min over axes (pattern COMM_REDUCE)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, tensor_arg
from ..types import TensorType, Type
from .define import IntOrInts, int_tuple, make_call, normalize_axis, register_op


@dataclass(frozen=True)
class ReduceAttrs(Attrs):
    """The reduced axes (None: all), whether they stay as size 1, and whether ``axis`` lists the
    axes to keep instead (``exclude``)."""

    axis: tuple[int, ...] | None = None
    keepdims: bool = False
    exclude: bool = False


def reduced_axes(op_name: str, ndim: int, attrs: ReduceAttrs) -> tuple[int, ...]:
    """The axes a reduction call reduces, normalised and sorted."""
    named = range(ndim) if attrs.axis is None else {normalize_axis(op_name, a, ndim) for a in attrs.axis}
    if attrs.exclude:
        return tuple(a for a in range(ndim) if a not in named)
    return tuple(sorted(named))


def _relation(op_name: str, arg_types: Sequence[Type | None], attrs: ReduceAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    axes = reduced_axes(op_name, data.ndim, attrs)
    if attrs.keepdims:
        shape = tuple(1 if i in axes else s for i, s in enumerate(data.shape))
    else:
        shape = tuple(s for i, s in enumerate(data.shape) if i not in axes)
    return TensorType(shape, data.dtype)


def _reference(
    name: str, fn: Callable[..., np.ndarray], accumulate: bool
) -> Callable[[ReduceAttrs, np.ndarray], np.ndarray]:
    def reference(attrs: ReduceAttrs, x: np.ndarray) -> np.ndarray:
        axes = reduced_axes(name, x.ndim, attrs)
        values = x.astype(np.float64) if accumulate and x.dtype.kind == "f" else x
        return np.asarray(fn(values, axis=axes, keepdims=attrs.keepdims)).astype(x.dtype)

    reference.__name__ = name
    return reference


for _name, _fn, _acc in (
    ("sum", np.sum, True),
    ("mean", np.mean, True),
    ("max", np.max, False),
    ("min", np.min, False),
):
    register_op(_name, ("data",), _relation, _reference(_name, _fn, _acc), OpPattern.COMM_REDUCE, ReduceAttrs)


def _attrs(axis: IntOrInts | None, keepdims: bool, exclude: bool) -> ReduceAttrs:
    return ReduceAttrs(None if axis is None else int_tuple(axis, 1, "axis"), bool(keepdims), bool(exclude))


def sum(  # noqa: A001
    data: Expr, axis: IntOrInts | None = None, keepdims: bool = False, exclude: bool = False
) -> Call:
    """Sum over ``axis`` (``relay.sum``; None: every axis)."""
    return make_call("sum", [data], _attrs(axis, keepdims, exclude))


def mean(data: Expr, axis: IntOrInts | None = None, keepdims: bool = False, exclude: bool = False) -> Call:
    """Mean over ``axis`` (``relay.mean``)."""
    return make_call("mean", [data], _attrs(axis, keepdims, exclude))


def max(  # noqa: A001
    data: Expr, axis: IntOrInts | None = None, keepdims: bool = False, exclude: bool = False
) -> Call:
    """Maximum over ``axis`` (``relay.max``)."""
    return make_call("max", [data], _attrs(axis, keepdims, exclude))


def min(  # noqa: A001
    data: Expr, axis: IntOrInts | None = None, keepdims: bool = False, exclude: bool = False
) -> Call:
    """Minimum over ``axis`` (``relay.min``)."""
    return make_call("min", [data], _attrs(axis, keepdims, exclude))
