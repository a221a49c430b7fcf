"""nn.contrib_conv2d_NCHWc_winograd with the transform of its kernel computes nn.conv2d (any tile size,
padding and channel blocks); its type relation names bad weights and strides; with a weight that is
not a constant the transform is a compiled kernel of its own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.ops import conv, transform
from tunecli.engine.graph.ops.conv_winograd import CONV_OP, TRANSFORM_OP, WinogradWeightTransformAttrs
from tunecli.engine.graph.ops.define import make_call
from tunecli.engine.graph.passes import PassContext
from tunecli.errors import GraphError

from .run_graph import run

RNG = np.random.default_rng(0)


def _winograd(x: g.Expr, w: g.Expr, m: int, ic_bn: int, oc_bn: int, padding: tuple = (1, 1)) -> g.Call:
    u = make_call(TRANSFORM_OP, [w], WinogradWeightTransformAttrs(m, ic_bn, oc_bn))
    attrs = conv.Conv2DNCHWcAttrs(padding=padding, data_layout=f"NCHW{ic_bn}c", kernel_layout="",
                                  out_layout=f"NCHW{oc_bn}c")
    return make_call(CONV_OP, [x, u], attrs)


@pytest.mark.parametrize("m, ic_bn, oc_bn, padding, hw", [(2, 4, 8, (1, 1), 6), (4, 8, 4, (1, 1), 7),
                                                          (4, 2, 2, (0, 0), 9), (2, 8, 16, (1, 2, 0, 1), 5)])
def test_winograd_of_the_transformed_kernel_is_the_convolution(m: int, ic_bn: int, oc_bn: int, padding: tuple,
                                                               hw: int) -> None:
    x = g.var("x", shape=(1, 8, hw, hw))
    w = g.var("w", shape=(16, 8, 3, 3))
    blocked = transform.layout_transform(x, "NCHW", f"NCHW{ic_bn}c")
    out = transform.layout_transform(_winograd(blocked, w, m, ic_bn, oc_bn, padding), f"NCHW{oc_bn}c", "NCHW")
    data = RNG.uniform(-1, 1, (1, 8, hw, hw)).astype("float32")
    weight = RNG.uniform(-1, 1, (16, 8, 3, 3)).astype("float32")
    expected = run(conv.conv2d(x, w, padding=padding), x=data, w=weight)
    np.testing.assert_allclose(run(out, x=data, w=weight), expected, rtol=1e-4, atol=1e-5)


def test_the_relations_name_bad_weights_and_strides() -> None:
    x = g.var("x", shape=(1, 1, 6, 6, 8))
    with pytest.raises(GraphError, match="OIHW 3x3"):
        g.infer_types(g.Function([x], _winograd(x, g.var("w", shape=(16, 8, 5, 5)), 2, 8, 8)))
    with pytest.raises(GraphError, match="do not divide"):
        g.infer_types(g.Function([x], _winograd(x, g.var("w", shape=(12, 8, 3, 3)), 2, 8, 8)))
    w = g.var("w", shape=(16, 8, 3, 3))
    u = make_call(TRANSFORM_OP, [w], WinogradWeightTransformAttrs(2, 8, 8))
    strided = make_call(CONV_OP, [x, u], conv.Conv2DNCHWcAttrs(strides=(2, 2), data_layout="NCHW8c"))
    with pytest.raises(GraphError, match="stride 1"):
        g.infer_types(g.Function([x, w], strided))


def test_a_weight_that_is_an_input_is_transformed_by_a_kernel_at_run_time() -> None:
    x = g.var("x", shape=(1, 8, 8, 8))
    w = g.var("w", shape=(16, 8, 3, 3))
    blocked = transform.layout_transform(x, "NCHW", "NCHW8c")
    body = transform.layout_transform(_winograd(blocked, w, 2, 8, 16), "NCHW16c", "NCHW")
    mod = g.IRModule.from_expr(g.Function([x, w], body))
    with PassContext(opt_level=3):
        lib = build(mod, "llvm")
    nodes = json.loads(lib.get_graph_json())["nodes"]
    kernels = [n["attrs"]["func_name"] for n in nodes if n["op"] == "tvm_op"]
    assert any("weight_transform" in k for k in kernels)
    data = RNG.uniform(-1, 1, (1, 8, 8, 8)).astype("float32")
    weight = RNG.uniform(-1, 1, (16, 8, 3, 3)).astype("float32")
    m = lib["default"](None)
    m.set_input("x", data)
    m.set_input("w", weight)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), g.evaluate(mod, [data, weight]), rtol=1e-4, atol=1e-5)
