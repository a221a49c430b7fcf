"""Elementwise intrinsics (exp, sqrt, ...), ``if_then_else``, ``all``/``any`` and casts.

Math functions become ``ir.expr.Call`` nodes named after the C math function: ``exp``, ``exp2``,
``log``, ``log2``, ``log10``, ``sqrt``, ``rsqrt``, ``tanh``, ``sigmoid``, ``fabs``, ``pow``,
``floor``, ``ceil``, ``round``, ``trunc``, ``sin``, ``cos``, ``erf``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import parse_dtype, promote
from tunecli.errors import ExprError

#: The math and logic intrinsics, re-exported as they are by ``te``, ``tunecli.te`` and ``tunecli.tir``.
__all__ = [
    "abs", "all", "any", "ceil", "cos", "erf", "exp", "exp2", "floor", "if_then_else", "log", "log2", "log10",
    "power", "round", "rsqrt", "sigmoid", "sin", "sqrt", "tanh", "trunc",
]


def _unary(fname: str):
    def fn(x: E.ExprLike) -> E.Expr:
        e = E.convert(x)
        if not parse_dtype(e.dtype).is_float:
            e = E.cast("float32", e)
        return E.Call(e.dtype, fname, [e])

    fn.__name__ = fname
    fn.__doc__ = f"Elementwise ``{fname}`` (float; integer arguments are cast to float32)."
    return fn


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
sin = _unary("sin")
cos = _unary("cos")
erf = _unary("erf")


def _rounding(fname: str):
    def fn(x: E.ExprLike) -> E.Expr:
        e = E.convert(x)
        if not parse_dtype(e.dtype).is_float:
            return e
        return E.Call(e.dtype, fname, [e])

    fn.__name__ = fname
    fn.__doc__ = f"Elementwise ``{fname}`` (identity on integers)."
    return fn


floor = _rounding("floor")
ceil = _rounding("ceil")
round = _rounding("round")  # noqa: A001
trunc = _rounding("trunc")


def abs(x: E.ExprLike) -> E.Expr:  # noqa: A001
    """Elementwise absolute value (``fabs`` for floats, a select for integers)."""
    e = E.convert(x)
    if parse_dtype(e.dtype).is_float:
        return E.Call(e.dtype, "fabs", [e])
    return E.Select(e < 0, -e, e)


def power(x: E.ExprLike, y: E.ExprLike) -> E.Expr:
    """``x ** y`` in floating point."""
    a, b = E.convert(x), E.convert(y)
    dtype = promote(a.dtype, b.dtype)
    if not parse_dtype(dtype).is_float:
        dtype = "float32"
    return E.Call(dtype, "pow", [E.cast(dtype, a), E.cast(dtype, b)])


def if_then_else(cond: E.ExprLike, t: E.ExprLike, f: E.ExprLike) -> E.Expr:
    """``t`` where ``cond`` holds else ``f``; lazy, so a guarded out-of-bounds read is safe."""
    c = E.convert(cond)
    if c.dtype != "bool":
        raise ExprError(f"if_then_else: condition must be bool, got {c} ({c.dtype})")
    if isinstance(c, E.IntImm):
        return E.convert(t) if c.value else E.convert(f)
    tv, fv = E.convert(t), E.convert(f) if isinstance(f, E.Expr) or hasattr(f, "as_expr") else f
    if not isinstance(fv, E.Expr):
        fv = E.convert(fv, tv.dtype)
    if not isinstance(t, E.Expr) and not hasattr(t, "as_expr"):
        tv = E.convert(t, fv.dtype)
    if tv.dtype != fv.dtype:
        common = promote(tv.dtype, fv.dtype)
        tv, fv = E.cast(common, tv), E.cast(common, fv)
    return E.Select(c, tv, fv)


def _combine(name: str, conds: tuple[E.ExprLike | Sequence[E.ExprLike], ...],
             op: Callable[[E.Expr, E.Expr], E.Expr]) -> E.Expr:
    """Fold the conditions (or one list of them) left to right with ``op``."""
    items = list(conds[0]) if len(conds) == 1 and isinstance(conds[0], (list, tuple)) else list(conds)
    if not items:
        raise ExprError(f"te.{name} needs at least one condition")
    out = E.convert(items[0])
    for c in items[1:]:
        out = op(out, E.convert(c))
    return out


def all(*conds: E.ExprLike | Sequence[E.ExprLike]) -> E.Expr:  # noqa: A001
    """Logical and of the conditions (also accepts one list)."""
    return _combine("all", conds, operator.and_)


def any(*conds: E.ExprLike | Sequence[E.ExprLike]) -> E.Expr:  # noqa: A001
    """Logical or of the conditions (also accepts one list)."""
    return _combine("any", conds, operator.or_)


def var(name: str = "tindex", dtype: str = "int32") -> E.Var:
    """A free scalar variable."""
    return E.Var(name, dtype)
