"""Schedules of the fused groups that have no tunable anchor (TVM's generic ``schedule_injective``
and ``schedule_reduce`` for x86).

An injective group is one loop nest: every stage but the output is inlined, the output's
innermost axis is vectorized in blocks of :data:`VECTOR` when it divides, and the loops outside
it are fused and run on all cores when there is enough work.  A group with reductions (pools,
global pools, softmax, sum/mean) inlines its injective stages and computes each remaining stage
at the root, its outer data-parallel loops fused and parallel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops.epilogue import is_injective
from tunecli.engine.schedule import Schedule, create_schedule
from tunecli.engine.te.operation import ComputeOp, Operation

#: Innermost block width of vectorized injective loops (16 float32 lanes: one AVX-512 register).
VECTOR = 16
#: Fewest output elements worth a parallel loop.
PARALLEL_MIN = 4096


def stages_of(out: te.Tensor) -> list[Operation]:
    """The stages ``out`` is computed from (itself included), producers first."""
    seen: dict[int, Operation] = {}
    order: list[Operation] = []

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen[id(op)] = op
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    visit(out.op)
    return order


def schedule_group(outs: Sequence[te.Tensor]) -> Schedule:
    """Schedule a group without an anchor whose result is ``outs[0]``."""
    (out,) = outs
    s = create_schedule([out.op])
    for op in stages_of(out):
        if op is out.op or not isinstance(op, ComputeOp):
            continue
        if is_injective(op):
            s[op].compute_inline()
        else:
            _parallel_outer(s, op, keep_inner=bool(op.reduce_axis) is False)
    if isinstance(out.op, ComputeOp):
        if is_injective(out.op) and not out.op.reduce_axis:
            _vectorize_and_parallel(s, out.op)
        else:
            _parallel_outer(s, out.op, keep_inner=True)
    return s


def _vectorize_and_parallel(s: Schedule, op: ComputeOp) -> None:
    axes = list(s[op].op.axis)
    if not axes:
        return
    total = math.prod(int(a.dom.extent) for a in axes)
    inner = axes[-1]
    outer = axes[:-1]
    if int(inner.dom.extent) % VECTOR == 0 and int(inner.dom.extent) >= VECTOR:
        io, ii = s[op].split(inner, factor=VECTOR)
        s[op].vectorize(ii)
        outer = [*outer, io]
    if outer and total >= PARALLEL_MIN:
        fused = s[op].fuse(*outer) if len(outer) > 1 else outer[0]
        s[op].parallel(fused)


def _parallel_outer(s: Schedule, op: ComputeOp, keep_inner: bool) -> None:
    axes = list(s[op].op.axis)
    outer = axes[:-1] if keep_inner and len(axes) > 1 else axes
    if not outer or math.prod(int(a.dom.extent) for a in axes) < PARALLEL_MIN // 16:
        return
    fused = s[op].fuse(*outer) if len(outer) > 1 else outer[0]
    s[op].parallel(fused)
