"""The graph executor: runs a network's compiled kernels in order on planned buffers (TVM's
``graph_executor``).  Pure runtime: it reads a graph JSON, kernels and parameters and never
compiles, so an exported library runs without the compiler.

The graph JSON is TVM's: ``nodes`` (``"null"`` inputs and parameters, ``"tvm_op"`` kernel calls
with ``attrs.func_name`` and ``inputs`` as ``[node, output, version]``), ``arg_nodes``, ``heads``
(the outputs), ``node_row_ptr`` and ``attrs`` with per-entry ``shape``, ``dltype`` and
``storage_id`` (the memory plan: entries sharing a storage id share one buffer, sized for the
largest).  :class:`GraphModule` is TVM's ``graph_executor.GraphModule`` (``set_input``, ``run``,
``get_output``, ``benchmark`` ...).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from tunecli.errors import ArgumentError

from .cpu import CPUKernel
from .device import Device, DeviceArray
from .module import BenchmarkResult
from .ndarray import NDArray
from .timer import time_calls

#: Byte alignment of every planned buffer.
ALIGNMENT = 64


@dataclass(frozen=True)
class GraphPlan:
    """The parsed graph JSON: what runs and on which buffers.

    Attributes
    ----------
    ops : tuple of (func_name, entry ids)
        Kernel calls in order; the entries are the kernel's arguments (inputs, then the output).
    inputs : dict
        Input (and parameter) name -> entry id.
    outputs : tuple of int
        Entry ids of the graph outputs.
    shapes, dtypes : tuple
        Per entry.
    storage : tuple of int
        Per entry, its storage id.
    """

    ops: tuple[tuple[str, tuple[int, ...]], ...]
    inputs: dict[str, int]
    outputs: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    storage: tuple[int, ...]

    @staticmethod
    def parse(graph_json: str) -> GraphPlan:
        """Read TVM's graph JSON (ArgumentError naming what is missing)."""
        try:
            g = json.loads(graph_json)
            nodes, row = g["nodes"], g["node_row_ptr"]
            attrs = g["attrs"]
            shapes = tuple(tuple(int(d) for d in s) for s in attrs["shape"][1])
            dtypes = tuple(attrs["dltype"][1])
            storage = tuple(int(s) for s in attrs["storage_id"][1])
            heads = tuple(row[h[0]] + h[1] for h in g["heads"])
        except (ValueError, KeyError, IndexError, TypeError) as err:
            raise ArgumentError(
                f"graph JSON: not a graph executor graph ({type(err).__name__}: {err})"
            ) from None
        ops, inputs = [], {}
        for nid, node in enumerate(nodes):
            if node["op"] == "null":
                inputs[node["name"]] = row[nid]
            else:
                args = [row[e[0]] + e[1] for e in node["inputs"]] + [row[nid]]
                ops.append((node["attrs"]["func_name"], tuple(args)))
        return GraphPlan(tuple(ops), inputs, heads, shapes, dtypes, storage)

    def storage_bytes(self) -> dict[int, int]:
        """Storage id -> bytes (the largest entry placed there)."""
        sizes: dict[int, int] = {}
        for sid, shape, dtype in zip(self.storage, self.shapes, self.dtypes, strict=True):
            sizes[sid] = max(sizes.get(sid, 0), math.prod(shape) * np.dtype(dtype).itemsize)
        return sizes

    def largest_output_bytes(self) -> int:
        """Bytes of the largest value a kernel writes (the largest activation)."""
        return max((math.prod(self.shapes[e]) * np.dtype(self.dtypes[e]).itemsize for _, args in self.ops
                    for e in args[-1:]), default=0)

    def intermediate_bytes(self) -> tuple[int, int]:
        """``(planned, unplanned)``: bytes of the kernels' output buffers with reuse, and the sum of
        every kernel output's size (what one buffer per value would take)."""
        written = {op[1][-1] for op in self.ops}
        sizes = self.storage_bytes()
        planned = sum(sizes[s] for s in {self.storage[e] for e in written})
        unplanned = sum(math.prod(self.shapes[e]) * np.dtype(self.dtypes[e]).itemsize for e in written)
        return planned, unplanned


