"""TVM scripts whose sizes are variables (``n = te.var("n")``), as in TVM's first tutorials: the
schedule prints as a loop nest over ``n``, and the built function runs on arrays of any size,
compiled once per size it meets.  Every run equals numpy; a size the arrays contradict is one
clear error."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import TuneError

RNG = np.random.default_rng(3)


def vector_add():
    n = te.var("n")
    a = te.placeholder((n,), name="A")
    b = te.placeholder((n,), name="B")
    c = te.compute(a.shape, lambda i: a[i] + b[i], name="C")
    return n, a, b, c


def test_a_vector_add_of_any_length_parallel_and_vectorized():
    _, a, b, c = vector_add()
    s = te.create_schedule(c.op)
    outer, inner = s[c].split(c.op.axis[0], factor=16)
    s[c].parallel(outer)
    s[c].vectorize(inner)
    fadd = tvm.build(s, [a, b, c], tvm.target.Target("llvm"), name="myadd")
    dev = tvm.cpu(0)
    for length in (1024, 1000, 3, 1000):
        x = tvm.nd.array(RNG.standard_normal(length).astype("float32"), dev)
        y = tvm.nd.array(RNG.standard_normal(length).astype("float32"), dev)
        z = tvm.nd.array(np.zeros(length, "float32"), dev)
        fadd(x, y, z)
        tvm.testing.assert_allclose(z.numpy(), x.numpy() + y.numpy())
    assert "3 compiled" in repr(fadd)  # 1000 twice: compiled once
    timing = fadd.time_evaluator(fadd.entry_name, dev, number=5)(x, y, z)
    assert timing.mean > 0


def test_the_printed_loop_nest_is_over_the_size_variables():
    n, a, b, c = vector_add()
    s = te.create_schedule(c.op)
    s[c].split(c.op.axis[0], factor=32)
    text = str(tvm.lower(s, [a, b, c], simple_mode=True))
    assert "float32[n]" in text
    assert "((n + 31) // 32)" in text
    assert "< n" in text  # the guard of the last, partial tile


def test_a_row_sum_over_two_sizes_with_rfactor_at_the_consumer():
    n, m = te.var("n"), te.var("m")
    a = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    b = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="B")
    s = te.create_schedule(b.op)
    _, ki = s[b].split(b.op.reduce_axis[0], factor=16)
    bf = s.rfactor(b, ki)
    s[b].split(s[b].op.axis[0], factor=32)
    s[bf].compute_at(s[b], s[b].op.reduce_axis[0])
    text = str(tvm.lower(s, [a, b], simple_mode=True))
    assert "float32[n, m]" in text and "B.rf" in text
    f = tvm.build(s, [a, b], "llvm")
    for shape in ((100, 77), (33, 5), (1, 16)):
        x = RNG.standard_normal(shape).astype("float32")
        out = tvm.nd.empty((shape[0],))
        f(tvm.nd.array(x), out)
        np.testing.assert_allclose(out.numpy(), x.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_an_intermediate_stage_cache_write_and_a_size_used_in_the_body():
    n = te.var("n")
    a = te.placeholder((n, 8), name="A")
    rev = te.compute((n, 8), lambda i, j: a[n - 1 - i, j] * 2.0, name="rev")
    out = te.compute((n, 8), lambda i, j: rev[i, j] + 1.0, name="out")
    s = te.create_schedule(out.op)
    cached = s.cache_write(out, "local")
    io, _ = s[out].split(out.op.axis[0], factor=4)
    s[cached].compute_at(s[out], io)
    f = tvm.build(s, [a, out], "llvm")
    for rows in (9, 4):
        x = RNG.standard_normal((rows, 8)).astype("float32")
        got = tvm.nd.empty((rows, 8))
        f(tvm.nd.array(x), got)
        np.testing.assert_allclose(got.numpy(), x[::-1] * 2.0 + 1.0, rtol=1e-6)


def test_arrays_that_disagree_on_a_size_are_refused():
    _, a, b, c = vector_add()
    f = tvm.build(te.create_schedule(c.op), [a, b, c], "llvm")
    x, y = np.zeros(8, "float32"), np.zeros(9, "float32")
    with pytest.raises(TuneError, match="size n is 8 by one argument and 9 by B"):
        f(x, y, np.zeros(8, "float32"))
    with pytest.raises(TuneError, match="expected 3 arrays"):
        f(x, x)


def test_a_lowered_function_of_symbolic_sizes_is_not_built_directly():
    _, a, b, c = vector_add()
    mod = tvm.lower(te.create_schedule(c.op), [a, b, c])
    with pytest.raises(TuneError, match="symbolic sizes; build the schedule itself"):
        tvm.build(mod)


def test_saving_a_kernel_of_symbolic_sizes_says_why_not(tmp_path):
    _, a, b, c = vector_add()
    f = tvm.build(te.create_schedule(c.op), [a, b, c], "llvm")
    for attempt in (lambda: f.export_library(str(tmp_path / "add.so")), lambda: f.get_source(),
                    lambda: f.save(str(tmp_path / "add.o"))):
        with pytest.raises(TuneError, match=r"compiled per value of its symbolic sizes \(n\)"):
            attempt()
