"""ONNX elementwise math, comparisons, logic and reductions: Neg, Abs, Exp, Log, Sqrt, Reciprocal,
Erf, Gelu, Pow, Min, Max, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And, Or, Xor,
IsNaN, IsInf, Where and ReduceSum / ReduceMean / ReduceMax / ReduceMin.

Each folds with numpy when its inputs are known at import (the mask and shape computations
exporters emit), else becomes the graph's operators.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..graph_expr import Expr, const
from ..ops import reduce as graph_reduce
from ..ops.broadcast import add, divide, maximum, minimum, multiply, power
from ..ops.selection import (
    equal,
    greater,
    greater_equal,
    isinf,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    where,
)
from ..ops.unary import abs as graph_abs
from ..ops.unary import cast, erf, exp, log, negative, sqrt, tanh
from .onnx_node import NodeContext
from .onnx_table import Value, converter


def _elementwise(
    op_type: str,
    build: Callable[..., Expr],
    compute: Callable[..., np.ndarray],
    arity: int,
    since: int = 7,
) -> None:
    """Register ``op_type``: ``build`` on its input expressions, ``compute`` (numpy) when folded."""

    def fold(ctx: NodeContext) -> Value:
        arrays = [ctx.array(i, "input") for i in range(arity)]
        try:
            return np.asarray(compute(*arrays))
        except ValueError as err:
            raise ctx.error(f"{err} (shapes {[a.shape for a in arrays]})") from None

    def convert(ctx: NodeContext) -> Value:
        return build(*[ctx.expr(i) for i in range(arity)])

    converter(op_type, since=since, fold=fold)(convert)


def _same_dtype(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.asarray(fn(x)).astype(x.dtype)


def _erf_array(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x).astype(x.dtype)


_UNARY = {
    "Neg": (negative, _same_dtype(np.negative)),
    "Abs": (graph_abs, _same_dtype(np.abs)),
    "Exp": (exp, _same_dtype(np.exp)),
    "Log": (log, _same_dtype(np.log)),
    "Sqrt": (sqrt, _same_dtype(np.sqrt)),
    "Erf": (erf, _erf_array),
    "Not": (logical_not, np.logical_not),
    "IsNaN": (isnan, np.isnan),
}
_COMPARISONS = {
    "Equal": (equal, np.equal, 7),
    "Less": (less, np.less, 7),
    "Greater": (greater, np.greater, 7),
    "LessOrEqual": (less_equal, np.less_equal, 12),
    "GreaterOrEqual": (greater_equal, np.greater_equal, 12),
    "And": (logical_and, np.logical_and, 7),
    "Or": (logical_or, np.logical_or, 7),
    "Xor": (logical_xor, np.logical_xor, 7),
}
for _op_type, (_build, _compute) in _UNARY.items():
    _elementwise(_op_type, _build, _compute, 1)
for _op_type, (_build, _compute, _since) in _COMPARISONS.items():
    _elementwise(_op_type, _build, _compute, 2, _since)
_elementwise("Where", where, lambda c, x, y: np.where(c, x, y), 3, since=9)


def _infinities(ctx: NodeContext) -> tuple[bool, bool]:
    return bool(ctx.attr("detect_negative", 1)), bool(ctx.attr("detect_positive", 1))


def _fold_isinf(ctx: NodeContext) -> Value:
    negative, positive = _infinities(ctx)
    x = ctx.array(0, "X")
    return (np.isneginf(x) & negative) | (np.isposinf(x) & positive)


@converter("IsInf", since=10, fold=_fold_isinf)
def _isinf(ctx: NodeContext) -> Value:
    negative, positive = _infinities(ctx)
    x = ctx.expr(0)
    if negative and positive:
        return isinf(x)
    if not (negative or positive):
        return logical_and(isinf(x), isnan(x))  # never true
    return equal(x, const(math.inf if positive else -math.inf, ctx.tensor_type(0).dtype))


def _fold_reciprocal(ctx: NodeContext) -> Value:
    x = ctx.array(0, "X")
    return (1 / x).astype(x.dtype)


@converter("Reciprocal", fold=_fold_reciprocal)
def _reciprocal(ctx: NodeContext) -> Value:
    return divide(const(1.0, ctx.tensor_type(0).dtype), ctx.expr(0))


def _fold_pow(ctx: NodeContext) -> Value:
    base, exponent = ctx.array(0, "X"), ctx.array(1, "Y")
    return np.power(base, exponent.astype(base.dtype)).astype(base.dtype)


@converter("Pow", fold=_fold_pow)
def _pow(ctx: NodeContext) -> Value:
    dtype = ctx.tensor_type(0).dtype
    x = ctx.expr(0)
    if ctx.store.known(ctx.inputs[1]) and np.asarray(ctx.array(1, "Y")).size == 1:
        exponent = float(np.asarray(ctx.array(1, "Y")).reshape(()))
        if exponent == 2.0:
            return multiply(x, x)
        if exponent == 0.5:
            return sqrt(x)
        if exponent == 1.0:
            return x
        return power(x, const(exponent, dtype))
    y = ctx.expr(1)
    if ctx.tensor_type(1).dtype != dtype:
        y = cast(y, dtype)
    return power(x, y)


def _gelu_expr(x: Expr, dtype: str, approximate: str) -> Expr:
    """``x * Φ(x)``: with erf, or the tanh approximation."""
    half = const(0.5, dtype)
    if approximate == "tanh":
        inner = multiply(add(x, multiply(const(0.044715, dtype), multiply(x, multiply(x, x)))),
                         const(math.sqrt(2.0 / math.pi), dtype))
        return multiply(multiply(x, half), add(const(1.0, dtype), tanh(inner)))
    scaled = multiply(x, const(1 / math.sqrt(2.0), dtype))
    return multiply(multiply(x, half), add(const(1.0, dtype), erf(scaled)))


def _gelu_approximation(ctx: NodeContext) -> str:
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ctx.error(f"approximate {approximate!r}; supported: none, tanh")
    return approximate


@converter("Gelu", since=20)
def _gelu(ctx: NodeContext) -> Value:
    return _gelu_expr(ctx.expr(0), ctx.tensor_type(0).dtype, _gelu_approximation(ctx))


def _variadic(op_type: str, build: Callable[[Expr, Expr], Expr], compute: Callable[..., np.ndarray]) -> None:
    """Min / Max of any number of inputs (numpy broadcasting)."""

    def fold(ctx: NodeContext) -> Value:
        arrays = [ctx.array(i, "input") for i in range(len(ctx.inputs))]
        out = arrays[0]
        for a in arrays[1:]:
            out = compute(out, a)
        return np.asarray(out)

    def convert(ctx: NodeContext) -> Value:
        if not ctx.inputs:
            raise ctx.error("needs at least one input")
        out = ctx.expr(0)
        for i in range(1, len(ctx.inputs)):
            out = build(out, ctx.expr(i))
        return out

    converter(op_type, since=8, fold=fold)(convert)


_variadic("Max", maximum, np.maximum)
_variadic("Min", minimum, np.minimum)


# --- reductions -----------------------------------------------------------------------------------------

#: ONNX reduction -> (graph operator, numpy function, first opset with the axes as an input).
_REDUCTIONS = {
    "ReduceSum": (graph_reduce.sum, np.sum, 13),
    "ReduceMean": (graph_reduce.mean, np.mean, 18),
    "ReduceMax": (graph_reduce.max, np.max, 18),
    "ReduceMin": (graph_reduce.min, np.min, 18),
}


def _reduce_axes(ctx: NodeContext, axes_input_since: int) -> tuple[int, ...] | None:
    """The reduced axes, normalised; None for every axis; ``()`` for none (noop_with_empty_axes)."""
    ndim = len(ctx.shape(0))
    if ctx.opset < axes_input_since:
        axes = ctx.int_list("axes", ())
    else:
        axes = ctx.ints(1, "axes") if ctx.has_input(1) else ()
    if not axes:
        return () if ctx.attr("noop_with_empty_axes", 0) else None
    normalised = tuple(sorted({ctx.axis(a, ndim, "axes entry") for a in axes}))
    if len(normalised) != len(axes):
        raise ctx.error(f"axes {axes} repeat an axis")
    return normalised


def _reduction(op_type: str) -> None:
    build, compute, axes_input_since = _REDUCTIONS[op_type]

    def fold(ctx: NodeContext) -> Value:
        x = ctx.array(0, "data")
        axes = _reduce_axes(ctx, axes_input_since)
        if axes == ():
            return x
        keep = bool(ctx.attr("keepdims", 1))
        return np.asarray(compute(x, axis=axes, keepdims=keep)).astype(x.dtype)

    def convert(ctx: NodeContext) -> Value:
        axes = _reduce_axes(ctx, axes_input_since)
        if axes == ():
            return ctx.expr(0)
        return build(ctx.expr(0), axis=axes, keepdims=bool(ctx.attr("keepdims", 1)))

    converter(op_type, fold=fold)(convert)


for _op_type in _REDUCTIONS:
    _reduction(_op_type)
