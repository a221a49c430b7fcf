"""Inlining: the body of every stage with the bodies of compute_inline'd stages substituted."""

from __future__ import annotations

from collections.abc import Iterable

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.visitor import Mutator, substitute
from tunecli.engine.schedule.schedule import Schedule
from tunecli.engine.schedule.stage import INLINE, Stage
from tunecli.engine.te.operation import tensor_reads
from tunecli.engine.te.tensor import TensorRead
from tunecli.errors import LoweringError


class InlinedBodies:
    """``bodies.of(stage)``: the stage op's body with reads of inlined stages replaced."""

    def __init__(self, sch: Schedule) -> None:
        self.sch = sch
        self._memo: dict[int, list[E.Expr]] = {}
        self._active: set[int] = set()

    def of(self, stage: Stage) -> list[E.Expr]:
        """The effective body (list of expressions) of ``stage``."""
        key = id(stage)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            raise LoweringError(f"stage {stage.name}: cyclic inlining")
        self._active.add(key)
        outer = self

        class _Inline(Mutator):
            def visit_TensorRead(self, node: TensorRead) -> E.Expr:
                node = self.generic_visit(node)
                producer = outer.sch[node.tensor]
                if producer.attach_type != INLINE:
                    return node
                body = outer.of(producer)[node.tensor.value_index]
                mapping = {iv.var: idx for iv, idx in zip(producer.op.axis, node.indices, strict=True)}
                return substitute(body, mapping)

        body = [_Inline().visit(b) for b in stage.op.body]
        self._active.discard(key)
        self._memo[key] = body
        return body


def reads_of(body: Iterable[E.Expr], sch: Schedule, producer: Stage) -> list[tuple[E.Expr, ...]]:
    """Index tuples of every read of ``producer``'s output in ``body``."""
    return [read.indices for read in tensor_reads(body) if sch[read.tensor] is producer]


def read_stages(body: Iterable[E.Expr], sch: Schedule) -> list[Stage]:
    """Stages whose outputs are read in ``body``."""
    found: list[Stage] = []
    for read in tensor_reads(body):
        st = sch[read.tensor]
        if all(st is not f for f in found):
            found.append(st)
    return found
