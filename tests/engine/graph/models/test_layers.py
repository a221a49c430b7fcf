"""The layer helpers of the built-in networks: weights named after the layer, the inverted
bottleneck's optional expansion and residual, the pooled classifier."""

from __future__ import annotations

import numpy as np

from tunecli.engine import graph as g
from tunecli.engine.graph.models.init import create_workload
from tunecli.engine.graph.models.layers import conv2d_bias, inverted_bottleneck, pooled_classifier
from tunecli.engine.graph.ops.pool import global_avg_pool2d
from tunecli.engine.graph.ops.unary import relu


def _workload(out: g.Expr) -> tuple[g.IRModule, dict]:
    return create_workload(g.Function(g.free_vars(out), out))


def test_an_inverted_bottleneck_keeping_its_shape_expands_and_adds_its_input() -> None:
    seen: list[int] = []

    def step(x: g.Expr, channels: int) -> g.Expr:
        seen.append(channels)
        return x

    data = g.var("data", shape=(1, 8, 6, 6))
    mod, params = _workload(inverted_bottleneck(data, "b", 8, 8, 3, 1, 6, relu, hidden_step=step))
    assert seen == [48]
    assert params["b_expand_conv_weight"].shape == (48, 8, 1, 1)
    assert params["b_depthwise_conv_weight"].shape == (48, 1, 3, 3)
    assert params["b_project_conv_weight"].shape == (8, 48, 1, 1)
    assert {"b_project_bn_gamma", "b_project_bn_moving_var"} <= set(params)
    body = mod["main"].body
    assert body.op.name == "add" and body.checked_type == g.TensorType((1, 8, 6, 6), "float32")


def test_an_inverted_bottleneck_of_expansion_1_or_a_new_shape_has_no_expansion_or_residual() -> None:
    data = g.var("data", shape=(1, 8, 6, 6))
    mod, params = _workload(inverted_bottleneck(data, "b", 8, 16, 5, 2, 1, relu))
    assert not any(name.startswith("b_expand") for name in params)
    assert params["b_depthwise_conv_weight"].shape == (8, 1, 5, 5)
    body = mod["main"].body
    assert isinstance(body, g.TupleGetItem) and body.index == 0  # the project layer's batch norm
    assert body.checked_type == g.TensorType((1, 16, 3, 3), "float32")


def test_pooled_classifier_gives_one_probability_row_per_image() -> None:
    data = g.var("data", shape=(2, 4, 5, 5))
    features = conv2d_bias(data, "conv", channels=6, kernel_size=(1, 1))
    mod, params = _workload(pooled_classifier(global_avg_pool2d(features), "fc", 3))
    assert params["conv_bias"].shape == (6,) and params["fc_weight"].shape == (3, 6)
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 5)).astype("float32")
    probs = g.evaluate(mod, inputs={"data": x, **params})
    assert probs.shape == (2, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
