"""relay.build: networks built into kernels run by the graph executor equal the interpreter; the
tuned configs of a log are used, the others fall back with one summary line; the memory plan
reuses buffers."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from tunecli import autotvm, relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import BuiltGraph, build
from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.graph.models import mobilenet, resnet
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.log import tophub
from tunecli.engine.log.layout_choice import choose
from tunecli.engine.target import Target
from tunecli.errors import GraphError

from .test_op_strategy import first_row

RNG = np.random.default_rng(0)


def _build(mod: g.IRModule, params: dict, **kw: object) -> BuiltGraph:
    with PassContext(opt_level=3):
        return build(mod, "llvm", params=params, **kw)


def _run(lib: BuiltGraph, data: np.ndarray) -> np.ndarray:
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    return m.get_output(0).numpy()


@pytest.fixture(scope="module")
def resnet18() -> tuple:
    mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    return mod, params, _build(mod, params)


@pytest.mark.slow
def test_resnet18_equals_the_interpreter(resnet18: tuple) -> None:
    mod, params, lib = resnet18
    data = RNG.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(_run(lib, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_resnet18_graph_has_one_kernel_call_per_fused_group(resnet18: tuple) -> None:
    _, params, lib = resnet18
    graph = json.loads(lib.get_graph_json())
    calls = [n for n in graph["nodes"] if n["op"] == "tvm_op"]
    # 31 at ImageNet size without Winograd, without the max pooling of the 32x32 variant; with 16
    # vector registers its 14 Winograd convolutions' fallback configs write NCHW16c where the next
    # reads NCHW8c: 13 transforms; with 32 all read and write NCHW32c (network_channel_block)
    assert len(calls) == 30 + (0 if Target("llvm").vector_bits >= 512 else 13)
    assert sum("conv2d" in n["attrs"]["func_name"] for n in calls) == 21
    assert sum("winograd" in n["attrs"]["func_name"] for n in calls) == 14  # 3x3, stride 1
    assert {n["attrs"]["func_name"] for n in calls} == set(lib.kernels)
    inputs = [n["name"] for n in graph["nodes"] if n["op"] == "null"]
    assert inputs[0] == "data" and set(inputs[1:]) == set(lib.get_params())


@pytest.mark.slow
def test_weights_are_re_laid_out_at_build_time(resnet18: tuple) -> None:
    _, params, lib = resnet18
    kernels = [p for p in lib.get_params().values() if p.ndim == 6]
    assert len(kernels) == 21  # every convolution reads its kernel in channel blocks [O/o, I/i, KH, KW, i, o]
    shifts = [p for p in lib.get_params().values() if p.ndim == 5]
    assert shifts and all(p.shape[0] == 1 and p.shape[2:4] == (1, 1) for p in shifts)  # [1, C/b, 1, 1, b]
    assert not any(p.ndim == 4 for p in lib.get_params().values())


@pytest.mark.slow
def test_memory_plan_reuses_intermediate_buffers(resnet18: tuple) -> None:
    _, _, lib = resnet18
    planned, unplanned = lib.plan.intermediate_bytes()
    largest = lib.plan.largest_output_bytes()
    assert largest == 64 * 32 * 32 * 4  # the first stage's activations
    assert planned <= unplanned / 3
    assert planned <= 3 * largest


def test_one_summary_line_instead_of_a_warning_per_op(caplog: pytest.LogCaptureFixture, no_packages) -> None:
    x = relay.var("x", shape=(1, 8, 8, 8))
    net = relay.nn.relu(
        relay.nn.conv2d(
            relay.nn.relu(relay.nn.conv2d(x, relay.var("w1", shape=(16, 8, 3, 3)), padding=(1, 1))),
            relay.var("w2", shape=(16, 16, 1, 1)),
        )
    )
    small = g.IRModule.from_expr(net)
    weights = {
        "w1": RNG.uniform(-1, 1, (16, 8, 3, 3)).astype("float32"),
        "w2": RNG.uniform(-1, 1, (16, 16, 1, 1)).astype("float32"),
    }
    with caplog.at_level(logging.INFO, logger="autotvm"):
        lib = _build(small, weights)
    records = [r for r in caplog.records if r.name == "autotvm"]
    assert len(records) == 1
    conv = first_row("conv2d_NCHWc_winograd").name  # the 3x3 stride-1 convolution, untuned: Winograd
    assert records[0].getMessage().startswith(f"0 of 2 tasks tuned; 2 fell back: {conv} (")
    assert lib.summary.line() == records[0].getMessage()


def test_apply_history_best_uses_the_logged_config(tmp_path, no_packages) -> None:
    x = relay.var("data", shape=(1, 8, 8, 8))
    w = relay.var("w", shape=(32, 8, 3, 3))
    mod = g.IRModule.from_expr(relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))))
    params = {"w": RNG.uniform(-1, 1, (32, 8, 3, 3)).astype("float32")}
    (task,) = extract_from_program(mod, params, "llvm")
    log = tmp_path / "net.log"
    tuner = autotvm.tuner.RandomTuner(task)
    option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=1, repeat=1)
    )
    tuner.tune(n_trial=3, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(log))])
    # the fastest record answers unless a default-layout one is within layout_choice.MARGIN of it
    # (the random configs may be in several layouts): the record the rule picks
    logged = [r for r in autotvm.record.load_from_file(str(log)) if r[1].error_no == 0]
    best_index = choose(logged)[0].config.index
    fallback = _build(mod, params)
    with autotvm.apply_history_best(str(log)) as ctx:
        tuned = _build(mod, params)
        assert ctx.query(task.target, task.workload).index == best_index
    assert tuned.summary.line() == "1 of 1 tasks tuned"
    assert fallback.summary.line().startswith("0 of 1 tasks tuned; 1 fell back")
    data = RNG.uniform(-1, 1, (1, 8, 8, 8)).astype("float32")
    np.testing.assert_allclose(_run(tuned, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-5)


def test_without_a_dispatch_context_the_pretuned_packages_configure_the_build(tmp_path) -> None:
    x = relay.var("data", shape=(1, 8, 8, 8))
    w = relay.var("w", shape=(32, 8, 3, 3))
    mod = g.IRModule.from_expr(relay.nn.conv2d(x, w, padding=(1, 1)))
    params = {"w": RNG.uniform(-1, 1, (32, 8, 3, 3)).astype("float32")}
    (task,) = extract_from_program(mod, params, "llvm")
    log = tmp_path / "net.log"
    tuner = autotvm.tuner.RandomTuner(task)
    runner = autotvm.LocalRunner(number=1, repeat=1)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=runner)
    tuner.tune(n_trial=2, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(log))])
    package = tmp_path / "package"
    package.mkdir()
    autotvm.record.pick_best(str(log), str(package / "llvm.log"))
    try:
        tophub.set_locations([package])
        assert _build(mod, params).summary.line() == "1 of 1 tasks tuned"
        tophub.set_locations("NONE")
        assert _build(mod, params).summary.line().startswith("0 of 1 tasks tuned; 1 fell back")
    finally:
        tophub.set_locations(None)


def test_mobilenet_equals_the_interpreter() -> None:
    mod, params = mobilenet.get_workload(image_shape=(3, 32, 32))
    lib = _build(mod, params)
    data = RNG.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(_run(lib, data), g.evaluate(mod, [data], params), rtol=1e-4, atol=1e-6)


def test_a_function_builds_and_bad_input_is_named() -> None:
    x = relay.var("data", shape=(2, 3))
    lib = _build(g.Function([x], relay.sigmoid(x)), {})
    np.testing.assert_allclose(_run(lib, np.zeros((2, 3), "float32")), 0.5)
    with pytest.raises(GraphError, match="relay.build: expected an IRModule or a Function, got Var"):
        build(x, "llvm")
