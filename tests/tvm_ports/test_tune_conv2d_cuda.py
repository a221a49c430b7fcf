"""Port of TVM's ``gallery/how_to/tune_with_autotvm/tune_conv2d_cuda.py`` to a CPU (``llvm``).

``import tvm`` / ``from tvm import te, topi, autotvm`` become the tunecli equivalents; the
template body is the tutorial's.  Edits other than imports are marked ``# EDIT:``:

* none in the template: on ``llvm`` the GPU thread bindings (``s[...].bind(axis,
  te.thread_axis(...))``) keep their loops as serial loops, the ``"shared"`` / ``"local"``
  cache stages are ordinary buffers and ``auto_unroll_max_step`` unrolls as TVM's UnrollLoop;
* the template name gets a ``tvm_port/`` prefix (tunecli's job engine registers
  ``tutorial/conv2d_no_batching`` itself, see ``tunecli.engine.ops.tutorial``);
* the seed's resnet shapes are only used to print the space (``target="cuda"`` as in the
  tutorial); tuning and checking use small shapes on ``llvm``, with fewer trials;
* ``tvm.cuda()`` becomes ``tvm.cpu()`` and the evaluator runs 10 calls instead of 400.
"""

from __future__ import annotations

import functools
import importlib
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tunecli as tvm
import tunecli.testing  # noqa: F401  (the tutorial's ``import tvm.testing``)
from tunecli import autotvm, te, topi
from tunecli.engine.codegen import compile_kernel
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.ir import Allocate
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.lower import lower
from tunecli.engine.lower.verify_gpu import GPULimits, verify_gpu_code
from tunecli.topi.testing import conv2d_nchw_python


