"""Full unrolling of ``unrolled`` loops (IR → IR).

A loop of kind ``unrolled`` with constant bounds becomes one copy of its body per iteration
with the loop variable replaced by a constant, so that, after vectorization, accesses to local
accumulator arrays have constant offsets and SROA keeps them in registers.  Loops with
non-constant bounds, more than :data:`MAX_UNROLL` iterations, or whose copies would hold more
than :data:`MAX_NODES` IR nodes (nested unrolled loops multiply) stay serial loops: huge
unrolled code compiles slowly and is not faster.  A copy keeps only the chosen value of a select
whose condition its constant decides (a Winograd transform's ``select(e == 0, ..., select(e == 1,
...))`` rows), and its size is counted after that.
"""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.ir.visitor import Mutator, post_order

MAX_UNROLL = 256
MAX_NODES = 40_000


def unroll(stmt: S.Stmt) -> S.Stmt:
    """Return ``stmt`` with every ``unrolled`` loop expanded (or made serial when it cannot be)."""
    return _Unroll().visit(stmt)


def node_count(node: object) -> int:
    """Number of IR nodes in a tree."""
    count = [0]

    def bump(_n: object) -> None:
        count[0] += 1

    post_order(node, bump)
    return count[0]


class _Unroll(Mutator):
    def visit_For(self, s: S.For) -> S.Stmt:
        body = self.visit(s.body)
        if s.kind != S.UNROLLED:
            return s if body is s.body else s.replace(body=body)
        bounded = isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)
        if bounded and 0 <= s.extent.value <= MAX_UNROLL:
            start = s.min.value
            copies: list[S.Stmt] = []
            size = 0
            for i in range(s.extent.value):
                copies.append(_Bind(s.loop_var, E.const(start + i, s.loop_var.dtype)).visit(body))
                size += node_count(copies[-1])
                if size > MAX_NODES:
                    break
            else:
                return S.SeqStmt(copies) if copies else S.Evaluate(E.const(0))
        return s.replace(kind=S.SERIAL, body=body)


class _Bind(Mutator):
    """Replaces one variable by a constant; a select whose condition that decides is its chosen value."""

    def __init__(self, var: E.Var, value: E.Expr) -> None:
        self.var, self.value = var, value

    def visit_Var(self, v: E.Var) -> E.Expr:
        return self.value if v is self.var else v

    def visit_Select(self, e: E.Select) -> E.Expr:
        condition = self.visit(e.condition)
        if condition is not e.condition and E.lanes_of(condition.dtype) == 1:
            decided = simplify(condition)
            if isinstance(decided, E.IntImm):
                return self.visit(e.true_value if decided.value else e.false_value)
        true_value, false_value = self.visit(e.true_value), self.visit(e.false_value)
        if condition is e.condition and true_value is e.true_value and false_value is e.false_value:
            return e
        return E.Select(condition, true_value, false_value)
