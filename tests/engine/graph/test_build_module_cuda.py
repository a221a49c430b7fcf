"""``relay.build`` for ``cuda`` without a GPU: every kernel of ResNet-18 and MobileNet is PTX that
NVIDIA's ``ptxas`` accepts for sm_80 and sm_90 and that fits the device (TVM's GPU verification);
a small network's kernels, run in graph order by the grid simulator on the memory plan, compute
what the interpreter computes; the executor on a machine without a GPU, a CPU device given to a
CUDA build and ``export_library`` of one each give one clear error."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import tunecli
from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.build import build as build_kernel
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.graph.build_module import BuiltGraph, build
from tunecli.engine.graph.models import mobilenet, resnet
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.lower.verify_gpu import GPULimits, verify_gpu_code
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError, DeviceError, GraphError

from .simulated_cuda_graph import cuda_program, simulate

RNG = np.random.default_rng(0)


def small_network() -> tuple[g.IRModule, dict[str, np.ndarray]]:
    """conv + bias + relu, depthwise conv + relu, 1x1 conv + bias, max pool, dense + bias, softmax."""
    x = relay.var("data", shape=(1, 3, 8, 8))
    shapes = {"w1": (8, 3, 3, 3), "b1": (8,), "w2": (8, 1, 3, 3), "w3": (16, 8, 1, 1), "b3": (16,),
              "w4": (10, 256), "b4": (10,)}
    w = {name: relay.var(name, shape=s) for name, s in shapes.items()}
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w["w1"], padding=(1, 1), channels=8,
                                                        kernel_size=(3, 3)), w["b1"]))
    y = relay.nn.relu(relay.nn.conv2d(y, w["w2"], padding=(1, 1), groups=8, channels=8, kernel_size=(3, 3)))
    y = relay.nn.bias_add(relay.nn.conv2d(y, w["w3"], channels=16, kernel_size=(1, 1)), w["b3"])
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(2, 2))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(y), w["w4"], units=10),
                                           w["b4"]))
    params = {name: RNG.uniform(-1, 1, s).astype("float32") for name, s in shapes.items()}
    return g.IRModule.from_expr(relay.Function([x, *w.values()], y)), params


@pytest.fixture(scope="module")
def small() -> tuple[g.IRModule, dict[str, np.ndarray], BuiltGraph]:
    mod, params = small_network()
    with PassContext(opt_level=3):
        return mod, params, build(mod, "cuda", params=params)


def test_a_cuda_build_is_ptx_kernels_with_launch_shapes(small: tuple) -> None:
    _, _, lib = small
    assert len(lib.kernels) == 7  # three convolutions with their epilogues, pool, flatten, dense, softmax
    for kernel in lib.kernels.values():
        assert kernel.object_format == "ptx" and kernel.launch is not None
        assert b".entry " + kernel.entry_name.encode() in kernel.obj
    assert lib.summary.line() == "0 of 4 tasks tuned; 4 fell back: " + ", ".join(
        f"{a.task_name} {a.workload[1:]}" for a in lib.summary.fallback[:3]) + " and 1 more"


def test_the_small_networks_kernels_in_the_simulated_grid_equal_the_interpreter(small: tuple) -> None:
    mod, params, lib = small
    program = cuda_program(mod, params)
    assert list(program.kernels) == list(lib.kernels)
    assert [k.obj for k in program.kernels.values()] == [k.obj for k in lib.kernels.values()]
    data = RNG.uniform(-1, 1, (1, 3, 8, 8)).astype("float32")
    want = g.evaluate(mod, [data], params)
    for reverse in (False, True):
        (got,) = simulate(program, {"data": data}, reverse=reverse)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _ptxas(tmp_path: Path, name: str, ptx: bytes, arch: str) -> None:
    path = tmp_path / f"{name}.ptx"
    path.write_bytes(ptx)
    cubin = path.with_suffix(".cubin")
    proc = subprocess.run([str(ptxas_path()), f"-arch={arch}", str(path), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{name}: {proc.stderr}"


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA toolkit or nvidia-cuda-nvcc) is not installed")
@pytest.mark.parametrize("network", [pytest.param("resnet-18", marks=pytest.mark.slow), "mobilenet"])
def test_every_kernel_of_a_network_fits_the_gpu_and_passes_ptxas(tmp_path: Path, network: str) -> None:
    """Every kernel of the build for sm_80 fits and passes ptxas, and so do the same loop nests compiled
    for sm_90 (as a build for sm_90 compiles them: the architecture changes the PTX, not the lowering)."""
    if network == "resnet-18":
        mod, params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 32, 32))
    else:
        mod, params = mobilenet.get_workload(batch_size=1, image_shape=(3, 32, 32))
    with PassContext(opt_level=3):
        program = cuda_program(mod, params, "cuda -arch=sm_80")
    assert any("conv2d" in name for name in program.kernels)
    for arch in ("sm_80", "sm_90"):
        target = Target(f"cuda -arch={arch}")
        for (name, kernel), lowered in zip(program.kernels.items(), program.lowered, strict=True):
            assert verify_gpu_code(lowered.func, GPULimits.from_target(target)) == [], name
            ptx = kernel.obj if arch == "sm_80" else build_kernel(lowered.func, target=target).kernel.obj
            assert f".target {arch}" in ptx.decode()
            _ptxas(tmp_path, name, ptx, arch)


def test_without_a_gpu_the_executor_says_what_is_missing(small: tuple) -> None:
    _, _, lib = small
    if tunecli.cuda(0).exist:
        pytest.skip("this machine has a CUDA GPU")
    with pytest.raises(DeviceError, match=r"^graph executor on cuda\(0\): cannot run the network: CUDA: "):
        lib["default"](tunecli.cuda(0))
    with pytest.raises(DeviceError, match=r"^graph executor on cuda\(0\)"):
        lib["default"]()


def test_a_cuda_build_refuses_the_cpu_and_export(small: tuple, tmp_path: Path) -> None:
    _, _, lib = small
    with pytest.raises(ArgumentError, match=r"kernels are PTX for 'cuda'; run it on a GPU with "
                                            r"lib\['default'\]\(tunecli.cuda\(0\)\), not on cpu\(0\)"):
        lib["default"](tunecli.cpu(0))
    with pytest.raises(GraphError, match="export_library: the kernels are PTX for 'cuda'"):
        lib.export_library(tmp_path / "net.so")
    assert not (tmp_path / "net.so").exists()
