"""te.thread_axis and Stage.bind: GPU-style schedules run on the CPU target.

A bound axis stays a serial loop, whatever its thread tag, and computes what the GPU's threads
would.  As in TVM, a reduction axis may be bound, and binding an axis again to another thread
replaces the binding with a warning.
"""

import logging

import numpy as np
import pytest

from tests.engine.lower.workloads import loops
from tunecli import te
from tunecli.engine.build import build
from tunecli.engine.ir import stmt as S
from tunecli.engine.lower import lower
from tunecli.errors import ExprError, ScheduleError


def add_one(n=64):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    return A, B


def for_kinds(func):
    return {loop.loop_var.name: loop.kind for loop in loops(func)}


def test_thread_axis_forms():
    bx = te.thread_axis("blockIdx.x")
    assert bx.thread_tag == "blockIdx.x" and bx.var.name == "blockIdx.x" and bx.dom is None
    tx = te.thread_axis((0, 8), "threadIdx.x")
    assert tx.thread_tag == "threadIdx.x" and int(tx.dom.extent) == 8
    vx = te.thread_axis("vthread", name="vx")
    assert vx.thread_tag == "vthread" and vx.var.name == "vx" and vx.iter_type == "thread_index"


@pytest.mark.parametrize("bad", [lambda: te.thread_axis(), lambda: te.thread_axis("warpIdx.x"),
                                 lambda: te.thread_axis(8, "threadIdx.x")])
def test_thread_axis_errors(bad):
    with pytest.raises(ExprError, match="thread_axis"):
        bad()


def test_bound_loops_are_serial_loops_tagged_with_their_thread_and_compute_the_result():
    A, B = add_one()
    s = te.create_schedule(B.op)
    bo, ti = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(ti, te.thread_axis("threadIdx.x"))
    s[B].pragma(bo, "auto_unroll_max_step", 64)  # never unrolls a bound loop
    func = lower(s, [A, B])
    assert for_kinds(func) == {"i.outer": S.SERIAL, "i.inner": S.SERIAL}
    assert {loop.loop_var.name: loop.thread_tag for loop in loops(func)} == {
        "i.outer": "blockIdx.x", "i.inner": "threadIdx.x"}  # what a GPU backend maps to its indices
    assert "thread_binding(threadIdx.x) for (i.inner, 0, 16)" in str(func)
    a = np.arange(64, dtype="float32")
    b = np.zeros_like(a)
    build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_gpu_style_cooperative_fetching_computes_the_result():
    """Shared-memory tiles loaded by thread-bound loops (the conv2d tutorial's pattern)."""
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CL])
    by, ty = s[C].split(C.op.axis[0], factor=8)
    bx, tx = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(by, bx, ty, tx)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis((0, 8), "threadIdx.y"))
    s[C].bind(tx, te.thread_axis((0, 8), "threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=4)
    s[AA].compute_at(s[CL], ko)
    fused = s[AA].fuse(*s[AA].op.axis)
    t, rest = s[AA].split(fused, nparts=2)
    s[AA].bind(t, te.thread_axis("threadIdx.x"))
    assert set(for_kinds(lower(s, [A, B, C])).values()) == {S.SERIAL}
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    c = np.zeros((n, n), "float32")
    build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_bound_reduction_axis_is_a_serial_loop():
    A = te.placeholder((8, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    s[B].reorder(ko, B.op.axis[0], ki)
    s[B].bind(ko, te.thread_axis("blockIdx.x"))
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    assert set(for_kinds(lower(s, [A, B])).values()) == {S.SERIAL}
    a = np.random.default_rng(0).random((8, 32), dtype=np.float32)
    b = np.zeros(8, "float32")
    build(s, [A, B])(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_annotations_of_bound_axes_are_ignored():
    A, B = add_one()
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(i)
    s[B].bind(i, te.thread_axis("threadIdx.x"))
    s[B].bind(o, te.thread_axis("blockIdx.x"))
    s[B].parallel(o)
    assert for_kinds(lower(s, [A, B])) == {"i.outer": S.SERIAL, "i.inner": S.SERIAL}


def test_binding_again_to_another_thread_warns_and_rebinds(caplog):
    A, B = add_one()
    s = te.create_schedule(B.op)
    (i,) = B.op.axis
    tx, bx = te.thread_axis("threadIdx.x"), te.thread_axis("blockIdx.x")
    s[B].bind(i, tx)
    s[B].bind(i, tx)  # the same thread again: silent
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="tunecli.schedule"):
        s[B].bind(i, bx)
    assert "already bound to thread threadIdx.x" in caplog.text
    assert s[B].bindings[i] is bx


def test_cache_write_after_bind_is_refused():
    A, B = add_one()
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    with pytest.raises(ScheduleError, match="already scheduled"):
        s.cache_write(B, "local")


@pytest.mark.parametrize("bad, fragment", [
    (lambda s, B, o, i: s[B].bind(o, "threadIdx.x"), "must be a thread axis"),
    (lambda s, B, o, i: s[B].bind(o, te.reduce_axis((0, 4), "r")), "must be a thread axis"),
    (lambda s, B, o, i: s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x")), "already split"),
    (lambda s, B, o, i: s[B.op.input_tensors[0]].bind(o, te.thread_axis("blockIdx.x")), "placeholder"),
])
def test_bind_errors(bad, fragment):
    A, B = add_one()
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=16)
    with pytest.raises(ScheduleError, match=fragment):
        bad(s, B, o, i)
