"""The graph executor on a CUDA GPU: a network's PTX kernels launched in order on planned device
buffers (TVM's ``graph_executor`` on ``cuda(n)``).

One device allocation per storage id of the memory plan (entries sharing an id share it); the
parameters are copied to the device once, when the executor is made; ``set_input`` copies an
input in, ``get_output`` copies an output out.  ``run`` queues every kernel with its grid and block
(``CompiledKernel.launch``) and waits for the GPU, so a faulting kernel surfaces there and
``GraphModule.benchmark`` times whole runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from tunecli.engine.codegen import CompiledKernel
from tunecli.errors import ArgumentError, DeviceError

from .cuda import CUDAArray, CUDADevice, CUDAKernel
from .graph_executor import Executor, GraphPlan


class CUDAGraphExecutor(Executor):
    """Buffers and kernel launches of one graph on ``device``.

    Parameters
    ----------
    graph_json : str
    kernels : mapping of str to CompiledKernel
        The PTX kernels by function name (loaded on ``device`` here).
    params : mapping of str to array
        Constant inputs, copied to the device.
    device : CUDADevice

    Raises
    ------
    DeviceError
        When the GPU cannot be used (no bindings, driver or GPU), naming what is missing.
    """

    def __init__(self, graph_json: str, kernels: Mapping[str, CompiledKernel],
                 params: Mapping[str, ArrayLike], device: CUDADevice):
        self.plan = plan = GraphPlan.parse(graph_json)
        self.device = device
        missing = sorted({name for name, _ in plan.ops} - set(kernels))
        if missing:
            raise ArgumentError(f"graph executor: no kernel for {', '.join(missing)}")
        try:
            device.activate()
        except DeviceError as err:
            raise DeviceError(f"graph executor on {device!r}: cannot run the network: {err}") from None
        loaded = {name: device.load(kernels[name]) for name in dict.fromkeys(name for name, _ in plan.ops)}
        self._storage = {sid: CUDAArray(device, (max(n, 1),), "uint8")
                         for sid, n in plan.storage_bytes().items()}
        self._address = [self._storage[sid].pointer for sid in plan.storage]
        for name, value in params.items():
            if name in plan.inputs:
                self._write(plan.inputs[name], value, f"parameter {name!r}")
        self._calls = [(loaded[name], tuple(self._address[e] for e in args)) for name, args in plan.ops]

    def _write(self, entry: int, value: ArrayLike | CUDAArray, what: str) -> None:
        arr = value.numpy() if isinstance(value, CUDAArray) else np.asarray(value)
        shape, dtype = self.plan.shapes[entry], np.dtype(self.plan.dtypes[entry])
        if arr.size != math.prod(shape):
            raise ArgumentError(f"graph executor: {what} has shape {list(shape)}, got {list(arr.shape)}")
        self.device.write(self._address[entry], np.ascontiguousarray(arr.astype(dtype, copy=False)))

    def run(self) -> None:
        """Launch every kernel once, in order, and wait for the GPU."""
        for kernel, pointers in self._calls:
            self.device.launch_pointers(kernel, pointers)
        self.device.sync()

    def kernel_calls(self) -> list[tuple[Callable[..., None], Sequence[object]]]:
        """Each kernel launch, in order, as a call that launches it and waits for the GPU."""
        return [(self._launch_and_wait, (kernel, pointers)) for kernel, pointers in self._calls]

    def _launch_and_wait(self, kernel: CUDAKernel, pointers: Sequence[int]) -> None:
        self.device.launch_pointers(kernel, pointers)
        self.device.sync()

    def set_input(self, key: str | int, value: ArrayLike | CUDAArray) -> None:
        """Copy ``value`` (a host array) into input ``key`` on the device."""
        self._write(self.entry(key), value, f"input {key!r}")

    def array(self, entry: int) -> np.ndarray:
        """A host copy of ``entry``."""
        return self.device.read(self._address[entry], self.plan.shapes[entry], self.plan.dtypes[entry])
