"""TVM-style vectorization of ``vectorized`` loops (IR → IR).

A ``for (v, min, N) vectorized`` loop with a constant extent becomes its body with ``v``
replaced by ``Ramp(min, 1, N)``: expressions that do not depend on ``v`` stay scalar (and are
broadcast where they meet vector operands), affine index arithmetic stays a Ramp (so a load or
store with a stride-1 Ramp index becomes one vector load/store; other vector indices become
gathers/scatters in codegen), and everything else becomes ``<N x T>`` arithmetic.  Inner loops
whose bounds do not depend on ``v`` are kept and vectorized inside; an ``if`` whose condition
depends on ``v`` (the guard of a split that does not divide) keeps a vector condition, under
which codegen masks loads and stores.  When the body cannot be vectorized (a store to a
lane-invariant address, a lane-dependent loop bound, an allocation, a nested vector) the loop
falls back to a serial loop.  Innermost loops are vectorized first.
"""

from __future__ import annotations

from typing import Any

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.visitor import Mutator, substitute

MAX_LANES = 256  # wider vectorized loops stay serial loops (LLVM's loop vectorizer still sees them)


class NotVectorizable(Exception):
    """Raised inside the pass when a loop body cannot be turned into vector code."""


def vectorize(stmt: S.Stmt, natural_lanes: int = 16) -> S.Stmt:
    """Rewrite every ``vectorized`` loop of ``stmt`` into vector code (or a serial loop).

    Parameters
    ----------
    stmt : Stmt
        The loop nest.
    natural_lanes : int
        Lanes of one machine vector (a power of two).  A loop whose extent is not a power of two
        is cut into pieces of this many lanes plus power-of-two remainders (49 → 16+16+16+1), so
        that LLVM never has to legalise odd vector types.
    """
    return _LoopPass(natural_lanes).visit(stmt)


def pieces(lanes: int, natural: int) -> list[int]:
    """Vector widths covering ``lanes``: one power of two, else ``natural``-wide chunks + binary rest."""
    if lanes & (lanes - 1) == 0:
        return [lanes]
    out = [natural] * (lanes // natural)
    rest, bit = lanes - natural * len(out), natural
    while rest:
        while bit > rest:
            bit //= 2
        out.append(bit)
        rest -= bit
    return out


class _LoopPass(Mutator):
    def __init__(self, natural_lanes: int) -> None:
        self.natural = max(1, natural_lanes)

    def visit_For(self, s: S.For) -> S.Stmt:
        body = self.visit(s.body)
        if s.kind != S.VECTORIZED:
            return s if body is s.body else s.replace(body=body)
        serial = s.replace(kind=S.SERIAL, body=body)
        if not isinstance(s.extent, E.IntImm) or not 1 <= s.extent.value <= MAX_LANES or _lanes(s.min) > 1:
            return serial
        try:
            parts, offset = [], 0
            for width in pieces(s.extent.value, self.natural):
                start = fold(E.Add, E.cast(s.loop_var.dtype, s.min), E.const(offset, s.loop_var.dtype))
                parts.append(vectorize_loop(s.loop_var, start, width, body))
                offset += width
        except NotVectorizable:
            return serial
        return parts[0] if len(parts) == 1 else S.SeqStmt(parts)


def vectorize_loop(var: E.Var, lo: E.Expr, lanes: int, body: S.Stmt) -> S.Stmt:
    """Return ``body`` with ``var`` taking the ``lanes`` values from ``lo`` at once.

    Raises
    ------
    NotVectorizable
        When the body cannot be expressed as vector code.
    """
    lo = E.cast(var.dtype, lo)
    if lanes == 1:
        return substitute(body, {var: lo})
    return _Vectorizer(var, E.Ramp(lo, E.const(1, var.dtype), lanes), lanes).visit(body)


def _lanes(e: E.Expr) -> int:
    return parse_dtype(e.dtype).lanes


class _Vectorizer(Mutator):
    def __init__(self, var: E.Var, ramp: E.Expr, lanes: int) -> None:
        self.map: dict[E.Var, E.Expr] = {var: ramp}
        self.lanes = lanes

    def widen(self, e: E.Expr) -> E.Expr:
        """``e`` as a vector of this loop's lanes (scalars are broadcast)."""
        n = _lanes(e)
        if n == self.lanes:
            return e
        if n != 1:
            raise NotVectorizable(f"mixed vector widths {n} and {self.lanes}")
        return E.Broadcast(e, self.lanes)

    def scalar(self, e: E.Expr, what: str) -> E.Expr:
        if _lanes(e) != 1:
            raise NotVectorizable(f"{what} depends on the vectorized variable")
        return e

    # expressions -------------------------------------------------------------------------------
    def visit_Var(self, v: E.Var) -> E.Expr:
        return self.map.get(v, v)

    def visit_Ramp(self, e: E.Ramp) -> E.Expr:
        raise NotVectorizable("the body already holds vector code")

    visit_Broadcast = visit_Ramp

    def generic_visit(self, node: object) -> Any:  # Any: Mutator.generic_visit's answer
        if isinstance(node, E.BinaryOp):
            return self._binary(node)
        if isinstance(node, E.Expr) and _lanes(node) != 1:
            raise NotVectorizable("the body already holds vector code")
        return super().generic_visit(node)

    def _binary(self, e: E.BinaryOp) -> E.Expr:
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            if _lanes(a) != 1:
                raise NotVectorizable("the body already holds vector code")
            return e
        if _lanes(a) == 1 and _lanes(b) == 1:
            return type(e)(a, b)
        affine = _affine(type(e), a, b)
        if affine is not None:
            return affine
        return type(e)(self.widen(a), self.widen(b))

    def visit_Not(self, e: E.Not) -> E.Expr:
        a = self.visit(e.a)
        return e if a is e.a else E.Not(a)

    def visit_Cast(self, e: E.Cast) -> E.Expr:
        v = self.visit(e.value)
        if v is e.value:
            return e
        return E.Cast(parse_dtype(e.dtype).with_lanes(_lanes(v)), v)

    def visit_Select(self, e: E.Select) -> E.Expr:
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
            return E.Select(c, t, f)
        return E.Select(c, self.widen(t), self.widen(f))

    def visit_Call(self, e: E.Call) -> E.Expr:
        args = [self.visit(a) for a in e.args]
        if all(a is b for a, b in zip(args, e.args, strict=True)):
            return e
        if all(_lanes(a) == 1 for a in args):
            return E.Call(e.dtype, e.name, args)
        return E.Call(parse_dtype(e.dtype).with_lanes(self.lanes), e.name, [self.widen(a) for a in args])

    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.visit(i) for i in e.indices)
        if all(a is b for a, b in zip(indices, e.indices, strict=True)):
            return e
        if len(indices) > 1 and any(_lanes(i) > 1 for i in indices):
            indices = tuple(self.widen(i) for i in indices)
        return E.BufferLoad(e.buffer, indices)

    def visit_Let(self, e: E.Let) -> E.Expr:
        value = self.visit(e.value)
        if _lanes(value) > 1:
            self.map[e.var] = E.Var(e.var.name, value.dtype)
        body = self.visit(e.body)
        if value is e.value and body is e.body:
            return e
        return E.Let(self.map.get(e.var, e.var), value, body)

    # statements --------------------------------------------------------------------------------
    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        indices = tuple(self.visit(i) for i in s.indices)
        value = self.visit(s.value)
        if all(_lanes(i) == 1 for i in indices):
            raise NotVectorizable(f"store to {s.buffer.name} at an address shared by all lanes")
        indices = tuple(self.widen(i) for i in indices) if len(indices) > 1 else indices
        return S.BufferStore(s.buffer, self.widen(value), indices)

    def visit_For(self, s: S.For) -> S.Stmt:
        lo = self.scalar(self.visit(s.min), f"the start of loop {s.loop_var.name}")
        extent = self.scalar(self.visit(s.extent), f"the extent of loop {s.loop_var.name}")
        body = self.visit(s.body)
        return s.replace(min=lo, extent=extent, body=body)

    def visit_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        # a lane-dependent condition stays a vector: codegen masks the loads and stores under it
        return S.IfThenElse(self.visit(s.condition), self.visit(s.then_case), self.visit(s.else_case))

    def visit_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        value = self.visit(s.value)
        var = s.var
        if _lanes(value) > 1:
            var = self.map[s.var] = E.Var(s.var.name, value.dtype)
        return S.LetStmt(var, value, self.visit(s.body))

    def visit_Allocate(self, s: S.Allocate) -> S.Stmt:
        raise NotVectorizable(f"allocation of {s.buffer.name} inside a vectorized loop")


