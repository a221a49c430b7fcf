"""Hand-written loop nests (PrimFuncs built directly from IR nodes) used by the codegen tests.

They pin the contract between lowering and codegen: 2-D or flat indexing, loop kinds
serial/vectorized/unrolled/parallel, local accumulator arrays, global temporaries, Select.
"""

from __future__ import annotations

from tunecli.engine.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    PrimFunc,
    SeqStmt,
    Var,
    cast,
    const,
    post_order,
)


def nodes(stmt, cls) -> list:
    """Every node of class ``cls`` in ``stmt``, children before parents."""
    found = []
    post_order(stmt, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def loop(name: str, extent: int, kind: str, body_fn):
    """``For(v, 0, extent, kind, body_fn(v))`` with a fresh int32 variable named ``name``."""
    v = Var(name)
    return For(v, 0, extent, kind, body_fn(v))


def matmul_scalar(m: int, n: int, k: int, dtype: str = "float32", acc: str | None = None,
                  inner_kind: str = "serial") -> PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j] with i-j-k loops; ``acc`` is the accumulator dtype (C's)."""
    acc = acc or dtype
    A, B, C = Buffer("A", (m, k), dtype), Buffer("B", (k, n), dtype), Buffer("C", (m, n), acc)

    def cell(i, j):
        init = BufferStore(C, const(0, acc), [i, j])
        upd = loop("k", k, "serial", lambda kk: BufferStore(
            C, BufferLoad(C, [i, j]) + cast(acc, BufferLoad(A, [i, kk])) * cast(acc, BufferLoad(B, [kk, j])),
            [i, j]))
        return SeqStmt([init, upd])

    body = loop("i", m, "serial", lambda i: loop("j", n, inner_kind, lambda j: cell(i, j)))
    return PrimFunc("matmul", [A, B, C], body)


def matmul_ikj_vectorized(m: int, n: int, k: int) -> PrimFunc:
    """i-k-j matmul with the j loop vectorized (width n) inside a serial k loop."""
    A, B, C = Buffer("A", (m, k), "float32"), Buffer("B", (k, n), "float32"), Buffer("C", (m, n), "float32")

    def row(i):
        init = loop("j0", n, "vectorized", lambda j: BufferStore(C, const(0.0), [i, j]))
        upd = loop("k", k, "serial", lambda kk: loop("j", n, "vectorized", lambda j: BufferStore(
            C, BufferLoad(C, [i, j]) + BufferLoad(A, [i, kk]) * BufferLoad(B, [kk, j]), [i, j])))
        return SeqStmt([init, upd])

    return PrimFunc("matmul_ikj", [A, B, C], loop("i", m, "serial", row))


def dense_microkernel(m: int, n: int, k: int, mr: int, nr: int, outer: str = "parallel",
                      name: str = "dense") -> PrimFunc:
    """Packed-B dense: Bp[N/NR][K][NR] (a global temporary), a local MR×NR accumulator tile,
    MR unrolled, NR vectorized, the panel loop ``outer`` (parallel by default)."""
    A, B, C = Buffer("A", (m, k), "float32"), Buffer("B", (k, n), "float32"), Buffer("C", (m, n), "float32")
    Bp = Buffer("Bp", (n // nr, k, nr), "float32")
    CC = Buffer("CC", (mr, nr), "float32", scope="local")
    pack = loop("po", n // nr, outer, lambda po: loop("pk", k, "serial", lambda pk: loop(
        "pn", nr, "vectorized", lambda pn: BufferStore(Bp, BufferLoad(B, [pk, po * nr + pn]), [po, pk, pn]))))

    def tile(jo, io):
        init = loop("ci0", mr, "unrolled", lambda ci: loop(
            "cj0", nr, "vectorized", lambda cj: BufferStore(CC, const(0.0), [ci, cj])))
        upd = loop("kk", k, "serial", lambda kk: loop("ci", mr, "unrolled", lambda ci: loop(
            "cj", nr, "vectorized", lambda cj: BufferStore(
                CC,
                BufferLoad(CC, [ci, cj]) + BufferLoad(A, [io * mr + ci, kk]) * BufferLoad(Bp, [jo, kk, cj]),
                [ci, cj]))))
        out = loop("ci1", mr, "unrolled", lambda ci: loop("cj1", nr, "vectorized", lambda cj: BufferStore(
            C, BufferLoad(CC, [ci, cj]), [io * mr + ci, jo * nr + cj])))
        return Allocate(CC, SeqStmt([init, upd, out]))

    main = loop("jo", n // nr, outer, lambda jo: loop("io", m // mr, "serial", lambda io: tile(jo, io)))
    return PrimFunc(name, [A, B, C], Allocate(Bp, SeqStmt([pack, main])))
