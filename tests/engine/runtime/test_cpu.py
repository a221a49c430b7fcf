"""The CPU device: memory (plain, guarded), loading, launching and timing compiled kernels."""

from __future__ import annotations

import dataclasses
import mmap
import subprocess
import sys

import numpy as np
import pytest

from tests.engine.kernels_ir import ARG_SPECS, VADD, compile_ir
from tunecli.engine.codegen import ArgSpec, CompiledKernel
from tunecli.engine.runtime import CPUDevice, Device, cpu
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError, CodegenError, TargetError

VADD_KERNEL = CompiledKernel(compile_ir(VADD), "vadd",
                             tuple(ArgSpec(name, shape, dtype, name == "c")
                                   for name, (shape, dtype) in zip("abc", ARG_SPECS, strict=True)),
                             Target("llvm"))


def test_the_cpu_is_a_device_with_tvm_identity():
    dev = cpu(0)
    assert isinstance(dev, Device) and isinstance(dev, CPUDevice)
    assert (dev.device_type, dev.device_id, repr(dev), dev.exist) == (1, 0, "cpu(0)", True)
    assert dev == CPUDevice(0) != cpu(1) and len({dev, CPUDevice(0), cpu(1)}) == 2
    with pytest.raises(ArgumentError, match="device_id"):
        CPUDevice(-1)


def test_memory_in_and_out():
    dev = cpu()
    empty = dev.empty((3, 4), "int16")
    assert empty.shape == (3, 4) and empty.dtype == np.int16 and not empty.any()
    host = np.asfortranarray(np.arange(12, dtype="float32").reshape(3, 4))
    inside = dev.copy_in(host)
    assert inside.flags.c_contiguous and np.array_equal(inside, host)
    host[0, 0] = 99
    assert inside[0, 0] == 0  # a copy
    out = dev.copy_out(inside)
    assert type(out) is np.ndarray and np.array_equal(out, inside) and out.ctypes.data != inside.ctypes.data


@pytest.mark.parametrize("shape,dtype", [((64,), "float32"), ((3, 5), "float64"), ((1025,), "int8"),
                                         ((0,), "int32")])
def test_guarded_arrays_end_at_an_inaccessible_page(shape, dtype):
    arr = cpu().empty(shape, dtype, guarded=True)
    assert arr.shape == shape and arr.dtype == np.dtype(dtype) and arr.flags.writeable and not arr.any()
    assert arr.ctypes.data % 64 == 0
    gap = -(arr.ctypes.data + arr.nbytes) % mmap.PAGESIZE  # bytes from the array's end to the guard page
    assert gap < 64
    filled = cpu().copy_in(np.ones(shape, dtype), guarded=True)
    assert (filled == 1).all()


OVERRUN_SCRIPT = r"""
from tunecli.engine.runtime import cpu
import ctypes
arr = cpu().empty((16,), "float32", guarded=True)   # 64 bytes: the next byte is the guard page
print("writing", flush=True)
ctypes.c_float.from_address(arr.ctypes.data + arr.nbytes).value = 1.0
print("survived", flush=True)
"""


def test_writing_past_a_guarded_array_faults():
    proc = subprocess.run([sys.executable, "-c", OVERRUN_SCRIPT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -11 and proc.stdout.split() == ["writing"]  # SIGSEGV


def test_load_launch_sync_and_time():
    dev = cpu()
    loaded = dev.load(VADD_KERNEL)
    a, b = dev.copy_in(np.arange(64, dtype="float32")), dev.copy_in(np.ones(64, "float32"))
    c = dev.empty((64,), "float32", guarded=True)
    dev.launch(loaded, [a, b, c])
    dev.sync()
    assert np.array_equal(dev.copy_out(c), np.arange(64) + 1.0)
    rounds = []
    costs = dev.time(loaded, [a, b, c], number=3, repeat=4, before_repeat=lambda: rounds.append(1))
    assert len(costs) == 4 == len(rounds) and all(0 < t < 1e-3 for t in costs)
    with pytest.raises(ArgumentError, match=r"vadd takes 3 arrays \(a, b, c\), got 2"):
        dev.launch(loaded, [a, b])
    with pytest.raises(ArgumentError, match=r"argument 2 \('c'\) is an output and must be a writable array"):
        dev.launch(loaded, [a, b, np.frombuffer(bytes(256), "float32")])


def test_load_refuses_objects_this_processor_cannot_run():
    dev = cpu()
    aarch64 = dataclasses.replace(VADD_KERNEL, target=Target("llvm -mtriple=aarch64-linux-gnu"))
    with pytest.raises(TargetError, match="cannot run on this machine"):
        dev.load(aarch64)
    foreign = bytearray(VADD_KERNEL.obj)
    foreign[18:20] = (183).to_bytes(2, "little")  # e_machine: AArch64
    with pytest.raises(TargetError, match="the object file is for AArch64"):
        dev.load(dataclasses.replace(VADD_KERNEL, obj=bytes(foreign)))
    with pytest.raises(CodegenError, match="module 'nope': the object could not be linked"):
        dev.load(dataclasses.replace(VADD_KERNEL, entry_name="nope"))
