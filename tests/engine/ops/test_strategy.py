"""The strategy table: rows keyed by operator and target key, argument names from the signature."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from tunecli.engine.ops import registry
from tunecli.engine.ops.strategy import StrategyTable
from tunecli.engine.ops.x86 import dense
from tunecli.engine.task.space import ConfigSpace
from tunecli.errors import InstantiationError


def test_select_by_operator_and_target_keys():
    table = registry.STRATEGIES
    assert table.select("conv2d_nchw", "llvm").name == "conv2d_nchw.x86"  # before the tutorial's (plevel)
    assert [s.name for s in table.candidates("conv2d_nchw", "llvm")] == ["conv2d_nchw.x86",
                                                                        "tutorial/conv2d_no_batching"]
    assert table.select("dense", "llvm -mtriple=aarch64-linux-gnu").name == "dense.x86"  # arm_cpu, then cpu
    assert table.select("dense", "cuda").name == "dense_small_batch.gpu"  # key cuda, then gpu
    with pytest.raises(InstantiationError, match="no strategy for operator 'batch_matmul' on target 'cuda'"):
        table.select("batch_matmul", "cuda")
    assert ("dense", "cpu") in table.keys() and len(table) == len(registry.builtin_names())


def test_a_target_specific_row_comes_before_the_generic_one():
    arm = replace(dense.DENSE_PACK, target_key="arm_cpu", name="dense.arm_cpu")
    table = StrategyTable([dense.DENSE_PACK, arm])
    assert table.select("dense", "llvm -mtriple=aarch64-linux-gnu") is arm
    assert table.select("dense", "llvm") is dense.DENSE_PACK
    with pytest.raises(InstantiationError, match="registered twice"):
        table.add(arm)


def test_argument_names_and_defaults_come_from_the_signature():
    for strategy in registry.STRATEGIES:
        assert strategy.arg_names == tuple(inspect.signature(strategy.declare).parameters)
    conv = registry.get_strategy("conv2d_nchw.x86")
    assert conv.arg_names == ("N", "H", "W", "CI", "CO", "KH", "KW", "stride", "padding", "dilation", "dtype")
    assert conv.defaults == {"dilation": 1, "dtype": "float32"}
    assert inspect.signature(registry.TEMPLATES["conv2d_nchw.x86"]) == inspect.signature(conv.declare)


def test_outputs_are_declared_and_checked():
    cfg = ConfigSpace()
    call = dense.DENSE_PACK.declare(4, 16, 8)
    (out,) = dense.DENSE_PACK.outputs_of(cfg, call)
    assert tuple(out.shape) == (4, 16)
    two = replace(dense.DENSE_PACK, outputs=("out", "extra"))
    with pytest.raises(InstantiationError, match="declares the outputs"):
        two.outputs_of(ConfigSpace(), call)


def test_reference_of_a_task_binds_the_operator_attributes():
    ref = registry.get_strategy("conv2d_nchw.x86").reference_for(1, 6, 6, 4, 16, 3, 3, 2, (1, 0))
    assert ref.keywords == {"stride": 2, "padding": (1, 0), "dilation": 1, "out_dtype": "float32"}