class Executor(ABC):
    """What a :class:`GraphModule` drives: one graph's buffers and kernel calls on a device."""

    plan: GraphPlan

    @abstractmethod
    def run(self) -> None:
        """Run every kernel once, in order."""

    @abstractmethod
    def set_input(self, key: str | int, value: ArrayLike | DeviceArray) -> None:
        """Copy ``value`` into input ``key``."""

    @abstractmethod
    def array(self, entry: int) -> np.ndarray:
        """The value of ``entry`` as a host array."""

    @abstractmethod
    def kernel_calls(self) -> list[tuple[Callable[..., None], Sequence[object]]]:
        """Each kernel call of :meth:`run`, in order, as ``(function, arguments)``: ``function(*arguments)``
        runs that one kernel to completion on the current buffers."""

    def time_run(self, number: int, repeat: int, min_repeat_ms: float = 0.0) -> list[float]:
        """Seconds per :meth:`run`, one per repeat (TVM's ``time_evaluator`` loop, on the executor's
        own machine)."""
        return time_calls(self.run, (), number, repeat, min_repeat_ms)

    def entry(self, key: str | int, what: str = "input") -> int:
        """The entry id of input ``key`` (a name or an index among the graph's inputs)."""
        names = list(self.plan.inputs)
        if isinstance(key, (int, np.integer)):
            if not 0 <= key < len(names):
                raise ArgumentError(f"graph executor: {what} index {key} out of range (0..{len(names) - 1})")
            key = names[key]
        if key not in self.plan.inputs:
            raise ArgumentError(
                f"graph executor: no input named {key!r}; inputs: {', '.join(names[:8])}"
                + (" ..." if len(names) > 8 else "")
            )
        return self.plan.inputs[key]


class GraphExecutor(Executor):
    """Buffers and kernel calls of one graph on the CPU.

    Parameters
    ----------
    graph_json : str
    kernels : mapping of str to CPUKernel
        Loaded kernels by function name (``prepare`` sets the thread count and returns the
        function taking one data pointer per argument).
    params : mapping of str to array
        Constant inputs (shared, read-only: kernels never write their inputs).
    """

    def __init__(self, graph_json: str, kernels: Mapping[str, CPUKernel], params: Mapping[str, ArrayLike]):
        self.plan = GraphPlan.parse(graph_json)
        plan = self.plan
        missing = sorted({name for name, _ in plan.ops} - set(kernels))
        if missing:
            raise ArgumentError(f"graph executor: no kernel for {', '.join(missing)}")
        bound = {plan.inputs[name] for name in params if name in plan.inputs}
        used = {plan.storage[e] for e in range(len(plan.storage)) if e not in bound}
        self._storage = {sid: _aligned(n) for sid, n in plan.storage_bytes().items() if sid in used}
        self._arrays: list[np.ndarray] = [
            _view(self._storage[sid], shape, dtype) if e not in bound else np.empty(0, np.uint8)
            for e, (sid, shape, dtype) in enumerate(zip(plan.storage, plan.shapes, plan.dtypes, strict=True))
        ]
        self._shared: set[int] = set()
        for name, value in params.items():
            if name in plan.inputs:
                self._bind_param(plan.inputs[name], value)
        self._kernels = [kernels[name] for name, _ in plan.ops]
        self._bind()

    def _bind_param(self, entry: int, value: ArrayLike) -> None:
        arr = np.asarray(value)
        shape, dtype = self.plan.shapes[entry], self.plan.dtypes[entry]
        if arr.dtype != np.dtype(dtype) or arr.size != math.prod(shape):
            raise ArgumentError(
                f"graph executor: parameter of entry {entry} must be {dtype}{list(shape)}, got "
                f"{arr.dtype}{list(arr.shape)}"
            )
        self._arrays[entry] = np.ascontiguousarray(arr).reshape(shape)
        self._shared.add(entry)

    def _bind(self) -> None:
        self._calls = [
            (k, tuple(self._arrays[e].ctypes.data for e in args))
            for k, (_, args) in zip(self._kernels, self.plan.ops, strict=True)
        ]

    def run(self) -> None:
        """Run every kernel once, in order."""
        for kernel, pointers in self._calls:
            kernel.prepare()(*pointers)

    def kernel_calls(self) -> list[tuple[Callable[..., None], Sequence[object]]]:
        """Each kernel's function (its thread count set to the current one) and data pointers, in order."""
        return [(kernel.prepare(), pointers) for kernel, pointers in self._calls]

    def set_input(self, key: str | int, value: ArrayLike) -> None:
        """Copy ``value`` into input ``key``; a parameter gets a private copy."""
        e = self.entry(key)
        arr = np.asarray(value)
        target = self._arrays[e]
        if arr.size != target.size:
            raise ArgumentError(
                f"graph executor: input {key!r} has shape {list(target.shape)}, got {list(arr.shape)}"
            )
        if e in self._shared:  # a parameter shared with other executors: this one gets its own
            self._arrays[e] = target = np.empty(target.shape, target.dtype)
            self._shared.discard(e)
            self._bind()
        np.copyto(target, arr.reshape(target.shape), casting="same_kind")

    def array(self, entry: int) -> np.ndarray:
        """The buffer of ``entry`` (a view)."""
        return self._arrays[entry]


