"""Tensor expressions: placeholder, compute, reductions and intrinsics."""

from .compute import compute, placeholder
from .indexing import floordiv, floormod, indexdiv, indexmod, truncdiv, truncmod
from .intrinsics import (
    abs,
    all,
    any,
    ceil,
    cos,
    erf,
    exp,
    exp2,
    floor,
    if_then_else,
    log,
    log2,
    log10,
    power,
    round,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
    trunc,
    var,
)
from .operation import ComputeOp, Operation, PlaceholderOp
from .reduction import CommReducer, Reduce, comm_reducer, max, min, reduce_axis, sum
from .tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, IterVar, Range, Tensor, TensorRead, thread_axis

__all__ = [
    "compute", "placeholder", "abs", "all", "any", "ceil", "cos", "erf", "exp", "exp2", "floor",
    "if_then_else", "log", "log2", "log10", "power", "round", "rsqrt", "sigmoid", "sin", "sqrt", "tanh",
    "trunc", "var", "ComputeOp", "Operation", "PlaceholderOp", "CommReducer", "Reduce", "comm_reducer",
    "max", "min", "reduce_axis", "sum", "COMM_REDUCE", "DATA_PAR", "IterVar", "Range", "Tensor",
    "TensorRead", "floordiv", "floormod", "indexdiv", "indexmod", "truncdiv", "truncmod",
    "THREAD_INDEX", "thread_axis",
]
