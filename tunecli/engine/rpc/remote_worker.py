"""The device side of a remote session: libraries (networks' and kernel modules'), graph executors
and arrays living in the server's worker process (:class:`tunecli.engine.measure.worker.Worker`).

The server hands each call to :func:`handle` as ``(op, fields, data)`` and gets ``(fields, data)``
back; objects are kept here by integer handle until freed or until the worker is replaced (the
server replaces it when a session that used it ends), so a library that crashes takes down this
process only.  A refusal (a library for another processor, a bad input name) is returned as
``{"error": message}``; anything else that raises is a bug the server reports as such.
"""

from __future__ import annotations

import itertools
import math
from typing import TypeVar

import numpy as np

from tunecli.engine.runtime.device import Device
from tunecli.engine.runtime.devices import device
from tunecli.engine.runtime.graph_executor import Executor
from tunecli.engine.runtime.graph_library import GraphLibrary, load_module, specs_json
from tunecli.engine.runtime.module import Module
from tunecli.errors import ArgumentError, TuneError

#: The function reference the server calls.
HANDLE_FUNC = "tunecli.engine.rpc.remote_worker:handle"

#: The live remote objects by handle: libraries, executors, arrays.
_objects: dict[int, object] = {}
_handles = itertools.count(1)

Reply = tuple[dict, bytes]
T = TypeVar("T")


def handle(call: tuple[str, dict, bytes]) -> Reply:
    """Run one remote-session operation (see the module docstring)."""
    op, fields, data = call
    func = _OPS.get(op)
    if func is None:
        return {"error": f"unknown remote operation {op!r}"}, b""
    try:
        return func(fields, data)
    except TuneError as err:
        return {"error": str(err)}, b""


def _keep(obj: object) -> int:
    handle_id = next(_handles)
    _objects[handle_id] = obj
    return handle_id


def _get(fields: dict, name: str, kind: type[T]) -> T:
    obj = _objects.get(fields.get(name))  # type: ignore[arg-type]
    if not isinstance(obj, kind):
        raise ArgumentError(f"remote session: {name} {fields.get(name)!r} is not a live remote object")
    return obj


def _device(fields: dict) -> Device:
    dev_type, dev_id = fields["device"]
    return device(int(dev_type), int(dev_id))


def _host_array(fields: dict, data: bytes) -> np.ndarray:
    shape, dtype = tuple(int(s) for s in fields["shape"]), np.dtype(str(fields["dtype"]))
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise ArgumentError(f"remote array: {len(data)} bytes do not make a {dtype}{list(shape)} array")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _wire(arr: np.ndarray) -> Reply:
    arr = np.ascontiguousarray(arr)
    return {"shape": list(arr.shape), "dtype": str(arr.dtype)}, arr.tobytes()


class _RemoteArray:
    """An array in this process's memory of ``dev``."""

    def __init__(self, dev: Device, value: object) -> None:
        self.dev, self.value = dev, value

    def host(self) -> np.ndarray:
        return self.dev.copy_out(self.value) if not isinstance(self.value, np.ndarray) else self.value


def _load_module(fields: dict, data: bytes) -> Reply:
    lib = load_module(str(fields["path"]))
    if isinstance(lib, Module):
        return {"handle": _keep(lib), "target": str(lib.target), "kind": "kernel",
                "entry_name": lib.entry_name, "arg_specs": specs_json(lib.arg_specs)}, b""
    if not isinstance(lib, GraphLibrary):
        raise ArgumentError(f"load_module: {fields['path']!r} is not a library exported by export_library")
    target = getattr(lib, "target", None)
    return {"handle": _keep(lib), "target": None if target is None else str(target),
            "libmod_name": lib.libmod_name}, b""


def _kernel_arrays(fields: dict) -> tuple[Module, list[object]]:
    """The kernel module and its arguments' values (remote arrays on the kernel's device)."""
    module = _get(fields, "module", Module)
    handles = fields.get("args")
    if not isinstance(handles, list):
        raise ArgumentError(f"remote module {module.entry_name!r}: the call has no argument list")
    values = []
    for k, handle_id in enumerate(handles):
        arr = _get({"array": handle_id}, "array", _RemoteArray)
        if arr.dev.device_type != module.device.device_type:
            raise ArgumentError(f"{module.entry_name}: argument {k} is an array of {arr.dev!r}; the kernel "
                                f"runs on {module.device.label}")
        values.append(arr.value)
    return module, values


def _module_call(fields: dict, data: bytes) -> Reply:
    module, values = _kernel_arrays(fields)
    module(*values)
    module.device.sync()
    return {}, b""


def _module_time(fields: dict, data: bytes) -> Reply:
    module, values = _kernel_arrays(fields)
    evaluate = module.time_evaluator(int(fields["number"]), int(fields["repeat"]),
                                     float(fields["min_repeat_ms"]))
    return {"results": [float(r) for r in evaluate(*values)]}, b""


def _create(fields: dict, data: bytes) -> Reply:
    lib = _get(fields, "module", GraphLibrary)
    module = lib.create(_device(fields))
    return {"handle": _keep(module.executor)}, lib.graph_json.encode()


def _set_input(fields: dict, data: bytes) -> Reply:
    executor = _get(fields, "executor", Executor)
    if fields.get("array") is not None:
        value = _get(fields, "array", _RemoteArray).host()
    else:
        value = _host_array(fields, data)
    executor.set_input(fields["key"], value)
    return {}, b""


def _run(fields: dict, data: bytes) -> Reply:
    _get(fields, "executor", Executor).run()
    return {}, b""


def _entry(fields: dict, data: bytes) -> Reply:
    executor = _get(fields, "executor", Executor)
    entry = int(fields["entry"])
    if not 0 <= entry < len(executor.plan.shapes):
        raise ArgumentError(f"remote graph module: entry {entry} out of range")
    return _wire(np.asarray(executor.array(entry)))


def _time(fields: dict, data: bytes) -> Reply:
    executor = _get(fields, "executor", Executor)
    results = executor.time_run(int(fields["number"]), int(fields["repeat"]), float(fields["min_repeat_ms"]))
    return {"results": list(results)}, b""


def _array_new(fields: dict, data: bytes) -> Reply:
    dev = _device(fields)
    host = _host_array(fields, data) if data else None
    if host is None:
        value = dev.empty(tuple(int(s) for s in fields["shape"]), str(np.dtype(str(fields["dtype"]))))
    else:
        value = dev.copy_in(host)
    return {"handle": _keep(_RemoteArray(dev, value))}, b""


def _array_get(fields: dict, data: bytes) -> Reply:
    return _wire(_get(fields, "array", _RemoteArray).host())


def _array_set(fields: dict, data: bytes) -> Reply:
    arr = _get(fields, "array", _RemoteArray)
    host = _host_array(fields, data)
    if tuple(host.shape) != tuple(arr.host().shape):
        raise ArgumentError(f"remote array copyfrom: shape {list(host.shape)} does not match "
                            f"{list(arr.host().shape)}")
    arr.value = arr.dev.copy_in(host)
    return {}, b""


def _free(fields: dict, data: bytes) -> Reply:
    _objects.pop(fields.get("handle"), None)  # type: ignore[arg-type]
    return {}, b""


_OPS = {"load_module": _load_module, "create": _create, "set_input": _set_input, "run": _run,
        "entry": _entry, "time": _time, "module_call": _module_call, "module_time": _module_time,
        "array_new": _array_new, "array_get": _array_get, "array_set": _array_set, "free": _free}

#: The session operations the worker answers (the server forwards these).
WORKER_OPS = frozenset(_OPS)