def _aligned(nbytes: int) -> np.ndarray:
    raw = np.zeros(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset : offset + nbytes]


def _view(buf: np.ndarray, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    n = math.prod(shape) * np.dtype(dtype).itemsize
    return buf[:n].view(np.dtype(dtype)).reshape(shape)


class GraphModule:
    """TVM's ``graph_executor.GraphModule``: run a built network.

    Parameters
    ----------
    module : Executor or GraphModule
        What ``lib["default"](dev)`` returns (a GraphModule wraps the same executor).
    """

    def __init__(self, module: Executor | GraphModule):
        self._exec = module._exec if isinstance(module, GraphModule) else module
        if not isinstance(self._exec, Executor):
            raise ArgumentError(f"GraphModule: expected lib['default'](dev), got {type(module).__name__}")

    @property
    def plan(self) -> GraphPlan:
        """The graph's kernels, entries and memory plan."""
        return self._exec.plan

    @property
    def executor(self) -> Executor:
        """The executor this module drives (its buffers and kernel calls)."""
        return self._exec

    @property
    def module(self) -> GraphFunctions:
        """TVM's ``GraphModule.module``: its functions, timed with ``module.time_evaluator("run", dev)``."""
        return GraphFunctions(self._exec)

    def set_input(self, key: str | int | None = None, value: ArrayLike | DeviceArray | None = None,
                  **params: ArrayLike | DeviceArray) -> None:
        """Set input ``key`` (name or index) to ``value``, and any inputs given by keyword."""
        if key is not None:
            self._exec.set_input(key, value)
        for name, v in params.items():
            self._exec.set_input(name, v)

    def run(self, **inputs: ArrayLike | DeviceArray) -> None:
        """Set the keyword inputs, then run the graph."""
        if inputs:
            self.set_input(**inputs)
        self._exec.run()

    def get_num_outputs(self) -> int:
        """Number of outputs."""
        return len(self._exec.plan.outputs)

    def get_num_inputs(self) -> int:
        """Number of inputs (parameters included)."""
        return len(self._exec.plan.inputs)

    def get_output(self, index: int, out: NDArray | None = None) -> NDArray:
        """A copy of output ``index`` (written into ``out`` when given)."""
        outputs = self._exec.plan.outputs
        if not 0 <= index < len(outputs):
            raise ArgumentError(
                f"GraphModule.get_output: index {index} out of range (the graph has {len(outputs)} outputs)"
            )
        value = self._exec.array(outputs[index])
        if out is not None:
            return _copy_into(out, value)
        return np.array(value).view(NDArray)

    def get_input(self, key: str | int, out: NDArray | None = None) -> NDArray:
        """A copy of input ``key`` (name or index)."""
        value = self._exec.array(self._exec.entry(key))
        if out is not None:
            return _copy_into(out, value)
        return np.array(value).view(NDArray)

    def get_input_index(self, name: str) -> int:
        """The index of input ``name``."""
        self._exec.entry(name)
        return list(self._exec.plan.inputs).index(name)

    def benchmark(
        self,
        device: Device | None = None,
        func_name: str = "run",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: float | None = None,
        end_to_end: bool = False,
        **kwargs: ArrayLike | DeviceArray,
    ) -> BenchmarkResult:
        """Seconds per ``run``, one result per repeat (TVM's ``GraphModule.benchmark``)."""
        if func_name != "run":
            raise ArgumentError(
                f"GraphModule.benchmark: only func_name='run' is supported, got {func_name!r}"
            )
        if kwargs:
            self.set_input(**kwargs)
        return BenchmarkResult(self._exec.time_run(number, repeat, min_repeat_ms or 0.0))


class GraphFunctions:
    """The functions of a graph module (TVM's ``GraphModule.module``): ``time_evaluator`` of ``run``."""

    def __init__(self, executor: Executor):
        self._exec = executor

    def time_evaluator(self, func_name: str, dev: Device | None = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0.0, **kwargs: object) -> Callable[..., BenchmarkResult]:
        """A function timing ``func_name`` (only ``"run"``) where the executor runs (a remote module:
        on its device); it returns a :class:`BenchmarkResult` (``.mean``, ``.results``, seconds)."""
        if func_name != "run":
            raise ArgumentError(f"GraphModule.module.time_evaluator: only 'run' is timed, got {func_name!r}")

        def evaluate(*args: object) -> BenchmarkResult:
            return BenchmarkResult(self._exec.time_run(number, repeat, min_repeat_ms))

        return evaluate


def _copy_into(out: NDArray, value: ArrayLike) -> NDArray:
    """``value`` written into ``out``: a host array, or an array of another device (``copyfrom``)."""
    if isinstance(out, np.ndarray):
        np.copyto(out, value)
    else:
        out.copyfrom(np.asarray(value))
    return out
