"""A fused network → the graph executor's program: TVM's graph JSON with a memory plan, the
compiled kernels (one per distinct group) and the parameters.

The fused ``main`` (after ``FuseOps``) is a dataflow of calls of primitive functions on inputs and
constants.  Inputs become ``"null"`` nodes under their names, the constants a kernel reads
``"null"`` nodes ``p0, p1, ...`` (the parameters; a weight the kernel reads re-laid out is
precomputed here, once), each call a ``"tvm_op"`` node naming its kernel
(``tvmgen_default_fused_<ops>``; structurally equal groups share one kernel).  The memory plan
(:func:`plan_storage`) gives every value a storage id: inputs and parameters their own, and a
kernel's output a free buffer (best fit, grown when none is large enough) once the values of
earlier kernels are no longer read, so intermediate buffers are reused by liveness.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.log.record import JsonValue
from tunecli.engine.runtime import Module
from tunecli.errors import GraphError

from .graph_expr import Call, Constant, Expr, Function, Tuple, Var
from .graph_printer import astext
from .group_compiler import GroupCompiler, GroupJob
from .lower_group import LoweredKernel, PrecomputedInput
from .op_registry import Op
from .traversal import post_order
from .type_infer import tensor_type_of


@dataclass(frozen=True)
class GraphProgram:
    """What the executor runs.

    Attributes
    ----------
    graph_json : str
    kernels : dict
        Kernel name -> compiled kernel (each distinct group once).
    lowered : tuple of LoweredKernel
        The lowered groups, in the order of ``kernels``.
    params : dict
        Parameter name -> array (the constants the kernels read, weights pre-transformed).
    """

    graph_json: str
    kernels: dict[str, CompiledKernel]
    lowered: tuple[LoweredKernel, ...]
    params: dict[str, np.ndarray]


#: ``lower(fn, func_name, constant_params) -> LoweredKernel``: how a group becomes a kernel.
Lower = Callable[[Function, str, frozenset], LoweredKernel]


def _kernel_base_name(fn: Function) -> str:
    ops = [
        n.op.name.replace(".", "_")
        for n in post_order(fn.body, into_functions=False)
        if isinstance(n, Call) and isinstance(n.op, Op)
    ]
    name = "tvmgen_default_fused_" + "_".join(ops)
    return name if len(name) <= 80 else name[:80]


class _Builder:
    """The graph JSON under construction: nodes, their types, the parameters."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, JsonValue]] = []
        self.shapes: list[tuple[int, ...]] = []
        self.dtypes: list[str] = []
        self.params: dict[str, np.ndarray] = {}
        self.const_node: dict[int, int] = {}

    def add(self, node: dict[str, JsonValue], shape: Sequence[int], dtype: str) -> int:
        self.nodes.append(node)
        self.shapes.append(tuple(int(s) for s in shape))
        self.dtypes.append(str(dtype))
        return len(self.nodes) - 1

    def param(self, value: np.ndarray, key: int | None = None) -> int:
        if key is not None and key in self.const_node:
            return self.const_node[key]
        name = f"p{len(self.params)}"
        self.params[name] = value
        nid = self.add({"op": "null", "name": name, "inputs": []}, value.shape, str(value.dtype))
        if key is not None:
            self.const_node[key] = nid
        return nid


def graph_program(fn: Function, lower: Lower | GroupCompiler) -> GraphProgram:
    """The program of the fused function ``fn`` (see the module docstring); ``lower`` compiles each
    distinct group (by its text and which of its arguments are constants) once (a
    :class:`GroupCompiler`: all of them together, through the kernel cache and in parallel)."""
    calls, jobs = distinct_groups(fn)
    if isinstance(lower, GroupCompiler):
        compiled = lower.compile_all(jobs)
    else:
        compiled = [lower(job.fn, job.name, job.constant) for job in jobs]
    kernels = {job.name: lk.kernel for job, lk in zip(jobs, compiled, strict=True)}
    g = _Builder()
    node_of: dict[Expr, int] = {}
    for p in fn.params:
        t = tensor_type_of(p)
        node_of[p] = g.add({"op": "null", "name": p.name_hint, "inputs": []}, t.shape, t.dtype)

    def entry(arg: Expr) -> int:
        if isinstance(arg, Constant):
            return g.param(np.asarray(arg.data), id(arg))
        return node_of[arg]

    for node, k in calls:
        name, lk = jobs[k].name, compiled[k]
        inputs = []
        for spec in lk.inputs:
            if isinstance(spec, int):
                inputs.append(entry(node.args[spec]))
            else:
                inputs.append(g.param(_precompute(spec, [node.args[i].data for i in spec.params])))
        t = tensor_type_of(node)
        node_of[node] = g.add(
            {
                "op": "tvm_op",
                "name": name,
                "inputs": [[i, 0, 0] for i in inputs],
                "attrs": {
                    "func_name": name,
                    "flatten_data": "0",
                    "num_inputs": str(len(inputs)),
                    "num_outputs": "1",
                },
            },
            t.shape,
            t.dtype,
        )
    outputs = list(fn.body.fields) if isinstance(fn.body, Tuple) else [fn.body]
    heads = [[entry(o), 0, 0] for o in outputs]
    ops = [(k, [i[0] for i in n["inputs"]]) for k, n in enumerate(g.nodes) if n["op"] == "tvm_op"]
    storage = plan_storage(len(g.nodes), ops, [h[0] for h in heads], g.shapes, g.dtypes)
    graph = {
        "nodes": g.nodes,
        "arg_nodes": [k for k, n in enumerate(g.nodes) if n["op"] == "null"],
        "heads": heads,
        "node_row_ptr": list(range(len(g.nodes) + 1)),
        "attrs": {
            "shape": ["list_shape", [list(s) for s in g.shapes]],
            "dltype": ["list_str", g.dtypes],
            "storage_id": ["list_int", storage],
        },
    }
    return GraphProgram(json.dumps(graph), kernels, tuple(compiled), g.params)


