"""TVM's runtime face: devices (``tunecli.cpu()``, ``tunecli.device()``), ``NDArray`` and ``Module``.

Kernels of ``llvm`` targets run on the host CPU (TVM's ``kDLCPU``), those of ``cuda`` targets
on an NVIDIA GPU (``tunecli.cuda()``, TVM's ``kDLCUDA``; needs ``tunecli[cuda]``); see
:mod:`tunecli.engine.runtime` for the devices and how a module runs on them.  ``load`` and
``enabled`` are also reached as ``tvm.module.load`` / ``tvm.module.enabled`` (the AutoTVM era's names).
"""

import importlib.util
import os

from tunecli.engine.ir.expr import Expr
from tunecli.engine.ir.expr import convert as _convert_expr
from tunecli.engine.runtime import (
    BenchmarkResult,
    CPUDevice,
    CUDADevice,
    Device,
    GraphLibrary,
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
from tunecli.engine.runtime import device as _device
from tunecli.engine.runtime.param_dict import load_param_dict, save_param_dict
from tunecli.errors import ArgumentError

#: DLPack device type of the CPU (TVM's ``Device.kDLCPU``).
CPU_DEVICE_TYPE = CPUDevice.device_type
#: DLPack device type of NVIDIA GPUs (TVM's ``Device.kDLCUDA``).
CUDA_DEVICE_TYPE = CUDADevice.device_type


def enabled(target: str) -> bool:
    """TVM's ``runtime.enabled``: whether this runtime supports kernels of ``target``'s kind
    (``"llvm"`` always; ``"cuda"`` when NVIDIA's cuda-bindings are installed; a GPU being present is
    ``tunecli.cuda().exist``)."""
    words = target.split() if isinstance(target, str) else []
    if not words:
        raise ArgumentError(f"runtime.enabled: expected a target or device name such as 'llvm', "
                            f"got {target!r}")
    try:
        dev = _device(words[0])
    except ArgumentError:
        return False
    return dev.device_type != CUDA_DEVICE_TYPE or importlib.util.find_spec("cuda.bindings") is not None


def load(path: str | os.PathLike, fmt: str = "") -> Module | GraphLibrary:
    """The AutoTVM era's ``tvm.module.load``: :func:`load_module` of an exported library (``fmt``,
    the file's format, is told by its name)."""
    del fmt
    return load_module(path)


def convert(value: object) -> object:
    """TVM's ``runtime.convert``: a Python number becomes a constant expression (``1024`` an
    ``int32`` one, as in TVM's cross-compilation tutorial), a list or tuple a tuple of converted
    items; expressions and strings are returned as they are."""
    if isinstance(value, (Expr, str)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(convert(item) for item in value)
    return _convert_expr(value)  # type: ignore[arg-type]


__all__ = ["BenchmarkResult", "CPU_DEVICE_TYPE", "CUDA_DEVICE_TYPE", "Device", "GraphLibrary", "Module",
           "NDArray", "array", "convert", "cpu", "cuda", "device", "empty", "enabled", "gpu", "load",
           "load_module", "load_param_dict", "save_param_dict"]
