"""An anchor op's strategy schedule absorbs an injective epilogue: ``relu(op(...) + bias)`` in one kernel."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tests.engine.template_cases import SMALL_CASES
from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ops import registry
from tunecli.engine.ops.epilogue import inline_between, is_injective
from tunecli.engine.ops.nn import bias_add, relu
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task import task as autotvm_task
from tunecli.errors import ScheduleError


def fused_bias_relu(name, args, cfg):
    """``relu(bias_add(op, bias))`` of strategy ``name``, scheduled by its schedule; (schedule, args).

    The bias is added along axis 1 (the channel blocks of an NCHWc output).
    """
    strategy = registry.get_strategy(name)
    call = strategy.kernel_call(cfg, *args)
    (out,) = strategy.outputs_of(cfg, call)
    bias = te.placeholder((out.shape[1],), dtype=out.dtype, name="bias")
    fused = relu(bias_add(out, bias, axis=1))
    return strategy.schedule(cfg, [out], epilogue=fused), [*call.inputs, bias, fused]


def run_fused(name, args, cfg, rng):
    """Build and run the fused kernel; return (its output, numpy's)."""
    sch, tensors = fused_bias_relu(name, args, cfg)
    mod = build(sch, tensors, target="llvm")
    inputs = [rng.standard_normal(t.shape).astype(t.dtype) for t in tensors[:-1]]
    got = np.zeros(tensors[-1].shape, dtype=tensors[-1].dtype)
    mod(*inputs, got)
    *op_inputs, bias = inputs
    task = autotvm_task.create(name, args, "llvm")
    want = np.maximum(task.reference(*op_inputs) + bias.reshape((-1,) + (1,) * (got.ndim - 2)), 0)
    return got, want


@pytest.mark.parametrize("name", registry.builtin_names())
def test_bias_relu_epilogue_matches_numpy(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    space = autotvm_task.create(name, SMALL_CASES[name], "llvm").config_space
    for index in sorted({0, len(space) - 1, *(int(i) for i in rng.integers(0, len(space), size=2))}):
        got, want = run_fused(name, SMALL_CASES[name], space.get(index), rng)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{name} config {index}")


def test_dense_epilogue_is_written_from_the_register_tile():
    space = autotvm_task.create("dense.x86", SMALL_CASES["dense.x86"], "llvm").config_space
    cfg = space.get(len(space) - 1)
    text = str(lower(*fused_bias_relu("dense.x86", SMALL_CASES["dense.x86"], cfg)))
    assert "allocate T_dense_pack[" in text and "], local" in text  # the GEMM accumulates in registers
    assert "T_bias_add" not in text  # inlined into the epilogue
    assert text.count("T_relu[") == 1  # the only store to memory: one per output element
    assert "max((T_dense_pack[" in text


def test_conv2d_epilogue_absorbs_the_unpack_stage():
    space = autotvm_task.create("conv2d_nchw.x86", SMALL_CASES["conv2d_nchw.x86"], "llvm").config_space
    text = str(lower(*fused_bias_relu("conv2d_nchw.x86", SMALL_CASES["conv2d_nchw.x86"], space.get(0))))
    assert "conv2d_nchw[" not in text and "T_bias_add" not in text
    assert "T_relu[" in text and "(conv2d_NCHWc[" in text


def test_only_injective_stages_fuse():
    a = te.placeholder((4, 8), name="a")
    k = te.reduce_axis((0, 8), name="k")
    anchor = te.compute((4,), lambda i: te.sum(a[i, k], axis=k), name="anchor")
    b = te.placeholder((4,), name="b")
    unrelated = relu(b)
    assert is_injective(unrelated.op) and not is_injective(anchor.op)
    with pytest.raises(ScheduleError, match="does not read the outputs of anchor"):
        inline_between(create_schedule(unrelated.op), [anchor], unrelated)
    k2 = te.reduce_axis((0, 4), name="k2")
    total = te.compute((1,), lambda i: te.sum(anchor[k2], axis=k2), name="total")
    with pytest.raises(ScheduleError, match="not an injective stage"):
        inline_between(create_schedule(total.op), [anchor], total)
    after = relu(te.compute((1,), lambda i: te.sum(relu(anchor)[k2], axis=k2), name="total2"))
    with pytest.raises(ScheduleError, match="stage total2 .* is not injective"):
        inline_between(create_schedule(after.op), [anchor], after)
