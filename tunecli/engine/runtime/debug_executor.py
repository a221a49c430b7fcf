"""Where a built network's time goes: each kernel of a graph executor timed alone, in graph order
(TVM's ``debug_executor``).

:func:`time_kernels` runs the kernels in order and times each one where it stands, so every kernel
reads the values the graph gives it and the buffers end as a plain ``run`` leaves them.  Each
kernel is timed with :func:`~tunecli.engine.runtime.timer.time_calls` (one untimed call, then
``repeat`` batches of ``number`` calls); its time is the median of the batches.  The result is a
:class:`GraphProfile` of one :class:`OpTime` per kernel call.  :class:`GraphModuleDebug` is TVM's
``GraphModuleDebug``: a :class:`GraphModule` whose ``run`` prints the per-kernel table, slowest
first, as TVM's debug run does.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from tunecli.errors import ArgumentError

from .device import Device, DeviceArray
from .devices import as_device
from .graph_executor import Executor, GraphModule, GraphPlan
from .ndarray import NDArray
from .timer import cooldown_pause, time_calls

#: Files a debug run writes under ``dump_root`` (TVM's names).
GRAPH_DUMP_FILE_NAME = "_tvmdbg_graph_dump.json"
CHROME_TRACE_FILE_NAME = "_tvmdbg_execution_trace.json"


@dataclass(frozen=True)
class OpTime:
    """One kernel call of a graph and its time.

    Attributes
    ----------
    node : int
        The call's node index in the graph JSON.
    name : str
        The node's name.
    func_name : str
        The kernel it runs.
    shape : tuple of int
        The shape of its output.
    num_inputs : int
    seconds : float
        Median over the batches of the mean seconds per call.
    share : float
        ``seconds`` as a fraction of the summed kernel time.
    results : tuple of float
        Mean seconds per call of each batch.
    """

    node: int
    name: str
    func_name: str
    shape: tuple[int, ...]
    num_inputs: int
    seconds: float
    share: float
    results: tuple[float, ...]


@dataclass(frozen=True)
class GraphProfile:
    """The kernel times of one graph.

    Attributes
    ----------
    ops : tuple of OpTime
        One per kernel call, in graph order.
    run_seconds : float or None
        Median seconds of a whole run, when it was timed too (:meth:`GraphModuleDebug.profile`).
    """

    ops: tuple[OpTime, ...]
    run_seconds: float | None = None

    @property
    def kernel_seconds(self) -> float:
        """The summed kernel time."""
        return sum(op.seconds for op in self.ops)

    def slowest(self, count: int | None = None) -> list[OpTime]:
        """The ``count`` slowest kernel calls (all when None), slowest first; ties in graph order."""
        ranked = sorted(self.ops, key=lambda op: -op.seconds)
        return ranked if count is None else ranked[:count]

    def table(self, sort_by_time: bool = True) -> str:
        """TVM's debug table: node name, kernel, time (us, %), output shape, inputs, outputs and the
        batches' times; with ``sort_by_time``, slowest first and a ``Total_time`` row."""
        header = ["Node Name", "Ops", "Time(us)", "Time(%)", "Shape", "Inputs", "Outputs", "Measurements(us)"]
        rows = [[op.name, op.func_name, round(op.seconds * 1e6, 3), round(op.share * 100, 3), str(op.shape),
                 str(op.num_inputs), "1", str([round(r * 1e6, 3) for r in op.results])]
                for op in (self.slowest() if sort_by_time else self.ops)]
        if sort_by_time:
            rows.append(["Total_time", "-", round(self.kernel_seconds * 1e6, 3), "-", "-", "-", "-", "-"])
            if self.run_seconds is not None:
                rows.append(["Run_time", "-", round(self.run_seconds * 1e6, 3), "-", "-", "-", "-", "-"])
        widths = [max(len(str(cell)) for cell in column) + 2 for column in zip(header, *rows, strict=True)]
        lines = [header, ["-" * len(h) for h in header], *rows]
        return "\n".join("".join(f"{str(c):<{w}}" for c, w in zip(line, widths, strict=True)).rstrip()
                         for line in lines)

    def __str__(self) -> str:
        return self.table()


