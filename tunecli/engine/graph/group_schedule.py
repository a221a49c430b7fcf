"""Schedules of the fused groups that have no tunable anchor (TVM's generic ``schedule_injective``
and ``schedule_pool`` / ``schedule_reduce`` for CPUs).

Every injective stage but the output is inlined.  The output's innermost axis of more than one
element (the contiguous one in memory: a channel block of ``NCHW16c``, the width of ``NCHW`` or of
``NCHW1c``) is split into blocks of the target's vector lanes, or narrower ones where that keeps
every read contiguous (``NCHW4c`` → ``NCHW16c`` moves blocks of 4), and the block is vectorized; a
transpose, whose reads are strided at every width, keeps a scalar innermost loop.  A few outer
loops are fused and run in parallel when there is enough work; the loops inside stay separate, so
indices are never recovered from one fused counter by division per element.

A reduction (a pool, a global pool, softmax, sum/mean) is computed inside the output's loops when
the output reads it elementwise (a pool and its batch-norm scale/shift and relu): each vector of the
output's block is reduced over the window in vector registers, the block innermost.  Other
reductions are computed at the root with the same split, vectorized when their reads are
contiguous along that axis.

A row reduction (softmax, log_softmax, layer norm along the last axis, whose reductions run over
``[blocks, lanes]`` axes) is scheduled by rows instead: the output's outer axes are one
(parallel) loop, its last axis written in vectors (the last one masked when they do not divide
it), and every stage is computed for one row inside that loop, into stack scratch: each
reduction ``rfactor``ed into a vector of per-lane partial results accumulated block by block,
then reduced across the lanes in halves (16 → 8 → 4 → 2 → 1: a chain of four dependent steps
rather than fifteen); a pointwise stage (softmax's exp) in vectors, its loop over the row's
blocks unrolled when they are few, so that only the last block of a ragged row is masked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.ir.visitor import post_order, substitute
from tunecli.engine.lower.inline import InlinedBodies
from tunecli.engine.ops.epilogue import is_injective
from tunecli.engine.schedule import Schedule, create_schedule
from tunecli.engine.schedule.stage import Stage
from tunecli.engine.target import Target
from tunecli.engine.te.operation import ComputeOp, Operation, tensor_reads
from tunecli.engine.te.tensor import IterVar

#: Fewest output elements (times the reduction's extent) worth a parallel loop.
PARALLEL_MIN = 4096
#: Outer loops are fused into one parallel loop until it has at least this many iterations.
PARALLEL_CHUNKS = 64
#: Narrowest vector block worth vectorizing.
MIN_VECTOR = 4
#: Outputs of the row reductions ``schedule_rows`` schedules (the tags of ``reduction_compute``).
ROW_TAGS = ("softmax_output", "log_softmax_output", "layer_norm_output")
#: Largest per-row scratch stage (bytes) kept on the stack.
ROW_SCRATCH_BYTES = 64 * 1024
#: Most vector blocks of a row whose pointwise stage's loop is unrolled.
ROW_UNROLL_BLOCKS = 32


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


def vector_lanes(target: Target | None, dtype: str) -> int:
    """Elements of ``dtype`` in one of ``target``'s widest vector registers (8 float32 with AVX2)."""
    t = target or Target.current() or Target("llvm")
    return max(1, t.vector_bits // parse_dtype(dtype).bits)


def schedule_group(outs: Sequence[te.Tensor], target: Target | None = None) -> Schedule:
    """Schedule a group without an anchor whose result is ``outs[0]``, for ``target`` (default: the
    current target, else the host)."""
    (out,) = outs
    if is_row_group(out):
        return schedule_rows(out, target)
    s = create_schedule([out.op])
    roots: list[ComputeOp] = []
    for op in stages_of(out):
        if op is out.op or not isinstance(op, ComputeOp):
            continue
        if is_injective(op):
            s[op].compute_inline()
        else:
            roots.append(op)
    if not isinstance(out.op, ComputeOp):
        return s
    lanes = vector_lanes(target, out.dtype)
    bodies = InlinedBodies(s)
    attach = _split_vectorize_parallel(s, out.op, lanes, bodies)
    if attach is not None and len(roots) == 1 and _reads_elementwise(s, bodies, out.op, roots[0]):
        (reduction,) = roots
        s[reduction].compute_at(s[out.op], attach[0])
        _vectorize_attached(s, reduction, attach[1], bodies)
        roots = []
    for op in roots:
        _split_vectorize_parallel(s, op, vector_lanes(target, op.output(0).dtype), bodies)
    return s


def is_row_group(out: te.Tensor) -> bool:
    """Whether ``out`` is a row reduction's result (``ROW_TAGS``) whose reductions run over
    ``[blocks, lanes]`` axes, with tails of one axis (``reduction_compute.row_reduction``: the
    reduced axis is the last)."""
    if getattr(out.op, "tag", "") not in ROW_TAGS or len(out.op.axis) < 2:
        return False
    axes = [len(op.reduce_axis) for op in stages_of(out) if isinstance(op, ComputeOp) and op.reduce_axis]
    return 2 in axes and set(axes) <= {1, 2}


def schedule_rows(out: te.Tensor, target: Target | None = None) -> Schedule:
    """Schedule a row reduction's group (see the module docstring): one (parallel) loop over the
    rows, every stage computed for one row inside it."""
    s = create_schedule([out.op])
    lanes = vector_lanes(target, out.dtype)
    stage = s[out.op]
    *outer, last = stage.op.axis
    row = stage.fuse(*outer) if len(outer) > 1 else outer[0]
    _, inner = stage.split(last, factor=lanes)
    stage.vectorize(inner)
    if math.prod(_extent(a) for a in stage.op.axis) >= PARALLEL_MIN:
        stage.parallel(row)
    for op in stages_of(out):
        if op is out.op or not isinstance(op, ComputeOp):
            continue
        if is_injective(op):
            s[op].compute_inline()
            continue
        scratch = [op]
        if len(op.reduce_axis) == 2:  # [blocks, lanes]: partial results per lane, then across the lanes
            blocks, lane = op.reduce_axis
            partial = s.rfactor(op.output(0), lane, factor_axis=len(op.axis))
            s[partial].reorder(*s[partial].op.axis[:-1], *s[partial].op.reduce_axis, s[partial].op.axis[-1])
            s[partial].vectorize(s[partial].op.axis[-1])
            scratch += [partial.op, *_lanes_in_halves(s, op)]
        elif not op.reduce_axis and op.axis:  # a pointwise stage of the row (softmax's exp)
            blocks, vec = s[op].split(op.axis[-1], factor=lanes)
            s[op].vectorize(vec)
            if _extent(blocks) <= ROW_UNROLL_BLOCKS:  # whole blocks unmasked, the ragged one masked
                s[op].unroll(blocks)
        for part in scratch:
            s[part].compute_at(stage, row)
            if _extent(part.axis[-1]) * parse_dtype(part.output(0).dtype).bits // 8 <= ROW_SCRATCH_BYTES:
                s[part].set_scope("local")
    return s


def _lanes_in_halves(s: Schedule, op: ComputeOp) -> list[Operation]:
    """Reduce ``op``'s lanes (its one reduce axis, after ``rfactor``) in halves: each step a
    vectorized stage combining the upper half of the lanes with the lower, until two are left for
    ``op`` itself; the steps' operations, first to last."""
    steps: list[Operation] = []
    (lanes,) = s[op].op.reduce_axis
    width = _extent(lanes)
    while width > 2 and width % 2 == 0:
        _, half = s[op].split(lanes, factor=width // 2)
        step = s.rfactor(op.output(0), half, factor_axis=len(op.axis))
        *data, lane = s[step].op.axis
        s[step].reorder(*data, *s[step].op.reduce_axis, lane)
        s[step].vectorize(lane)
        steps.append(step.op)
        (lanes,) = s[op].op.reduce_axis
        width //= 2
    return steps


def _split_vectorize_parallel(
    s: Schedule, op: ComputeOp, lanes: int, bodies: InlinedBodies
) -> tuple[IterVar, tuple[int, int]] | None:
    """Vectorize ``op``'s contiguous axis and parallelize its outer loops.

    Returns the loop just outside the vector block and ``(axis index, block width)``, where a
    producer of the same shape can be computed; None when no axis was vectorized.
    """
    stage = s[op]
    axes = list(op.axis)
    if not axes:
        return None
    work = math.prod(_extent(a) for a in axes) * math.prod(_extent(r) for r in op.reduce_axis)
    pick = _vector_axis(stage, op, lanes, bodies)
    if pick is None:
        _parallel_prefix(stage, axes[:-1] if len(axes) > 1 else axes, work)
        return None
    k, width = pick
    outer, inner = stage.split(axes[k], factor=width)
    loops = [*axes[:k], outer, *axes[k + 1 :]]
    stage.reorder(*loops, *op.reduce_axis, inner)
    stage.vectorize(inner)
    loops = _parallel_prefix(stage, loops, work)
    return loops[-1], pick


def _vectorize_attached(s: Schedule, op: ComputeOp, pick: tuple[int, int], bodies: InlinedBodies) -> None:
    """``op`` is computed for one vector block of its consumer: put its reduction loops outside the
    block's axis and vectorize that axis when its reads are contiguous along it."""
    k, width = pick
    stage = s[op]
    axes = list(op.axis)
    stage.reorder(*axes[:k], *axes[k + 1 :], *op.reduce_axis, axes[k])
    if _contiguous(stage, op, k, width, bodies):
        stage.vectorize(axes[k])


def _vector_axis(stage: Stage, op: ComputeOp, lanes: int, bodies: InlinedBodies) -> tuple[int, int] | None:
    """``(axis index, block width)`` to vectorize: the innermost axis of more than one element, in
    the widest block (at most ``lanes``) that divides it and keeps every read contiguous.  None
    when every block would read with a stride (a transpose such as ``NCHW`` → ``NCHW16c``): gathers
    are slower than the scalar loop."""
    extents = [_extent(a) for a in op.axis]
    k = next((i for i in reversed(range(len(extents))) if extents[i] > 1), None)
    if k is None:
        return None
    widths = [w for w in (lanes, lanes // 2, lanes // 4) if w >= MIN_VECTOR and extents[k] % w == 0]
    for width in widths:
        if _contiguous(stage, op, k, width, bodies):
            return k, width
    return None


def _contiguous(stage: Stage, op: ComputeOp, k: int, width: int, bodies: InlinedBodies) -> bool:
    """Whether every tensor ``op`` reads (through its inlined producers) is read at consecutive
    addresses by ``width`` consecutive values of axis ``k`` aligned to ``width``."""
    axis = op.axis[k]
    block, lane = E.Var("block", axis.var.dtype), E.Var("lane", axis.var.dtype)
    ranges = {iv.var: (E.const(0), E.const(_extent(iv))) for iv in (*op.axis, *op.reduce_axis)}
    ranges[block] = (E.const(0), E.const(_extent(axis) // width))
    ranges[lane] = (E.const(0), E.const(width))
    split = {axis.var: block * width + lane}
    for read in tensor_reads(bodies.of(stage)):
        idx = [simplify(substitute(i, split), ranges) for i in read.indices]
        if any(_uses(i, lane) for i in idx[:-1]):
            return False
        if idx and _uses(idx[-1], lane) and _uses(simplify(idx[-1] - lane, ranges), lane):
            return False
    return True


def _reads_elementwise(s: Schedule, bodies: InlinedBodies, out: ComputeOp, producer: ComputeOp) -> bool:
    """Whether ``out`` reads ``producer`` (of the same shape) only at its own index, so that computing
    ``producer`` inside ``out``'s loops computes each element once."""
    if [_extent(a) for a in producer.axis] != [_extent(a) for a in out.axis]:
        return False
    def own(index: E.Expr, axis: IterVar) -> bool:
        return index is axis.var or (_extent(axis) == 1 and isinstance(index, E.IntImm) and index.value == 0)

    reads = [r for r in tensor_reads(bodies.of(s[out])) if r.tensor.op is producer]
    return bool(reads) and all(
        len(r.indices) == len(out.axis) and all(map(own, r.indices, out.axis)) for r in reads
    )


def _parallel_prefix(stage: Stage, loops: list[IterVar], work: int) -> list[IterVar]:
    """Fuse the outermost ``loops`` into one parallel loop of at least :data:`PARALLEL_CHUNKS`
    iterations (when ``work`` is worth it); the loops left, the fused one first."""
    if work < PARALLEL_MIN or not loops:
        return loops
    n, count = 0, 1
    while n < len(loops) and count < PARALLEL_CHUNKS:
        count *= _extent(loops[n])
        n += 1
    fused = stage.fuse(*loops[:n]) if n > 1 else loops[0]
    stage.parallel(fused)
    return [fused, *loops[n:]]


def _extent(iv: IterVar) -> int:
    return int(iv.dom.extent)


def _uses(e: E.Expr, var: E.Var) -> bool:
    found: list[bool] = []
    post_order(e, lambda node: found.append(True) if node is var else None)
    return bool(found)
