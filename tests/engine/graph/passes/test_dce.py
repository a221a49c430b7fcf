"""DeadCodeElimination: a read of a field of a built tuple is that field; the other fields go."""

from __future__ import annotations

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.passes import DeadCodeElimination


def test_unread_tuple_fields_are_not_computed() -> None:
    x = relay.var("x", shape=(3,))
    expr = relay.Tuple([relay.exp(x), relay.sigmoid(x)])[0]
    mod = DeadCodeElimination()(g.InferType()(g.IRModule.from_expr(expr)))
    assert g.count_calls(mod["main"]) == {"exp": 1}
