"""A user's GPU convolution template (``gpu_conv_template.py``) through the TVM-style steps:
its space printed as TVM prints it, configs built on ``llvm`` (thread bindings as serial loops)
and compared with ``topi.testing``, a short XGBoost tuning run and the best config built under
``apply_history_best``; for ``cuda``, without a GPU: the lowered kernels run in the grid
simulator, configs beyond the device's limits refused before compiling, the PTX assembled by
ptxas; with a GPU, the whole flow on the device."""

from __future__ import annotations

import functools
import importlib
import math
import random
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm
from tunecli.engine.codegen import compile_kernel
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.ir import Allocate
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.lower import lower
from tunecli.engine.lower.verify_gpu import GPULimits, verify_gpu_code
from tunecli.topi.testing import conv2d_nchw_python

from .gpu_conv_template import gpu_direct_conv

NAME = "faces/gpu_direct_conv"
#: ResNet's last convolution, the layer TVM's GPU tutorial tunes.
RESNET_LAYER = (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
#: A layer small enough to build many configs of.
LAYER = (1, 9, 9, 12, 8, 3, 3, (1, 1), (1, 1))
SEED_NOTES = Path("/work/shared/seed")


@functools.cache
def space(layer: tuple = LAYER, target: str = "cuda") -> Any:
    return autotvm.task.create(NAME, args=layer, target=target).config_space


def threads(config: Any) -> int:
    return config["tile_f"].size[2] * config["tile_y"].size[2] * config["tile_x"].size[2]


def arrays(seed: int, layer: tuple = LAYER) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _, h, w, co, ci, kh, kw, stride, padding = layer
    rng = np.random.default_rng(seed)
    data = rng.uniform(size=(1, ci, h, w)).astype("float32")
    weight = rng.uniform(size=(co, ci, kh, kw)).astype("float32")
    return data, weight, conv2d_nchw_python(data, weight, stride, padding)


def run_on(func: Any, dev: tvm.Device, seed: int) -> None:
    data, weight, want = arrays(seed)
    out = tvm.nd.empty(want.shape, device=dev)
    func(tvm.nd.array(data, device=dev), tvm.nd.array(weight, device=dev), out)
    tvm.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)


def test_the_resnet_layers_space_prints_as_tvm_prints_it() -> None:
    resnet_space = space(RESNET_LAYER)
    assert [len(k) for k in resnet_space.space_map.values()] == [220, 4, 4, 55, 3, 3, 3, 2]
    assert len(resnet_space) == math.prod([220, 4, 4, 55, 3, 3, 3, 2])
    lines = str(resnet_space).splitlines()
    assert lines[0] == f"ConfigSpace (len={len(resnet_space)}, space_map="
    assert lines[1] == "   0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220"
    assert lines[7] == "   6 auto_unroll_max_step: OtherOption([0, 512, 1500]) len=3"
    assert lines[-1] == ")"


@pytest.mark.skipif(not SEED_NOTES.is_dir(), reason="the seed notes are not on this machine")
def test_the_printed_space_is_the_one_tvm_printed_in_the_seed_notes() -> None:
    text = str(space(RESNET_LAYER))
    assert any(text in p.read_text(encoding="utf-8") for p in sorted(SEED_NOTES.glob("*.txt")))


def test_sampled_configs_built_for_the_cpu_equal_topi_testing() -> None:
    cpu_space = space(LAYER, "llvm")
    rng = random.Random(21)
    for index in [0, len(cpu_space) - 1, rng.randrange(len(cpu_space))]:
        with tvm.target.Target("llvm"):
            with autotvm.ApplyConfig(cpu_space.get(index)):
                s, args = gpu_direct_conv(*LAYER)
            func = tvm.build(s, args)
        run_on(func, tvm.cpu(), index)


def test_tune_then_build_the_best_config(tmp_path: Path) -> None:
    task = autotvm.task.create(NAME, args=LAYER, target="llvm")
    log = str(tmp_path / "conv.log")
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2),
                                    runner=autotvm.LocalRunner(repeat=2, min_repeat_ms=20, timeout=4))
    autotvm.tuner.XGBTuner(task).tune(n_trial=4, measure_option=option,
                                      callbacks=[autotvm.callback.log_to_file(log)])
    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 4 and all(res.error_no == 0 for _, res in records)
    fastest = min(records, key=lambda rec: np.mean(rec[1].costs))[0].config.index
    assert autotvm.apply_history_best(log).query(task.target, task.workload).index == fastest
    with autotvm.apply_history_best(log), tvm.target.Target("llvm"):
        s, args = gpu_direct_conv(*LAYER)
        func = tvm.build(s, args)
    run_on(func, tvm.cpu(), 9)
    data, weight, want = arrays(9)
    dev = tvm.cpu()
    timed = func.time_evaluator(func.entry_name, dev, number=5)(
        tvm.nd.array(data), tvm.nd.array(weight), tvm.nd.empty(want.shape))
    assert 0 < timed.mean < 1 and len(timed.results) == 1


