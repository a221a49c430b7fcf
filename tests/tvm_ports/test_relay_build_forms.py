"""The two forms of a TVM script's last step, building a network and running it: the older one
(``graph, lib, params = relay.build_module.build(...)``, then ``graph_runtime.create(graph, lib,
dev)`` with the parameters set as inputs) and the current one (``lib = relay.build(...)``,
``graph_executor.GraphModule(lib["default"](dev))``), the library also exported and loaded
back.  Both equal the relay interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_executor, graph_runtime
from tunecli.errors import TuneError

RNG = np.random.default_rng(2)


def small_network():
    data = relay.var("data", shape=(1, 3, 10, 10))
    weight = relay.var("weight", shape=(8, 3, 3, 3))
    bias = relay.var("bias", shape=(8,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(data, weight, padding=(1, 1)), bias))
    y = relay.nn.softmax(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y)))
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    params = {"weight": RNG.standard_normal((8, 3, 3, 3)).astype("float32"),
              "bias": RNG.standard_normal(8).astype("float32")}
    return mod, params


def expected(mod, params, x):
    return relay.create_executor("debug", mod=mod).evaluate()(x, **params).numpy()


def test_the_older_three_values_and_graph_runtime():
    mod, params = small_network()
    x = RNG.standard_normal((1, 3, 10, 10)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        graph, lib, built_params = relay.build_module.build(mod, target="llvm", params=params)
    assert isinstance(graph, str) and '"nodes"' in graph
    module = graph_runtime.create(graph, lib, tvm.cpu(0))
    module.set_input("data", tvm.nd.array(x))
    module.set_input(**built_params)
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), expected(mod, params, x), rtol=1e-4, atol=1e-6)


def test_the_current_form_exported_and_loaded_back(tmp_path: Path):
    mod, params = small_network()
    x = RNG.standard_normal((1, 3, 10, 10)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    path = tmp_path / "net.so"
    lib.export_library(str(path))
    for library in (lib, tvm.runtime.load_module(str(path))):
        module = graph_executor.GraphModule(library["default"](tvm.cpu(0)))
        module.set_input("data", x)
        module.run()
        np.testing.assert_allclose(module.get_output(0).numpy(), expected(mod, params, x), rtol=1e-4,
                                   atol=1e-6)


def test_the_mlp_of_relay_testing_builds_and_matches_the_interpreter():
    mod, params = relay.testing.mlp.get_workload(batch_size=2, num_classes=10, image_shape=(1, 8, 8))
    assert [p.name_hint for p in mod["main"].params][:3] == ["data", "fc1_weight", "fc1_bias"]
    x = RNG.standard_normal((2, 1, 8, 8)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    module.set_input("data", x)
    module.run()
    out = module.get_output(0).numpy()
    assert out.shape == (2, 10)
    np.testing.assert_allclose(out.sum(axis=1), [1.0, 1.0], rtol=1e-5)
    np.testing.assert_allclose(out, expected(mod, params, x), rtol=1e-4, atol=1e-6)


def test_parameters_bound_by_name_become_constants():
    mod, params = small_network()
    bound = relay.build_module.bind_params_by_name(mod["main"], params)
    assert [p.name_hint for p in bound.params] == ["data"]
    x = RNG.standard_normal((1, 3, 10, 10)).astype("float32")
    got = relay.create_executor("debug", mod=tvm.IRModule.from_expr(bound)).evaluate()(x).numpy()
    np.testing.assert_allclose(got, expected(mod, params, x), rtol=1e-5, atol=1e-7)
    assert relay.bind_params_by_name is relay.build_module.bind_params_by_name


def test_parameters_saved_and_loaded_in_tvms_file_layout(tmp_path: Path):
    _, params = small_network()
    params["steps"] = np.arange(5, dtype="int64")
    params["mask"] = np.array([True, False, True])
    blob = relay.save_param_dict(params)
    assert bytes(blob[:8]) == bytes.fromhex("b79c04054f8de5f7")  # TVM's list magic, little-endian
    path = tmp_path / "deploy.params"
    path.write_bytes(blob)
    loaded = relay.load_param_dict(bytearray(path.read_bytes()))
    assert list(loaded) == list(params)
    for name, value in params.items():
        assert loaded[name].dtype == value.dtype
        np.testing.assert_array_equal(loaded[name].numpy(), value)
    assert tvm.runtime.load_param_dict(tvm.runtime.save_param_dict(params)).keys() == params.keys()
    with pytest.raises(TuneError, match="not a TVM parameter file"):
        relay.load_param_dict(b"\0" * 32)
    with pytest.raises(TuneError, match="runs past the end"):
        relay.load_param_dict(blob[:-3])
