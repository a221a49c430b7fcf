"""The ``auto_unroll_max_step`` pragma: TVM's UnrollLoop pass, applied under the annotated loop.

``s[C].pragma(axis, "auto_unroll_max_step", N)`` marks loops ``unrolled`` (codegen expands them)
inside the scope of ``axis``, the loop of ``axis`` included, as TVM's ``tir.UnrollLoop`` does for
the ``pragma_auto_unroll_max_step`` attribute.  Loops are visited innermost first and a loop is
unrolled when

* it is ``serial`` with a constant extent (parallel and vectorized loops never are, and a loop
  that is not unrolled stops every loop around it from being unrolled),
* no more than :data:`MAX_DEPTH` unrolled loops are nested inside it, and
* ``extent * steps <= N`` where ``steps`` counts the stores (statements) the copies would hold:
  a store counts 1, a sequence sums its parts, an unrolled loop multiplies its body's count by
  its extent.

Loops already marked ``unrolled`` (``s[C].unroll``) count as unrolled.  With ``N = 0`` nothing
new is unrolled.  Codegen's own caps still apply to what is marked here: a loop with too many
iterations or a too large unrolled body stays a serial loop (``engine.codegen.unroll``).

``unroll_explicit``: in TVM, 0 marks the loops for the backend's unroller instead of copying
their bodies (and TVM's LLVM backend ignores that mark); tunecli always marks them and codegen
expands them, so the value makes no difference on the CPU target.
"""

from __future__ import annotations

from collections.abc import Collection

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.simplify import simplify

MAX_DEPTH = 8  # TVM's default auto_max_depth


def pragma_max_step(pragmas: list[tuple[str, E.ExprLike | str | None]]) -> int | None:
    """The ``auto_unroll_max_step`` value among a loop's pragmas (the last one given), or None."""
    value = None
    for key, val in pragmas:
        if key == "auto_unroll_max_step":
            value = int(E.convert(val)) if val is not None else 1
    return value


def auto_unroll(stmt: S.Stmt, max_step: int, keep: Collection[E.Var] = ()) -> S.Stmt:
    """Mark the loops of ``stmt`` that TVM's UnrollLoop would unroll under ``max_step``.

    Loops over the variables in ``keep`` (thread-bound axes, which are not loops in TVM) are
    never unrolled.
    """
    return _AutoUnroll(max_step, keep).visit(stmt)


class _AutoUnroll:
    """Post-order walk keeping TVM's counters: steps, unrolled depth, normal-loop depth."""

    def __init__(self, max_step: int, keep: Collection[E.Var]) -> None:
        self.max_step = max_step
        self.keep = keep
        self.steps = 0
        self.unroll_depth = 0
        self.normal_depth = 0

    def visit(self, s: S.Stmt | None) -> S.Stmt | None:
        if s is None:
            return None
        if isinstance(s, S.For):
            return self._for(s)
        if isinstance(s, S.SeqStmt):
            return self._seq(s)
        if isinstance(s, (S.BufferStore, S.Evaluate)):
            self.steps += 1
            return s
        if isinstance(s, S.IfThenElse):
            then, other = self.visit(s.then_case), self.visit(s.else_case)
            if then is s.then_case and other is s.else_case:
                return s
            return S.IfThenElse(s.condition, then, other)
        if isinstance(s, (S.Allocate, S.LetStmt)):
            body = self.visit(s.body)
            return s if body is s.body else s.replace(body=body)
        return s

    def _seq(self, s: S.SeqStmt) -> S.Stmt:
        out = []
        for child in s.stmts:
            saved = (self.steps, self.unroll_depth, self.normal_depth)
            self.steps = self.unroll_depth = self.normal_depth = 0
            out.append(self.visit(child))
            self.steps += saved[0]
            self.unroll_depth = max(self.unroll_depth, saved[1])
            self.normal_depth = max(self.normal_depth, saved[2])
        return s if all(a is b for a, b in zip(out, s.stmts, strict=True)) else S.SeqStmt(out)

    def _for(self, s: S.For) -> S.Stmt:
        body = self.visit(s.body)
        extent = simplify(s.extent)
        value = extent.value if isinstance(extent, E.IntImm) else -1
        unroll = (s.kind == S.SERIAL and s.loop_var not in self.keep and value >= 0 and self.normal_depth == 0
                  and self.unroll_depth <= MAX_DEPTH and value * self.steps <= self.max_step)
        if s.kind == S.UNROLLED and value >= 0:  # (non-constant: codegen keeps it a serial loop)
            unroll = True
        if unroll:
            self.steps *= value
            self.unroll_depth += 1
        else:
            self.normal_depth += 1
        kind = S.UNROLLED if unroll else s.kind
        if body is s.body and kind == s.kind:
            return s
        return s.replace(kind=kind, body=body)
