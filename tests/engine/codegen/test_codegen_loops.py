"""Loop kinds, allocations and whole kernels (hand-written loop nests) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.codegen.codegen_kernels import dense_microkernel, loop, matmul_ikj_vectorized, matmul_scalar
from tunecli.engine.build import build
from tunecli.engine.codegen import prepare
from tunecli.engine.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Var,
    const,
)
from tunecli.engine.runtime import get_num_threads, set_num_threads


@pytest.fixture
def threads():
    """Restore the thread count after a test changes it."""
    before = get_num_threads()
    yield
    set_num_threads(before)


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-128, 128, shape).astype(dtype)


@pytest.mark.parametrize("dtype,acc", [("float32", None), ("float64", None), ("int8", "int32")])
def test_scalar_matmul(dtype, acc):
    m, n, k = 9, 13, 70
    mod = build(matmul_scalar(m, n, k, dtype, acc))
    a, b = _rand((m, k), dtype, 1), _rand((k, n), dtype, 2)
    c = np.zeros((m, n), acc or dtype)
    mod(a, b, c)
    ref = a.astype(acc or dtype) @ b.astype(acc or dtype)
    if acc == "int32":
        np.testing.assert_array_equal(c, ref)  # int8 products summed in int32 exceed int8 range
        assert np.abs(ref).max() > 127
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_vectorized_inner_loop_inside_serial_reduction():
    m, n, k = 5, 32, 17
    mod = build(matmul_ikj_vectorized(m, n, k))
    assert "<32 x float>" in mod.get_source("ll")
    a, b, c = _rand((m, k), "float32"), _rand((k, n), "float32"), np.zeros((m, n), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nthreads", [1, 2, 3])
def test_dense_microkernel_parallel_packed_local_tile(nthreads, threads):
    m, n, k = 24, 96, 40
    set_num_threads(nthreads)
    mod = build(dense_microkernel(m, n, k, mr=4, nr=32))
    a, b, c = _rand((m, k), "float32"), _rand((k, n), "float32"), np.zeros((m, n), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    ll = mod.get_source("ll")
    assert "@dense__parallel_for" in ll  # the loop runs on the thread pool
    assert "alloca [128 x float]" not in ll  # the 4×32 accumulator tile was promoted to registers
    assert "fmul contract" in ll or "fmuladd" in ll or "fma" in ll


def test_microkernel_inner_loop_is_register_fma_code():
    mod = build(dense_microkernel(8, 64, 32, mr=4, nr=32, outer="serial"))
    asm = mod.get_source("asm")
    if "avx512f" in mod.target.llvm_features or "fma" in mod.target.llvm_features:
        assert "vfmadd" in asm
    a, b, c = _rand((8, 32), "float32"), _rand((32, 64), "float32"), np.zeros((8, 64), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_parallel_loop_with_odd_extent_nested_parallel_and_let(threads):
    n, w = 7, 5
    out = Buffer("out", (n, w), "int32")
    set_num_threads(4)  # more threads than some chunks: empty ranges must do nothing

    def row(i):
        t = Var("t")
        return loop("j", w, "parallel", lambda j: LetStmt(t, i * 10 + j, BufferStore(out, t, [i, j])))

    mod = build(PrimFunc("par", [out], loop("i", n, "parallel", row)))
    res = np.full((n, w), -1, "int32")
    mod(res)
    np.testing.assert_array_equal(res, np.arange(n)[:, None] * 10 + np.arange(w))
    assert mod.get_source("ll").count("ptr @par__parallel_for,") == 1  # only the outermost loop is parallel


def test_vectorize_falls_back_for_store_to_a_lane_invariant_address():
    n = 16
    a, s = Buffer("a", (n,), "float32"), Buffer("s", (1,), "float32")
    acc = loop("i", n, "vectorized", lambda i: BufferStore(s, BufferLoad(s, [0]) + BufferLoad(a, [i]), [0]))
    body = SeqStmt([BufferStore(s, const(0.0), [0]), acc])
    mod = build(PrimFunc("sum", [a, s], body))
    x, r = np.arange(n, dtype="float32"), np.zeros(1, "float32")
    mod(x, r)
    assert r[0] == x.sum()


def test_strided_gather_and_scatter_in_vectorized_loop():
    n = 16
    a, o = Buffer("a", (3 * n,), "float32"), Buffer("o", (2 * n,), "float32")
    body = loop("i", n, "vectorized", lambda i: BufferStore(o, BufferLoad(a, [i * 3 + 1]), [i * 2]))
    mod = build(PrimFunc("gs", [a, o], body))
    x, r = np.arange(3 * n, dtype="float32"), np.zeros(2 * n, "float32")
    mod(x, r)
    np.testing.assert_array_equal(r[::2], x[1::3])
    assert (r[1::2] == 0).all()


def test_unrolled_loops_expand_and_large_ones_stay_loops():
    n = 300
    o = Buffer("o", (n,), "int32")
    small = loop("i", 4, "unrolled", lambda i: BufferStore(o, i * 7, [i]))
    big = loop("j", n - 4, "unrolled", lambda j: BufferStore(o, j + 4, [j + 4]))
    mod = build(PrimFunc("unr", [o], SeqStmt([small, big])))
    r = np.zeros(n, "int32")
    mod(r)
    np.testing.assert_array_equal(r[:4], np.arange(4) * 7)
    np.testing.assert_array_equal(r[4:], np.arange(4, n))


@pytest.mark.parametrize("size,expect_heap", [(64, False), (64 * 1024, True)])
def test_global_temporaries_small_on_stack_large_on_heap(size, expect_heap):
    src, dst = Buffer("src", (size,), "float32"), Buffer("dst", (size,), "float32")
    tmp = Buffer("tmp", (size,), "float32")
    body = Allocate(tmp, SeqStmt([
        loop("i", size, "serial", lambda i: BufferStore(tmp, BufferLoad(src, [i]) * const(3.0), [i])),
        loop("j", size, "serial", lambda j: BufferStore(dst, BufferLoad(tmp, [size - 1 - j]), [j])),
    ]))
    mod = build(PrimFunc("tmp", [src, dst], body))
    assert ("aligned_alloc" in mod.get_source("ll")) == expect_heap
    x, r = np.arange(size, dtype="float32"), np.zeros(size, "float32")
    mod(x, r)
    np.testing.assert_array_equal(r, 3 * x[::-1])


def test_if_then_else_statement_and_loop_with_offset_min():
    n = 20
    o = Buffer("o", (n,), "int32")
    i = Var("i")
    body = For(i, 3, n - 3, "serial", IfThenElse(i % 2 == 0, BufferStore(o, i, [i]), BufferStore(o, -i, [i])))
    mod = build(PrimFunc("ite", [o], body))
    r = np.zeros(n, "int32")
    mod(r)
    idx = np.arange(n)
    expected = np.where(idx % 2 == 0, idx, -idx)
    expected[:3] = 0
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("stride", [1, 2])
def test_lane_dependent_if_becomes_masked_vector_code(stride):
    """The guard of a split that does not divide: lanes past the end neither load nor store."""
    n, valid = 32, 21
    a, o = Buffer("a", (n * stride,), "float32"), Buffer("o", (n * stride,), "float32")
    tail = Buffer("t", (n,), "float32")
    i = Var("i")
    guarded = IfThenElse(i < valid, BufferStore(o, BufferLoad(a, [i * stride]) * const(2.0), [i * stride]),
                         BufferStore(tail, const(-1.0), [i]))
    func = PrimFunc("masked", [a, o, tail], For(i, 0, n, "vectorized", guarded))
    prepared = prepare(func).body
    assert isinstance(prepared, IfThenElse) and prepared.condition.dtype == "boolx32"
    mod = build(func)
    x = np.arange(n * stride, dtype="float32") + 1
    r = np.full(n * stride, 7.0, "float32")
    t = np.zeros(n, "float32")
    mod(x, r, t)
    expected = np.full(n * stride, 7.0, "float32")
    expected[: valid * stride: stride] = 2 * x[: valid * stride: stride]
    np.testing.assert_array_equal(r, expected)
    np.testing.assert_array_equal(t, np.where(np.arange(n) < valid, 0, -1))
