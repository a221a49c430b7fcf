"""The numpy references agree with direct loop-nest definitions (TVM's formulas, written plainly)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tunecli.topi import testing

RNG = np.random.default_rng(3)


def naive_conv(a, w, stride, pad, dilation, groups_depthwise=False):
    n, c, h, wd = a.shape
    if groups_depthwise:
        _, m, kh, kw = w.shape
        co = c * m
    else:
        co, _, kh, kw = w.shape
    pt, pl, pb, pr = pad
    oh = (h + pt + pb - (kh - 1) * dilation - 1) // stride + 1
    ow = (wd + pl + pr - (kw - 1) * dilation - 1) // stride + 1
    out = np.zeros((n, co, oh, ow))
    for b, f, y, x in itertools.product(range(n), range(co), range(oh), range(ow)):
        acc = 0.0
        for ry, rx in itertools.product(range(kh), range(kw)):
            iy, ix = y * stride + ry * dilation - pt, x * stride + rx * dilation - pl
            if 0 <= iy < h and 0 <= ix < wd:
                if groups_depthwise:
                    acc += a[b, f // m, iy, ix] * w[f // m, f % m, ry, rx]
                else:
                    acc += sum(a[b, ci, iy, ix] * w[f, ci, ry, rx] for ci in range(c))
        out[b, f, y, x] = acc
    return out


@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2)])
def test_conv2d_reference(stride, dilation):
    a = RNG.standard_normal((1, 2, 6, 5))
    w = RNG.standard_normal((3, 2, 3, 2))
    got = testing.conv2d_nchw_python(a, w, stride, (1, 0, 2, 1), dilation)
    np.testing.assert_allclose(got, naive_conv(a, w, stride, (1, 0, 2, 1), dilation), rtol=1e-12)


def test_depthwise_reference():
    a = RNG.standard_normal((1, 3, 6, 6))
    w = RNG.standard_normal((3, 2, 3, 3))
    got = testing.depthwise_conv2d_python_nchw(a, w, 2, 1, 1)
    np.testing.assert_allclose(got, naive_conv(a, w, 2, (1, 1, 1, 1), 1, groups_depthwise=True), rtol=1e-12)


def naive_pool(a, k, s, d, pad, pool_type, ceil_mode, include_pad):
    """TVM's ``pool_impl_nd`` formulas, one output at a time."""
    n, c, h, w = a.shape
    pt, pl, pb, pr = pad
    off = s - 1 if ceil_mode else 0
    oh = (h + pt + pb + off - ((k - 1) * d + 1)) // s + 1
    ow = (w + pl + pr + off - ((k - 1) * d + 1)) // s + 1
    out = np.zeros((n, c, oh, ow))
    for b, ch, y, x in itertools.product(range(n), range(c), range(oh), range(ow)):
        vals = []
        for ry, rx in itertools.product(range(k), range(k)):
            iy, ix = y * s + ry * d - pt, x * s + rx * d - pl
            inside = 0 <= iy < h and 0 <= ix < w
            vals.append(a[b, ch, iy, ix] if inside else (-np.inf if pool_type == "max" else 0.0))
        if pool_type == "max":
            out[b, ch, y, x] = max(vals)
            continue

        def count(o, before, after, size):
            start = o * s - before
            end = start + (k - 1) * d
            if include_pad:
                end = min(end, size + after - 1)
                return (end - start) // d + 1
            jumps = max((d - 1 - start) // d, 0)
            end = min(end, size - 1)
            return max((end - (start + jumps * d)) // d + 1, 0)

        num = max(count(y, pt, pb, h) * count(x, pl, pr, w), 1)
        out[b, ch, y, x] = sum(vals) / num
    return out


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("k,s,d,pad,ceil_mode,include_pad", [
    (2, 2, 1, (0, 0, 0, 0), False, True),
    (3, 2, 1, (1, 1, 1, 1), True, True),
    (3, 2, 1, (1, 0, 1, 2), True, False),
    (2, 3, 2, (1, 1, 0, 0), True, True),
    (3, 1, 1, (2, 2, 2, 2), False, False),
])
def test_pool_reference(pool_type, k, s, d, pad, ceil_mode, include_pad):
    a = RNG.standard_normal((1, 2, 7, 6))
    got = testing.pool2d_nchw_python(a, k, s, d, pad, pool_type, ceil_mode, include_pad)
    want = naive_pool(a, k, s, d, pad, pool_type, ceil_mode, include_pad)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_integer_references_are_exact():
    x = RNG.integers(-128, 128, (2, 3, 64)).astype(np.int8)
    y = RNG.integers(-128, 128, (2, 5, 64)).astype(np.int8)
    got = testing.batch_matmul(x, y, out_dtype="int32")
    want = np.einsum("bik,bjk->bij", x.astype(np.int64), y.astype(np.int64))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(testing.dense_python(x[0], y[0], out_dtype="int32"), want[0])
