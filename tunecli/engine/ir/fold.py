"""Constant folding of binary operations and trivial identities (helpers of ``simplify``)."""

from __future__ import annotations

import math
import operator

from . import expr as E

_FOLD = {
    E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul,
    E.Min: min, E.Max: max,
    E.LT: operator.lt, E.LE: operator.le, E.GT: operator.gt, E.GE: operator.ge,
    E.EQ: operator.eq, E.NE: operator.ne,
}


def fold_binary(cls: type, a: E.ConstExpr, b: E.ConstExpr, dtype: str) -> E.Expr | None:
    """The constant ``a <cls> b`` of ``dtype``, or None when it cannot be folded (division by 0)."""
    x, y = a.value, b.value
    is_float = E.parse_dtype(a.dtype).is_float
    try:
        if cls in _FOLD:
            v = _FOLD[cls](x, y)
        elif cls is E.FloorDiv:
            v = math.floor(x / y) if is_float else x // y
        elif cls is E.FloorMod:
            v = x - math.floor(x / y) * y if is_float else x % y
        elif cls is E.Div:
            v = x / y if is_float else int(x / y)
        elif cls is E.And:
            v = bool(x) and bool(y)
        elif cls is E.Or:
            v = bool(x) or bool(y)
        else:
            return None
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    if dtype.startswith("bool"):
        return E.IntImm(int(bool(v)), "bool")
    return E.const(v, dtype) if not is_float else E.FloatImm(v, dtype)


def fold_logic(cls: type, a: E.Expr, b: E.Expr) -> E.Expr:
    """``a && b`` / ``a || b`` with a constant operand folded away."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, E.IntImm):
            if cls is E.And:
                return y if x.value else E.IntImm(0, "bool")
            return E.IntImm(1, "bool") if x.value else y
    return cls(a, b)


#: The constant that leaves an operation's other operand unchanged, on the right and on the left.
_RIGHT_IDENTITY: dict[type[E.BinaryOp], int] = {E.Add: 0, E.Sub: 0, E.Mul: 1, E.Div: 1}
_LEFT_IDENTITY: dict[type[E.BinaryOp], int] = {E.Add: 0, E.Mul: 1}


def float_identities(e: E.BinaryOp) -> E.Expr:
    """``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``, ``1 * x``, ``x / 1`` reduced to ``x``."""
    right, left = _RIGHT_IDENTITY.get(type(e)), _LEFT_IDENTITY.get(type(e))
    if right is not None and _is_const(e.b, right):
        return e.a
    if left is not None and _is_const(e.a, left):
        return e.b
    return e


def _is_const(e: E.Expr, v: float) -> bool:
    return isinstance(e, E.ConstExpr) and e.value == v and E.lanes_of(e.dtype) == 1
