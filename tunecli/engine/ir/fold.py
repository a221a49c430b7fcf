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


def float_identities(e: E.BinaryOp) -> E.Expr:
    """``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` reduced to ``x``."""
    a, b = e.a, e.b
    if isinstance(e, E.Add):
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return b
    elif isinstance(e, E.Sub) and _is_const(b, 0):
        return a
    elif isinstance(e, E.Mul):
        if _is_const(b, 1):
            return a
        if _is_const(a, 1):
            return b
    elif isinstance(e, E.Div) and _is_const(b, 1):
        return a
    return e


def _is_const(e: E.Expr, v: float) -> bool:
    return isinstance(e, E.ConstExpr) and e.value == v and E.lanes_of(e.dtype) == 1
