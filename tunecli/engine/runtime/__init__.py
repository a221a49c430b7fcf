"""Running compiled kernels: devices, arrays on them, and the modules ``build`` returns.

Modules::

    device.py   Device: the interface of a backend (memory, load/launch/sync, timing on its clock)
    cpu.py      CPUDevice: the host (LLJIT linking, ctypes launches, guard-page arrays)
    cuda.py     CUDADevice: NVIDIA GPUs through the driver API of cuda-bindings (PTX, CUDA events)
    threads.py  the thread count of parallel loops (set_num_threads, TUNECLI_NUM_THREADS)
    thread_pool.py  the pool of threads that runs parallel loops in chunks (its IR: thread_pool_ir.py)
    timer.py    time_calls: TVM's time_evaluator loop on the host clock
    devices.py  the table of device kinds: device(name | type | target), cpu(), device_for_target()
    ndarray.py  NDArray, array(), empty(): TVM's nd face over a device's memory
    module.py   Module (call, time_evaluator, save, get_source), BenchmarkResult
    graph_executor.py  GraphExecutor, GraphModule: a network's kernels run in order on planned buffers
    cuda_graph_executor.py  CUDAGraphExecutor: the same on a GPU (device buffers, PTX launches)
    debug_executor.py  time_kernels, GraphModuleDebug: each kernel timed alone (TVM's debug_executor)
    graph_library.py   GraphLibrary (``lib["default"](dev)``), exported libraries, load_module(),
                       executor_for() (the arguments of TVM's graph_executor.create)

A new backend is one module beside ``cpu.py`` and one entry in ``devices.DEVICE_KINDS``.
"""

from .cpu import CPUDevice
from .cuda import CUDADevice
from .debug_executor import GraphModuleDebug, GraphProfile, OpTime, time_kernels
from .device import Device
from .devices import as_device, cpu, cuda, device, device_for_target, gpu
from .graph_executor import GraphExecutor, GraphModule
from .graph_library import GraphLibrary, executor_for, load_module
from .module import BenchmarkResult, Module
from .ndarray import NDArray, array, empty
from .threads import get_num_threads, set_num_threads
from .timer import time_calls

__all__ = ["BenchmarkResult", "CPUDevice", "CUDADevice", "Device", "GraphExecutor", "GraphLibrary",
           "GraphModule", "GraphModuleDebug", "GraphProfile", "Module", "NDArray", "OpTime", "array",
           "as_device", "cpu", "cuda", "device", "device_for_target", "empty", "executor_for",
           "get_num_threads", "gpu", "load_module", "set_num_threads", "time_calls", "time_kernels"]