@autotvm.template("tvm_port/conv2d_no_batching")  # EDIT: template name
def conv2d_no_batching(N: int, H: int, W: int, CO: int, CI: int, KH: int, KW: int, stride: tuple,
                       padding: tuple) -> tuple:
    """The tutorial's template."""
    assert N == 1, "Only consider batch_size = 1 in this template"

    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    s = te.create_schedule([conv.op])

    ##### space definition begin #####
    n, f, y, x = s[conv].op.axis
    rc, ry, rx = s[conv].op.reduce_axis

    cfg = autotvm.get_config()
    cfg.define_split("tile_f", f, num_outputs=4)
    cfg.define_split("tile_y", y, num_outputs=4)
    cfg.define_split("tile_x", x, num_outputs=4)
    cfg.define_split("tile_rc", rc, num_outputs=3)
    cfg.define_split("tile_ry", ry, num_outputs=3)
    cfg.define_split("tile_rx", rx, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])
    ##### space definition end #####

    # inline padding
    pad_data = s[conv].op.input_tensors[0]
    s[pad_data].compute_inline()
    data, raw_data = pad_data, data

    output = conv
    OL = s.cache_write(conv, "local")

    # create cache stage
    AA = s.cache_read(data, "shared", [OL])
    WW = s.cache_read(kernel, "shared", [OL])
    AL = s.cache_read(AA, "local", [OL])
    WL = s.cache_read(WW, "local", [OL])

    # tile and bind spatial axes
    n, f, y, x = s[output].op.axis
    bf, vf, tf, fi = cfg["tile_f"].apply(s, output, f)
    by, vy, ty, yi = cfg["tile_y"].apply(s, output, y)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, output, x)
    kernel_scope = n  # this is the scope to attach global config inside this kernel

    s[output].bind(bf, te.thread_axis("blockIdx.z"))
    s[output].bind(by, te.thread_axis("blockIdx.y"))
    s[output].bind(bx, te.thread_axis("blockIdx.x"))
    s[output].bind(vf, te.thread_axis("vthread"))
    s[output].bind(vy, te.thread_axis("vthread"))
    s[output].bind(vx, te.thread_axis("vthread"))
    s[output].bind(tf, te.thread_axis("threadIdx.z"))
    s[output].bind(ty, te.thread_axis("threadIdx.y"))
    s[output].bind(tx, te.thread_axis("threadIdx.x"))
    s[output].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    s[OL].compute_at(s[output], tx)

    # tile reduction axes
    n, f, y, x = s[OL].op.axis
    rc, ry, rx = s[OL].op.reduce_axis
    rco, rcm, rci = cfg["tile_rc"].apply(s, OL, rc)
    ryo, rym, ryi = cfg["tile_rx"].apply(s, OL, ry)  # (sic: the tutorial swaps rx and ry; KH == KW)
    rxo, rxm, rxi = cfg["tile_ry"].apply(s, OL, rx)
    s[OL].reorder(rco, ryo, rxo, rcm, rym, rxm, rci, ryi, rxi, n, f, y, x)

    s[AA].compute_at(s[OL], rxo)
    s[WW].compute_at(s[OL], rxo)
    s[AL].compute_at(s[OL], rxm)
    s[WL].compute_at(s[OL], rxm)

    # cooperative fetching
    for load in [AA, WW]:
        n, f, y, x = s[load].op.axis
        fused = s[load].fuse(n, f, y, x)
        tz, fused = s[load].split(fused, nparts=cfg["tile_f"].size[2])
        ty, fused = s[load].split(fused, nparts=cfg["tile_y"].size[2])
        tx, fused = s[load].split(fused, nparts=cfg["tile_x"].size[2])
        s[load].bind(tz, te.thread_axis("threadIdx.z"))
        s[load].bind(ty, te.thread_axis("threadIdx.y"))
        s[load].bind(tx, te.thread_axis("threadIdx.x"))

    # tune unroll
    s[output].pragma(kernel_scope, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[output].pragma(kernel_scope, "unroll_explicit", cfg["unroll_explicit"].val)

    return s, [raw_data, kernel, conv]


# What the tutorial (and the seed note in /work/shared/seed) prints for the resnet layer.
SEED_SPACE = """ConfigSpace (len=10454400, space_map=
   0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220
   1 tile_y: Split(policy=factors, product=7, num_outputs=4) len=4
   2 tile_x: Split(policy=factors, product=7, num_outputs=4) len=4
   3 tile_rc: Split(policy=factors, product=512, num_outputs=3) len=55
   4 tile_ry: Split(policy=factors, product=3, num_outputs=3) len=3
   5 tile_rx: Split(policy=factors, product=3, num_outputs=3) len=3
   6 auto_unroll_max_step: OtherOption([0, 512, 1500]) len=3
   7 unroll_explicit: OtherOption([0, 1]) len=2
)"""
SEED_DIR = Path("/work/shared/seed")

# EDIT: small shapes for building and tuning (the tutorial's layer is 1, 7, 7, 512, 512, 3, 3)
SMALL = (1, 7, 7, 16, 8, 3, 3, (1, 1), (1, 1))


def test_seed_space_prints_exactly_like_the_tutorial(capsys: pytest.CaptureFixture[str]) -> None:
    """The resnet layer's space prints exactly as in the tutorial (len=10454400)."""
    # the last layer in resnet
    N, H, W, CO, CI, KH, KW, strides, padding = 1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)
    task = autotvm.task.create(
        "tvm_port/conv2d_no_batching", args=(N, H, W, CO, CI, KH, KW, strides, padding), target="cuda"
    )
    print(task.config_space)
    printed = capsys.readouterr().out
    assert printed == SEED_SPACE + "\n"
    assert len(task.config_space) == 10454400 == 220 * 4 * 4 * 55 * 3 * 3 * 3 * 2


