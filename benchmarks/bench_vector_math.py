"""Element-wise ``exp``, ``tanh`` and ``sigmoid`` of float32: vectorized kernels vs numpy.

For each function, a kernel ``B[i] = f(A[i])`` over ``--n`` elements (default 2**22, 16 MiB)
is built twice: *vector* (split by 16, inner loop vectorized: the SIMD code of
``tunecli.engine.codegen.vector_math``) and *scalar* (the same loop not vectorized: one libm
call per element, which is also what a vectorized loop cost before vector_math existed). The
outer loop is parallel, so ``runtime.set_num_threads`` picks 1 or 2 threads. Two comparisons
per function, each at 1 and 2 threads, interleaved round by round, medians: the vector kernel
against numpy (``np.exp(a, out=b)``; ``np.tanh``; sigmoid as ``1 / (1 + exp(-a))`` in three
numpy calls; numpy is single-threaded for these), and the vector kernel against the scalar
one ("libm-loop"). "GFLOP/s" in the lines below means 10^9 elements per second. Both kernels'
results are checked against numpy first. Then peak memory.

Usage: ``.venv/bin/python benchmarks/bench_vector_math.py [--n 4194304] [--rounds 7]``
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import _common
import numpy as np

import tunecli
from tunecli import te
from tunecli.engine.runtime import set_num_threads


def _numpy(name: str) -> Callable[[np.ndarray, np.ndarray], object]:
    if name == "exp":
        return lambda a, b: np.exp(a, out=b)
    if name == "tanh":
        return lambda a, b: np.tanh(a, out=b)

    def sigmoid(a: np.ndarray, b: np.ndarray) -> None:
        np.exp(np.negative(a, out=b), out=b)
        b += 1.0
        np.reciprocal(b, out=b)
    return sigmoid


def build(name: str, n: int, vector: bool) -> Callable[..., object]:
    """``B[i] = name(A[i])`` over ``n`` float32 elements, parallel outer loop."""
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: getattr(te, name)(a[i]), name="B")
    s = te.create_schedule(b.op)
    outer, inner = s[b].split(b.op.axis[0], 4096)
    if vector:
        _, lanes = s[b].split(inner, 16)
        s[b].vectorize(lanes)
    s[b].parallel(outer)
    return tunecli.build(s, [a, b], "llvm")


def compare(name: str, a: np.ndarray, opts: argparse.Namespace) -> None:
    """Check both kernels of ``name`` on ``a``; time the vector one against numpy, then libm."""
    reference = _numpy(name)
    ours_out, numpy_out, libm_out = np.empty_like(a), np.empty_like(a), np.empty_like(a)
    with np.errstate(over="ignore"):
        reference(a, numpy_out)
    vector, scalar = build(name, opts.n, True), build(name, opts.n, False)
    for kernel in (vector, scalar):
        kernel(a, ours_out)
        np.testing.assert_allclose(ours_out, numpy_out, rtol=2e-6, atol=1e-30)
    with np.errstate(over="ignore"):
        _common.interleaved_compare(f"{name} vector", opts.n, lambda: vector(a, ours_out),
                                    lambda: reference(a, numpy_out), set_num_threads,
                                    opts.rounds, opts.number, settle=0.2)
    _common.interleaved_compare(f"{name} vector", opts.n, lambda: vector(a, ours_out),
                                lambda: scalar(a, libm_out), set_num_threads, opts.rounds,
                                opts.number, settle=0.2, theirs_name="libm-loop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 22)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=10)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 4.0, opts.n).astype("float32")
    print(f"bench_vector_math: {opts.n} float32 elements; {_common.load_line()}")
    for name in ("exp", "tanh", "sigmoid"):
        compare(name, a, opts)
    print(f"\n{_common.peak_memory_line()}; {_common.load_line()}")


if __name__ == "__main__":
    main()
