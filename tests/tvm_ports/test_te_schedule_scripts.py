"""TVM users' tensor-expression scripts with ``import tunecli as tvm``: the schedule primitives
walked through one at a time (split by factor and by parts, tile, fuse, reorder, compute_at,
compute_inline, compute_root), reductions (split reduce axes, rfactor computed at the consumer,
a custom commutative reducer, a guarded reduction, several reduce axes), cache_read and
cache_write around a matrix product, a group computed at a tile and a normalized schedule, and
the ``tvm.tir`` expression nodes.  Every built kernel equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import ScheduleError

RNG = np.random.default_rng(5)


def build_and_run(s, args, arrays, out_shapes, dtype="float32"):
    f = tvm.build(s, args, "llvm")
    outs = [tvm.nd.empty(shape, dtype) for shape in out_shapes]
    f(*[tvm.nd.array(a) for a in arrays], *outs)
    return [o.numpy() for o in outs]


def copy_2d(m=45, n=38):
    a = te.placeholder((m, n), name="A")
    b = te.compute((m, n), lambda i, j: a[i, j] * 3.0, name="B")
    return a, b


@pytest.mark.parametrize("plan", ["split_factor", "split_nparts", "tile", "fuse", "reorder",
                                  "tile_fuse_reorder"])
def test_each_loop_primitive_keeps_the_result(plan: str) -> None:
    a, b = copy_2d()
    s = te.create_schedule(b.op)
    i, j = b.op.axis
    if plan == "split_factor":
        s[b].split(i, factor=32)
    elif plan == "split_nparts":
        s[b].split(j, nparts=5)
    elif plan == "tile":
        s[b].tile(i, j, x_factor=10, y_factor=5)
    elif plan == "fuse":
        s[b].fuse(i, j)
    elif plan == "reorder":
        s[b].reorder(j, i)
    else:
        io, jo, ii, ji = s[b].tile(i, j, x_factor=8, y_factor=16)
        fused = s[b].fuse(ii, ji)
        s[b].reorder(jo, io, fused)
        s[b].parallel(jo)
    x = RNG.standard_normal((45, 38)).astype("float32")
    (got,) = build_and_run(s, [a, b], [x], [(45, 38)])
    np.testing.assert_allclose(got, x * 3.0, rtol=1e-6)


def test_the_printed_loop_nest_shows_the_split_and_the_parts():
    a, b = copy_2d()
    s = te.create_schedule(b.op)
    outer, inner = s[b].split(b.op.axis[0], nparts=3)
    text = str(tvm.lower(s, [a, b], simple_mode=True))
    assert outer.var.name in text and inner.var.name in text
    assert "3" in text.split(outer.var.name, 2)[1].splitlines()[0]  # the outer loop runs 3 times


@pytest.mark.parametrize("placement", ["compute_at", "compute_inline", "compute_root"])
def test_a_producer_placed_three_ways(placement: str) -> None:
    m = 40
    a = te.placeholder((m,), name="A")
    b = te.compute((m,), lambda i: a[i] + 1.0, name="B")
    c = te.compute((m,), lambda i: b[i] * 2.0, name="C")
    s = te.create_schedule(c.op)
    if placement == "compute_at":
        s[b].compute_at(s[c], c.op.axis[0])
    elif placement == "compute_inline":
        s[b].compute_inline()
    else:
        s[b].compute_at(s[c], c.op.axis[0])
        s[b].compute_root()
    text = str(tvm.lower(s, [a, c], simple_mode=True))
    assert ("B[" in text) == (placement != "compute_inline")
    x = RNG.standard_normal(m).astype("float32")
    (got,) = build_and_run(s, [a, c], [x], [(m,)])
    np.testing.assert_allclose(got, (x + 1) * 2, rtol=1e-6)


def row_sum(n=70, m=45):
    a = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    b = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="B")
    return a, b


@pytest.mark.parametrize("plan", ["split_both", "rfactor", "rfactor_at_consumer", "rfactor_axis_1"])
def test_a_row_sum_under_the_reduction_schedules(plan: str) -> None:
    a, b = row_sum()
    s = te.create_schedule(b.op)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=16)
    if plan == "split_both":
        xo, xi = s[b].split(b.op.axis[0], factor=32)
        s[b].reorder(xo, ko, xi, ki)
    elif plan == "rfactor":
        s.rfactor(b, ki)
    elif plan == "rfactor_at_consumer":
        bf = s.rfactor(b, ki)
        xo, xi = s[b].split(s[b].op.axis[0], factor=32)
        s[bf].compute_at(s[b], s[b].op.reduce_axis[0])
    else:
        bf = s.rfactor(b, ki, factor_axis=1)
        assert tuple(bf.shape) == (70, 16)
    x = RNG.standard_normal((70, 45)).astype("float32")
    (got,) = build_and_run(s, [a, b], [x], [(70,)])
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-4, atol=1e-5)


def test_a_custom_reducer_a_guarded_reduction_and_two_reduce_axes():
    a = te.placeholder((6, 9), name="A")
    product = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, dtype=t), name="product")
    k = te.reduce_axis((0, 9), name="k")
    prod = te.compute((6,), lambda i: product(a[i, k], axis=k), name="prod")
    k2 = te.reduce_axis((0, 9), name="k2")
    tail_max = te.compute((6,), lambda i: te.max(a[i, k2], axis=k2, where=k2 >= 4), name="tail_max")
    r0, r1 = te.reduce_axis((0, 6), name="r0"), te.reduce_axis((0, 9), name="r1")
    total = te.compute((1,), lambda _: te.sum(a[r0, r1], axis=[r0, r1]), name="total")
    s = te.create_schedule([prod.op, tail_max.op, total.op])
    x = RNG.uniform(0.5, 1.5, (6, 9)).astype("float32")
    got = build_and_run(s, [a, prod, tail_max, total], [x], [(6,), (6,), (1,)])
    np.testing.assert_allclose(got[0], x.prod(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(got[1], x[:, 4:].max(axis=1))
    np.testing.assert_allclose(got[2], [x.sum()], rtol=1e-5)


def test_cache_read_and_cache_write_around_a_matrix_product():
    n = 64
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = te.create_schedule(c.op)
    aa = s.cache_read(a, "local", [c])
    cc = s.cache_write(c, "local")
    io, jo, ii, ji = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 16)
    s[cc].compute_at(s[c], jo)
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=4)
    s[aa].compute_at(s[cc], ko)
    s[cc].vectorize(s[cc].op.axis[1])
    text = str(tvm.lower(s, [a, b, c], simple_mode=True))
    assert "A.local" in text and "C.local" in text
    x, y = RNG.standard_normal((n, n)).astype("float32"), RNG.standard_normal((n, n)).astype("float32")
    (got,) = build_and_run(s, [a, b, c], [x, y], [(n, n)])
    np.testing.assert_allclose(got, x @ y, rtol=1e-4, atol=1e-4)


def test_a_group_computed_at_a_tile_of_its_consumer_and_a_normalized_schedule():
    m = 48
    x = te.placeholder((m,), name="x")
    x1 = te.compute((m,), lambda i: x[i] + 1.0, name="x1")
    x2 = te.compute((m,), lambda i: x1[i] * 2.0, name="x2")
    x3 = te.compute((m,), lambda i: x2[i] - 3.0, name="x3")
    s = te.create_schedule(x3.op)
    g = s.create_group(outputs=x2, inputs=x)
    assert s[x1].group is g and s[x2].group is g
    outer, _ = s[x3].split(x3.op.axis[0], factor=8)
    g.compute_at(s[x3], outer)
    s = s.normalize()
    v = RNG.standard_normal(m).astype("float32")
    (got,) = build_and_run(s, [x, x3], [v], [(m,)])
    np.testing.assert_allclose(got, (v + 1) * 2 - 3, rtol=1e-6)


def test_tir_nodes_and_functions_build_expressions():
    a = te.placeholder((5, 7), name="A")
    b = te.compute((5, 7), lambda i, j: tvm.tir.Select(a[i, j] > 0.0,
                                                       tvm.tir.Min(a[i, j], tvm.tir.const(0.5)),
                                                       tvm.tir.max(a[i, j], -0.5)), name="B")
    c = te.compute((5, 7), lambda i, j: tvm.tir.Add(a[i, j], a[i, 6 - j]), name="C")
    s = te.create_schedule([b.op, c.op])
    x = RNG.standard_normal((5, 7)).astype("float32")
    got_b, got_c = build_and_run(s, [a, b, c], [x], [(5, 7), (5, 7)])
    np.testing.assert_array_equal(got_b, np.where(x > 0, np.minimum(x, 0.5), np.maximum(x, -0.5)))
    np.testing.assert_array_equal(got_c, x + x[:, ::-1])


@pytest.mark.parametrize("factor, offset, stride", [(32, 1, 33), (8, 0, 32), (16, 4, 36)])
def test_storage_align_pads_the_rows_of_a_temporary(factor: int, offset: int, stride: int):
    a = te.placeholder((12, 30), name="A")
    b = te.compute((12, 30), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((12, 30), lambda i, j: b[i, j] + 1.0, name="C")
    s = te.create_schedule(c.op)
    s[b].storage_align(b.op.axis[0], factor, offset)
    text = str(tvm.lower(s, [a, c], simple_mode=True))
    assert f"allocate B[float32 * {12 * stride}]" in text  # each of the 12 rows padded to the stride
    assert f"(i * {stride})" in text
    x = RNG.standard_normal((12, 30)).astype("float32")
    (got,) = build_and_run(s, [a, c], [x], [(12, 30)])
    np.testing.assert_allclose(got, x * 2.0 + 1.0, rtol=1e-6)


def test_storage_align_of_a_shared_cache_computed_at_a_tile():
    n = 32
    a, b = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = te.create_schedule(c.op)
    aa = s.cache_read(a, "shared", [c])
    io, jo, _, _ = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 8)
    s[aa].compute_at(s[c], jo)
    s[aa].storage_align(aa.op.axis[0], 16, 1)
    x, y = RNG.standard_normal((n, n)).astype("float32"), RNG.standard_normal((n, n)).astype("float32")
    (got,) = build_and_run(s, [a, b, c], [x, y], [(n, n)])
    np.testing.assert_allclose(got, x @ y, rtol=1e-4, atol=1e-4)


def test_storage_align_names_a_bad_axis_or_factor():
    a, b = copy_2d()
    s = te.create_schedule(b.op)
    outer, _ = s[b].split(b.op.axis[0], factor=4)
    with pytest.raises(ScheduleError, match="not one of the operation's axes"):
        s[b].storage_align(outer, 8, 0)
    with pytest.raises(ScheduleError, match="factor > 0"):
        s[b].storage_align(b.op.axis[0], 0, 0)


def test_shape_entries_answer_as_tvm_int_constants():
    a = te.placeholder((6, 4), name="A")
    b = te.compute((a.shape[1], a.shape[0]), lambda i, j: a[j, i], name="B")
    rows, cols = [x.value for x in b.shape]  # as older TVM scripts read shapes
    assert (rows, cols) == (4, 6) and b.shape[0].dtype == "int32"
    assert b.shape == (4, 6) and isinstance(b.shape[0], int)
    x = RNG.standard_normal((6, 4)).astype("float32")
    (got,) = build_and_run(te.create_schedule(b.op), [a, b], [x], [tuple(b.shape)])
    np.testing.assert_array_equal(got, x.T)


def test_te_schedule_auto_inline_of_elementwise_broadcast_and_injective_stages():
    a = te.placeholder((6, 8), name="A")
    bias = te.placeholder((8,), name="bias")
    scaled = te.compute((6, 8), lambda i, j: a[i, j] * 2.0, name="scaled")          # elementwise
    shifted = te.compute((6, 8), lambda i, j: scaled[i, j] + bias[j], name="shifted")  # broadcast
    flipped = te.compute((6, 8), lambda i, j: shifted[5 - i, j], name="flipped")    # injective
    k = te.reduce_axis((0, 8), name="k")
    total = te.compute((6,), lambda i: te.sum(flipped[i, k], axis=k), name="total")

    def inlined(rule):
        s = te.create_schedule(total.op)
        rule(s)
        return s, sorted(st.op.name for st in s.stages if st.attach_type == "inline")

    assert inlined(te.schedule.AutoInlineElemWise)[1] == ["scaled"]
    assert inlined(te.schedule.AutoInlineBroadcast)[1] == ["scaled", "shifted"]
    s, names = inlined(te.schedule.AutoInlineInjective)
    assert names == ["flipped", "scaled", "shifted"]
    x, y = RNG.standard_normal((6, 8)).astype("float32"), RNG.standard_normal(8).astype("float32")
    (got,) = build_and_run(s, [a, bias, total], [x, y], [(6,)])
    np.testing.assert_allclose(got, (x * 2 + y)[::-1].sum(axis=1), rtol=1e-5)


def test_auto_inline_leaves_scheduled_stages_alone():
    a = te.placeholder((16,), name="A")
    b = te.compute((16,), lambda i: a[i] + 1.0, name="B")
    c = te.compute((16,), lambda i: b[i] * 2.0, name="C")
    s = te.create_schedule(c.op)
    outer, _ = s[c].split(c.op.axis[0], factor=4)
    s[b].compute_at(s[c], outer)
    te.schedule.AutoInlineInjective(s)
    assert s[b].attach_type == "scope" and isinstance(s[c].relations[0], te.schedule.Split)


def test_build_takes_tvms_target_host_argument():
    a, b = copy_2d(8, 8)
    s = te.create_schedule(b.op)
    f = tvm.build(s, [a, b], "llvm", target_host="llvm", name="triple")
    assert f.entry_name == "triple"
    x = RNG.standard_normal((8, 8)).astype("float32")
    out = tvm.nd.empty((8, 8))
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * 3.0, rtol=1e-6)
