"""A TVM user's TOPI script with ``import tunecli as tvm``: operators called on te tensors
(reductions, broadcast arithmetic with tensors and numbers, math, softmax, layout changes, a
convolution followed by an activation), scheduled with ``te.create_schedule`` and built; each
equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te, topi
from tunecli.errors import TuneError

RNG = np.random.default_rng(11)


def run(outs, inputs, arrays):
    """Build one kernel computing ``outs`` from ``inputs`` and return the outputs as numpy."""
    outs = outs if isinstance(outs, list) else [outs]
    s = te.create_schedule([o.op for o in outs])
    f = tvm.build(s, [*inputs, *outs], "llvm")
    results = [tvm.nd.empty(topi.utils.get_const_tuple(o.shape), o.dtype) for o in outs]
    f(*[tvm.nd.array(a) for a in arrays], *results)
    return [r.numpy() for r in results]


def test_a_sum_over_one_axis_and_over_all():
    a = te.placeholder((6, 5, 4), name="a")
    x = RNG.standard_normal((6, 5, 4)).astype("float32")
    row, whole, kept = run([topi.sum(a, axis=1), topi.sum(a), topi.max(a, axis=(0, 2), keepdims=True)],
                           [a], [x])
    np.testing.assert_allclose(row, x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(whole, x.sum(), rtol=1e-4)
    np.testing.assert_array_equal(kept, x.max(axis=(0, 2), keepdims=True))


def test_broadcast_arithmetic_between_tensors_and_with_numbers():
    a = te.placeholder((4, 3), name="a")
    b = te.placeholder((3,), name="b")
    x = RNG.standard_normal((4, 3)).astype("float32")
    y = RNG.uniform(1, 2, 3).astype("float32")
    outs = [topi.add(a, b), topi.multiply(a, b), topi.subtract(2.0, a), topi.divide(a, b),
            topi.maximum(a, 0.0), topi.power(topi.abs(a), 2.0)]
    got = run(outs, [a, b], [x, y])
    want = [x + y, x * y, 2.0 - x, x / y, np.maximum(x, 0), np.abs(x) ** 2]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_math_softmax_and_layout_operators():
    a = te.placeholder((2, 3, 20), name="a")
    x = RNG.standard_normal((2, 3, 20)).astype("float32")
    outs = [topi.nn.softmax(a, axis=-1), topi.nn.log_softmax(a, axis=1), topi.exp(a), topi.sigmoid(a),
            topi.transpose(a, (2, 0, 1)), topi.reshape(a, (6, 20)), topi.nn.flatten(a),
            topi.cast(a, "float16"), topi.nn.leaky_relu(a, 0.1)]
    got = run(outs, [a], [x])
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    lse = np.log(np.exp(x).sum(axis=1, keepdims=True))
    want = [e / e.sum(axis=-1, keepdims=True), x - lse, np.exp(x), 1 / (1 + np.exp(-x)), x.transpose(2, 0, 1),
            x.reshape(6, 20), x.reshape(2, 60), x.astype("float16"), np.where(x > 0, x, 0.1 * x)]
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def test_concatenate_and_slice():
    a, b = te.placeholder((2, 3), name="a"), te.placeholder((2, 5), name="b")
    x, y = RNG.standard_normal((2, 3)).astype("float32"), RNG.standard_normal((2, 5)).astype("float32")
    joined, sliced = run([topi.concatenate([a, b], axis=1), topi.strided_slice(b, [0, 1], [2, 5], [1, 2])],
                         [a, b], [x, y])
    np.testing.assert_array_equal(joined, np.concatenate([x, y], axis=1))
    np.testing.assert_array_equal(sliced, y[0:2, 1:5:2])


def test_a_convolution_then_relu_scheduled_by_the_user():
    data = te.placeholder((1, 3, 10, 10), name="data")
    kernel = te.placeholder((4, 3, 3, 3), name="kernel")
    conv = topi.nn.conv2d(data, kernel, strides=1, padding=1, dilation=1)
    out = topi.nn.relu(conv)
    s = te.create_schedule(out.op)
    s[conv].compute_at(s[out], out.op.axis[1])
    f = tvm.build(s, [data, kernel, out], "llvm")
    x = RNG.standard_normal((1, 3, 10, 10)).astype("float32")
    w = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    o = tvm.nd.empty((1, 4, 10, 10))
    f(tvm.nd.array(x), tvm.nd.array(w), o)
    want = np.maximum(topi.testing.conv2d_nchw_python(x, w, 1, 1), 0)
    np.testing.assert_allclose(o.numpy(), want, rtol=1e-4, atol=1e-4)


def test_constant_shapes_read_back_as_ints():
    a = te.placeholder((3, 7), name="a")
    assert topi.utils.get_const_tuple(topi.transpose(a).shape) == (7, 3)
    assert topi.utils.get_const_int(tvm.tir.const(4, "int32") * 2) == 8


def test_bad_calls_name_the_operator():
    a = te.placeholder((4, 3), name="a")
    with pytest.raises(TuneError, match="multiply"):
        topi.multiply(a, te.placeholder((5,), name="b"))
    with pytest.raises(TuneError, match="NHWC"):
        topi.nn.conv2d(a, a, 1, 0, 1, data_layout="NHWC")
    with pytest.raises(TuneError, match="not a constant"):
        topi.utils.get_const_int(te.var("n"))


@pytest.mark.parametrize("schedule_module", ["generic", "x86"])
def test_topi_schedules_of_injective_reduce_and_softmax_outputs(schedule_module: str):
    a = te.placeholder((8, 40), name="a")
    b = te.placeholder((40,), name="b")
    x = RNG.standard_normal((8, 40)).astype("float32")
    y = RNG.standard_normal(40).astype("float32")
    schedules = getattr(topi, schedule_module)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    cases = [
        (topi.exp(topi.add(a, b)), schedules.schedule_injective, [a, b], np.exp(x + y)),
        (topi.sum(a, axis=1), schedules.schedule_reduce, [a], x.sum(axis=1)),
        (topi.nn.softmax(a), schedules.schedule_softmax, [a], e / e.sum(axis=1, keepdims=True)),
    ]
    with tvm.target.Target("llvm"):
        for out, schedule, inputs, want in cases:
            s = schedule(out)
            f = tvm.build(s, [*inputs, out])
            got = tvm.nd.empty(topi.utils.get_const_tuple(out.shape))
            f(*[tvm.nd.array(v) for v in (x, y)[:len(inputs)]], got)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)


def test_the_topi_introduction_over_symbolic_sizes():
    n, m = te.var("n"), te.var("m")
    a = te.placeholder((n, m), name="A")
    row_sum = topi.sum(a, axis=1)
    text = str(tvm.lower(te.create_schedule(row_sum.op), [a, row_sum], simple_mode=True))
    assert "float32[n, m]" in text and "for (k1, 0, m)" in text
    x, y, z = te.var("x"), te.var("y"), te.var("z")
    big, small = te.placeholder((x, y, z), name="a"), te.placeholder((y, z), name="b")
    c = big + small                    # tensors broadcast as TVM's do once topi is imported
    d = big * small
    e = topi.elemwise_sum([c, d])
    f = e / 2.0
    g = topi.sum(f)
    func = tvm.build(te.create_schedule(g.op), [big, small, g], "llvm")
    for shape in ((3, 4, 5), (2, 1, 7)):
        p = RNG.standard_normal(shape).astype("float32")
        q = RNG.standard_normal(shape[1:]).astype("float32")
        out = tvm.nd.empty(())
        func(tvm.nd.array(p), tvm.nd.array(q), out)
        np.testing.assert_allclose(out.numpy(), ((p + q + p * q) / 2).sum(), rtol=1e-4)


def test_tensor_arithmetic_names_shapes_that_do_not_broadcast():
    with pytest.raises(TuneError, match="add: shapes .* do not broadcast"):
        _ = te.placeholder((4, 3), name="a") + te.placeholder((2,), name="b")
    with pytest.raises(TuneError, match="symbolic sizes"):
        topi.transpose(te.placeholder((te.var("n"), 3), name="a"))
