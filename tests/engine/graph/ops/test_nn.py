"""nn operators against numpy / hand-computed values: dense, batch_matmul, bias_add, batch_norm,
softmax, log_softmax, dropout, batch_flatten, pad; and the fusion pattern of every operator."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import nn

from .run_graph import run

RNG = np.random.default_rng(0)


def test_dense_is_data_times_weight_transposed_on_any_leading_dims() -> None:
    x = RNG.standard_normal((2, 3, 5)).astype("float32")
    w = RNG.standard_normal((4, 5)).astype("float32")
    y = nn.dense(g.var("x", shape=x.shape), g.var("w"), units=4)
    np.testing.assert_allclose(run(y, x=x, w=w), x @ w.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("ta", "tb", "xs", "ys"),
    [
        (False, True, (2, 3, 4), (2, 5, 4)),
        (False, False, (2, 3, 4), (1, 4, 5)),
        (True, False, (1, 4, 3), (2, 4, 5)),
    ],
)
def test_batch_matmul_transposes_and_broadcasts_the_batch(ta, tb, xs, ys) -> None:
    x = RNG.standard_normal(xs).astype("float32")
    y = RNG.standard_normal(ys).astype("float32")
    out = run(
        nn.batch_matmul(g.var("x", shape=xs), g.var("y", shape=ys), transpose_a=ta, transpose_b=tb), x=x, y=y
    )
    expected = np.matmul(x.transpose(0, 2, 1) if ta else x, y.transpose(0, 2, 1) if tb else y)
    assert out.shape == (2, 3, 5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_bias_add_along_an_axis() -> None:
    x = np.zeros((1, 3, 2, 2), "float32")
    out = run(nn.bias_add(g.var("x", shape=x.shape), g.var("b")), x=x, b=np.array([1, 2, 3], "float32"))
    assert out[0, :, 1, 1].tolist() == [1, 2, 3]
    last = run(
        nn.bias_add(g.var("x", shape=(2, 3)), g.var("b"), axis=-1),
        x=np.ones((2, 3), "float32"),
        b=np.array([1, 2, 3], "float32"),
    )
    assert last.tolist() == [[2, 3, 4], [2, 3, 4]]


def test_batch_norm_normalises_and_returns_mean_and_var() -> None:
    x = RNG.standard_normal((2, 3, 4, 4)).astype("float32")
    gamma, beta = np.array([1, 2, 3], "float32"), np.array([0, 1, -1], "float32")
    mean, var = np.array([0.5, -1, 2], "float32"), np.array([1, 4, 0.25], "float32")
    names = ("gamma", "beta", "mean", "var")
    bn = nn.batch_norm(g.var("x", shape=x.shape), *(g.var(n) for n in names), epsilon=1e-3)
    out, m, v = run(bn.astuple(), x=x, gamma=gamma, beta=beta, mean=mean, var=var)
    shape = (1, 3, 1, 1)
    expected = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-3) * gamma.reshape(shape)
    np.testing.assert_allclose(out, expected + beta.reshape(shape), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, mean)
    np.testing.assert_array_equal(v, var)
    unscaled = nn.batch_norm(
        g.var("x", shape=x.shape), *(g.var(n) for n in names), scale=False, center=False
    )[0]
    np.testing.assert_allclose(
        run(unscaled, x=x, gamma=gamma, beta=beta, mean=mean, var=var),
        (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5),
        rtol=1e-5,
    )


def test_softmax_and_log_softmax() -> None:
    x = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]], "float32")
    e = np.exp([-2.0, -1.0, 0.0])
    out = run(nn.softmax(g.var("x", shape=x.shape)), x=x)
    np.testing.assert_allclose(out, [e / e.sum(), [1 / 3] * 3], rtol=1e-6)
    log = run(nn.log_softmax(g.var("x", shape=x.shape), axis=1), x=x)
    np.testing.assert_allclose(log, np.log([e / e.sum(), [1 / 3] * 3]), rtol=1e-5)
    cols = run(nn.softmax(g.var("x", shape=x.shape), axis=0), x=x)
    np.testing.assert_allclose(cols.sum(axis=0), [1, 1, 1], rtol=1e-6)


def test_dropout_is_the_identity_at_inference() -> None:
    x = RNG.standard_normal((2, 4)).astype("float32")
    y = nn.dropout(g.var("x", shape=x.shape), rate=0.5)
    assert isinstance(y, g.TupleGetItem) and y.index == 0 and y.tuple_value.op.name == "nn.dropout"
    np.testing.assert_array_equal(run(y, x=x), x)


def test_batch_flatten_and_pad() -> None:
    x = np.arange(24, dtype="float32").reshape(2, 3, 2, 2)
    np.testing.assert_array_equal(run(nn.batch_flatten(g.var("x", shape=x.shape)), x=x), x.reshape(2, 12))
    small = np.array([[1, 2], [3, 4]], "float32")
    out = run(nn.pad(g.var("x", shape=(2, 2)), ((1, 0), (0, 2)), pad_value=9.0), x=small)
    assert out.tolist() == [[9, 9, 9, 9], [1, 2, 9, 9], [3, 4, 9, 9]]
    edge = run(nn.pad(g.var("x", shape=(2, 2)), ((0, 0), (1, 1)), pad_mode="edge"), x=small)
    assert edge.tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]


PATTERNS = {
    "nn.conv2d": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.contrib_conv2d_NCHWc": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.dense": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.batch_matmul": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.max_pool2d": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.avg_pool2d": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.global_avg_pool2d": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.adaptive_avg_pool2d": g.OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.relu": g.OpPattern.ELEMWISE,
    "clip": g.OpPattern.ELEMWISE,
    "sigmoid": g.OpPattern.ELEMWISE,
    "tanh": g.OpPattern.ELEMWISE,
    "nn.leaky_relu": g.OpPattern.ELEMWISE,
    "cast": g.OpPattern.ELEMWISE,
    "add": g.OpPattern.BROADCAST,
    "subtract": g.OpPattern.BROADCAST,
    "multiply": g.OpPattern.BROADCAST,
    "divide": g.OpPattern.BROADCAST,
    "nn.bias_add": g.OpPattern.BROADCAST,
    "reshape": g.OpPattern.INJECTIVE,
    "transpose": g.OpPattern.INJECTIVE,
    "concatenate": g.OpPattern.INJECTIVE,
    "nn.batch_flatten": g.OpPattern.INJECTIVE,
    "nn.pad": g.OpPattern.INJECTIVE,
    "layout_transform": g.OpPattern.INJECTIVE,
    "squeeze": g.OpPattern.INJECTIVE,
    "expand_dims": g.OpPattern.INJECTIVE,
    "nn.softmax": g.OpPattern.OPAQUE,
    "nn.batch_norm": g.OpPattern.OPAQUE,
    "nn.dropout": g.OpPattern.OPAQUE,
}


def test_every_operator_records_its_fusion_pattern() -> None:
    for name, pattern in PATTERNS.items():
        op = g.OPS.get(name)
        assert op.pattern == pattern, name
        assert op.get_attr("TOpPattern") == int(pattern)
    assert set(PATTERNS) <= set(g.OPS.names())
