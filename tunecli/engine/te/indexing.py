"""Integer division helpers with TVM's names: floor, truncating and index division.

``floordiv``/``floormod`` round towards minus infinity (Python's ``//`` and ``%``, which is what
``a // b`` and ``a % b`` on expressions build); ``truncdiv``/``truncmod`` round towards zero (C's
``/`` and ``%``); ``indexdiv``/``indexmod`` are for index arithmetic whose operands are known to
be non-negative, where both agree, and are floor division as in TVM.
"""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import parse_dtype

from .intrinsics import trunc

__all__ = ["floordiv", "floormod", "indexdiv", "indexmod", "truncdiv", "truncmod"]


def floordiv(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a // b`` rounded towards minus infinity."""
    return E._binary(E.FloorDiv, a, b)


def floormod(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a - floordiv(a, b) * b`` (the sign follows ``b``)."""
    return E._binary(E.FloorMod, a, b)


def truncdiv(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a / b`` rounded towards zero (for floats: ``trunc(a / b)``)."""
    q = E._binary(E.Div, a, b)
    return trunc(q) if parse_dtype(q.dtype).is_float else q


def truncmod(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """``a - truncdiv(a, b) * b`` (the sign follows ``a``)."""
    q = E._binary(E.Div, a, b)  # a and b converted to their common dtype
    whole = trunc(q) if parse_dtype(q.dtype).is_float else q
    return q.a - whole * q.b


def indexdiv(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """Division of non-negative index expressions (floor division, as TVM)."""
    return floordiv(a, b)


def indexmod(a: E.ExprLike, b: E.ExprLike) -> E.Expr:
    """Remainder of non-negative index expressions (floor modulo, as TVM)."""
    return floormod(a, b)
