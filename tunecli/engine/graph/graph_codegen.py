"""A fused network → the graph executor's program: TVM's graph JSON with a memory plan, the
primitive functions to compile (one per distinct group) and the parameters.

The fused ``main`` (after ``FuseOps``) is a dataflow of calls of primitive functions on inputs and
constants.  Inputs become ``"null"`` nodes under their names, constants ``"null"`` nodes ``p0,
p1, ...`` (the parameters), each call a ``"tvm_op"`` node naming its kernel
(``tvmgen_default_fused_<ops>``; structurally equal groups share one kernel).  The memory plan
(:func:`plan_storage`) gives every value a storage id: inputs and parameters their own, and a
kernel's output a free buffer (best fit, grown when none is large enough) once the values of
earlier kernels are no longer read, so intermediate buffers are reused by liveness.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tunecli.errors import GraphError

from .graph_expr import Call, Constant, Expr, Function, Tuple, Var
from .graph_printer import astext
from .op_registry import Op
from .traversal import post_order
from .type_infer import tensor_type_of


@dataclass(frozen=True)
class GraphProgram:
    """What the executor runs and the compiler still has to build.

    Attributes
    ----------
    graph_json : str
    functions : dict
        Kernel name -> the primitive function to compile (each distinct group once).
    params : dict
        Parameter name -> array (the constants the graph reads).
    """

    graph_json: str
    functions: dict[str, Function]
    params: dict[str, np.ndarray]


def _kernel_base_name(fn: Function) -> str:
    ops = [n.op.name.replace(".", "_") for n in post_order(fn.body, into_functions=False)
           if isinstance(n, Call) and isinstance(n.op, Op)]
    name = "tvmgen_default_fused_" + "_".join(ops)
    return name if len(name) <= 80 else name[:80]


def graph_program(fn: Function) -> GraphProgram:
    """The program of the fused function ``fn`` (see the module docstring)."""
    nodes: list[dict[str, Any]] = []
    shapes: list[tuple[int, ...]] = []
    dtypes: list[str] = []
    node_of: dict[Expr, int] = {}
    params: dict[str, np.ndarray] = {}
    functions: dict[str, Function] = {}
    by_text: dict[str, str] = {}

    def add_node(node: dict[str, Any], t: Expr) -> int:
        tt = tensor_type_of(t)
        nodes.append(node)
        shapes.append(tuple(int(s) for s in tt.shape))
        dtypes.append(tt.dtype)
        return len(nodes) - 1

    for p in fn.params:
        node_of[p] = add_node({"op": "null", "name": p.name_hint, "inputs": []}, p)
    for node in post_order(fn.body, into_functions=False):
        if node in node_of or isinstance(node, Function):
            continue
        if isinstance(node, Constant):
            name = f"p{len(params)}"
            params[name] = np.asarray(node.data)
            node_of[node] = add_node({"op": "null", "name": name, "inputs": []}, node)
        elif isinstance(node, Call) and isinstance(node.op, Function):
            func_name = _kernel_name(node.op, functions, by_text)
            inputs = [[node_of[a], 0, 0] for a in node.args]
            node_of[node] = add_node({"op": "tvm_op", "name": func_name, "inputs": inputs,
                                      "attrs": {"func_name": func_name, "flatten_data": "0",
                                                "num_inputs": str(len(inputs)), "num_outputs": "1"}}, node)
        elif isinstance(node, (Tuple, Var)):
            continue
        else:
            raise GraphError(f"graph executor: cannot run {node!r} outside a fused group (call FuseOps first; "
                             f"operators returning tuples are not supported)")
    outputs = list(fn.body.fields) if isinstance(fn.body, Tuple) else [fn.body]
    heads = [[node_of[o], 0, 0] for o in outputs]
    ops = [(k, [i[0] for i in n["inputs"]]) for k, n in enumerate(nodes) if n["op"] == "tvm_op"]
    storage = plan_storage(len(nodes), ops, [h[0] for h in heads], shapes, dtypes)
    graph = {
        "nodes": nodes,
        "arg_nodes": [k for k, n in enumerate(nodes) if n["op"] == "null"],
        "heads": heads,
        "node_row_ptr": list(range(len(nodes) + 1)),
        "attrs": {"shape": ["list_shape", [list(s) for s in shapes]], "dltype": ["list_str", dtypes],
                  "storage_id": ["list_int", storage]},
    }
    return GraphProgram(json.dumps(graph), functions, params)


def _kernel_name(fn: Function, functions: dict[str, Function], by_text: dict[str, str]) -> str:
    text = astext(fn)
    if text in by_text:
        return by_text[text]
    base = _kernel_base_name(fn)
    name, k = base, 0
    while name in functions:
        k += 1
        name = f"{base}_{k}"
    functions[name] = fn
    by_text[text] = name
    return name


def plan_storage(num_entries: int, ops: Sequence[tuple[int, Sequence[int]]], outputs: Sequence[int],
                 shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str]) -> list[int]:
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
