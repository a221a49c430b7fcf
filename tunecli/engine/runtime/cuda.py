"""The CUDA device: PTX kernels on an NVIDIA GPU through the CUDA driver API.

Built on NVIDIA's Python bindings (``cuda-bindings``, the optional extra ``tunecli[cuda]``):

* memory: :class:`CUDAArray` (``cuMemAlloc``; ``numpy()``/``asnumpy()``, ``copyfrom()``,
  ``copyto()`` as TVM's NDArray), copies with ``cuMemcpyHtoD``/``cuMemcpyDtoH``;
* kernels: ``load`` JIT-compiles the PTX text of a
  :class:`~tunecli.engine.codegen.CompiledKernel` (``cuModuleLoadData``; libdevice is already
  linked by codegen), ``launch`` runs it with the kernel's grid and block
  (``CompiledKernel.launch``) on the device's primary context;
* timing: CUDA events around each round of launches (TVM's ``time_evaluator`` semantics).

Without the bindings, the driver library or a GPU, the first use raises one
:class:`~tunecli.errors.DeviceError` saying which is missing; ``exist`` is then False.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from tunecli.engine.codegen import CompiledKernel
from tunecli.errors import ArgumentError, DeviceError

from .device import Device, DeviceArray
from .timer import GOLDEN_RATIO

if TYPE_CHECKING:
    from cuda.bindings import driver as cu_types

    from .ndarray import NDArray

_LOCK = threading.Lock()
_state: dict[str, ModuleType] = {}
#: A launch's kernel parameters: the arrays' device addresses and their ctypes.
LaunchParams: TypeAlias = tuple[tuple[int, ...], tuple[type[ctypes.c_void_p], ...]]


def driver() -> ModuleType:
    """The CUDA driver API module of ``cuda-bindings``, initialised once (DeviceError if unusable)."""
    if "driver" in _state:
        return _state["driver"]
    with _LOCK:
        if "driver" not in _state:
            try:
                from cuda.bindings import driver as cu
            except ImportError:
                raise DeviceError("CUDA: NVIDIA's cuda-bindings are not installed; install the extra "
                                  "with `pip install 'tunecli[cuda]'`") from None
            try:
                (err,) = cu.cuInit(0)
            except RuntimeError as exc:  # the bindings could not load libcuda
                raise DeviceError(f"CUDA: no NVIDIA driver on this machine (the driver library "
                                  f"libcuda.so could not be loaded: {exc})") from None
            if err == cu.CUresult.CUDA_ERROR_NO_DEVICE:
                raise DeviceError("CUDA: the NVIDIA driver finds no GPU on this machine")
            _check(cu, err, "cuInit")
            _state["driver"] = cu
    return _state["driver"]


def _check(cu: ModuleType, err: cu_types.CUresult, what: str) -> None:
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        _, text = cu.cuGetErrorString(err)
        raise DeviceError(f"CUDA {what}: {name.decode() if name else err} ({text.decode() if text else ''})")


def call(what: str, result: object) -> Any:
    """The value(s) of a driver call's ``(error, values...)`` result; DeviceError naming ``what``."""
    cu = driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    _check(cu, err, what)
    return values[0] if len(values) == 1 else tuple(values) if values else None


