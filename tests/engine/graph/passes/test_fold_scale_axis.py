"""FoldScaleAxis multiplies a per-channel scale after a conv2d or dense into its constant weight."""

from __future__ import annotations

import numpy as np

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.passes import FoldConstant, FoldScaleAxis, SimplifyInference

RNG = np.random.default_rng(0)


def _const(*shape: int) -> g.Constant:
    return relay.const(RNG.uniform(0.5, 1.5, shape).astype("float32"))


def _fold(expr: g.Expr) -> tuple[g.IRModule, g.IRModule]:
    mod = g.InferType()(g.IRModule.from_expr(expr))
    out = mod
    for p in (SimplifyInference(), FoldConstant(), FoldScaleAxis(), FoldConstant()):
        out = p(out)
    return mod, out


def test_batch_norm_after_conv_folds_into_the_weight() -> None:
    x = relay.var("x", shape=(1, 3, 6, 6))
    conv = relay.nn.conv2d(x, _const(4, 3, 3, 3), padding=(1, 1))
    mod, out = _fold(relay.nn.relu(relay.nn.batch_norm(conv, *[_const(4) for _ in range(4)])[0]))
    assert g.count_calls(out["main"]) == {"nn.conv2d": 1, "add": 1, "nn.relu": 1}
    data = RNG.uniform(-1, 1, (1, 3, 6, 6)).astype("float32")
    np.testing.assert_allclose(g.evaluate(out, [data]), g.evaluate(mod, [data]), rtol=1e-5, atol=1e-5)


def test_scale_after_dense_folds_and_a_shared_conv_does_not() -> None:
    x = relay.var("x", shape=(2, 8))
    mod, out = _fold(relay.multiply(relay.nn.dense(x, _const(5, 8)), _const(5)))
    assert g.count_calls(out["main"]) == {"nn.dense": 1}
    data = RNG.uniform(-1, 1, (2, 8)).astype("float32")
    np.testing.assert_allclose(g.evaluate(out, [data]), g.evaluate(mod, [data]), rtol=1e-5, atol=1e-6)

    y = relay.var("y", shape=(1, 2, 4, 4))
    conv = relay.nn.conv2d(y, _const(2, 2, 1, 1))
    _, kept = _fold(relay.add(relay.multiply(conv, _const(2, 1, 1)), conv))
    assert g.count_calls(kept["main"])["multiply"] == 1


def test_a_scale_varying_along_space_is_not_folded() -> None:
    x = relay.var("x", shape=(1, 2, 4, 4))
    _, out = _fold(relay.multiply(relay.nn.conv2d(x, _const(2, 2, 1, 1)), _const(1, 4, 4)))
    assert g.count_calls(out["main"])["multiply"] == 1