@pytest.mark.skipif(not SEED_DIR.is_dir(), reason="the seed notes are not on this machine")
def test_seed_space_is_the_one_in_the_seed_notes() -> None:
    """The expected text above is the one recorded in the seed notes."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(SEED_DIR.glob("*.txt"))]
    assert any(SEED_SPACE in text for text in texts), "the seed notes do not contain SEED_SPACE"


def _run_and_check(func: Any, a_np: np.ndarray, w_np: np.ndarray, c_np: np.ndarray) -> None:
    """Run ``func`` on NDArrays like the tutorial and compare with the numpy reference."""
    dev = tvm.cpu()  # EDIT: tvm.cuda()
    a_tvm = tvm.nd.array(a_np, device=dev)
    w_tvm = tvm.nd.array(w_np, device=dev)
    c_tvm = tvm.nd.empty(c_np.shape, device=dev)
    func(a_tvm, w_tvm, c_tvm)
    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-2)
    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-5, atol=1e-5)  # EDIT: also tight


def _data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random data and kernel for ``SMALL`` and their reference output."""
    N, H, W, CO, CI, KH, KW, strides, padding = SMALL
    rng = np.random.default_rng(seed)
    a_np = rng.uniform(size=(N, CI, H, W)).astype(np.float32)
    w_np = rng.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    return a_np, w_np, conv2d_nchw_python(a_np, w_np, strides, padding)


def test_configs_of_the_small_space_build_and_match_topi_testing() -> None:
    """Four configs (first, last, two seeded random) build and match ``conv2d_nchw_python``."""
    task = autotvm.task.create("tvm_port/conv2d_no_batching", args=SMALL, target="llvm")
    space = task.config_space
    assert [len(space.space_map[k]) for k in space.space_map] == [35, 4, 4, 10, 3, 3, 3, 2]
    a_np, w_np, c_np = _data(0)
    rng = random.Random(1234)
    indices = [0, len(space) - 1] + [rng.randrange(len(space)) for _ in range(2)]
    for index in indices:
        config = space.get(index)
        with tvm.target.Target("llvm"):
            with autotvm.ApplyConfig(config):
                s, arg_bufs = conv2d_no_batching(*SMALL)
            func = tvm.build(s, arg_bufs)
        _run_and_check(func, a_np, w_np, c_np)


def test_tune_with_xgb_then_apply_history_best(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tutorial's steps 2-3: XGBTuner, best config, build, check, time."""
    monkeypatch.chdir(tmp_path)
    N, H, W, CO, CI, KH, KW, strides, padding = SMALL
    task = autotvm.task.create(
        "tvm_port/conv2d_no_batching", args=(N, H, W, CO, CI, KH, KW, strides, padding), target="llvm"
    )  # EDIT: target "cuda"

    # The timeout of compiling a program is 10 seconds, the timeout for running is 4 seconds
    measure_option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(n_parallel=2),  # EDIT: n_parallel (2 shared cores)
        runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=100, timeout=4),
    )

    # Begin tuning, log records to file `conv2d.log`
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(
        n_trial=6,  # EDIT: 20 in the tutorial
        measure_option=measure_option,
        callbacks=[autotvm.callback.log_to_file("conv2d.log")],
    )
    records = list(autotvm.record.load_from_file("conv2d.log"))
    assert len(records) == 6 and all(res.error_no == 0 for _, res in records)
    fastest = min(records, key=lambda r: np.mean(r[1].costs))[0].config.index

    # inspect the best config
    dispatch_context = autotvm.apply_history_best("conv2d.log")
    best_config = dispatch_context.query(task.target, task.workload)
    print("\nBest config:")
    print(best_config)
    assert best_config.index == fastest

    # apply history best from log file
    with autotvm.apply_history_best("conv2d.log"):
        with tvm.target.Target("llvm"):  # EDIT: "cuda"
            s, arg_bufs = conv2d_no_batching(N, H, W, CO, CI, KH, KW, strides, padding)
            func = tvm.build(s, arg_bufs)

    # check correctness
    a_np = np.random.uniform(size=(N, CI, H, W)).astype(np.float32)
    w_np = np.random.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    c_np = conv2d_nchw_python(a_np, w_np, strides, padding)

    dev = tvm.cpu()  # EDIT: tvm.cuda()
    a_tvm = tvm.nd.array(a_np, device=dev)
    w_tvm = tvm.nd.array(w_np, device=dev)
    c_tvm = tvm.nd.empty(c_np.shape, device=dev)
    func(a_tvm, w_tvm, c_tvm)

    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-2)

    # Evaluate running time.
    evaluator = func.time_evaluator(func.entry_name, dev, number=10)  # EDIT: number=400
    result = evaluator(a_tvm, w_tvm, c_tvm)
    print("Time cost of this operator: %f" % result.mean)  # noqa: UP031 (tutorial text)
    assert 0 < result.mean < 1 and len(result.results) == 1


