"""GPU kernels shared by the lowering and NVPTX tests (lowered for ``cuda``)."""

from __future__ import annotations

from tunecli import te
from tunecli.engine.ir.stmt import PrimFunc
from tunecli.engine.lower import lower


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
