"""GPU schedules of TVM scripts lowered for ``cuda`` and run in the grid simulator (blocks of
threads in lock-step between barriers, shared-memory races detected): shared operand tiles
padded by ``storage_align`` (TVM's guard against bank conflicts), an argmax tuple reduction with
one thread per row, and a vector add over a symbolic size specialised to the arrays' length.
Each equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.gpu_kernels import tiled_matmul
from tests.engine.lower.gpu_simulator import run_grid
from tunecli import te, tir
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.lower import lower
from tunecli.engine.lower.specialize import sizes_of, specialize

RNG = np.random.default_rng(6)


def shared_sizes(func: S.PrimFunc) -> dict[str, int]:
    found: dict[str, int] = {}
    post_order(func.body, lambda n: found.__setitem__(n.buffer.name, n.buffer.size)
               if isinstance(n, S.Allocate) and n.buffer.scope == "shared" else None)
    return found


@pytest.mark.parametrize("reverse", [False, True])
def test_shared_tiles_padded_by_storage_align(reverse: bool):
    s, (a, b, c) = tiled_matmul(32, 8, shared=True)
    shared = [st for st in s.stages if st.scope == "shared"]
    for st in shared:
        st.storage_align(st.op.axis[0], 8, 1)  # rows of 8 floats stored 9 apart
    func = lower(s, [a, b, c], "matmul", target="cuda")
    assert shared_sizes(func) == {"A.shared": 8 * 9, "B.shared": 8 * 9}  # unpadded: 64 each
    x, y = (RNG.uniform(-1, 1, (32, 32)).astype("float32") for _ in range(2))
    out = np.full((32, 32), np.nan, "float32")
    run_grid(func, x, y, out, reverse=reverse)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def test_an_argmax_with_one_thread_per_row():
    def combine(x, y):
        keep = x[1] >= y[1]
        return tir.Select(keep, x[0], y[0]), tir.Select(keep, x[1], y[1])

    argmax = te.comm_reducer(combine, lambda ti, tv: (tir.const(-1, ti), te.min_value(tv)), name="argmax")
    idx = te.placeholder((64, 20), name="idx", dtype="int32")
    val = te.placeholder((64, 20), name="val")
    k = te.reduce_axis((0, 20), name="k")
    where, largest = te.compute((64,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(where.op)
    bx, tx = s[where].split(where.op.axis[0], factor=16)
    s[where].bind(bx, te.thread_axis("blockIdx.x"))
    s[where].bind(tx, te.thread_axis("threadIdx.x"))
    func = lower(s, [idx, val, where, largest], "argmax", target="cuda")
    values = RNG.standard_normal((64, 20)).astype("float32")
    index = np.tile(np.arange(20, dtype="int32"), (64, 1))
    got_where, got_largest = np.full(64, -7, "int32"), np.full(64, np.nan, "float32")
    run_grid(func, index, values, got_where, got_largest)
    np.testing.assert_array_equal(got_where, values.argmax(axis=1))
    np.testing.assert_array_equal(got_largest, values.max(axis=1))


def test_a_symbolic_size_specialised_for_a_gpu_schedule():
    n = te.var("n")
    a, b = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    c = te.compute((n,), lambda i: a[i] + b[i], name="C")
    s = te.create_schedule(c.op)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, te.thread_axis("blockIdx.x"))
    s[c].bind(tx, te.thread_axis("threadIdx.x"))
    for length in (100, 64):
        x, y = RNG.standard_normal(length).astype("float32"), RNG.standard_normal(length).astype("float32")
        out = np.full(length, np.nan, "float32")
        sizes = sizes_of([a, b, c], [x.shape, y.shape, out.shape], "vector add")
        s2, args = specialize(s, [a, b, c], sizes)
        result = run_grid(lower(s2, args, "vadd", target="cuda"), x, y, out)
        assert result["grid"][0] == -(-length // 32)
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
