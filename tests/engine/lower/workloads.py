"""Small workloads (matmul, conv2d with padding) with numpy references, for lowering tests."""

from __future__ import annotations

import numpy as np

from tunecli.engine import te
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Visitor
from tunecli.engine.lower import lower

from .ir_interpreter import run


def matmul(m: int, n: int, k: int, dtype: str = "float32"):
    """A[m,k] x B[k,n] -> C[m,n]."""
    A = te.placeholder((m, k), dtype, name="A")
    B = te.placeholder((k, n), dtype, name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def conv2d(n: int, ci: int, h: int, w: int, co: int, kh: int, kw: int, pad: int, stride: int = 1):
    """NCHW conv2d with a zero-padding stage; returns (data, kernel, pad, out)."""
    data = te.placeholder((n, ci, h, w), name="data")
    kernel = te.placeholder((co, ci, kh, kw), name="kernel")
    hp, wp = h + 2 * pad, w + 2 * pad
    padded = te.compute(
        (n, ci, hp, wp),
        lambda b, c, y, x: te.if_then_else(
            te.all(y >= pad, y < h + pad, x >= pad, x < w + pad), data[b, c, y - pad, x - pad], 0.0),
        name="pad")
    oh, ow = (hp - kh) // stride + 1, (wp - kw) // stride + 1
    rc = te.reduce_axis((0, ci), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out = te.compute(
        (n, co, oh, ow),
        lambda b, f, y, x: te.sum(padded[b, rc, y * stride + ry, x * stride + rx] * kernel[f, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="conv")
    return data, kernel, padded, out


def conv2d_ref(d: np.ndarray, k: np.ndarray, pad: int, stride: int = 1) -> np.ndarray:
    """numpy reference of :func:`conv2d`."""
    n, ci, h, w = d.shape
    co, _, kh, kw = k.shape
    p = np.pad(d, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((n, co, oh, ow), dtype=np.float64)
    for y in range(kh):
        for x in range(kw):
            win = p[:, :, y:y + stride * oh:stride, x:x + stride * ow:stride]
            out += np.einsum("bchw,fc->bfhw", win, k[:, :, y, x])
    return out.astype(d.dtype)


def run_lowered(sch, args, arrays):
    """Lower ``sch`` and run it on ``arrays`` with the interpreter; returns the PrimFunc."""
    func = lower(sch, args)
    run(func, *arrays)
    return func


def rand(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-8, 8, size=shape).astype(dtype)
    return rng.random(shape, dtype=np.float64).astype(dtype)


def loops(func) -> list[S.For]:
    """Every ``For`` of a lowered function, outer loops before the loops inside them."""
    found: list[S.For] = []

    class _Loops(Visitor):
        def visit_For(self, node: S.For) -> None:
            found.append(node)
            self.generic_visit(node)

    _Loops().visit(func.body)
    return found
