"""The device attributes scripts read before choosing a schedule (``tvm.gpu(0).exist``,
``max_threads_per_block``, ``warp_size``, ``compute_version``...): None on the CPU, as in TVM;
on a machine without a GPU reading them says why; with a GPU they are the driver's numbers."""

from __future__ import annotations

import re

import pytest

import tunecli as tvm
from tunecli.errors import DeviceError

GPU = tvm.gpu(0).exist
ATTRIBUTES = ("device_name", "compute_version", "max_threads_per_block", "warp_size",
              "max_shared_memory_per_block", "multi_processor_count", "max_clock_rate",
              "max_thread_dimensions")


@pytest.mark.parametrize("name", ATTRIBUTES)
def test_the_cpu_has_no_gpu_attributes(name: str):
    assert getattr(tvm.cpu(0), name) is None
    assert getattr(tvm.context("llvm", 0), name) is None


@pytest.mark.skipif(GPU, reason="a CUDA GPU is present")
def test_without_a_gpu_reading_one_says_why():
    assert not tvm.gpu(0).exist
    with pytest.raises(DeviceError, match="CUDA"):
        _ = tvm.gpu(0).max_threads_per_block


@pytest.mark.skipif(not GPU, reason="no CUDA GPU (with cuda-bindings and a driver) here")
def test_a_gpus_attributes_are_the_drivers():
    dev = tvm.context("cuda", 0)
    assert dev.exist and re.fullmatch(r"\d+\.\d+", dev.compute_version)
    assert dev.warp_size == 32 and dev.max_threads_per_block >= 512
    assert dev.max_thread_dimensions[0] == dev.max_threads_per_block
    assert dev.max_shared_memory_per_block >= 48 * 1024
    assert dev.multi_processor_count > 0 and dev.max_clock_rate > 0
    assert isinstance(dev.device_name, str) and dev.device_name
