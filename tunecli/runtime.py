"""TVM's runtime face: devices (``tunecli.cpu()``, ``tunecli.device()``), ``NDArray`` and ``Module``.

Kernels of ``llvm`` targets run on the host CPU (TVM's ``kDLCPU``), those of ``cuda`` targets
on an NVIDIA GPU (``tunecli.cuda()``, TVM's ``kDLCUDA``; needs ``tunecli[cuda]``); see
:mod:`tunecli.engine.runtime` for the devices and how a module runs on them.
"""

from tunecli.engine.ir.expr import Expr
from tunecli.engine.ir.expr import convert as _convert_expr
from tunecli.engine.runtime import (
    BenchmarkResult,
    CPUDevice,
    CUDADevice,
    Device,
    Module,
    NDArray,
    array,
    cpu,
    cuda,
    device,
    empty,
    gpu,
    load_module,
)
from tunecli.engine.runtime.param_dict import load_param_dict, save_param_dict

#: DLPack device type of the CPU (TVM's ``Device.kDLCPU``).
CPU_DEVICE_TYPE = CPUDevice.device_type
#: DLPack device type of NVIDIA GPUs (TVM's ``Device.kDLCUDA``).
CUDA_DEVICE_TYPE = CUDADevice.device_type



def convert(value: object) -> object:
    """TVM's ``runtime.convert``: a Python number becomes a constant expression (``1024`` an
    ``int32`` one, as in TVM's cross-compilation tutorial), a list or tuple a tuple of converted
    items; expressions and strings are returned as they are."""
    if isinstance(value, (Expr, str)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(convert(item) for item in value)
    return _convert_expr(value)  # type: ignore[arg-type]


__all__ = ["BenchmarkResult", "CPU_DEVICE_TYPE", "CUDA_DEVICE_TYPE", "Device", "Module", "NDArray", "array",
           "convert", "cpu", "cuda", "device", "empty", "gpu", "load_module", "load_param_dict",
           "save_param_dict"]
