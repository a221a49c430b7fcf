"""What a remote session hands out (TVM's remote API objects): devices, arrays, modules and graph
executors that live in the device server's worker process and are driven over the session.

``remote.cpu(0)`` / ``remote.cuda(0)`` is a :class:`RemoteDevice` (a runtime ``Device``, so
``tunecli.nd.array(x, dev)`` and ``tunecli.nd.empty(shape, dtype, dev)`` give a
:class:`RemoteNDArray`); ``remote.load_module(name)`` a :class:`RemoteModule` whose
``["default"](dev)`` gives a ``GraphModule`` over a :class:`RemoteExecutor`, so
``graph_executor.GraphModule(rlib["default"](dev))`` with ``set_input``/``run``/``get_output`` and
``module.module.time_evaluator("run", dev, number, repeat)`` run and time the network on the
device.  A kernel module's library (``build(...).export_library``) loads as a
:class:`RemoteKernelModule`: ``f(a, b)`` on remote arrays, ``f[f.entry_name]``, and
``f.time_evaluator(f.entry_name, dev, number=10)(a, b).mean``.  Objects live until the session ends.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import NoReturn, Protocol

import numpy as np
from numpy.typing import ArrayLike

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.rpc.device_info import DeviceInfo
from tunecli.engine.runtime.device import Device
from tunecli.engine.runtime.graph_executor import Executor, GraphModule, GraphPlan
from tunecli.engine.runtime.module import BenchmarkResult
from tunecli.errors import ArgumentError

#: DLPack device types by the names ``remote.device`` accepts.
DEVICE_TYPES = {"cpu": Device.kDLCPU, "llvm": Device.kDLCPU, "cuda": Device.kDLCUDA, "gpu": Device.kDLCUDA,
                "nvptx": Device.kDLCUDA}


class ObjectCalls(Protocol):
    """What the remote objects need of their session."""

    def object_call(self, op: str, fields: dict, payload: bytes = b"") -> tuple[dict, bytes]: ...

    def describe(self) -> DeviceInfo: ...


def wire_array(value: ArrayLike) -> tuple[dict, bytes]:
    """The fields and bytes that carry a host array."""
    arr = np.ascontiguousarray(np.asarray(value))
    return {"shape": list(arr.shape), "dtype": str(arr.dtype)}, arr.tobytes()


def host_array(fields: dict, data: bytes) -> np.ndarray:
    """The array carried by ``fields`` and ``data`` (see :func:`wire_array`)."""
    return np.frombuffer(data, dtype=np.dtype(fields["dtype"])).reshape(fields["shape"]).copy()


class RemoteDevice(Device):
    """Device ``device_id`` of kind ``device_type`` on the other end of a session."""

    names = ("remote",)
    target_kinds = ()
    label = "a remote device"

    def __init__(self, session: ObjectCalls, device_type: int, device_id: int = 0) -> None:
        super().__init__(device_id)
        if device_type not in (Device.kDLCPU, Device.kDLCUDA):
            raise ArgumentError(f"remote device: unknown device type {device_type!r} (1: cpu, 2: cuda)")
        self.device_type = device_type  # type: ignore[misc]
        self.session = session

    @property
    def exist(self) -> bool:
        """Whether the server has this device (its CPU; its CUDA GPU, which it describes)."""
        if self.device_type == Device.kDLCPU:
            return True
        return self.device_id == 0 and bool(self.session.describe().gpu)

    @property
    def wire(self) -> list[int]:
        """The device as the session's frames name it."""
        return [self.device_type, self.device_id]

    def empty(self, shape: Sequence[int], dtype: str, guarded: bool = False) -> RemoteNDArray:
        fields = {"device": self.wire, "shape": [int(s) for s in shape], "dtype": str(np.dtype(dtype))}
        reply, _ = self.session.object_call("array_new", fields)
        return RemoteNDArray(self, reply["handle"], tuple(fields["shape"]), fields["dtype"])

    def copy_in(self, host: np.ndarray, guarded: bool = False) -> RemoteNDArray:
        fields, data = wire_array(host)
        reply, _ = self.session.object_call("array_new", {"device": self.wire, **fields}, data)
        return RemoteNDArray(self, reply["handle"], tuple(fields["shape"]), fields["dtype"])

    def copy_out(self, array: object) -> np.ndarray:
        if not isinstance(array, RemoteNDArray):
            raise ArgumentError(f"{self!r}: expected an array of this device, got {type(array).__name__}")
        return array.numpy()

    def load(self, kernel: CompiledKernel) -> NoReturn:
        raise ArgumentError(f"{self!r}: kernels reach a remote device in a library: remote.upload(path), "
                            "remote.load_module(name)")

    def launch(self, loaded: object, arrays: Sequence[object]) -> None:
        self.load(loaded)

    def sync(self) -> None:
        """Remote calls return when the device is done: nothing is pending."""

    def time(self, loaded: object, arrays: Sequence[object], number: int = 10, repeat: int = 1,
             min_repeat_ms: float = 0.0, warmup_ms: float = 0.0,
             before_repeat: Callable[[], None] | None = None, warmup: int = 1) -> list[float]:
        self.load(loaded)
        return []

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RemoteDevice) and other.session is self.session
                and other.wire == self.wire)

    def __hash__(self) -> int:
        return hash((id(self.session), self.device_type, self.device_id))

    def __repr__(self) -> str:
        kind = "cpu" if self.device_type == Device.kDLCPU else "cuda"
        return f"remote {kind}({self.device_id})"


