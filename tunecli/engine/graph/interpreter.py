"""The reference interpreter: a function evaluated node by node with the operators' numpy
references.  It is the correctness oracle of every graph transformation and of built networks.

``evaluate(fn, args, params)`` gives the function's output (an array, or a tuple for a tuple
result); ``evaluate_nodes`` also returns the value of every node, for op-by-op comparisons.
Each operator's output is checked against its inferred type, so a reference and a type relation
that disagree fail loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

import numpy as np

from tunecli.engine.runtime.ndarray import NDArray
from tunecli.engine.target import Target
from tunecli.errors import GraphError

from .graph_expr import ArrayData, Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .ir_module import IRModule
from .traversal import children, post_order
from .type_infer import infer_types
from .types import TensorType, TupleType, Type, Value

#: A value given for a parameter: array data, or a sequence of them for a tuple-typed parameter.
InputValue: TypeAlias = "ArrayData | Sequence[InputValue]"
#: What the interpreter holds per node: a value, or a function (evaluated where it is called).
NodeValue: TypeAlias = "Value | Function"


def bind_inputs(
    fn: Function, args: Sequence[InputValue] = (), inputs: Mapping[str, InputValue] | None = None
) -> dict[Var, Value]:
    """Values of ``fn``'s parameters from positional ``args`` then ``inputs`` by name, checked
    against the parameter types (GraphError naming the parameter)."""
    infer_types(fn)
    named = dict(inputs or {})
    if len(args) > len(fn.params):
        raise GraphError(f"{len(args)} arguments given for {len(fn.params)} parameters")
    names = [p.name_hint for p in fn.params]
    unknown = sorted(set(named) - set(names))
    if unknown:
        raise GraphError(f"unknown inputs {unknown}; the function's parameters are {names}")
    bound: dict[Var, Value] = {}
    for i, p in enumerate(fn.params):
        if i < len(args):
            if p.name_hint in named:
                raise GraphError(f"input {p.name_hint!r} is given both by position and by name")
            value = args[i]
        elif p.name_hint in named:
            value = named[p.name_hint]
        else:
            missing = [n for n in names[i:] if n not in named]
            raise GraphError(f"no value for the inputs {missing}")
        bound[p] = _checked_value(value, p.checked_type, f"input {p.name_hint!r}")
    return bound


def _checked_value(value: InputValue, t: Type, where: str) -> Value:
    if isinstance(t, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(t.fields):
            raise GraphError(f"{where}: expected a {len(t.fields)}-tuple for {t}")
        return tuple(
            _checked_value(v, f, f"{where} field {i}")
            for i, (v, f) in enumerate(zip(value, t.fields, strict=True))
        )
    if not isinstance(t, TensorType):
        raise GraphError(f"{where}: values of type {t} cannot be passed or computed here")
    array = np.asarray(
        value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value
    )
    if array.shape != t.shape or str(array.dtype) != t.dtype:
        raise GraphError(
            f"{where}: expected {t}, got an array of shape {array.shape} and dtype {array.dtype}"
        )
    return array


def evaluate_nodes(
    fn: Function, args: Sequence[InputValue] = (), inputs: Mapping[str, InputValue] | None = None,
    keep: bool = True,
) -> tuple[Value, dict[Expr, NodeValue]]:
    """Evaluate ``fn`` on its inputs.

    Parameters
    ----------
    fn : Function
    args : sequence of arrays
        Parameter values by position.
    inputs : mapping of str to array, optional
        Parameter values by name (weights, the data).
    keep : bool
        Keep every node's value (default); otherwise values are dropped once their last consumer ran.

    Returns
    -------
    (output, values)
        The function's result and ``{node: value}`` (only the output when ``keep`` is False).
    """
    values: dict[Expr, NodeValue] = dict(bind_inputs(fn, args, inputs))
    order = post_order(fn.body, into_functions=False)
    uses: dict[Expr, int] = {}
    if not keep:
        for node in order:
            for c in _operands(node):
                uses[c] = uses.get(c, 0) + 1
    for node in order:
        if node in values:
            continue
        values[node] = _evaluate_node(node, values)
        if not keep:
            for c in _operands(node):
                uses[c] -= 1
                if uses[c] == 0 and not isinstance(c, Var):
                    del values[c]
    return values[fn.body], values


def _operands(node: Expr) -> tuple[Expr, ...]:
    return () if isinstance(node, Function) else children(node)


def _evaluate_node(node: Expr, values: dict[Expr, NodeValue]) -> NodeValue:
    if isinstance(node, Constant):
        return node.data
    if isinstance(node, Tuple):
        return tuple(values[f] for f in node.fields)
    if isinstance(node, TupleGetItem):
        return values[node.tuple_value][node.index]
    if isinstance(node, Function):
        return node  # evaluated when called
    if isinstance(node, Call):
        args = [values[a] for a in node.args]
        if isinstance(node.op, Function):
            return evaluate_nodes(node.op, args, keep=False)[0]
        try:
            out = node.op.reference(node.attrs, *args)
        except GraphError:
            raise
        except Exception as err:
            raise GraphError(
                f"{node.op.name}: its numpy reference failed: {type(err).__name__}: {err}"
            ) from err
        return _checked_output(node, out)
    if isinstance(node, Var):
        raise GraphError(f"variable %{node.name_hint} is free in the function (not a parameter)")
    raise GraphError(f"cannot evaluate {node!r}")


def _checked_output(node: Call, out: Value) -> Value:
    t = node.checked_type
    name = node.op.name  # type: ignore[union-attr]
    try:
        return _checked_value(out, t, f"{name} output")
    except GraphError as err:
        raise GraphError(f"{err} (the reference of {name} disagrees with its type relation)") from None


def evaluate(
    func: Function | IRModule, args: Sequence[InputValue] = (), inputs: Mapping[str, InputValue] | None = None
) -> Value:
    """The output of ``func`` (or of ``mod["main"]``) on the given inputs, computed by the numpy
    references.  Intermediate values are released as soon as they are no longer needed."""
    fn = func["main"] if isinstance(func, IRModule) else func
    return evaluate_nodes(fn, args, inputs, keep=False)[0]


class Interpreter:
    """TVM's ``relay.create_executor("debug", mod=mod)``: ``Interpreter(mod).evaluate()(x, **params)``
    (NDArrays, or a tuple of them)."""

    def __init__(self, mod: IRModule | Function, params: Mapping[str, InputValue] | None = None):
        self.mod = mod if isinstance(mod, IRModule) else IRModule.from_expr(mod)
        self.params = dict(params or {})

    def evaluate(self, expr: Function | None = None) -> Callable[..., Value]:
        """A callable ``f(*args, **inputs)`` evaluating ``expr`` (default ``mod["main"]``)."""
        fn = self.mod["main"] if expr is None else expr

        def run(*args: InputValue, **inputs: InputValue) -> Value:
            return _as_ndarrays(evaluate_nodes(fn, args, {**self.params, **inputs}, keep=False)[0])

        return run


def _as_ndarrays(value: Value) -> Value:
    """``value``'s arrays as NDArrays (numpy arrays with TVM's ``.numpy()``), as TVM's executors give."""
    if isinstance(value, tuple):
        return tuple(_as_ndarrays(v) for v in value)
    return np.ascontiguousarray(value).view(NDArray)


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: object = None,  # accepted for TVM's signature, unused
    target: str | Target | None = "llvm",  # accepted for TVM's signature, unused
    params: Mapping[str, InputValue] | None = None,
) -> Interpreter:
    """TVM's ``relay.create_executor``; the ``"debug"`` kind evaluates with the numpy references.

    ``device`` and ``target`` are accepted for TVM's signature; the interpreter runs on the host.
    """
    if kind != "debug":
        raise GraphError(f"create_executor: kind {kind!r} is not available here; use 'debug'")
    return Interpreter(mod if mod is not None else IRModule(), params)
