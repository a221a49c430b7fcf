"""A TVM user's Relay script runs after changing its imports (``from tunecli import relay``)."""

from __future__ import annotations

import inspect

import numpy as np

import tunecli as tvm
from tunecli import relay
from tunecli.runtime import NDArray


def test_tvm_style_graph_building_typing_printing_and_evaluation() -> None:
    data = relay.var("data", shape=(1, 3, 16, 16), dtype="float32")
    weight = relay.var("weight")
    out = relay.nn.conv2d(data, weight, strides=(1, 1), padding=(1, 1), channels=8, kernel_size=(3, 3))
    out = relay.nn.relu(relay.nn.bias_add(out, relay.var("bias")))
    out = relay.nn.max_pool2d(out, pool_size=(2, 2), strides=(2, 2))
    out = relay.nn.softmax(relay.nn.dense(relay.nn.batch_flatten(out), relay.var("fc_weight"), units=10))
    func = relay.Function(relay.analysis.free_vars(out), out)
    mod = tvm.IRModule.from_expr(func)
    mod = relay.transform.InferType()(mod)
    assert mod["main"].body.checked_type == relay.TensorType((1, 10), "float32")
    assert relay.op.get("nn.conv2d").get_attr("TOpPattern") == relay.op.OpPattern.OUT_ELEMWISE_FUSABLE
    assert "nn.conv2d(%data, %weight, padding=[1, 1], channels=8, kernel_size=[3, 3])" in str(mod)
    params = {p.name_hint: np.full(p.checked_type.shape, 0.01, "float32") for p in mod["main"].params[1:]}
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype("float32")
    y = relay.create_executor("debug", mod=mod, device=tvm.cpu(0), target="llvm").evaluate()(x, **params)
    assert y.shape == (1, 10) and np.isclose(y.sum(), 1.0, atol=1e-5)


def test_relay_testing_workload_has_ndarray_params() -> None:
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    assert isinstance(params["conv0_weight"], NDArray)
    assert params["conv0_weight"].numpy().shape == (64, 3, 3, 3)
    assert "data" not in params and mod["main"].params[0].name_hint == "data"


TVM_SIGNATURES = {
    "resnet": ["batch_size", "num_classes", "num_layers", "image_shape", "layout", "dtype", "kwargs"],
    "mobilenet": ["batch_size", "num_classes", "image_shape", "dtype", "layout"],
    "vgg": ["batch_size", "num_classes", "image_shape", "dtype", "num_layers", "batch_norm"],
    "squeezenet": ["batch_size", "num_classes", "version", "image_shape", "dtype"],
}


def test_relay_testing_signatures_are_tvms() -> None:
    for name, params in TVM_SIGNATURES.items():
        assert list(inspect.signature(getattr(relay.testing, name).get_workload).parameters) == params, name
    mod, params = relay.testing.mobilenet_v2.get_workload(batch_size=1, image_shape=(3, 32, 32))
    assert all(isinstance(v, NDArray) for v in params.values())
    mod, params = relay.testing.squeezenet.get_workload(version="1.1", image_shape=(3, 64, 64))
    assert mod["main"].body.checked_type.shape == (1, 1000) and isinstance(params["conv1_weight"], NDArray)


def test_relay_operators_are_listed_once_in_tvms_op_modules() -> None:
    from tunecli.relay.op import reduce, tensor, transform

    for module in (tensor, reduce, transform):
        for name in module.__all__:
            assert getattr(relay, name) is getattr(module, name) is getattr(relay.op, name)
            assert name in relay.__all__ and name in relay.op.__all__
    assert relay.transform is not transform  # relay.transform is the pass module, as in TVM