def _affine(cls: type, a: E.Expr, b: E.Expr) -> E.Expr | None:
    """Keep ``Ramp ± scalar``, ``Ramp ± Ramp`` and ``Ramp * scalar`` as Ramps (index arithmetic)."""
    ra, rb = isinstance(a, E.Ramp), isinstance(b, E.Ramp)
    sa, sb = _lanes(a) == 1, _lanes(b) == 1
    if cls is E.Add:
        if ra and sb:
            return E.Ramp(fold(E.Add, a.base, b), a.stride, a.lanes)
        if sa and rb:
            return E.Ramp(fold(E.Add, a, b.base), b.stride, b.lanes)
        if ra and rb:
            return E.Ramp(fold(E.Add, a.base, b.base), fold(E.Add, a.stride, b.stride), a.lanes)
    if cls is E.Sub:
        if ra and sb:
            return E.Ramp(fold(E.Sub, a.base, b), a.stride, a.lanes)
        if sa and rb:
            return E.Ramp(fold(E.Sub, a, b.base), fold(E.Sub, E.const(0, b.stride.dtype), b.stride), b.lanes)
        if ra and rb:
            return E.Ramp(fold(E.Sub, a.base, b.base), fold(E.Sub, a.stride, b.stride), a.lanes)
    if cls is E.Mul and parse_dtype(a.dtype).is_int:
        if ra and sb:
            return E.Ramp(fold(E.Mul, a.base, b), fold(E.Mul, a.stride, b), a.lanes)
        if sa and rb:
            return E.Ramp(fold(E.Mul, a, b.base), fold(E.Mul, a, b.stride), b.lanes)
    return None


_PY = {E.Add: lambda x, y: x + y, E.Sub: lambda x, y: x - y, E.Mul: lambda x, y: x * y}


def fold(cls: type, a: E.Expr, b: E.Expr) -> E.Expr:
    """``a op b`` for integer add/sub/mul with constants folded and ``x+0``, ``x*1``, ``x*0`` simplified."""
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.dtype == b.dtype:
        return E.IntImm(_PY[cls](a.value, b.value), a.dtype)
    if isinstance(b, E.IntImm) and a.dtype == b.dtype:
        if b.value == 0 and cls in (E.Add, E.Sub):
            return a
        if b.value == 1 and cls is E.Mul:
            return a
    if isinstance(a, E.IntImm) and a.dtype == b.dtype:
        if a.value == 0 and cls is E.Add:
            return b
        if a.value == 1 and cls is E.Mul:
            return b
    return E._binary(cls, a, b)
