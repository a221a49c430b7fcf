"""Scripts of the AutoTVM era (TVM 0.6) run by changing the import: the expression names at the
top level (``tvm.placeholder``, ``tvm.compute``, ``tvm.create_schedule``, ``tvm.sum``,
``tvm.exp``), ``tvm.target.create``, devices called contexts (``tvm.context``, ``ctx=`` keywords,
``arr.ctx``), ``tvm.ndarray`` and ``asnumpy``."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli.errors import ArgumentError, TargetError


def test_the_vector_add_of_the_old_getting_started_tutorial():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = tvm.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(inner)
    tgt = tvm.target.create("llvm")
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
    ctx = tvm.context("llvm", 0)
    assert ctx == tvm.cpu(0) and ctx.exist
    a = tvm.nd.array(np.random.uniform(size=37).astype(A.dtype), ctx)
    b = tvm.ndarray.array(np.random.uniform(size=37).astype(B.dtype), ctx=ctx)
    c = tvm.nd.array(np.zeros(37, dtype=C.dtype), ctx=ctx)
    fadd(a, b, c)
    np.testing.assert_allclose(c.asnumpy(), a.asnumpy() + b.asnumpy())
    assert c.ctx == ctx
    evaluator = fadd.time_evaluator(fadd.entry_name, ctx=ctx, number=3)
    assert evaluator(a, b, c).mean > 0


def test_a_softmax_row_of_top_level_reductions_and_intrinsics():
    m, k = 4, 19
    x = tvm.placeholder((m, k), name="x")
    j = tvm.reduce_axis((0, k), name="j")
    top = tvm.compute((m,), lambda i: tvm.max(x[i, j], axis=j), name="top")
    e = tvm.compute((m, k), lambda i, c: tvm.exp(x[i, c] - top[i]), name="e")
    j2 = tvm.reduce_axis((0, k), name="j2")
    total = tvm.compute((m,), lambda i: tvm.sum(e[i, j2], axis=j2), name="total")
    y = tvm.compute((m, k), lambda i, c: e[i, c] / total[i], name="y")
    s = tvm.create_schedule(y.op)
    f = tvm.build(s, [x, y], tvm.target.create("llvm"))
    xs = np.random.randn(m, k).astype("float32")
    out = tvm.nd.empty((m, k), "float32", ctx=tvm.context(1))
    f(tvm.nd.array(xs, ctx=tvm.cpu(0)), out)
    want = np.exp(xs - xs.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.asnumpy(), want / want.sum(axis=1, keepdims=True), rtol=1e-5)


def test_integer_division_names_at_the_top_level():
    a = tvm.placeholder((12,), name="a", dtype="int32")
    b = tvm.compute((12,), lambda i: tvm.floordiv(a[i], 4) * 10 + tvm.floormod(a[i], 4), name="b")
    f = tvm.build(tvm.create_schedule(b.op), [a, b], "llvm")
    xs = np.arange(-6, 6, dtype="int32")
    out = tvm.nd.empty((12,), "int32")
    f(tvm.nd.array(xs), out)
    np.testing.assert_array_equal(out.asnumpy(), (xs // 4) * 10 + xs % 4)


def test_the_current_target_of_a_with_block():
    assert tvm.target.current_target() is None
    with tvm.target.create("llvm -mcpu=core-avx2") as tgt:
        assert tvm.target.current_target() is tgt
        assert str(tgt) == "llvm -mcpu=core-avx2"


def test_a_device_given_twice_or_unknown_is_one_clear_error():
    with pytest.raises(ArgumentError, match="give the device once"):
        tvm.nd.array(np.zeros(3), device=tvm.cpu(0), ctx=tvm.cpu(0))
    with pytest.raises(ArgumentError, match="give the device once"):
        tvm.nd.empty((3,), ctx=tvm.cpu(0), device=tvm.cpu(0))
    with pytest.raises(ArgumentError, match="'opencl' is not available"):
        tvm.context("opencl", 0)
    a = tvm.placeholder((4,), name="a")
    b = tvm.compute((4,), lambda i: a[i] * 2.0, name="b")
    f = tvm.build(tvm.create_schedule(b.op), [a, b], "llvm", name="twice")
    with pytest.raises(ArgumentError, match="give the device once"):
        f.time_evaluator("twice", tvm.cpu(0), ctx=tvm.cpu(0))


@pytest.mark.parametrize("board, machine, triple", [("rasp4b64", 183, "aarch64-linux-gnu"),
                                                    ("rasp3b", 40, "armv7l-linux-gnueabihf")])
def test_a_kernel_cross_compiled_for_a_board_named_as_arm_cpu_knows_it(board, machine, triple):
    tgt = tvm.target.arm_cpu(board)
    assert tgt.keys == ["arm_cpu", "cpu"] and tgt.mtriple == triple and "+neon" in tgt.mattr
    a = tvm.placeholder((64,), name="a")
    b = tvm.compute((64,), lambda i: a[i] * 2.0, name="b")
    obj = tvm.build(tvm.create_schedule(b.op), [a, b], tgt, name="twice").object_bytes()
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == machine  # e_machine


def test_arm_cpu_of_an_unknown_board_and_extra_options():
    assert str(tvm.target.arm_cpu("myboard", "-mtriple=aarch64-linux-gnu")) == \
        "llvm -device=arm_cpu -model=myboard -mtriple=aarch64-linux-gnu"
    assert tvm.target.rasp(["-mcpu=cortex-a53"]).mcpu == "cortex-a53"
    with pytest.raises(TargetError, match="options must be a string"):
        tvm.target.arm_cpu("rasp3b", options=3)


def test_the_cross_compilation_tutorials_convert_and_target_names():
    n = tvm.convert(1024)
    a = tvm.placeholder((n,), name="a")
    b = tvm.compute((n,), lambda i: a[i] + 1.0, name="b")
    f = tvm.build(tvm.create_schedule(b.op), [a, b], "llvm", name="add_one")
    out = tvm.nd.empty((1024,))
    f(tvm.nd.array(np.zeros(1024, "float32")), out)
    assert (out.asnumpy() == 1.0).all()
    tgt = tvm.target.arm_cpu("rasp3b")
    assert tgt.target_name == "llvm" and tgt.device_name == "arm_cpu"
    assert tvm.target.create("cuda").target_name == "cuda" and tvm.target.create("llvm").device_name == ""
