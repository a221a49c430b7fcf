"""Benchmark of the kernel compiler: generated code vs numpy/OpenBLAS, and compile time.

Kernels (hand-written schedules through te → schedule → lower → codegen):

* fp32 dense 1024³: B packed into [N/NR][K][NR] panels by a compute stage, a local MR×NR
  accumulator tile (``cache_write``) computed at the row-tile loop, reduction outermost in the
  tile, MR unrolled, NR vectorized, panel loop parallel; vs ``numpy.matmul``;
* conv2d N=1, CI=CO=512, 7×7, 3×3, stride 1, pad 1 (the seed's workload): im2col stage with the
  padding folded in, a register-tiled GEMM over (CO × 49 positions; the 49 vectorized lanes are
  cut into 16+16+16+1 by codegen), then a layout stage back to NCHW; vs numpy im2col + matmul.

Each side runs at 1 and 2 threads (``runtime.set_num_threads`` for ours, ``threadpoolctl`` for
numpy), the two sides interleaved round by round; medians are reported.  OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE are removed from the environment before numpy loads, so OpenBLAS picks its
kernel for this CPU (printed).  Run: ``.venv/bin/python benchmarks/bench_compiler.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np
from threadpoolctl import threadpool_info

from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.lower import lower
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.schedule import create_schedule


def dense_schedule(m: int, n: int, k: int, mr: int = 4, nr: int = 64):
    """The packed-B register-tiled dense schedule (``mr | m``, ``nr | n``); returns (schedule, args)."""
    assert m % mr == 0 and n % nr == 0, "tile sizes must divide the matrix"
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
    s[C].unroll(ii)
    s[C].vectorize(ji)
    s[C].parallel(jo)
    s[CC].compute_at(s[C], io)
    ci, cj = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    s[CC].reorder(kk, ci, cj)
    s[CC].unroll(ci)
    s[CC].vectorize(cj)
    po, _, pn = s[Bp].op.axis
    s[Bp].vectorize(pn)
    s[Bp].parallel(po)
    return s, [A, B, C]


def conv2d_schedule(ci_: int = 512, co: int = 512, hw: int = 7, mr: int = 4):
    """im2col (padding folded in) + register-tiled GEMM + NCHW layout stage; (schedule, args)."""
    pos = hw * hw
    D = te.placeholder((1, ci_, hw, hw), name="data")
    W = te.placeholder((co, ci_, 3, 3), name="weight")

    def col_value(c, ky, kx, p):
        y, x = p // hw + ky - 1, p % hw + kx - 1
        return te.if_then_else(te.all(y >= 0, y < hw, x >= 0, x < hw), D[0, c, y, x], 0.0)

    Col = te.compute((ci_, 3, 3, pos), col_value, name="col")
    rc = te.reduce_axis((0, ci_), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    Out = te.compute((co, pos), lambda o, p: te.sum(W[o, rc, ry, rx] * Col[rc, ry, rx, p],
                                                    axis=[rc, ry, rx]), name="gemm")
    C = te.compute((1, co, hw, hw), lambda n, o, y, x: Out[o, y * hw + x], name="conv")
    s = create_schedule(C.op)
    OL = s.cache_write(Out, "local")
    o, p = s[Out].op.axis
    oo, oi = s[Out].split(o, mr)
    s[Out].reorder(oo, oi, p)
    s[Out].unroll(oi)
    s[Out].vectorize(p)
    s[Out].parallel(oo)
    s[OL].compute_at(s[Out], oo)
    a, b = s[OL].op.axis
    r1, r2, r3 = s[OL].op.reduce_axis
    s[OL].reorder(r1, r2, r3, a, b)
    s[OL].unroll(a)
    s[OL].vectorize(b)
    c0, _, _, cp = s[Col].op.axis
    s[Col].vectorize(cp)
    s[Col].parallel(c0)
    s[C].parallel(s[C].op.axis[1])
    return s, [D, W, C]


def numpy_conv2d(data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """NCHW conv2d, 3×3, stride 1, pad 1, as im2col + matmul."""
    _, ci_, h, w = data.shape
    co = weight.shape[0]
    padded = np.pad(data[0], ((0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))  # ci, h, w, 3, 3
    cols = np.ascontiguousarray(win.transpose(0, 3, 4, 1, 2)).reshape(ci_ * 9, h * w)
    return (weight.reshape(co, ci_ * 9) @ cols).reshape(1, co, h, w)


def compile_timed(sch, args, name):
    """Lower and compile; return (module, lower_ms, codegen_ms)."""
    t0 = time.perf_counter()
    func = lower(sch, args, name)
    t1 = time.perf_counter()
    mod = build(func)
    t2 = time.perf_counter()
    return mod, (t1 - t0) * 1e3, (t2 - t1) * 1e3


def compile_time_report(reps: int) -> None:
    """Median lower/codegen time of small dense micro-kernels (what a tuner compiles)."""
    for mr, nr, size in ((4, 64, 256), (6, 64, 384), (8, 32, 256)):
        lows, cgs = [], []
        for _ in range(reps):
            s, args = dense_schedule(size, size, size, mr, nr)
            _, lo, cg = compile_timed(s, args, "dense_tile")
            lows.append(lo)
            cgs.append(cg)
        print(f"compile dense {size}³ tile {mr}x{nr}: lower {statistics.median(lows):6.1f} ms, "
              f"codegen (IR + O3 + object) {statistics.median(cgs):6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    opts = parser.parse_args()
    rounds, number = (3, 2) if opts.quick else (9, 5)
    blas = [(i["internal_api"], i.get("architecture"), i["version"]) for i in threadpool_info()
            if i["user_api"] == "blas"]
    print(f"BLAS: {blas}")
    rng = np.random.default_rng(0)

    n = 1024
    s, args = dense_schedule(n, n, n)
    mod, lo, cg = compile_timed(s, args, "dense")
    print(f"compile dense 1024³ 4x64: lower {lo:.1f} ms, codegen {cg:.1f} ms")
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    c = np.zeros((n, n), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    _common.interleaved_compare("dense 1024^3 fp32", 2.0 * n ** 3, lambda: mod(a, b, c),
                                lambda: np.matmul(a, b), set_num_threads, rounds, number)

    s, args = conv2d_schedule()
    mod2, lo, cg = compile_timed(s, args, "conv2d")
    print(f"compile conv2d: lower {lo:.1f} ms, codegen {cg:.1f} ms")
    data = rng.standard_normal((1, 512, 7, 7)).astype("float32")
    weight = rng.standard_normal((512, 512, 3, 3)).astype("float32")
    out = np.zeros((1, 512, 7, 7), "float32")
    mod2(data, weight, out)
    np.testing.assert_allclose(out, numpy_conv2d(data, weight), rtol=1e-3, atol=1e-2)
    flops = 2.0 * 512 * 49 * 512 * 9
    _common.interleaved_compare("conv2d 512x7x7 3x3 (im2col)", flops, lambda: mod2(data, weight, out),
                                lambda: numpy_conv2d(data, weight), set_num_threads, rounds, number * 4)

    compile_time_report(3 if opts.quick else 7)
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
