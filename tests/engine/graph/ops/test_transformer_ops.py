"""The operators of transformer graphs against numpy, in the interpreter and built with relay.build:
math unaries, power, comparisons, logic, where, trilu, take, strided_slice, split, broadcast_to,
tile, arange and nn.layer_norm."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.ops import broadcast, layer_norm, replicate, selection, slicing, unary
from tunecli.engine.graph.passes import PassContext
from tunecli.errors import GraphError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 8)).astype("float32")
Y = RNG.standard_normal((3, 1)).astype("float32")
TABLE = RNG.standard_normal((10, 8)).astype("float32")
GAMMA, BETA = RNG.standard_normal(8).astype("float32"), RNG.standard_normal(8).astype("float32")


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


_erf = np.vectorize(math.erf)

#: name -> (graph builder on variables, inputs, numpy expectation)
CASES: dict[str, tuple[Callable, dict, Callable]] = {
    "log-abs": (lambda x: unary.log(unary.abs(x)), {"x": X}, lambda x: np.log(np.abs(x))),
    "rsqrt": (lambda x: unary.rsqrt(unary.abs(x)), {"x": X}, lambda x: 1 / np.sqrt(np.abs(x))),
    "erf-gelu": (lambda x: x * (unary.erf(x * (1 / math.sqrt(2))) + 1.0) * 0.5, {"x": X},
                 lambda x: x * (_erf(x / math.sqrt(2)) + 1) * 0.5),
    "power": (lambda x, y: broadcast.power(unary.abs(x), y), {"x": X, "y": Y}, lambda x, y: np.abs(x) ** y),
    "where-less": (lambda x, y: selection.where(selection.less(x, y), x, y), {"x": X, "y": Y},
                   lambda x, y: np.where(x < y, x, y)),
    "equal-bool": (lambda x: selection.equal(x, x), {"x": X}, lambda x: x == x),
    "logic": (lambda x, y: selection.logical_xor(selection.logical_not(selection.greater(x, y)),
                                                  selection.logical_or(selection.less_equal(x, y),
                                                                       selection.greater_equal(x, y))),
              {"x": X, "y": Y}, lambda x, y: np.logical_xor(~(x > y), (x <= y) | (x >= y))),
    "trilu-lower": (lambda x: selection.trilu(x, 1, upper=False), {"x": X}, lambda x: np.tril(x, 1)),
    "trilu-upper": (lambda x: selection.trilu(x, -1), {"x": X}, lambda x: np.triu(x, -1)),
    "take-wrap-rows": (lambda t, i: slicing.take(t, i, axis=0, mode="wrap"),
                       {"t": TABLE, "i": np.asarray([[1, 9, -1], [0, 3, 2]], dtype="int64")},
                       lambda t, i: t[i]),
    "take-clip-columns": (lambda t, i: slicing.take(t, i, axis=1),
                          {"t": TABLE, "i": np.asarray([[1, 9, -4]], dtype="int32")},
                          lambda t, i: np.take(t, i, axis=1, mode="clip")),
    "take-flat": (lambda t, i: slicing.take(t, i), {"t": TABLE, "i": np.asarray([5, 79], dtype="int64")},
                  lambda t, i: t.reshape(-1)[i]),
    "strided-slice": (lambda x: slicing.strided_slice(x, (1, -1), (3, 0), (1, -2), (1, 2)), {"x": X},
                      lambda x: x[:, 1:3, -1:0:-2]),
    "split-part": (lambda x: slicing.split(x, (3, 5), axis=-1)[1], {"x": X}, lambda x: x[..., 3:5]),
    "broadcast-to": (lambda y: replicate.broadcast_to(y, (2, 3, 4)), {"y": Y},
                     lambda y: np.broadcast_to(y, (2, 3, 4))),
    "tile": (lambda y: replicate.tile(y, (2, 1, 3)), {"y": Y}, lambda y: np.tile(y, (2, 1, 3))),
    "arange": (lambda x: x + replicate.arange(0.5, 4.5, 0.5), {"x": X},
               lambda x: x + np.arange(0.5, 4.5, 0.5)),
    "residual-layer-norm": (lambda x, s, b: layer_norm.layer_norm(x + x, s, b),
                            {"x": X, "s": GAMMA, "b": BETA}, lambda x, s, b: _layer_norm(2 * x, s, b)),
    "layer-norm-axis-1": (lambda x, s, b: layer_norm.layer_norm(x, s, b, axis=1, epsilon=1e-3),
                          {"x": X, "s": GAMMA[:3], "b": BETA[:3]},
                          lambda x, s, b: np.moveaxis(_layer_norm(np.moveaxis(x, 1, -1), s, b, 1e-3), -1, 1)),
}


def _module(build: Callable, inputs: dict) -> g.IRModule:
    params = [g.var(name, shape=value.shape, dtype=str(value.dtype)) for name, value in inputs.items()]
    return g.IRModule.from_expr(g.Function(params, build(*params)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_numpy_interpreted_and_built(name: str) -> None:
    build, inputs, expect = CASES[name]
    mod = _module(build, inputs)
    expected = np.asarray(expect(*inputs.values()))
    interpreted = g.evaluate(mod, inputs=inputs)
    assert interpreted.dtype == expected.dtype or expected.dtype == np.float64
    np.testing.assert_allclose(interpreted, expected, rtol=1e-5, atol=1e-5)
    with PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={})
    m = lib["default"](None)
    for key, value in inputs.items():
        m.set_input(key, value)
    m.run()
    built = m.get_output(0).numpy()
    assert built.dtype == interpreted.dtype and built.shape == interpreted.shape
    np.testing.assert_allclose(built, interpreted, rtol=1e-5, atol=1e-5)


def test_fusion_patterns() -> None:
    assert g.OPS.get("nn.layer_norm").pattern == g.OpPattern.COMM_REDUCE
    assert g.OPS.get("where").pattern == g.OpPattern.BROADCAST
    assert g.OPS.get("take").pattern == g.OpPattern.INJECTIVE
    assert g.OPS.get("erf").pattern == g.OpPattern.ELEMWISE


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda x: selection.where(x, x, x), "where: the condition must be bool, got float32"),
        (lambda x: selection.logical_and(x, x), "logical_and: operands must be bool"),
        (lambda x: slicing.take(x, x), "take: indices must be integers, got float32"),
        (lambda x: slicing.strided_slice(x, (2,), (1,)), r"strided_slice: the slice of \(2, 3, 8\) is empty"),
        (lambda x: replicate.broadcast_to(x, (3, 8)), r"\(2, 3, 8\) does not broadcast to \(3, 8\)"),
        (lambda x: layer_norm.layer_norm(x, g.const(GAMMA[:3]), g.const(BETA)),
         "nn.layer_norm: gamma must be"),
    ],
)
def test_bad_calls_name_the_operator(build: Callable, message: str) -> None:
    x = g.var("x", shape=X.shape)
    with pytest.raises(GraphError, match=message):
        g.infer_types(g.Function([x], build(x)))