# ---- the tutorial's own target: "cuda" (no GPU here: lowered, simulated, compiled by ptxas) ----

def _grid_simulator() -> Any:
    """``run_grid`` of the GPU grid simulator in ``tests/engine/lower`` (imported as pytest does)."""
    engine_tests = str(Path(__file__).resolve().parents[1] / "engine")
    if engine_tests not in sys.path:
        sys.path.insert(0, engine_tests)
    return importlib.import_module("lower.gpu_simulator").run_grid


def _cuda_kernel(index: int, shape: tuple = SMALL, target: str = "cuda") -> Any:
    """The tutorial's schedule of config ``index`` lowered for ``target``."""
    with tvm.target.Target(target):
        with autotvm.ApplyConfig(_space(shape).get(index)):
            s, arg_bufs = conv2d_no_batching(*shape)
        return lower(s, arg_bufs, name="conv2d", target=target)


@functools.cache
def _space(shape: tuple) -> Any:
    return autotvm.task.create("tvm_port/conv2d_no_batching", args=shape, target="cuda").config_space


def _threads_of(config: Any) -> int:
    return config["tile_f"].size[2] * config["tile_y"].size[2] * config["tile_x"].size[2]


def test_cuda_configs_compute_the_convolution_in_the_simulated_grid() -> None:
    """Each config's kernel, run block by block with its threads in lock-step between barriers,
    matches ``conv2d_nchw_python`` (so shared tiles, their bounds and the barriers are right)."""
    run_grid = _grid_simulator()
    space = _space(SMALL)
    a_np, w_np, c_np = _data(3)
    rng = random.Random(11)
    for index in [0, len(space) - 1] + [rng.randrange(len(space)) for _ in range(4)]:
        func = _cuda_kernel(index)
        out = np.full(c_np.shape, np.nan, dtype="float32")
        shape = run_grid(func, a_np, w_np, out, reverse=index % 2 == 1)
        config = space.get(index)
        assert math.prod(shape["block"]) == _threads_of(config)
        tvm.testing.assert_allclose(c_np, out, rtol=1e-5, atol=1e-5)