def cuda_kernel(index: int, layer: tuple = LAYER, target: str = "cuda") -> Any:
    with tvm.target.Target(target):
        with autotvm.ApplyConfig(space(layer).get(index)):
            s, args = gpu_direct_conv(*layer)
        return lower(s, args, name="conv", target=target)


def grid_runner() -> Any:
    """``run_grid`` of the GPU grid simulator in ``tests/engine/lower``."""
    return importlib.import_module("tests.engine.lower.gpu_simulator").run_grid


def test_cuda_kernels_compute_the_convolution_in_the_simulated_grid() -> None:
    run_grid = grid_runner()
    rng = random.Random(8)
    for index in [0, len(space()) - 1] + [rng.randrange(len(space())) for _ in range(3)]:
        data, weight, want = arrays(index)
        out = np.full(want.shape, np.nan, dtype="float32")
        launch = run_grid(cuda_kernel(index), data, weight, out, reverse=index % 2 == 0)
        assert math.prod(launch["block"]) == threads(space().get(index))
        tvm.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_configs_beyond_the_gpus_limits_are_found_before_compiling() -> None:
    resnet_space = space(RESNET_LAYER)
    rng = random.Random(40)
    refused = []
    for index in [rng.randrange(len(resnet_space)) for _ in range(10)]:
        errors = verify_gpu_code(cuda_kernel(index, RESNET_LAYER), GPULimits())
        assert (threads(resnet_space.get(index)) > 1024) == any("threads per block" in e for e in errors)
        refused.append(bool(errors))
    assert any(refused) and not all(refused)


def allocations(func: Any) -> list[Any]:
    found: list[Any] = []
    post_order(func.body, lambda n: found.append(n) if isinstance(n, Allocate) else None)
    return found


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_ptx_assembles(tmp_path: Path, arch: str) -> None:
    rng = random.Random(f"faces/{arch}")
    for index in [0, rng.randrange(len(space()))]:
        func = cuda_kernel(index)
        ptx = tmp_path / f"conv_{index}.ptx"
        ptx.write_bytes(compile_kernel(func, f"cuda -arch={arch}").obj)
        proc = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-v", str(ptx), "-o",
                               str(ptx.with_suffix(".cubin"))], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "bar.sync" in ptx.read_text() or "barrier.sync" in ptx.read_text()
        if sum(n.buffer.size for n in allocations(func) if n.buffer.scope == "local") <= 64:
            assert "0 bytes spill stores" in proc.stderr, proc.stderr


def test_the_builder_refuses_configs_with_too_many_threads() -> None:
    task = autotvm.task.create(NAME, args=LAYER, target="cuda -max_threads_per_block=32")
    rng = random.Random(6)
    configs = [task.config_space.get(rng.randrange(len(task.config_space))) for _ in range(80)]
    fits = [c for c in configs if threads(c) <= 32][:2]
    too_many = [c for c in configs if threads(c) > 32][:2]
    assert len(fits) == len(too_many) == 2
    builder = autotvm.LocalBuilder(n_parallel=1)
    builder.set_task(task)
    try:
        results = builder.build([autotvm.MeasureInput(task.target, task, c) for c in fits + too_many])
    finally:
        builder.close()
    for result in results[:2]:
        assert b".entry" in result.obj and result.launch.threads_per_block <= 32
    for result in results[2:]:
        assert result.error_no == autotvm.MeasureErrorNo.INSTANTIATION_ERROR
        assert "threads per block, more than 32" in result.error_message


@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_tuned_on_the_gpu_and_run_there(tmp_path: Path) -> None:
    task = autotvm.task.create(NAME, args=LAYER, target="cuda")
    log = str(tmp_path / "conv.log")
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                    runner=autotvm.LocalRunner(repeat=2, min_repeat_ms=20, timeout=4))
    autotvm.tuner.XGBTuner(task).tune(n_trial=6, measure_option=option,
                                      callbacks=[autotvm.callback.log_to_file(log)])
    with autotvm.apply_history_best(log), tvm.target.Target("cuda"):
        s, args = gpu_direct_conv(*LAYER)
        func = tvm.build(s, args)
    run_on(func, tvm.cuda(0), 12)
