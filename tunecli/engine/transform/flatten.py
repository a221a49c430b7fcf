"""Flattening of multi-dimensional buffer accesses to one row-major index (IR → IR).

The lowering pass normally hands codegen flat accesses already; this keeps codegen usable on
hand-written loop nests that index ``A[i, k]``.
"""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Mutator
from tunecli.engine.transform.vectorize import fold
from tunecli.errors import CodegenError


def flatten(stmt: S.Stmt) -> S.Stmt:
    """Return ``stmt`` with every BufferLoad/BufferStore reduced to one flat index."""
    return _Flatten().visit(stmt)


def flat_index(buffer: S.Buffer, indices: tuple[E.Expr, ...]) -> E.Expr:
    """Row-major offset of ``indices`` in ``buffer`` (raise CodegenError on a rank mismatch)."""
    if len(indices) == 1:
        return indices[0]
    if len(indices) != len(buffer.shape):
        raise CodegenError(f"codegen: {buffer.name} has {len(buffer.shape)} dimensions but is indexed "
                           f"with {len(indices)}")
    flat: E.Expr = indices[0]
    for extent, index in zip(buffer.shape[1:], indices[1:], strict=True):
        flat = fold(E.Add, fold(E.Mul, flat, E.const(extent, flat.dtype)), index)
    return flat


class _Flatten(Mutator):
    def visit_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.visit(i) for i in e.indices)
        if len(indices) == 1 and indices[0] is e.indices[0]:
            return e
        return E.BufferLoad(e.buffer, (flat_index(e.buffer, indices),))

    def visit_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        indices = tuple(self.visit(i) for i in s.indices)
        value = self.visit(s.value)
        if len(indices) == 1 and indices[0] is s.indices[0] and value is s.value:
            return s
        return S.BufferStore(s.buffer, value, (flat_index(s.buffer, indices),))
