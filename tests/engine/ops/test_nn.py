"""Each operator's compute definition, built with a default schedule, matches its numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import topi
from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.ops import reference
from tunecli.engine.schedule import create_schedule
from tunecli.errors import ExprError

RNG = np.random.default_rng(7)


def rand(shape, dtype="float32"):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-128, 128, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def run(out, inputs, arrays, inline=()):
    """Build ``out`` with a default schedule (inlining the stages in ``inline``) and run it."""
    s = create_schedule(out.op)
    for t in inline:
        s[t].compute_inline()
    mod = build(s, list(inputs) + [out], target="llvm")
    result = np.zeros(out.shape, dtype=out.dtype)
    mod(*arrays, result)
    return result


@pytest.mark.parametrize("stride,padding,dilation,inline", [
    (1, 1, 1, False), (2, (1, 2), 1, True), ((1, 2), "SAME", 2, False), (1, (0, 1, 2, 0), 1, True),
])
def test_conv2d_nchw(stride, padding, dilation, inline):
    data = te.placeholder((2, 3, 7, 6), name="data")
    kernel = te.placeholder((4, 3, 3, 2), name="kernel")
    out = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation)
    a, w = rand(data.shape), rand(kernel.shape)
    pad_stage = out.op.input_tensors[0]
    got = run(out, [data, kernel], [a, w], inline=[pad_stage] if inline else [])
    want = topi.testing.conv2d_nchw_python(a, w, stride, padding, dilation)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_conv2d_int8_accumulates_in_int32():
    data = te.placeholder((1, 16, 5, 5), dtype="int8", name="data")
    kernel = te.placeholder((3, 16, 3, 3), dtype="int8", name="kernel")
    out = topi.nn.conv2d_nchw(data, kernel, 1, 1, 1, out_dtype="int32")
    assert out.dtype == "int32"
    a, w = rand(data.shape, "int8"), rand(kernel.shape, "int8")
    got = run(out, [data, kernel], [a, w])
    want = topi.testing.conv2d_nchw_python(a, w, 1, 1, out_dtype="int32")
    assert np.abs(want).max() > 127 * 127  # the sums really need 32 bits
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("multiplier,stride,padding,dilation",
                         [(1, 1, 1, 1), (2, 2, (1, 0), 1), (3, 1, 0, 2)])
def test_depthwise_conv2d_nchw(multiplier, stride, padding, dilation):
    data = te.placeholder((1, 3, 8, 7), name="data")
    kernel = te.placeholder((3, multiplier, 3, 3), name="kernel")
    out = topi.nn.depthwise_conv2d_nchw(data, kernel, stride, padding, dilation)
    a, w = rand(data.shape), rand(kernel.shape)
    got = run(out, [data, kernel], [a, w])
    want = topi.testing.depthwise_conv2d_python_nchw(a, w, stride, padding, dilation)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("with_bias", [False, True])
def test_dense(with_bias):
    data = te.placeholder((5, 12), name="data")
    weight = te.placeholder((7, 12), name="weight")
    bias = te.placeholder((7,), name="bias") if with_bias else None
    out = topi.nn.dense(data, weight, bias)
    inputs = [data, weight] + ([bias] if with_bias else [])
    arrays = [rand(t.shape) for t in inputs]
    got = run(out, inputs, arrays)
    want = topi.testing.dense_python(*arrays)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dense_int8_and_packed_form():
    from tunecli.engine.ops.nn import dense_pack

    data = te.placeholder((3, 40), dtype="int8", name="data")
    weight = te.placeholder((32, 40), dtype="int8", name="weight")
    a, w = rand(data.shape, "int8"), rand(weight.shape, "int8")
    want = topi.testing.dense_python(a, w, out_dtype="int32")
    plain = topi.nn.dense(data, weight, out_dtype="int32")
    np.testing.assert_array_equal(run(plain, [data, weight], [a, w]), want)
    packed = dense_pack(data, weight, 16, out_dtype="int32")
    np.testing.assert_array_equal(run(packed, [data, weight], [a, w]), want)
    # panels that do not divide N (the last one padded), over padded rows: the same result
    ragged = dense_pack(data, weight, 5, out_dtype="int32", rows=8, panels=8)
    assert tuple(ragged.shape) == (3, 32) and tuple(ragged.op.input_tensors[0].shape) == (8, 40)
    np.testing.assert_array_equal(run(ragged, [data, weight], [a, w]), want)
    with pytest.raises(ExprError):
        dense_pack(data, weight, 5, panels=6)


@pytest.mark.parametrize("xb,yb,trans_a,trans_b", [
    (2, 2, False, True), (1, 3, False, True), (3, 1, True, False), (2, 2, True, True),
])
def test_batch_matmul(xb, yb, trans_a, trans_b):
    x = te.placeholder((xb, 6, 4) if trans_a else (xb, 4, 6), name="x")
    y = te.placeholder((yb, 5, 6) if trans_b else (yb, 6, 5), name="y")
    out = topi.nn.batch_matmul(x, y, transpose_a=trans_a, transpose_b=trans_b)
    a, b = rand(x.shape), rand(y.shape)
    got = run(out, [x, y], [a, b])
    want = topi.testing.batch_matmul(a, b, trans_x=trans_a, trans_y=trans_b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert got.shape == (max(xb, yb), 4, 5)
    with pytest.raises(ExprError, match="oshape"):
        topi.nn.batch_matmul(x, y, (1, 1, 1), transpose_a=trans_a, transpose_b=trans_b)


@pytest.mark.parametrize("pool_type,kernel,stride,dilation,padding,ceil_mode,include_pad", [
    ("max", 2, 2, 1, 0, False, True),
    ("max", 3, 2, 1, (1, 1), True, True),
    ("avg", 3, 1, 1, 1, False, True),
    ("avg", 3, 2, 1, (1, 0, 2, 1), False, False),
    ("avg", 3, 2, 2, 1, True, True),
    ("avg", (2, 3), (2, 1), 1, (1, 1), True, False),
])
def test_pool2d(pool_type, kernel, stride, dilation, padding, ceil_mode, include_pad):
    data = te.placeholder((2, 3, 9, 8), name="data")
    out = topi.nn.pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=ceil_mode,
                         count_include_pad=include_pad)
    a = rand(data.shape)
    got = run(out, [data], [a])
    want = topi.testing.pool2d_nchw_python(a, kernel, stride, dilation, padding, pool_type, ceil_mode,
                                           include_pad)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_int8_avg_pool_sums_in_int32():
    data = te.placeholder((1, 2, 6, 6), dtype="int8", name="data")
    out = topi.nn.pool2d(data, 3, 1, 1, 1, "avg", count_include_pad=False)
    a = np.full(data.shape, 100, dtype="int8")
    a[0, 0, 0, 0] = -101
    got = run(out, [data], [a])
    assert got.dtype == np.int8 and got[0, 1, 2, 2] == 100  # nine values of 100 do not wrap
    np.testing.assert_array_equal(got, topi.testing.pool2d_nchw_python(a, 3, 1, 1, 1, "avg", False, False))


def test_pad_relu_add_bias_add():
    data = te.placeholder((2, 3, 4), name="data")
    bias = te.placeholder((3,), name="bias")
    other = te.placeholder((3, 1), name="other")
    a, b, o = rand(data.shape), rand(bias.shape), rand(other.shape)

    padded = topi.nn.pad(data, [0, 1, 2], [1, 0, 1], pad_value=-3.0)
    np.testing.assert_array_equal(run(padded, [data], [a]),
                                  topi.testing.pad_python(a, [0, 1, 2], [1, 0, 1], -3.0))
    np.testing.assert_array_equal(run(topi.nn.relu(data), [data], [a]), topi.testing.relu_python(a))
    np.testing.assert_allclose(run(topi.add(data, other), [data, other], [a, o]), a + o)
    np.testing.assert_allclose(run(topi.add(data, 2.5), [data], [a]), a + np.float32(2.5))
    np.testing.assert_allclose(run(topi.nn.bias_add(data, bias, axis=1), [data, bias], [a, b]),
                               topi.testing.bias_add_python(a, b, axis=1))


def test_bad_arguments_raise_expr_error():
    data = te.placeholder((1, 3, 4, 4), name="data")
    with pytest.raises(ExprError):
        topi.nn.conv2d_nchw(data, te.placeholder((2, 4, 3, 3)), 1, 0, 1)
    with pytest.raises(ExprError):
        topi.nn.conv2d_nchw(data, te.placeholder((2, 3, 5, 5)), 1, 0, 1)
    with pytest.raises(ExprError):
        topi.nn.pad(data, [1, 1], [1, 1])
    with pytest.raises(ExprError):
        topi.nn.pool2d(data, 2, 2, 1, 0, "sum")
    with pytest.raises(ExprError):
        topi.add(data, te.placeholder((3, 5)))


def test_conv2d_nchwc_computes_on_blocked_layouts():
    data = te.placeholder((1, 2, 5, 6, 4), name="data")  # 8 channels in blocks of 4
    kernel = te.placeholder((3, 2, 3, 3, 4, 2), name="kernel")  # 6 filters in blocks of 2
    out = topi.nn.conv2d_NCHWc(data, kernel, (2, 1), (1, 0, 1, 2), (1, 2))
    a, w = rand(data.shape), rand(kernel.shape)
    want = reference.conv2d_NCHWc_python(a, w, (2, 1), (1, 0, 1, 2), (1, 2))
    np.testing.assert_allclose(run(out, [data, kernel], [a, w]), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ExprError, match="does not match the channel blocks"):
        topi.nn.conv2d_NCHWc(data, te.placeholder((3, 4, 3, 3, 2, 2)), 1, 1, 1)


def test_depthwise_conv2d_nchwc_reads_input_blocks_of_another_width():
    data = te.placeholder((1, 2, 6, 5, 4), name="data")  # 8 channels in blocks of 4
    kernel = te.placeholder((4, 1, 3, 3, 1, 2), name="kernel")  # output blocks of 2
    out = topi.nn.depthwise_conv2d_NCHWc(data, kernel, 1, 1, 1)
    a, w = rand(data.shape), rand(kernel.shape)
    want = reference.depthwise_conv2d_NCHWc_python(a, w, 1, 1, 1)
    assert want.shape == (1, 4, 6, 5, 2)
    np.testing.assert_allclose(run(out, [data, kernel], [a, w]), want, rtol=1e-5, atol=1e-5)
