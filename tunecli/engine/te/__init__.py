"""Tensor expressions: placeholder, compute, reductions and intrinsics."""

from . import indexing, intrinsics
from .compute import compute, placeholder
from .indexing import *  # noqa: F403 - the index arithmetic, listed once in indexing.__all__
from .intrinsics import *  # noqa: F403 - the math intrinsics, listed once in intrinsics.__all__
from .intrinsics import var
from .operation import ComputeOp, Operation, PlaceholderOp
from .reduction import CommReducer, Reduce, comm_reducer, max, min, reduce_axis, sum
from .tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, IterVar, Range, Tensor, TensorRead, thread_axis

__all__ = [
    "compute", "placeholder", "var", "ComputeOp", "Operation", "PlaceholderOp", "CommReducer", "Reduce",
    "comm_reducer", "max", "min", "reduce_axis", "sum", "COMM_REDUCE", "DATA_PAR", "IterVar", "Range",
    "Tensor", "TensorRead", "THREAD_INDEX", "thread_axis", *indexing.__all__, *intrinsics.__all__,
]
