"""TVM-style ``te`` namespace: tensor expressions and schedules (re-exports of tunecli.engine)."""

from tunecli.engine.ir import expr as _expr
from tunecli.engine.ir.expr import Var, const, max_value, min_value
from tunecli.engine.ir.expr import cast as _cast
from tunecli.engine.schedule import Schedule, Stage, create_schedule
from tunecli.engine.te import (
    ComputeOp,
    IterVar,
    Operation,
    PlaceholderOp,
    Reduce,
    Tensor,
    comm_reducer,
    compute,
    max,
    min,
    placeholder,
    reduce_axis,
    sum,
    thread_axis,
    var,
)
from tunecli.engine.te import intrinsics as _intrinsics
from tunecli.engine.te.intrinsics import *  # noqa: F403 - the math intrinsics, listed once there

from . import schedule


def cast(value, dtype: str):
    """``value`` converted to ``dtype`` (TVM's argument order: value first)."""
    return _cast(dtype, value)


def div(a, b):
    """``a / b`` with C's meaning (TVM's ``te.div``): true division of floats, integers rounded
    towards zero."""
    return _expr._binary(_expr.Div, a, b)


__all__ = [
    "Var", "const", "max_value", "min_value", "cast", "div", "Schedule", "Stage", "create_schedule",
    "ComputeOp", "IterVar", "Operation", "PlaceholderOp", "Reduce", "Tensor", "comm_reducer", "compute",
    "max", "min", "placeholder", "reduce_axis", "schedule", "sum", "thread_axis", "var", *_intrinsics.__all__,
]
