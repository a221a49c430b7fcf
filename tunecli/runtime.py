"""TVM's runtime face: devices (``tunecli.cpu()``, ``tunecli.device()``), ``NDArray`` and ``Module``.

Kernels of ``llvm`` targets run on the host CPU (TVM's ``kDLCPU``); see
:mod:`tunecli.engine.runtime` for the devices and how a module runs on them.
"""

from tunecli.engine.runtime import (
    BenchmarkResult,
    CPUDevice,
    Device,
    Module,
    NDArray,
    array,
    cpu,
    device,
    empty,
    load_module,
)

#: DLPack device type of the CPU (TVM's ``Device.kDLCPU``).
CPU_DEVICE_TYPE = CPUDevice.device_type

__all__ = ["BenchmarkResult", "CPU_DEVICE_TYPE", "Device", "Module", "NDArray", "array", "cpu", "device",
           "empty", "load_module"]
