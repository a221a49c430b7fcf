"""Simplification: constant folding and affine canonicalisation of integer expressions.

Integer sums are rewritten to a canonical linear form ``c1*t1 + c2*t2 + ... + c0`` (terms in
order of first appearance, constant last), so index expressions come out as ``base + c*i``.
``(a*c + b) // c`` becomes ``a + b // c`` and ``b // c`` / ``b % c`` fold when the ranges of the
variables prove ``0 <= b < c``.  Comparisons, min/max and selects fold when provable.
"""

from __future__ import annotations

import math
from typing import TypeVar

from . import expr as E
from . import stmt as S
from .fold import float_identities, fold_binary, fold_logic
from .interval import Ranges, const_bounds, is_int_expr
from .linear_form import Linear, skey
from .node import Node
from .visitor import Mutator

NodeT = TypeVar("NodeT", E.Expr, S.Stmt)


def simplify(node: NodeT, ranges: Ranges | None = None) -> NodeT:
    """Simplify an expression or statement.

    Parameters
    ----------
    node : Expr or Stmt
        What to simplify; loop variables of ``For`` statements get their loop range.
    ranges : dict, optional
        ``{Var: (min, extent)}`` known ranges of free variables.

    Returns
    -------
    Expr or Stmt
        An equivalent, simpler node.
    """
    return _Simplifier(dict(ranges or {})).visit(node)


def int_bounds(e: E.Expr, ranges: Ranges | None = None) -> tuple[int | None, int | None]:
    """Inclusive integer bounds of ``e`` using its canonical linear form (tighter than intervals)."""
    simp = _Simplifier(dict(ranges or {}))
    return simp.bounds(simp.linear(simp.visit(e)))


