"""TVM's ``topi`` face: operator compute definitions (``topi.add``, ``topi.sum``,
``topi.transpose``, ``topi.nn``), their CPU schedules (``topi.generic``, ``topi.x86``),
``topi.utils`` and numpy references (``topi.testing``)."""

from tunecli.engine.graph.te_call import (
    abs,
    broadcast_to,
    cast,
    clip,
    concatenate,
    divide,
    elemwise_sum,
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

from . import generic, nn, testing, utils, x86

__all__ = [
    "abs", "add", "broadcast_to", "cast", "clip", "concatenate", "divide", "elemwise_sum", "erf", "exp",
    "expand_dims", "log", "max", "maximum", "mean", "min", "minimum", "multiply", "negative", "power",
    "reshape", "rsqrt", "sigmoid", "sqrt", "squeeze", "strided_slice", "subtract", "sum", "take", "tanh",
    "transpose", "nn", "testing", "utils", "generic", "x86",
]
