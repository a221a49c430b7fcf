"""Count the floating point operations of a tensor-expression graph (TVM's ``compute_flop``).

Each output element of a compute op costs the operations of its body expression: arithmetic,
comparisons and logic count 1 each; a reduction costs ``prod(reduce extents) * (combiner +
source)``; casts, loads, variables and constants are free; a select costs its condition plus
its dearer branch; intrinsic calls cost their arguments.  Inputs of a compute op are counted
recursively (a tensor read by two ops is counted twice, as TVM does); placeholders are free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tunecli.engine.ir import expr as ir
from tunecli.engine.task.space_entities import const_int
from tunecli.errors import InstantiationError

if TYPE_CHECKING:
    from tunecli.engine.schedule import Schedule
    from tunecli.engine.te import CommReducer, IterVar, Operation, Tensor

_ONE_FLOP_BINARY = (ir.Add, ir.Sub, ir.Mul, ir.Div, ir.FloorDiv, ir.FloorMod, ir.Min, ir.Max,
                    ir.CmpOp)
_FREE = (ir.ConstExpr, ir.StringImm, ir.Var, ir.BufferLoad, ir.Ramp, ir.Broadcast)


class FlopCalculationError(InstantiationError, RuntimeError):
    """The FLOP count of an operator cannot be derived automatically (a ``RuntimeError``, as TVM's)."""


def _prod_length(axes: Iterable[IterVar]) -> int:
    try:
        return math.prod(const_int(ax.dom.extent, "flop counting") for ax in axes)
    except Exception as err:  # a symbolic extent
        raise FlopCalculationError(f"The length of axis is not constant: {err}") from None


def _is_reduce(node: object) -> bool:
    return hasattr(node, "combiner") and hasattr(node, "source") and hasattr(node, "axis")


def _is_tensor_read(node: object) -> bool:
    return hasattr(node, "indices") and (hasattr(node, "producer") or hasattr(node, "tensor"))


def _combiner_flop(combiner: CommReducer) -> int:
    result = getattr(combiner, "result", None)
    if result is None:
        return 1  # one combine per reduction step (an add for sum, a max for max, ...)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(results) != 1:
        raise FlopCalculationError("Found multiple output in the combiner of reduce op")
    return count_expr_flop(results[0])


def count_expr_flop(node: ir.Expr) -> int:
    """Return the floating point operations of evaluating expression ``node`` once.

    Parameters
    ----------
    node : Expr
        An expression of ``tunecli.engine.ir`` or a te ``Reduce``.

    Returns
    -------
    int
    """
    if _is_reduce(node):
        sources = node.source if isinstance(node.source, (list, tuple)) else [node.source]
        if len(sources) != 1:
            raise FlopCalculationError("Found multiple output in the source of reduce op")
        return _prod_length(node.axis) * (_combiner_flop(node.combiner) + count_expr_flop(sources[0]))
    if isinstance(node, _FREE) or _is_tensor_read(node):
        return 0
    if isinstance(node, ir.Cast):
        return count_expr_flop(node.value)
    if isinstance(node, _ONE_FLOP_BINARY):
        return 1 + count_expr_flop(node.a) + count_expr_flop(node.b)
    if isinstance(node, ir.Not):
        return 1 + count_expr_flop(node.a)
    if isinstance(node, ir.Select):
        return count_expr_flop(node.condition) + max(count_expr_flop(node.true_value),
                                                      count_expr_flop(node.false_value))
    if isinstance(node, ir.Call):
        return sum(count_expr_flop(a) for a in node.args)
    if isinstance(node, ir.Let):
        return count_expr_flop(node.value) + count_expr_flop(node.body)
    raise FlopCalculationError(f"Found unsupported operator in the compute expr: {type(node).__name__}")


def _as_op(item: Tensor | Operation) -> Operation:
    return item.op if hasattr(item, "op") and not hasattr(item, "body") else item


def _traverse(ops: Iterable[Operation]) -> int:
    total = 0
    for op in ops:
        if hasattr(op, "body"):
            bodies = list(op.body)
            if len(bodies) != 1:
                raise FlopCalculationError("Found multiple output in the compute")
            total += _prod_length(op.axis) * count_expr_flop(bodies[0])
            total += _traverse(_as_op(t) for t in op.input_tensors)
        elif type(op).__name__ == "PlaceholderOp" or not getattr(op, "input_tensors", ()):
            continue
        else:
            raise FlopCalculationError(f"{getattr(op, 'name', op)} is not supported by autotvm. "
                                       "Only support te.compute currently.")
    return total


def compute_flop(outputs: Schedule | Tensor | Operation | Sequence[Tensor | Operation]) -> int:
    """Return the FLOPs of computing ``outputs`` once.

    Parameters
    ----------
    outputs : Schedule, Tensor, Operation or list of them
        A schedule counts its output operations (``.outputs``).

    Returns
    -------
    int

    Raises
    ------
    FlopCalculationError
        When an operator cannot be counted or nothing is counted; use ``cfg.add_flop``.
    """
    if hasattr(outputs, "outputs"):
        outputs = outputs.outputs
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    try:
        total = _traverse(_as_op(x) for x in outputs)
    except FlopCalculationError as err:
        raise FlopCalculationError(f"FLOP estimator fails for this operator. Error msg: {err}. Please use "
                                   "`cfg.add_flop` to manually set FLOP for this operator") from None
    if total == 0:
        raise FlopCalculationError("Cannot find float number operation in this operator. Please use "
                                   "`cfg.add_flop` to manually set FLOP for this operator")
    return total