class _Simplifier(Mutator):
    def __init__(self, ranges: Ranges):
        self.ranges = ranges

    # statements ------------------------------------------------------------------------------
    def visit_For(self, s: S.For) -> S.Stmt:
        lo, ext = self.visit(s.min), self.visit(s.extent)
        self.ranges[s.loop_var] = (lo, ext)
        try:
            body = self.visit(s.body)
        finally:
            del self.ranges[s.loop_var]
        if lo is s.min and ext is s.extent and body is s.body:
            return s
        return s.replace(min=lo, extent=ext, body=body)

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt | None:
        cond = self.visit(s.condition)
        if isinstance(cond, E.IntImm):
            branch = s.then_case if cond.value else s.else_case
            return self.visit(branch) if branch is not None else S.SeqStmt([])
        then, other = self.visit(s.then_case), self.visit(s.else_case)
        return S.IfThenElse(cond, then, other)

    # expressions -----------------------------------------------------------------------------
    def generic_visit(self, node: Node) -> Node:
        node = super().generic_visit(node)
        if isinstance(node, E.BinaryOp):
            return self._binary(node)
        return node

    def visit_Not(self, e: E.Not) -> E.Expr:
        a = self.visit(e.a)
        if isinstance(a, E.IntImm):
            return E.IntImm(0 if a.value else 1, "bool")
        return a if a is e.a else E.Not(a)

    def visit_Cast(self, e: E.Cast) -> E.Expr:
        v = self.visit(e.value)
        if isinstance(v, E.ConstExpr) and E.lanes_of(v.dtype) == 1:
            return E.cast(e.dtype, v)
        if v.dtype == e.dtype:
            return v
        return e if v is e.value else E.Cast(e.dtype, v)

    def visit_Select(self, e: E.Select) -> E.Expr:
        c = self.visit(e.condition)
        if isinstance(c, E.IntImm):
            return self.visit(e.true_value if c.value else e.false_value)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if skey(t) == skey(f):
            return t
        return E.Select(c, t, f)

    def _binary(self, e: E.BinaryOp) -> E.Expr:
        a, b = e.a, e.b
        cls = type(e)
        if isinstance(a, E.ConstExpr) and isinstance(b, E.ConstExpr) and E.lanes_of(e.dtype) == 1:
            folded = fold_binary(cls, a, b, e.dtype)
            if folded is not None:
                return folded
        if isinstance(e, (E.And, E.Or)):
            return fold_logic(cls, a, b)
        if isinstance(e, E.CmpOp) and is_int_expr(a):
            return self._compare(cls, a, b)
        if is_int_expr(e) and cls in (E.Add, E.Sub, E.Mul, E.FloorDiv, E.FloorMod):
            return self.canonical(e)
        if is_int_expr(e) and cls in (E.Min, E.Max):
            return self._minmax(cls, a, b)
        return float_identities(e)

    def canonical(self, e: E.Expr) -> E.Expr:
        """The canonical linear form of integer expression ``e``."""
        return self.build(self.linear(e))

    # linear forms ----------------------------------------------------------------------------
    def linear(self, e: E.Expr) -> Linear:
        """``e`` as a Linear (with floordiv/floormod rules applied)."""
        out = Linear(e.dtype)
        if isinstance(e, E.IntImm):
            out.const = e.value
        elif isinstance(e, E.Add):
            out.add(self.linear(e.a))
            out.add(self.linear(e.b))
        elif isinstance(e, E.Sub):
            out.add(self.linear(e.a))
            out.add(self.linear(e.b), -1)
        elif isinstance(e, E.Mul) and isinstance(e.b, E.IntImm):
            out.add(self.linear(e.a), e.b.value)
        elif isinstance(e, E.Mul) and isinstance(e.a, E.IntImm):
            out.add(self.linear(e.b), e.a.value)
        elif isinstance(e, E.FloorDiv) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            out = self._floordiv(self.linear(e.a), e.b.value)
        elif isinstance(e, E.FloorMod) and isinstance(e.b, E.IntImm) and e.b.value > 0:
            out = self._floormod(self.linear(e.a), e.b.value)
        else:
            out.add_term(e, 1)
        _merge_div_mod(out)
        return out

    def build(self, lin: Linear) -> E.Expr:
        """An expression for ``lin``: terms in order, constant last."""
        dtype = lin.dtype
        result: E.Expr | None = None
        for term, coef in lin.items():
            mag = term if abs(coef) == 1 else E.Mul(term, E.IntImm(abs(coef), dtype))
            if result is None:
                result = mag if coef > 0 else E.Mul(term, E.IntImm(coef, dtype))
            else:
                result = E.Add(result, mag) if coef > 0 else E.Sub(result, mag)
        if result is None:
            return E.IntImm(lin.const, dtype)
        if lin.const > 0:
            return E.Add(result, E.IntImm(lin.const, dtype))
        if lin.const < 0:
            return E.Sub(result, E.IntImm(-lin.const, dtype))
        return result

    def bounds(self, lin: Linear) -> tuple[int | None, int | None]:
        """Inclusive integer bounds of ``lin`` under the known ranges."""
        lo = hi = lin.const
        items = lin.items()
        paired = self._paired_divs(items)
        for (p_lo, p_hi), used in paired:
            lo, hi = lo + p_lo, hi + p_hi
            items = [it for it in items if all(it[0] is not u for u in used)]
        for term, coef in items:
            t0, t1 = const_bounds(term, self.ranges)
            if t0 is None or t1 is None:
                return (None, None)
            lo += min(t0 * coef, t1 * coef)
            hi += max(t0 * coef, t1 * coef)
        return (lo, hi)

    def _paired_divs(self, items: list[tuple[E.Expr, int]]) -> list[tuple[tuple[int, int], tuple]]:
        """Bounds of ``k*((X + d) // c) - k*(X // c)`` pairs: ``k*[d // c, ceil(d / c)]``."""
        out: list[tuple[tuple[int, int], tuple]] = []
        divs = [(t, k) for t, k in items if isinstance(t, E.FloorDiv) and isinstance(t.b, E.IntImm)
                and t.b.value > 0]
        used: list[E.Expr] = []
        for t1, k1 in divs:
            for t2, k2 in divs:
                if t1 is t2 or k1 <= 0 or k2 != -k1 or t1.b.value != t2.b.value:
                    continue
                if any(t1 is u or t2 is u for u in used):
                    continue
                diff = self.canonical(E.Sub(t1.a, t2.a))
                if isinstance(diff, E.IntImm) and diff.value >= 0:
                    c = t1.b.value
                    out.append(((k1 * (diff.value // c), k1 * -(-diff.value // c)), (t1, t2)))
                    used += [t1, t2]
        return out

    def _floordiv(self, lin: Linear, c: int) -> Linear:
        out, rest = Linear(lin.dtype), Linear(lin.dtype)
        if c == 1:
            return lin
        for term, coef in lin.items():
            if coef % c == 0:
                out.add_term(term, coef // c)
            else:
                rest.add_term(term, coef)
        q, r = divmod(lin.const, c)
        out.const, rest.const = q, r
        lo, hi = self.bounds(rest)
        if lo is not None and hi is not None and lo // c == hi // c:
            out.const += lo // c
            return out
        aligned = self._aligned_split(rest, c)
        if aligned is not None:  # (8*x + y) // 16 == x // 2 when 0 <= y < 8
            g, high, _ = aligned
            out.add(self._floordiv(high, c // g))
            return out
        g = _gcd_all(rest, c)
        if g > 1:  # (4*x + 2) // 8 == (2*x + 1) // 4
            rest = _divide(rest, g)
            c //= g
        rest_e = self.build(rest)
        if isinstance(rest_e, E.FloorDiv) and isinstance(rest_e.b, E.IntImm):
            out.add_term(E.FloorDiv(rest_e.a, E.IntImm(rest_e.b.value * c, lin.dtype)), 1)
        else:
            out.add_term(E.FloorDiv(rest_e, E.IntImm(c, lin.dtype)), 1)
        return out

    def _floormod(self, lin: Linear, c: int) -> Linear:
        rest = Linear(lin.dtype)
        if c == 1:
            return rest
        for term, coef in lin.items():
            if coef % c != 0:
                rest.add_term(term, coef)
        rest.const = lin.const % c
        lo, hi = self.bounds(rest)
        if lo is not None and hi is not None and lo // c == hi // c:
            rest.const -= (lo // c) * c
            return rest
        out = Linear(lin.dtype)
        aligned = self._aligned_split(rest, c)
        if aligned is not None:  # (8*x + y) % 16 == 8*(x % 2) + y when 0 <= y < 8
            g, high, low = aligned
            out.add(self._floormod(high, c // g), g)
            out.add(low)
            return out
        rest_e = self.build(rest)
        if (isinstance(rest_e, E.FloorMod) and isinstance(rest_e.b, E.IntImm)
                and rest_e.b.value % c == 0):
            rest_e = rest_e.a
        out.add_term(E.FloorMod(rest_e, E.IntImm(c, lin.dtype)), 1)
        return out

    def _aligned_split(self, lin: Linear, c: int) -> tuple[int, Linear, Linear] | None:
        """``lin`` as ``g*high + low`` with ``g`` a divisor of ``c`` (``1 < g < c``) and
        ``0 <= low < g`` under the known ranges; None when no coefficient gives one."""
        for g in sorted({math.gcd(coef, c) for _, coef in lin.items()} - {1, c}, reverse=True):
            high, low = Linear(lin.dtype), Linear(lin.dtype)
            for term, coef in lin.items():
                if coef % g == 0:
                    high.add_term(term, coef // g)
                else:
                    low.add_term(term, coef)
            high.const, low.const = divmod(lin.const, g)
            lo, hi = self.bounds(low)
            if high.terms and lo is not None and hi is not None and lo >= 0 and hi < g:
                return g, high, low
        return None

    # comparisons and min/max -----------------------------------------------------------------
    def _compare(self, cls: type, a: E.Expr, b: E.Expr) -> E.Expr:
        diff = self.linear(E.Sub(a, b))
        lo, hi = self.bounds(diff)
        verdict = None
        if cls is E.LT:
            verdict = True if hi is not None and hi < 0 else (False if lo is not None and lo >= 0 else None)
        elif cls is E.LE:
            verdict = True if hi is not None and hi <= 0 else (False if lo is not None and lo > 0 else None)
        elif cls is E.GT:
            verdict = True if lo is not None and lo > 0 else (False if hi is not None and hi <= 0 else None)
        elif cls is E.GE:
            verdict = True if lo is not None and lo >= 0 else (False if hi is not None and hi < 0 else None)
        elif cls is E.EQ:
            if lo == hi == 0:
                verdict = True
            elif (lo is not None and lo > 0) or (hi is not None and hi < 0):
                verdict = False
        elif cls is E.NE:
            if lo == hi == 0:
                verdict = False
            elif (lo is not None and lo > 0) or (hi is not None and hi < 0):
                verdict = True
        if verdict is not None:
            return E.IntImm(int(verdict), "bool")
        if (isinstance(a, E.FloorDiv) and isinstance(a.b, E.IntImm) and a.b.value > 0
                and isinstance(b, E.IntImm) and cls in (E.LT, E.LE, E.GT, E.GE)):
            c, k = a.b.value, b.value  # x // c < k  <=>  x < k * c  (and the other orders)
            bound = k * c if cls in (E.LT, E.GE) else (k + 1) * c
            new_cls = E.LT if cls in (E.LT, E.LE) else E.GE
            return self._compare(new_cls, a.a, E.IntImm(bound, a.dtype))
        return cls(a, b)

    def _minmax(self, cls: type, a: E.Expr, b: E.Expr) -> E.Expr:
        lo, hi = self.bounds(self.linear(E.Sub(a, b)))
        if cls is E.Min:
            if hi is not None and hi <= 0:
                return a
            if lo is not None and lo >= 0:
                return b
        else:
            if lo is not None and lo >= 0:
                return a
            if hi is not None and hi <= 0:
                return b
        return cls(a, b)


def _gcd_all(lin: Linear, c: int) -> int:
    g = c
    for _, coef in lin.items():
        g = math.gcd(g, coef)
    return math.gcd(g, lin.const)


def _divide(lin: Linear, g: int) -> Linear:
    out = Linear(lin.dtype)
    for term, coef in lin.items():
        out.add_term(term, coef // g)
    out.const = lin.const // g
    return out


def _merge_div_mod(lin: Linear) -> None:
    """Rewrite ``k*c*(x // c) + k*(x % c)`` to ``k*x``."""
    for key, (term, coef) in list(lin.terms.items()):
        if not isinstance(term, E.FloorMod) or coef == 0 or not isinstance(term.b, E.IntImm):
            continue
        c = term.b.value
        dkey = skey(E.FloorDiv(term.a, term.b))
        if dkey in lin.terms and lin.terms[dkey][1] == coef * c:
            lin.terms[dkey][1] = 0
            lin.terms[key][1] = 0
            sub = _Simplifier({}).linear(term.a)
            lin.add(sub, coef)
