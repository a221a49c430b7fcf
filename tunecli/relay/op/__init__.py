"""TVM's ``tvm.relay.op`` face: ``get(name)``, ``OpPattern`` and the operator constructors."""

from tunecli.engine.graph.op_registry import OPS, Op, OpPattern
from tunecli.engine.graph.ops.broadcast import add, divide, maximum, minimum, multiply, subtract
from tunecli.engine.graph.ops.reduce import max, mean, min, sum  # noqa: A004 - TVM's names
from tunecli.engine.graph.ops.transform import (
    concatenate,
    expand_dims,
    layout_transform,
    reshape,
    squeeze,
    transpose,
)
from tunecli.engine.graph.ops.unary import cast, clip, exp, log, negative, sigmoid, sqrt, tanh
from tunecli.relay.op import nn

get = OPS.get

__all__ = [
    "Op",
    "OpPattern",
    "add",
    "cast",
    "clip",
    "concatenate",
    "divide",
    "exp",
    "expand_dims",
    "get",
    "layout_transform",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "reshape",
    "sigmoid",
    "sqrt",
    "squeeze",
    "subtract",
    "sum",
    "tanh",
    "transpose",
]
