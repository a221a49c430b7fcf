"""Port of TVM's ``gallery/tutorial/tensor_expr_get_started.py`` (CPU parts) to tunecli.

``import tvm`` / ``from tvm import te`` become ``import tunecli as tvm`` / ``from tunecli import
te``.  Edits other than imports are marked ``# EDIT:``.  The recurring ones:

* ``tvm.target.Target(target="llvm", host="llvm")`` -> ``tvm.target.Target("llvm")``: tunecli's
  Target has no ``host`` argument;
* ``tvm.device(tgt.kind.name, 0)`` -> ``tvm.device(tgt.kind, 0)``: ``Target.kind`` is a string;
* ``n = te.var("n")`` -> ``n = 1024``: tunecli kernels have static shapes (the tutorial's own
  note suggests ``tvm.runtime.convert(1024)`` for that), so timing uses n = 1024, not 32768;
* the matrix sizes are 64 (the tutorial uses 1024) and ``print`` calls become assertions.
"""

from __future__ import annotations

import timeit
from pathlib import Path
from typing import Any

import numpy
import numpy as np
import pytest

import tunecli as tvm
import tunecli.testing  # noqa: F401  (the tutorial's ``import tvm.testing``)
import tunecli.tir  # noqa: F401  (``tvm.tir`` is loaded by ``import tvm``)
from tunecli import te
from tunecli.errors import ArgumentError


def test_vector_addition() -> None:
    """Example 1: vector addition, naive / parallel / vectorized, built and timed."""
    tgt = tvm.target.Target("llvm")  # EDIT: Target(target="llvm", host="llvm")

    n = 1024  # EDIT: te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

    s = te.create_schedule(C.op)

    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")

    dev = tvm.device(tgt.kind, 0)  # EDIT: tgt.kind.name

    n = 1024
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

    np_repeat = 10  # EDIT: 100
    np_running_time = timeit.timeit(
        setup="import numpy\n"
        "n = 32768\n"
        'dtype = "float32"\n'
        "a = numpy.random.rand(n, 1).astype(dtype)\n"
        "b = numpy.random.rand(n, 1).astype(dtype)\n",
        stmt="answer = a + b",
        number=np_repeat,
    )
    print("Numpy running time: %f" % (np_running_time / np_repeat))  # noqa: UP031 (tutorial text)

    def evaluate_addition(func: Any, target: Any, optimization: str, log: list) -> None:
        dev = tvm.device(target.kind, 0)  # EDIT: target.kind.name
        n = 1024  # EDIT: 32768 (static shapes)
        a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
        b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
        c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)

        evaluator = func.time_evaluator(func.entry_name, dev, number=10)
        mean_time = evaluator(a, b, c).mean
        print("%s: %f" % (optimization, mean_time))  # noqa: UP031 (tutorial text)

        log.append((optimization, mean_time))

    log = [("numpy", np_running_time / np_repeat)]
    evaluate_addition(fadd, tgt, "naive", log=log)

    s[C].parallel(C.op.axis[0])

    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "parallel for (i, 0, 1024)" in text  # EDIT: print -> assert

    fadd_parallel = tvm.build(s, [A, B, C], tgt, name="myadd_parallel")
    fadd_parallel(a, b, c)

    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

    evaluate_addition(fadd_parallel, tgt, "parallel", log=log)

    # Recreate the schedule, since we modified it with the parallel operation in
    # the previous example
    n = 1024  # EDIT: te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")

    s = te.create_schedule(C.op)

    factor = 4

    outer, inner = s[C].split(C.op.axis[0], factor=factor)
    s[C].parallel(outer)
    s[C].vectorize(inner)

    fadd_vector = tvm.build(s, [A, B, C], tgt, name="myadd_parallel")

    evaluate_addition(fadd_vector, tgt, "vector", log=log)

    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "parallel for (i.outer, 0, 256)" in text and "vectorized for (i.inner, 0, 4)" in text

    assert [name for name, _ in log] == ["numpy", "naive", "parallel", "vector"]
    assert all(0 < seconds < 1 for _, seconds in log)

    # EDIT: added — "if you pass arrays with different shapes into fadd, an error will be raised"
    with pytest.raises(ArgumentError, match="shape"):
        fadd(tvm.nd.array(np.zeros(8, "float32")), b, c)


def test_vector_addition_save_and_source(tmp_path: Path) -> None:
    """The tutorial's "Saving and Loading Compiled Modules", as far as tunecli goes.

    EDIT: tunecli has no ``tvm.contrib.cc.create_shared`` / ``tvm.runtime.load_module(path)`` /
    ``export_library``: only the ``.o`` is saved and checked; the kernel source is printed.
    """
    n = 1024
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], tvm.target.Target("llvm"), name="myadd")
    assert "define" in fadd.get_source() and "myadd" in fadd.get_source()
    fadd.save(str(tmp_path / "myadd.o"))
    assert (tmp_path / "myadd.o").read_bytes()[:4] == b"\x7fELF"


