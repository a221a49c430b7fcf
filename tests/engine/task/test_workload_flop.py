"""FLOP counts of TVM's x86 workloads from their serialized arguments (rules on their strategy rows)."""

from __future__ import annotations

import pytest

from tunecli.engine.ops.registry import STRATEGIES, workload_flop_rule
from tunecli.engine.task.workload_flop import count_workload_flop


def flop_from_workload(name: str, args: list) -> int | None:
    return count_workload_flop(workload_flop_rule(name), args)


def tensor(*shape: int, dtype: str = "float32") -> list:
    return ["TENSOR", list(shape), dtype]


def test_conv2d_nchwc_counts_one_multiply_add_per_step() -> None:
    args = [tensor(1, 3, 224, 224), tensor(64, 3, 7, 7), [2, 2], [3, 3, 3, 3], [1, 1], "NCHW", "NCHW",
            "float32"]
    assert flop_from_workload("conv2d_NCHWc.x86", args) == 2 * 64 * 112 * 112 * 3 * 7 * 7


def test_tvm_v01_conv2d_nchwc_workload_counts_the_same() -> None:
    old = [tensor(1, 3, 224, 224), tensor(64, 3, 7, 7), 3, [7, 7], [2, 2], [3, 3], "NCHW", "NCHW", "float32"]
    assert flop_from_workload("topi_x86_conv2d_NCHWc", old) == 2 * 64 * 112 * 112 * 3 * 7 * 7


def test_conv2d_nchwc_with_blocked_layouts_and_dilation() -> None:
    plain = [tensor(1, 32, 28, 28), tensor(64, 32, 3, 3), 1, 2, 2, "NCHW", "NCHW", "float32"]
    blocked = [tensor(1, 4, 28, 28, 8), tensor(4, 4, 3, 3, 8, 16), [1, 1], [2, 2], [2, 2], "NCHW8c",
               "NCHW16c", "float32"]
    expected = 2 * 64 * 28 * 28 * 32 * 9
    assert flop_from_workload("conv2d_NCHWc.x86", plain) == expected
    assert flop_from_workload("conv2d_NCHWc.x86", blocked) == expected


def test_depthwise_and_dense() -> None:
    dw = [tensor(1, 32, 112, 112), tensor(32, 1, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], "NCHW", "NCHW",
          "float32"]
    assert flop_from_workload("depthwise_conv2d_NCHWc.x86", dw) == 2 * 32 * 112 * 112 * 9
    dense = [tensor(4, 512), tensor(1000, 512), None, "float32"]
    assert flop_from_workload("dense_nopack.x86", dense) == 2 * 4 * 1000 * 512
    with_bias = [*dense[:2], tensor(1000), "float32"]
    assert flop_from_workload("dense_pack.x86", with_bias) == 2 * 4 * 1000 * 512 + 4000


def test_batch_matmul_in_each_transposed_form() -> None:
    nt = [tensor(12, 128, 64), tensor(12, 128, 64), [12, 128, 128], "float32", False, True]
    assert flop_from_workload("batch_matmul.x86", nt) == 2 * 12 * 128 * 128 * 64
    tn = [tensor(12, 64, 128), tensor(1, 64, 32), [12, 128, 32], "float32", True, False]
    assert flop_from_workload("batch_matmul.x86", tn) == 2 * 12 * 128 * 32 * 64


@pytest.mark.parametrize("args", [
    [], [1, 2, 3],
    [tensor(1, 3, 4, 4), tensor(8, 3, 7, 7), 1, 0, 1, "NCHW", "NCHW", "float32"],  # window too big
    [tensor(1, 3, 4, 4), tensor(8, 3, 3, 3), 0, 0, 1, "NCHW", "NCHW", "float32"],  # stride 0
    [tensor(0, 3, 4, 4), tensor(8, 3, 3, 3), 1, 0, 1, "NCHW", "NCHW", "float32"],
    [["TENSOR", ["a"], "float32"], tensor(1)], "garbage",
])
def test_malformed_workloads_have_no_count(args) -> None:
    assert flop_from_workload("conv2d_NCHWc.x86", args) is None
    assert flop_from_workload("unknown", [tensor(1, 1)]) is None


def test_the_rules_sit_on_the_rows_of_tvms_x86_templates() -> None:
    rows = sorted(s.name for s in STRATEGIES if s.workload_flop is not None)
    assert rows == ["batch_matmul.x86", "conv2d_NCHWc.x86", "dense_nopack.x86", "dense_pack.x86",
                    "depthwise_conv2d_NCHWc.x86"]
    assert workload_flop_rule("dense.x86") is None  # its FLOPs come from tracing the template
