"""Comparisons, logical operators and selections: equal, not_equal, less, less_equal, greater,
greater_equal, logical_and/or/xor (BROADCAST, bool results), logical_not, isnan, isinf
(ELEMWISE, bool results), where
(BROADCAST over its three operands) and trilu (INJECTIVE: a triangle of the last two axes kept,
the rest zero), the operators of attention masks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Call, Expr, Operand
from ..op_registry import Attrs, OpPattern, expect, tensor_arg
from ..types import TensorType, Type
from .define import broadcast_shape, make_call, register_op

#: The comparison operators: name -> numpy function.
COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}

#: The binary logical operators on bool tensors: name -> numpy function.
LOGICAL: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}


@dataclass(frozen=True)
class TriluAttrs(Attrs):
    """``trilu``: keep the upper (``upper``) or lower triangle, shifted by diagonal ``k``."""

    upper: bool = True
    k: int = 0


def _comparison_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    lhs = tensor_arg(op_name, arg_types, 0, "lhs")
    rhs = tensor_arg(op_name, arg_types, 1, "rhs")
    same = lhs.dtype == rhs.dtype
    expect(same, op_name, f"operands have dtypes {lhs.dtype} and {rhs.dtype}; cast one first")
    return TensorType(broadcast_shape(op_name, lhs.shape, rhs.shape), "bool")


def _logical_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    lhs = tensor_arg(op_name, arg_types, 0, "lhs")
    rhs = tensor_arg(op_name, arg_types, 1, "rhs")
    both = lhs.dtype == rhs.dtype == "bool"
    expect(both, op_name, f"operands must be bool, got {lhs.dtype} and {rhs.dtype}")
    return TensorType(broadcast_shape(op_name, lhs.shape, rhs.shape), "bool")


def _logical_not_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.dtype == "bool", op_name, f"the operand must be bool, got {data.dtype}")
    return data


def _float_test_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.dtype.startswith("float"), op_name, f"the operand must be floating point, got {data.dtype}")
    return TensorType(data.shape, "bool")


def _where_relation(op_name: str, arg_types: Sequence[Type | None], attrs: Attrs) -> Type:
    cond = tensor_arg(op_name, arg_types, 0, "condition")
    x = tensor_arg(op_name, arg_types, 1, "x")
    y = tensor_arg(op_name, arg_types, 2, "y")
    expect(cond.dtype == "bool", op_name, f"the condition must be bool, got {cond.dtype}")
    expect(x.dtype == y.dtype, op_name, f"x and y have dtypes {x.dtype} and {y.dtype}; cast one first")
    shape = broadcast_shape(op_name, broadcast_shape(op_name, cond.shape, x.shape), y.shape)
    return TensorType(shape, x.dtype)


def _trilu_relation(op_name: str, arg_types: Sequence[Type | None], attrs: TriluAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    expect(data.ndim >= 2, op_name, f"the input must have at least 2 dimensions, got {data.shape}")
    return data


def _binary_bool(
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> Callable[[Attrs, np.ndarray, np.ndarray], np.ndarray]:
    def reference(attrs: Attrs, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.asarray(fn(lhs, rhs), dtype=bool)

    reference.__name__ = fn.__name__
    return reference


def _logical_not(attrs: Attrs, x: np.ndarray) -> np.ndarray:
    return np.logical_not(x)


def _where(attrs: Attrs, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(cond, x, y).astype(x.dtype, copy=False)


def _trilu(attrs: TriluAttrs, x: np.ndarray) -> np.ndarray:
    return np.triu(x, attrs.k) if attrs.upper else np.tril(x, attrs.k)


for _name, _fn in COMPARISONS.items():
    register_op(_name, ("lhs", "rhs"), _comparison_relation, _binary_bool(_fn), OpPattern.BROADCAST)
for _name, _fn in LOGICAL.items():
    register_op(_name, ("lhs", "rhs"), _logical_relation, _binary_bool(_fn), OpPattern.BROADCAST)
register_op("logical_not", ("data",), _logical_not_relation, _logical_not, OpPattern.ELEMWISE)
register_op("isnan", ("data",), _float_test_relation, lambda attrs, x: np.isnan(x), OpPattern.ELEMWISE)
register_op("isinf", ("data",), _float_test_relation, lambda attrs, x: np.isinf(x), OpPattern.ELEMWISE)
register_op("where", ("condition", "x", "y"), _where_relation, _where, OpPattern.BROADCAST)
register_op("trilu", ("data",), _trilu_relation, _trilu, OpPattern.INJECTIVE, TriluAttrs)


def equal(lhs: Operand, rhs: Operand) -> Call:
    """``lhs == rhs`` elementwise with broadcasting, a bool tensor (``relay.equal``)."""
    return make_call("equal", [lhs, rhs])


def not_equal(lhs: Operand, rhs: Operand) -> Call:
    """``lhs != rhs`` (``relay.not_equal``)."""
    return make_call("not_equal", [lhs, rhs])


def less(lhs: Operand, rhs: Operand) -> Call:
    """``lhs < rhs`` (``relay.less``)."""
    return make_call("less", [lhs, rhs])


def less_equal(lhs: Operand, rhs: Operand) -> Call:
    """``lhs <= rhs`` (``relay.less_equal``)."""
    return make_call("less_equal", [lhs, rhs])


def greater(lhs: Operand, rhs: Operand) -> Call:
    """``lhs > rhs`` (``relay.greater``)."""
    return make_call("greater", [lhs, rhs])


def greater_equal(lhs: Operand, rhs: Operand) -> Call:
    """``lhs >= rhs`` (``relay.greater_equal``)."""
    return make_call("greater_equal", [lhs, rhs])


def logical_and(lhs: Expr, rhs: Expr) -> Call:
    """Elementwise and of two bool tensors (``relay.logical_and``)."""
    return make_call("logical_and", [lhs, rhs])


def logical_or(lhs: Expr, rhs: Expr) -> Call:
    """Elementwise or of two bool tensors (``relay.logical_or``)."""
    return make_call("logical_or", [lhs, rhs])


def logical_xor(lhs: Expr, rhs: Expr) -> Call:
    """Elementwise exclusive or of two bool tensors (``relay.logical_xor``)."""
    return make_call("logical_xor", [lhs, rhs])


def logical_not(data: Expr) -> Call:
    """Elementwise negation of a bool tensor (``relay.logical_not``)."""
    return make_call("logical_not", [data])


def isnan(data: Expr) -> Call:
    """Whether each element is NaN (``relay.isnan``)."""
    return make_call("isnan", [data])


def isinf(data: Expr) -> Call:
    """Whether each element is infinite (``relay.isinf``)."""
    return make_call("isinf", [data])


def where(condition: Expr, x: Operand, y: Operand) -> Call:
    """``x`` where ``condition`` holds, else ``y``, the three broadcast together (``relay.where``)."""
    return make_call("where", [condition, x, y])


def trilu(data: Expr, k: int = 0, upper: bool = True) -> Call:
    """The upper (or lower) triangle of the last two axes from diagonal ``k``, zeros elsewhere
    (``relay.trilu``; numpy's ``triu``/``tril``)."""
    return make_call("trilu", [data], TriluAttrs(bool(upper), int(k)))
