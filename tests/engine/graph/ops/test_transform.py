"""Data-movement operators: reshape (TVM's special values), transpose, concatenate, squeeze,
expand_dims and layout_transform."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import transform
from tunecli.engine.graph.ops.transform import infer_reshape
from tunecli.errors import GraphError

from .run_graph import run

X = np.arange(24, dtype="float32").reshape(2, 3, 4)


@pytest.mark.parametrize(
    ("newshape", "shape"),
    [
        ((6, 4), (6, 4)),
        ((0, -1), (2, 12)),
        ((-1,), (24,)),
        ((0, 0, 2, 2), (2, 3, 2, 2)),
        ((-2,), (2, 3, 4)),
        ((2, -2), (2, 3, 4)),
        ((-3, 4), (6, 4)),
        ((-4, 1, -1, 0, 4), (1, 2, 3, 4)),
    ],
)
def test_reshape_special_values(newshape, shape) -> None:
    assert infer_reshape("reshape", X.shape, newshape) == shape
    np.testing.assert_array_equal(
        run(transform.reshape(g.var("x", shape=X.shape), newshape), x=X), X.reshape(shape)
    )


def test_reshape_errors() -> None:
    with pytest.raises(GraphError, match="more than one -1"):
        infer_reshape("reshape", X.shape, (-1, -1))
    with pytest.raises(GraphError, match="invalid value -7"):
        infer_reshape("reshape", X.shape, (-7,))


def test_transpose_concatenate_squeeze_expand_dims() -> None:
    x = g.var("x", shape=X.shape)
    np.testing.assert_array_equal(run(transform.transpose(x, (1, 0, 2)), x=X), X.transpose(1, 0, 2))
    np.testing.assert_array_equal(run(transform.transpose(x), x=X), X.transpose())
    np.testing.assert_array_equal(
        run(transform.concatenate([x, x * 2.0], axis=-1), x=X), np.concatenate([X, X * 2], axis=-1)
    )
    y = np.ones((1, 3, 1, 2), "float32")
    yv = g.var("y", shape=y.shape)
    assert run(transform.squeeze(yv), y=y).shape == (3, 2)
    assert run(transform.squeeze(yv, axis=[2]), y=y).shape == (1, 3, 2)
    assert run(transform.expand_dims(yv, axis=1, num_newaxis=2), y=y).shape == (1, 1, 1, 3, 1, 2)
    assert run(transform.expand_dims(yv, axis=-1), y=y).shape == (1, 3, 1, 2, 1)
    with pytest.raises(GraphError, match="squeeze: axis 1 of"):
        run(transform.squeeze(yv, axis=[1]), y=y)


def test_layout_transform_puts_channel_blocks_innermost() -> None:
    x = np.arange(2 * 8 * 3 * 3, dtype="float32").reshape(2, 8, 3, 3)
    blocked = run(transform.layout_transform(g.var("x", shape=x.shape), "NCHW", "NCHW4c"), x=x)
    assert blocked.shape == (2, 2, 3, 3, 4)
    n, c_outer, h, w, c_inner = 1, 1, 2, 0, 3
    assert blocked[n, c_outer, h, w, c_inner] == x[n, c_outer * 4 + c_inner, h, w]
    nhwc = run(transform.layout_transform(g.var("b", shape=blocked.shape), "NCHW4c", "NHWC"), b=blocked)
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))
    kernel = np.arange(8 * 4 * 1 * 1, dtype="float32").reshape(8, 4, 1, 1)
    packed = run(transform.layout_transform(g.var("k", shape=kernel.shape), "OIHW", "OIHW2i4o"), k=kernel)
    assert packed.shape == (2, 2, 1, 1, 2, 4)
    assert packed[1, 0, 0, 0, 1, 3] == kernel[1 * 4 + 3, 0 * 2 + 1, 0, 0]


def test_reshape_allowzero_keeps_a_literal_zero() -> None:
    assert infer_reshape("reshape", (0, 4), (0, 2, 2), allowzero=True) == (0, 2, 2)
    assert infer_reshape("reshape", (2, 4), (0, 2, 2)) == (2, 2, 2)
