"""Bounds of integer expressions: constant bounds under variable ranges, and symbolic intervals.

``ranges`` maps a Var to ``(min, extent)`` expressions (possibly symbolic in other variables);
``const_bounds`` resolves those recursively to integers.  ``eval_interval`` relaxes only the
variables in ``relax`` (mapped to symbolic ``(lo, hi)`` inclusive bounds) and keeps the others as
points, which is what bound inference needs (regions in terms of outer loop variables).
"""

from __future__ import annotations

from . import expr as E
from .dtype import parse_dtype
from .node import Node
from .visitor import post_order

Bound = tuple[int | None, int | None]
#: ``{Var: (min, extent)}``: the known ranges of variables.
Ranges = dict[E.Var, tuple[E.Expr, E.Expr]]


def is_int_expr(e: E.Expr) -> bool:
    """True for scalar integer (not bool) expressions."""
    t = parse_dtype(e.dtype)
    return t.is_int and t.lanes == 1


def _fdiv(a: int | None, c: int) -> int | None:
    return None if a is None else a // c


def const_bounds(e: E.Expr, ranges: Ranges | None = None, depth: int = 0) -> Bound:
    """Inclusive integer bounds ``(lo, hi)`` of ``e`` (None where unknown)."""
    ranges = ranges or {}
    if depth > 40:
        return (None, None)
    if isinstance(e, E.IntImm):
        return (e.value, e.value)
    if isinstance(e, E.Var):
        r = ranges.get(e)
        if r is None:
            return (None, None)
        mlo, mhi = const_bounds(r[0], ranges, depth + 1)
        _, ehi = const_bounds(r[1], ranges, depth + 1)
        hi = None if mhi is None or ehi is None else mhi + ehi - 1
        return (mlo, hi)
    if isinstance(e, E.Add):
        (a0, a1), (b0, b1) = const_bounds(e.a, ranges, depth + 1), const_bounds(e.b, ranges, depth + 1)
        return (_add(a0, b0), _add(a1, b1))
    if isinstance(e, E.Sub):
        (a0, a1), (b0, b1) = const_bounds(e.a, ranges, depth + 1), const_bounds(e.b, ranges, depth + 1)
        return (_add(a0, _neg(b1)), _add(a1, _neg(b0)))
    if isinstance(e, E.Mul):
        a, b = const_bounds(e.a, ranges, depth + 1), const_bounds(e.b, ranges, depth + 1)
        if None in a or None in b:
            if isinstance(e.b, E.IntImm):
                return _scale(a, e.b.value)
            if isinstance(e.a, E.IntImm):
                return _scale(b, e.a.value)
            return (None, None)
        corners = [x * y for x in a for y in b]  # type: ignore[operator]
        return (min(corners), max(corners))
    if isinstance(e, E.FloorDiv) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        lo, hi = const_bounds(e.a, ranges, depth + 1)
        return (_fdiv(lo, e.b.value), _fdiv(hi, e.b.value))
    if isinstance(e, E.FloorMod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        c = e.b.value
        lo, hi = const_bounds(e.a, ranges, depth + 1)
        if lo is not None and hi is not None and lo // c == hi // c:
            return (lo % c, hi % c)
        return (0, c - 1)
    if isinstance(e, (E.Min, E.Max)):
        (a0, a1), (b0, b1) = const_bounds(e.a, ranges, depth + 1), const_bounds(e.b, ranges, depth + 1)
        if isinstance(e, E.Min):
            return (_min(a0, b0, strict=True), _min(a1, b1))
        return (_max(a0, b0), _max(a1, b1, strict=True))
    if isinstance(e, E.Select):
        (a0, a1), (b0, b1) = (const_bounds(e.true_value, ranges, depth + 1),
                              const_bounds(e.false_value, ranges, depth + 1))
        return (_min(a0, b0, strict=True), _max(a1, b1, strict=True))
    if isinstance(e, E.Cast) and is_int_expr(e) and is_int_expr(e.value):
        return const_bounds(e.value, ranges, depth + 1)
    return (None, None)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _neg(a: int | None) -> int | None:
    return None if a is None else -a


def _scale(b: Bound, c: int) -> Bound:
    lo, hi = (None if b[0] is None else b[0] * c), (None if b[1] is None else b[1] * c)
    return (lo, hi) if c >= 0 else (hi, lo)


def _min(a: int | None, b: int | None, strict: bool = False) -> int | None:
    """Min where None is +-infinity: ``strict`` means None wins (lower bounds)."""
    if a is None or b is None:
        return None if strict else (a if b is None else b)
    return min(a, b)


def _max(a: int | None, b: int | None, strict: bool = False) -> int | None:
    if a is None or b is None:
        return None if strict else (a if b is None else b)
    return max(a, b)


def prove(cond: E.Expr, ranges: Ranges | None = None) -> bool | None:
    """True/False when ``cond`` (a comparison of integers) is provable under ``ranges``, else None."""
    from .simplify import simplify

    s = simplify(cond, ranges)
    if isinstance(s, E.IntImm):
        return bool(s.value)
    return None


# symbolic intervals ------------------------------------------------------------------------------

Interval = tuple[E.Expr | None, E.Expr | None]


def eval_interval(e: E.Expr, relax: dict[E.Var, Interval], ranges: Ranges | None = None) -> Interval:
    """Inclusive symbolic bounds of ``e`` when the variables in ``relax`` take any value in theirs.

    Variables not in ``relax`` stay symbolic (a point).  Returns None for a side that cannot be
    bounded (indirect indices, non-affine products of relaxed variables).
    """
    return _Interval(relax, ranges or {}).eval(e)


class _Interval:
    def __init__(self, relax: dict[E.Var, Interval], ranges: Ranges):
        self.relax = relax
        self.ranges = ranges

    def eval(self, e: E.Expr) -> Interval:
        """Inclusive symbolic bounds of ``e``."""
        if isinstance(e, E.ConstExpr):
            return (e, e)
        if isinstance(e, E.Var):
            return self.relax.get(e, (e, e))
        if not self._depends(e):
            return (e, e)
        if isinstance(e, E.Add):
            (a0, a1), (b0, b1) = self.eval(e.a), self.eval(e.b)
            return (_sym(E.Add, a0, b0), _sym(E.Add, a1, b1))
        if isinstance(e, E.Sub):
            (a0, a1), (b0, b1) = self.eval(e.a), self.eval(e.b)
            return (_sym(E.Sub, a0, b1), _sym(E.Sub, a1, b0))
        if isinstance(e, E.Mul):
            for x, c in ((e.a, e.b), (e.b, e.a)):
                if isinstance(c, E.IntImm):
                    lo, hi = self.eval(x)
                    lo, hi = (_sym(E.Mul, lo, c), _sym(E.Mul, hi, c))
                    return (lo, hi) if c.value >= 0 else (hi, lo)
            return self._const_fallback(e)
        if isinstance(e, E.FloorDiv) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            lo, hi = self.eval(e.a)
            return (_sym(E.FloorDiv, lo, e.b), _sym(E.FloorDiv, hi, e.b))
        if isinstance(e, E.FloorMod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            lo, hi = self.eval(e.a)
            if lo is not None and hi is not None:
                from .simplify import simplify

                if _is_zero(simplify(E.FloorDiv(lo, e.b) - E.FloorDiv(hi, e.b), self.ranges)):
                    return (E.FloorMod(lo, e.b), E.FloorMod(hi, e.b))
            return (E.IntImm(0, e.dtype), E.IntImm(e.b.value - 1, e.dtype))
        if isinstance(e, (E.Min, E.Max)):
            (a0, a1), (b0, b1) = self.eval(e.a), self.eval(e.b)
            cls = type(e)
            if cls is E.Min:
                return (_sym(E.Min, a0, b0), _sym_loose(E.Min, a1, b1))
            return (_sym_loose(E.Max, a0, b0), _sym(E.Max, a1, b1))
        if isinstance(e, E.Select):
            (a0, a1), (b0, b1) = self.eval(e.true_value), self.eval(e.false_value)
            return (_sym(E.Min, a0, b0), _sym(E.Max, a1, b1))
        if isinstance(e, E.Cast) and is_int_expr(e) and is_int_expr(e.value):
            lo, hi = self.eval(e.value)
            return (None if lo is None else E.cast(e.dtype, lo), None if hi is None else E.cast(e.dtype, hi))
        return self._const_fallback(e)

    def _const_fallback(self, e: E.Expr) -> Interval:
        if not is_int_expr(e):
            return (None, None)
        rng = dict(self.ranges)
        for v, (lo, hi) in self.relax.items():
            if lo is not None and hi is not None:
                rng[v] = (lo, hi - lo + 1)
        lo, hi = const_bounds(e, rng)
        return (None if lo is None else E.IntImm(lo, e.dtype), None if hi is None else E.IntImm(hi, e.dtype))

    def _depends(self, e: E.Expr) -> bool:
        found = False

        def check(n: Node) -> None:
            nonlocal found
            if isinstance(n, E.Var) and n in self.relax:
                found = True

        post_order(e, check)
        return found or not _pure(e)


def _pure(e: E.Expr) -> bool:
    """False when ``e`` reads memory (its value is not a function of its variables alone)."""
    impure = False

    def check(n: Node) -> None:
        nonlocal impure
        if isinstance(n, E.BufferLoad) or type(n).__name__ in ("TensorRead", "Reduce"):
            impure = True

    post_order(e, check)
    return not impure


def _is_zero(e: E.Expr) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def _sym(cls: type, a: E.Expr | None, b: E.Expr | None) -> E.Expr | None:
    if a is None or b is None:
        return None
    return E._binary(cls, a, b)


def _sym_loose(cls: type, a: E.Expr | None, b: E.Expr | None) -> E.Expr | None:
    """min of upper bounds / max of lower bounds: an unknown side does not spoil the other."""
    if a is None:
        return b
    if b is None:
        return a
    return E._binary(cls, a, b)
