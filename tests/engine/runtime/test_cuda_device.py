"""The CUDA device: reached as TVM reaches it, and one clear error where it cannot run.

Without a GPU the device is in the table (``tunecli.cuda(0)``, ``device("gpu")``, the device of
``cuda`` targets) and says why it cannot be used: NVIDIA's bindings are not installed, the driver
library is missing, or the driver finds no GPU.  With a GPU the tests at the end build kernels
for ``cuda``, run them on it and compare with numpy (``scripts/gpu_check.py`` does more).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tunecli
from tunecli.engine.build import build
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureRequest, measure_object
from tunecli.engine.runtime import CUDADevice, device, device_for_target
from tunecli.engine.target import Target
from tunecli.errors import DeviceError

GPU = tunecli.cuda(0).exist
needs_gpu = pytest.mark.skipif(not GPU, reason="no CUDA GPU (with cuda-bindings and a driver) here")
no_gpu = pytest.mark.skipif(GPU, reason="a CUDA GPU is present")


def vector_add(n: int = 1000):
    A, B = tunecli.te.placeholder((n,), name="A"), tunecli.te.placeholder((n,), name="B")
    C = tunecli.te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = tunecli.te.create_schedule(C.op)
    bo, ti = s[C].split(C.op.axis[0], factor=128)
    s[C].bind(bo, tunecli.te.thread_axis("blockIdx.x"))
    s[C].bind(ti, tunecli.te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def test_the_gpu_is_reached_by_every_name_tvm_uses():
    dev = tunecli.cuda(0)
    assert isinstance(dev, CUDADevice) and repr(dev) == "cuda(0)"
    assert dev is tunecli.gpu(0) is device("cuda") is device("gpu", 0) is device(2) is tunecli.nd.cuda(0)
    assert dev.device_type == CUDADevice.kDLCUDA == tunecli.runtime.CUDA_DEVICE_TYPE == 2
    assert device_for_target(Target("cuda -arch=sm_90")) is dev is device_for_target("nvptx")
    assert tunecli.cuda(1) is not dev and tunecli.cuda(1) != dev
    assert build(*vector_add(), target="cuda").device is dev


@no_gpu
def test_without_a_gpu_each_use_is_one_clear_error():
    assert tunecli.cuda(0).exist is False
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        why = r"cuda-bindings are not installed; install the extra with `pip install 'tunecli\[cuda\]'`"
    else:  # the bindings are installed: the driver library or the GPU is missing
        why = r"no NVIDIA driver on this machine \(the driver library libcuda.so could not|finds no GPU"
    with pytest.raises(DeviceError, match=why):
        tunecli.nd.array(np.zeros(4, "float32"), device=tunecli.cuda(0))
    with pytest.raises(DeviceError, match=why):
        tunecli.nd.empty((4,), "float32", tunecli.cuda(0))
    mod = build(*vector_add(), target="cuda")
    with pytest.raises(DeviceError, match=why):
        mod(*(np.zeros(1000, "float32") for _ in range(3)))


@no_gpu
def test_measuring_a_cuda_kernel_without_a_gpu_is_a_device_error_result():
    """The runner's measurement of a PTX kernel goes to the CUDA device of the request's target."""
    mod = build(*vector_add(), target="cuda")
    specs = tuple((spec.shape, spec.dtype) for spec in mod.arg_specs)
    reply = measure_object(MeasureRequest(mod.object_bytes(), mod.entry_name, specs,
                                          target=Target("cuda"), launch=mod.launch))
    assert reply.error_no == MeasureErrorNo.RUNTIME_DEVICE and reply.costs == ()
    assert reply.error.startswith("DeviceError: CUDA")


@needs_gpu
def test_a_kernel_runs_on_the_gpu_and_is_timed_with_events():
    dev = tunecli.cuda(0)
    mod = build(*vector_add(), target="cuda")
    a, b = (np.random.default_rng(k).uniform(size=1000).astype("float32") for k in range(2))
    a_dev, b_dev = tunecli.nd.array(a, device=dev), tunecli.nd.array(b, device=dev)
    c_dev = tunecli.nd.empty((1000,), "float32", dev)
    mod(a_dev, b_dev, c_dev)
    dev.sync()
    np.testing.assert_allclose(c_dev.numpy(), a + b, rtol=1e-6)
    result = mod.time_evaluator(mod.entry_name, dev, number=20, repeat=3)(a_dev, b_dev, c_dev)
    assert len(result.results) == 3 and 0 < result.mean < 1e-2


@needs_gpu
def test_measuring_on_the_gpu_checks_and_times():
    mod = build(*vector_add(), target="cuda")
    specs = tuple((spec.shape, spec.dtype) for spec in mod.arg_specs)
    reply = measure_object(MeasureRequest(mod.object_bytes(), mod.entry_name, specs,
                                          target=Target("cuda"), launch=mod.launch, return_outputs=True))
    assert reply.error_no == MeasureErrorNo.NO_ERROR and len(reply.costs) == 1


def test_the_ptx_stays_in_the_module(tmp_path):
    mod = build(*vector_add(), target="cuda -arch=sm_90")
    ptx = mod.get_source("asm")
    assert ptx == mod.get_source("ptx") and ".target sm_90" in ptx and ".entry default_function" in ptx
    assert "define ptx_kernel" in mod.get_source()  # the optimised LLVM IR
    mod.save(tmp_path / "k.ptx")
    assert (tmp_path / "k.ptx").read_text() == ptx
