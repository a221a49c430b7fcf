"""TVM's ``tune_relay_cuda.py`` path over RPC: a network built for ``cuda`` is exported as a
``.tar`` (PTX, graph, parameters), uploaded to a device server and loaded there.  A server with a
GPU runs it (outputs equal the CPU build's); a server without one refuses the library with one
clear error and keeps serving."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import tunecli
from tests.arm_board import tiny_network
from tunecli import autotvm, relay
from tunecli.contrib import graph_executor as runtime
from tunecli.contrib import utils
from tunecli.engine.rpc.server import Server
from tunecli.engine.runtime import cuda
from tunecli.errors import RPCError

from .conftest import free_servers, wait_for

has_gpu = cuda(0).exist
X = np.random.default_rng(4).uniform(size=(1, 3, 16, 16)).astype("float32")


@pytest.fixture
def gpu_server(tracker, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    srv = Server("127.0.0.1", 0, 0, key="gpu", tracker_addr=("127.0.0.1", tracker.port), token="",
                 ping_period=0.3, unmatch_timeout=1.0).start()
    wait_for(lambda: free_servers(tracker, "gpu") == 1, what="server registered")
    yield srv
    srv.stop()


def _cuda_library():
    mod, params = tiny_network()
    target = tunecli.target.Target("cuda -arch=sm_80" if not has_gpu else "cuda")
    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"), relay.op.get("nn.dense")))
    assert tasks and all(str(t.target).startswith("cuda") for t in tasks)
    with tunecli.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)
        host = relay.build(mod, target="llvm", params=params)
    module = runtime.GraphModule(host["default"](tunecli.cpu(0)))
    module.run(data=X)
    return lib, module.get_output(0).numpy()


def test_a_cuda_network_goes_over_rpc_up_to_the_gpu(gpu_server, tracker):
    lib, expected = _cuda_library()
    tmp = utils.tempdir()
    lib.export_library(tmp.relpath("net.tar"))
    remote = autotvm.measure.request_remote("gpu", "127.0.0.1", tracker.port, timeout=300)
    remote.upload(tmp.relpath("net.tar"))
    if not has_gpu:
        with pytest.raises(RPCError, match="the library is for another machine: .*has no CUDA driver/GPU"):
            remote.load_module("net.tar")
        assert remote.listdir() == ["net.tar"]  # refused, and the session goes on
        remote.close()
        return
    rlib = remote.load_module("net.tar")
    dev = remote.cuda(0)
    module = runtime.GraphModule(rlib["default"](dev))
    module.set_input("data", tunecli.nd.array(X, dev))
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-6)
    timing = module.module.time_evaluator("run", dev, number=10, repeat=3)()
    assert len(timing.results) == 3 and all(r > 0 for r in timing.results)
    remote.close()
