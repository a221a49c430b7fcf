"""Full unrolling of ``unrolled`` loops (IR → IR).

A loop of kind ``unrolled`` with constant bounds becomes one copy of its body per iteration
with the loop variable replaced by a constant, so that, after vectorization, accesses to local
accumulator arrays have constant offsets and SROA keeps them in registers.  Loops with
non-constant bounds, more than :data:`MAX_UNROLL` iterations, or whose copies would hold more
than :data:`MAX_NODES` IR nodes (nested unrolled loops multiply) stay serial loops: huge
unrolled code compiles slowly and is not faster.
"""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Mutator, post_order, substitute

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
        if (isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)
                and 0 <= s.extent.value <= MAX_UNROLL and s.extent.value * node_count(body) <= MAX_NODES):
            lo, n = s.min.value, s.extent.value
            copies = [substitute(body, {s.loop_var: E.const(lo + i, s.loop_var.dtype)}) for i in range(n)]
            return S.SeqStmt(copies) if copies else S.Evaluate(E.const(0))
        return s.replace(kind=S.SERIAL, body=body)
