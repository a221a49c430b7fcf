"""Generic walkers over IR nodes.

A visitor calls ``visit_<ClassName>`` when it defines one, else ``generic_visit`` which walks
the node's ``_fields``.  A mutator's ``generic_visit`` rebuilds a node only when a child
changed, so unchanged subtrees are shared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, overload

from . import expr as E
from .expr import Node

if TYPE_CHECKING:
    from .stmt import Stmt

_UNKNOWN = object()


def _method(walker: type, node_type: type) -> Callable[..., object] | None:
    """The ``visit_<node class>`` function of the class ``walker``, or None (looked up once per
    pair and kept on the walker class)."""
    table = walker.__dict__.get("_visit_methods")
    if table is None:
        table = {}
        walker._visit_methods = table  # type: ignore[attr-defined]
    try:
        return table[node_type]
    except KeyError:
        method = table[node_type] = getattr(walker, "visit_" + node_type.__name__, None)
        return method


class Visitor:
    """Walk a tree of nodes (expressions and statements) without changing it.

    ``visit`` takes a node, a tuple of nodes, None or a leaf value of a node's field, and answers
    what the subclass's ``visit_<ClassName>`` answers (each walker its own kind: ``Any``)."""

    # Any: the answer is whatever the subclass's visit_<ClassName> returns (None, a bool, a set ...).
    def visit(self, node: object) -> Any:
        if node is None:
            return None
        if isinstance(node, tuple):
            for item in node:
                self.visit(item)
            return None
        table = type(self).__dict__.get("_visit_methods")
        method = table.get(type(node), _UNKNOWN) if table is not None else _UNKNOWN
        if method is _UNKNOWN:
            method = _method(type(self), type(node))
        return method(self, node) if method else self.generic_visit(node)

    def generic_visit(self, node: object) -> Any:  # Any: see visit
        for field in getattr(node, "_fields", ()):
            self.visit(getattr(node, field))
        return None


class Mutator:
    """Rewrite a tree of nodes; return the node itself where nothing changed.

    ``visit`` takes what ``Visitor.visit`` takes and answers its rewrite: a node of the kind the
    subclass's ``visit_<ClassName>`` makes of it, a tuple, None or the leaf value unchanged."""

    # Any: the rewrite of an expression is an expression, of a statement a statement (or None where a
    # walker drops it), of a tuple a tuple; callers rely on the kind they passed in.
    def visit(self, node: object) -> Any:
        if node is None:
            return None
        if isinstance(node, tuple):
            items = tuple(self.visit(item) for item in node)
            return node if all(a is b for a, b in zip(items, node, strict=True)) else items
        table = type(self).__dict__.get("_visit_methods")
        method = table.get(type(node), _UNKNOWN) if table is not None else _UNKNOWN
        if method is _UNKNOWN:
            method = _method(type(self), type(node))
        return method(self, node) if method else self.generic_visit(node)

    def generic_visit(self, node: object) -> Any:  # Any: see visit
        if not isinstance(node, Node):
            return node
        changes = {}
        for field in node._fields:
            old = getattr(node, field)
            new = self.visit(old)
            if new is not old:
                changes[field] = new
        if not changes:
            return node
        return _rebuild(node, changes)


def _rebuild(node: Node, changes: dict[str, object]) -> Node:
    """Copy ``node`` with ``changes``, recomputing dtypes that depend on children."""
    if isinstance(node, E.BinaryOp):
        a, b = changes.get("a", node.a), changes.get("b", node.b)
        return E._binary(type(node), a, b)
    if isinstance(node, E.Not):
        return E.Not(changes["a"])
    if isinstance(node, E.Select):
        return E.Select(changes.get("condition", node.condition), changes.get("true_value", node.true_value),
                        changes.get("false_value", node.false_value))
    if isinstance(node, E.Ramp):
        return E.Ramp(changes.get("base", node.base), changes.get("stride", node.stride), node.lanes)
    if isinstance(node, E.Broadcast):
        return E.Broadcast(changes["value"], node.lanes)
    if isinstance(node, E.BufferLoad):
        return E.BufferLoad(node.buffer, changes["indices"])
    if isinstance(node, E.Let):
        return E.Let(node.var, changes.get("value", node.value), changes.get("body", node.body))
    return node.replace(**changes)


def post_order(node: object, fn: Callable[[object], object]) -> None:
    """Call ``fn`` on every node of the tree, children first."""
    if node is None:
        return
    if isinstance(node, tuple):
        for item in node:
            post_order(item, fn)
        return
    for field in getattr(node, "_fields", ()):
        post_order(getattr(node, field), fn)
    fn(node)


class _Subst(Mutator):
    def __init__(self, mapping: Mapping[E.Var, E.Expr]) -> None:
        self.mapping = mapping

    def visit_Var(self, v: E.Var) -> E.Expr:
        return self.mapping.get(v, v)


@overload
def substitute(node: E.Expr, mapping: Mapping[E.Var, E.Expr]) -> E.Expr: ...


@overload
def substitute(node: Stmt, mapping: Mapping[E.Var, E.Expr]) -> Stmt: ...


def substitute(node: E.Expr | Stmt, mapping: Mapping[E.Var, E.Expr]) -> E.Expr | Stmt:
    """Replace variables (by identity) according to ``mapping`` {Var: Expr}."""
    return _Subst(mapping).visit(node) if mapping else node
