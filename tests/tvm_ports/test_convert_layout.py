"""``relay.transform.ConvertLayout`` as scripts of TensorFlow-style (NHWC) networks apply it:
``{"nn.conv2d": ["NCHW", "default"]}`` under ``PassContext(opt_level=3)``, then ``relay.build``.
The converted network computes what the original one does (the interpreter runs the NHWC
original), with one transform in and one out; pools and per-channel arithmetic follow the new
layout."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_executor
from tunecli.errors import GraphError

TO_NCHW = {"nn.conv2d": ["NCHW", "default"]}


def nhwc_network() -> tvm.IRModule:
    """A convolution with bias and ReLU, then a depthwise convolution, written in NHWC."""
    x = relay.var("x", shape=(1, 8, 8, 4), dtype="float32")
    w1 = relay.var("w1", shape=(3, 3, 4, 6), dtype="float32")
    b1 = relay.var("b1", shape=(6,), dtype="float32")
    w2 = relay.var("w2", shape=(3, 3, 6, 1), dtype="float32")
    y = relay.nn.conv2d(x, w1, padding=(1, 1), channels=6, kernel_size=(3, 3), data_layout="NHWC",
                        kernel_layout="HWIO")
    y = relay.nn.relu(relay.nn.bias_add(y, b1, axis=3))
    y = relay.nn.conv2d(y, w2, padding=(1, 1), channels=6, groups=6, kernel_size=(3, 3), data_layout="NHWC",
                        kernel_layout="HWOI")
    return tvm.IRModule.from_expr(relay.Function([x, w1, b1, w2], relay.nn.relu(y)))


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = {"x": (1, 8, 8, 4), "w1": (3, 3, 4, 6), "b1": (6,), "w2": (3, 3, 6, 1)}
    return {name: rng.standard_normal(shape).astype("float32") for name, shape in shapes.items()}


def test_an_nhwc_network_converted_to_nchw_builds_and_computes_the_same():
    mod = nhwc_network()
    with tvm.transform.PassContext(opt_level=3):
        converted = tvm.transform.Sequential([relay.transform.InferType(),
                                              relay.transform.ConvertLayout(TO_NCHW)])(mod)
    text = str(converted)
    assert text.count("layout_transform(%x") == 1 and text.count("dst_layout=\"NHWC\"") == 1
    assert "HWIO" in text and "HWOI" in text  # the two kernels, each transformed once
    assert text.count("layout_transform(") == 4  # data in, two kernels, data out: none between
    data = inputs()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(converted, target="llvm")
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gmod.set_input(**data)
    gmod.run()
    want = relay.create_executor("debug", mod=mod, target="llvm").evaluate()(*data.values())
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_pools_and_per_channel_arithmetic_follow_the_new_layout():
    x = relay.var("x", shape=(1, 8, 8, 4), dtype="float32")
    w = relay.var("w", shape=(3, 3, 4, 6), dtype="float32")
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=6, kernel_size=(3, 3), data_layout="NHWC",
                        kernel_layout="HWIO")
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2), layout="NHWC")
    y = relay.multiply(y, relay.const(np.linspace(0.5, 1.5, 6, dtype="float32")))  # per channel, [C]
    y = relay.add(y, relay.const(np.float32(0.25)))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y, layout="NHWC"))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with tvm.transform.PassContext(opt_level=3):
        converted = relay.transform.ConvertLayout(TO_NCHW)(mod)
        lib = relay.build(converted, target="llvm")
    text = str(converted)
    assert ', layout="NHWC"' not in text  # both pools compute in NCHW
    assert text.count('dst_layout="NHWC"') == 1  # back to NHWC only for batch_flatten
    data = inputs()
    gmod = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gmod.set_input(x=data["x"], w=data["w1"])
    gmod.run()
    want = relay.create_executor("debug", mod=mod, target="llvm").evaluate()(data["x"], data["w1"])
    np.testing.assert_allclose(gmod.get_output(0).numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_the_other_way_and_a_named_kernel_layout():
    x = relay.var("x", shape=(1, 3, 6, 6), dtype="float32")
    w = relay.var("w", shape=(5, 3, 3, 3), dtype="float32")
    y = relay.nn.softmax(relay.nn.conv2d(x, w, channels=5, kernel_size=(3, 3)), axis=1)
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    converted = relay.transform.ConvertLayout({"nn.conv2d": ["NHWC", "OHWI"]})(mod)
    conv = converted["main"].body.args[0].args[0]
    assert (conv.attrs.data_layout, conv.attrs.kernel_layout) == ("NHWC", "OHWI")
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    ws = rng.standard_normal((5, 3, 3, 3)).astype("float32")
    run = relay.create_executor("debug", mod=mod, target="llvm").evaluate()
    run_converted = relay.create_executor("debug", mod=converted, target="llvm").evaluate()
    np.testing.assert_allclose(run_converted(xs, ws).numpy(), run(xs, ws).numpy(), rtol=1e-5, atol=1e-6)


def test_a_network_already_in_the_layout_or_below_opt_level_3_is_unchanged():
    x = relay.var("x", shape=(1, 3, 6, 6), dtype="float32")
    w = relay.var("w", shape=(5, 3, 3, 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w, kernel_size=(3, 3))))
    assert relay.transform.ConvertLayout(TO_NCHW)(mod)["main"] is mod["main"]
    at_level_2 = tvm.transform.Sequential([relay.transform.ConvertLayout(TO_NCHW)])(nhwc_network())
    assert "layout_transform" not in str(at_level_2)


@pytest.mark.parametrize("desired, message", [
    ({"nn.max_pool2d": ["NCHW"]}, "no layout conversion for 'nn.max_pool2d'"),
    ({"nn.conv2d": ["NCHW16c", "default"]}, "not an order of N, C, H, W"),
    ({"nn.conv2d": ["NCHW", "OIHW8o"]}, "not 'default' or an order of O, I, H, W"),
    ({"nn.conv2d": "NCHW"}, r"wants \[data_layout, kernel_layout\]"),
    ({}, "must be a dict"),
])
def test_layouts_that_cannot_be_converted_are_named(desired, message):
    with pytest.raises(GraphError, match=message):
        relay.transform.ConvertLayout(desired)
