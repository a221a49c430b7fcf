"""Pooling against hand-computed values, in NCHW and a blocked layout."""

from __future__ import annotations

import numpy as np

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import pool, transform

from .run_graph import run

X = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)


def test_max_pool_windows_strides_and_padding() -> None:
    out = run(pool.max_pool2d(g.var("x", shape=X.shape), pool_size=2, strides=2), x=X)
    assert out[0, 0].tolist() == [[5, 7], [13, 15]]
    padded = run(pool.max_pool2d(g.var("x", shape=X.shape), pool_size=3, strides=2, padding=1), x=-X)
    assert padded[0, 0].tolist() == [[0, -1], [-4, -5]]  # padding never wins


def test_avg_pool_counts_padding_only_when_asked() -> None:
    x = np.ones((1, 1, 2, 2), "float32")
    excl = run(pool.avg_pool2d(g.var("x", shape=x.shape), pool_size=2, padding=1), x=x)
    incl = run(
        pool.avg_pool2d(g.var("x", shape=x.shape), pool_size=2, padding=1, count_include_pad=True), x=x
    )
    assert excl[0, 0].tolist() == [[1, 1, 1], [1, 1, 1], [1, 1, 1]]
    assert incl[0, 0].tolist() == [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]]


def test_ceil_mode_adds_a_partial_window() -> None:
    x = np.arange(25, dtype="float32").reshape(1, 1, 5, 5)
    floor = pool.max_pool2d(g.var("x", shape=x.shape), pool_size=2, strides=2)
    ceil = pool.max_pool2d(g.var("x", shape=x.shape), pool_size=2, strides=2, ceil_mode=True)
    assert run(floor, x=x).shape == (1, 1, 2, 2)
    assert run(ceil, x=x)[0, 0].tolist() == [[6, 8, 9], [16, 18, 19], [21, 23, 24]]


def test_global_and_adaptive_pools() -> None:
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype("float32")
    avg = run(pool.global_avg_pool2d(g.var("x", shape=x.shape)), x=x)
    np.testing.assert_allclose(avg, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    mx = run(pool.global_max_pool2d(g.var("x", shape=x.shape)), x=x)
    np.testing.assert_array_equal(mx, x.max(axis=(2, 3), keepdims=True))
    one = run(pool.adaptive_avg_pool2d(g.var("x", shape=x.shape), output_size=(1, 1)), x=x)
    np.testing.assert_allclose(one, avg, rtol=1e-6)
    two = run(pool.adaptive_avg_pool2d(g.var("x", shape=x.shape), output_size=(2, 3)), x=x)
    np.testing.assert_allclose(two[:, :, 1, 2], x[:, :, 2:5, 4:6].mean(axis=(2, 3)), rtol=1e-5)


def test_pooling_in_a_blocked_layout() -> None:
    x = np.random.default_rng(1).standard_normal((1, 8, 4, 4)).astype("float32")
    xv = g.var("x", shape=x.shape)
    blocked = pool.max_pool2d(
        transform.layout_transform(xv, "NCHW", "NCHW4c"), pool_size=2, strides=2, layout="NCHW4c"
    )
    out = run(transform.layout_transform(blocked, "NCHW4c", "NCHW"), x=x)
    np.testing.assert_array_equal(out, run(pool.max_pool2d(xv, pool_size=2, strides=2), x=x))
