"""TVM's ``tvm.contrib.debugger.debug_executor`` usage (its debugger guide) with ``import tvm``
changed to ``import tunecli as tvm``: ``create(lib.get_graph_json(), lib.get_lib(), dev, dump_root)``,
``set_input(**params)``, ``run()`` printing the per-kernel table, ``get_output`` into an NDArray."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_executor
from tunecli.contrib.debugger import debug_executor
from tunecli.errors import ArgumentError, DeviceError


@pytest.fixture(scope="module")
def built():
    data = relay.var("data", shape=(1, 3, 8, 8))
    weight = relay.var("weight", shape=(8, 3, 3, 3))
    dense_w = relay.var("dense_w", shape=(4, 8))
    y = relay.nn.relu(relay.nn.conv2d(data, weight, padding=(1, 1)))
    y = relay.nn.dense(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y)), dense_w)
    mod = tvm.IRModule.from_expr(relay.Function([data, weight, dense_w], relay.nn.softmax(y)))
    rng = np.random.default_rng(1)
    params = {"weight": rng.uniform(-1, 1, (8, 3, 3, 3)).astype("float32"),
              "dense_w": rng.uniform(-1, 1, (4, 8)).astype("float32")}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    return lib, rng.uniform(-1, 1, (1, 3, 8, 8)).astype("float32")


def test_tvms_debugger_usage(built, tmp_path, capsys) -> None:
    lib, data = built
    dev = tvm.cpu(0)
    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), dev, dump_root=str(tmp_path / "tvmdbg"))
    m.set_input("data", tvm.nd.array(data))
    m.set_input(**lib.get_params())
    m.run()
    tvm_out = m.get_output(0, tvm.nd.empty((1, 4), "float32")).numpy()

    plain = graph_executor.GraphModule(lib["default"](dev))
    plain.set_input("data", data)
    plain.run()
    np.testing.assert_array_equal(tvm_out, plain.get_output(0).numpy())
    printed = capsys.readouterr().out
    assert printed.startswith("Node Name") and "Total_time" in printed
    assert (tmp_path / "tvmdbg" / "_tvmdbg_device_CPU_0" / "_tvmdbg_execution_trace.json").is_file()
    m.exit()
    assert not (tmp_path / "tvmdbg").exists()


def test_run_individual_and_the_built_library(built) -> None:
    lib, data = built
    m = debug_executor.create(lib.get_graph_json(), lib, tvm.cpu())
    times = m.run_individual(number=10, repeat=1, min_repeat_ms=0)
    assert len(times) == len(lib.plan.ops) and all(t > 0 for t in times)
    assert isinstance(m, debug_executor.GraphModuleDebug) and isinstance(m, graph_executor.GraphModule)
    m.set_input("data", data)
    profile = m.profile()
    assert profile.run_seconds > 0 and len(profile.ops) == len(times)


def _cuda_build():
    data = relay.var("data", shape=(1, 3, 8, 8))
    weight = relay.var("weight", shape=(8, 3, 3, 3))
    y = relay.nn.softmax(relay.nn.batch_flatten(relay.nn.relu(relay.nn.conv2d(data, weight, padding=(1, 1)))))
    mod = tvm.IRModule.from_expr(relay.Function([data, weight], y))
    params = {"weight": np.random.default_rng(2).uniform(-1, 1, (8, 3, 3, 3)).astype("float32")}
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target="cuda", params=params)


@pytest.mark.skipif(tvm.cuda(0).exist, reason="a CUDA GPU is present")
def test_a_cuda_build_without_a_gpu_says_so() -> None:
    lib = _cuda_build()
    for libmod in (lib.get_lib(), lib):
        with pytest.raises(DeviceError, match=r"graph executor on cuda\(0\): cannot run the network"):
            debug_executor.create(lib.get_graph_json(), libmod, tvm.cuda(0))
    with pytest.raises(ArgumentError, match="the kernels are for .*; got device cpu"):
        debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))


@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_a_cuda_build_is_timed_per_kernel_on_the_gpu(capsys) -> None:
    lib = _cuda_build()
    data = np.random.default_rng(3).uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    plain = graph_executor.GraphModule(lib["default"](tvm.cuda(0)))
    plain.set_input("data", data)
    plain.run()
    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cuda(0))
    m.set_input("data", data)
    m.set_input(**lib.get_params())
    profile = m.run(number=2, min_repeat_ms=0)
    assert len(profile.ops) == len(lib.plan.ops) and all(op.seconds > 0 for op in profile.ops)
    np.testing.assert_array_equal(m.get_output(0).numpy(), plain.get_output(0).numpy())
    assert "Total_time" in capsys.readouterr().out
