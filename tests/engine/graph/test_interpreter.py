"""The reference interpreter: input binding, per-node values, fused calls, and its checks."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.interpreter import create_executor
from tunecli.engine.graph.op_registry import NoAttrs, Op, OpPattern
from tunecli.engine.graph.ops import conv, nn, unary
from tunecli.engine.graph.ops.define import same_type_relation
from tunecli.errors import GraphError


def _small_net() -> tuple[g.Function, dict[str, np.ndarray]]:
    x = g.var("data", shape=(1, 2, 5, 5))
    y = conv.conv2d(x, g.var("w"), padding=1, channels=3, kernel_size=3)
    y = unary.relu(nn.bias_add(y, g.var("b")))
    fn = g.Function(g.free_vars(y), y)
    g.infer_types(fn)
    rng = np.random.default_rng(1)
    params = {"w": rng.standard_normal((3, 2, 3, 3)).astype("float32"), "b": np.arange(3, dtype="float32")}
    return fn, params


def _by_hand(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    out = np.zeros((1, 3, 5, 5), "float64")
    for o in range(3):
        for i in range(5):
            for j in range(5):
                out[0, o, i, j] = (padded[0, :, i : i + 3, j : j + 3] * w[o]).sum() + b[o]
    return np.maximum(out, 0).astype("float32")


def test_evaluate_matches_hand_computation_by_position_and_by_name() -> None:
    fn, params = _small_net()
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype("float32")
    expected = _by_hand(x, params["w"], params["b"])
    np.testing.assert_allclose(g.evaluate(fn, [x], params), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g.evaluate(fn, inputs={"data": x, **params}), expected, rtol=1e-5, atol=1e-5)
    run = create_executor("debug", g.IRModule.from_expr(fn), params=params).evaluate()
    np.testing.assert_allclose(run(x), expected, rtol=1e-5, atol=1e-5)


def test_evaluate_nodes_gives_every_intermediate_value() -> None:
    fn, params = _small_net()
    x = np.ones((1, 2, 5, 5), "float32")
    out, values = g.evaluate_nodes(fn, [x], params)
    calls = [n for n in g.post_order(fn) if isinstance(n, g.Call)]
    assert [c.op.name for c in calls] == ["nn.conv2d", "nn.bias_add", "nn.relu"]
    assert all(values[c].shape == c.checked_type.shape for c in calls)
    np.testing.assert_array_equal(values[calls[-1]], out)


def test_fused_function_calls_evaluate_their_body() -> None:
    p = g.var("p0", shape=(3,))
    fused = g.Function([p], unary.clip(p * 2.0, 0.0, 3.0)).with_attr("Primitive", 1)
    x = g.var("x", shape=(3,))
    fn = g.Function([x], g.Call(fused, [x]))
    out = g.evaluate(fn, [np.array([-1.0, 1.0, 2.0], "float32")])
    np.testing.assert_array_equal(out, np.array([0.0, 2.0, 3.0], "float32"))


def test_tuple_results_come_back_as_tuples() -> None:
    x = g.var("x", shape=(2,))
    fn = g.Function([x], g.Tuple([unary.relu(x), unary.negative(x)]))
    a, b = g.evaluate(fn, [np.array([-1.0, 2.0], "float32")])
    np.testing.assert_array_equal(a, [0.0, 2.0])
    np.testing.assert_array_equal(b, [1.0, -2.0])


@pytest.mark.parametrize(
    ("args", "inputs", "message"),
    [
        ((), {"w": 0}, "no value for the inputs \\['data', 'b'\\]"),
        ((np.ones((1, 2, 5, 5), "float64"),), None, r"input .data.: expected Tensor\[\(1, 2, 5, 5\)"),
        ((), {"nope": 1}, "unknown inputs \\['nope'\\]"),
    ],
)
def test_bad_inputs_name_the_parameter(args, inputs, message) -> None:
    fn, params = _small_net()
    with pytest.raises(GraphError, match=message):
        g.evaluate(fn, args, inputs)


def test_a_reference_that_disagrees_with_its_relation_is_caught() -> None:
    bad = Op("test.bad", ("data",), NoAttrs, same_type_relation, lambda attrs, x: x[:1], OpPattern.ELEMWISE)
    x = g.var("x", shape=(2,))
    fn = g.Function([x], g.Call(bad, [x]))
    with pytest.raises(GraphError, match="test.bad output: expected Tensor\\[\\(2\\), float32\\].*disagrees"):
        g.evaluate(fn, [np.ones(2, "float32")])
