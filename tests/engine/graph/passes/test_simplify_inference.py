"""SimplifyInference: batch norm becomes a scale and a shift, dropout disappears; values unchanged."""

from __future__ import annotations

import numpy as np

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.passes import SimplifyInference


def test_batch_norm_and_dropout_become_arithmetic_with_equal_values() -> None:
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(2, 3, 4, 4))
    stats = [relay.const(rng.uniform(0.5, 1.5, 3).astype("float32")) for _ in range(4)]
    bn = relay.nn.batch_norm(x, *stats, epsilon=1e-3)[0]
    mod = g.InferType()(g.IRModule.from_expr(relay.nn.dropout(bn)))
    out = SimplifyInference()(mod)
    calls = g.count_calls(out["main"])
    assert "nn.batch_norm" not in calls and "nn.dropout" not in calls
    assert calls["multiply"] >= 1 and calls["add"] >= 1
    data = rng.uniform(-1, 1, (2, 3, 4, 4)).astype("float32")
    np.testing.assert_allclose(g.evaluate(out, [data]), g.evaluate(mod, [data]), rtol=1e-5, atol=1e-6)


def test_batch_norm_on_the_last_axis_broadcasts_without_expand_dims() -> None:
    x = relay.var("x", shape=(5, 3))
    ones = [relay.const(np.ones(3, "float32")) for _ in range(4)]
    mod = g.InferType()(g.IRModule.from_expr(relay.nn.batch_norm(x, *ones, axis=1)[0]))
    out = SimplifyInference()(mod)
    assert "expand_dims" not in g.count_calls(out["main"])
    data = np.arange(15, dtype="float32").reshape(5, 3)
    np.testing.assert_allclose(g.evaluate(out, [data]), g.evaluate(mod, [data]), rtol=1e-5, atol=1e-6)
