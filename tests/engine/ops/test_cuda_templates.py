"""TVM's GPU templates (``conv2d_nchw.cuda``, ``depthwise_conv2d_nchw.cuda``, ``dense_small_batch.gpu``)
and the seed tutorial's GPU schedule, checked without a GPU.

For seeded random configs of each template: the kernel lowered for ``cuda`` either fits the
device's limits or is refused as an InstantiationError (TVM's GPU verification); the kernels
that fit compute the operator in the grid simulator (blocks of threads in lock-step between
barriers, shared-memory races detected) exactly as numpy does; their PTX passes NVIDIA's
``ptxas`` for sm_80 and sm_90, and a config whose register tile is small does not spill.
The knobs are TVM's, in TVM's order, so a record written by TVM decodes to the config it logs.
"""

from __future__ import annotations

import functools
import json
import random
import subprocess
from typing import Any

import numpy as np
import pytest

from tests.engine.lower.gpu_simulator import run_grid
from tunecli.engine import te
from tunecli.engine.codegen import compile_kernel
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.ir import Allocate
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.log.record import decode
from tunecli.engine.lower import lower
from tunecli.engine.lower.verify_gpu import GPULimits, check_gpu_code, verify_gpu_code
from tunecli.engine.ops import registry
from tunecli.engine.ops.nn import bias_add, relu
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import InstantiationError

F32 = "float32"


def _t(*shape: int) -> tuple:
    return ("TENSOR", shape, F32)


#: Small workloads (simulated) and the resnet/mobilenet-sized ones (limits), per template.
SMALL = {
    "conv2d_nchw.cuda": (_t(1, 8, 7, 7), _t(16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), F32),
    "depthwise_conv2d_nchw.cuda": (_t(1, 8, 9, 9), _t(8, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), F32),
    "dense_small_batch.gpu": (_t(2, 96), _t(10, 96), None, F32),
    "tutorial/conv2d_no_batching": (1, 7, 7, 16, 8, 3, 3, (1, 1), (1, 1)),
}
LARGE = {
    "conv2d_nchw.cuda": (_t(1, 512, 7, 7), _t(512, 512, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), F32),
    "depthwise_conv2d_nchw.cuda": (_t(1, 256, 56, 56), _t(256, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1),
                                   F32),
    "dense_small_batch.gpu": (_t(1, 4096), _t(1000, 4096), None, F32),
    "tutorial/conv2d_no_batching": (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)),
}
#: TVM's knobs of each template, in TVM's order.
CONV_KNOBS = ["tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step",
              "unroll_explicit"]
KNOBS = {
    "conv2d_nchw.cuda": CONV_KNOBS,
    "depthwise_conv2d_nchw.cuda": ["tile_f", "tile_y", "tile_x", "auto_unroll_max_step", "unroll_explicit"],
    "dense_small_batch.gpu": ["tile_k"],
    "tutorial/conv2d_no_batching": CONV_KNOBS,
}
NAMES = list(SMALL)


@functools.cache
def _task(name: str, large: bool = False) -> Any:
    return create(name, args=(LARGE if large else SMALL)[name], target="cuda")


def _configs(name: str, count: int, seed: int, large: bool = False) -> list[Any]:
    """The fallback config and ``count`` seeded random configs of the template's space."""
    space = _task(name, large).config_space
    rng = random.Random(f"{name}/{seed}")
    return [FallbackConfigEntity()] + [space.get(rng.randrange(len(space))) for _ in range(count)]


def _kernel(name: str, config: Any, large: bool = False, target: str = "cuda") -> Any:
    task = _task(name, large)
    sch, bufs = task.instantiate(config)
    return lower(sch, bufs, name=name.replace("/", "_").replace(".", "_"), target=target), bufs


def _allocations(func: Any) -> list[Any]:
    found: list[Any] = []
    post_order(func.body, lambda n: found.append(n) if isinstance(n, Allocate) else None)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_the_knobs_are_tvms_in_tvms_order(name):
    assert list(_task(name).config_space.space_map) == KNOBS[name]


