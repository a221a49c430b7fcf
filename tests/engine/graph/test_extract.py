"""Task extraction: the distinct tunable tasks of a network, named and argued as the target's
strategy rows say, so TVM's logs of the same network apply."""

from __future__ import annotations

import json

import pytest

from tests.engine.autotvm_templates import tophub_dir
from tunecli import relay
from tunecli.engine.graph import op_strategy
from tunecli.engine.graph.extract import (
    extract_from_multiple_program,
    extract_from_program,
    task_occurrences,
    tunable_calls,
    tunable_operators,
)
from tunecli.engine.graph.models import mobilenet, resnet
from tunecli.engine.ops.registry import STRATEGIES
from tunecli.engine.ops.strategy import OpCall, Strategy, StrategyTable
from tunecli.engine.target import Target
from tunecli.errors import GraphError, TargetError

from .test_op_strategy import first_row

#: TVM's argument names of ``conv2d_NCHWc.x86``.
NCHWC_ARGS = ("data", "kernel", "strides", "padding", "dilation", "layout", "out_layout", "out_dtype")


@pytest.fixture(scope="module")
def resnet18() -> tuple:
    return resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))


def _tophub_inputs() -> list[list]:
    """``[name, *args]`` of every conv2d_NCHWc.x86 record of TVM's x86 package (ResNet-18 and -50)."""
    rows = []
    for line in (tophub_dir() / "llvm_v0.04.log").read_text().splitlines():
        if line.startswith("{"):
            target, name, args, _ = json.loads(line)["input"]
            if name == "conv2d_NCHWc.x86":
                rows.append([name, *args])
    return rows


def _convolution(names: tuple[str, ...], args: tuple | list) -> tuple:
    """(data shape, kernel shape, strides, padding, dilation) of a conv task in either argument scheme."""
    a = dict(zip(names, args, strict=True))
    if "data" in a:
        return (tuple(a["data"][1]), tuple(a["kernel"][1]), tuple(a["strides"]), tuple(a["padding"]),
                tuple(a["dilation"]))
    return ((a["N"], a["CI"], a["H"], a["W"]), (a["CO"], a["CI"], a["KH"], a["KW"]), tuple(a["stride"]),
            tuple(a["padding"]), tuple(a["dilation"]))


def test_resnet18_conv_tasks_are_the_twelve_tophub_convolutions(resnet18: tuple) -> None:
    mod, params = resnet18
    tasks = extract_from_program(mod["main"], target="llvm", params=params, ops=(relay.op.get("nn.conv2d"),))
    assert len(tasks) == 12
    row = first_row("conv2d_NCHWc", "conv2d_nchw")
    assert {t.name for t in tasks} == {row.name}
    tophub = _tophub_inputs()
    ours = {_convolution(row.arg_names, t.args) for t in tasks}
    assert ours <= {_convolution(NCHWC_ARGS, r[1:]) for r in tophub}
    if row.name == "conv2d_NCHWc.x86":  # TVM's template: the workloads are the log's, byte for byte
        assert {json.dumps(t.workload) for t in tasks} <= {json.dumps(r) for r in tophub}
    assert all(len(t.config_space) > 1 for t in tasks)


def test_every_tunable_op_without_a_filter_and_occurrences(resnet18: tuple) -> None:
    mod, params = resnet18
    tasks = extract_from_program(mod, params, "llvm")
    assert len(tasks) == 14 and [t.name for t in tasks[-2:]] == [first_row("dense").name, "dense_pack.x86"]
    counts = task_occurrences(mod, params, "llvm", ops=["nn.conv2d"])
    assert sum(counts.values()) == 21 and len(counts) == 12


def test_winograd_tasks_are_opt_in_beside_the_direct_ones(resnet18: tuple) -> None:
    mod, params = resnet18
    direct = extract_from_program(mod, params, "llvm", ops=(relay.op.get("nn.conv2d"),))
    ops = (relay.op.get("nn.conv2d"), relay.op.get("nn.contrib_conv2d_NCHWc_winograd"))
    tasks = extract_from_program(mod, params, "llvm", ops=ops)
    winograd = [t for t in tasks if t.name == "conv2d_NCHWc_winograd.x86"]
    assert len(tasks) == 16 and len(winograd) == 4
    assert [t.workload for t in tasks if t not in winograd] == [t.workload for t in direct]
    for t in winograd:  # each right after the direct task of its convolution, with the same arguments
        before = tasks[tasks.index(t) - 1]
        assert before.name == "conv2d_NCHWc.x86" and before.args == t.args
        assert t.args[1][1][2:] == (3, 3) and t.args[2] == (1, 1)
    only = extract_from_program(mod, params, "llvm", ops=["nn.contrib_conv2d_NCHWc_winograd"])
    assert [t.workload for t in only] == [t.workload for t in winograd]
    counts = task_occurrences(mod, params, "llvm", ops=ops)
    assert sum(counts[t.workload] for t in winograd) == 13  # the 3x3 stride-1 convolutions


