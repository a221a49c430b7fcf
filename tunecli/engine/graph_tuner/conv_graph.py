"""The tunable convolutions of a graph and the data dependencies between them (TVM's
``graph_tuner.utils.traverse_graph``).

A node of interest is a call of a target operator (``nn.conv2d``, as TVM's ``target_ops``) or a
*merge*: a call (or tuple) with more than one data input (``add`` of a residual block,
``concatenate``'s tuple).  Everything else with one data input (``relu``, ``bias_add``,
``max_pool2d``, batch norm...) is layout-agnostic and passes its input's layout through; a
graph input variable and a layout-fixed operator (``reshape``, ``batch_flatten``, ``transpose``,
...) are boundaries, where no layout transform is counted.  Weights (variables not named in
``input_shapes``, constants) are not data.

A merge takes the layout of its first non-boundary input, as TVM's tuner assumes; so every node
of interest *follows* one convolution's choice (a convolution itself, a merge its first
input's).  The result is a :class:`ConvGraph`: the convolutions in topological order and the
edges where a layout transform may be needed, each between the producing convolution's output
layout and the consuming convolution's input layout (``to_input=True``) or, into a merge, the
output layout of the convolution the merge follows.  An edge carries the logical (NCHW) shape of
the tensor transformed there: the consumer's input (which a pooling layer may have shrunk), or
the merge's input that the producer reaches it through (a concatenation's inputs differ in
channels, and a block that divides one may not divide another).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tunecli.engine.graph.extract import OpSpec, operator_name
from tunecli.engine.graph.graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.op_registry import Op
from tunecli.engine.graph.op_strategy import implementation
from tunecli.engine.graph.traversal import post_order
from tunecli.engine.graph.type_infer import infer_types, tensor_type_of
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError

#: Operators whose output layout is fixed: the graph tuner's boundaries (TVM's LAYOUT_FIXED_OP).
LAYOUT_FIXED_OPS = frozenset({"nn.batch_flatten", "transpose", "reshape", "squeeze", "expand_dims",
                              "strided_slice", "where", "nn.dense", "nn.batch_matmul", "nn.softmax",
                              "nn.global_avg_pool2d", "mean", "sum", "max", "min"})


#: Operators whose configs' layouts are known (TVM's graph tuner tunes convolutions).
TUNABLE_OPS = frozenset({"nn.conv2d"})


@dataclass(frozen=True)
class ConvNode:
    """One tunable convolution.

    Attributes
    ----------
    index : int
        Position of the call in the graph's post order (what TVM's tuner numbers nodes by).
    call : Call
    task_name : str
        ``conv2d_NCHWc.x86`` or ``depthwise_conv2d_NCHWc.x86``.
    workload : tuple
        TVM's workload of the call (the key of its tuning records).
    """

    index: int
    call: Call
    task_name: str
    workload: Workload


@dataclass(frozen=True)
class LayoutEdge:
    """A place where the data may need a layout transform between two convolutions' choices.

    Attributes
    ----------
    src, dst : int
        Positions (in ``ConvGraph.nodes``) of the producing convolution and of the convolution
        whose choice fixes the consumer's layout.
    shape : tuple of int
        Logical NCHW shape of the tensor transformed.
    to_input : bool
        True: the consumer is ``dst`` itself (its input layout); False: a merge following
        ``dst`` (its output layout).
    """

    src: int
    dst: int
    shape: tuple[int, ...]
    to_input: bool


@dataclass(frozen=True)
class ConvGraph:
    """The tunable convolutions of a graph (topological order) and the edges between them."""

    nodes: tuple[ConvNode, ...]
    edges: tuple[LayoutEdge, ...]


def op_names(target_ops: Sequence[OpSpec]) -> frozenset[str]:
    """Operator names of ``target_ops`` (``Op`` objects, names, or constructor functions such as
    ``relay.nn.conv2d``, TVM 0.6's form)."""
    return frozenset(operator_name(op) for op in target_ops)


#: The tasks whose configs choose an NCHW[x]c layout, the graph tuner's choices.
NCHWC_TASKS = frozenset({"conv2d_NCHWc.x86", "depthwise_conv2d_NCHWc.x86"})


def conv_workload(call: Call, target: Target) -> tuple[str, Workload] | None:
    """``(task name, workload)`` of a ``nn.conv2d`` call: that of the strategy row ``target``
    selects (:func:`tunecli.engine.graph.op_strategy.implementation`) when it is one of
    :data:`NCHWC_TASKS` (a depthwise one with a channel multiplier of 1); None otherwise."""
    impl = implementation(call, target)
    if impl is None or impl.task_name not in NCHWC_TASKS:
        return None
    if impl.task_name.startswith("depthwise") and \
            tensor_type_of(call.args[1]).shape[0] != tensor_type_of(call.args[0]).shape[1]:
        return None
    return impl.task_name, impl.workload


def main_function(graph: IRModule | Function) -> Function:
    """``graph["main"]`` of an IRModule, or the Function itself, with its types inferred."""
    fn = graph["main"] if isinstance(graph, IRModule) else graph
    if not isinstance(fn, Function):
        raise GraphError(f"graph tuner: expected an IRModule or a relay Function, got {type(fn).__name__}")
    infer_types(fn)
    return fn


def conv_graph(fn: Function, input_names: Sequence[str], target_ops: Sequence[Op | str],
               target: Target | str = "llvm") -> ConvGraph:
    """The :class:`ConvGraph` of ``fn`` (see the module docstring).

    Parameters
    ----------
    fn : Function
        Typed.
    input_names : sequence of str
        The data inputs (other free variables are weights).
    target_ops : sequence of Op or str
    target : Target or str
        Selects the strategy row (and so the task) of each convolution (default: this host's
        ``llvm``, the x86 target TVM's graph tuner serves).

    Returns
    -------
    ConvGraph
    """
    names, inputs, target = op_names(target_ops), set(input_names), as_target(target)
    unsupported = names - TUNABLE_OPS
    if unsupported:
        raise GraphError(f"graph tuner: target_ops {sorted(unsupported)} cannot be tuned; the layouts of "
                         f"{sorted(TUNABLE_OPS)} configs are known (TVM's infer_layout)")
    params = {p.name_hint for p in fn.params}
    missing = inputs - params
    if missing:
        raise GraphError(f"graph tuner: input_shapes names {sorted(missing)}, not parameters of the graph "
                         f"(parameters: {sorted(params)})")
    order = [n for n in post_order(fn, into_functions=False) if not isinstance(n, (Function, Constant))]
    position = {node: i for i, node in enumerate(order)}
    convs: dict[Expr, ConvNode] = {}
    follows: dict[Expr, Expr] = {}     # node of interest -> the convolution whose choice it takes
    ancestors: dict[Expr, list[Expr]] = {}

    def data_inputs(node: Expr) -> list[Expr]:
        if isinstance(node, Call):
            args = list(node.args)
        elif isinstance(node, Tuple):
            args = list(node.fields)
        elif isinstance(node, TupleGetItem):
            args = [node.tuple_value]
        else:
            return []
        return [a for a in args if not isinstance(a, Constant)
                and not (isinstance(a, Var) and a.name_hint not in inputs)]

    def is_boundary(node: Expr) -> bool:
        return isinstance(node, Var) or (isinstance(node, Call) and isinstance(node.op, Op)
                                         and node.op.name in LAYOUT_FIXED_OPS)

    edges: dict[tuple[Expr, Expr], tuple[Expr, tuple[int, ...], bool]] = {}
    for node in order:
        if isinstance(node, Var):
            continue
        direct = data_inputs(node)
        found: list[Expr] = []
        via: dict[Expr, Expr] = {}  # ancestor -> the direct input it reaches this node through
        for x in direct:
            reached = [x] if x in follows or is_boundary(x) else ancestors.get(x, [])
            found.extend(reached)
            for a in reached:
                via.setdefault(a, x)
        ancestors[node] = found
        if is_boundary(node):
            continue
        workload = None
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in names:
            workload = conv_workload(node, target)
        if workload is not None:
            convs[node] = ConvNode(position[node], node, *workload)
            follows[node] = node
            for src in found:
                if src in follows:
                    edges.setdefault((src, node), (node, _logical_shape(direct[0]), True))
        elif len(direct) > 1:
            inner = [x for x in found if x in follows]
            if not inner:
                continue  # a merge of boundaries only: itself a boundary for what follows
            follows[node] = follows[inner[0]]
            for src in inner[1:]:
                edges.setdefault((src, node), (follows[node], _logical_shape(via[src]), False))
    nodes = tuple(sorted(convs.values(), key=lambda c: c.index))
    slot = {c.call: i for i, c in enumerate(nodes)}
    found_edges = []
    for (src, _), (dst, shape, to_input) in edges.items():
        a, b = slot[follows[src]], slot[follows[dst]]
        if a != b or to_input:
            found_edges.append(LayoutEdge(a, b, shape, to_input))
    return ConvGraph(nodes, tuple(found_edges))


def _logical_shape(expr: Expr) -> tuple[int, ...]:
    t = expr.checked_type
    fields = getattr(t, "fields", None)
    if fields:  # a tuple: the first field's shape stands for it
        t = fields[0]
    return tuple(int(s) for s in t.shape)


def input_shapes_checked(fn: Function, input_shapes: Mapping[str, Sequence[int]]) -> None:
    """GraphError when a shape of ``input_shapes`` disagrees with the graph's input of that name."""
    for p in fn.params:
        if p.name_hint in input_shapes and p.has_type:
            have = tuple(int(s) for s in tensor_type_of(p).shape)
            want = tuple(int(s) for s in input_shapes[p.name_hint])
            if have != want:
                raise GraphError(f"graph tuner: input {p.name_hint!r} has shape {have} in the graph, "
                                 f"input_shapes gives {want}")
