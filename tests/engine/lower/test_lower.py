"""lower(): structure of the loop nest for small schedules, and correctness via the interpreter."""

import numpy as np
import pytest

from tunecli import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.lower import lower
from tunecli.errors import LoweringError

from .ir_interpreter import run
from .workloads import conv2d, conv2d_ref, loops, matmul, rand, run_lowered


def nodes(func, cls):
    found = []
    post_order(func.body, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def test_default_matmul_nest():
    A, B, C = matmul(8, 6, 5)
    f = lower(te.create_schedule(C.op), [A, B, C], name="mm")
    assert f.name == "mm" and [p.name for p in f.params] == ["A", "B", "C"]
    assert all(p.scope == "global" for p in f.params) and f.params[2].shape == (8, 6)
    assert [(lp.loop_var.name, lp.extent.value) for lp in loops(f)] == [("i", 8), ("j", 6), ("k", 5)]
    stores = nodes(f, S.BufferStore)
    assert len(stores) == 2 and stores[0].value.value == 0.0  # init, then update
    assert all(len(s.indices) == 1 for s in stores)
    assert str(stores[1].indices[0]) == "((i * 6) + j)"
    assert not nodes(f, S.IfThenElse)
    text = str(f)
    assert "primfn mm(A: float32[8, 5]" in text and "for (k, 0, 5)" in text


def bench_schedule(m, n, k, ti=6, tj=32):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    packedB = te.compute((n // 16, k, 16), lambda no, kk, ni: B[kk, no * 16 + ni], name="packedB")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * packedB[j // 16, r, j % 16], axis=r), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, jo, ii, ji = s[C].tile(i, j, ti, tj)
    s[CC].compute_at(s[C], jo)
    ci, cj = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    s[CC].reorder(kk, ci, cj)
    s[CC].unroll(ci)
    s[CC].vectorize(cj)
    s[C].vectorize(ji)
    s[C].parallel(io)
    no, _, ni = s[packedB].op.axis
    s[packedB].parallel(no)
    s[packedB].vectorize(ni)
    return s, A, B, C


def test_benchmark_pattern_lowers_to_clean_nest():
    s, A, B, C = bench_schedule(48, 64, 32)
    f = lower(s, [A, B, C])
    allocs = {a.buffer.name: a.buffer for a in nodes(f, S.Allocate)}
    assert allocs["C.local"].shape == (6, 32) and allocs["C.local"].scope == "local"
    assert allocs["packedB"].scope == "global"
    assert not nodes(f, S.IfThenElse)  # 48 = 8*6 and 64 = 2*32: no guards
    kinds = {lp.loop_var.name: lp.kind for lp in loops(f)}
    assert kinds["i.outer"] == "parallel" and kinds["j.inner"] == "vectorized"
    assert kinds["i.c"] == "unrolled" and kinds["j.c"] == "vectorized" and kinds["no"] == "parallel"
    for lp in loops(f):
        if lp.kind in ("vectorized", "unrolled"):
            assert isinstance(lp.extent, E.IntImm)
    cstores = [st for st in nodes(f, S.BufferStore) if st.buffer.name == "C.local"]
    assert len(cstores) == 2 and all(str(st.indices[0]) == "((i.c * 32) + j.c)" for st in cstores)
    assert cstores[0].value.value == 0.0
    # the init nest is outside the k loop, the update inside it
    jo_loop = next(lp for lp in loops(f) if lp.loop_var.name == "j.outer")
    body = jo_loop.body.body
    assert isinstance(body, S.SeqStmt)
    assert body.stmts[0].loop_var.name == "i.c" and body.stmts[1].loop_var.name == "k"
    a, b = rand((48, 32)), rand((32, 64), seed=1)
    c = np.zeros((48, 64), "float32")
    run(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_benchmark_pattern_non_dividing_tiles_is_correct():
    s, A, B, C = bench_schedule(10, 32, 9, ti=4, tj=32)
    a, b, c = rand((10, 9)), rand((9, 32), seed=1), np.zeros((10, 32), "float32")
    f = run_lowered(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert nodes(f, S.IfThenElse)
    assert {a.buffer.name: a.buffer.shape for a in nodes(f, S.Allocate)}["C.local"] == (4, 32)
    for lp in loops(f):  # row guards do not depend on the vector lane: they sit outside vector loops
        if lp.kind == "vectorized":
            assert not nodes(S.PrimFunc("x", [], lp.body), S.IfThenElse)


def test_divisible_split_has_no_guard_and_extent_one_loops_vanish():
    A, B, C = matmul(8, 8, 4)
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    io, ii = s[C].split(i, 8)
    f = lower(s, [A, B, C])
    assert not nodes(f, S.IfThenElse)
    assert "i.outer" not in [lp.loop_var.name for lp in loops(f)]


def test_non_dividing_split_guards_inside_vectorized_loop():
    A, B, C = matmul(7, 10, 3)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(s[C].op.axis[1], 4)
    s[C].vectorize(ji)
    a, b, c = rand((7, 3)), rand((3, 10), seed=2), np.zeros((7, 10), "float32")
    f = run_lowered(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    vec = next(lp for lp in loops(f) if lp.kind == "vectorized")
    assert vec.extent.value == 4
    guards = nodes(f, S.IfThenElse)
    assert guards and "j.inner" in str(guards[0].condition)


def test_compute_at_padding_relaxes_region():
    data, kernel, pad, out = conv2d(1, 2, 6, 6, 3, 3, 3, 1)
    s = te.create_schedule(out.op)
    b, f_, y, x = s[out].op.axis
    yo, yi = s[out].split(y, 2)
    s[pad].compute_at(s[out], yo)
    d, k = rand((1, 2, 6, 6)), rand((3, 2, 3, 3), seed=3)
    o = np.zeros((1, 3, 6, 6), "float32")
    func = run_lowered(s, [data, kernel, out], [d, k, o])
    np.testing.assert_allclose(o, conv2d_ref(d, k, 1), rtol=1e-5, atol=1e-6)
    padbuf = {a.buffer.name: a.buffer for a in nodes(func, S.Allocate)}["pad"]
    assert padbuf.shape == (1, 2, 4, 8)  # rows yo*2 .. yo*2+3 of the padded image


def test_inline_padding_and_elementwise_chain():
    data, kernel, pad, out = conv2d(1, 2, 5, 5, 2, 3, 3, 1)
    relu = te.compute(out.shape, lambda *i: te.max(out(*i), 0.0), name="relu")
    s = te.create_schedule(relu.op)
    s[pad].compute_inline()
    d, k = rand((1, 2, 5, 5)) - 0.5, rand((2, 2, 3, 3), seed=4) - 0.5
    o = np.zeros((1, 2, 5, 5), "float32")
    func = run_lowered(s, [data, kernel, relu], [d, k, o])
    np.testing.assert_allclose(o, np.maximum(conv2d_ref(d, k, 1), 0), rtol=1e-5, atol=1e-6)
    assert [a.buffer.name for a in nodes(func, S.Allocate)] == ["conv"]
    assert not [ld for ld in nodes(func, E.BufferLoad) if ld.buffer.name == "pad"]


def test_int8_matmul_accumulates_in_int32():
    A = te.placeholder((4, 8), "int8", name="A")
    B = te.placeholder((8, 4), "int8", name="B")
    k = te.reduce_axis((0, 8), "k")
    C = te.compute((4, 4), lambda i, j: te.sum(A[i, k].astype("int32") * B[k, j].astype("int32"), axis=k),
                   name="C")
    a, b = rand((4, 8), "int8"), rand((8, 4), "int8", seed=1)
    c = np.zeros((4, 4), "int32")
    run_lowered(te.create_schedule(C.op), [A, B, C], [a, b, c])
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32"))


def test_max_reduction_with_where_and_intrinsics():
    A = te.placeholder((5, 7), "float64", name="A")
    k = te.reduce_axis((0, 7), "k")
    M = te.compute((5,), lambda i: te.max(A[i, k], axis=k, where=k < 4), name="M")
    E2 = te.compute((5,), lambda i: te.exp(M[i]) + te.sqrt(M[i]), name="E")
    s = te.create_schedule(E2.op)
    a, e = rand((5, 7), "float64"), np.zeros(5, "float64")
    run_lowered(s, [A, E2], [a, e])
    m = a[:, :4].max(axis=1)
    np.testing.assert_allclose(e, np.exp(m) + np.sqrt(m))


def test_cache_read_fuse_nparts_and_group():
    A, B, C = matmul(10, 12, 9)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, nparts=2)
    fo, fi = s[C].split(s[C].fuse(i, j), 7)
    s[C].reorder(fo, ko, fi, ki)
    s[AA].compute_at(s[C], ko)
    a, b, c = rand((10, 9)), rand((9, 12), seed=2), np.zeros((10, 12), "float32")
    run_lowered(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_group_compute_at():
    A = te.placeholder((8, 8), name="A")
    B1 = te.compute((8, 8), lambda i, j: A[i, j] + 1, name="B1")
    B2 = te.compute((8, 8), lambda i, j: B1[i, j] * 2, name="B2")
    C = te.compute((8, 8), lambda i, j: B2[i, j] - 3, name="C")
    s = te.create_schedule(C.op)
    g = s.create_group(outputs=B2, inputs=A)
    xo, xi = s[C].split(s[C].op.axis[0], 4)
    g.compute_at(s[C], xo)
    a, c = rand((8, 8)), np.zeros((8, 8), "float32")
    f = run_lowered(s, [A, C], [a, c])
    np.testing.assert_allclose(c, (a + 1) * 2 - 3, rtol=1e-6)
    assert {x.buffer.name: x.buffer.shape for x in nodes(f, S.Allocate)} == {"B1": (4, 8), "B2": (4, 8)}


def test_lowering_errors():
    A, B, C = matmul(4, 4, 4)
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="placeholder B"):
        lower(s, [A, C])
    with pytest.raises(LoweringError, match="twice"):
        lower(s, [A, B, C, C])
    X = te.placeholder((8,), name="X")
    P = te.compute((8,), lambda i: X[i] + 1, name="P")
    Q = te.compute((8,), lambda i: P[i] * 2, name="Q")
    R = te.compute((8,), lambda i: P[i] + Q[i], name="R")
    s = te.create_schedule(R.op)
    s[P].compute_at(s[Q], s[Q].op.axis[0])
    with pytest.raises(LoweringError, match="outside"):
        lower(s, [X, R])


def test_attach_chain_with_two_consumers_in_scope():
    X = te.placeholder((9, 10), name="X")
    P = te.compute((9, 10), lambda i, j: X[i, j] * 2, name="P")
    Q = te.compute((9, 10), lambda i, j: P[i, j] + P[i, 9 - j], name="Q")
    R = te.compute((9, 10), lambda i, j: Q[i, j] - P[i, j], name="R")
    s = te.create_schedule(R.op)
    io, ii = s[R].split(s[R].op.axis[0], 4)
    s[Q].compute_at(s[R], io)
    s[P].compute_at(s[R], io)
    x, r = rand((9, 10)), np.zeros((9, 10), "float32")
    f = run_lowered(s, [X, R], [x, r])
    p = x * 2
    np.testing.assert_allclose(r, p + p[:, ::-1] - p, rtol=1e-6)
    assert {a.buffer.name: a.buffer.shape for a in nodes(f, S.Allocate)} == {"P": (4, 10), "Q": (4, 10)}


def test_producer_at_reduction_axis():
    A, B, C = matmul(6, 7, 10)
    s = te.create_schedule(C.op)
    BB = s.cache_read(B, "local", [C])
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, 3)
    i, j = s[C].op.axis
    s[C].reorder(ko, i, j, ki)
    s[BB].compute_at(s[C], ko)
    s[BB].vectorize(s[BB].op.axis[1])
    a, b, c = rand((6, 10)), rand((10, 7), seed=3), np.zeros((6, 7), "float32")
    f = run_lowered(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert {x.buffer.name: x.buffer.shape for x in nodes(f, S.Allocate)} == {"B.local": (3, 7)}


def test_rfactor_structure_and_result():
    A = te.placeholder((5, 37), name="A")
    k = te.reduce_axis((0, 37), "k")
    B = te.compute((5,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, 8)
    BF = s.rfactor(B, ki)
    assert BF.shape == (8, 5) and BF.op.name == "B.rf"
    assert [iv.var.name for iv in BF.op.reduce_axis] == ["k.outer"]
    assert [int(iv.dom.extent) for iv in s[B].op.reduce_axis] == [8]
    s[BF].parallel(s[BF].op.axis[0])
    s[BF].compute_at(s[B], s[B].op.axis[0])
    a, b = rand((5, 37)), np.zeros(5, "float32")
    f = run_lowered(s, [A, B], [a, b])
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    assert any(lp.kind == "parallel" and lp.loop_var.name == "k.inner" for lp in loops(f))


def test_outputs_keep_original_ops_after_cache_write():
    A, B, C = matmul(4, 4, 4)
    s = te.create_schedule(C.op)
    s.cache_write(C, "global")
    assert C.op in s.outputs and s[C.op] is s[C]
    a, b, c = rand((4, 4)), rand((4, 4), seed=1), np.zeros((4, 4), "float32")
    run_lowered(s, [A, B, C], [a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_attach_axis_split_afterwards_is_a_lowering_error():
    X = te.placeholder((8,), name="X")
    P = te.compute((8,), lambda i: X[i] * 2, name="P")
    R = te.compute((8,), lambda i: P[i] + 1, name="R")
    s = te.create_schedule(R.op)
    (i,) = s[R].op.axis
    s[P].compute_at(s[R], i)
    s[R].split(i, 2)
    with pytest.raises(LoweringError, match="no longer one of its loops"):
        lower(s, [X, R])


def test_attached_window_overhanging_both_ends_of_the_domain():
    n = 5
    X = te.placeholder((n,), name="X")
    P = te.compute((n,), lambda i: X[i] * 2, name="P")
    Q = te.compute((n,), lambda i: te.if_then_else(i > 0, P[i - 1], 0.0)
                   + te.if_then_else(i < n - 1, P[i + 1], 0.0), name="Q")
    s = te.create_schedule(Q.op)
    io, ii = s[Q].split(s[Q].op.axis[0], 4)
    s[P].compute_at(s[Q], io)
    x, q = rand(n), np.zeros(n, "float32")
    f = run_lowered(s, [X, Q], [x, q])
    p = x * 2
    np.testing.assert_allclose(q, np.r_[0, p[:-1]] + np.r_[p[1:], 0], rtol=1e-6)
    assert {a.buffer.name: a.buffer.shape for a in nodes(f, S.Allocate)} == {"P": (6,)}