def test_a_cuda_target_selects_the_gpu_templates():
    select = registry.STRATEGIES.select
    for target in ("cuda", "cuda -arch=sm_90"):
        assert select("conv2d_nchw", target).name == "conv2d_nchw.cuda"
        assert select("depthwise_conv2d_nchw", target).name == "depthwise_conv2d_nchw.cuda"
        assert select("dense", target).name == "dense_small_batch.gpu"  # key "gpu", as in TVM
    assert select("conv2d_nchw", "llvm").name == "conv2d_nchw.x86"


@pytest.mark.parametrize("name", NAMES)
def test_random_configs_compute_the_operator_in_the_simulated_grid(name):
    task = _task(name)
    for i, config in enumerate(_configs(name, 3, seed=0)):
        func, bufs = _kernel(name, config)
        assert verify_gpu_code(func, GPULimits()) == []
        rng = np.random.default_rng(i)
        inputs = [rng.uniform(-1, 1, tuple(int(d) for d in b.shape)).astype(b.dtype) for b in bufs[:-1]]
        out = np.full(tuple(int(d) for d in bufs[-1].shape), np.nan, bufs[-1].dtype)
        run_grid(func, *inputs, out, reverse=i % 2 == 1)
        np.testing.assert_allclose(out, task.reference(*inputs), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} config {config}")


@pytest.mark.parametrize("name", NAMES)
def test_configs_beyond_the_device_limits_are_instantiation_errors(name):
    """On full-size layers, each random config's kernel fits the limits or is refused before compiling."""
    verdicts = []
    for config in _configs(name, 6, seed=1, large=True):
        try:
            func, _ = _kernel(name, config, large=True)
        except InstantiationError:  # refused while lowering
            verdicts.append(True)
            continue
        errors = verify_gpu_code(func, GPULimits())
        if errors:
            with pytest.raises(InstantiationError):
                check_gpu_code(func, Target("cuda"))
        else:
            check_gpu_code(func, Target("cuda"))
        verdicts.append(bool(errors))
    assert not verdicts[0], "the fallback config fits every GPU"
    if name != "dense_small_batch.gpu":
        assert any(verdicts), "some tilings of a full-size layer exceed the limits"


def test_a_dense_reduction_wider_than_a_block_is_refused():
    space = _task("dense_small_batch.gpu", large=True).config_space
    widest = next(space.get(i) for i in range(len(space)) if space.get(i)["tile_k"].size[-1] == 4096)
    func, _ = _kernel("dense_small_batch.gpu", widest, large=True)
    with pytest.raises(InstantiationError, match="4096 threads per block"):
        check_gpu_code(func, Target("cuda"))


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", NAMES)
def test_the_ptx_of_random_configs_passes_ptxas(tmp_path, name, arch):
    """ptxas accepts the PTX; a config whose local (register) arrays hold at most 64 values per
    thread does not spill."""
    for i, config in enumerate(_configs(name, 2, seed=f"ptxas/{arch}")):  # kernels of ordinary size
        func, _ = _kernel(name, config)
        ptx = tmp_path / f"k{i}.ptx"
        ptx.write_bytes(compile_kernel(func, f"cuda -arch={arch}").obj)
        proc = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-v", str(ptx), "-o",
                               str(ptx.with_suffix(".cubin"))], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        if sum(a.buffer.size for a in _allocations(func) if a.buffer.scope == "local") <= 64:
            assert "0 bytes spill stores" in proc.stderr, (str(config), proc.stderr)


def test_the_gpu_schedules_keep_shared_tiles_and_barriers():
    func, _ = _kernel("conv2d_nchw.cuda", FallbackConfigEntity())
    scopes = sorted(a.buffer.scope for a in _allocations(func))
    assert scopes == ["local", "shared", "shared"]  # accumulator; input window and kernel slice
    assert ".local" not in compile_kernel(func, "cuda").obj.decode()  # the accumulator is registers
    dense, _ = _kernel("dense_small_batch.gpu", FallbackConfigEntity())
    assert [a.buffer.size for a in _allocations(dense) if a.buffer.scope == "shared"] == [64]  # TVM's tile_k


