"""Whole networks as typed dataflow graphs (TVM's Relay); the public face is ``tunecli.relay``.

Modules: ``graph_expr`` (nodes), ``types``, ``op_registry`` (``OPS``, ``Op``, ``OpPattern``,
``Attrs``), ``type_infer``, ``ir_module`` (``IRModule``), ``graph_printer``, ``traversal``
(walks, ``free_vars``, ``ExprMutator``), ``interpreter`` (the numpy oracle), ``layout``
(``NCHW16c``-style layouts), ``ops/`` (operator families: ``conv``, ``nn``, ``pool``, ``unary``,
``broadcast``, ``transform``), ``models/`` (the ``relay.testing`` networks) and ``frontend/``
(``from_onnx``: ONNX models as graph modules).

Nodes (immutable, hashed by identity; a node used twice is computed once)::

    Var(name_hint, type_annotation)      Constant(data)          Tuple(fields)
    Call(op, args, attrs)                TupleGetItem(tuple_value, index)
    Function(params, body, ret_type=None, attrs={})   # fn.with_attr("Primitive", 1) for fused groups

``Call.op`` is an :class:`Op` (or a :class:`Function`: a call of a fused group whose parameters
must carry type annotations).  ``Call.attrs`` is the op's frozen attribute record
(``call.attrs.strides``, ``call.attrs["padding"]``, ``attrs.keys()``, ``attrs.non_default()``);
``ops.conv.conv2d_padding(attrs, kernel_hw)`` gives a conv's ``(top, left, bottom, right)``.

Walking a graph::

    for node in post_order(fn, into_functions=False):   # inputs before users, each node once
        if isinstance(node, Call) and isinstance(node.op, Op):
            node.op.name, node.op.pattern, node.attrs, node.checked_type, node.args
    class Rewrite(ExprMutator):                          # bottom-up, memoized, iterative
        def visit_call(self, call): new = super().visit_call(call); ...; return new

An operator (``OPS.get("nn.conv2d")``, TVM's ``relay.op.get``) records ``name``, ``arg_names``,
``attrs_type``, ``relation`` (type relation), ``reference(attrs, *arrays)`` (numpy),
``pattern`` (:class:`OpPattern`: ELEMWISE 0, BROADCAST 1, INJECTIVE 2, COMM_REDUCE 3,
OUT_ELEMWISE_FUSABLE 4, TUPLE 7, OPAQUE 8 — what fusion reads; ``op.get_attr("TOpPattern")``)
and ``strategy_op`` (the operator family in ``ops.registry.STRATEGIES`` for tunable ops: conv2d,
dense, batch_matmul; picking the row by layout/groups is the strategy selection's job).
Higher layers attach per-operator hooks with ``OPS.set_attr(name, key, value)`` and read them
with ``OPS.get_attr(name, key)`` / ``op.get_attr(key)`` (TVM's ``register_op_attr``).

Types: ``infer_types(expr)`` (or ``InferType()(mod)``) fills every node's ``checked_type``
(:class:`TensorType` ``shape``/``dtype``, :class:`TupleType`, :class:`FuncType`), completing
unannotated weight variables from their uses; errors are ``GraphError`` naming the op.  Nodes
built later (by a pass) have no type until inference runs again; already typed nodes keep theirs.

Interpreter (the correctness oracle)::

    out = evaluate(mod_or_fn, [x], params)                  # positional args, then inputs by name
    out, values = evaluate_nodes(fn, [x], params)           # values: {node: array} of every node
    create_executor("debug", mod, params=params).evaluate()(x)

Inputs may be numpy arrays or ``NDArray``; each op's output is checked against its inferred
type.  ``models.<net>.get_workload(...)`` returns ``(IRModule, {name: NDArray})`` as TVM's
``relay.testing`` does (``NDArray`` is a numpy subclass: ``np.asarray(p)`` or ``p.numpy()``).
"""

from . import ops
from .graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, TupleWrapper, Var, const, var
from .graph_printer import astext
from .interpreter import Interpreter, create_executor, evaluate, evaluate_nodes
from .ir_module import IRModule
from .op_registry import OPS, Attrs, Op, OpPattern
from .traversal import ExprMutator, count_calls, free_vars, post_order, post_order_visit
from .type_infer import InferType, infer_types
from .types import FuncType, TensorType, TupleType

__all__ = [
    "OPS",
    "Attrs",
    "Call",
    "Constant",
    "Expr",
    "ExprMutator",
    "FuncType",
    "Function",
    "IRModule",
    "InferType",
    "Interpreter",
    "Op",
    "OpPattern",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "TupleWrapper",
    "TensorType",
    "Var",
    "astext",
    "const",
    "count_calls",
    "create_executor",
    "evaluate",
    "evaluate_nodes",
    "free_vars",
    "infer_types",
    "ops",
    "post_order",
    "post_order_visit",
    "var",
]
