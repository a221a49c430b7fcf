"""TVM's ``tvm.relay.expr`` face: the expression nodes of a graph."""

from tunecli.engine.graph.graph_expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    const,
    var,
)

__all__ = ["Call", "Constant", "Expr", "Function", "Tuple", "TupleGetItem", "TupleWrapper", "Var", "const",
           "var"]