class RemoteNDArray:
    """An array in a remote device's memory (TVM's remote ``NDArray``)."""

    def __init__(self, device: RemoteDevice, handle: int, shape: tuple[int, ...], dtype: str) -> None:
        self.device, self.handle, self.shape, self.dtype = device, handle, shape, dtype

    def numpy(self) -> np.ndarray:
        """A host copy."""
        fields, data = self.device.session.object_call("array_get", {"array": self.handle})
        return host_array(fields, data)

    asnumpy = numpy

    def copyfrom(self, source: ArrayLike) -> RemoteNDArray:
        """Overwrite the array with ``source`` (same shape)."""
        fields, data = wire_array(np.asarray(source, dtype=self.dtype))
        self.device.session.object_call("array_set", {"array": self.handle, **fields}, data)
        return self

    def __repr__(self) -> str:
        return f"<remote NDArray {self.dtype}{list(self.shape)} on {self.device!r}>"


class RemoteExecutor(Executor):
    """A graph executor in the server's worker, driven over the session."""

    def __init__(self, session: ObjectCalls, handle: int, graph_json: str) -> None:
        self.session, self.handle, self.graph_json = session, handle, graph_json
        self.plan = GraphPlan.parse(graph_json)

    def run(self) -> None:
        self.session.object_call("run", {"executor": self.handle})

    def set_input(self, key: str | int, value: RemoteNDArray | ArrayLike) -> None:
        self.entry(key)  # a bad name or index fails here, before anything travels
        key = int(key) if isinstance(key, (int, np.integer)) else key
        if isinstance(value, RemoteNDArray):
            fields = {"executor": self.handle, "key": key, "array": value.handle}
            self.session.object_call("set_input", fields)
        else:
            fields, data = wire_array(value)
            self.session.object_call("set_input", {"executor": self.handle, "key": key, **fields}, data)

    def array(self, entry: int) -> np.ndarray:
        fields, data = self.session.object_call("entry", {"executor": self.handle, "entry": int(entry)})
        return host_array(fields, data)

    def kernel_calls(self) -> list[tuple[Callable[..., None], Sequence[object]]]:
        raise ArgumentError("remote graph module: its kernels run on the device; time the whole run with "
                            "module.module.time_evaluator('run', dev)")

    def time_run(self, number: int, repeat: int, min_repeat_ms: float = 0.0) -> list[float]:
        fields = {"executor": self.handle, "number": int(number), "repeat": int(repeat),
                  "min_repeat_ms": float(min_repeat_ms)}
        reply, _ = self.session.object_call("time", fields)
        return [float(r) for r in reply["results"]]


