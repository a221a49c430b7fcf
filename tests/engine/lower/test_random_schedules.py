"""Property: random legal schedules of matmul and conv2d compute the numpy result.

Every schedule is checked with the IR interpreter (bounds-checked oracle) and, through the
compiler (``tunecli.engine.build.build``), as machine code.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli import te
from tunecli.engine.build import build
from tunecli.engine.lower import lower
from tunecli.errors import LoweringError

from .ir_interpreter import run
from .workloads import conv2d, conv2d_ref, matmul, rand

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(sch, args, arrays, expected, outputs):
    func = lower(sch, args)
    run(func, *arrays)
    for idx, ref in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(arrays[idx], ref, rtol=1e-4, atol=1e-5, err_msg=str(func))
        arrays[idx][...] = 0
    mod = build(sch, args, target="llvm")
    mod(*arrays)
    for idx, ref in zip(outputs, expected, strict=True):
        np.testing.assert_allclose(arrays[idx], ref, rtol=1e-4, atol=1e-5, err_msg=str(func))


def annotate(data, stage, leaves):
    """Randomly vectorize the innermost data axis, parallelize the outermost, unroll one axis,
    bind axes to GPU threads and put an ``auto_unroll_max_step`` pragma on one axis."""
    if data.draw(st.booleans(), "vectorize") and leaves[-1].iter_type == "data_par":
        stage.vectorize(leaves[-1])
    if data.draw(st.booleans(), "parallel") and leaves[0].iter_type == "data_par":
        stage.parallel(leaves[0])
    if data.draw(st.booleans(), "unroll"):
        pick = data.draw(st.sampled_from(leaves[1:-1] or leaves), "unrolled axis")
        if pick not in stage.iter_var_attrs:
            stage.unroll(pick)
    if data.draw(st.booleans(), "bind"):
        stage.bind(leaves[0], te.thread_axis("blockIdx.x"))
        if len(leaves) > 1:
            pick = data.draw(st.sampled_from(leaves[1:]), "threadIdx axis")
            stage.bind(pick, te.thread_axis(data.draw(st.sampled_from(["threadIdx.x", "vthread"]), "tag")))
    if data.draw(st.booleans(), "auto_unroll"):
        at = data.draw(st.sampled_from(leaves), "pragma axis")
        stage.pragma(at, "auto_unroll_max_step", data.draw(st.sampled_from([0, 4, 16, 64, 512]), "max step"))


@SETTINGS
@given(st.data())
def test_random_matmul_schedules(data):
    m, n, k = (data.draw(st.integers(1, 11), name) for name in ("M", "N", "K"))
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    cache = data.draw(st.booleans(), "cache_write")
    CC = s.cache_write(C, "local") if cache else None
    i, j = s[C].op.axis
    io, ii = s[C].split(i, data.draw(st.integers(1, 6), "fi"))
    jo, ji = s[C].split(j, data.draw(st.integers(1, 8), "fj"))
    if cache:
        s[C].reorder(io, jo, ii, ji)
        if data.draw(st.booleans(), "fuse"):
            io = s[C].fuse(io, jo)
            leaves = [io, ii, ji]
        else:
            leaves = [io, jo, ii, ji]
        at = data.draw(st.sampled_from(leaves), "attach")
        s[CC].compute_at(s[C], at)
        ci, cj = s[CC].op.axis
        (kk,) = s[CC].op.reduce_axis
        order = data.draw(st.permutations([kk, ci, cj]), "cache order")
        s[CC].reorder(*order)
        annotate(data, s[CC], order)
        annotate(data, s[C], leaves)
    else:
        (r,) = s[C].op.reduce_axis
        ko, ki = s[C].split(r, data.draw(st.integers(1, 5), "fk"))
        order = data.draw(st.permutations([io, jo, ii, ji, ko, ki]), "order")
        s[C].reorder(*order)
        if data.draw(st.booleans(), "cache_read"):
            AA = s.cache_read(A, data.draw(st.sampled_from(["local", "global"]), "scope"), [C])
            where = data.draw(st.integers(-1, len(order) - 1), "cache_read at (-1: root)")
            if where >= 0:
                s[AA].compute_at(s[C], order[where])
        annotate(data, s[C], order)
    a, b = rand((m, k)), rand((k, n), seed=1)
    check(s, [A, B, C], [a, b, np.zeros((m, n), "float32")], [a @ b], [2])


@SETTINGS
@given(st.data())
def test_random_conv2d_schedules(data):
    ci, co = data.draw(st.integers(1, 3), "ci"), data.draw(st.integers(1, 3), "co")
    h, w = data.draw(st.integers(3, 7), "h"), data.draw(st.integers(3, 7), "w")
    kh = data.draw(st.sampled_from([1, 3]), "kh")
    pad = data.draw(st.integers(0, 1), "pad")
    stride = data.draw(st.integers(1, 2), "stride")
    d_t, k_t, p_t, out = conv2d(1, ci, h, w, co, kh, kh, pad, stride)
    s = te.create_schedule(out.op)
    b, f, y, x = s[out].op.axis
    rc, ry, rx = s[out].op.reduce_axis
    yo, yi = s[out].split(y, data.draw(st.integers(1, 4), "fy"))
    xo, xi = s[out].split(x, data.draw(st.integers(1, 5), "fx"))
    order = [b, f, yo, xo] + data.draw(st.permutations([rc, ry, rx, yi]), "inner order") + [xi]
    s[out].reorder(*order)
    where = data.draw(st.sampled_from(["root", "inline", "at"]), "pad placement")
    if where == "inline":
        s[p_t].compute_inline()
    elif where == "at":
        at = data.draw(st.sampled_from(order[:-1]), "pad attach")
        s[p_t].compute_at(s[out], at)
        pb, pc, py, px = s[p_t].op.axis
        if data.draw(st.booleans(), "vectorize pad"):
            s[p_t].vectorize(px)
    annotate(data, s[out], order)
    d, kern = rand((1, ci, h, w)), rand((co, ci, kh, kh), seed=2)
    ref = conv2d_ref(d, kern, pad, stride)
    check(s, [d_t, k_t, out], [d, kern, np.zeros(ref.shape, "float32")], [ref], [2])


@SETTINGS
@given(st.data())
def test_random_rfactor_schedules(data):
    n, k = data.draw(st.integers(1, 5), "n"), data.draw(st.integers(1, 40), "k")
    A = te.placeholder((n, k), name="A")
    r = te.reduce_axis((0, k), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, r], axis=r), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(r, data.draw(st.integers(1, 9), "factor"))
    axis = data.draw(st.sampled_from([ko, ki]), "rfactor axis")
    fa = data.draw(st.integers(0, 1), "factor_axis")
    BF = s.rfactor(B, axis, factor_axis=fa)
    if data.draw(st.booleans(), "rf at"):
        s[BF].compute_at(s[B], s[B].op.axis[0])
    else:
        s[BF].parallel(s[BF].op.axis[0])
    a = rand((n, k))
    check(s, [A, B], [a, np.zeros(n, "float32")], [a.sum(axis=1)], [1])


@SETTINGS
@given(st.data())
def test_random_stencil_chains(data):
    """A producer with two consumers, clamped shifted reads, and random placements of both."""
    n, m = data.draw(st.integers(2, 9), "n"), data.draw(st.integers(2, 9), "m")
    X = te.placeholder((n, m), name="X")
    P = te.compute((n, m), lambda i, j: X[i, j] * 2 + 1, name="P")
    Q = te.compute((n, m), lambda i, j: P[i, j] + P[te.min(i + 1, n - 1), j] + P[i, te.max(j - 1, 0)]
                   + te.if_then_else(i > 0, P[i - 1, j], 0.0), name="Q")
    R = te.compute((n, m), lambda i, j: Q[i, j] * P[i, j], name="R")
    s = te.create_schedule(R.op)
    i, j = s[R].op.axis
    io, ii = s[R].split(i, data.draw(st.integers(1, 4), "fi"))
    jo, ji = s[R].split(j, data.draw(st.integers(1, 4), "fj"))
    order = data.draw(st.permutations([io, jo, ii, ji]), "order")
    s[R].reorder(*order)
    q_where = data.draw(st.sampled_from(["root", "inline"] + list(range(4))), "Q placement")
    p_where = data.draw(st.sampled_from(["root", "inline"] + list(range(4))), "P placement")
    for stage, where in ((s[Q], q_where), (s[P], p_where)):
        if where == "inline":
            stage.compute_inline()
        elif where != "root":
            stage.compute_at(s[R], order[where])
    p_at, q_at = isinstance(p_where, int), isinstance(q_where, int)
    if p_at and (q_where == "root" or (q_at and q_where < p_where)):
        with pytest.raises(LoweringError, match="outside"):  # Q reads P outside P's loop
            lower(s, [X, R])
        return
    x = rand((n, m))
    p = x * 2 + 1
    q = p + p[np.minimum(np.arange(n) + 1, n - 1), :] + p[:, np.maximum(np.arange(m) - 1, 0)]
    q[1:] += p[:-1]
    check(s, [X, R], [x, np.zeros((n, m), "float32")], [q * p], [1])