@dataclass(frozen=True)
class _Node:
    name: str
    entry: int  #: its (first) output entry
    op_index: int | None  #: its position among the kernel calls; None for an input
    num_inputs: int


def _nodes(graph_json: str, plan: GraphPlan) -> list[_Node]:
    """Every node of ``graph_json``, checked to be the graph of ``plan``."""
    try:
        g = json.loads(graph_json)
        ops = itertools.count()
        nodes = [_Node(n["name"], g["node_row_ptr"][i], None if n["op"] == "null" else next(ops),
                       len(n["inputs"])) for i, n in enumerate(g["nodes"])]
    except (ValueError, KeyError, IndexError, TypeError) as err:
        raise ArgumentError(
            f"debug executor: not a graph executor graph ({type(err).__name__}: {err})"
        ) from None
    if [n.entry for n in nodes if n.op_index is not None] != [args[-1] for _, args in plan.ops]:
        raise ArgumentError("debug executor: the graph JSON is not the graph the executor runs")
    return nodes


def time_kernels(executor: Executor, graph_json: str, number: int = 10, repeat: int = 1,
                 min_repeat_ms: float = 0.0, cooldown_interval_ms: float = 0.0,
                 repeats_to_cooldown: int = 1) -> GraphProfile:
    """Time each kernel call of ``executor`` alone, in graph order (see the module docstring).

    Parameters
    ----------
    executor : Executor
    graph_json : str
        The graph ``executor`` runs (node names and input counts).
    number, repeat, min_repeat_ms : int, int, float
        As in :func:`~tunecli.engine.runtime.timer.time_calls`, for each kernel.
    cooldown_interval_ms, repeats_to_cooldown : float, int
        Each kernel's batches pause this long after every ``repeats_to_cooldown`` batches (TVM's).

    Returns
    -------
    GraphProfile
    """
    plan = executor.plan
    every = _nodes(graph_json, plan)
    node_ids = [i for i, n in enumerate(every) if n.op_index is not None]
    nodes = [every[i] for i in node_ids]
    cooldown_pause(cooldown_interval_ms, repeats_to_cooldown)  # bad values fail before anything runs
    results = [time_calls(func, args, number, repeat, min_repeat_ms,
                          before_repeat=cooldown_pause(cooldown_interval_ms, repeats_to_cooldown))
               for func, args in executor.kernel_calls()]
    medians = [statistics.median(r) for r in results]
    total = sum(medians) or 1.0
    return GraphProfile(tuple(
        OpTime(nid, node.name, func_name, plan.shapes[node.entry], node.num_inputs, t, t / total, tuple(r))
        for nid, node, (func_name, _), t, r in zip(node_ids, nodes, plan.ops, medians, results, strict=True)
    ))