#: A record of ``conv2d_nchw.cuda`` as TVM writes it (key order, TVM 0.7's outer split factors).
TVM_RECORD = {
    "input": ["cuda -keys=cuda,gpu -max_num_threads=1024 -thread_warp_size=32", "conv2d_nchw.cuda",
              [["TENSOR", [1, 512, 7, 7], "float32"], ["TENSOR", [512, 512, 3, 3], "float32"], [1, 1],
               [1, 1, 1, 1], [1, 1], "float32"], {}],
    "config": {"index": None, "code_hash": None, "entity": [
        ["tile_f", "sp", [64, 1, 8, 1]], ["tile_y", "sp", [1, 1, 7, 1]], ["tile_x", "sp", [7, 1, 1, 1]],
        ["tile_rc", "sp", [64, 8]], ["tile_ry", "sp", [1, 3]], ["tile_rx", "sp", [3, 1]],
        ["auto_unroll_max_step", "ot", 1500], ["unroll_explicit", "ot", 1]]},
    "result": [[4.2e-05], 0, 1.2, 1600000000.0], "version": 0.2, "tvm_version": "0.7.dev1",
}


def _index_of(space: Any, entity: list) -> int:
    """TVM's config index of ``entity``: mixed radix over the knobs, the first knob varying fastest."""
    index, stride = 0, 1
    for (knob, _, value), name in zip(entity, space.space_map, strict=True):
        assert knob == name
        entities = space.space_map[name].entities
        sizes = [list(getattr(e, "size", [getattr(e, "val", e)])) for e in entities]
        want = [value] if not isinstance(value, list) else value
        position = next(i for i, s in enumerate(sizes) if s[1:] == want[1:] and s[0] in (-1, want[0]))
        index += position * stride
        stride *= len(entities)
    return index


def test_a_record_written_by_tvm_decodes_to_the_logged_config_and_builds():
    task = create("conv2d_nchw.cuda", args=LARGE["conv2d_nchw.cuda"], target="cuda")
    record = json.loads(json.dumps(TVM_RECORD))
    record["config"]["index"] = _index_of(task.config_space, record["config"]["entity"])
    inp, result = decode(json.dumps(record))
    assert inp.task.name == "conv2d_nchw.cuda" and inp.task.args == task.args
    config = task.config_space.get(inp.config.index)
    got = config.to_json_dict()["entity"]
    for (knob, kind, value), (_, _, want) in zip(got, record["config"]["entity"], strict=True):
        if kind == "sp":
            assert list(value)[1:] == want[1:], knob
        else:
            assert value == want, knob
    func, _ = _kernel("conv2d_nchw.cuda", config, large=True)
    check_gpu_code(func, Target("cuda"))  # 8 x 7 threads, a 1 x 8 x 3 x 3 window per step


@pytest.mark.parametrize("name", ["conv2d_nchw.cuda", "depthwise_conv2d_nchw.cuda", "dense_small_batch.gpu"])
def test_a_fused_bias_relu_epilogue_writes_the_output_tile_on_the_gpu(name):
    """A graph's ``relu(op + bias)`` takes the output stage's place: one kernel, simulated vs numpy."""
    strategy, task = registry.get_strategy(name), _task(name)
    for i, config in enumerate(_configs(name, 2, seed="epilogue")):
        call = strategy.kernel_call(config, *task.args)
        (out,) = strategy.outputs_of(config, call)
        bias = te.placeholder((out.shape[1],), dtype=out.dtype, name="bias")
        fused = relu(bias_add(out, bias, axis=1))
        with Target("cuda"):
            sch = strategy.schedule(config, [out], epilogue=fused)
        func = lower(sch, [*call.inputs, bias, fused], name="fused", target="cuda")
        check_gpu_code(func, Target("cuda"))
        rng = np.random.default_rng(i)
        inputs = [rng.uniform(-1, 1, tuple(int(d) for d in t.shape)).astype(t.dtype) for t in call.inputs]
        b = rng.uniform(-1, 1, int(out.shape[1])).astype(out.dtype)
        got = np.full(tuple(int(d) for d in fused.shape), np.nan, fused.dtype)
        run_grid(func, *inputs, b, got)
        want = np.maximum(task.reference(*inputs) + b.reshape((-1,) + (1,) * (got.ndim - 2)), 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} config {config}")