def test_each_winograd_convolution_is_one_operator_with_two_alternatives(resnet18: tuple) -> None:
    mod, params = resnet18
    ops = ["nn.conv2d", "nn.contrib_conv2d_NCHWc_winograd", "nn.dense"]
    operators = tunable_operators(mod, params, Target("llvm"), ops=ops)
    tasks = extract_from_program(mod, params, "llvm", ops=ops)
    assert [w for op in operators for w in op.workloads] == [t.workload for t in tasks]  # each task once
    convs = [op for op in operators if op.workloads[0][0] == "conv2d_NCHWc.x86"]
    assert sum(op.occurrences for op in convs) == 21  # every convolution call once
    for op in convs:
        kernel, strides = op.workloads[0][2:4]
        if kernel[1][2:] == (3, 3) and strides == (1, 1):  # the four 3x3 stride-1 layers: 13 calls
            assert [w[0] for w in op.workloads] == ["conv2d_NCHWc.x86", "conv2d_NCHWc_winograd.x86"]
            assert op.workloads[1][1:] == op.workloads[0][1:]
        else:
            assert len(op.workloads) == 1
    assert [op.occurrences for op in convs if len(op.workloads) == 2] == [4, 3, 3, 3]
    assert len(operators) == 13 and operators[-1].workloads == tuple(t.workload for t in tasks[-2:])


def test_a_conv2d_nchwc_row_gives_tvms_workloads_exactly(resnet18: tuple,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Switching the template is a table row: with a row named and argued as TVM's
    ``conv2d_NCHWc.x86``, the workloads are byte for byte those of TVM's tophub log."""
    base = first_row("conv2d_nchw")

    def declare(data, kernel, strides, padding, dilation=(1, 1), layout="NCHW", out_layout="NCHW",
                out_dtype="float32") -> OpCall:
        raise AssertionError("not traced in this test")

    nchwc = Strategy(op="conv2d_NCHWc", target_key="cpu", name="conv2d_NCHWc.x86", declare=declare,
                     compute=base.compute, schedule=base.schedule, reference=base.reference, outputs=("out",))
    others = [s for s in STRATEGIES if s.op != "conv2d_NCHWc"]
    monkeypatch.setattr(op_strategy, "STRATEGIES", StrategyTable([nchwc, *others]))
    mod, params = resnet18
    impls = tunable_calls(mod, params, Target("llvm -mcpu=skylake-avx512"), ops=["nn.conv2d"])
    workloads = {json.dumps(i.workload) for i in impls}
    assert len(workloads) == 12
    assert workloads <= {json.dumps(r) for r in _tophub_inputs()}


def test_depthwise_convolutions_use_the_depthwise_row() -> None:
    mod, params = mobilenet.get_workload(image_shape=(3, 32, 32))
    names = {t.name for t in extract_from_program(mod, params, "llvm", ops=[relay.op.get("nn.conv2d")])}
    assert names == {first_row("conv2d_NCHWc", "conv2d_nchw").name,
                     first_row("depthwise_conv2d_NCHWc", "depthwise_conv2d_nchw").name}


def test_an_unknown_operator_is_named(resnet18: tuple) -> None:
    mod, params = resnet18
    with pytest.raises(GraphError, match="extract_from_program: unknown operator 'nn.conv4d'"):
        extract_from_program(mod, params, "llvm", ops=["nn.conv4d"])


@pytest.mark.parametrize("target", ["opencl", "opencl -device=mali", "vulkan", "rocm"])
def test_a_target_no_backend_compiles_is_refused_before_tasks_are_made(resnet18: tuple, target: str) -> None:
    """tune_relay_mobile_gpu's targets: tasks for them would fail at every build, so none are made."""
    mod, params = resnet18
    with pytest.raises(TargetError, match=r"extract_from_program: .*no backend compiles for target "
                                          rf"'{target}'; target kinds with one: \['cuda', 'llvm'"):
        extract_from_program(mod, params, target)
    with pytest.raises(TargetError, match="extract_from_multiple_program: "):
        extract_from_multiple_program([mod], [params], target)
