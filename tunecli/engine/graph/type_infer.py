"""Type inference: the shape and dtype of every node of a graph (TVM's ``InferType``).

Each operator's type relation (``Op.relation``) gives its output type from its argument types and
attributes, and may complete the types of unannotated variables (a weight declared as
``relay.var("conv1_weight")`` gets its shape from the convolution that uses it).  Types are
written once into each node's ``checked_type``; running inference again only visits new nodes: a
typed node's inputs are all typed, so the walk stops at typed nodes and typing a graph node by node
as it is built costs time in its size, not its square.
Errors name the operator and the mismatch (``nn.conv2d: data has 3 channels but weight expects 4``).
A function called by a ``Call`` (a fused group) must have annotated parameters.
"""

from __future__ import annotations

from tunecli.errors import GraphError

from .graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, set_checked_type
from .ir_module import IRModule
from .op_registry import Solved
from .traversal import post_order
from .types import FuncType, TensorType, TupleType, Type, type_of_array


def infer_types(root: Expr) -> Type:
    """Infer and record the type of every node reachable from ``root``; return ``root``'s type.

    Raises
    ------
    GraphError
        Naming the operator and the mismatch, or a variable whose type nothing determines.
    """
    for node in post_order(root, skip=_typed):
        if isinstance(node, Var):
            if node.type_annotation is not None:
                set_checked_type(node, node.type_annotation)
        elif isinstance(node, Constant):
            set_checked_type(node, type_of_array(node.data))
        elif isinstance(node, Call):
            set_checked_type(node, _call_type(node))
        elif isinstance(node, Tuple):
            set_checked_type(node, TupleType(tuple(_known(f, "a tuple field") for f in node.fields)))
        elif isinstance(node, TupleGetItem):
            set_checked_type(node, _getitem_type(node))
        elif isinstance(node, Function):
            set_checked_type(node, _function_type(node))
    return root.checked_type


def _typed(expr: Expr) -> bool:
    return expr.has_type


def _known(expr: Expr, where: str) -> Type:
    if expr.has_type:
        return expr.checked_type
    name = f"variable %{expr.name_hint}" if isinstance(expr, Var) else repr(expr)
    raise GraphError(
        f"the type of {name} used as {where} is unknown: give it a shape "
        f"(relay.var(name, shape=..., dtype=...))"
    )


def _call_type(call: Call) -> Type:
    if isinstance(call.op, Function):
        fn_type = call.op.checked_type
        assert isinstance(fn_type, FuncType)
        args = [_known(a, "a function argument") for a in call.args]
        if tuple(args) != fn_type.arg_types:
            raise GraphError(
                f"call of a function: argument types ({', '.join(map(str, args))}) differ from "
                f"its parameter types ({', '.join(map(str, fn_type.arg_types))})"
            )
        return fn_type.ret_type
    op = call.op
    arg_types = [a.checked_type if a.has_type else None for a in call.args]
    try:
        result = op.relation(op.name, arg_types, call.attrs)
    except GraphError as err:
        untyped = [
            f"%{a.name_hint}"
            for a, t in zip(call.args, arg_types, strict=True)
            if t is None and isinstance(a, Var)
        ]
        if untyped:
            raise GraphError(f"{err} (variables without a type: {', '.join(untyped)})") from None
        raise
    if not isinstance(result, Solved):
        for i, (a, t) in enumerate(zip(call.args, arg_types, strict=True)):
            if t is None:
                _known(a, f"argument {i} ({op.arg_names[i]}) of {op.name}")
        return result
    for i, (a, t) in enumerate(zip(call.args, result.args, strict=True)):
        if not a.has_type:
            if not isinstance(a, Var):
                _known(a, f"argument {i} ({op.arg_names[i]}) of {op.name}")
            set_checked_type(a, t)
        elif a.checked_type != t:
            raise GraphError(
                f"{op.name}: argument {i} ({op.arg_names[i]}) has type {a.checked_type}, expected {t}"
            )
    return result.output


def _getitem_type(item: TupleGetItem) -> Type:
    t = _known(item.tuple_value, "a tuple")
    if not isinstance(t, TupleType):
        raise GraphError(f"TupleGetItem: field {item.index} of a value that is not a tuple ({t})")
    if not 0 <= item.index < len(t.fields):
        raise GraphError(f"TupleGetItem: field {item.index} of a {len(t.fields)}-tuple {t}")
    return t.fields[item.index]


def _function_type(fn: Function) -> FuncType:
    unknown = [p.name_hint for p in fn.params if not p.has_type]
    if unknown:
        raise GraphError(
            f"function parameters {unknown} are not used by any operator that determines "
            f"their type; give them a shape"
        )
    ret = _known(fn.body, "a function body")
    if fn.ret_type is not None and fn.ret_type != ret:
        raise GraphError(f"function: the body has type {ret}, the declared return type is {fn.ret_type}")
    return FuncType(tuple(p.checked_type for p in fn.params), ret)


class InferType:
    """The type-inference pass (TVM's ``relay.transform.InferType()``): ``InferType()(mod)`` returns a
    module whose functions have every ``checked_type`` filled in."""

    name = "InferType"
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        for fn in mod.functions.values():
            infer_types(fn)
        return IRModule(dict(mod.functions))


def tensor_type_of(expr: Expr) -> TensorType:
    """``expr``'s inferred type, which must be a tensor (GraphError otherwise)."""
    t = expr.checked_type
    if not isinstance(t, TensorType):
        raise GraphError(f"{expr!r}: expected a tensor, its type is {t}")
    return t
