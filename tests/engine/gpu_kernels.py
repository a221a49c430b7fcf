"""GPU kernels shared by the lowering and NVPTX tests (lowered for ``cuda``)."""

from __future__ import annotations

from tunecli import te
from tunecli.engine.ir.stmt import PrimFunc
from tunecli.engine.lower import lower
from tunecli.engine.schedule import Schedule


def reversed_copy(n: int = 1024) -> PrimFunc:
    """C = 2 * A reversed: blocks of 256, A's block fetched into shared memory 4 floats per thread
    (vectorized), C written 4 floats per thread (vectorized)."""
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[n - 1 - i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    bo, rest = s[C].split(C.op.axis[0], factor=256)
    tx, vi = s[C].split(rest, factor=4)
    s[C].bind(bo, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[C].vectorize(vi)
    s[AS].compute_at(s[C], bo)
    atx, av = s[AS].split(s[AS].op.axis[0], factor=4)
    s[AS].bind(atx, te.thread_axis("threadIdx.x"))
    s[AS].vectorize(av)
    return lower(s, [A, C], name="reversed_copy", target="cuda")


def tiled_matmul(n: int, tile: int, shared: bool) -> tuple[Schedule, list[te.Tensor]]:
    """C = A @ B (``n`` x ``n``): one block per ``tile`` x ``tile`` output tile, one thread per output
    element, the accumulator in a ``local`` cache; with ``shared``, the k loop in steps of ``tile``
    with both operand tiles fetched cooperatively into shared memory by loops bound to the block's
    threads."""
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io, ii = s[C].split(C.op.axis[0], factor=tile)
    jo, ji = s[C].split(C.op.axis[1], factor=tile)
    s[C].reorder(io, jo, ii, ji)
    for axis, tag in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (ii, "threadIdx.y"), (ji, "threadIdx.x")):
        s[C].bind(axis, te.thread_axis(tag))
    s[CL].compute_at(s[C], ji)
    if shared:
        ko, _ = s[CL].split(s[CL].op.reduce_axis[0], factor=tile)
        for t in (A, B):
            cached = s.cache_read(t, "shared", [CL])
            s[cached].compute_at(s[CL], ko)
            ty, rest = s[cached].split(s[cached].fuse(*s[cached].op.axis), nparts=tile)
            tx, _ = s[cached].split(rest, nparts=tile)
            s[cached].bind(ty, te.thread_axis("threadIdx.y"))
            s[cached].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]
