"""The network half of AutoTVM-era scripts (tune_relay_x86 of TVM 0.6) by changing the import:
``with relay.build_config(opt_level=3)``, the three values of ``relay.build_module.build``,
``graph_runtime.create(graph, lib, ctx)``, ``module.module.time_evaluator("run", ctx)`` and
``get_output(0, tvm.nd.empty(shape))``."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_runtime
from tunecli.errors import GraphError


def conv_relu() -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    x = relay.var("data", shape=(1, 16, 8, 8), dtype="float32")
    w = relay.var("weight", shape=(16, 16, 3, 3), dtype="float32")
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1), channels=16, kernel_size=(3, 3)))
    weight = np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype("float32") * 0.1
    return tvm.IRModule.from_expr(relay.Function([x, w], y)), {"weight": weight}


def test_the_old_tune_relay_evaluation_flow():
    mod, params = conv_relu()
    with relay.build_config(opt_level=3):
        graph, lib, params = relay.build_module.build(mod, target="llvm", params=params)
    ctx = tvm.context("llvm", 0)
    module = graph_runtime.create(graph, lib, ctx)
    data = np.random.default_rng(1).uniform(size=(1, 16, 8, 8)).astype("float32")
    module.set_input("data", tvm.nd.array(data, ctx))
    module.set_input(**params)
    ftimer = module.module.time_evaluator("run", ctx, number=1, repeat=3)
    assert len(ftimer().results) == 3
    out = module.get_output(0, tvm.nd.empty((1, 16, 8, 8), ctx=ctx))
    want = relay.create_executor("debug", mod=mod, target="llvm").evaluate()(data, conv_relu()[1]["weight"])
    np.testing.assert_allclose(out.asnumpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_build_config_is_the_pass_context_relay_build_reads():
    mod, params = conv_relu()
    with relay.build_config(opt_level=3) as ctx:
        assert tvm.transform.PassContext.current() is ctx and ctx.opt_level == 3
        blocked, _, _ = relay.build(mod, target="llvm", params=params)
    with relay.build_config(opt_level=3, disabled_pass=["AlterOpLayout"]):
        plain, _, _ = relay.build(mod, target="llvm", params=params)
    assert "layout_transform" in blocked and "layout_transform" not in plain


def test_a_fallback_device_other_than_the_cpu_is_refused():
    assert relay.build_config(fallback_device=tvm.cpu(0)).opt_level == 2
    with pytest.raises(GraphError, match="fallback_device"):
        relay.build_config(opt_level=3, fallback_device=tvm.gpu(0))