class CUDAArray:
    """An array in a CUDA GPU's memory (TVM's NDArray on ``cuda(n)``)."""

    def __init__(self, device: CUDADevice, shape: tuple[int, ...], dtype: str):
        self.device, self.shape, self.dtype = device, shape, np.dtype(dtype)
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * self.dtype.itemsize
        device.activate()
        self.handle = call("cuMemAlloc", driver().cuMemAlloc(max(self.nbytes, 1)))

    @property
    def pointer(self) -> int:
        """The device address of the data."""
        return int(self.handle)

    def numpy(self) -> np.ndarray:
        """A host (numpy) copy of the data."""
        return self.device.copy_out(self)

    asnumpy = numpy

    def copyfrom(self, source: ArrayLike) -> CUDAArray:
        """Overwrite the array with ``source`` (same shape, converted to this dtype); returns self."""
        src = np.ascontiguousarray(np.asarray(source).astype(self.dtype, copy=False))
        if src.shape != self.shape:
            raise ArgumentError(f"NDArray.copyfrom: source has shape {src.shape}, array has {self.shape}")
        self.device.activate()
        call("cuMemcpyHtoD", driver().cuMemcpyHtoD(self.handle, src.ctypes.data, self.nbytes))
        return self

    def copyto(self, target: Device | CUDAArray | NDArray) -> DeviceArray:
        """Copy into ``target`` (an array of the same shape) or into a new array on a device."""
        if isinstance(target, Device):
            return target.copy_in(self.numpy())
        return target.copyfrom(self.numpy())

    def __del__(self) -> None:
        cu = _state.get("driver")
        if cu is not None and getattr(self, "handle", None) is not None:
            cu.cuMemFree(self.handle)

    def __repr__(self) -> str:
        return f"<tunecli.NDArray shape={self.shape}, {self.device!r}>"


class CUDAKernel:
    """A kernel loaded on a GPU: its module and function handles, arguments and launch shape."""

    def __init__(self, kernel: CompiledKernel, module: cu_types.CUmodule, function: cu_types.CUfunction):
        if kernel.launch is None:
            raise ArgumentError(f"cuda: kernel {kernel.entry_name} has no launch shape")
        self.entry_name, self.arg_specs, self.launch = kernel.entry_name, kernel.arg_specs, kernel.launch
        self.module, self.function = module, function


