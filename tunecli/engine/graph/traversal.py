"""Walking and rewriting graphs: ``post_order``, ``free_vars`` and :class:`ExprMutator`.

Walks are iterative, so a network hundreds of layers deep never reaches Python's recursion limit.
A walk can ``skip`` nodes that are already handled (typed, rewritten) with everything below them, so
repeated incremental passes over a growing graph cost time in the new nodes only.
"""

from __future__ import annotations

from collections.abc import Callable

from tunecli.errors import GraphError

from .graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var


def children(node: Expr) -> tuple[Expr, ...]:
    """The direct inputs of ``node`` (a Function's are its parameters, then its body; a call of a
    function has the function first)."""
    if isinstance(node, Call):
        return ((node.op,) if isinstance(node.op, Function) else ()) + node.args
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, Function):
        return (*node.params, node.body)
    if isinstance(node, (Var, Constant)):
        return ()
    raise GraphError(f"not a graph expression: {node!r}")


def post_order(
    root: Expr, into_functions: bool = True, skip: Callable[[Expr], bool] | None = None
) -> list[Expr]:
    """Every node reachable from ``root`` once, each after its inputs (``root`` last).

    With ``into_functions=False`` a function inside ``root`` (the callee of a fused call) is one
    node: its parameters and body are not listed.  A node for which ``skip(node)`` is true is
    neither listed nor walked below (the list is empty when it is true of ``root``).
    """
    order: list[Expr] = []
    done: set[int] = set()
    if skip is not None and skip(root):
        return order
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        if isinstance(node, Function) and node is not root and not into_functions:
            continue
        for c in reversed(children(node)):
            if id(c) in done:
                continue
            if skip is not None and skip(c):
                done.add(id(c))
                continue
            stack.append((c, False))
    return order


def post_order_visit(root: Expr, visit: Callable[[Expr], object]) -> None:
    """Call ``visit(node)`` on every node, inputs first (TVM's ``relay.analysis.post_order_visit``)."""
    for node in post_order(root):
        visit(node)


def free_vars(expr: Expr) -> list[Var]:
    """Variables used by ``expr`` and not bound by a Function inside it, in order of first use
    (TVM's ``relay.analysis.free_vars``)."""
    bound: set[Var] = set()
    for node in post_order(expr):
        if isinstance(node, Function):
            bound.update(node.params)
    if isinstance(expr, Function):
        bound.update(expr.params)
    return [
        node
        for node in post_order(expr.body if isinstance(expr, Function) else expr)
        if isinstance(node, Var) and node not in bound
    ]


def count_calls(expr: Expr) -> dict[str, int]:
    """How many calls of each operator ``expr`` makes (by operator name)."""
    counts: dict[str, int] = {}
    for node in post_order(expr):
        if isinstance(node, Call) and not isinstance(node.op, Function):
            counts[node.op.name] = counts.get(node.op.name, 0) + 1
    return counts


class ExprMutator:
    """Rebuild a graph bottom-up (TVM's ``relay.ExprMutator``), each node once.

    Override ``visit_call`` / ``visit_var`` / ... ; call ``self.visit(child)`` for a child's new
    form (already computed: nodes are visited inputs first).  A node whose children did not change
    is kept as it is, with its type.
    """

    def __init__(self) -> None:
        self.memo: dict[Expr, Expr] = {}

    def visit(self, expr: Expr) -> Expr:
        """The rewritten form of ``expr``."""
        if expr in self.memo:
            return self.memo[expr]
        for node in post_order(expr, skip=self.memo.__contains__):
            if node not in self.memo:  # a visit_* override may have visited it already
                self.memo[node] = self._dispatch(node)
        return self.memo[expr]

    def _dispatch(self, node: Expr) -> Expr:
        if isinstance(node, Call):
            return self.visit_call(node)
        if isinstance(node, Var):
            return self.visit_var(node)
        if isinstance(node, Constant):
            return self.visit_constant(node)
        if isinstance(node, Tuple):
            return self.visit_tuple(node)
        if isinstance(node, TupleGetItem):
            return self.visit_tuple_getitem(node)
        if isinstance(node, Function):
            return self.visit_function(node)
        raise GraphError(f"not a graph expression: {node!r}")

    def visit_var(self, var: Var) -> Expr:
        return var

    def visit_constant(self, const: Constant) -> Expr:
        return const

    def visit_call(self, call: Call) -> Expr:
        op = self.visit(call.op) if isinstance(call.op, Function) else call.op
        args = tuple(self.visit(a) for a in call.args)
        if op is call.op and all(a is b for a, b in zip(args, call.args, strict=True)):
            return call
        return Call(op, args, call.attrs)  # type: ignore[arg-type]

    def visit_tuple(self, tup: Tuple) -> Expr:
        fields = tuple(self.visit(f) for f in tup.fields)
        if all(a is b for a, b in zip(fields, tup.fields, strict=True)):
            return tup
        return Tuple(fields)

    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        return item if value is item.tuple_value else TupleGetItem(value, item.index)

    def visit_function(self, fn: Function) -> Expr:
        params = tuple(self.visit(p) for p in fn.params)
        body = self.visit(fn.body)
        if body is fn.body and all(a is b for a, b in zip(params, fn.params, strict=True)):
            return fn
        if not all(isinstance(p, Var) for p in params):
            raise GraphError("ExprMutator: a function parameter must stay a Var")
        return Function(params, body, fn.ret_type, attrs=fn.attrs)  # type: ignore[arg-type]
