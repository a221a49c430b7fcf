"""Elementwise and broadcasting operators against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import broadcast, unary

from .run_graph import run

X = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], "float32")


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (unary.relu, [0, 0, 0, 0.5, 2]),
        (lambda x: unary.leaky_relu(x, alpha=0.1), [-0.2, -0.05, 0, 0.5, 2]),
        (lambda x: unary.clip(x, -1.0, 1.0), [-1, -0.5, 0, 0.5, 1]),
        (
            unary.sigmoid,
            [1 / (1 + np.exp(2)), 1 / (1 + np.exp(0.5)), 0.5, 1 / (1 + np.exp(-0.5)), 1 / (1 + np.exp(-2))],
        ),
        (unary.tanh, np.tanh([-2.0, -0.5, 0.0, 0.5, 2.0])),
        (unary.negative, [2, 0.5, 0, -0.5, -2]),
        (unary.exp, np.exp([-2.0, -0.5, 0.0, 0.5, 2.0])),
    ],
)
def test_unary_operators(build, expected) -> None:
    out = run(build(g.var("x", shape=(5,))), x=X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_cast_changes_the_dtype() -> None:
    out = run(unary.cast(g.var("x", shape=(5,)), "int32"), x=X)
    assert out.dtype == np.int32 and out.tolist() == [-2, 0, 0, 0, 2]


@pytest.mark.parametrize(
    ("build", "fn"),
    [
        (broadcast.add, np.add),
        (broadcast.subtract, np.subtract),
        (broadcast.multiply, np.multiply),
        (broadcast.divide, np.divide),
        (broadcast.maximum, np.maximum),
        (broadcast.minimum, np.minimum),
    ],
)
def test_binary_operators_broadcast_like_numpy(build, fn) -> None:
    a = np.arange(1, 7, dtype="float32").reshape(2, 1, 3)
    b = np.array([[1.0], [2.0], [4.0]], "float32")
    out = run(build(g.var("a", shape=a.shape), g.var("b", shape=b.shape)), a=a, b=b)
    assert out.shape == (2, 3, 3)
    np.testing.assert_allclose(out, fn(a, b), rtol=1e-6)


def test_integer_division_truncates_toward_zero() -> None:
    a = np.array([7, -7], "int32")
    out = run(broadcast.divide(g.var("a", shape=(2,), dtype="int32"), g.const(2)), a=a)
    assert out.tolist() == [3, -3] and out.dtype == np.int32
