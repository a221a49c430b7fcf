"""Reductions against numpy: axes, keepdims, exclude."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import reduce

from .run_graph import run

X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")


@pytest.mark.parametrize(
    ("build", "fn"),
    [(reduce.sum, np.sum), (reduce.mean, np.mean), (reduce.max, np.max), (reduce.min, np.min)],
)
def test_reductions_match_numpy(build, fn) -> None:
    x = g.var("x", shape=X.shape)
    np.testing.assert_allclose(run(build(x), x=X), fn(X), rtol=1e-5)
    np.testing.assert_allclose(run(build(x, axis=1), x=X), fn(X, axis=1), rtol=1e-5)
    np.testing.assert_allclose(
        run(build(x, axis=(0, -1), keepdims=True), x=X), fn(X, axis=(0, 2), keepdims=True), rtol=1e-5
    )
    np.testing.assert_allclose(run(build(x, axis=1, exclude=True), x=X), fn(X, axis=(0, 2)), rtol=1e-5)
    assert g.OPS.get(build.__name__).pattern == g.OpPattern.COMM_REDUCE
