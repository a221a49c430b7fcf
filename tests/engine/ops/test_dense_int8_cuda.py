"""``dense_int8.cuda``: int8 dense layers on a cuda target take TVM's int8 template (its knobs in
TVM's order); configs of its space compute the layer in the GPU grid simulator exactly as numpy
does, or are refused for the device's limits before compiling."""

from __future__ import annotations

import random
import subprocess

import numpy as np
import pytest

from tests.engine.lower.gpu_simulator import run_grid
from tunecli.engine.codegen import compile_kernel
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.graph.graph_expr import Function, var
from tunecli.engine.graph.models.init import create_workload
from tunecli.engine.graph.ops.nn import dense
from tunecli.engine.graph.traversal import free_vars
from tunecli.engine.lower import lower
from tunecli.engine.lower.verify_gpu import GPULimits, verify_gpu_code
from tunecli.engine.target import Target
from tunecli.engine.task.task import create
from tunecli.errors import InstantiationError

I8 = "int8"


def workload(m: int, n: int, k: int) -> tuple:
    return (("TENSOR", (m, k), I8), ("TENSOR", (n, k), I8), None, "int32")


@pytest.mark.parametrize(("dtype", "out_dtype", "name"), [
    ("int8", "int32", "dense_int8.cuda"),
    ("float32", "float32", "dense_small_batch.gpu"),
])
def test_cuda_dense_layers_of_int8_take_the_int8_template(dtype: str, out_dtype: str, name: str) -> None:
    data = var("data", shape=(2, 24), dtype=dtype)
    out = dense(data, var("weight", shape=(10, 24), dtype=dtype), out_dtype=out_dtype)
    mod, params = create_workload(Function(free_vars(out), out))
    (task,) = extract_from_program(mod, target="cuda", params=params)
    assert task.name == name


def test_the_knobs_are_tvms_in_tvms_order() -> None:
    space = create("dense_int8.cuda", workload(4, 24, 64), "cuda").config_space
    assert list(space.space_map) == ["tile_y", "tile_x", "tile_k", "auto_unroll_max_step"]
    assert space.space_map["tile_k"].product == 64 // 16
    by_four = create("dense_int8.cuda", workload(4, 24, 36), "cuda").config_space
    assert by_four.space_map["tile_k"].product == 9


def test_a_reduction_not_a_multiple_of_four_is_refused() -> None:
    with pytest.raises(InstantiationError, match="K = 30 is not a multiple of 4"):
        create("dense_int8.cuda", workload(2, 8, 30), "cuda")


@pytest.mark.parametrize("shape", [(3, 10, 32), (2, 12, 20)])
def test_configs_compute_the_layer_in_the_simulated_grid(shape: tuple) -> None:
    m, n, k = shape
    task = create("dense_int8.cuda", workload(m, n, k), "cuda")
    space = task.config_space
    rng = np.random.default_rng(k)
    data = rng.integers(-128, 128, size=(m, k)).astype(I8)
    weight = rng.integers(-128, 128, size=(n, k)).astype(I8)
    want = data.astype("int32") @ weight.astype("int32").T
    pick = random.Random(f"int8/{shape}")
    checked = 0
    for index in [0, len(space) - 1] + [pick.randrange(len(space)) for _ in range(6)]:
        with Target("cuda"):
            s, args = task.instantiate(space.get(index))
            func = lower(s, args, name="dense_int8", target="cuda")
        if verify_gpu_code(func, GPULimits()):
            continue
        out = np.full((m, n), -7, dtype="int32")
        run_grid(func, data, weight, out, reverse=index % 2 == 0)
        np.testing.assert_array_equal(out, want, err_msg=str(space.get(index)))
        checked += 1
    assert checked >= 4


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
def test_the_ptx_assembles(tmp_path: object) -> None:
    task = create("dense_int8.cuda", workload(2, 16, 64), "cuda")
    with Target("cuda"):
        s, args = task.instantiate(task.config_space.get(len(task.config_space) // 3))
        func = lower(s, args, name="dense_int8", target="cuda")
    ptx = tmp_path / "dense_int8.ptx"
    ptx.write_bytes(compile_kernel(func, "cuda -arch=sm_80").obj)
    proc = subprocess.run([str(ptxas_path()), "-arch=sm_80", str(ptx), "-o", str(ptx.with_suffix(".cubin"))],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
