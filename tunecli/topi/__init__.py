"""TVM's ``topi`` face: operator compute definitions (``topi.add``, ``topi.sum``,
``topi.transpose``, ``topi.nn``), ``topi.utils`` and numpy references (``topi.testing``)."""

from tunecli.engine.graph.te_call import (
    abs,
    broadcast_to,
    cast,
    clip,
    concatenate,
    divide,
    erf,
    exp,
    expand_dims,
    log,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    power,
    reshape,
    rsqrt,
    sigmoid,
    sqrt,
    squeeze,
    strided_slice,
    subtract,
    sum,
    take,
    tanh,
    transpose,
)
from tunecli.engine.ops.nn import add

from . import nn, testing, utils

__all__ = [
    "abs", "add", "broadcast_to", "cast", "clip", "concatenate", "divide", "erf", "exp", "expand_dims",
    "log", "max", "maximum", "mean", "min", "minimum", "multiply", "negative", "power", "reshape", "rsqrt",
    "sigmoid", "sqrt", "squeeze", "strided_slice", "subtract", "sum", "take", "tanh", "transpose", "nn",
    "testing", "utils",
]