class CUDADevice(Device):
    """An NVIDIA GPU (TVM's ``kDLCUDA``), ``device_id`` as the driver numbers them."""

    device_type = 2
    names = ("cuda", "gpu", "nvptx")
    target_kinds = ("cuda", "nvptx")
    label = "the CUDA GPU"

    def __init__(self, device_id: int = 0) -> None:
        super().__init__(device_id)
        self._context: cu_types.CUcontext | None = None

    def activate(self) -> None:
        """Make this GPU's primary context current in the calling thread (DeviceError if none)."""
        cu = driver()
        if self._context is None:
            count = call("cuDeviceGetCount", cu.cuDeviceGetCount())
            if self.device_id >= count:
                raise DeviceError(f"{self!r}: this machine has {count} CUDA GPU(s)")
            dev = call("cuDeviceGet", cu.cuDeviceGet(self.device_id))
            self._context = call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
        call("cuCtxSetCurrent", cu.cuCtxSetCurrent(self._context))

    @property
    def exist(self) -> bool:
        """Whether the GPU is present (and the bindings and driver to use it)."""
        try:
            self.activate()
        except DeviceError:
            return False
        return True

    def _attribute(self, name: str) -> int:
        """The driver's ``CU_DEVICE_ATTRIBUTE_<name>`` of this GPU (DeviceError if there is none)."""
        cu = driver()
        self.activate()
        dev = call("cuDeviceGet", cu.cuDeviceGet(self.device_id))
        attr = getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(call("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(attr, dev)))

    @property
    def compute_version(self) -> str:
        """The GPU's compute capability, ``"9.0"`` (TVM's ``Device.compute_version``)."""
        return f"{self._attribute('COMPUTE_CAPABILITY_MAJOR')}.{self._attribute('COMPUTE_CAPABILITY_MINOR')}"

    @property
    def device_name(self) -> str:
        """The GPU's name, ``"NVIDIA H100 80GB HBM3"`` (TVM's ``Device.device_name``)."""
        cu = driver()
        self.activate()
        dev = call("cuDeviceGet", cu.cuDeviceGet(self.device_id))
        return bytes(call("cuDeviceGetName", cu.cuDeviceGetName(256, dev))).split(b"\0")[0].decode()

    @property
    def max_threads_per_block(self) -> int:
        """Most threads in a block (TVM's ``Device.max_threads_per_block``)."""
        return self._attribute("MAX_THREADS_PER_BLOCK")

    @property
    def warp_size(self) -> int:
        """Threads in a warp (TVM's ``Device.warp_size``)."""
        return self._attribute("WARP_SIZE")

    @property
    def max_shared_memory_per_block(self) -> int:
        """Bytes of shared memory a block may use (TVM's ``Device.max_shared_memory_per_block``)."""
        return self._attribute("MAX_SHARED_MEMORY_PER_BLOCK")

    @property
    def multi_processor_count(self) -> int:
        """Streaming multiprocessors (TVM's ``Device.multi_processor_count``)."""
        return self._attribute("MULTIPROCESSOR_COUNT")

    @property
    def max_clock_rate(self) -> int:
        """Peak clock in kHz (TVM's ``Device.max_clock_rate``)."""
        return self._attribute("CLOCK_RATE")

    @property
    def max_thread_dimensions(self) -> tuple[int, int, int]:
        """Most threads of a block along x, y and z (TVM's ``Device.max_thread_dimensions``)."""
        return (self._attribute("MAX_BLOCK_DIM_X"), self._attribute("MAX_BLOCK_DIM_Y"),
                self._attribute("MAX_BLOCK_DIM_Z"))

    # memory ------------------------------------------------------------------------------------
    def empty(self, shape: Sequence[int], dtype: str, guarded: bool = False) -> CUDAArray:
        """A zero-filled device array (``guarded`` has no effect: GPUs have no guard pages)."""
        out = CUDAArray(self, tuple(int(s) for s in shape), dtype)
        call("cuMemsetD8", driver().cuMemsetD8(out.handle, 0, max(out.nbytes, 1)))
        return out

    def copy_in(self, host: np.ndarray, guarded: bool = False) -> CUDAArray:
        """A device copy of ``host``."""
        host = np.asarray(host)
        return CUDAArray(self, tuple(host.shape), str(host.dtype)).copyfrom(host)

    def copy_out(self, array: CUDAArray) -> np.ndarray:
        """A host copy of the device array ``array``."""
        out = np.empty(array.shape, dtype=array.dtype)
        self.activate()
        call("cuMemcpyDtoH", driver().cuMemcpyDtoH(out.ctypes.data, array.handle, array.nbytes))
        return out

    # kernels -----------------------------------------------------------------------------------
    def load(self, kernel: CompiledKernel) -> CUDAKernel:
        """JIT-compile the kernel's PTX for this GPU (DeviceError naming the kernel if it fails)."""
        if kernel.object_format != "ptx":
            raise ArgumentError(f"{self!r}: kernel {kernel.entry_name} is a {kernel.object_format!r} object "
                                f"built for {str(kernel.target)!r}; a CUDA GPU runs PTX (target 'cuda')")
        cu = driver()
        self.activate()
        ptx = np.frombuffer(kernel.obj + b"\0", dtype=np.uint8)  # NUL-terminated text, kept alive
        module = call(f"cuModuleLoadData of kernel {kernel.entry_name}", cu.cuModuleLoadData(ptx.ctypes.data))
        function = call(f"cuModuleGetFunction of {kernel.entry_name}",
                        cu.cuModuleGetFunction(module, kernel.entry_name.encode()))
        return CUDAKernel(kernel, module, function)

    def _params(self, loaded: CUDAKernel, arrays: Sequence[DeviceArray]) -> LaunchParams:
        specs = loaded.arg_specs
        if len(arrays) != len(specs):
            raise ArgumentError(f"{loaded.entry_name} takes {len(specs)} arrays, got {len(arrays)}")
        for k, (arr, spec) in enumerate(zip(arrays, specs, strict=True)):
            where = f"{loaded.entry_name}: argument {k} ({spec.name!r})"
            if not isinstance(arr, CUDAArray) or arr.device != self:
                raise ArgumentError(f"{where} must be an array on {self!r} (tunecli.nd.array(x, device="
                                    f"tunecli.cuda({self.device_id}))), got {type(arr).__name__}")
            if arr.dtype != np.dtype(spec.dtype) or tuple(arr.shape) != tuple(spec.shape):
                raise ArgumentError(f"{where} must be {spec.dtype}{list(spec.shape)}, got "
                                    f"{arr.dtype}{list(arr.shape)}")
        return tuple(a.pointer for a in arrays), tuple(ctypes.c_void_p for _ in arrays)

    def launch(self, loaded: CUDAKernel, arrays: Sequence[DeviceArray]) -> None:
        """Queue one launch of ``loaded`` with its grid and block on ``arrays``."""
        params = self._params(loaded, arrays)
        self.activate()
        self._launch(loaded, params)

    def launch_pointers(self, loaded: CUDAKernel, pointers: Sequence[int]) -> None:
        """Queue one launch of ``loaded`` on device addresses (a graph executor's planned buffers)."""
        self.activate()
        self._launch(loaded, (tuple(pointers), tuple(ctypes.c_void_p for _ in pointers)))

    def write(self, address: int, host: np.ndarray) -> None:
        """Copy the bytes of ``host`` to the device address ``address``."""
        src = np.ascontiguousarray(host)
        self.activate()
        call("cuMemcpyHtoD", driver().cuMemcpyHtoD(address, src.ctypes.data, src.nbytes))

    def read(self, address: int, shape: Sequence[int], dtype: str) -> np.ndarray:
        """A host array of ``shape`` and ``dtype`` copied from the device address ``address``."""
        out = np.empty(tuple(shape), dtype=dtype)
        self.activate()
        call("cuMemcpyDtoH", driver().cuMemcpyDtoH(out.ctypes.data, address, out.nbytes))
        return out

    def _launch(self, loaded: CUDAKernel, params: LaunchParams) -> None:
        (gx, gy, gz), (bx, by, bz) = loaded.launch.grid, loaded.launch.block
        call(f"cuLaunchKernel of {loaded.entry_name}",
             driver().cuLaunchKernel(loaded.function, gx, gy, gz, bx, by, bz, 0, 0, params, 0))

    def sync(self) -> None:
        """Wait for every queued launch and copy (a fault in a kernel surfaces here)."""
        self.activate()
        call("cuCtxSynchronize", driver().cuCtxSynchronize())

    def time(self, loaded: CUDAKernel, arrays: Sequence[DeviceArray], number: int = 10, repeat: int = 1,
             min_repeat_ms: float = 0.0, warmup_ms: float = 0.0,
             before_repeat: Callable[[], None] | None = None, warmup: int = 1) -> list[float]:
        """Seconds per launch, one per repeat, between CUDA events (see :meth:`Device.time`)."""
        if number < 1 or repeat < 1 or min_repeat_ms < 0 or warmup < 0 or warmup_ms < 0:
            raise ArgumentError(f"timer: need number >= 1, repeat >= 1 and non-negative times, got "
                                f"number={number}, repeat={repeat}, min_repeat_ms={min_repeat_ms}")
        cu = driver()
        params = self._params(loaded, arrays)
        self.activate()
        start = call("cuEventCreate", cu.cuEventCreate(0))
        end = call("cuEventCreate", cu.cuEventCreate(0))

        def round_ms(n: int) -> float:
            call("cuEventRecord", cu.cuEventRecord(start, 0))
            for _ in range(n):
                self._launch(loaded, params)
            call("cuEventRecord", cu.cuEventRecord(end, 0))
            call("cuEventSynchronize", cu.cuEventSynchronize(end))
            return float(call("cuEventElapsedTime", cu.cuEventElapsedTime(start, end)))

        try:
            for _ in range(warmup):
                self._launch(loaded, params)
            spent = round_ms(1) if warmup_ms > 0 else 0.0
            while spent < warmup_ms:
                spent += round_ms(max(1, number))
            results = []
            for _ in range(repeat):
                if before_repeat is not None:
                    before_repeat()
                ms = round_ms(number)
                while ms < min_repeat_ms:
                    number = int(max(min_repeat_ms / max(ms / number, 1e-6) + 1, number * GOLDEN_RATIO))
                    ms = round_ms(number)
                results.append(ms / 1e3 / number)
            return results
        finally:
            cu.cuEventDestroy(start)
            cu.cuEventDestroy(end)
