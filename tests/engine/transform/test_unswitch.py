"""Loop unswitching: a guard that a loop does not change is tested once, outside it, and the code
computes what it computed with the guard inside."""

from __future__ import annotations

import numpy as np

from tests.engine.codegen.codegen_kernels import loop, nodes
from tunecli import te
from tunecli.engine.build import build, lower
from tunecli.engine.codegen.pipeline import prepare
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, IfThenElse, PrimFunc, SeqStmt, Var, const
from tunecli.engine.transform.unswitch import MAX_VERSIONS_LOG2, unswitch

A, C = Buffer("a", (16,), "float32"), Buffer("c", (8,), "float32")


def guarded_reduction(guard_uses_inner: bool = False):
    """``for t < 2: for k < 16: c[j] += a[k] for j < 4 where t*4 + j (+ k) < 7``."""
    a, c = A, C
    t = Var("t")

    def body(k):
        stores = []
        for j in range(4):
            cond = (t * 4 + j + (k if guard_uses_inner else 0)) < 7
            stores.append(IfThenElse(cond, BufferStore(c, BufferLoad(c, [j]) + BufferLoad(a, [k]), [j])))
        return SeqStmt(stores)

    return For(t, 0, 2, "serial", loop("k", 16, "serial", body))


def ifs_inside(stmt, loop_name):
    """Guards nested under the loop named ``loop_name``."""
    return [n for f in nodes(stmt, For) if f.loop_var.name == loop_name for n in nodes(f.body, IfThenElse)]


def test_a_guard_invariant_in_the_reduction_is_tested_once_outside_it():
    out = unswitch(guarded_reduction())
    assert not ifs_inside(out, "k")  # the k loop runs without branches in both versions
    (version,) = [n for n in nodes(out, IfThenElse)]
    assert str(version.condition) == "(((t * 4) + 3) < 7)"
    assert len(nodes(version.then_case, BufferStore)) == 4 and len(nodes(version.else_case, BufferStore)) == 3


def test_guards_that_the_loop_changes_stay_inside():
    out = unswitch(guarded_reduction(guard_uses_inner=True))
    assert len(ifs_inside(out, "k")) == 4


def test_guards_provable_from_the_loop_ranges_disappear():
    out = unswitch(guarded_reduction())
    conds = {str(n.condition) for n in nodes(out, IfThenElse)}
    assert conds == {"(((t * 4) + 3) < 7)"}  # t*4 + {0,1,2} < 7 hold for t < 2


def test_versions_are_capped():
    a, c = Buffer("a", (64,), "float32"), Buffer("c", (64,), "float32")
    outer = [Var(f"t{i}") for i in range(MAX_VERSIONS_LOG2 + 2)]
    stores = [IfThenElse(v < 1, BufferStore(c, BufferLoad(a, [k]), [k])) for k, v in enumerate(outer)]
    out = unswitch(loop("k", 4, "serial", lambda k: SeqStmt(stores)))
    assert len(nodes(out, For)) <= 2 ** MAX_VERSIONS_LOG2


def test_a_non_dividing_register_tile_runs_without_branches_in_its_reduction():
    n, k = 7, 64
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, 8), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, 8), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io, ii = s[C].split(C.op.axis[0], factor=4)  # 7 rows in tiles of 4: the last tile has 3
    s[CL].compute_at(s[C], io)
    i, j = s[CL].op.axis
    s[CL].reorder(CL.op.reduce_axis[0], i, j)
    s[CL].unroll(i)
    s[CL].vectorize(j)
    body = prepare(lower(s, [A, B, C]), "llvm").body
    assert not ifs_inside(body, "r")
    mod = build(s, [A, B, C], target="llvm")
    a, b = np.random.rand(n, k).astype("float32"), np.random.rand(k, 8).astype("float32")
    c = np.zeros((n, 8), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_gpu_code_keeps_its_guards():
    func = PrimFunc("guarded", [A, C], guarded_reduction())
    assert ifs_inside(prepare(func, "cuda").body, "k")  # a version per outcome would split barriers
    assert not ifs_inside(prepare(func, "llvm").body, "k")


def test_unswitch_of_nothing_guarded_is_the_identity():
    a = Buffer("a", (4,), "float32")
    stmt = loop("i", 4, "serial", lambda i: BufferStore(a, const(0.0), [i]))
    assert unswitch(stmt) is stmt
