"""Helpers shared by the operator families: registering an operator and common type relations."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

import numpy as np

from tunecli.engine.ops.nn.elemwise import broadcast_shape as kernel_broadcast_shape
from tunecli.engine.te.window import get_pad_tuple
from tunecli.errors import ExprError, GraphError

from ..graph_expr import Call, Expr, Operand, const
from ..op_registry import OPS, Attrs, NoAttrs, Op, OpPattern, TypeRelation, expect, tensor_arg
from ..types import TensorType, Type, Value

#: An int or a sequence of ints: how TVM's operator builders take strides, padding, axes, shapes.
IntOrInts: TypeAlias = "int | np.integer | Sequence[int | np.integer]"


def register_op(
    name: str,
    arg_names: Sequence[str],
    relation: TypeRelation,
    reference: Callable[..., Value],
    pattern: OpPattern,
    attrs_type: type[Attrs] = NoAttrs,
    strategy_op: str | None = None,
    description: str = "",
) -> Op:
    """Create and register one operator (see ``op_registry.Op``)."""
    return OPS.register(
        Op(name, tuple(arg_names), attrs_type, relation, reference, pattern, strategy_op, description)
    )


def make_call(op_name: str, args: Sequence[Operand], attrs: Attrs | None = None) -> Call:
    """A call of operator ``op_name``; Python numbers among ``args`` become constants."""
    exprs = [a if isinstance(a, Expr) else const(a) for a in args]
    return Call(OPS.get(op_name), exprs, attrs)


def same_type_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    """An elementwise unary operator: the output has its input's type."""
    return tensor_arg(op_name, arg_types, 0, "data")


def broadcast_shape(op_name: str, lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's broadcast of two shapes (the kernels' rule, ``ops.nn.broadcast_shape``); GraphError
    naming ``op_name`` when they do not broadcast."""
    try:
        return kernel_broadcast_shape(tuple(lhs), tuple(rhs))
    except ExprError as err:
        raise GraphError(f"{op_name}: {err}") from None


def broadcast_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    """A broadcasting binary operator: both dtypes equal, numpy's shape broadcast."""
    lhs = tensor_arg(op_name, arg_types, 0, "lhs")
    rhs = tensor_arg(op_name, arg_types, 1, "rhs")
    expect(
        lhs.dtype == rhs.dtype, op_name, f"operands have dtypes {lhs.dtype} and {rhs.dtype}; cast one first"
    )
    return TensorType(broadcast_shape(op_name, lhs.shape, rhs.shape), lhs.dtype)


def normalize_axis(op_name: str, axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)`` (negative counts from the end); GraphError when out of range."""
    expect(-ndim <= axis < ndim, op_name, f"axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def int_tuple(value: IntOrInts, length: int | None = None, what: str = "value") -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of ints (an int repeated ``length`` times)."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * (length or 1)
    try:
        return tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise GraphError(f"{what} must be an int or a sequence of ints, got {value!r}") from None


def window_pads(op_name: str, padding: tuple[int, ...], window: Sequence[int]) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` of a 2-D window operator's ``padding`` attribute (1, 2 or 4
    numbers, as TVM's ``get_pad_tuple`` reads them for the ``window`` of this height and width)."""
    try:
        return get_pad_tuple(padding * 4 if len(padding) == 1 else padding, window)
    except ExprError as err:
        raise GraphError(f"{op_name}: padding {padding}: {err}") from None


def out_dtype_of(out_dtype: str, default: str) -> str:
    """TVM's ``out_dtype`` attribute: empty means ``default``."""
    return str(np.dtype(out_dtype)) if out_dtype else default