class RemoteModule:
    """A network library loaded on the device (TVM's remote ``Module``): ``rlib["default"](dev)``."""

    def __init__(self, session: ObjectCalls, handle: int, name: str, libmod_name: str,
                 target: str | None) -> None:
        self.session, self.handle, self.name = session, handle, name
        self.libmod_name, self.target = libmod_name, target

    def __getitem__(self, key: str) -> Callable[..., GraphModule]:
        if key != self.libmod_name:
            raise ArgumentError(f"remote module {self.name!r}: no function {key!r}; "
                                f"use rlib[{self.libmod_name!r}](dev)")
        return self.create

    def create(self, device: RemoteDevice | None = None) -> GraphModule:
        """A graph module of the library on ``device`` (a device of this session; default its CPU)."""
        return GraphModule(self._executor(device))

    def _executor(self, device: RemoteDevice | None) -> RemoteExecutor:
        if device is None:
            device = RemoteDevice(self.session, Device.kDLCPU, 0)
        if not isinstance(device, RemoteDevice) or device.session is not self.session:
            raise ArgumentError(f"remote module {self.name!r}: give a device of its session (remote.cpu(0), "
                                f"remote.cuda(0)), got {device!r}")
        reply, data = self.session.object_call("create", {"module": self.handle, "device": device.wire})
        return RemoteExecutor(self.session, reply["handle"], data.decode())

    def graph_module(self, graph_json: str, device: RemoteDevice | None = None) -> GraphModule:
        """``graph_executor.create(graph_json, rlib, dev)``: the library's graph module, when
        ``graph_json`` is the graph it was built with (a remote library runs no other)."""
        executor = self._executor(device)
        try:
            same = json.loads(graph_json) == json.loads(executor.graph_json)
        except (TypeError, ValueError):
            same = False
        if not same:
            raise ArgumentError(f"remote module {self.name!r}: graph_executor.create takes the graph it was "
                                "built with (lib.get_graph_json()); or use GraphModule(rlib['default'](dev))")
        return GraphModule(executor)

    def __repr__(self) -> str:
        return f"<remote module {self.name!r} ({self.target or 'target not recorded'})>"


class RemoteKernelModule:
    """A kernel module loaded on the device (TVM's remote ``Module`` of ``build(...)``): called on
    remote arrays of its session, outputs written in place on the device."""

    def __init__(self, session: ObjectCalls, handle: int, name: str, entry_name: str,
                 arg_count: int, target: str | None) -> None:
        self.session, self.handle, self.name = session, handle, name
        self.entry_name, self.arg_count, self.target = entry_name, arg_count, target

    def __call__(self, *arrays: RemoteNDArray) -> None:
        """Run the kernel on the device."""
        self.session.object_call("module_call", {"module": self.handle, "args": self._handles(arrays)})

    def __getitem__(self, name: str) -> Callable[..., None]:
        return self.get_function(name)

    def get_function(self, name: str) -> Callable[..., None]:
        """The kernel by its name (the module has one function, :attr:`entry_name`)."""
        if name != self.entry_name:
            raise ArgumentError(f"remote module {self.name!r}: no function {name!r}; its function is "
                                f"{self.entry_name!r}")
        return self

    def time_evaluator(self, func_name: str, dev: RemoteDevice | None = None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0.0) -> Callable[..., BenchmarkResult]:
        """TVM's ``time_evaluator``: ``f(*arrays)`` times the kernel on the device (its clock)."""
        self.get_function(func_name)
        if dev is not None and (not isinstance(dev, RemoteDevice) or dev.session is not self.session):
            raise ArgumentError(f"remote module {self.name!r}: time it on a device of its session, "
                                f"got {dev!r}")

        def evaluate(*arrays: RemoteNDArray) -> BenchmarkResult:
            fields = {"module": self.handle, "args": self._handles(arrays), "number": int(number),
                      "repeat": int(repeat), "min_repeat_ms": float(min_repeat_ms)}
            reply, _ = self.session.object_call("module_time", fields)
            return BenchmarkResult(reply["results"])

        return evaluate

    def _handles(self, arrays: Sequence[object]) -> list[int]:
        if len(arrays) != self.arg_count:
            raise ArgumentError(f"{self.entry_name} takes {self.arg_count} arrays, got {len(arrays)}")
        for k, arr in enumerate(arrays):
            if not isinstance(arr, RemoteNDArray) or arr.device.session is not self.session:
                raise ArgumentError(f"{self.entry_name}: argument {k} must be an array on a device of the "
                                    "module's session (tunecli.nd.array(x, remote.cpu())), got "
                                    f"{type(arr).__name__}")
        return [arr.handle for arr in arrays]  # type: ignore[union-attr]

    def __repr__(self) -> str:
        return f"<remote module {self.name!r}: {self.entry_name} ({self.target or 'target not recorded'})>"
