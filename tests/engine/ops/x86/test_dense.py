"""``dense.x86``: the kernel a task measures takes the weight packed in its config's panels; a network
built with a tuned record folds the same packing at build time and computes what the untuned build
computes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli import autotvm, relay
from tunecli.engine import graph as g
from tunecli.engine.build import build
from tunecli.engine.graph.build_module import build as relay_build
from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure import BuildResult, LocalBuilder
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry
from tunecli.engine.ops.reference import pack_dense_weight
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity


def _panels(cfg) -> int:
    return cfg["tile_x"].size[-1]


def test_the_measured_kernel_takes_the_packed_weight() -> None:
    task = autotvm_task.create("dense.x86", (4, 64, 32, "float32"), "llvm")
    space = task.config_space
    configs = [space.get(i) for i in (0, len(space) // 3, len(space) - 1)]
    builder = LocalBuilder(n_parallel=1)
    try:
        built = builder.build([MeasureInput(task.target, task, cfg) for cfg in configs])
    finally:
        builder.close()
    for cfg, result in zip(configs, built, strict=True):
        assert isinstance(result, BuildResult)
        nr = _panels(cfg)
        assert [tuple(a.shape) for a in result.arg_specs] == [(4, 32), (64 // nr, 32, nr), (4, 64)]
        _, bufs = task.instantiate(cfg)
        assert "layout_transform" not in bufs[2].op.input_tensors[1].op.tag  # no packing stage inside


@st.composite
def dense_case(draw) -> tuple:
    m = draw(st.sampled_from([1, 2, 3, 8, 17]))  # 17: a ragged M (no divisor from 4 to 16)
    n = draw(st.sampled_from([16, 24, 40, 64, 77]))
    k = draw(st.sampled_from([5, 16, 24]))
    space = autotvm_task.create("dense.x86", (m, n, k, "float32"), "llvm").config_space
    return (m, n, k), draw(st.integers(0, len(space) - 1))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dense_case(), st.integers(0, 2**31))
def test_sampled_configs_on_the_packed_weight_equal_numpy(case: tuple, seed: int) -> None:
    (m, n, k), index = case
    task = autotvm_task.create("dense.x86", (m, n, k, "float32"), "llvm")
    cfg = task.config_space.get(index)
    sch, bufs = task.instantiate(cfg)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    out = np.zeros((m, n), "float32")
    packed = pack_dense_weight(w, _panels(cfg), panels=bufs[1].shape[0])  # a ragged N: padded panels
    build(sch, bufs, target="llvm")(x, packed, out)
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(task.reference(x, packed), x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, n, k", [(1, 1000, 64), (3, 48, 20), (197, 50, 7), (5, 1, 3)])
def test_the_fallback_config_takes_the_packed_weight_too(m: int, n: int, k: int) -> None:
    strategy = registry.get_strategy("dense.x86")
    cfg = FallbackConfigEntity()
    call = strategy.kernel_call(cfg, m, n, k, "float32")
    (out,) = strategy.outputs_of(cfg, call)
    sch = strategy.schedule(cfg, [out])
    assert tuple(call.inputs[1].shape) == (-(-n // _panels(cfg)), k, _panels(cfg))
    assert tuple(out.shape) == (m, n)
    rng = np.random.default_rng(n)
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    got = np.zeros((m, n), "float32")
    build(sch, [*call.inputs, out], target="llvm")(x, pack_dense_weight(w, _panels(cfg)), got)
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-4)


def test_a_tuned_record_builds_the_network_with_its_panels_folded(tmp_path) -> None:
    x = relay.var("data", shape=(2, 40))
    w = relay.var("w", shape=(48, 40))
    b = relay.var("b", shape=(48,))
    mod = g.IRModule.from_expr(relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b)))
    rng = np.random.default_rng(1)
    params = {"w": rng.uniform(-1, 1, (48, 40)).astype("float32"),
              "b": rng.uniform(-1, 1, 48).astype("float32")}
    task, alternative = extract_from_program(mod, params, "llvm")
    assert task.workload == ("dense.x86", 2, 48, 40, "float32")
    assert alternative.name == "dense_pack.x86"  # untuned: the build keeps dense.x86's record
    log = tmp_path / "dense.log"
    tuner = autotvm.tuner.RandomTuner(task)
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(number=1, repeat=1, check_correctness=True))
    tuner.tune(n_trial=4, measure_option=option, callbacks=[autotvm.callback.log_to_file(str(log))])
    records = list(autotvm.record.load_from_file(str(log)))
    assert records and all(res.error_no == 0 for _, res in records)  # checked against numpy on the panels

    with PassContext(opt_level=3):
        with ApplyHistoryBest([], pretuned=False):
            untuned = relay_build(mod, "llvm", params=params)
        with autotvm.apply_history_best(str(log)) as ctx:
            tuned = relay_build(mod, "llvm", params=params)
            cfg = ctx.query(task.target, task.workload)
    assert tuned.summary.line() == "1 of 1 tasks tuned"
    nr = _panels(cfg)
    panels = [p for p in tuned.get_params().values() if p.ndim == 3]
    assert [p.shape for p in panels] == [(48 // nr, 40, nr)]  # packed once, at build time
    np.testing.assert_array_equal(panels[0], pack_dense_weight(params["w"], nr))

    data = rng.uniform(-1, 1, (2, 40)).astype("float32")
    outs = []
    for lib in (tuned, untuned):
        m = lib["default"](None)
        m.set_input("data", data)
        m.run()
        outs.append(m.get_output(0).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)
    want = np.maximum(data @ params["w"].T + params["b"], 0)
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-5)


def test_a_ragged_record_builds_the_network_on_padded_panels_and_rows() -> None:
    # 17 rows and 67 features have no vector-sized divisors: the record's tiles pass the shape
    x = relay.var("data", shape=(17, 8))
    w = relay.var("w", shape=(67, 8))
    mod = g.IRModule.from_expr(relay.nn.relu(relay.nn.dense(x, w)))
    rng = np.random.default_rng(5)
    params = {"w": rng.uniform(-1, 1, (67, 8)).astype("float32")}
    task = next(t for t in extract_from_program(mod, params, "llvm") if t.name == "dense.x86")
    space = task.config_space
    cfg = next(space.get(i) for i in range(len(space))
               if space.get(i)["tile_y"].size[1:] == [2, 5] and space.get(i)["tile_x"].size[1:] == [2, 16])
    record = (MeasureInput(task.target, task, cfg), MeasureResult((1e-6,), 0, 0.1, 0.0))
    with PassContext(opt_level=3), ApplyHistoryBest([record], pretuned=False):
        lib = relay_build(mod, "llvm", params=params)
    assert lib.summary.line().startswith("1 of ")
    panels = [p for p in lib.get_params().values() if p.ndim == 3]
    assert [p.shape for p in panels] == [(6, 8, 16)]  # 67 columns in whole tiles of 2 x 16: 96
    data = rng.uniform(-1, 1, (17, 8)).astype("float32")
    m = lib["default"](None)
    m.set_input("data", data)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(data @ params["w"].T, 0), rtol=1e-5,
                               atol=1e-5)
