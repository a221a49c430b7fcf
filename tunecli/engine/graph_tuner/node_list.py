"""TVM's node-list view of a graph (``autotvm.graph_tuner.utils``), for scripts that walk it.

``expr2graph`` lists a function's nodes in post order (its parameters first, as a walk of the
function meets them; the function itself is left out), one dict per node: ``node`` (the
expression), ``op`` (the ``Op`` of a call, None otherwise), ``name`` (a variable's name,
``Constant_<i>`` for a constant), ``inputs`` (``[index, output, 0]`` per data input; a tuple or
tuple item in between is looked through) and ``types`` (the output types).  A call of one of the
target operators also gets ``topi_op`` and ``workloads``: the task and workload the strategy row
selects for it.  Over that list: which nodes merge several data inputs, the nearest tuned or
merging ancestors of a node, the map from tuned and merging nodes to those ancestors, and its
reverse.  ``bind_inputs`` gives a function's inputs their shapes and infers its types.

The graph tuners themselves work on :mod:`conv_graph`, which follows the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from tunecli.engine.graph.graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, var
from tunecli.engine.graph.op_registry import Op
from tunecli.engine.graph.traversal import ExprMutator, post_order
from tunecli.engine.graph.type_infer import infer_types
from tunecli.engine.graph.types import Type
from tunecli.engine.graph_tuner.conv_graph import conv_workload, op_names
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError

#: Operators the graph tuner looks through when counting a node's data inputs (TVM's OPT_OUT_OP).
OPT_OUT_OP = ["layout_transform"]

#: Operators whose output layout is fixed: a walk for tuned ancestors stops there.
_LAYOUT_FIXED = ("nn.batch_flatten", "transpose", "reshape", "squeeze", "expand_dims")

class Node(TypedDict):
    """A node as TVM's graph tuner utilities give it (the face's format): the expression, its
    operator (calls) or name (variables, constants), its data inputs as ``[node index, output
    index, 0]``, its output types, and for a tuned operator its template names and workloads."""

    node: Expr
    op: Op | None
    name: str | None
    inputs: list[list[int]]
    types: list[Type]
    topi_op: NotRequired[list[str | None]]
    workloads: NotRequired[list[Workload | None]]


def bind_inputs(expr: Function, input_shapes: Mapping[str, Sequence[int]] | None = None,
                input_dtypes: str | Mapping[str, str] = "float32") -> Function:
    """``expr`` with the parameters named in ``input_shapes`` given those shapes (and dtypes), typed."""
    if not input_shapes:
        return expr
    dtypes = {k: input_dtypes for k in input_shapes} if isinstance(input_dtypes, str) else dict(input_dtypes)
    typed = {name: var(name, shape=tuple(shape), dtype=dtypes[name]) for name, shape in input_shapes.items()}
    swap = {p: typed[p.name_hint] for p in expr.params if p.name_hint in typed}

    class _Rebind(ExprMutator):
        def visit_var(self, v: Var) -> Expr:
            return swap.get(v, v)

    params = [swap.get(p, p) for p in expr.params]
    out = Function(params, _Rebind().visit(expr.body), attrs=expr.attrs)
    infer_types(out)
    return out


def _types_of(node: Expr) -> list[Type]:
    t = node.checked_type
    return list(t.fields) if hasattr(t, "fields") else [t]


def expr2graph(expr: Function, target_ops: Sequence[Op | str], node_dict: dict[Expr, int],
               node_list: list[Node], tvm_target: Target | str = "llvm") -> None:
    """Append the nodes of ``expr`` to ``node_list`` (and their positions to ``node_dict``)."""
    infer_types(expr)
    target = as_target(tvm_target)
    tuned = op_names(target_ops)
    for node in post_order(expr, into_functions=False):
        if node is expr or node in node_dict or isinstance(node, Function):
            continue
        entry: Node = {"node": node, "op": None, "name": None, "inputs": [], "types": _types_of(node)}
        if isinstance(node, Call):
            if not isinstance(node.op, Op):
                raise GraphError("expr2graph: a call of a function (fuse nothing before the graph tuner)")
            entry["op"] = node.op
            entry["inputs"] = _data_inputs(node.args, node_dict, node_list)
            if node.op.name in tuned:
                found = conv_workload(node, target) if node.op.name == "nn.conv2d" else None
                entry["topi_op"] = [found[0] if found else None]
                entry["workloads"] = [found[1] if found else None]
        elif isinstance(node, Var):
            entry["name"] = node.name_hint
        elif isinstance(node, Constant):
            entry["name"] = f"Constant_{len(node_list)}"
        elif isinstance(node, TupleGetItem):
            entry["inputs"] = [[node_dict[node.tuple_value], node.index, 0]]
        elif isinstance(node, Tuple):
            entry["inputs"] = _data_inputs(node.fields, node_dict, node_list)
        node_dict[node] = len(node_list)
        node_list.append(entry)


def _data_inputs(args: Sequence[Expr], node_dict: dict[Expr, int], node_list: list[Node]) -> list[list[int]]:
    out: list[list[int]] = []
    for arg in args:
        i = node_dict[arg]
        if isinstance(arg, (Tuple, TupleGetItem)):
            out += node_list[i]["inputs"]
        else:
            out.append([i, 0, 0])
    return out


def _op_name(node: Node) -> str | None:
    return node["op"].name if isinstance(node["op"], Op) else None


def is_boundary_node(node: Node, input_names: Sequence[str]) -> bool:
    """A graph input, or a call whose output layout is fixed."""
    return _op_name(node) in _LAYOUT_FIXED or node["name"] in input_names


def has_multiple_inputs(node_list: list[Node], node_idx: int, input_names: Sequence[str],
                        opt_out_op: Sequence[str] = OPT_OUT_OP) -> bool:
    """True when more than one data input of the node is a call or a graph input (weights and
    constants are not data; an ``opt_out_op`` call counts when its own input merges)."""
    count = 0
    for i, _, _ in node_list[node_idx]["inputs"]:
        src = node_list[i]
        if _op_name(src) in opt_out_op:
            count += any(has_multiple_inputs(node_list, j, input_names, opt_out_op)
                         for j, _, _ in src["inputs"])
        elif src["op"] is not None or src["name"] in input_names:
            count += 1
    return count > 1


def _is_tuned(node: Node, target_ops: Sequence[Op | str]) -> bool:
    names = op_names(target_ops)
    return _op_name(node) in names


def get_direct_ancestor(node_list: list[Node], visited_dict: dict[int, list[int]],
                        target_ops: Sequence[Op | str], node_idx: int,
                        input_names: Sequence[str]) -> list[int]:
    """The nearest ancestors of a node that are tuned, merging or boundary nodes (memoised in
    ``visited_dict``); a boundary node is its own answer."""
    if node_idx in visited_dict:
        return visited_dict[node_idx]
    if is_boundary_node(node_list[node_idx], input_names):
        return [node_idx]
    found: list[int] = []
    for i, _, _ in node_list[node_idx]["inputs"]:
        if _is_tuned(node_list[i], target_ops) or has_multiple_inputs(node_list, i, input_names):
            reached = [i]
        else:
            reached = get_direct_ancestor(node_list, visited_dict, target_ops, i, input_names)
        found += [a for a in reached if a not in found]
    visited_dict[node_idx] = found
    return found


def get_in_nodes(node_list: list[Node], target_ops: Sequence[Op | str],
                 input_names: Sequence[str]) -> dict[int, list[int]]:
    """``{node: its nearest ancestors}`` for each tuned or merging node that depends on a tuned one.

    A merge whose inputs all come from boundaries (graph inputs, layout-fixed calls) is left out,
    as is every node left with no ancestor (a part computed from weights alone).
    """
    visited: dict[int, list[int]] = {}
    for i, node in enumerate(node_list):
        if not is_boundary_node(node, input_names) and node["op"] is not None:
            get_direct_ancestor(node_list, visited, target_ops, i, input_names)
    in_nodes = {k: list(v) for k, v in visited.items()
                if _is_tuned(node_list[k], target_ops) or has_multiple_inputs(node_list, k, input_names)}
    changed = True
    while changed:
        changed = False
        for k in list(in_nodes):
            if _is_tuned(node_list[k], target_ops):
                continue
            inner = [i for i in in_nodes[k] if i in in_nodes]
            if not inner:
                del in_nodes[k]
                changed = True
    changed = True
    while changed:
        empty = [k for k, v in in_nodes.items() if not v]
        changed = bool(empty)
        for k in empty:
            del in_nodes[k]
            for v in in_nodes.values():
                if k in v:
                    v.remove(k)
    return in_nodes


def get_out_nodes(in_node_dict: Mapping[int, Sequence[int]]) -> dict[int, list[int]]:
    """The reverse of ``in_node_dict``: ``{node: the nodes that list it}`` (every key included)."""
    out: dict[int, list[int]] = {k: [] for k in in_node_dict}
    for k, ancestors in in_node_dict.items():
        for a in ancestors:
            out.setdefault(a, []).append(k)
    return out


def replace_device_with_tracing(target: Target | str) -> str:
    """The target string with ``-device=tracing`` in place of its ``-device=`` option (added when
    it has none)."""
    text = str(target).strip()
    if "-device=" not in text:
        return f"{text} -device=tracing"
    return re.sub(r"-device=.*?(?=\s+-|$)", "-device=tracing", text)