def test_matrix_multiplication_optimizations() -> None:
    """Example 2: the six matmul optimizations, each checked against numpy and timed."""
    # The size of the matrix
    # (M, K) x (K, N)
    M = 64  # EDIT: 1024
    K = 64  # EDIT: 1024
    N = 64  # EDIT: 1024

    # The default tensor data type in tvm
    dtype = "float32"

    target = tvm.target.Target("llvm")  # EDIT: Target(target="llvm", host="llvm")
    dev = tvm.device(target.kind, 0)  # EDIT: target.kind.name

    # Random generated tensor for testing
    a = tvm.nd.array(numpy.random.rand(M, K).astype(dtype), dev)
    b = tvm.nd.array(numpy.random.rand(K, N).astype(dtype), dev)

    answer = numpy.dot(a.numpy(), b.numpy())

    # TVM Matrix Multiplication using TE
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")

    # Default schedule
    s = te.create_schedule(C.op)
    func = tvm.build(s, [A, B, C], target=target, name="mmult")

    c = tvm.nd.array(numpy.zeros((M, N), dtype=dtype), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)

    def evaluate_operation(s: Any, vars: list, target: Any, name: str, optimization: str, log: list) -> None:
        func = tvm.build(s, [A, B, C], target=target, name="mmult")
        assert func

        c = tvm.nd.array(numpy.zeros((M, N), dtype=dtype), dev)
        func(a, b, c)
        tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)

        evaluator = func.time_evaluator(func.entry_name, dev, number=10)
        mean_time = evaluator(a, b, c).mean
        print("%s: %f" % (optimization, mean_time))  # noqa: UP031 (tutorial text)
        log.append((optimization, mean_time))

    log = []

    evaluate_operation(s, [A, B, C], target=target, name="mmult", optimization="none", log=log)

    assert "for (k, 0, 64)" in str(tvm.lower(s, [A, B, C], simple_mode=True))

    # Optimization 1: Blocking
    bn = 32

    # Blocking by loop tiling
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)

    # Hoist reduction domain outside the blocking loop
    s[C].reorder(xo, yo, ko, ki, xi, yi)

    evaluate_operation(s, [A, B, C], target=target, name="mmult", optimization="blocking", log=log)

    assert "for (k.outer, 0, 16)" in str(tvm.lower(s, [A, B, C], simple_mode=True))

    # Optimization 2: Vectorization
    s[C].vectorize(yi)

    evaluate_operation(s, [A, B, C], target=target, name="mmult", optimization="vectorization", log=log)

    assert "vectorized for (y.inner, 0, 32)" in str(tvm.lower(s, [A, B, C], simple_mode=True))

    # Optimization 3: Loop Permutation
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)

    # re-ordering
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)

    evaluate_operation(
        s, [A, B, C], target=target, name="mmult", optimization="loop permutation", log=log
    )

    # Optimization 4: Array Packing
    # We have to re-write the algorithm slightly.
    packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, tvm.tir.indexmod(y, bn)], axis=k),
        name="C",
    )

    s = te.create_schedule(C.op)

    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)

    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)

    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)

    evaluate_operation(s, [A, B, C], target=target, name="mmult", optimization="array packing", log=log)

    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "allocate packedB[float32 * 4096]" in text and "vectorized for (z, 0, 32)" in text

    # Optimization 5: Optimizing Block Writing Through Caching
    s = te.create_schedule(C.op)

    # Allocate write cache
    CC = s.cache_write(C, "global")

    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)

    # Write cache is computed at yo
    s[CC].compute_at(s[C], yo)

    # New inner axes
    xc, yc = s[CC].op.axis

    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)

    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)

    evaluate_operation(s, [A, B, C], target=target, name="mmult", optimization="block caching", log=log)

    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "allocate C.global[float32 * 1024]" in text and "unrolled for (k.inner, 0, 4)" in text

    # Optimization 6: Parallelization
    s[C].parallel(xo)

    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)

    evaluate_operation(
        s, [A, B, C], target=target, name="mmult", optimization="parallelization", log=log
    )

    assert "parallel for (x.outer, 0, 2)" in str(tvm.lower(s, [A, B, C], simple_mode=True))

    baseline = log[0][1]
    assert baseline > 0
    assert [name for name, _ in log] == ["none", "blocking", "vectorization", "loop permutation",
                                         "array packing", "block caching", "parallelization"]
