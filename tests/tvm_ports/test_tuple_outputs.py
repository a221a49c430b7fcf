"""TVM scripts whose computations have several outputs: an argmax written as a tuple reduction
with ``te.comm_reducer`` (the reduction tutorial's last example, over symbolic sizes too), one
scheduled by split and a cache of its accumulators, and an elementwise compute returning two
values.  Each output equals numpy; a primitive that cannot apply to several outputs says so."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import ScheduleError

RNG = np.random.default_rng(8)


def argmax_reducer():
    def combine(x, y):
        take_x = x[1] >= y[1]
        return tvm.tir.Select(take_x, x[0], y[0]), tvm.tir.Select(take_x, x[1], y[1])

    def identity(index_dtype, value_dtype):
        return tvm.tir.const(-1, index_dtype), te.min_value(value_dtype)

    return te.comm_reducer(combine, identity, name="argmax")


def argmax_of(rows, cols):
    idx = te.placeholder((rows, cols), name="idx", dtype="int32")
    val = te.placeholder((rows, cols), name="val")
    k = te.reduce_axis((0, cols), name="k")
    where, largest = te.compute((rows,), lambda i: argmax_reducer()((idx[i, k], val[i, k]), axis=k), name="T")
    return idx, val, where, largest


def run_argmax(f, rows, cols):
    values = RNG.standard_normal((rows, cols)).astype("float32")
    index = np.tile(np.arange(cols, dtype="int32"), (rows, 1))
    where, largest = tvm.nd.empty((rows,), "int32"), tvm.nd.empty((rows,))
    f(tvm.nd.array(index), tvm.nd.array(values), where, largest)
    np.testing.assert_array_equal(where.numpy(), values.argmax(axis=1))
    np.testing.assert_array_equal(largest.numpy(), values.max(axis=1))


@pytest.mark.parametrize("plan", ["plain", "split", "cache_write", "cache_write_both", "symbolic"])
def test_an_argmax_as_a_tuple_reduction(plan: str) -> None:
    if plan == "symbolic":
        idx, val, where, largest = argmax_of(te.var("m"), te.var("n"))
    else:
        idx, val, where, largest = argmax_of(7, 30)
    s = te.create_schedule(where.op)
    assert s[where] is s[largest]  # one stage computes both
    if plan == "split":
        ko, ki = s[where].split(s[where].op.reduce_axis[0], factor=8)
        s[where].reorder(ko, ki)
    elif plan.startswith("cache_write"):
        if plan == "cache_write_both":  # TVM's form: every output of the operation
            acc, acc_value = s.cache_write([where, largest], "local")
            assert acc.op is acc_value.op and acc_value.dtype == "float32"
        else:
            acc = s.cache_write(where, "local")
        outer, _ = s[where].split(where.op.axis[0], factor=4)
        s[acc].compute_at(s[where], outer)
    f = tvm.build(s, [idx, val, where, largest], "llvm")
    run_argmax(f, 7, 30)
    if plan == "symbolic":
        run_argmax(f, 3, 5)


def test_an_elementwise_compute_of_two_outputs_one_kept_inside():
    a = te.placeholder((5, 6), name="A")
    twice, square = te.compute((5, 6), lambda i, j: (a[i, j] * 2.0, a[i, j] * a[i, j]), name="pair")
    total = te.compute((5, 6), lambda i, j: twice[i, j] + square[i, j], name="total")
    s = te.create_schedule(total.op)
    s[twice].compute_at(s[total], total.op.axis[0])
    f = tvm.build(s, [a, twice, total], "llvm")
    x = RNG.standard_normal((5, 6)).astype("float32")
    got_twice, got_total = tvm.nd.empty((5, 6)), tvm.nd.empty((5, 6))
    f(tvm.nd.array(x), got_twice, got_total)
    np.testing.assert_allclose(got_twice.numpy(), 2 * x, rtol=1e-6)
    np.testing.assert_allclose(got_total.numpy(), 2 * x + x * x, rtol=1e-6)


def test_primitives_that_do_not_apply_to_several_outputs_say_so():
    a = te.placeholder((4,), name="A")
    first, second = te.compute((4,), lambda i: (a[i] + 1.0, a[i] - 1.0), name="pair")
    out = te.compute((4,), lambda i: first[i] * second[i], name="out")
    s = te.create_schedule(out.op)
    with pytest.raises(ScheduleError, match="2 outputs cannot be inlined"):
        s[first].compute_inline()
    idx, val, where, _ = argmax_of(4, 16)
    s = te.create_schedule(where.op)
    _, ki = s[where].split(s[where].op.reduce_axis[0], factor=4)
    with pytest.raises(ScheduleError, match="tuple reduction"):
        s.rfactor(where, ki)
