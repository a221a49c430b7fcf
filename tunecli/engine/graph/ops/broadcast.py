"""Broadcasting binary operators: add, subtract, multiply, divide, maximum, minimum, power
(pattern BROADCAST; numpy's broadcasting rules, both operands of one dtype)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..graph_expr import Call, Operand
from ..op_registry import NoAttrs, OpPattern
from .define import broadcast_relation, make_call, register_op


def _binary(
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> Callable[[NoAttrs, np.ndarray, np.ndarray], np.ndarray]:
    def reference(attrs: NoAttrs, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return np.asarray(fn(lhs, rhs)).astype(lhs.dtype, copy=False)

    reference.__name__ = fn.__name__
    return reference


def _divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if lhs.dtype.kind in "iu":  # TVM's integer division truncates toward zero
        return np.trunc(lhs / rhs)
    return lhs / rhs


for _name, _fn in (
    ("add", np.add),
    ("subtract", np.subtract),
    ("multiply", np.multiply),
    ("divide", _divide),
    ("maximum", np.maximum),
    ("minimum", np.minimum),
    ("power", np.power),
):
    register_op(_name, ("lhs", "rhs"), broadcast_relation, _binary(_fn), OpPattern.BROADCAST)


def add(lhs: Operand, rhs: Operand) -> Call:
    """``lhs + rhs`` with broadcasting (``relay.add``)."""
    return make_call("add", [lhs, rhs])


def subtract(lhs: Operand, rhs: Operand) -> Call:
    """``lhs - rhs`` with broadcasting (``relay.subtract``)."""
    return make_call("subtract", [lhs, rhs])


def multiply(lhs: Operand, rhs: Operand) -> Call:
    """``lhs * rhs`` with broadcasting (``relay.multiply``)."""
    return make_call("multiply", [lhs, rhs])


def divide(lhs: Operand, rhs: Operand) -> Call:
    """``lhs / rhs`` with broadcasting (``relay.divide``; integers truncate)."""
    return make_call("divide", [lhs, rhs])


def maximum(lhs: Operand, rhs: Operand) -> Call:
    """Elementwise maximum with broadcasting (``relay.maximum``)."""
    return make_call("maximum", [lhs, rhs])


def minimum(lhs: Operand, rhs: Operand) -> Call:
    """Elementwise minimum with broadcasting (``relay.minimum``)."""
    return make_call("minimum", [lhs, rhs])


def power(lhs: Operand, rhs: Operand) -> Call:
    """``lhs ** rhs`` elementwise with broadcasting (``relay.power``)."""
    return make_call("power", [lhs, rhs])
