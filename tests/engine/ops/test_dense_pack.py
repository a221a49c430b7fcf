"""dense_pack.x86 and dense_nopack.x86: TVM's workloads, knobs and fallback configs."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.build import build, lower
from tunecli.engine.ops import registry
from tunecli.engine.ops.x86.dense_pack import DENSE_NOPACK_TVM, DENSE_PACK_TVM
from tunecli.engine.target import Target
from tunecli.engine.task import task as autotvm_task
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.errors import InstantiationError


def workload(m, n, k, dtype="float32", out_dtype="float32"):
    return ("TENSOR", (m, k), dtype), ("TENSOR", (n, k), dtype), None, out_dtype


def test_spaces_have_tvms_knobs_in_tvms_order():
    pack = autotvm_task.create("dense_pack.x86", workload(4, 64, 32), "llvm").config_space
    assert list(pack.space_map) == ["tile_y", "tile_x", "tile_k", "tile_inner"]
    nopack = autotvm_task.create("dense_nopack.x86", workload(4, 64, 32), "llvm").config_space
    assert list(nopack.space_map) == ["tile_y", "tile_x", "tile_k"]
    assert [s.name for s in registry.STRATEGIES.candidates("dense", "llvm")] == \
        ["dense.x86", "dense_pack.x86", "dense_nopack.x86"]


def test_fallback_configs_are_tvms_on_avx512():
    with Target("llvm -mcpu=skylake-avx512"):
        cfg = FallbackConfigEntity()
        call = DENSE_PACK_TVM.kernel_call(cfg, *workload(1, 1000, 512))
        nopack = FallbackConfigEntity()
        DENSE_NOPACK_TVM.outputs_of(nopack, DENSE_NOPACK_TVM.kernel_call(nopack, *workload(1, 1000, 512)))
    sizes = {k: cfg[k].size for k in ("tile_y", "tile_x", "tile_k", "tile_inner")}
    assert sizes == {"tile_y": [1, 1, 1], "tile_x": [5, 8, 25], "tile_k": [512, 1], "tile_inner": [1, 1]}
    assert tuple(call.inputs[1].shape) == (40, 512, 25)  # the kernel takes the packed weight
    assert [nopack[k].size for k in ("tile_y", "tile_x", "tile_k")] == [[1, 1], [1000, 1], [16, 32]]


def test_packed_kernel_is_register_tiled():
    task = autotvm_task.create("dense_pack.x86", workload(8, 32, 16), "llvm")
    space = task.config_space
    knobs = [[e.size for e in space.space_map["tile_y"].entities].index([-1, 1, 4]),
             [e.size for e in space.space_map["tile_x"].entities].index([-1, 1, 16]),
             [e.size for e in space.space_map["tile_k"].entities].index([-1, 4]),
             [e.size for e in space.space_map["tile_inner"].entities].index([-1, 2])]
    sch, bufs = task.instantiate(space.get(space.knob2point(knobs)))
    text = str(lower(sch, bufs))
    assert [tuple(b.shape) for b in bufs] == [(8, 16), (2, 16, 16), (8, 32)]
    assert "T_dense_pack.local[float32 * 64]" in text and "vectorized for (x.c, 0, 16)" in text


@pytest.mark.parametrize("name", ["dense_pack.x86", "dense_nopack.x86"])
def test_first_middle_and_last_configs_match_numpy(name):
    task = autotvm_task.create(name, workload(2, 8, 6), "llvm")
    rng = np.random.default_rng(2)
    for index in (0, len(task.config_space) // 2, len(task.config_space) - 1):
        sch, bufs = task.instantiate(task.config_space.get(index))
        mod = build(sch, bufs, target="llvm")
        inputs = [rng.standard_normal(b.shape).astype("float32") for b in bufs[:-1]]
        out = np.zeros(bufs[-1].shape, dtype="float32")
        mod(*inputs, out)
        np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-5, atol=1e-5)


def test_a_bias_in_the_workload_is_refused():
    with pytest.raises(InstantiationError, match="bias as an epilogue"):
        DENSE_PACK_TVM.declare(*workload(2, 8, 6)[:2], ("TENSOR", (8,), "float32"))
