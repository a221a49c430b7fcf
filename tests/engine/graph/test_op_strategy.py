"""A tunable call's strategy row and template arguments come from the strategy table: the first
row of the operator keys the call may use, its arguments filled by name from the call.  A 3x3,
stride-1 float32 convolution also has the Winograd row; which one a build uses is TVM's
``select_implementation``: the tuned one of lower cost, else the higher plevel (Winograd), and
under ``apply_graph_best`` the graph tuner's record of the call."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.op_strategy import (
    Implementation,
    conv2d_candidates,
    implementation,
    select_implementation,
    untuned_choice,
    winograd_implementation,
)
from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.record import encode
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.ops.registry import STRATEGIES
from tunecli.engine.ops.strategy import Strategy
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

LLVM = Target("llvm")


def _call(expr: g.Expr) -> g.Call:
    g.infer_types(g.Function(g.free_vars(expr), expr))
    return expr


def first_row(*keys: str) -> Strategy:
    """The row the table gives for the first of ``keys`` that has one on the host."""
    return next(rows[0] for k in keys if (rows := STRATEGIES.candidates(k, LLVM)))


def test_conv2d_row_and_arguments_by_name() -> None:
    x = relay.var("x", shape=(1, 16, 14, 14))
    call = _call(relay.nn.conv2d(x, relay.var("w", shape=(32, 16, 3, 3)), strides=(2, 2), padding=(1, 1)))
    impl = implementation(call, LLVM)
    assert impl.strategy is first_row("conv2d_NCHWc", "conv2d_nchw")
    facts = {"N": 1, "H": 14, "W": 14, "CI": 16, "CO": 32, "KH": 3, "KW": 3, "stride": (2, 2),
             "strides": (2, 2), "padding": (1, 1, 1, 1), "dilation": (1, 1), "dtype": "float32",
             "data": ("TENSOR", (1, 16, 14, 14), "float32"), "kernel": ("TENSOR", (32, 16, 3, 3), "float32"),
             "layout": "NCHW", "out_layout": "NCHW", "out_dtype": "float32"}
    named = dict(zip(impl.strategy.arg_names, impl.args, strict=True))
    assert named == {k: facts[k] for k in named}
    assert impl.workload == (impl.task_name, *impl.args)


def test_depthwise_dense_and_batch_matmul_rows() -> None:
    x = relay.var("x", shape=(1, 8, 6, 6))
    dw = implementation(_call(relay.nn.conv2d(x, relay.var("w", shape=(8, 1, 3, 3)), groups=8)), LLVM)
    assert dw.strategy is first_row("depthwise_conv2d_NCHWc", "depthwise_conv2d_nchw")
    m = relay.var("m", shape=(4, 32))
    dense = implementation(_call(relay.nn.dense(m, relay.var("w", shape=(10, 32)))), LLVM)
    assert dense.strategy is first_row("dense")
    facts = {"M": 4, "N": 10, "K": 32, "dtype": "float32", "data": ("TENSOR", (4, 32), "float32"),
             "weight": ("TENSOR", (10, 32), "float32"), "bias": None, "out_dtype": "float32"}
    named = dict(zip(dense.strategy.arg_names, dense.args, strict=True))
    assert named == {k: facts[k] for k in named}
    a, b = relay.var("a", shape=(2, 4, 8)), relay.var("b", shape=(2, 5, 8))
    bmm = implementation(_call(relay.nn.batch_matmul(a, b)), LLVM)
    assert bmm.strategy is first_row("batch_matmul")
    assert bmm.args == (("TENSOR", (2, 4, 8), "float32"), ("TENSOR", (2, 5, 8), "float32"), (2, 4, 5),
                        "float32", False, True)


def test_calls_no_row_fits_have_no_implementation() -> None:
    x = relay.var("x", shape=(1, 8, 6, 6))
    grouped = _call(relay.nn.conv2d(x, relay.var("w", shape=(8, 2, 3, 3)), groups=4))
    assert implementation(grouped, LLVM) is None
    assert implementation(_call(relay.nn.relu(x)), LLVM) is None


def test_a_cuda_target_gives_tvms_gpu_tasks() -> None:
    """conv2d, depthwise conv2d and dense on ``cuda`` are TVM's GPU tasks with TVM's workloads."""
    cuda = Target("cuda -arch=sm_90")
    x = relay.var("x", shape=(1, 16, 14, 14))
    conv = _call(relay.nn.conv2d(x, relay.var("w", shape=(32, 16, 3, 3)), padding=(1, 1)))
    assert implementation(conv, cuda).workload == (
        "conv2d_nchw.cuda", ("TENSOR", (1, 16, 14, 14), "float32"), ("TENSOR", (32, 16, 3, 3), "float32"),
        (1, 1), (1, 1, 1, 1), (1, 1), "float32")
    dw = _call(relay.nn.conv2d(x, relay.var("dw", shape=(16, 1, 3, 3)), padding=(1, 1), groups=16))
    assert implementation(dw, cuda).task_name == "depthwise_conv2d_nchw.cuda"
    dense = _call(relay.nn.dense(relay.var("d", shape=(1, 64)), relay.var("dw2", shape=(10, 64))))
    assert implementation(dense, cuda).workload == (
        "dense_small_batch.gpu", ("TENSOR", (1, 64), "float32"), ("TENSOR", (10, 64), "float32"), None,
        "float32")


def _conv3x3() -> g.Call:
    x = relay.var("x", shape=(1, 16, 8, 8))
    return _call(relay.nn.conv2d(x, relay.var("w", shape=(16, 16, 3, 3)), padding=(1, 1)))


def _record(impl: Implementation, cost: float) -> tuple:
    task = create(impl.task_name, impl.args, LLVM)
    return MeasureInput(LLVM, task, task.config_space.get(0)), MeasureResult((cost,), MeasureErrorNo.NO_ERROR,
                                                                             0.01, 0.0)


def test_a_3x3_stride_1_convolution_has_a_winograd_candidate_of_the_same_arguments() -> None:
    direct, winograd = conv2d_candidates(_conv3x3(), LLVM)
    assert (direct.task_name, winograd.task_name) == ("conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86")
    assert winograd.args == direct.args
    x = relay.var("x", shape=(1, 16, 8, 8))
    for other in (relay.nn.conv2d(x, relay.var("w", shape=(16, 16, 3, 3)), strides=(2, 2), padding=(1, 1)),
                  relay.nn.conv2d(x, relay.var("w", shape=(16, 16, 1, 1))),
                  relay.nn.conv2d(x, relay.var("w", shape=(16, 16, 3, 3)), dilation=(2, 2), padding=(2, 2)),
                  relay.nn.conv2d(x, relay.var("w", shape=(16, 1, 3, 3)), groups=16, padding=(1, 1)),
                  relay.nn.conv2d(relay.var("x", shape=(1, 16, 8, 8), dtype="float64"),
                                  relay.var("w", shape=(16, 16, 3, 3), dtype="float64"), padding=(1, 1))):
        assert winograd_implementation(_call(other), LLVM) is None
        assert len(conv2d_candidates(other, LLVM)) == 1


def test_without_records_the_higher_plevel_wins_winograd() -> None:
    candidates = conv2d_candidates(_conv3x3(), LLVM)
    assert candidates[1].strategy.plevel > candidates[0].strategy.plevel
    with ApplyHistoryBest([], pretuned=False):
        impl, cfg = select_implementation(candidates, LLVM)
    assert impl is candidates[1] and cfg.is_fallback


@pytest.mark.parametrize("costs, chosen", [((1e-3, 2e-3), 0), ((2e-3, 1e-3), 1), ((1e-3, None), 0),
                                           ((None, 1e-3), 1)])
def test_among_tuned_candidates_the_lower_cost_wins(costs: tuple, chosen: int) -> None:
    candidates = conv2d_candidates(_conv3x3(), LLVM)
    records = [_record(impl, cost) for impl, cost in zip(candidates, costs, strict=True) if cost is not None]
    with ApplyHistoryBest(records, pretuned=False):
        impl, cfg = select_implementation(candidates, LLVM)
    assert impl is candidates[chosen]
    assert not cfg.is_fallback and cfg.cost == min(c for c in costs if c is not None)


@pytest.mark.parametrize("direct_ms, chosen", [(0.98, 1), (0.80, 0)])
def test_the_implementation_an_untuned_build_runs_keeps_a_near_tie(direct_ms: float, chosen: int) -> None:
    """Untuned, Winograd runs (higher plevel): a direct record 2% faster keeps Winograd (timing
    noise), one 20% faster takes the call (``layout_choice.MARGIN``)."""
    candidates = conv2d_candidates(_conv3x3(), LLVM)
    assert untuned_choice(candidates, LLVM) == 1
    records = [_record(candidates[0], direct_ms * 1e-3), _record(candidates[1], 1e-3)]
    with ApplyHistoryBest(records, pretuned=False):
        impl, _ = select_implementation(candidates, LLVM)
    assert impl is candidates[chosen]


def test_apply_graph_best_answers_with_the_graph_tuners_record_of_the_call(tmp_path: Path) -> None:
    direct, winograd = conv2d_candidates(_conv3x3(), LLVM)
    path = tmp_path / "graph.log"
    path.write_text("".join(encode(*r) + "\n" for r in (_record(winograd, 2e-3), _record(direct, 1e-3))))
    faster_direct = [_record(direct, 1e-6)]
    with ApplyHistoryBest(faster_direct, pretuned=False), ApplyGraphBest(str(path)):
        first, _ = select_implementation([direct, winograd], LLVM)  # the first call: its record, Winograd
        second, _ = select_implementation([direct, winograd], LLVM)
    assert (first.task_name, second.task_name) == (winograd.task_name, direct.task_name)


ARM_BOARD = Target("llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon")


def test_an_arm_cpu_target_gives_tvms_arm_cpu_tasks() -> None:
    """The first target key with a row for the call decides (TVM's rule): ``arm_cpu`` convolutions
    are its spatial-pack templates, never x86's blocked or Winograd ones; a dense layer, which has no
    ``arm_cpu`` row, falls back to ``cpu``'s."""
    conv = _conv3x3()
    names = [impl.task_name for impl in conv2d_candidates(conv, ARM_BOARD)]
    assert names == ["conv2d_nchw_spatial_pack.arm_cpu"]
    assert winograd_implementation(conv, ARM_BOARD) is None
    assert implementation(conv, ARM_BOARD).workload == (
        "conv2d_nchw_spatial_pack.arm_cpu", ("TENSOR", (1, 16, 8, 8), "float32"),
        ("TENSOR", (16, 16, 3, 3), "float32"), (1, 1), (1, 1, 1, 1), (1, 1), "float32")
    x = relay.var("x", shape=(1, 8, 6, 6))
    dw = _call(relay.nn.conv2d(x, relay.var("w", shape=(8, 1, 3, 3)), groups=8, padding=(1, 1)))
    assert implementation(dw, ARM_BOARD).task_name == "depthwise_conv2d_nchw.arm_cpu"
    dense = _call(relay.nn.dense(relay.var("d", shape=(1, 64)), relay.var("dw2", shape=(10, 64))))
    assert implementation(dense, ARM_BOARD).strategy is implementation(dense, LLVM).strategy


def test_arm_cpu_convolutions_stay_nchw_through_alter_op_layout() -> None:
    from tunecli.engine.graph.passes.alter_op_layout import alter_op_layout

    conv = _conv3x3()
    fn = g.Function(g.free_vars(conv), conv)
    g.infer_types(fn)
    altered = alter_op_layout(fn, ARM_BOARD)
    assert altered.body.op.name == "nn.conv2d" and altered.body.attrs.data_layout == "NCHW"
    assert alter_op_layout(fn, LLVM).body.op.name != "nn.conv2d"  # x86: blocked (the check can fail)


def test_a_build_for_an_arm_board_uses_tvms_arm_cpu_package_records() -> None:
    """relay.build for ``-model=rk3399`` finds the board's record of a ResNet-18 convolution in the
    shipped arm_cpu tophub package (its workload is the arm_cpu task's)."""
    import tunecli

    x = relay.var("data", shape=(1, 64, 56, 56))
    y = relay.nn.conv2d(x, relay.var("w", shape=(64, 64, 3, 3)), padding=(1, 1))
    mod = tunecli.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y))
    target = Target("llvm -device=arm_cpu -model=rk3399 -mtriple=aarch64-linux-gnu -mattr=+neon")
    with tunecli.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target)
    assert lib.summary.line() == "1 of 1 tasks tuned"