class GraphModuleDebug(GraphModule):
    """TVM's ``GraphModuleDebug``: a :class:`GraphModule` that times each kernel.

    Parameters
    ----------
    module : Executor or GraphModule
    graph_json : str
        The graph the executor runs (node names, ``debug_get_output`` by name).
    device : Device, optional
        Names the dump folder (TVM's ``_tvmdbg_device_CPU_0``).
    dump_root : str, optional
        When given, each :meth:`run` writes the graph JSON and a Chrome trace of the kernel times
        (``chrome://tracing``) there; :meth:`exit` removes it.
    """

    def __init__(self, module: Executor | GraphModule, graph_json: str, device: Device | str | None = None,
                 dump_root: str | os.PathLike | None = None):
        super().__init__(module)
        self.graph_json = graph_json
        self._nodes = _nodes(graph_json, self.plan)
        self._dump_root = None if dump_root is None else os.fspath(dump_root)
        label = repr(as_device(device, "debug executor")).upper()
        self._dump_folder = "_tvmdbg_device_" + label.replace("(", "_").replace(")", "")

    def run(self, number: int = 10, repeat: int = 1, min_repeat_ms: float = 1.0,
            limit_zero_time_iterations: int = 100, cooldown_interval_ms: float = 0.0,
            repeats_to_cooldown: int = 1, sort_by_time: bool = True,
            **inputs: ArrayLike | DeviceArray) -> GraphProfile:
        """Set the keyword inputs, run the graph timing each kernel, print the table (slowest first
        with ``sort_by_time``) and return the times.  The outputs are those of a plain run."""
        del limit_zero_time_iterations  # the timer never measures zero time: nothing to limit
        if inputs:
            self.set_input(**inputs)
        profile = time_kernels(self.executor, self.graph_json, number, repeat, min_repeat_ms,
                               cooldown_interval_ms, repeats_to_cooldown)
        if self._dump_root is not None:
            self._dump(profile)
        print(profile.table(sort_by_time))
        return profile

    def run_individual(self, number: int = 10, repeat: int = 1, min_repeat_ms: float = 0.0) -> list[float]:
        """Mean seconds per call of each kernel call over the ``repeat`` batches, in graph order (one
        entry per kernel call; TVM's list also holds a 0 for each input node)."""
        profile = time_kernels(self.executor, self.graph_json, number, repeat, min_repeat_ms)
        return [float(np.mean(op.results)) for op in profile.ops]

    def profile(self, number: int = 10, repeat: int = 3, min_repeat_ms: float = 1.0,
                **inputs: ArrayLike | DeviceArray) -> GraphProfile:
        """Set the keyword inputs; time each kernel and whole runs (``run_seconds``)."""
        if inputs:
            self.set_input(**inputs)
        ops = time_kernels(self.executor, self.graph_json, number, repeat, min_repeat_ms).ops
        whole = time_calls(self.executor.run, (), number, repeat, min_repeat_ms)
        return GraphProfile(ops, statistics.median(whole))

    def debug_get_output(self, node: int | str, out: NDArray | None = None) -> NDArray:
        """Run the graph up to ``node`` (its index in the graph JSON, or its name) and return a copy of
        its output (written into ``out`` when given)."""
        if isinstance(node, str):
            index = next((i for i, n in enumerate(self._nodes) if n.name == node), None)
            if index is None:
                raise ArgumentError(f"debug_get_output: the graph has no node named {node!r}")
        elif isinstance(node, (int, np.integer)) and 0 <= node < len(self._nodes):
            index = int(node)
        else:
            raise ArgumentError(f"debug_get_output: node must be a name or an index in "
                                f"0..{len(self._nodes) - 1}, got {node!r}")
        target = self._nodes[index]
        if target.op_index is not None:
            for func, args in self.executor.kernel_calls()[: target.op_index + 1]:
                func(*args)
        value = self.executor.array(target.entry)
        if out is not None:
            np.copyto(out, value)
            return out
        return np.array(value).view(NDArray)

    def exit(self) -> None:
        """Remove ``dump_root`` and what the runs wrote there."""
        if self._dump_root is not None and os.path.isdir(self._dump_root):
            shutil.rmtree(self._dump_root)

    def _dump(self, profile: GraphProfile) -> None:
        folder = os.path.join(self._dump_root or "", self._dump_folder)
        os.makedirs(folder, 0o700, exist_ok=True)
        with open(os.path.join(folder, GRAPH_DUMP_FILE_NAME), "w") as f:
            json.dump(json.loads(self.graph_json), f, indent=4)
        with open(os.path.join(folder, CHROME_TRACE_FILE_NAME), "w") as f:
            json.dump(chrome_trace(profile), f)


def chrome_trace(profile: GraphProfile) -> dict[str, list[dict[str, float | int | str]]]:
    """The kernel calls laid end to end as Chrome trace events (begin/end, microseconds)."""
    events, start = [], 0.0
    for op in profile.ops:
        for ts, ph in ((start, "B"), (start + op.seconds * 1e6, "E")):
            events.append({"ts": ts, "tid": 1, "pid": 1, "name": op.name, "ph": ph})
        start += op.seconds * 1e6
    return {"displayTimeUnit": "ns", "traceEvents": events}

