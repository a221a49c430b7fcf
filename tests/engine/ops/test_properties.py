"""Property tests: window operators agree with their references on arbitrary small geometries."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli import topi
from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.schedule import create_schedule

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def window_geometry(draw):
    k = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    dilation = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    dk = [(k[i] - 1) * dilation[i] + 1 for i in range(2)]
    h = draw(st.integers(max(1, dk[0] - pad[0] - pad[2]), 7))
    w = draw(st.integers(max(1, dk[1] - pad[1] - pad[3]), 7))
    return h, w, k, stride, dilation, pad


def run(out, inputs, arrays):
    mod = build(create_schedule(out.op), list(inputs) + [out], target="llvm")
    result = np.zeros(out.shape, dtype=out.dtype)
    mod(*arrays, result)
    return result


@SETTINGS
@given(window_geometry(), st.integers(1, 3), st.integers(1, 3), st.integers(0, 2**31))
def test_conv2d_matches_reference(geometry, ci, co, seed):
    h, w, k, stride, dilation, pad = geometry
    rng = np.random.default_rng(seed)
    data = te.placeholder((1, ci, h, w), name="data")
    kernel = te.placeholder((co, ci) + k, name="kernel")
    out = topi.nn.conv2d_nchw(data, kernel, stride, pad, dilation)
    a = rng.standard_normal(data.shape).astype("float32")
    f = rng.standard_normal(kernel.shape).astype("float32")
    want = topi.testing.conv2d_nchw_python(a, f, stride, pad, dilation)
    np.testing.assert_allclose(run(out, [data, kernel], [a, f]), want, rtol=1e-5, atol=1e-5)


@SETTINGS
@given(window_geometry(), st.sampled_from(["max", "avg"]), st.booleans(), st.booleans(),
       st.integers(0, 2**31))
def test_pool2d_matches_reference(geometry, pool_type, ceil_mode, include_pad, seed):
    h, w, k, stride, dilation, pad = geometry
    # TVM requires every window to start inside the padded input
    pad = (min(pad[0], k[0] - 1), min(pad[1], k[1] - 1), min(pad[2], k[0] - 1), min(pad[3], k[1] - 1))
    h = max(h, (k[0] - 1) * dilation[0] + 1)
    w = max(w, (k[1] - 1) * dilation[1] + 1)
    rng = np.random.default_rng(seed)
    data = te.placeholder((1, 2, h, w), name="data")
    out = topi.nn.pool2d(data, k, stride, dilation, pad, pool_type, ceil_mode=ceil_mode,
                         count_include_pad=include_pad)
    a = rng.standard_normal(data.shape).astype("float32")
    want = topi.testing.pool2d_nchw_python(a, k, stride, dilation, pad, pool_type, ceil_mode, include_pad)
    np.testing.assert_allclose(run(out, [data], [a]), want, rtol=1e-5, atol=1e-6)
