"""DeadCodeElimination: reads of a field of a tuple built in place become that field, so the tuple's
other fields (and everything only they used) are no longer computed.  Nodes nothing reads are
not part of a dataflow graph to begin with."""

from __future__ import annotations

from ..graph_expr import Expr, Function, Tuple, TupleGetItem
from ..traversal import ExprMutator
from .pass_infra import Pass, function_pass


class _Eliminate(ExprMutator):
    def visit_tuple_getitem(self, item: TupleGetItem) -> Expr:
        value = self.visit(item.tuple_value)
        if isinstance(value, Tuple):
            return value.fields[item.index]
        return item if value is item.tuple_value else TupleGetItem(value, item.index)


def dead_code_elimination(fn: Function) -> Function:
    """``fn`` without the values only unread tuple fields needed."""
    return _Eliminate().visit(fn)  # type: ignore[return-value]


def DeadCodeElimination(inline_once: bool = False, ignore_impurity: bool = False) -> Pass:  # noqa: N802
    """The pass (TVM's ``relay.transform.DeadCodeElimination()``)."""
    return function_pass("DeadCodeElimination", 1, dead_code_elimination)