def test_cuda_configs_beyond_the_device_limits_are_instantiation_errors() -> None:
    """On the resnet layer, a config whose thread tile exceeds 1024 threads or whose shared tiles
    exceed 48 KiB is refused before compiling (TVM's GPU verification); the others build."""
    shape = (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
    space = _space(shape)
    rng = random.Random(5)
    verdicts = []
    for index in [rng.randrange(len(space)) for _ in range(12)]:
        config = space.get(index)
        func = _cuda_kernel(index, shape)
        errors = verify_gpu_code(func, GPULimits())
        assert (_threads_of(config) > 1024) == any("threads per block" in e for e in errors)
        verdicts.append(bool(errors))
    assert any(verdicts) and not all(verdicts)


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_configs_pass_ptxas(tmp_path: Path, arch: str) -> None:
    """The PTX of configs of the small layer assembles for the architecture; a config whose
    register tile (its local arrays) holds at most 64 floats per thread does not spill."""
    space = _space(SMALL)
    rng = random.Random(f"{arch}/2")  # seeded to kernels of ordinary size (unrolled ones take seconds)
    for index in [0] + [rng.randrange(len(space)) for _ in range(3)]:
        func = _cuda_kernel(index)
        ptx = tmp_path / f"conv_{index}.ptx"
        ptx.write_bytes(compile_kernel(func, f"cuda -arch={arch}").obj)
        cubin = str(ptx.with_suffix(".cubin"))
        proc = subprocess.run([str(ptxas_path()), f"-arch={arch}", "-v", str(ptx), "-o", cubin],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "bar.sync" in ptx.read_text() or "barrier.sync" in ptx.read_text()
        local_floats = sum(n.buffer.size for n in _allocations(func) if n.buffer.scope == "local")
        if local_floats <= 64:
            assert "0 bytes spill stores" in proc.stderr, (local_floats, proc.stderr)


def _allocations(func: Any) -> list[Any]:
    found: list[Any] = []
    post_order(func.body, lambda n: found.append(n) if isinstance(n, Allocate) else None)
    return found


def test_the_builder_refuses_configs_beyond_the_targets_limits() -> None:
    """LocalBuilder for ``cuda -max_threads_per_block=64``: configs with more threads per block are
    INSTANTIATION_ERROR (not compile or launch failures); the others come back as PTX kernels."""
    target = "cuda -max_threads_per_block=64"
    task = autotvm.task.create("tvm_port/conv2d_no_batching", args=SMALL, target=target)
    space = task.config_space
    rng = random.Random(2)
    configs = [space.get(rng.randrange(len(space))) for _ in range(60)]
    small = [c for c in configs if _threads_of(c) <= 64][:2]
    large = [c for c in configs if _threads_of(c) > 64][:2]
    assert len(small) == len(large) == 2
    builder = autotvm.LocalBuilder(n_parallel=1)
    builder.set_task(task)
    try:
        results = builder.build([autotvm.MeasureInput(task.target, task, c) for c in small + large])
    finally:
        builder.close()
    for result in results[:2]:
        assert b".entry conv2d" in result.obj or b".entry default_function" in result.obj
        assert result.launch.threads_per_block <= 64
    for result in results[2:]:
        assert result.error_no == autotvm.MeasureErrorNo.INSTANTIATION_ERROR
        assert "threads per block, more than 64" in result.error_message


@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_the_tutorial_on_its_own_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tutorial unchanged but for the trial count: tune for ``cuda``, apply the best config,
    run it on ``tvm.cuda()`` and compare with ``conv2d_nchw_python``."""
    monkeypatch.chdir(tmp_path)
    N, H, W, CO, CI, KH, KW, strides, padding = 1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)
    task = autotvm.task.create(
        "tvm_port/conv2d_no_batching", args=(N, H, W, CO, CI, KH, KW, strides, padding), target="cuda"
    )
    measure_option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(),
        runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=100, timeout=4),
    )
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=8, measure_option=measure_option,  # EDIT: 20 in the tutorial
               callbacks=[autotvm.callback.log_to_file("conv2d.log")])
    with autotvm.apply_history_best("conv2d.log"):
        with tvm.target.Target("cuda"):
            s, arg_bufs = conv2d_no_batching(N, H, W, CO, CI, KH, KW, strides, padding)
            func = tvm.build(s, arg_bufs)
    a_np = np.random.uniform(size=(N, CI, H, W)).astype(np.float32)
    w_np = np.random.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    c_np = conv2d_nchw_python(a_np, w_np, strides, padding)
    dev = tvm.cuda()
    a_tvm = tvm.nd.array(a_np, device=dev)
    w_tvm = tvm.nd.array(w_np, device=dev)
    c_tvm = tvm.nd.empty(c_np.shape, device=dev)
    func(a_tvm, w_tvm, c_tvm)
    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-2)
    evaluator = func.time_evaluator(func.entry_name, dev, number=400)
    print("Time cost of this operator: %f" % evaluator(a_tvm, w_tvm, c_tvm).mean)  # noqa: UP031
