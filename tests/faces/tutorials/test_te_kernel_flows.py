"""A TVM user's tensor-expression script, written against ``import tunecli as tvm``: declare a
computation, schedule it step by step (split, tile, reorder, vectorize, parallel, a packed
operand, an accumulator computed at a tile), lower and print it, build it, run it on
``tvm.nd`` arrays, time it with ``time_evaluator`` and save the object and its source.  Every
variant must equal numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te

LENGTH = 2048
SIDE, TILE, PANEL = 96, 16, 8


def saxpy(length: int = LENGTH) -> tuple:
    """``z = 2.5 * x + y``: the placeholders and the output."""
    x = te.placeholder((length,), name="x")
    y = te.placeholder((length,), name="y")
    z = te.compute((length,), lambda i: x[i] * 2.5 + y[i], name="z")
    return x, y, z


def run_saxpy(func: tvm.runtime.Module) -> None:
    dev = tvm.cpu(0)
    rng = np.random.default_rng(7)
    x = tvm.nd.array(rng.standard_normal(LENGTH).astype("float32"), dev)
    y = tvm.nd.array(rng.standard_normal(LENGTH).astype("float32"), dev)
    z = tvm.nd.array(np.zeros(LENGTH, "float32"), dev)
    func(x, y, z)
    tvm.testing.assert_allclose(z.numpy(), 2.5 * x.numpy() + y.numpy(), rtol=1e-6)


@pytest.mark.parametrize("plan", ["plain", "parallel", "split_vectorized", "parallel_vectorized"])
def test_an_elementwise_kernel_under_each_schedule(plan: str) -> None:
    x, y, z = saxpy()
    s = te.create_schedule(z.op)
    (i,) = z.op.axis
    if plan == "parallel":
        s[z].parallel(i)
    elif plan == "split_vectorized":
        _, inner = s[z].split(i, factor=8)
        s[z].vectorize(inner)
    elif plan == "parallel_vectorized":
        outer, inner = s[z].split(i, factor=16)
        s[z].parallel(outer)
        s[z].vectorize(inner)
    run_saxpy(tvm.build(s, [x, y, z], tvm.target.Target("llvm"), name=f"saxpy_{plan}"))


def test_the_lowered_loop_nest_shows_the_schedule() -> None:
    x, y, z = saxpy()
    s = te.create_schedule(z.op)
    outer, inner = s[z].split(z.op.axis[0], factor=64)
    s[z].parallel(outer)
    text = str(tvm.lower(s, [x, y, z], simple_mode=True))
    assert "parallel" in text and "64" in text


def test_a_kernel_is_timed_saved_and_shown(tmp_path: Path) -> None:
    x, y, z = saxpy()
    s = te.create_schedule(z.op)
    func = tvm.build(s, [x, y, z], "llvm", name="saxpy")
    dev = tvm.cpu()
    args = [tvm.nd.array(np.ones(LENGTH, "float32"), dev) for _ in range(3)]
    timing = func.time_evaluator(func.entry_name, dev, number=5)(*args)
    assert 0 < timing.mean < 1
    assert "saxpy" in func.get_source() and "define" in func.get_source()
    func.save(str(tmp_path / "saxpy.o"))
    assert (tmp_path / "saxpy.o").stat().st_size > 0


def gemm(side: int = SIDE) -> tuple:
    a = te.placeholder((side, side), name="a")
    b = te.placeholder((side, side), name="b")
    k = te.reduce_axis((0, side), name="k")
    c = te.compute((side, side), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    return a, b, k, c


def schedule_gemm(plan: str) -> tuple:
    """The schedule of one step of the usual CPU matmul optimisations, and its arguments."""
    a, b, k, c = gemm()
    if plan == "packed":  # b re-laid out in panels of PANEL columns, read contiguously
        packed = te.compute((SIDE // PANEL, SIDE, PANEL), lambda p, r, q: b[r, p * PANEL + q], name="packed")
        c = te.compute((SIDE, SIDE), lambda i, j: te.sum(
            a[i, k] * packed[tvm.tir.indexdiv(j, PANEL), k, tvm.tir.indexmod(j, PANEL)], axis=k), name="c")
    s = te.create_schedule(c.op)
    i, j = c.op.axis
    if plan == "plain":
        return s, [a, b, c]
    if plan == "accumulated":  # the tile's sums kept in a local buffer, written back once
        acc = s.cache_write(c, "global")
        io, jo, _, _ = s[c].tile(i, j, TILE, TILE)
        s[acc].compute_at(s[c], jo)
        ai, aj = s[acc].op.axis
        (ak,) = s[acc].op.reduce_axis
        ako, aki = s[acc].split(ak, factor=4)
        s[acc].reorder(ako, ai, aki, aj)
        s[acc].unroll(aki)
        s[acc].vectorize(aj)
        s[c].parallel(io)
        return s, [a, b, c]
    io, jo, ii, ji = s[c].tile(i, j, TILE, TILE)
    (kk,) = s[c].op.reduce_axis
    ko, ki = s[c].split(kk, factor=4)
    s[c].reorder(io, jo, ko, ii, ki, ji)
    if plan in ("vectorized", "packed"):
        s[c].vectorize(ji)
    if plan == "packed":
        packed_op = s[c].op.input_tensors[1]
        p, _, q = s[packed_op].op.axis
        s[packed_op].vectorize(q)
        s[packed_op].parallel(p)
        s[c].parallel(io)
    return s, [a, b, c]


@pytest.mark.parametrize("plan", ["plain", "tiled", "vectorized", "packed", "accumulated"])
def test_each_matmul_optimisation_step_equals_numpy(plan: str) -> None:
    s, args = schedule_gemm(plan)
    func = tvm.build(s, args, target="llvm", name=f"gemm_{plan}")
    dev = tvm.cpu()
    rng = np.random.default_rng(3)
    a = tvm.nd.array(rng.random((SIDE, SIDE), dtype="float32"), dev)
    b = tvm.nd.array(rng.random((SIDE, SIDE), dtype="float32"), dev)
    c = tvm.nd.array(np.zeros((SIDE, SIDE), dtype="float32"), dev)
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() @ b.numpy(), rtol=1e-4)
    assert func.time_evaluator(func.entry_name, dev, number=2)(a, b, c).mean > 0