def distinct_groups(fn: Function) -> tuple[list[tuple[Call, int]], list[GroupJob]]:
    """The group calls of ``fn`` in execution order, each with the index of its distinct group
    (by text and which arguments are constants) among the jobs, which name their kernels."""
    calls: list[tuple[Call, int]] = []
    jobs: list[GroupJob] = []
    index: dict[tuple[str, frozenset], int] = {}
    names: dict[str, None] = {}
    for node in post_order(fn.body, into_functions=False):
        if not (isinstance(node, Call) and isinstance(node.op, Function)):
            if isinstance(node, (Tuple, Var, Constant, Function)):
                continue
            raise GraphError(
                f"graph executor: cannot run {node!r} outside a fused group (call FuseOps "
                f"first; operators returning tuples are not supported)"
            )
        constant = frozenset(i for i, a in enumerate(node.args) if isinstance(a, Constant))
        key = (astext(node.op), constant)
        if key not in index:
            name = _unique(_kernel_base_name(node.op), names)
            names[name] = None
            index[key] = len(jobs)
            jobs.append(GroupJob(node.op, name, constant))
        calls.append((node, index[key]))
    return calls, jobs


def _unique(base: str, taken: Mapping[str, object]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def _precompute(spec: PrecomputedInput, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Run a build-time kernel on constant arrays; its result becomes a parameter."""
    out_spec = spec.kernel.arg_specs[-1]
    out = np.empty(out_spec.shape, dtype=out_spec.dtype)
    Module(spec.kernel)(*[np.ascontiguousarray(a) for a in arrays], out)
    return out


def plan_storage(
    num_entries: int,
    ops: Sequence[tuple[int, Sequence[int]]],
    outputs: Sequence[int],
    shapes: Sequence[tuple[int, ...]],
    dtypes: Sequence[str],
) -> list[int]:
    """Storage ids of every entry (see the module docstring).

    Parameters
    ----------
    num_entries : int
    ops : sequence of (output entry, input entries)
        Kernel calls in execution order.
    outputs : sequence of int
        Graph outputs (never reused).
    shapes, dtypes : sequences
        Per entry.

    Returns
    -------
    list of int
    """
    size = [math.prod(s) * np.dtype(d).itemsize for s, d in zip(shapes, dtypes, strict=True)]
    written = {out for out, _ in ops}
    readers = [0] * num_entries
    for _, ins in ops:
        for e in ins:
            readers[e] += 1
    storage = [-1] * num_entries
    capacity: list[int] = []
    for e in range(num_entries):
        if e not in written:
            storage[e] = len(capacity)
            capacity.append(size[e])
    free: list[int] = []
    kept = set(outputs)
    for out, ins in ops:
        fits = [s for s in free if capacity[s] >= size[out]]
        if fits:
            sid = min(fits, key=lambda s: capacity[s])
        elif free:
            sid = max(free, key=lambda s: capacity[s])
            capacity[sid] = size[out]
        else:
            sid = len(capacity)
            capacity.append(size[out])
        if sid in free:
            free.remove(sid)
        storage[out] = sid
        if readers[out] == 0 and out not in kept:
            free.append(sid)
        for e in ins:
            readers[e] -= 1
            if readers[e] == 0 and e in written and e not in kept and storage[e] not in free:
                free.append(storage[e])
    return storage
