"""The 3-D ResNet and the DCGAN generator: their shapes and layer names, and built networks whose
kernels (conv3d_ncdhw.x86, conv2d_transpose_nchw.x86 with their batch norms fused) compute what
the interpreter does."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_executor
from tunecli.engine.graph.models import dcgan, resnet_3d
from tunecli.errors import GraphError


def built_output(mod, params, data: np.ndarray) -> np.ndarray:
    lib = relay.build(mod, target="llvm", params=params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    module.set_input("data", data)
    module.run()
    return module.get_output(0).numpy()


def interpreted(mod, params, data: np.ndarray) -> np.ndarray:
    return np.asarray(relay.create_executor("debug", mod=mod, target="llvm").evaluate()(data, **params))


def test_resnet3d_layers_and_shapes() -> None:
    mod, params = resnet_3d.get_workload(num_layers=18, batch_size=2, num_classes=7)
    assert params["conv0_weight"].shape == (64, 3, 3, 7, 7)
    assert params["stage4_unit1_sc_weight"].shape == (512, 256, 1, 1, 1)
    assert mod["main"].checked_type.ret_type.shape == (2, 7)
    with pytest.raises(GraphError, match="no 18-layer variant"):
        resnet_3d.get_workload(num_layers=18, image_shape=(3, 4, 16, 16))


def test_dcgan_layers_and_shapes() -> None:
    mod, params = dcgan.get_workload(batch_size=3, ngf=16)
    assert params["dense_weight"].shape == (4 * 4 * 16 * 8, 100)
    assert params["g2_deconv_weight"].shape == (128, 64, 4, 4)  # IOHW
    assert mod["main"].checked_type.ret_type.shape == (3, 3, 64, 64)
    with pytest.raises(GraphError, match="64x64"):
        dcgan.get_workload(batch_size=1, oshape=(3, 32, 32))


def test_built_dcgan_computes_what_the_interpreter_does(caplog: pytest.LogCaptureFixture) -> None:
    mod, params = dcgan.get_workload(batch_size=1, ngf=4)
    code = np.random.default_rng(0).standard_normal((1, 100)).astype("float32")
    with caplog.at_level(logging.INFO, logger="autotvm"):
        got = built_output(mod, params, code)
    assert caplog.text.count("conv2d_transpose_nchw.x86") >= 1  # its convolutions are the template's
    np.testing.assert_allclose(got, interpreted(mod, params, code), rtol=1e-4, atol=1e-5)
    assert np.abs(got).max() <= 1.0  # tanh


def test_built_resnet3d_computes_what_the_interpreter_does() -> None:
    mod, params = resnet_3d.get_workload(num_layers=8, batch_size=1, image_shape=(3, 2, 4, 4), num_classes=5)
    clip = np.random.default_rng(1).standard_normal((1, 3, 2, 4, 4)).astype("float32")
    got = built_output(mod, params, clip)
    np.testing.assert_allclose(got, interpreted(mod, params, clip), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got.sum(), 1.0, rtol=1e-5)  # softmax


def test_conv3d_calls_are_checked_where_they_are_made() -> None:
    data = relay.var("data", shape=(1, 4, 3, 5, 5))
    with pytest.raises(GraphError, match="nn.conv3d: only one group"):
        relay.transform.InferType()(
            tvm.IRModule.from_expr(relay.nn.conv3d(data, relay.var("w", shape=(4, 2, 1, 1, 1)), groups=2))
        )
    with pytest.raises(GraphError, match="padding"):
        relay.nn.conv3d(data, relay.var("w"), padding=(1, 1), channels=4, kernel_size=3)
    image = relay.var("image", shape=(1, 4, 3, 3))
    assert (
        relay.nn.conv2d_transpose(
            image, relay.var("w"), data_layout="NCHW", kernel_layout="IOHW", channels=2, kernel_size=3
        ).attrs.channels
        == 2
    )  # TVM's keywords, its default values
    with pytest.raises(GraphError, match="IOHW weights"):
        relay.nn.conv2d_transpose(image, relay.var("w"), kernel_layout="OIHW", channels=2, kernel_size=3)
