"""build/lower: schedules through the compiler front and codegen, run against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ir import Buffer, BufferStore, For, PrimFunc, Var
from tunecli.engine.schedule import create_schedule
from tunecli.engine.target import Target
from tunecli.errors import CodegenError


def _dense(m, n, k, mr, nr):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    Bp = te.compute((n // nr, k, nr), lambda jo, kk, jn: B[kk, jo * nr + jn], name="Bp")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * Bp[j // nr, r, j % nr], axis=r), name="C")
    s = create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, mr)
    jo, ji = s[C].split(j, nr)
    s[C].reorder(jo, io, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(jo)
    s[CC].compute_at(s[C], io)
    ci, cj = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    s[CC].reorder(kk, ci, cj)
    s[CC].unroll(ci)
    s[CC].vectorize(cj)
    s[Bp].vectorize(s[Bp].op.axis[2])
    return s, [A, B, C]


def test_build_register_tiled_dense_schedule():
    m, n, k = 24, 64, 40
    s, args = _dense(m, n, k, 4, 32)
    text = str(lower(s, args, name="dense"))
    assert "primfn dense(" in text and "vectorized" in text and "unrolled" in text
    mod = build(s, args, target="llvm", name="dense_k")
    assert mod.entry_name == "dense_k"
    assert [a.name for a in mod.arg_specs] == ["A", "B", "C"]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype("float32"), rng.standard_normal((k, n)).astype("float32")
    c = np.zeros((m, n), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    ll = mod.get_source("ll")
    assert "alloca [128 x float]" not in ll and "@dense_k__parallel_for" in ll


def test_build_padding_with_if_then_else_and_odd_sizes():
    n = 13
    X = te.placeholder((n, n), name="X")
    P = te.compute((n + 2, n + 2), lambda i, j: te.if_then_else(
        te.all(i >= 1, i <= n, j >= 1, j <= n), X[i - 1, j - 1], 0.0), name="P")
    Y = te.compute((n, n), lambda i, j: P[i, j] + P[i + 2, j + 2] * 2.0 + te.exp(P[i + 1, j + 1]), name="Y")
    s = create_schedule(Y.op)
    s[P].compute_inline()
    s[Y].vectorize(s[Y].op.axis[1])
    s[Y].parallel(s[Y].op.axis[0])
    mod = build(s, [X, Y])
    x = np.random.default_rng(1).standard_normal((n, n)).astype("float32")
    p = np.pad(x, 1)
    y = np.zeros((n, n), "float32")
    mod(x, y)
    expected = p[:n, :n] + 2 * p[2:, 2:] + np.exp(p[1:n + 1, 1:n + 1])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_build_uses_the_current_target_and_accepts_a_primfunc():
    o = Buffer("o", (4,), "int32")
    i = Var("i")
    func = PrimFunc("fill", [o], For(i, 0, 4, "serial", BufferStore(o, i * 3, [i])))
    with Target("llvm -mtriple=aarch64-linux-gnu"):
        cross = build(func)
    assert cross.target.llvm_triple == "aarch64-linux-gnu"
    mod = build(func)
    r = np.zeros(4, "int32")
    mod(r)
    assert r.tolist() == [0, 3, 6, 9]


def test_build_of_a_schedule_needs_args():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(CodegenError, match="args"):
        build(create_schedule(B.op))
